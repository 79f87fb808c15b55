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

Future logs (KIP-113): AlterReplicaLogDirs moves a replica to another log dir of this broker
through ``<topic>-<partition>.<32 hex digits>-future`` in the target dir, a log the
replica-alter-log-dirs fetcher (broker/replication/alter_log_dirs.py) copies the current log
into. Once it has caught up, ``replace_current_with_future`` swaps them: the future log is
flushed and closed, the current one renamed ``<topic>-<partition>.<id>-delete``, the future one
renamed ``<topic>-<partition>`` and opened again as the current log, and both dirs'
checkpoints rewritten, so they name the partition in its new dir. Kafka renames the future log
first; here the current log goes first, so that a crash between the renames leaves one
``-future`` and no current log: the load promotes it (it was complete and fsynced before the
current log went). Otherwise a ``-future`` found at the load is kept as the partition's future
log, and the move resumes once the partition is hosted again. Future logs sit in the
checkpoints of their dir like any other log, and count as logs of their dir when a new log
picks the dir with the fewest; retention, flushes and the cleaner leave them alone.

Log dir failure (KIP-112): an I/O error on a dir's files is reported to the
``LogDirFailureChannel`` (log_dir_failure.py), which takes the dir offline. The checkpoint
writers, retention, flushes and log creation here report their own errors and skip offline
dirs; ``handle_log_dir_failure`` then drops the dir's logs (the broker's listener calls it) and
nothing is written there again, not even the clean-shutdown marker, so the next start recovers.

Not thread-safe: owned by the broker's event loop. Its methods do blocking file I/O (fsync,
rename), so the broker calls them through an executor, one at a time.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import structlog

from minikafka.broker.storage.checkpoints import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    CleanerCheckpoint,
    OffsetCheckpointFile,
    fsync_dir,
)
from minikafka.broker.storage.config import LONG_MAX, LogConfig
from minikafka.broker.storage.log import (
    FUTURE_DIR_SUFFIX,
    Log,
    PendingFlush,
    future_dir_name,
    parse_topic_partition,
)
from minikafka.broker.storage.log_dir_failure import LogDirFailureChannel
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import (
    ErrorCode,
    InvalidConfigError,
    KafkaError,
    KafkaStorageError,
    error_for_code,
)

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

_log = structlog.get_logger(__name__)


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class _FoundFuture(NamedTuple):
    """A ``-future`` directory found at the load, with what its dir says about it."""

    topic_partition: TopicPartition
    path: Path
    log_dir: Path
    clean: bool
    recovery_point: int
    log_start_offset: int


