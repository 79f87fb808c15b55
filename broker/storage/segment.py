"""One log segment: ``<base>.log`` plus its ``<base>.index``, ``<base>.timeindex`` and, once
a transaction aborted in it, ``<base>.txnindex``.

Files are named by the segment's base offset, 20 digits zero-padded
(``00000000000000000000.log``). The ``.log`` file is RecordBatch v2 batches back to back, exactly
as they arrived on the wire (layout in ``proto/records.py``), with no header and no padding;
the base offset is at or below its first batch's, and offsets grow from batch to batch
(densely as appended; the log cleaner leaves gaps where it removed records). The two index
layouts are in ``broker/storage/index.py``, the ``.txnindex`` in ``txn_index.py``.

Indexing follows Kafka: while appending, a batch gets an offset index entry (its last offset,
its position) when more than ``index.interval.bytes`` were appended since the previous entry,
and at the same moment the time index gets (largest timestamp so far, offset where it was
reached) if that timestamp grew. Recovery rebuilds both indexes with the same rule, so a rebuilt
index equals the one appending wrote.

Reads are ``os.pread`` slices of the ``.log`` file starting at a batch boundary; no record is
decoded except when searching by timestamp. A read can also leave the batches in the file
(``FileRecords``: a file descriptor of its own, a position and a size) for a front door that
sends them with sendfile(2), as Kafka's FileRecords.slice.

Not thread-safe: owned by its ``Log``, which is owned by the broker's event loop (one caller at a
time).
"""

from __future__ import annotations

import contextlib
import os
import random
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple, Protocol

from minikafka.broker.storage.config import LogConfig
from minikafka.broker.storage.index import (
    NO_TIMESTAMP,
    CorruptIndexError,
    OffsetIndex,
    TimeIndex,
)
from minikafka.broker.storage.txn_index import TXN_INDEX_SUFFIX, AbortedTxn, TransactionIndex
from minikafka.proto.errors import CorruptRecordError, InvalidRecordError, KafkaStorageError
from minikafka.proto.log_files import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, log_file_name
from minikafka.proto.records import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    decode_batch,
    iter_batch_headers,
    read_header,
    validate_batch,
)

__all__ = [
    "BatchLocation",
    "FetchDataInfo",
    "FileRecords",
    "LogSegment",
    "RecoveryResult",
    "TimestampAndOffset",
]

_MIN_BATCH_SIZE = HEADER_SIZE  # a batch with no records is still a whole header
_SCAN_CHUNK = 8 * 1024  # enough for the batches between two index entries, usually
_RECOVERY_CHUNK = 4 * 1024 * 1024


