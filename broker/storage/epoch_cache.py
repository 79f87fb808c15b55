"""The leader epoch cache of one partition, kept in ``leader-epoch-checkpoint``.

The file uses the checkpoint framing of ``checkpoints.py`` with one ``<epoch> <startOffset>``
entry per line, oldest first; e.g. epochs 0 and 3 starting at offsets 0 and 17::

    0
    2
    0 0
    3 17

An entry says: the first batch written under ``epoch`` has base offset ``startOffset``. Both
columns strictly increase. The cache answers OffsetsForLeaderEpoch (``end_offset_for``), which
a follower uses to find where its log diverges from the leader's (KIP-101, KIP-279).

Every change is written to the file (atomically, fsynced) before the method returns, except
with ``flush=False`` (``assign``, ``truncate_from_end``): a broker that becomes leader of
thousands of partitions at once writes their files together, off its loop (``snapshot``
there, ``write`` in a worker thread), and loading thousands of logs truncates their epochs
without an fsync each. Until then the cache is ``dirty``, and the Log writes it before it
appends or fsyncs anything (``Log._append``, ``Log.flush``, ``PendingFlush.sync``, ``close``):
the file on disk is stale only while the log has no data written after the change, so
recovery, which re-reads epochs from the batches past the recovery point, never meets data
that contradicts it, and the next load truncates a stale entry above the log end again.
Kafka writes truncations in the background too.

Not thread-safe: owned by the partition's ``Log`` and used from the broker's event loop;
only ``write`` may be called from another thread (one write at a time, newest wins).
"""

from __future__ import annotations

import threading
from bisect import bisect_right
from pathlib import Path
from typing import NamedTuple

import structlog

from minikafka.broker.storage.checkpoints import CheckpointFile

__all__ = [
    "LEADER_EPOCH_CHECKPOINT",
    "UNDEFINED_EPOCH",
    "UNDEFINED_EPOCH_OFFSET",
    "EpochEntry",
    "EpochSnapshot",
    "LeaderEpochFileCache",
]

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1

_log = structlog.get_logger(__name__)


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


class EpochSnapshot(NamedTuple):
    """The entries as of one change (``version`` counts the changes), for ``write``."""

    version: int
    entries: tuple[EpochEntry, ...]


def _format_entry(entry: EpochEntry) -> str:
    return f"{entry.epoch} {entry.start_offset}"


def _parse_entry(line: str) -> EpochEntry | None:
    fields = line.split()
    if len(fields) != 2:
        return None
    return EpochEntry(int(fields[0]), int(fields[1]))


