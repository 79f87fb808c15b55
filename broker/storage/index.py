"""A segment's two sparse indexes: ``.index`` (offset -> file position) and ``.timeindex``.

``<base>.index``, 8 bytes per entry, big-endian, no header::

    offset  size  field
         0     4  relativeOffset  int32  offset - segment base offset
         4     4  position        int32  byte position of the batch in the .log file

``<base>.timeindex``, 12 bytes per entry, big-endian, no header::

    offset  size  field
         0     8  timestamp       int64  largest timestamp in the segment up to this point
         8     4  relativeOffset  int32  offset of that timestamp - segment base offset

Both are sorted on both columns. An offset entry says "the batch at ``position`` ends at
``offset``", so scanning forward from the entry for the largest offset <= a target finds the
target. A time entry says "up to ``offset``, no timestamp exceeds ``timestamp``".

Kafka preallocates these files and maps them into memory. Here the entries live in memory
(two ``array`` columns, so a lookup is a ``bisect``) and the file holds a prefix of them: new
entries reach the file on ``flush()`` (the segment calls it on flush, roll and close), while
truncation shortens the file at once, so the file never claims an entry that the log has
lost. After a crash the log's recovery rebuilds the indexes of every segment past the recovery
point, exactly as Kafka does for its unflushed mapped pages.

Not thread-safe: owned by its segment, used by one caller at a time.
"""

from __future__ import annotations

import contextlib
import os
import struct
import sys
from array import array
from bisect import bisect_left, bisect_right
from pathlib import Path
from typing import ClassVar, NamedTuple

from minikafka.proto.errors import ErrorCode, KafkaError, KafkaStorageError

__all__ = [
    "CorruptIndexError",
    "OffsetIndex",
    "OffsetPosition",
    "TimeIndex",
    "TimestampOffset",
]

NO_TIMESTAMP = -1
_INT32_MAX = 2**31 - 1
_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_LITTLE_ENDIAN = sys.byteorder == "little"


class CorruptIndexError(KafkaError):
    """An index file fails its sanity check; the segment rebuilds it from the log."""

    code: ClassVar[ErrorCode] = ErrorCode.KAFKA_STORAGE_ERROR


class OffsetPosition(NamedTuple):
    offset: int
    position: int


class TimestampOffset(NamedTuple):
    timestamp: int
    offset: int


def _read_file(path: Path) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return b""


def _int32_column(data: bytes) -> array[int]:
    column = array("i")
    column.frombytes(data)
    if _LITTLE_ENDIAN:
        column.byteswap()
    return column


class _IndexFile:
    """What both indexes share: a base offset, a file and the count of entries written to it."""

    entry_size: int
    kind: str  # what the index is called in errors

    def __init__(
        self, path: Path, base_offset: int, max_entries: int, *, data: bytes | None = None
    ) -> None:
        """The entries of ``path``, or of ``data`` when its content is already known."""
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max_entries
        if data is None:
            data = _read_file(path)
        if len(data) % self.entry_size:
            raise CorruptIndexError(
                f"{self.kind} {path} is {len(data)} bytes long, not a multiple of {self.entry_size}"
            )
        self._load(data)
        self._written = self._count()  # entries [0, _written) are in the file

    def _load(self, data: bytes) -> None:
        """Take the entries of ``data``, a whole number of them."""
        raise NotImplementedError

    def _relative(self, offset: int) -> int:
        relative = offset - self.base_offset
        if relative < 0 or relative > _INT32_MAX:
            raise KafkaStorageError(
                f"offset {offset} cannot be stored relative to base offset {self.base_offset} "
                f"in {self.path}"
            )
        return relative

    def can_append_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= _INT32_MAX

    def _encode_from(self, start: int) -> bytes:
        raise NotImplementedError

    def _count(self) -> int:
        raise NotImplementedError

    def _truncate_entries(self, count: int) -> None:
        raise NotImplementedError

    def _shrink_file(self, count: int) -> None:
        if self._written > count:
            self._written = count
            try:
                os.truncate(self.path, count * self.entry_size)
            except FileNotFoundError:
                self._written = 0

    def flush(self, *, fsync: bool = True) -> None:
        """Write entries not yet in the file; with ``fsync`` also make them durable."""
        count = self._count()
        pending = self._written < count
        if not pending and not fsync:
            return
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            if pending:
                data = self._encode_from(self._written)
                os.pwrite(fd, data, self._written * self.entry_size)
                self._written = count
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)

    def reset(self) -> None:
        """Drop every entry, in memory and in the file (before a rebuild)."""
        self._truncate_entries(0)
        self._written = 0
        try:
            if os.stat(self.path).st_size == 0:
                return  # already empty: not written (the index of an idle segment)
        except FileNotFoundError:
            pass
        os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))

    def delete(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)

    def rename(self, path: Path) -> None:
        if self.path.exists():
            os.replace(self.path, path)
        self.path = path

    @property
    def entries(self) -> int:
        return self._count()

    @property
    def size_in_bytes(self) -> int:
        return self._count() * self.entry_size