def _read_index_file(path: Path) -> bytes | None:
    """The file's bytes, or None when it does not exist."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


class _SharedFile:
    """A segment's ``.log`` descriptor and how many hold it: the segment while it is open and
    each ``FileRecords`` left in it; the last to let go closes it. As Kafka's slices share their
    segment's FileChannel: no descriptor per answer in flight, so clients that never read their
    answers cannot spend the process's descriptors (which a segment roll needs). Thread-safe:
    a ``FileRecords`` may be collected on any thread."""

    __slots__ = ("_holders", "_lock", "fd")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._holders = 1
        self._lock = threading.Lock()

    def hold(self) -> _SharedFile:
        with self._lock:
            self._holders += 1
        return self

    def release(self) -> None:
        with self._lock:
            self._holders -= 1
            if self._holders == 0:
                os.close(self.fd)


class FileRecords:
    """Whole batches left in a segment's ``.log``: ``size`` bytes from ``position`` of ``fd``.

    ``fd`` is the segment's own descriptor, held open for these records (``_SharedFile``), so
    the bytes stay readable when the segment is closed, deleted or swapped by the cleaner before
    they are sent: an unlinked file lives on while a descriptor holds it, as Kafka's deleted
    segments do until file.delete.delay.ms. Only a truncation of the file (a leader that became
    a follower cuts uncommitted batches) can take bytes from under it; a sender then finds the
    file short and must give up the answer. The holder closes it (``close``; a collected one
    closes itself); ``fd`` is -1 from then on. Not thread-safe: owned by the event loop that
    read it.
    """

    __slots__ = ("_file", "fd", "position", "size")

    def __init__(self, file: _SharedFile, position: int, size: int) -> None:
        self._file: _SharedFile | None = file
        self.fd = file.fd
        self.position = position
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        return f"FileRecords(fd={self.fd}, position={self.position}, size={self.size})"

    def read(self, size: int | None = None, offset: int = 0) -> bytes:
        """``size`` bytes (all by default) from ``offset`` into the slice; fewer when the file
        was truncated meanwhile."""
        want = self.size - offset if size is None else min(size, self.size - offset)
        parts: list[bytes] = []
        got = 0
        while got < want:
            more = os.pread(self.fd, want - got, self.position + offset + got)
            if not more:
                break
            parts.append(more)
            got += len(more)
        return b"".join(parts)

    def cut(self, size: int) -> FileRecords:
        """These records, the first ``size`` bytes only (no other descriptor)."""
        self.size = min(size, self.size)
        return self

    def read_and_close(self) -> bytes:
        try:
            return self.read()
        finally:
            self.close()

    def close(self) -> None:
        file, self._file = self._file, None
        if file is not None:
            self.fd = -1
            file.release()

    def __del__(self) -> None:
        self.close()


class FetchDataInfo(NamedTuple):
    """What a read returns: raw batches starting at the batch that holds ``fetch_offset``.

    ``records`` holds whole batches only, read (bytes) or left in the file (``FileRecords``,
    when the read asked for them). ``first_entry_incomplete`` is True when the first batch did
    not fit in the size limit (with ``min_one_message`` off), so nothing was returned.
    """

    fetch_offset: int
    records: bytes | FileRecords
    first_entry_incomplete: bool = False


class BatchLocation(NamedTuple):
    """A batch's header and its byte position in the segment's ``.log``."""

    position: int
    header: BatchHeader


class TimestampAndOffset(NamedTuple):
    timestamp: int
    offset: int
    leader_epoch: int | None


class RecoveryResult(NamedTuple):
    bytes_truncated: int
    next_offset: int
    error: str | None  # why validation stopped, when it stopped before the end of the file
    transactional: bool = False  # a batch kept has the transactional bit (or is a marker)


class EpochAssigner(Protocol):
    """The part of the leader epoch cache that recovery feeds (see epoch_cache.py)."""

    @property
    def latest_epoch(self) -> int | None: ...

    def assign(self, epoch: int, start_offset: int) -> bool: ...


class LogSegment:
    """A ``.log`` file and its two indexes, for the offsets from ``base_offset`` on.

    ``<base>.log`` is whole RecordBatch v2 batches back to back (no header, no padding);
    ``<base>.index`` / ``<base>.timeindex`` as in index.py. Not thread-safe: one caller at a
    time (the owning Log's event loop or executor job).

    Open with ``LogSegment.create`` (new, empty files) or ``LogSegment.open`` (existing files;
    a missing or unreadable index is reported by ``check_indexes`` for the log to rebuild).
    """

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        config: LogConfig,
        *,
        time_ms: Callable[[], int],
        create: bool,
    ) -> None:
        self.dir = directory
        self.base_offset = base_offset
        self._index_interval_bytes = config.index_interval_bytes
        self._max_offset_index_entries = config.max_offset_index_entries
        self._max_time_index_entries = config.max_time_index_entries
        self._time_ms = time_ms
        self.created_ms = time_ms()
        # segment.jitter.ms: each segment rolls this much before segment.ms, so the segments
        # of many partitions created together do not all roll at once (Kafka's rollJitterMs).
        jitter = min(config.segment_jitter_ms, config.segment_ms)
        self.roll_jitter_ms = random.randrange(jitter) if jitter > 0 else 0
        self.path = directory / log_file_name(base_offset, LOG_SUFFIX)
        # The aborted transactions whose marker is here (read on first use; no file until
        # the first entry, as Kafka's).
        self.txn_index = TransactionIndex(self.path.with_suffix(TXN_INDEX_SUFFIX), base_offset)
        self._index_error: str | None = None
        # Both indexes are read on first use (Kafka's LazyIndex): a load recovers or checks
        # every segment, and neither needs the old entries of an index it rebuilds, nor of
        # an empty segment's, which ``check_indexes`` checks by their files' sizes. Until
        # then ``_bytes_since_last_index_entry`` and the max timestamp are unknown too.
        self._offset_index: OffsetIndex | None = None
        self._time_index: TimeIndex | None = None
        self._bytes_since_last_index_entry = 0
        self._max_timestamp = NO_TIMESTAMP
        self._offset_of_max_timestamp = base_offset
        flags = os.O_RDWR | os.O_CREAT
        if create:
            flags |= os.O_TRUNC
            # Stale files with this base offset (from a crash mid-roll) must not leak into the
            # new segment.
            self._start_empty_indexes()
            self.txn_index.reset()
        self._fd: int | None = os.open(self.path, flags, 0o644)
        self._shared = _SharedFile(self._fd)  # closes the descriptor once nothing holds it
        stat = os.fstat(self._fd)
        self._size = stat.st_size
        self.inode = stat.st_ino  # which file: the cleaner's swap checks it is still this one
        self._rolling_timestamp: int | None = None  # first batch's max timestamp, read lazily
        # Whether every batch in the file was validated by this process (appended after
        # validation, or re-read by ``recover``). Reads from an unverified segment check
        # each batch's CRC: recovery leaves the segments below the recovery point unread.
        self.verified = create

    def _index_paths(self) -> tuple[Path, Path]:
        return self.path.with_suffix(INDEX_SUFFIX), self.path.with_suffix(TIME_INDEX_SUFFIX)

    def _start_empty_indexes(self) -> None:
        """Both indexes empty, in memory and on disk (a new segment, or one rebuilt)."""
        index_path, time_index_path = self._index_paths()
        self._offset_index = OffsetIndex(
            index_path, self.base_offset, self._max_offset_index_entries, data=b""
        )
        self._time_index = TimeIndex(
            time_index_path, self.base_offset, self._max_time_index_entries, data=b""
        )
        self._offset_index.reset()
        self._time_index.reset()

    def _load_indexes(self) -> None:
        """Read both index files (first use). A missing one reads as empty and a malformed
        one is deleted and starts empty; either is reported by ``check_indexes``."""
        index_path, time_index_path = self._index_paths()
        index_data, time_index_data = (
            _read_index_file(index_path),
            _read_index_file(time_index_path),
        )
        if index_data is None or time_index_data is None:
            missing = index_path if index_data is None else time_index_path
            self._index_error = self._index_error or f"index file {missing} is missing"
        base, max_entries = self.base_offset, self._max_offset_index_entries
        try:
            offset_index = OffsetIndex(index_path, base, max_entries, data=index_data or b"")
        except CorruptIndexError as exc:
            self._index_error = str(exc)
            os.unlink(index_path)
            offset_index = OffsetIndex(index_path, base, max_entries, data=b"")
        max_entries = self._max_time_index_entries
        try:
            time_index = TimeIndex(time_index_path, base, max_entries, data=time_index_data or b"")
        except CorruptIndexError as exc:
            self._index_error = self._index_error or str(exc)
            os.unlink(time_index_path)
            time_index = TimeIndex(time_index_path, base, max_entries, data=b"")
        self._offset_index, self._time_index = offset_index, time_index
        # Kafka restarts this count at 0 on load; measuring from the last entry instead keeps
        # the spacing identical to what a rebuild of the index would produce.
        self._bytes_since_last_index_entry = self._size - offset_index.last_entry.position
        last = time_index.last_entry
        self._max_timestamp = last.timestamp
        self._offset_of_max_timestamp = last.offset

    @property
    def offset_index(self) -> OffsetIndex:
        """``<base>.index``, read from its file on first use."""
        if self._offset_index is None:
            self._load_indexes()
            assert self._offset_index is not None
        return self._offset_index

    @property
    def time_index(self) -> TimeIndex:
        """``<base>.timeindex``, read from its file on first use."""
        if self._time_index is None:
            self._load_indexes()
            assert self._time_index is not None
        return self._time_index

    def _ensure_indexes(self) -> None:
        if self._offset_index is None:
            self._load_indexes()

    @property
    def indexes_loaded(self) -> bool:
        """Whether the indexes have been read (or rebuilt) since the segment was opened."""
        return self._offset_index is not None

    @classmethod
    def create(
        cls, directory: Path, base_offset: int, config: LogConfig, *, time_ms: Callable[[], int]
    ) -> LogSegment:
        return cls(directory, base_offset, config, time_ms=time_ms, create=True)

    @classmethod
    def open(
        cls, directory: Path, base_offset: int, config: LogConfig, *, time_ms: Callable[[], int]
    ) -> LogSegment:
        return cls(directory, base_offset, config, time_ms=time_ms, create=False)

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self._size}, path={self.path})"

    # --- file access ----------------------------------------------------------------------

    @property
    def _file(self) -> int:
        self._check_open()
        assert self._fd is not None
        return self._fd

    def _check_open(self) -> None:
        if self._fd is None:
            raise KafkaStorageError(f"segment {self.path} is closed")

    def _pread(self, size: int, position: int) -> bytes:
        data = os.pread(self._file, size, position)
        if len(data) == size or not data:
            return data
        # A regular file only returns short at end of file; keep reading in case of a signal.
        parts = [data]
        got = len(data)
        while got < size:
            more = os.pread(self._file, size - got, position + got)
            if not more:
                break
            parts.append(more)
            got += len(more)
        return b"".join(parts)

    def open_reader(self) -> int:
        """A file descriptor of its own on this segment's ``.log`` (the log cleaner reads
        through it in another thread); the caller closes it."""
        return os.dup(self._file)

    def iter_batches(self, position: int = 0, end: int | None = None) -> Iterator[BatchLocation]:
        """Headers of the complete batches from ``position`` (a batch boundary), CRCs unchecked."""
        limit = self._size if end is None else end
        while limit - position >= HEADER_SIZE:
            chunk = self._pread(min(_SCAN_CHUNK, limit - position), position)
            consumed = 0
            for relative, header in iter_batch_headers(chunk):
                yield BatchLocation(position + relative, header)
                consumed = relative + header.batch_length + LOG_OVERHEAD
            if consumed:
                position += consumed
                continue
            # The batch at ``position`` is larger than the chunk: step over it by its header.
            if len(chunk) < HEADER_SIZE:
                return
            header = read_header(chunk)
            size = header.batch_length + LOG_OVERHEAD
            if size < _MIN_BATCH_SIZE or position + size > limit:
                return
            yield BatchLocation(position, header)
            position += size

    # --- state ----------------------------------------------------------------------------

    @property
    def size(self) -> int:
        """Bytes in the ``.log`` file."""
        return self._size

    @property
    def max_timestamp_so_far(self) -> int:
        self._ensure_indexes()
        return self._max_timestamp

    @property
    def offset_of_max_timestamp_so_far(self) -> int:
        self._ensure_indexes()
        return self._offset_of_max_timestamp

    @property
    def last_modified_ms(self) -> int:
        return os.stat(self.path).st_mtime_ns // 1_000_000

    def set_last_modified(self, ms: int) -> None:
        ns = ms * 1_000_000
        for path in (self.path, *self._index_paths()):
            if path.exists():
                os.utime(path, ns=(ns, ns))

    @property
    def largest_timestamp(self) -> int:
        """Largest record timestamp, or the file's mtime when no batch has a timestamp."""
        self._ensure_indexes()
        if self._max_timestamp >= 0:
            return self._max_timestamp
        return self.last_modified_ms

    def first_batch_timestamp(self) -> int | None:
        """Max timestamp of the first batch (what segment.ms measures from), if any."""
        if self._rolling_timestamp is None and self._size >= HEADER_SIZE:
            self._rolling_timestamp = read_header(self._pread(HEADER_SIZE, 0)).max_timestamp
        return self._rolling_timestamp

    def read_next_offset(self) -> int:
        """The offset after the last batch (base offset when empty). Scans from the last index
        entry, so it costs a few reads."""
        next_offset = self.base_offset
        if self._size == 0:
            return next_offset  # (without reading the index of an empty segment)
        for location in self.iter_batches(self.offset_index.last_entry.position):
            next_offset = location.header.next_offset
        return next_offset

    def check_indexes(self) -> str | None:
        """Why the indexes cannot be trusted (missing, malformed, pointing past the data), or
        None when they pass. Catches what a crash or a stray write can do to a flushed index."""
        if self._offset_index is None and self._size == 0:
            # An empty segment's indexes pass exactly when both files exist and are empty:
            # their sizes say so without reading them (thousands of idle partitions at load).
            for path in self._index_paths():
                try:
                    if os.stat(path).st_size:
                        break  # read and checked below
                except FileNotFoundError:
                    return f"index file {path} is missing"
            else:
                return None
        self._ensure_indexes()
        if self._index_error is not None:
            return self._index_error
        try:
            self.offset_index.sanity_check(self._size)
            if self.offset_index.entries:
                last = self.offset_index.last_entry
                header = read_header(self._pread(HEADER_SIZE, last.position))
                if header.last_offset != last.offset:
                    raise CorruptIndexError(
                        f"offset index {self.offset_index.path} maps offset {last.offset} to "
                        f"position {last.position}, where the batch ends at offset "
                        f"{header.last_offset}"
                    )
            self.time_index.sanity_check(self.read_next_offset())
        except (CorruptIndexError, CorruptRecordError) as exc:
            return str(exc)
        return None

    # --- appending ------------------------------------------------------------------------

    def append(self, data: bytes | bytearray | memoryview, batches: Sequence[BatchHeader]) -> None:
        """Write ``data`` (whole batches whose headers are ``batches``, in order) at the end.

        The caller has validated the batches and checked that their offsets fit this segment.
        No fsync: durability comes from ``flush``.
        """
        if not batches:
            return
        position = self._size
        if position == 0:
            self._rolling_timestamp = batches[0].max_timestamp
        last = batches[-1]
        if not self.offset_index.can_append_offset(last.base_offset + last.last_offset_delta):
            raise KafkaStorageError(
                f"offset {last.last_offset} does not fit segment {self.path} "
                f"(base offset {self.base_offset})"
            )
        fd = self._file
        written = os.pwrite(fd, data, position)
        if written < len(data):
            view = memoryview(data)
            while written < len(view):
                written += os.pwrite(fd, view[written:], position + written)
        # This loop runs for every produced batch: locals and tuple fields only.
        interval = self._index_interval_bytes
        since = self._bytes_since_last_index_entry
        max_timestamp = self._max_timestamp
        offset_of_max = self._offset_of_max_timestamp
        offset_index, time_index = self.offset_index, self.time_index
        for header in batches:
            last_offset = header.base_offset + header.last_offset_delta
            if header.max_timestamp > max_timestamp:
                max_timestamp = header.max_timestamp
                offset_of_max = last_offset
            if since > interval:
                # A full index only makes the next append roll; the data is already written,
                # so this append must not fail, and a sparser index is still a correct one.
                if not (offset_index.is_full or time_index.is_full):
                    offset_index.append(last_offset, position)
                    time_index.maybe_append(max_timestamp, offset_of_max)
                since = 0
            size = header.batch_length + LOG_OVERHEAD
            position += size
            since += size
        self._max_timestamp = max_timestamp
        self._offset_of_max_timestamp = offset_of_max
        self._bytes_since_last_index_entry = since
        self._size = position

    def append_aborted_txn(self, txn: AbortedTxn) -> None:
        """Record a transaction aborted by a marker in this segment (``.txnindex``)."""
        self.txn_index.append(txn)

    # --- reading --------------------------------------------------------------------------

    def read_batch(self, location: BatchLocation) -> bytes:
        """The whole batch at ``location`` (a control batch's record, say)."""
        return self._pread(location.header.size, location.position)

    def translate_offset(self, offset: int, starting_position: int = 0) -> BatchLocation | None:
        """The first batch whose last offset is >= ``offset``, or None past the end."""
        mapping = self.offset_index.lookup(offset)
        for location in self.iter_batches(max(mapping.position, starting_position)):
            if location.header.last_offset >= offset:
                return location
        return None

    def unwalkable_position(self, offset: int) -> int | None:
        """Where the batches walked from the index entry for ``offset`` stop short of the end
        of the file (a damaged length field), or None when the walk reaches the end."""
        end = self.offset_index.lookup(offset).position
        for location in self.iter_batches(end):
            end = location.position + location.header.batch_length + LOG_OVERHEAD
        return end if end < self._size else None

    def position_of_first_batch_from(self, offset: int) -> int:
        """Byte position of the first batch whose base offset is >= ``offset`` (or the size)."""
        location = self.translate_offset(offset)
        if location is None:
            return self._size
        if location.header.base_offset >= offset:
            return location.position
        return location.position + location.header.batch_length + LOG_OVERHEAD

    def read(
        self,
        start_offset: int,
        max_size: int,
        max_position: int | None = None,
        min_one_message: bool = True,
        *,
        file_records: bool = False,
    ) -> FetchDataInfo | None:
        """Whole batches from the one holding ``start_offset``, at most ``max_size`` bytes and
        ending at or before ``max_position``; None when ``start_offset`` is past the end.

        With ``min_one_message`` the first batch is returned even if larger than ``max_size``
        (never past ``max_position``). Unlike Kafka, a batch cut by the size limit is dropped
        rather than returned partial: no reader can use a partial batch. With ``file_records``
        the batches stay in the file (``FileRecords``) unless no descriptor is left for them.
        """
        if max_size < 0:
            raise ValueError(f"invalid max size {max_size} for a read from {self.path}")
        location = self.translate_offset(start_offset)
        if location is None:
            return None
        start = location.position
        first_size = location.header.batch_length + LOG_OVERHEAD
        adjusted = max(max_size, first_size) if min_one_message else max_size
        limit = self._size if max_position is None else min(max_position, self._size)
        fetch_size = min(limit - start, adjusted)
        incomplete = adjusted < first_size
        if fetch_size <= 0:
            return FetchDataInfo(start_offset, b"", incomplete)
        if file_records:
            return FetchDataInfo(start_offset, self._slice(start, fetch_size, limit), incomplete)
        data = self._pread(fetch_size, start)
        if start + fetch_size < limit:
            # Cut by the size limit, so the slice may end inside a batch.
            whole = 0
            for relative, header in iter_batch_headers(data):
                whole = relative + header.batch_length + LOG_OVERHEAD
            data = data[:whole]
        return FetchDataInfo(start_offset, data, incomplete)

    def _slice(self, start: int, fetch_size: int, limit: int) -> FileRecords | bytes:
        """The whole batches of ``[start, start + fetch_size)`` left in the file (b"" when
        there are none)."""
        end = start + fetch_size
        if end < limit:
            # Cut by the size limit: end after the last whole batch, found by its headers
            # walked from the last index entry before the cut (every batch before that entry
            # is whole), so that about index.interval.bytes are read, not the whole slice.
            whole = max(start, self.offset_index.floor_position(end))
            for location in self.iter_batches(whole, end):
                whole = location.position + location.header.batch_length + LOG_OVERHEAD
            end = whole
        if end == start:
            return b""
        self._check_open()
        return FileRecords(self._shared.hold(), start, end - start)

    def find_offset_by_timestamp(
        self, timestamp: int, starting_offset: int
    ) -> TimestampAndOffset | None:
        """The first record at or after ``starting_offset`` with a timestamp >= ``timestamp``."""
        entry = self.time_index.lookup(timestamp)
        position = self.offset_index.lookup(max(entry.offset, starting_offset)).position
        for location in self.iter_batches(position):
            header = location.header
            if header.max_timestamp < timestamp or header.last_offset < starting_offset:
                continue
            data = self._pread(header.batch_length + LOG_OVERHEAD, location.position)
            _, records = decode_batch(data, verify_crc=False)
            for record in records:
                if record.timestamp >= timestamp and record.offset >= starting_offset:
                    epoch = header.partition_leader_epoch
                    return TimestampAndOffset(
                        record.timestamp, record.offset, epoch if epoch >= 0 else None
                    )
        return None

    # --- rolling --------------------------------------------------------------------------

    def time_waited_for_roll(self, now_ms: int, message_timestamp: int) -> int:
        """How long this segment has been open, for segment.ms: by record time when the first
        batch has a timestamp, else by the wall clock since the segment was created."""
        first = self.first_batch_timestamp()
        if first is not None and first >= 0:
            return message_timestamp - first
        return now_ms - self.created_ms

    def should_roll(
        self,
        *,
        segment_bytes: int,
        segment_ms: int,
        messages_size: int,
        max_timestamp_in_messages: int,
        max_offset_in_messages: int,
        now_ms: int,
    ) -> bool:
        """Whether an append of ``messages_size`` bytes must go to a new segment."""
        reached_roll_ms = self.time_waited_for_roll(now_ms, max_timestamp_in_messages) > segment_ms
        return (
            self._size > segment_bytes - messages_size
            or (self._size > 0 and reached_roll_ms)
            or self.offset_index.is_full
            or self.time_index.is_full
            or not self.offset_index.can_append_offset(max_offset_in_messages)
        )

    def on_become_inactive(self) -> None:
        """Called when a newer segment takes over appends: record the final max timestamp in
        the time index (retention reads it) and write the indexes out."""
        self._ensure_indexes()
        if self._max_timestamp >= 0:
            self.time_index.maybe_append(
                self._max_timestamp, self._offset_of_max_timestamp, skip_full_check=True
            )
        self.offset_index.flush(fsync=False)
        self.time_index.flush(fsync=False)

    # --- recovery and truncation ----------------------------------------------------------

    def recover(
        self,
        leader_epoch_cache: EpochAssigner | None = None,
        *,
        allow_gaps: bool = False,
        truncate: bool = True,
    ) -> RecoveryResult:
        """Re-validate every batch from the start and rebuild both indexes from them.

        With ``truncate`` off (a segment below the recovery point, whose indexes alone need
        rebuilding) nothing is removed and no CRC is checked: the indexes cover the batches up
        to the first structural problem, the data stays whole, the segment stays unverified
        (reads check CRCs) and the result's ``bytes_truncated`` is 0.

        Validation (CRC, magic, lengths, and offsets: following on densely from the base
        offset, or with ``allow_gaps`` only growing, for a segment the log cleaner may have
        thinned) stops at the first bad or incomplete batch; the file is truncated there. The
        CRC does not cover a batch's base offset: in a dense segment a damaged one shows as a
        gap or a step back, so gaps are refused where cleaning cannot have made them. Feeds
        each new leader epoch seen to ``leader_epoch_cache``, as Kafka does.
        """
        self._start_empty_indexes()  # the old entries are not needed: not read if not yet
        self._max_timestamp = NO_TIMESTAMP
        self._offset_of_max_timestamp = self.base_offset
        file_size = os.fstat(self._file).st_size
        valid = 0
        last_entry_position = 0
        expected_offset = self.base_offset
        interval = self._index_interval_bytes
        buffer = b""
        buffer_start = 0
        error: str | None = None
        transactional = False
        try:
            while valid < file_size:
                relative = valid - buffer_start
                if len(buffer) - relative < HEADER_SIZE:
                    buffer = self._pread(_RECOVERY_CHUNK, valid)
                    buffer_start, relative = valid, 0
                header = read_header(buffer, relative)
                size = header.batch_length + LOG_OVERHEAD
                if size < _MIN_BATCH_SIZE or valid + size > file_size:
                    raise CorruptRecordError(
                        f"batch at position {valid} claims {size} bytes; "
                        f"{file_size - valid} remain in the file"
                    )
                if relative + size > len(buffer):
                    buffer = self._pread(max(_RECOVERY_CHUNK, size), valid)
                    buffer_start, relative = valid, 0
                header = validate_batch(buffer, relative) if truncate else header
                if header.base_offset < expected_offset or (
                    not allow_gaps and header.base_offset != expected_offset
                ):
                    expected = f"{expected_offset} or above" if allow_gaps else expected_offset
                    raise CorruptRecordError(
                        f"batch at position {valid} has base offset {header.base_offset}, "
                        f"expected {expected}"
                    )
                if not self.offset_index.can_append_offset(header.last_offset):
                    raise CorruptRecordError(
                        f"batch at position {valid} ends at offset {header.last_offset}, "
                        f"beyond what segment base offset {self.base_offset} can index"
                    )
                if header.max_timestamp > self._max_timestamp:
                    self._max_timestamp = header.max_timestamp
                    self._offset_of_max_timestamp = header.last_offset
                if valid - last_entry_position > interval:
                    self.offset_index.append(header.last_offset, valid)
                    self.time_index.maybe_append(self._max_timestamp, self._offset_of_max_timestamp)
                    last_entry_position = valid
                if leader_epoch_cache is not None and header.partition_leader_epoch >= 0:
                    latest = leader_epoch_cache.latest_epoch
                    if latest is None or header.partition_leader_epoch > latest:
                        leader_epoch_cache.assign(header.partition_leader_epoch, header.base_offset)
                transactional = transactional or header.is_transactional
                valid += size
                expected_offset = header.next_offset
        except (CorruptRecordError, InvalidRecordError) as exc:
            error = exc.message
        truncated = file_size - valid if truncate else 0
        if truncated:
            os.ftruncate(self._file, valid)
        if truncate:
            # Aborts whose marker is gone with the cut data go too; the partition rebuilds
            # the rest of a recovered segment's entries from the batches (Log.load).
            self.txn_index.truncate_to(expected_offset)
        self._size = valid if truncate else file_size
        self.verified = truncate
        self._rolling_timestamp = None
        self._bytes_since_last_index_entry = self._size - last_entry_position
        if self._max_timestamp >= 0:
            self.time_index.maybe_append(
                self._max_timestamp, self._offset_of_max_timestamp, skip_full_check=True
            )
        self.offset_index.flush(fsync=False)
        self.time_index.flush(fsync=False)
        return RecoveryResult(truncated, expected_offset, error, transactional)

    def truncate_to(self, offset: int) -> int:
        """Remove the batch holding ``offset`` and everything after; returns bytes removed."""
        location = self.translate_offset(offset)
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        if location is not None:
            # The batch holding ``offset`` goes whole: so do aborts marked from its start.
            offset = min(offset, location.header.base_offset)
        self.txn_index.truncate_to(offset)
        if location is None:
            return 0
        truncated = self._size - location.position
        os.ftruncate(self._file, location.position)
        self._size = location.position
        if self._size == 0:
            self.created_ms = self._time_ms()
            self._rolling_timestamp = None
        self._bytes_since_last_index_entry = self._size - self.offset_index.last_entry.position
        self._reload_max_timestamp()
        return truncated

    def _reload_max_timestamp(self) -> None:
        # The time index holds the max up to its last entry; batches after it may hold more.
        last = self.time_index.last_entry
        self._max_timestamp, self._offset_of_max_timestamp = last.timestamp, last.offset
        start = self.offset_index.lookup(last.offset).position
        for location in self.iter_batches(start):
            if location.header.max_timestamp > self._max_timestamp:
                self._max_timestamp = location.header.max_timestamp
                self._offset_of_max_timestamp = location.header.last_offset

    # --- durability and lifecycle ---------------------------------------------------------

    def flush(self) -> None:
        """fsync the ``.log`` and write and fsync the indexes."""
        os.fsync(self._file)
        self.offset_index.flush(fsync=True)
        self.time_index.flush(fsync=True)
        self.txn_index.flush(fsync=True)

    def open_for_sync(self) -> list[int]:
        """Write the indexes out (no fsync) and return file descriptors of their own on the
        ``.log`` and both indexes, for a background fsync (``Log.prepare_flush``); the caller
        closes them. They stay valid if the segment is deleted meanwhile."""
        self.offset_index.flush(fsync=False)
        self.time_index.flush(fsync=False)
        fds = [os.dup(self._file)]
        try:
            for path in (self.offset_index.path, self.time_index.path):
                fds.append(os.open(path, os.O_RDONLY))
            txn_fd = self.txn_index.open_for_sync()
            if txn_fd is not None:
                fds.append(txn_fd)
        except BaseException:
            for fd in fds:
                os.close(fd)
            raise
        return fds

    def close(self) -> None:
        if self._fd is None:
            return
        if self._offset_index is not None and self._time_index is not None:
            # (Never read: the files hold all there is, the max timestamp included.)
            if self._max_timestamp >= 0:
                self._time_index.maybe_append(
                    self._max_timestamp, self._offset_of_max_timestamp, skip_full_check=True
                )
            self._offset_index.flush(fsync=False)
            self._time_index.flush(fsync=False)
        self.txn_index.close()
        self._fd = None
        self._shared.release()

    def delete(self) -> None:
        """Close and remove the files (the ``.log`` first, so a crash part-way leaves only
        orphaned indexes, which loading removes)."""
        if self._fd is not None:
            self._fd = None
            self._shared.release()
        self.txn_index.close()
        for path in (self.path, *self._index_paths(), self.txn_index.path):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)

    def rename_to_deleted(self, suffix: str) -> list[Path]:
        """Close and rename the files to ``<name><suffix>`` (Kafka's ``.deleted``), the
        ``.log`` first as in ``delete``; the renamed paths, for whoever removes them later.
        A crash before that leaves files that loading removes."""
        if self._fd is not None:
            # Released, not closed: an answer in flight may still hold the descriptor.
            self._fd = None
            self._shared.release()
        self.txn_index.close()
        renamed = []
        for path in (self.path, *self._index_paths(), self.txn_index.path):
            target = path.with_name(path.name + suffix)
            with contextlib.suppress(FileNotFoundError):
                os.rename(path, target)
                renamed.append(target)
        return renamed