def _delete_name(path: Path, tp: TopicPartition) -> Path:
    return path.with_name(f"{tp}.{uuid.uuid4().hex}{_DELETE_DIR_SUFFIX}")


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
        failure_channel: LogDirFailureChannel | None = None,
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
        self._logs_in_dir: Counter[Path] = Counter()  # of both: where a new log goes
        # Future logs (module docstring): at most one per partition, never in its current dir.
        self._future_logs: dict[TopicPartition, Log] = {}
        self._future_dir_of: dict[TopicPartition, Path] = {}
        # AlterReplicaLogDirs for a partition not hosted yet: where its log will be created.
        self._preferred_dirs: dict[TopicPartition, Path] = {}
        # What the flush scheduler asks each second, rather than every log: logs a roll left
        # a flush pending for (Log.set_flush_listener) and logs with a finite flush.ms.
        self._flush_candidates: set[TopicPartition] = set()
        self._timed_flushes: set[TopicPartition] = set()
        # What each checkpoint file of each dir holds as last written by this process: a
        # checkpoint that would write the same again is skipped (an idle broker with
        # thousands of logs then writes and fsyncs nothing every interval).
        self._written: dict[Path, dict[TopicPartition, int]] = {}
        self._locks: list[int] = []
        self._closed = False
        self.failure_channel = failure_channel or LogDirFailureChannel()
        try:
            for log_dir in self.log_dirs:
                log_dir.mkdir(parents=True, exist_ok=True)
                self._lock(log_dir)
                self._check_meta_properties(log_dir, cluster_id)
            futures: list[_FoundFuture] = []
            for log_dir in self.log_dirs:
                futures.extend(self._load_dir(log_dir))
            self._load_futures(futures)
        except BaseException:
            for log in [*self._logs.values(), *self._future_logs.values()]:
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

    def _load_dir(self, log_dir: Path) -> list[_FoundFuture]:
        """Load the dir's current logs; its future logs are returned, for ``_load_futures``
        once every dir's current logs are known."""
        futures: list[_FoundFuture] = []
        clean_marker = log_dir / CLEAN_SHUTDOWN_FILE
        clean = clean_marker.exists()
        recovery_points = self._read_checkpoint_leniently(log_dir / RECOVERY_POINT_CHECKPOINT)
        log_starts = self._read_checkpoint_leniently(log_dir / LOG_START_OFFSET_CHECKPOINT)
        configs: dict[str, LogConfig] = {}  # one read of a topic's overrides, not one per log
        for entry in sorted(os.scandir(log_dir), key=lambda e: e.name):
            if not entry.is_dir():
                continue
            path = Path(entry.path)
            if entry.name.endswith(_DELETE_DIR_SUFFIX):
                _log.info("log.deleted_dir_removed", dir=str(path))
                shutil.rmtree(path, ignore_errors=True)
                continue
            try:
                tp = parse_topic_partition(entry.name)
            except KafkaStorageError:
                _log.warning("log.dir_skipped", dir=str(path), reason="not <topic>-<partition>")
                continue
            if entry.name.endswith(FUTURE_DIR_SUFFIX):
                futures.append(
                    _FoundFuture(
                        tp, path, log_dir, clean, recovery_points.get(tp, 0), log_starts.get(tp, 0)
                    )
                )
                continue
            if tp in self._logs:
                raise KafkaStorageError(
                    f"partition {tp} has a directory in both {self._dir_of[tp]} and {log_dir}"
                )
            if tp.topic not in configs:
                configs[tp.topic] = self._config_for(tp.topic)
            self._logs[tp] = Log(
                path,
                configs[tp.topic],
                recovery_point=recovery_points.get(tp, 0),
                log_start_offset=log_starts.get(tp, 0),
                had_clean_shutdown=clean,
                time_ms=self._time_ms,
            )
            self._dir_of[tp] = log_dir
            self._logs_in_dir[log_dir] += 1
            self._watch_flushes(tp, self._logs[tp])
        # Entries of logs deleted by a delete_log that a crash interrupted: a log created
        # again under that name must not inherit them.
        CleanerCheckpoint.of(log_dir).retain(lambda tp: self._dir_of.get(tp) == log_dir)
        if clean:
            # Until the next clean close, a crash must lead to recovery.
            clean_marker.unlink()
            fsync_dir(log_dir)
        return futures

    def _load_futures(self, found: list[_FoundFuture]) -> None:
        for future in found:
            tp = future.topic_partition
            if tp in self._future_logs:
                raise KafkaStorageError(
                    f"duplicate future log directories for {tp}: {self._future_logs[tp].dir} "
                    f"and {future.path}"
                )
            path = future.path
            promoted = tp not in self._logs
            if promoted:
                # A crash between the swap's two renames: the current log is gone (renamed
                # -delete, removed above), the future one was complete when it went.
                path = future.log_dir / str(tp)
                os.rename(future.path, path)
                fsync_dir(future.log_dir)
                _log.warning(
                    "log.future_promoted", topic=tp.topic, partition=tp.partition, dir=str(path)
                )
            log = Log(
                path,
                self._config_for(tp.topic),
                recovery_point=future.recovery_point,
                log_start_offset=future.log_start_offset,
                had_clean_shutdown=future.clean,
                time_ms=self._time_ms,
            )
            self._logs_in_dir[future.log_dir] += 1
            if promoted:
                self._logs[tp] = log
                self._dir_of[tp] = future.log_dir
                self._watch_flushes(tp, log)
            else:
                self._future_logs[tp] = log
                self._future_dir_of[tp] = future.log_dir
                _log.info(
                    "log.future_loaded",
                    topic=tp.topic,
                    partition=tp.partition,
                    log_dir=str(future.log_dir),
                    log_end_offset=log.log_end_offset,
                )

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

    def get_or_create_log(
        self,
        topic: str,
        partition: int,
        config: LogConfig | None = None,
        *,
        sync_log_dir: bool = True,
    ) -> Log:
        """The partition's log, created empty in the online log dir holding the fewest
        partitions. KafkaStorageError when no dir is online or the one chosen fails.

        ``sync_log_dir=False`` leaves the fsync of the log dir (which makes the new directory
        survive a crash) to the caller, who must call ``sync_log_dirs`` before anything is
        written to the log: ``create_logs`` makes thousands of logs with one fsync per dir.
        """
        self._check_open()
        tp = TopicPartition(topic, partition)
        log = self._logs.get(tp)
        if log is not None:
            return log
        if partition < 0 or not topic or "/" in topic:
            raise KafkaStorageError(f"cannot create a log for {tp}")
        online = self.online_log_dirs
        if not online:
            raise KafkaStorageError(f"cannot create a log for {tp}: no log dir is online")
        preferred = self._preferred_dirs.get(tp)
        if preferred is not None and preferred in online:
            log_dir = preferred
        else:
            log_dir = min(online, key=lambda d: self._logs_in_dir[d])  # ties: first in log.dirs
        try:
            log = Log(
                log_dir / str(tp),
                config if config is not None else self._config_for(topic),
                time_ms=self._time_ms,
                sync_parent=sync_log_dir,
            )
        except Exception as exc:
            if self.failure_channel.maybe_add_offline_log_dir(
                log_dir, exc, f"error creating the log of {tp}"
            ):
                raise KafkaStorageError(
                    f"cannot create a log for {tp} in {log_dir}: {exc}"
                ) from exc
            raise
        self._logs[tp] = log
        self._dir_of[tp] = log_dir
        self._logs_in_dir[log_dir] += 1
        self._preferred_dirs.pop(tp, None)
        self._watch_flushes(tp, log)
        _log.info("log.created", topic=topic, partition=partition, log_dir=str(log_dir))
        return log

    def log_configs(self, topics: Iterable[str]) -> dict[str, LogConfig]:
        """Each topic's config (its overrides on the defaults). Blocking (the overrides come
        from ZooKeeper) and touching nothing of the manager's state: for an executor, so
        that a broker asked for thousands of new partitions reads each topic's once, off its
        loop."""
        return {topic: self._config_for(topic) for topic in set(topics)}

    def create_logs(
        self, partitions: Iterable[TopicPartition], configs: Mapping[str, LogConfig]
    ) -> set[Path]:
        """Create the logs of ``partitions`` that do not exist yet, without fsyncing their log
        dirs; the dirs that got a new log, for ``sync_log_dirs``, which the caller must run
        before anything is written to these logs. A log that cannot be created is left out
        (its dir goes offline as in ``get_or_create_log``, which reports the error when the
        partition is asked for again)."""
        dirs: set[Path] = set()
        for tp in partitions:
            if tp in self._logs:
                continue
            try:
                self.get_or_create_log(
                    tp.topic, tp.partition, configs.get(tp.topic), sync_log_dir=False
                )
            except KafkaStorageError:
                continue
            dirs.add(self._dir_of[tp])
        return dirs

    def sync_log_dirs(self, log_dirs: Iterable[Path]) -> None:
        """fsync the log dirs, so that the log directories created in them survive a crash.
        Thread-safe (it touches only the file system); a dir that fails goes offline."""
        for log_dir in log_dirs:
            try:
                fsync_dir(log_dir)
            except OSError as exc:
                if not self.failure_channel.maybe_add_offline_log_dir(
                    log_dir, exc, "error syncing the log dir after creating logs"
                ):
                    raise

    # --- log dir failure ------------------------------------------------------------------

    @property
    def online_log_dirs(self) -> list[Path]:
        return [d for d in self.log_dirs if not self.failure_channel.is_offline(d)]

    def maybe_handle_io_error(self, tp: TopicPartition, exc: BaseException, context: str) -> bool:
        """Report ``exc`` as a failure of ``tp``'s log dir if it is an I/O error (True)."""
        log_dir = self._dir_of.get(tp)
        if log_dir is None:
            return False
        return self.failure_channel.maybe_add_offline_log_dir(log_dir, exc, context)

    def handle_log_dir_failure(self, log_dir: Path) -> list[TopicPartition]:
        """Drop the logs of an offline dir (closing what still closes); the partitions they
        belonged to. Nothing in the dir is written again by this process."""
        for tp in sorted(tp for tp, d in self._future_dir_of.items() if d == log_dir):
            future = self._drop_future(tp)
            with contextlib.suppress(Exception):  # the dir is failing
                future.close()
        gone = sorted(tp for tp, d in self._dir_of.items() if d == log_dir)
        for tp in gone:
            log = self._logs.pop(tp)
            del self._dir_of[tp]
            self._logs_in_dir[log_dir] -= 1
            try:
                log.close()
            except Exception as exc:  # the dir is failing: what is not closed stays as it is
                _log.debug(
                    "log.close_failed", topic=tp.topic, partition=tp.partition, error=str(exc)
                )
        return gone

    def _each_online_dir(self, what: str, work: Callable[[Path], None]) -> None:
        for log_dir in self.online_log_dirs:
            try:
                work(log_dir)
            except Exception as exc:
                if not self.failure_channel.maybe_add_offline_log_dir(log_dir, exc, what):
                    raise

    def update_topic_config(self, topic: str, config: LogConfig) -> None:
        """Apply a changed topic config to that topic's open logs."""
        for tp, log in self._logs.items():
            if tp.topic == topic:
                log.update_config(config)
                self._watch_flushes(tp, log)

    def delete_log(self, topic: str, partition: int) -> bool:
        """Close the log and remove its directory; False if there was none.

        The directory is first renamed to ``<topic>-<partition>.<id>-delete`` so that a crash
        during the removal leaves nothing that loads as a log.
        """
        self._check_open()
        tp = TopicPartition(topic, partition)
        self.delete_future_log(tp)
        self._preferred_dirs.pop(tp, None)
        log = self._logs.pop(tp, None)
        if log is None:
            return False
        log_dir = self._dir_of.pop(tp)
        self._logs_in_dir[log_dir] -= 1
        log.close()
        doomed = _delete_name(log.dir, tp)
        os.rename(log.dir, doomed)
        fsync_dir(log_dir)
        # As Kafka: the cleaner's entry goes with the log (a crash before this line leaves it
        # to the next load's pruning), or a new log of that name would start "clean" there.
        CleanerCheckpoint.of(log_dir).remove(tp)
        shutil.rmtree(doomed, ignore_errors=True)
        _log.info("log.deleted", topic=topic, partition=partition, log_dir=str(log_dir))
        return True

    # --- future logs (KIP-113) ------------------------------------------------------------

    def get_future_log(self, tp: TopicPartition) -> Log | None:
        return self._future_logs.get(tp)

    def future_log_dir_of(self, tp: TopicPartition) -> Path | None:
        return self._future_dir_of.get(tp)

    @property
    def future_logs(self) -> dict[TopicPartition, Log]:
        return dict(self._future_logs)

    @property
    def cleanable_logs(self) -> dict[TopicPartition, Log]:
        """The logs the cleaner may pick: not those being moved to another dir (Kafka pauses
        their cleaning until the swap; one under way then is discarded, its log closed)."""
        return {tp: log for tp, log in self._logs.items() if tp not in self._future_logs}

    def check_log_dir(self, path: str) -> Path:
        """The log dir named ``path`` (absolute, as in log.dirs): LOG_DIR_NOT_FOUND when it
        is none of them, KAFKA_STORAGE_ERROR when it is offline (Kafka's isLogDirOnline)."""
        wanted = Path(os.path.normpath(path)) if os.path.isabs(path) else None
        if wanted is None or wanted not in self.log_dirs:
            raise error_for_code(
                ErrorCode.LOG_DIR_NOT_FOUND, f"Log dir {path} is not found in the config."
            )
        if self.failure_channel.is_offline(wanted):
            raise KafkaStorageError(f"Log directory {path} is offline")
        return wanted

    def maybe_update_preferred_log_dir(self, tp: TopicPartition, log_dir: Path) -> None:
        """Where ``tp``'s log goes when it is created here (AlterReplicaLogDirs before the
        LeaderAndIsr that creates the replica, as the reassignment tool sends it)."""
        if tp not in self._logs:
            self._preferred_dirs[tp] = log_dir

    def create_future_log(self, tp: TopicPartition, log_dir: Path) -> Log | None:
        """The future log of ``tp`` in ``log_dir``, created empty unless it exists; None when
        the current log is in ``log_dir`` already (nothing to move). KafkaError when the
        partition has no log here or another future log (``delete_future_log`` it first),
        KAFKA_STORAGE_ERROR while any log dir is offline (Kafka creates none then, so that no
        partition ends up with future logs in two dirs)."""
        self._check_open()
        current_dir = self._dir_of.get(tp)
        if current_dir is None:
            raise error_for_code(
                ErrorCode.REPLICA_NOT_AVAILABLE, f"broker {self.broker_id} hosts no log of {tp}"
            )
        if current_dir == log_dir:
            return None
        existing = self._future_logs.get(tp)
        if existing is not None:
            if self._future_dir_of[tp] == log_dir:
                return existing
            raise KafkaError(f"{tp} has a future log in {self._future_dir_of[tp]} already")
        offline = self.failure_channel.offline_log_dirs
        if offline:
            raise KafkaStorageError(
                f"cannot create a future log for {tp} while log dirs {sorted(map(str, offline))} "
                "are offline"
            )
        path = log_dir / future_dir_name(tp, uuid.uuid4().hex)
        try:
            log = Log(path, self._config_for(tp.topic), time_ms=self._time_ms)
        except Exception as exc:
            if self.failure_channel.maybe_add_offline_log_dir(
                log_dir, exc, f"error creating the future log of {tp}"
            ):
                raise KafkaStorageError(f"cannot create a future log for {tp}: {exc}") from exc
            raise
        self._future_logs[tp] = log
        self._future_dir_of[tp] = log_dir
        self._logs_in_dir[log_dir] += 1
        _log.info(
            "log.future_created",
            topic=tp.topic,
            partition=tp.partition,
            log_dir=str(log_dir),
            current_log_dir=str(current_dir),
        )
        return log

    def _drop_future(self, tp: TopicPartition) -> Log:
        log = self._future_logs.pop(tp)
        self._logs_in_dir[self._future_dir_of.pop(tp)] -= 1
        return log

    def delete_future_log(self, tp: TopicPartition) -> bool:
        """Close and remove ``tp``'s future log (a move cancelled or redirected, or the
        replica deleted); False when there is none."""
        if tp not in self._future_logs:
            return False
        log_dir = self._future_dir_of[tp]
        log = self._drop_future(tp)
        log.close()
        try:
            doomed = _delete_name(log.dir, tp)
            os.rename(log.dir, doomed)
            fsync_dir(log_dir)
            CleanerCheckpoint.of(log_dir).remove(tp)
            shutil.rmtree(doomed, ignore_errors=True)
        except Exception as exc:
            if not self.failure_channel.maybe_add_offline_log_dir(
                log_dir, exc, f"error deleting the future log of {tp}"
            ):
                raise
        _log.info(
            "log.future_deleted", topic=tp.topic, partition=tp.partition, log_dir=str(log_dir)
        )
        return True

    def replace_current_with_future(self, tp: TopicPartition) -> Log:
        """Swap ``tp``'s caught-up future log in for its current log (module docstring); the
        new current log. The caller owns the partition for the whole call (nothing appends
        in between) and moves whatever it keeps of the old Log over to the new one.

        An I/O error takes the dir it happened in offline and raises KafkaStorageError."""
        self._check_open()
        current, future = self._logs[tp], self._future_logs[tp]
        source, target = self._dir_of[tp], self._future_dir_of[tp]
        if future.log_end_offset != current.log_end_offset:
            raise KafkaError(
                f"the future log of {tp} ends at {future.log_end_offset}, the current one at "
                f"{current.log_end_offset}: not caught up"
            )
        step_dir = target
        try:
            # Epochs the current log knows past its last batch (a leader's new epoch), and
            # a log start offset that moved since the last copy.
            latest = future.latest_epoch
            for entry in current.leader_epoch_cache.entries:
                if latest is None or entry.epoch > latest:
                    future.maybe_assign_epoch_start_offset(entry.epoch, entry.start_offset)
            if future.log_start_offset < current.log_start_offset:
                future.maybe_increment_log_start_offset(current.log_start_offset)
            log_start_offset = future.log_start_offset
            future.flush()
            future.close()
            step_dir = source
            current.close()
            doomed = _delete_name(current.dir, tp)
            os.rename(current.dir, doomed)
            fsync_dir(source)
            step_dir = target
            path = target / str(tp)
            os.rename(future.dir, path)
            fsync_dir(target)
            log = Log(
                path,
                current.config,
                recovery_point=future.log_end_offset,
                log_start_offset=log_start_offset,
                had_clean_shutdown=True,  # flushed and closed just now
                time_ms=self._time_ms,
            )
        except Exception as exc:
            if self.failure_channel.maybe_add_offline_log_dir(
                step_dir, exc, f"error replacing the log of {tp} with its future log"
            ):
                raise KafkaStorageError(f"cannot swap in the future log of {tp}: {exc}") from exc
            raise
        self._drop_future(tp)
        self._logs[tp] = log
        self._dir_of[tp] = target
        self._logs_in_dir[source] -= 1
        self._logs_in_dir[target] += 1
        self._watch_flushes(tp, log)
        self._each_online_dir(
            "error removing the cleaner checkpoint of a moved log",
            lambda d: CleanerCheckpoint.of(d).remove(tp) if d == source else None,
        )
        shutil.rmtree(doomed, ignore_errors=True)
        self.checkpoint_recovery_points()
        self.checkpoint_log_start_offsets()
        _log.info(
            "log.future_swapped",
            topic=tp.topic,
            partition=tp.partition,
            log_dir=str(target),
            previous_log_dir=str(source),
            log_end_offset=log.log_end_offset,
        )
        return log

    # --- checkpoints ----------------------------------------------------------------------

    def _by_dir(self) -> dict[Path, dict[TopicPartition, Log]]:
        grouped: dict[Path, dict[TopicPartition, Log]] = {d: {} for d in self.log_dirs}
        for tp, log in self._logs.items():
            grouped[self._dir_of[tp]][tp] = log
        for tp, log in self._future_logs.items():  # never in the dir of the current log
            grouped[self._future_dir_of[tp]][tp] = log
        return grouped

    # The checkpoint writers: an I/O error takes that dir offline (the others are written).

    def _write_checkpoint(self, path: Path, offsets: dict[TopicPartition, int]) -> None:
        """Write ``offsets`` to ``path`` unless this process last wrote exactly that there."""
        if self._written.get(path) == offsets:
            return
        self._written.pop(path, None)  # unknown until the write succeeds
        OffsetCheckpointFile(path).write(offsets)
        self._written[path] = offsets

    def checkpoint_recovery_points(self) -> None:
        grouped = self._by_dir()

        def write(log_dir: Path) -> None:
            self._write_checkpoint(
                log_dir / RECOVERY_POINT_CHECKPOINT,
                {tp: log.recovery_point for tp, log in grouped[log_dir].items()},
            )

        self._each_online_dir("error writing the recovery point checkpoint", write)

    def checkpoint_log_start_offsets(self) -> None:
        # As Kafka: only logs whose start offset is past their first segment need an entry.
        grouped = self._by_dir()

        def write(log_dir: Path) -> None:
            self._write_checkpoint(
                log_dir / LOG_START_OFFSET_CHECKPOINT,
                {
                    tp: log.log_start_offset
                    for tp, log in grouped[log_dir].items()
                    if log.log_start_offset > log.segments[0].base_offset
                },
            )

        self._each_online_dir("error writing the log start offset checkpoint", write)

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
        self._each_online_dir(
            "error writing the high watermark checkpoint",
            lambda d: OffsetCheckpointFile(d / REPLICATION_OFFSET_CHECKPOINT).write(per_dir[d]),
        )

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
        for tp, log in list(self._logs.items()):
            hw = None if high_watermarks is None else high_watermarks.get(tp)
            try:
                deleted += log.delete_old_segments(now_ms, hw)
            except Exception as exc:
                if not self.maybe_handle_io_error(tp, exc, f"error deleting segments of {tp}"):
                    raise
        return deleted

    def delete_due_files(self, now_ms: int) -> None:
        """Remove the segment files retention renamed *.deleted whose file.delete.delay.ms is
        over (Kafka schedules one task per deletion; a pass every second here)."""
        self._check_open()
        for tp, log in list(self._logs.items()):
            try:
                log.delete_due_files(now_ms)
            except Exception as exc:
                if not self.maybe_handle_io_error(tp, exc, f"error deleting files of {tp}"):
                    raise

    def flush_dirty_logs(self, now_ms: int) -> None:
        """Flush pass: each log flushes what rolls left pending and honours flush.ms."""
        self._check_open()
        for tp, log in list(self._logs.items()):
            try:
                log.maybe_flush(now_ms)
            except Exception as exc:
                if not self.maybe_handle_io_error(tp, exc, f"error flushing {tp}"):
                    raise

    def prepare_flushes(self, now_ms: int) -> list[tuple[Log, PendingFlush]]:
        """Background flushes due now (rolled segments, ``flush.ms``), as ``Log.prepare_flush``
        starts them; run each ``PendingFlush.sync`` off the loop, then ``complete_flushes``."""
        self._check_open()
        pending: list[tuple[Log, PendingFlush]] = []
        for tp in list(self._flush_candidates | self._timed_flushes):
            log = self._logs.get(tp)
            if log is None:  # deleted, or its dir went offline
                self._flush_candidates.discard(tp)
                self._timed_flushes.discard(tp)
                continue
            try:
                offset = log.flush_due(now_ms)
                flush = log.prepare_flush(offset) if offset is not None else None
            except Exception as exc:
                if not self.maybe_handle_io_error(tp, exc, f"error flushing {tp}"):
                    raise
                continue
            if offset is None:
                # Nothing pending until its next roll (the listener adds it back then).
                self._flush_candidates.discard(tp)
            if flush is not None:
                pending.append((log, flush))
        return pending

    def _watch_flushes(self, tp: TopicPartition, log: Log) -> None:
        """A log the flush scheduler must know of: asked once now (a log loaded or created
        may already have a flush pending), then after each roll, or every time when its
        flush.ms is finite."""
        log.set_flush_listener(lambda _: self._flush_candidates.add(tp))
        self._flush_candidates.add(tp)
        if log.config.flush_ms < LONG_MAX:
            self._timed_flushes.add(tp)
        else:
            self._timed_flushes.discard(tp)

    def complete_flushes(self, pending: Sequence[tuple[Log, PendingFlush]]) -> None:
        """Move the recovery point of each log whose flush synced; a failed fsync is an I/O
        error of the log's dir."""
        for log, flush in pending:
            if flush.error is not None:
                tp = TopicPartition(log.topic, log.partition)
                if not self.maybe_handle_io_error(tp, flush.error, f"error flushing {tp}"):
                    _log.warning(
                        "log.flush_failed",
                        topic=log.topic,
                        partition=log.partition,
                        error=str(flush.error),
                    )
                continue
            log.complete_flush(flush)

    def all_logs(self) -> Iterable[Log]:
        return list(self._logs.values())

    def _check_open(self) -> None:
        if self._closed:
            raise KafkaStorageError("the log manager is closed")

    def close(self) -> None:
        """Flush and close every log, write the checkpoints, mark the shutdown clean."""
        if self._closed:
            return
        for log_dir in self.log_dirs:
            if self.failure_channel.is_offline(log_dir):
                self.handle_log_dir_failure(log_dir)  # closed, but neither flushed nor marked
        for tp, log in list(self._logs.items()):
            try:
                log.flush()
                log.close()
            except Exception as exc:
                if not self.maybe_handle_io_error(tp, exc, f"error closing {tp}"):
                    raise
        for tp, log in list(self._future_logs.items()):
            try:
                log.flush()
                log.close()
            except Exception as exc:
                if not self.failure_channel.maybe_add_offline_log_dir(
                    self._future_dir_of[tp], exc, f"error closing the future log of {tp}"
                ):
                    raise
        self.checkpoint_recovery_points()
        self.checkpoint_log_start_offsets()

        def mark_clean(log_dir: Path) -> None:
            (log_dir / CLEAN_SHUTDOWN_FILE).touch()
            fsync_dir(log_dir)

        self._each_online_dir("error writing the clean shutdown marker", mark_clean)
        self._release_locks()
        self._closed = True
        _log.info("log_manager.closed", logs=len(self._logs))
