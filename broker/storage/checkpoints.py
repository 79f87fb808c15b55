"""Kafka's text checkpoint files, written atomically.

Every checkpoint file has the same framing, one item per line, lines ending in ``\\n``::

    0                  version (always 0)
    2                  number of entries that follow
    <entry>            one line per entry, in a format the file's kind defines
    <entry>

Kinds defined here:

* ``OffsetCheckpointFile``: entry = ``<topic> <partition> <offset>``. The log-dir files
  ``recovery-point-offset-checkpoint``, ``replication-offset-checkpoint`` (high watermarks) and
  ``log-start-offset-checkpoint`` use it.
* ``leader-epoch-checkpoint`` (one per partition): entry = ``<epoch> <startOffset>``; see
  ``epoch_cache.py``, which builds on ``CheckpointFile`` here.

Writes go to ``<file>.tmp``, which is fsynced and renamed over the file; then the directory is
fsynced, so a crash leaves either the old or the new file, never a torn one. A missing file
reads as empty; a malformed one raises KafkaStorageError naming the file and the line.

Not thread-safe: one writer at a time (the owner of the log or log dir).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Generic, NamedTuple, TypeVar

from minikafka.proto.errors import KafkaStorageError

__all__ = [
    "CHECKPOINT_VERSION",
    "CLEANER_OFFSET_CHECKPOINT",
    "LOG_START_OFFSET_CHECKPOINT",
    "RECOVERY_POINT_CHECKPOINT",
    "REPLICATION_OFFSET_CHECKPOINT",
    "CheckpointFile",
    "OffsetCheckpointFile",
    "TopicPartition",
    "fsync_dir",
]

CHECKPOINT_VERSION = 0
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"  # the log cleaner's first dirty offsets

T = TypeVar("T")


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


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
        lines = text.splitlines()
        if not lines:
            return []
        version = self._number(lines, 0, "version")
        if version != self._version:
            raise KafkaStorageError(
                f"checkpoint file {self.path} has version {version}; only version "
                f"{self._version} is understood"
            )
        if len(lines) < 2:
            return []
        expected = self._number(lines, 1, "entry count")
        entries: list[T] = []
        for number, line in enumerate(lines[2:], start=3):
            try:
                entry = self._parse_line(line)
            except ValueError:
                entry = None
            if entry is None:
                raise KafkaStorageError(
                    f"malformed line {number} in checkpoint file {self.path}: {line!r}"
                )
            entries.append(entry)
        if len(entries) != expected:
            raise KafkaStorageError(
                f"checkpoint file {self.path} announces {expected} entries on line 2 but holds "
                f"{len(entries)}"
            )
        return entries

    def _number(self, lines: list[str], index: int, what: str) -> int:
        try:
            return int(lines[index].strip())
        except ValueError:
            raise KafkaStorageError(
                f"malformed line {index + 1} in checkpoint file {self.path}: expected the "
                f"{what}, found {lines[index]!r}"
            ) from None


def _format_offset_entry(entry: tuple[tuple[str, int], int]) -> str:
    (topic, partition), offset = entry
    return f"{topic} {partition} {offset}"


def _parse_offset_entry(line: str) -> tuple[tuple[str, int], int] | None:
    fields = line.split()
    if len(fields) != 3:
        return None
    return TopicPartition(fields[0], int(fields[1])), int(fields[2])


class OffsetCheckpointFile:
    """A ``<topic> <partition> <offset>`` checkpoint (recovery points, high watermarks, log
    start offsets of one log dir): ``0``, entry count, then one such line per partition.
    Not thread-safe: one writer at a time (the log manager's owner)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: CheckpointFile[tuple[tuple[str, int], int]] = CheckpointFile(
            path, _format_offset_entry, _parse_offset_entry
        )

    def write(self, offsets: Mapping[TopicPartition, int] | Mapping[tuple[str, int], int]) -> None:
        """Replace the file's content with ``offsets`` keyed by (topic, partition)."""
        self._file.write(sorted(offsets.items()))

    def read(self) -> dict[TopicPartition, int]:
        return {TopicPartition(*tp): offset for tp, offset in self._file.read()}