class OffsetIndex(_IndexFile):
    """Sparse map from offset to the file position of the batch that ends at that offset.

    ``<base>.index``: 8-byte entries, relativeOffset int32 + position int32, big-endian.
    Not thread-safe: used only through its segment, by the log's single owner.
    """

    entry_size = 8
    kind = "offset index"
    _relative_offsets: array[int]
    _positions: array[int]

    def _load(self, data: bytes) -> None:
        column = _int32_column(data)
        self._relative_offsets = column[0::2]
        self._positions = column[1::2]

    @classmethod
    def read_entries(cls, path: str | Path, base_offset: int) -> list[tuple[int, int]]:
        """(absolute offset, position) of every whole entry in the file, unchecked."""
        data = _read_file(Path(path))
        whole = len(data) - len(data) % cls.entry_size
        return [
            (base_offset + relative, position)
            for relative, position in _OFFSET_ENTRY.iter_unpack(data[:whole])
        ]

    def _count(self) -> int:
        return len(self._positions)

    def _encode_from(self, start: int) -> bytes:
        column = array("i")
        for relative, position in zip(
            self._relative_offsets[start:], self._positions[start:], strict=True
        ):
            column.append(relative)
            column.append(position)
        if _LITTLE_ENDIAN:
            column.byteswap()
        return column.tobytes()

    def _truncate_entries(self, count: int) -> None:
        del self._relative_offsets[count:]
        del self._positions[count:]

    @property
    def is_full(self) -> bool:
        return len(self._positions) >= self.max_entries

    @property
    def last_entry(self) -> OffsetPosition:
        """The last entry, or (base offset, 0) when empty."""
        if not self._positions:
            return OffsetPosition(self.base_offset, 0)
        return OffsetPosition(self.base_offset + self._relative_offsets[-1], self._positions[-1])

    @property
    def last_offset(self) -> int:
        return self.last_entry.offset

    def entry(self, n: int) -> OffsetPosition:
        return OffsetPosition(self.base_offset + self._relative_offsets[n], self._positions[n])

    def append(self, offset: int, position: int) -> None:
        # On every append of a produce request: plain comparisons, no helper objects.
        offsets = self._relative_offsets
        if len(offsets) >= self.max_entries:
            raise KafkaStorageError(
                f"offset index {self.path} is full ({self.max_entries} entries)"
            )
        relative = self._relative(offset)
        if offsets and relative <= offsets[-1]:
            raise KafkaStorageError(
                f"offset {offset} appended to {self.path} after offset {self.last_offset}; "
                "index entries must increase"
            )
        offsets.append(relative)
        self._positions.append(position)

    def lookup(self, target_offset: int) -> OffsetPosition:
        """The entry with the largest offset <= ``target_offset``; (base offset, 0) if none."""
        slot = bisect_right(self._relative_offsets, target_offset - self.base_offset) - 1
        if slot < 0:
            return OffsetPosition(self.base_offset, 0)
        return OffsetPosition(
            self.base_offset + self._relative_offsets[slot], self._positions[slot]
        )

    def floor_position(self, position: int) -> int:
        """The largest position of an entry that is <= ``position`` (a batch's start), or 0:
        where a walk to the last whole batch before ``position`` can start."""
        slot = bisect_right(self._positions, position) - 1
        return self._positions[slot] if slot >= 0 else 0

    def truncate_to(self, offset: int) -> None:
        """Remove every entry for an offset >= ``offset``."""
        count = bisect_left(self._relative_offsets, offset - self.base_offset)
        self._truncate_entries(count)
        self._shrink_file(count)

    def sanity_check(self, log_size: int) -> None:
        """Raise CorruptIndexError unless entries increase and point inside the log."""
        offsets = self._relative_offsets
        positions = self._positions
        for n in range(len(positions)):
            if offsets[n] < 0 or positions[n] < 0 or positions[n] >= log_size:
                raise CorruptIndexError(
                    f"offset index {self.path} entry {n} (relative offset {offsets[n]}, "
                    f"position {positions[n]}) is outside the log of {log_size} bytes"
                )
            if n and (offsets[n] <= offsets[n - 1] or positions[n] <= positions[n - 1]):
                raise CorruptIndexError(
                    f"offset index {self.path} entry {n} does not increase on its predecessor"
                )