class LeaderEpochFileCache:
    """(leader epoch -> start offset) entries of one partition, mirrored to its file.

    ``leader-epoch-checkpoint``: ``0``, entry count, then ``<epoch> <startOffset>`` lines.
    Not thread-safe: owned by the partition's Log, used by its single owner.
    """

    def __init__(self, path: Path, *, topic: str, partition: int, read: bool = True) -> None:
        """``read=False``: the caller knows the file does not exist (a directory listing
        without it), so it is not looked for; the cache starts empty."""
        self.path = path
        self._topic = topic
        self._partition = partition
        self._file: CheckpointFile[EpochEntry] = CheckpointFile(path, _format_entry, _parse_entry)
        self._entries: list[EpochEntry] = []
        for entry in self._file.read() if read else ():
            self._assign(entry)
        self._version = 0  # bumped by every change of the entries
        self._written_version = 0  # the version the file holds; set under _write_lock
        self._write_lock = threading.Lock()

    # --- queries --------------------------------------------------------------------------

    @property
    def entries(self) -> list[EpochEntry]:
        return list(self._entries)

    @property
    def latest_entry(self) -> EpochEntry | None:
        return self._entries[-1] if self._entries else None

    @property
    def latest_epoch(self) -> int | None:
        return self._entries[-1].epoch if self._entries else None

    @property
    def earliest_entry(self) -> EpochEntry | None:
        return self._entries[0] if self._entries else None

    def previous_epoch(self, epoch: int) -> int | None:
        """The largest cached epoch below ``epoch``."""
        slot = self._slot_after(epoch - 1) - 1
        return self._entries[slot].epoch if slot >= 0 else None

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch under which ``offset`` was written, as far as the cache knows."""
        found: int | None = None
        for entry in self._entries:
            if entry.start_offset > offset:
                break
            found = entry.epoch
        return found

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) answering OffsetsForLeaderEpoch for ``requested_epoch``.

        * the undefined epoch (-1), or an epoch above every cached one -> (-1, -1)
        * the latest epoch -> (latest, log end offset): its end is wherever the log ends
        * otherwise -> (largest cached epoch <= requested, start offset of the next higher
          epoch); when no cached epoch is <= requested, the requested epoch itself is returned
          with the start offset of the earliest cached epoch (older epochs were removed with
          their data; the follower must not keep anything before that point)
        """
        if requested_epoch == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        latest = self.latest_epoch
        if latest is not None and latest == requested_epoch:
            return requested_epoch, log_end_offset
        higher = self._slot_after(requested_epoch)
        if higher == len(self._entries):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        end_offset = self._entries[higher].start_offset
        if higher == 0:
            return requested_epoch, end_offset
        return self._entries[higher - 1].epoch, end_offset

    def _slot_after(self, epoch: int) -> int:
        """Index of the first entry whose epoch is > ``epoch``."""
        return bisect_right(self._entries, epoch, key=lambda e: e.epoch)

    # --- changes --------------------------------------------------------------------------

    def assign(self, epoch: int, start_offset: int, *, flush: bool = True) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; True if the cache changed.

        A no-op when ``epoch`` is already the latest with a start offset no higher. Entries
        that the new one contradicts (an epoch >= ``epoch``, or a start offset >=
        ``start_offset``) are removed first, so both columns keep increasing. With
        ``flush=False`` the file is left to a later ``write`` (see the module docstring).
        """
        changed = self._assign(EpochEntry(epoch, start_offset))
        if changed:
            self._version += 1
            if flush:
                self.flush()
        return changed

    def _assign(self, entry: EpochEntry) -> bool:
        if entry.epoch < 0 or entry.start_offset < 0:
            raise ValueError(f"invalid leader epoch entry {entry}")
        latest = self.latest_entry
        if (
            latest is not None
            and latest.epoch == entry.epoch
            and entry.start_offset >= latest.start_offset
        ):
            return False
        removed: list[EpochEntry] = []
        while self._entries and (
            self._entries[-1].epoch >= entry.epoch
            or self._entries[-1].start_offset >= entry.start_offset
        ):
            removed.append(self._entries.pop())
        self._entries.append(entry)
        # Removing only an entry with the same start offset means nothing was written under
        # it: routine, not worth a warning.
        if len(removed) > 1 or (removed and removed[0].start_offset != entry.start_offset):
            _log.warning(
                "epoch_cache.conflicting_entries_removed",
                topic=self._topic,
                partition=self._partition,
                new_epoch=entry.epoch,
                new_start_offset=entry.start_offset,
                removed=[tuple(e) for e in reversed(removed)],
            )
        return True

    def truncate_from_end(self, end_offset: int, *, flush: bool = True) -> None:
        """Remove entries whose start offset is >= ``end_offset`` (the log was cut there).
        With ``flush=False`` the file is left to a later write, as for ``assign``."""
        removed: list[EpochEntry] = []
        while end_offset >= 0 and self._entries and self._entries[-1].start_offset >= end_offset:
            removed.append(self._entries.pop())
        if removed:
            _log.info(
                "epoch_cache.truncated_from_end",
                topic=self._topic,
                partition=self._partition,
                end_offset=end_offset,
                removed=[tuple(e) for e in reversed(removed)],
            )
            self._version += 1
            if flush:
                self.flush()

    def truncate_from_start(self, start_offset: int) -> None:
        """Drop entries wholly before ``start_offset`` (the log start moved up there).

        The latest entry starting at or before ``start_offset`` stays, moved to start at
        ``start_offset``, since that epoch still covers the first remaining offset.
        """
        count = 0
        while count < len(self._entries) and self._entries[count].start_offset <= start_offset:
            count += 1
        if not count or (count == 1 and self._entries[0].start_offset == start_offset):
            return
        covering = self._entries[count - 1]
        self._entries[:count] = [EpochEntry(covering.epoch, start_offset)]
        _log.info(
            "epoch_cache.truncated_from_start",
            topic=self._topic,
            partition=self._partition,
            start_offset=start_offset,
            first_entry=tuple(self._entries[0]),
        )
        self._version += 1
        self.flush()

    def clear(self) -> None:
        """Remove every entry (the log was emptied and restarted)."""
        self._entries.clear()
        self._version += 1
        self.flush()

    @property
    def dirty(self) -> bool:
        """A change is not in the file yet (``assign(..., flush=False)``)."""
        return self._written_version != self._version

    def snapshot(self) -> EpochSnapshot:
        return EpochSnapshot(self._version, tuple(self._entries))

    def write(self, snapshot: EpochSnapshot) -> None:
        """Write ``snapshot`` to ``leader-epoch-checkpoint`` unless the file already holds it
        or a newer one. Any thread."""
        with self._write_lock:
            if snapshot.version <= self._written_version and self._file.path.exists():
                return
            self._file.write(snapshot.entries)
            self._written_version = snapshot.version

    def flush(self) -> None:
        """Write the entries to ``leader-epoch-checkpoint``."""
        self.write(self.snapshot())
