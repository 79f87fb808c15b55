"""All the logs of one broker, spread over its log dirs, and the log dirs' own files.

Each log dir holds one directory per partition replica plus::

    meta.properties                    broker.id / cluster.id this dir belongs to (below)
    recovery-point-offset-checkpoint   per partition: offsets below it are fsynced
    replication-offset-checkpoint      per partition: the high watermark
    log-start-offset-checkpoint        per partition whose log start is past its first segment
    .lock                              held (flock) while a broker uses the dir
    .kafka_cleanshutdown               present only after a clean close; skips recovery
    cleaner-offset-checkpoint          per partition the log cleaner cleaned, or whose log may
                                       have offset gaps: the first dirty offset (cleaner.py,
                                       CleanerCheckpoint); entries go with their logs

The four checkpoints use the ``<topic> <partition> <offset>`` format of checkpoints.py.
``meta.properties`` is a Java properties file as Kafka writes it in ZooKeeper mode::

    #
    #<date>
    version=0
    broker.id=1
    cluster.id=<22-char id>        (once known)

Loading: every ``<topic>-<partition>`` directory becomes a ``Log``, recovered from its recovery
point (none recorded -> recovered from the start; a clean-shutdown marker -> not recovered).
Directories ending in ``-delete`` are remnants of a deletion and are removed.

Not thread-safe: owned by the broker's event loop. Its methods do blocking file I/O (fsync,
rename), so the broker calls them through an executor, one at a time.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import structlog

from minikafka.broker.storage.checkpoints import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    CleanerCheckpoint,
    OffsetCheckpointFile,
    TopicPartition,
    fsync_dir,
)
from minikafka.broker.storage.config import LogConfig
from minikafka.broker.storage.log import Log, parse_topic_partition
from minikafka.proto.errors import InvalidConfigError, KafkaStorageError

__all__ = [
    "CLEAN_SHUTDOWN_FILE",
    "LOCK_FILE",
    "META_PROPERTIES",
    "LogManager",
    "read_meta_properties",
]

META_PROPERTIES = "meta.properties"
LOCK_FILE = ".lock"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
_DELETE_DIR_SUFFIX = "-delete"
_FUTURE_DIR_SUFFIX = "-future"

_log = structlog.get_logger(__name__)


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def read_meta_properties(log_dir: Path) -> dict[str, str]:
    """The key/value pairs of ``meta.properties`` (empty when the file does not exist)."""
    path = log_dir / META_PROPERTIES
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    props: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith(("#", "!")):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise KafkaStorageError(f"malformed line {number} in {path}: {raw!r}")
        props[key.strip()] = value.strip()
    return props


def _write_meta_properties(log_dir: Path, props: Mapping[str, str]) -> None:
    stamp = time.strftime("%a %b %d %H:%M:%S %Z %Y")
    text = "#\n#" + stamp + "\n" + "".join(f"{k}={v}\n" for k, v in props.items())
    path = log_dir / META_PROPERTIES
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(log_dir)


class LogManager:
    """Opens, creates, deletes, flushes, cleans and checkpoints the logs of one broker.

    Files per log dir as in the module docstring. Not thread-safe: one owner, one call at a
    time (blocking I/O: run it in an executor).

    ``topic_config(topic)`` gives a topic's LogConfig (its overrides on the broker defaults),
    or None for ``default_config``.
    """

    def __init__(
        self,
        log_dirs: Sequence[str | Path],
        default_config: LogConfig,
        *,
        broker_id: int,
        cluster_id: str | None = None,
        topic_config: Callable[[str], LogConfig | None] | None = None,
        time_ms: Callable[[], int] = _wall_clock_ms,
    ) -> None:
        if not log_dirs:
            raise InvalidConfigError("log.dirs must name at least one directory")
        self.log_dirs = [Path(d).absolute() for d in log_dirs]
        if len(set(self.log_dirs)) != len(self.log_dirs):
            raise InvalidConfigError(f"log.dirs lists a directory twice: {log_dirs}")
        self.default_config = default_config
        self.broker_id = broker_id
        self._topic_config = topic_config
        self._time_ms = time_ms
        self._logs: dict[TopicPartition, Log] = {}
        self._dir_of: dict[TopicPartition, Path] = {}
        self._locks: list[int] = []
        self._closed = False
        try:
            for log_dir in self.log_dirs:
                log_dir.mkdir(parents=True, exist_ok=True)
                self._lock(log_dir)
                self._check_meta_properties(log_dir, cluster_id)
            for log_dir in self.log_dirs:
                self._load_dir(log_dir)
        except BaseException:
            for log in self._logs.values():
                log.close()
            self._release_locks()
            raise

    # --- startup --------------------------------------------------------------------------

    def _lock(self, log_dir: Path) -> None:
        fd = os.open(log_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise KafkaStorageError(
                    f"log dir {log_dir} is locked by another broker process ({LOCK_FILE})"
                ) from exc
            raise
        self._locks.append(fd)

    def _release_locks(self) -> None:
        for fd in self._locks:
            os.close(fd)  # closing drops the flock
        self._locks.clear()

    def _check_meta_properties(self, log_dir: Path, cluster_id: str | None) -> None:
        props = read_meta_properties(log_dir)
        if props:
            if props.get("version", "0") != "0":
                raise KafkaStorageError(
                    f"{log_dir / META_PROPERTIES} has version {props.get('version')}; this "
                    "broker understands version 0 (ZooKeeper mode) only"
                )
            stored = props.get("broker.id")
            if stored is not None and stored != str(self.broker_id):
                raise InvalidConfigError(
                    f"broker.id {self.broker_id} does not match broker.id {stored} stored in "
                    f"{log_dir / META_PROPERTIES}: the directory belongs to another broker "
                    "(fix broker.id, or empty the log dir to start a new broker)"
                )
            stored_cluster = props.get("cluster.id")
            if cluster_id is not None and stored_cluster not in (None, cluster_id):
                raise InvalidConfigError(
                    f"cluster.id {cluster_id} does not match cluster.id {stored_cluster} "
                    f"stored in {log_dir / META_PROPERTIES}: the directory belongs to another "
                    "cluster"
                )
            if stored is not None and (cluster_id is None or stored_cluster == cluster_id):
                return
        wanted = {"version": "0", "broker.id": str(self.broker_id)}
        known_cluster = cluster_id or props.get("cluster.id")
        if known_cluster is not None:
            wanted["cluster.id"] = known_cluster
        _write_meta_properties(log_dir, wanted)

    def _load_dir(self, log_dir: Path) -> None:
        clean_marker = log_dir / CLEAN_SHUTDOWN_FILE
        clean = clean_marker.exists()
        recovery_points = self._read_checkpoint_leniently(log_dir / RECOVERY_POINT_CHECKPOINT)
        log_starts = self._read_checkpoint_leniently(log_dir / LOG_START_OFFSET_CHECKPOINT)
        for entry in sorted(os.scandir(log_dir), key=lambda e: e.name):
            if not entry.is_dir():
                continue
            path = Path(entry.path)
            if entry.name.endswith(_DELETE_DIR_SUFFIX):
                _log.info("log.deleted_dir_removed", dir=str(path))
                shutil.rmtree(path, ignore_errors=True)
                continue
            if entry.name.endswith(_FUTURE_DIR_SUFFIX):
                continue  # a replica move between log dirs: not supported, left alone
            try:
                tp = parse_topic_partition(entry.name)
            except KafkaStorageError:
                _log.warning("log.dir_skipped", dir=str(path), reason="not <topic>-<partition>")
                continue
            if tp in self._logs:
                raise KafkaStorageError(
                    f"partition {tp} has a directory in both {self._dir_of[tp]} and {log_dir}"
                )
            self._logs[tp] = Log(
                path,
                self._config_for(tp.topic),
                recovery_point=recovery_points.get(tp, 0),
                log_start_offset=log_starts.get(tp, 0),
                had_clean_shutdown=clean,
                time_ms=self._time_ms,
            )
            self._dir_of[tp] = log_dir
        # Entries of logs deleted by a delete_log that a crash interrupted: a log created
        # again under that name must not inherit them.
        CleanerCheckpoint.of(log_dir).retain(lambda tp: self._dir_of.get(tp) == log_dir)
        if clean:
            # Until the next clean close, a crash must lead to recovery.
            clean_marker.unlink()
            fsync_dir(log_dir)

    def _read_checkpoint_leniently(self, path: Path) -> dict[TopicPartition, int]:
        # A bad recovery-point or log-start checkpoint costs a full recovery, not the broker.
        try:
            return OffsetCheckpointFile(path).read()
        except KafkaStorageError as exc:
            _log.warning("checkpoint.unreadable", file=str(path), error=exc.message)
            return {}

    def _config_for(self, topic: str) -> LogConfig:
        if self._topic_config is not None:
            config = self._topic_config(topic)
            if config is not None:
                return config
        return self.default_config

    # --- logs -----------------------------------------------------------------------------

    def get_log(self, topic: str, partition: int) -> Log | None:
        return self._logs.get(TopicPartition(topic, partition))

    @property
    def logs(self) -> dict[TopicPartition, Log]:
        return dict(self._logs)

    def log_dir_of(self, topic: str, partition: int) -> Path | None:
        return self._dir_of.get(TopicPartition(topic, partition))

    def get_or_create_log(self, topic: str, partition: int, config: LogConfig | None = None) -> Log:
        """The partition's log, created empty in the log dir holding the fewest partitions."""
        self._check_open()
        tp = TopicPartition(topic, partition)
        log = self._logs.get(tp)
        if log is not None:
            return log
        if partition < 0 or not topic or "/" in topic:
            raise KafkaStorageError(f"cannot create a log for {tp}")
        counts = {d: 0 for d in self.log_dirs}
        for log_dir in self._dir_of.values():
            counts[log_dir] += 1
        log_dir = min(self.log_dirs, key=lambda d: counts[d])  # ties: first in log.dirs
        log = Log(
            log_dir / str(tp),
            config if config is not None else self._config_for(topic),
            time_ms=self._time_ms,
        )
        self._logs[tp] = log
        self._dir_of[tp] = log_dir
        _log.info("log.created", topic=topic, partition=partition, log_dir=str(log_dir))
        return log

    def update_topic_config(self, topic: str, config: LogConfig) -> None:
        """Apply a changed topic config to that topic's open logs."""
        for tp, log in self._logs.items():
            if tp.topic == topic:
                log.update_config(config)

    def delete_log(self, topic: str, partition: int) -> bool:
        """Close the log and remove its directory; False if there was none.

        The directory is first renamed to ``<topic>-<partition>.<id>-delete`` so that a crash
        during the removal leaves nothing that loads as a log.
        """
        self._check_open()
        tp = TopicPartition(topic, partition)
        log = self._logs.pop(tp, None)
        if log is None:
            return False
        log_dir = self._dir_of.pop(tp)
        log.close()
        doomed = log.dir.with_name(f"{log.dir.name}.{uuid.uuid4().hex}{_DELETE_DIR_SUFFIX}")
        os.rename(log.dir, doomed)
        fsync_dir(log_dir)
        # As Kafka: the cleaner's entry goes with the log (a crash before this line leaves it
        # to the next load's pruning), or a new log of that name would start "clean" there.
        CleanerCheckpoint.of(log_dir).remove(tp)
        shutil.rmtree(doomed, ignore_errors=True)
        _log.info("log.deleted", topic=topic, partition=partition, log_dir=str(log_dir))
        return True

    # --- checkpoints ----------------------------------------------------------------------

    def _by_dir(self) -> dict[Path, dict[TopicPartition, Log]]:
        grouped: dict[Path, dict[TopicPartition, Log]] = {d: {} for d in self.log_dirs}
        for tp, log in self._logs.items():
            grouped[self._dir_of[tp]][tp] = log
        return grouped

    def checkpoint_recovery_points(self) -> None:
        for log_dir, logs in self._by_dir().items():
            OffsetCheckpointFile(log_dir / RECOVERY_POINT_CHECKPOINT).write(
                {tp: log.recovery_point for tp, log in logs.items()}
            )

    def checkpoint_log_start_offsets(self) -> None:
        # As Kafka: only logs whose start offset is past their first segment need an entry.
        for log_dir, logs in self._by_dir().items():
            OffsetCheckpointFile(log_dir / LOG_START_OFFSET_CHECKPOINT).write(
                {
                    tp: log.log_start_offset
                    for tp, log in logs.items()
                    if log.log_start_offset > log.segments[0].base_offset
                }
            )

    def write_high_watermarks(
        self, high_watermarks: Mapping[TopicPartition, int] | Mapping[tuple[str, int], int]
    ) -> None:
        """Write ``replication-offset-checkpoint`` in every log dir, each with the high
        watermarks of the partitions it holds (partitions without a log are skipped)."""
        per_dir: dict[Path, dict[TopicPartition, int]] = {d: {} for d in self.log_dirs}
        for key, hw in high_watermarks.items():
            tp = TopicPartition(*key)
            log_dir = self._dir_of.get(tp)
            if log_dir is not None:
                per_dir[log_dir][tp] = hw
        for log_dir, offsets in per_dir.items():
            OffsetCheckpointFile(log_dir / REPLICATION_OFFSET_CHECKPOINT).write(offsets)

    def read_high_watermarks(self) -> dict[TopicPartition, int]:
        """The high watermarks of every log dir's ``replication-offset-checkpoint``."""
        result: dict[TopicPartition, int] = {}
        for log_dir in self.log_dirs:
            result.update(OffsetCheckpointFile(log_dir / REPLICATION_OFFSET_CHECKPOINT).read())
        return result

    # --- periodic work --------------------------------------------------------------------

    def cleanup(
        self,
        now_ms: int,
        high_watermarks: Mapping[TopicPartition, int] | Mapping[tuple[str, int], int] | None = None,
    ) -> int:
        """Retention pass over every log; returns the number of segments deleted.

        A partition's segments at or beyond its high watermark are kept when
        ``high_watermarks`` has an entry for it (and its active segment may then go)."""
        self._check_open()
        deleted = 0
        for tp, log in self._logs.items():
            hw = None if high_watermarks is None else high_watermarks.get(tp)
            deleted += log.delete_old_segments(now_ms, hw)
        return deleted

    def flush_dirty_logs(self, now_ms: int) -> None:
        """Flush pass: each log flushes what rolls left pending and honours flush.ms."""
        self._check_open()
        for log in self._logs.values():
            log.maybe_flush(now_ms)

    def all_logs(self) -> Iterable[Log]:
        return list(self._logs.values())

    def _check_open(self) -> None:
        if self._closed:
            raise KafkaStorageError("the log manager is closed")

    def close(self) -> None:
        """Flush and close every log, write the checkpoints, mark the shutdown clean."""
        if self._closed:
            return
        for log in self._logs.values():
            log.flush()
            log.close()
        self.checkpoint_recovery_points()
        self.checkpoint_log_start_offsets()
        for log_dir in self.log_dirs:
            (log_dir / CLEAN_SHUTDOWN_FILE).touch()
            fsync_dir(log_dir)
        self._release_locks()
        self._closed = True
        _log.info("log_manager.closed", logs=len(self._logs))
