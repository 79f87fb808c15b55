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

Every change is written to the file (atomically, fsynced) before the method returns. Kafka
writes truncations in the background instead; here they are rare enough to do inline.

Not thread-safe: owned by the partition's ``Log`` and used from the broker's event loop.
"""

from __future__ import annotations

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
    "LeaderEpochFileCache",
]

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1

_log = structlog.get_logger(__name__)


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


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

    def __init__(self, path: Path, *, topic: str, partition: int) -> None:
        self.path = path
        self._topic = topic
        self._partition = partition
        self._file: CheckpointFile[EpochEntry] = CheckpointFile(path, _format_entry, _parse_entry)
        self._entries: list[EpochEntry] = []
        for entry in self._file.read():
            self._assign(entry)

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

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; True if the cache changed.

        A no-op when ``epoch`` is already the latest with a start offset no higher. Entries
        that the new one contradicts (an epoch >= ``epoch``, or a start offset >=
        ``start_offset``) are removed first, so both columns keep increasing.
        """
        changed = self._assign(EpochEntry(epoch, start_offset))
        if changed:
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

    def truncate_from_end(self, end_offset: int) -> None:
        """Remove entries whose start offset is >= ``end_offset`` (the log was cut there)."""
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
        self.flush()

    def clear(self) -> None:
        """Remove every entry (the log was emptied and restarted)."""
        self._entries.clear()
        self.flush()

    def flush(self) -> None:
        """Write the entries to ``leader-epoch-checkpoint``."""
        self._file.write(self._entries)
