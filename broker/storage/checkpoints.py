"""Kafka's text checkpoint files, written atomically.

Every checkpoint file has the same framing, one item per line, lines ending in ``\\n``::

    0                  version (always 0)
    2                  number of entries that follow
    <entry>            one line per entry, in a format the file's kind defines
    <entry>

Kinds defined here:

* ``OffsetCheckpointFile``: entry = ``<topic> <partition> <offset>``. The log-dir files
  ``recovery-point-offset-checkpoint``, ``replication-offset-checkpoint`` (high watermarks) and
  ``log-start-offset-checkpoint`` use it, and so does ``cleaner-offset-checkpoint`` through
  ``CleanerCheckpoint``, the one instance per log dir that all its users share.
* ``leader-epoch-checkpoint`` (one per partition): entry = ``<epoch> <startOffset>``; see
  ``epoch_cache.py``, which builds on ``CheckpointFile`` here.

Writes go to ``<file>.tmp``, which is fsynced and renamed over the file; then the directory is
fsynced, so a crash leaves either the old or the new file, never a torn one. A missing file
reads as empty; a malformed one raises KafkaStorageError naming the file and the line.

Not thread-safe: one writer at a time (the owner of the log or log dir).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import ClassVar, Generic, TypeVar

import structlog

from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import KafkaStorageError
from minikafka.proto.log_files import (  # parsed here and by the offline readers (spark_jobs)
    CHECKPOINT_VERSION,
    CLEANER_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    parse_checkpoint,
    parse_offset_entry,
)

__all__ = [
    "CHECKPOINT_VERSION",
    "CLEANER_OFFSET_CHECKPOINT",
    "LOG_START_OFFSET_CHECKPOINT",
    "RECOVERY_POINT_CHECKPOINT",
    "REPLICATION_OFFSET_CHECKPOINT",
    "CheckpointFile",
    "CleanerCheckpoint",
    "OffsetCheckpointFile",
    "TopicPartition",
    "fsync_dir",
]


T = TypeVar("T")

_WRITE_LOCKS: dict[Path, threading.Lock] = {}
_WRITE_LOCKS_GUARD = threading.Lock()


def _write_lock(path: Path) -> threading.Lock:
    with _WRITE_LOCKS_GUARD:
        return _WRITE_LOCKS.setdefault(path, threading.Lock())


_log = structlog.get_logger(__name__)


def fsync_dir(directory: Path) -> None:
    """Make renames and file creations in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class CheckpointFile(Generic[T]):
    """The version/count framing, with entries turned to and from lines by two functions.

    File: ``<version>\n<count>\n`` then one formatted line per entry. ``parse_line`` returns
    None (or raises ValueError) for a line it cannot read. Not thread-safe: one writer at a
    time.
    """

    def __init__(
        self,
        path: Path,
        format_line: Callable[[T], str],
        parse_line: Callable[[str], T | None],
        version: int = CHECKPOINT_VERSION,
    ) -> None:
        self.path = path
        self._format_line = format_line
        self._parse_line = parse_line
        self._version = version

    def write(self, entries: Iterable[T]) -> None:
        lines = [self._format_line(entry) for entry in entries]
        text = f"{self._version}\n{len(lines)}\n" + "".join(line + "\n" for line in lines)
        tmp = self.path.with_name(self.path.name + ".tmp")
        # One writer at a time per file: a periodic write still running in a worker thread and
        # the one at shutdown would share the .tmp file, and the second rename find it gone.
        with _write_lock(self.path):
            try:
                with open(tmp, "w", encoding="utf-8", newline="\n") as f:
                    f.write(text)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, self.path)
                fsync_dir(self.path.parent)
            except OSError as exc:
                raise KafkaStorageError(f"cannot write checkpoint file {self.path}: {exc}") from exc

    def read(self) -> list[T]:
        try:
            with open(self.path, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            return []
        except (OSError, UnicodeDecodeError) as exc:
            raise KafkaStorageError(f"cannot read checkpoint file {self.path}: {exc}") from exc
        try:
            return parse_checkpoint(
                text, self._parse_line, version=self._version, source=str(self.path)
            )
        except ValueError as exc:
            raise KafkaStorageError(str(exc)) from None


def _format_offset_entry(entry: tuple[tuple[str, int], int]) -> str:
    (topic, partition), offset = entry
    return f"{topic} {partition} {offset}"


class OffsetCheckpointFile:
    """A ``<topic> <partition> <offset>`` checkpoint (recovery points, high watermarks, log
    start offsets of one log dir): ``0``, entry count, then one such line per partition.
    Not thread-safe: one writer at a time (the log manager's owner)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: CheckpointFile[tuple[tuple[str, int], int]] = CheckpointFile(
            path, _format_offset_entry, parse_offset_entry
        )

    def write(self, offsets: Mapping[TopicPartition, int] | Mapping[tuple[str, int], int]) -> None:
        """Replace the file's content with ``offsets`` keyed by (topic, partition)."""
        self._file.write(sorted(offsets.items()))

    def read(self) -> dict[TopicPartition, int]:
        return {TopicPartition(*tp): offset for tp, offset in self._file.read()}


class CleanerCheckpoint:
    """One log dir's ``cleaner-offset-checkpoint``: each entry is the log cleaner's first dirty
    offset of a partition, and its presence also says that the partition's log may have
    offset gaps (its own cleaner, or a cleaned leader it copied, removed records). Recovery
    accepts gaps only in such logs and in compacted ones (log.py).

    Everything in the process that reads or writes the file (the log manager, its logs, the
    log cleaner's threads) shares the one instance ``CleanerCheckpoint.of(log_dir)`` returns,
    which keeps the entries in memory and writes the whole file (fsynced) on each change.
    Thread-safe.
    """

    _instances: ClassVar[dict[str, CleanerCheckpoint]] = {}
    _instances_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, log_dir: Path) -> None:
        self.file = OffsetCheckpointFile(log_dir / CLEANER_OFFSET_CHECKPOINT)
        self._lock = threading.Lock()
        self._offsets: dict[TopicPartition, int] | None = None

    @classmethod
    def of(cls, log_dir: Path) -> CleanerCheckpoint:
        key = os.path.abspath(log_dir)  # a str: every log of a dir asks, when it loads
        with cls._instances_lock:
            instance = cls._instances.get(key)
            if instance is None:
                instance = cls._instances[key] = cls(Path(key))
            return instance

    def _entries(self) -> dict[TopicPartition, int]:
        if self._offsets is None:
            try:
                self._offsets = self.file.read()
            except KafkaStorageError as exc:  # costs a full cleaning, not the broker
                _log.warning("checkpoint.unreadable", file=str(self.file.path), error=exc.message)
                self._offsets = {}
        return self._offsets

    def _write(self) -> None:
        self.file.write(self._entries())

    def get(self, tp: TopicPartition) -> int | None:
        with self._lock:
            return self._entries().get(tp)

    def set(self, tp: TopicPartition, offset: int) -> None:
        with self._lock:
            offsets = self._entries()
            if offsets.get(tp) != offset:
                offsets[tp] = offset
                self._write()

    def ensure(self, tp: TopicPartition, offset: int) -> None:
        """Add an entry at ``offset`` unless ``tp`` has one; durable when this returns."""
        with self._lock:
            offsets = self._entries()
            if tp not in offsets:
                offsets[tp] = offset
                self._write()

    def lower(self, tp: TopicPartition, offset: int) -> None:
        """Move ``tp``'s entry down to ``offset`` if it is above (a truncation); never adds
        or removes one."""
        with self._lock:
            offsets = self._entries()
            if offsets.get(tp, -1) > offset:
                offsets[tp] = offset
                self._write()

    def remove(self, tp: TopicPartition) -> None:
        with self._lock:
            offsets = self._entries()
            if offsets.pop(tp, None) is not None:
                self._write()

    def retain(self, keep: Callable[[TopicPartition], bool]) -> None:
        """Drop the entries of partitions ``keep`` refuses (logs deleted before a crash)."""
        with self._lock:
            offsets = self._entries()
            gone = [tp for tp in offsets if not keep(tp)]
            for tp in gone:
                del offsets[tp]
            if gone:
                self._write()