class TimeIndex(_IndexFile):
    """Sparse map from timestamp to the offset where the segment first reached it.

    ``<base>.timeindex``: 12-byte entries, timestamp int64 + relativeOffset int32, big-endian.
    Not thread-safe: used only through its segment, by the log's single owner.
    """

    entry_size = 12
    kind = "time index"
    _timestamps: array[int]
    _relative_offsets: array[int]

    def _load(self, data: bytes) -> None:
        self._timestamps = array("q")
        self._relative_offsets = array("i")
        for timestamp, relative in _TIME_ENTRY.iter_unpack(data):
            self._timestamps.append(timestamp)
            self._relative_offsets.append(relative)

    @classmethod
    def read_entries(cls, path: str | Path, base_offset: int) -> list[tuple[int, int]]:
        """(timestamp, absolute offset) of every whole entry in the file, unchecked."""
        data = _read_file(Path(path))
        whole = len(data) - len(data) % cls.entry_size
        return [
            (timestamp, base_offset + relative)
            for timestamp, relative in _TIME_ENTRY.iter_unpack(data[:whole])
        ]

    def _count(self) -> int:
        return len(self._timestamps)

    def _encode_from(self, start: int) -> bytes:
        pack = _TIME_ENTRY.pack
        return b"".join(
            pack(timestamp, relative)
            for timestamp, relative in zip(
                self._timestamps[start:], self._relative_offsets[start:], strict=True
            )
        )

    def _truncate_entries(self, count: int) -> None:
        del self._timestamps[count:]
        del self._relative_offsets[count:]

    @property
    def is_full(self) -> bool:
        # One slot stays free for the entry a segment adds when it stops being active
        # (maybe_append with skip_full_check), as Kafka reserves it.
        return len(self._timestamps) >= self.max_entries - 1

    @property
    def last_entry(self) -> TimestampOffset:
        """The last entry, or (-1, base offset) when empty."""
        if not self._timestamps:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return TimestampOffset(self._timestamps[-1], self.base_offset + self._relative_offsets[-1])

    def entry(self, n: int) -> TimestampOffset:
        return TimestampOffset(self._timestamps[n], self.base_offset + self._relative_offsets[n])

    def maybe_append(self, timestamp: int, offset: int, *, skip_full_check: bool = False) -> None:
        """Add (timestamp, offset) if ``timestamp`` is larger than the last one indexed."""
        timestamps = self._timestamps
        if not skip_full_check and len(timestamps) >= self.max_entries - 1:
            raise KafkaStorageError(f"time index {self.path} is full ({self.max_entries} entries)")
        if not timestamps:
            if timestamp > NO_TIMESTAMP:
                timestamps.append(timestamp)
                self._relative_offsets.append(self._relative(offset))
            return
        last_timestamp = timestamps[-1]
        if offset - self.base_offset < self._relative_offsets[-1]:
            raise KafkaStorageError(
                f"offset {offset} appended to {self.path} after offset "
                f"{self.last_entry.offset}; time index offsets must not decrease"
            )
        if timestamp < last_timestamp:
            raise KafkaStorageError(
                f"timestamp {timestamp} appended to {self.path} after timestamp "
                f"{last_timestamp}; time index timestamps must not decrease"
            )
        if timestamp > last_timestamp:
            timestamps.append(timestamp)
            self._relative_offsets.append(self._relative(offset))

    def lookup(self, target_timestamp: int) -> TimestampOffset:
        """The entry with the largest timestamp <= target; (-1, base offset) if none."""
        slot = bisect_right(self._timestamps, target_timestamp) - 1
        if slot < 0:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return TimestampOffset(
            self._timestamps[slot], self.base_offset + self._relative_offsets[slot]
        )

    def truncate_to(self, offset: int) -> None:
        """Remove every entry for an offset >= ``offset``."""
        count = bisect_left(self._relative_offsets, offset - self.base_offset)
        self._truncate_entries(count)
        self._shrink_file(count)

    def sanity_check(self, next_offset: int) -> None:
        """Raise CorruptIndexError unless entries increase and stay below ``next_offset``."""
        timestamps = self._timestamps
        offsets = self._relative_offsets
        limit = next_offset - self.base_offset
        for n in range(len(timestamps)):
            if offsets[n] < 0 or offsets[n] >= limit:
                raise CorruptIndexError(
                    f"time index {self.path} entry {n} (relative offset {offsets[n]}) is outside "
                    f"the segment's offsets [{self.base_offset}, {next_offset})"
                )
            if n and (timestamps[n] <= timestamps[n - 1] or offsets[n] < offsets[n - 1]):
                raise CorruptIndexError(
                    f"time index {self.path} entry {n} does not increase on its predecessor"
                )
