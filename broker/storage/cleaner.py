"""Log compaction, as Kafka's LogCleaner: keep the latest record of every key.

A log whose ``cleanup.policy`` includes ``compact`` has a *clean* part (already compacted, below
its first dirty offset) and a *dirty* part (appended since). One cleaning of one log:

1. choose (on the log's owner, the broker's event loop): among the compacted logs, the one with
   the largest dirty ratio ``dirty bytes / (clean + dirty bytes)`` at or above
   ``min.cleanable.dirty.ratio``, or any whose oldest dirty record is older than
   ``max.compaction.lag.ms``. The dirty part ends at the first *uncleanable* offset: the active
   segment, the high watermark, the last stable offset (the first offset of a transaction
   still open or whose marker is not replicated yet: the caller passes it, as only the
   partition knows its producers; Kafka's cleaner stops there too), or the first segment with a
   record newer than ``min.compaction.lag.ms``, whichever comes first. The choice is a
   ``CleanPlan``: a snapshot of the segments to read (each with its inode and a file
   descriptor of the cleaning's own), the log's generation, and the aborted transactions that
   overlap the segments (from their ``.txnindex`` files), so the worker never touches the
   live ``Log``.
2. build the offset map (worker thread): key -> offset of its latest record in the dirty part,
   at most ``log.cleaner.dedupe.buffer.size / log.cleaner.threads`` bytes of it at 24 bytes an
   entry (Kafka's sizing: a 16-byte key hash and an 8-byte offset). When the map fills, the
   dirty part this cleaning handles ends after the last record mapped. Records of aborted
   transactions are not mapped (they must not hide an older committed record of their key).
3. write ``.cleaned`` segments (worker thread): the segments from the log start up to the end of
   the mapped part, in groups that fit one segment (``segment.bytes``, the index limits), each
   group rewritten into ``<base>.log.cleaned`` / ``.index.cleaned`` / ``.timeindex.cleaned`` /
   ``.txnindex.cleaned`` (base = the group's first base offset; the last always, maybe
   empty, so that a swap never pairs the new ``.log`` with the old entries), fsynced. A record
   survives when it has a key, no later record of its key is in the map, and it is not a
   tombstone past its delete horizon.
4. swap (on the owner, quick: renames and unlinks): refused whole when the log's generation
   moved (it was truncated: the map may hold records that are gone, which Kafka avoids by
   aborting the cleaning before truncating) or a segment is no longer the file read; first the
   log gets an entry in ``cleaner-offset-checkpoint`` if it had none (the durable "this log
   may have gaps", see log.py); then ``Log.replace_with_cleaned`` renames the
   ``.cleaned`` files to ``.swap``, deletes the replaced segments, renames the ``.swap`` files to
   their real names and opens the new segment. A crash before the ``.swap`` renames leaves
   ``.cleaned`` files that loading deletes; a crash after them leaves a ``.swap`` that loading
   completes (see log.py). Then the log's entry in ``cleaner-offset-checkpoint`` (one file per
   log dir, the ``<topic> <partition> <offset>`` format of checkpoints.py, shared through
   ``CleanerCheckpoint``) moves to the end of the cleaned part, the next cleaning's first dirty
   offset. Truncation lowers the entry and deleting the log removes it (log.py,
   log_manager.py).

What survives, batch by batch (Kafka's rules):

- each kept record keeps its offset; a batch keeps its base offset and lastOffsetDelta, so the
  idempotent producer's last sequence is unchanged (offsets become sparse);
- a batch that loses records is rebuilt and recompressed with its own codec; a batch that loses
  none is copied byte for byte;
- a batch that has (or is left with) no record is dropped, except the last batch of an active
  producer (kept as an empty batch, so producer state rebuilt from the log still knows its
  sequence) and the last batch of each cleaned segment (kept as an empty batch so that the
  segment still ends where it ended; Kafka lets the gap appear instead). An empty batch left by
  an earlier cleaning is held to the same rule, so empty batches do not pile up;
- tombstones (null value) of a cleaned batch get a delete horizon of now +
  ``delete.retention.ms`` (KIP-534: stored in the batch), and go at the first cleaning after it;
- records without a key go (the broker refuses them for compacted topics anyway);
- transactions (Kafka's CleanedTransactionMetadata): the batches of a transaction aborted
  (listed in a ``.txnindex``) lose all their records, whatever their keys. A marker stays while
  a batch of its transaction was still read by this cleaning (an ABORT marker kept so keeps its
  ``.txnindex`` entry in the cleaned segment, for read_committed readers of what is left);
  once a cleaning finds none, the marker gets a delete horizon of now + ``delete.retention.ms``
  (as a tombstone does) and goes at the first cleaning after it, so that a reader who saw the
  transaction's records also sees its end. Control batches of other types stay.

Leader epochs are untouched: the leader-epoch-checkpoint maps epochs to start offsets, which
stay valid when records between them go.

Threads: ``LogCleaner.grab_filthiest_log`` and ``LogCleaner.swap`` run on the owner of the logs;
``LogCleaner.clean`` runs in a worker thread and reads segment files through the file
descriptors the plan opened on the owner (a segment deleted or recreated meanwhile stays the
file planned; the swap then finds the log changed and discards the cleaning), reading one batch
ahead to know a group's last batch rather than holding a segment in memory, and stops within a
batch once ``LogCleaner.shutdown`` is called (the broker's shutdown). ``LogCleaner`` keeps its
in-progress set under a lock, and ``CleanerCheckpoint`` is thread-safe, so several workers
(``log.cleaner.threads``) may share them.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, NamedTuple

import structlog

from minikafka.broker.storage.checkpoints import CLEANER_OFFSET_CHECKPOINT, fsync_dir
from minikafka.broker.storage.config import LONG_MAX, LogConfig
from minikafka.broker.storage.index import OffsetIndex, TimeIndex
from minikafka.broker.storage.log import CLEANED_SUFFIX, Log
from minikafka.broker.storage.log_dir_failure import LogDirFailureChannel
from minikafka.broker.storage.txn_index import TXN_INDEX_SUFFIX, AbortedTxn, TransactionIndex
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode, KafkaError, KafkaStorageError
from minikafka.proto.log_files import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, log_file_name
from minikafka.proto.records import (
    HEADER_SIZE,
    BatchHeader,
    ControlType,
    Record,
    control_type_of,
    decode_batch,
    iter_batch_headers,
    read_header,
    rebuild_batch,
)

__all__ = [
    "CLEANER_OFFSET_CHECKPOINT",
    "CleanPlan",
    "CleanResult",
    "CleanerConfig",
    "CleaningAbortedError",
    "LogCleaner",
    "OffsetMap",
    "SegmentRef",
    "clean_log",
    "close_plan",
    "open_plan",
    "plan_cleaning",
    "run_cleaner_thread",
]

_BYTES_PER_MAP_ENTRY = 24  # Kafka's SkimpyOffsetMap: 16-byte MD5 of the key + 8-byte offset
_MAP_LOAD_FACTOR = 0.9
_INT32_MAX = 2**31 - 1

_log = structlog.get_logger(__name__)

Fault = Callable[[str], None]


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def _no_fault(step: str) -> None:
    return None


@dataclass(frozen=True)
class CleanerConfig:
    """The broker's ``log.cleaner.*`` keys (Kafka's defaults). Immutable."""

    enable: bool = True
    threads: int = 1
    dedupe_buffer_size: int = 128 * 1024 * 1024
    io_buffer_size: int = 512 * 1024
    backoff_ms: int = 15_000

    @property
    def map_capacity(self) -> int:
        """Keys one cleaning's offset map holds: each thread gets its share of the buffer."""
        per_thread = self.dedupe_buffer_size // max(self.threads, 1)
        return max(int(per_thread // _BYTES_PER_MAP_ENTRY * _MAP_LOAD_FACTOR), 1)


class CleaningAbortedError(KafkaError):
    """The log changed under a cleaning (a segment went, the log was truncated or closed), or
    the cleaner is shutting down; the cleaning is dropped (and tried again later).
    KAFKA_STORAGE_ERROR should it reach a client (it does not leave the broker)."""

    code: ClassVar[ErrorCode] = ErrorCode.KAFKA_STORAGE_ERROR


class OffsetMap:
    """Key -> offset of its latest record, up to ``capacity`` keys. Not thread-safe: one
    cleaning owns it. Keys are stored as they are (Kafka stores a 16-byte hash); the capacity
    is what bounds the memory."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._offsets: dict[bytes, int] = {}
        self.latest_offset = -1

    def put(self, key: bytes, offset: int) -> bool:
        """Record ``offset`` for ``key``; False (nothing recorded) when full and ``key`` new."""
        offsets = self._offsets
        if key not in offsets and len(offsets) >= self.capacity:
            return False
        offsets[key] = offset
        self.latest_offset = offset
        return True

    def get(self, key: bytes) -> int:
        return self._offsets.get(key, -1)

    def __len__(self) -> int:
        return len(self._offsets)


class SegmentRef(NamedTuple):
    """What a cleaning needs of one segment, taken on the log's owner."""

    base_offset: int
    end_offset: int  # the next segment's base offset
    path: Path
    size: int
    last_modified_ms: int
    inode: int  # with the log's generation, which file this is (checked by the swap)
    fd: int = -1  # the cleaning's own descriptor, opened on the owner; -1: open ``path``


class CleanPlan(NamedTuple):
    """One cleaning of one log, decided on the log's owner (see the module docstring)."""

    topic_partition: TopicPartition
    directory: Path
    config: LogConfig
    segments: tuple[SegmentRef, ...]  # from the first segment to the first uncleanable offset
    first_dirty_offset: int
    first_uncleanable_offset: int
    now_ms: int
    producer_last_offsets: frozenset[int]  # last offset of each active producer's last batch
    dirty_ratio: float
    generation: int  # Log.generation when planned
    aborted_txns: tuple[AbortedTxn, ...] = ()  # overlapping the segments, from .txnindex files


class CleanedGroup(NamedTuple):
    """One ``.cleaned`` segment and the segments (base offset, size, inode) it replaces."""

    base_offset: int
    replaced: tuple[tuple[int, int, int], ...]
    size: int


class CleanResult(NamedTuple):
    plan: CleanPlan
    groups: tuple[CleanedGroup, ...]
    end_offset: int  # the next cleaning's first dirty offset
    bytes_read: int
    bytes_written: int
    records_read: int
    records_kept: int
    map_entries: int
    duration_s: float


class _Stats:
    def __init__(self) -> None:
        self.bytes_read = 0
        self.bytes_written = 0
        self.records_read = 0
        self.records_kept = 0


# --- choosing (on the owner) --------------------------------------------------------------


def plan_cleaning(
    log: Log,
    *,
    first_dirty_offset: int,
    now_ms: int,
    high_watermark: int | None = None,
    producer_last_offsets: frozenset[int] = frozenset(),
    last_stable_offset: int | None = None,
) -> tuple[CleanPlan | None, bool]:
    """What cleaning ``log`` would do now, and whether it must be cleaned whatever its dirty
    ratio (``max.compaction.lag.ms`` passed); (None, False) when nothing is cleanable.
    ``last_stable_offset`` (the partition's) keeps open transactions out of the cleaning."""
    config = log.config
    segments = log.segments
    start = log.log_start_offset
    if first_dirty_offset < start or first_dirty_offset > log.log_end_offset:
        first_dirty_offset = start  # the log was truncated or its start moved: clean it all
    uncleanable = segments[-1].base_offset  # the active segment is never cleaned
    if high_watermark is not None:
        uncleanable = min(uncleanable, high_watermark)
    if last_stable_offset is not None:
        uncleanable = min(uncleanable, last_stable_offset)
    must_clean = False
    dirty_first_timestamp: int | None = None
    refs: list[SegmentRef] = []
    for index, segment in enumerate(segments[:-1]):
        end = segments[index + 1].base_offset
        if end > uncleanable:
            break
        if end > first_dirty_offset:
            lag = config.min_compaction_lag_ms
            if lag > 0 and now_ms - segment.largest_timestamp < lag:
                break
            first = segment.first_batch_timestamp()
            if dirty_first_timestamp is None and first is not None and first >= 0:
                dirty_first_timestamp = first
        refs.append(
            SegmentRef(
                segment.base_offset,
                end,
                segment.path,
                segment.size,
                segment.last_modified_ms,
                segment.inode,
            )
        )
    if not refs:
        return None, False
    end_offset = refs[-1].end_offset
    clean_bytes = sum(r.size for r in refs if r.end_offset <= first_dirty_offset)
    dirty_bytes = sum(r.size for r in refs if r.end_offset > first_dirty_offset)
    if dirty_bytes == 0 or end_offset <= first_dirty_offset:
        return None, False
    if config.max_compaction_lag_ms < LONG_MAX and dirty_first_timestamp is not None:
        must_clean = now_ms - dirty_first_timestamp > config.max_compaction_lag_ms
    ratio = dirty_bytes / (clean_bytes + dirty_bytes)
    plan = CleanPlan(
        TopicPartition(log.topic, log.partition),
        log.dir,
        config,
        tuple(refs),
        first_dirty_offset,
        end_offset,
        now_ms,
        producer_last_offsets,
        ratio,
        log.generation,
        tuple(log.collect_aborted_transactions(refs[0].base_offset, end_offset)),
    )
    return plan, must_clean


def open_plan(log: Log, plan: CleanPlan) -> CleanPlan:
    """On the owner: ``plan`` with a file descriptor of its own on each segment, so that the
    worker reads the files planned whatever happens to the log meanwhile (``run_cleaning``
    closes them)."""
    segments = {segment.base_offset: segment for segment in log.segments}
    refs: list[SegmentRef] = []
    try:
        for ref in plan.segments:
            refs.append(ref._replace(fd=segments[ref.base_offset].open_reader()))
    except BaseException:
        close_plan(plan._replace(segments=tuple(refs)))
        raise
    return plan._replace(segments=tuple(refs))


def close_plan(plan: CleanPlan) -> None:
    for ref in plan.segments:
        if ref.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(ref.fd)


# --- reading (worker thread) ------------------------------------------------------------------


_YIELD_EVERY_S = 0.001
_last_yield = 0.0


def _share_the_interpreter() -> None:
    """Hand the GIL to the event loop's thread about every millisecond of cleaning. Without
    it, each loop step that releases the GIL (a write, a poll) waits up to the interpreter's
    switch interval (5 ms) behind this CPU-bound thread to get it back."""
    global _last_yield
    now = time.perf_counter()
    if now - _last_yield >= _YIELD_EVERY_S:
        time.sleep(0)
        _last_yield = time.perf_counter()


def _read_batches(
    ref: SegmentRef, buffer_size: int, stats: _Stats, stop: threading.Event | None
) -> Iterator[bytes]:
    """The whole batches in the first ``ref.size`` bytes of the segment, each as its own
    bytes, read through ``ref.fd`` (or the file at ``ref.path`` when the plan was not opened).
    CleaningAbortedError once ``stop`` is set (checked at each batch)."""
    path, size = ref.path, ref.size
    if ref.fd >= 0:
        fd = ref.fd
    else:
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            raise CleaningAbortedError(f"segment {path} was deleted during cleaning") from None
        if os.fstat(fd).st_ino != ref.inode:
            os.close(fd)
            raise CleaningAbortedError(f"segment {path} was replaced during cleaning")
    try:
        position = 0
        while size - position >= HEADER_SIZE:
            chunk = os.pread(fd, min(buffer_size, size - position), position)
            consumed = 0
            for relative, header in iter_batch_headers(chunk):
                if stop is not None and stop.is_set():
                    raise CleaningAbortedError("the log cleaner is shutting down")
                end = relative + header.size
                yield chunk[relative:end]
                consumed = end
                _share_the_interpreter()
            if consumed == 0:  # one batch larger than the buffer
                header = read_header(os.pread(fd, HEADER_SIZE, position))
                if position + header.size > size:
                    raise CleaningAbortedError(f"segment {path} ends inside a batch")
                yield os.pread(fd, header.size, position)
                consumed = header.size
            position += consumed
            stats.bytes_read += consumed
    finally:
        if ref.fd < 0:
            os.close(fd)


class _CleanedTxns:
    """Kafka's CleanedTransactionMetadata: which transactions the batches read so far belong
    to, fed in offset order. An aborted transaction (from ``.txnindex``) counts from its first
    offset until its producer's ABORT marker; a transactional batch of a producer with no
    aborted transaction open belongs to one that commits (or is still open: never read here,
    the cleaning stops at the last stable offset)."""

    def __init__(self, aborted: Iterable[AbortedTxn]) -> None:
        self._pending = deque(sorted(aborted, key=lambda txn: txn.first_offset))
        # producer id -> (its aborted transaction, whether a batch of it was read)
        self._aborted: dict[int, tuple[AbortedTxn, bool]] = {}
        self._committed: set[int] = set()  # producers with a batch read since their marker

    def _open_aborted_up_to(self, offset: int) -> None:
        pending = self._pending
        while pending and pending[0].first_offset <= offset:
            txn = pending.popleft()
            self._aborted.setdefault(txn.producer_id, (txn, False))

    def on_batch(self, header: BatchHeader) -> bool:
        """A data batch read: True when its transaction aborted (its records all go)."""
        self._open_aborted_up_to(header.last_offset)
        if not header.is_transactional:
            return False
        aborted = self._aborted.get(header.producer_id)
        if aborted is not None:
            self._aborted[header.producer_id] = (aborted[0], True)
            return True
        self._committed.add(header.producer_id)
        return False

    def on_control_batch(
        self, header: BatchHeader, records: Sequence[Record]
    ) -> tuple[bool, AbortedTxn | None]:
        """A control batch read: whether it may go (once past its delete horizon), and the
        aborted transaction to keep in the cleaned ``.txnindex`` when its marker stays."""
        self._open_aborted_up_to(header.last_offset)
        if not records:
            return True, None  # emptied by an earlier cleaning
        control_type = control_type_of(records[0].key)
        if control_type == ControlType.ABORT:
            aborted = self._aborted.pop(header.producer_id, None)
            if aborted is not None and aborted[1]:
                return False, aborted[0]  # its batches go now: the marker stays for now
            return True, None
        if control_type == ControlType.COMMIT:
            if header.producer_id in self._committed:
                self._committed.discard(header.producer_id)
                return False, None
            return True, None
        return False, None


def build_offset_map(
    plan: CleanPlan,
    offset_map: OffsetMap,
    buffer_size: int,
    stats: _Stats,
    fault: Fault,
    stop: threading.Event | None = None,
) -> int:
    """Map the dirty part's keys to their latest offsets; returns the offset after the last
    record mapped (the end of what this cleaning cleans)."""
    end = plan.first_dirty_offset
    txns = _CleanedTxns(plan.aborted_txns)
    for ref in plan.segments:
        if ref.end_offset <= plan.first_dirty_offset:
            continue
        for data in _read_batches(ref, buffer_size, stats, stop):
            header, records = decode_batch(data, verify_crc=False)
            if header.is_control:
                txns.on_control_batch(header, records)
                continue
            if txns.on_batch(header) or header.next_offset <= plan.first_dirty_offset:
                continue  # an aborted transaction's records hide no committed ones
            for record in records:
                if record.offset < plan.first_dirty_offset or record.key is None:
                    continue
                if not offset_map.put(record.key, record.offset):
                    fault("build_map")
                    return end
                end = record.offset + 1
            end = max(end, header.next_offset)
        end = ref.end_offset
    fault("build_map")
    return end


# --- writing (worker thread) ------------------------------------------------------------------


def _group_segments(plan: CleanPlan, end_offset: int) -> list[list[SegmentRef]]:
    """Kafka's groupSegmentsBySize: consecutive segments whose total fits one segment."""
    config = plan.config
    max_index_bytes = config.segment_index_bytes
    groups: list[list[SegmentRef]] = []
    for ref in plan.segments:
        if ref.base_offset >= end_offset:
            break
        if groups:
            group = groups[-1]
            size = sum(r.size for r in group) + ref.size
            # Index size is bounded by the log size over the index interval, as Kafka bounds it.
            index_bytes = (size // max(config.index_interval_bytes, 1) + 2) * 12
            if (
                size <= config.segment_bytes
                and index_bytes <= max_index_bytes
                and ref.end_offset - 1 - group[0].base_offset <= _INT32_MAX
            ):
                group.append(ref)
                continue
        groups.append([ref])
    return groups


class _CleanedWriter:
    """Writes one ``.cleaned`` segment: the ``.log`` data and both indexes, built with the rule
    recovery uses (segment.py), so they equal what a rebuild would make."""

    def __init__(self, plan: CleanPlan, base_offset: int, buffer_size: int) -> None:
        self.base_offset = base_offset
        name = log_file_name(base_offset)
        directory = plan.directory
        self.paths = [
            directory / (name + suffix + CLEANED_SUFFIX)
            for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
        ]
        for path in self.paths:  # leftovers of an earlier attempt
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        config = plan.config
        self._interval = config.index_interval_bytes
        self._buffer_size = buffer_size
        self._fd = os.open(self.paths[0], os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        self._index = OffsetIndex(self.paths[1], base_offset, config.max_offset_index_entries)
        self._time_index = TimeIndex(self.paths[2], base_offset, config.max_time_index_entries)
        self._txn_index = TransactionIndex(self.paths[3], base_offset)
        self._txn_index.replace_entries(())
        open(self.paths[3], "wb").close()  # always there, maybe empty (see the swap)
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self.size = 0
        self._last_entry_position = 0
        self._max_timestamp = -1
        self._offset_of_max_timestamp = base_offset

    def append(self, data: bytes, header: BatchHeader) -> None:
        if header.max_timestamp > self._max_timestamp:
            self._max_timestamp = header.max_timestamp
            self._offset_of_max_timestamp = header.last_offset
        if self.size - self._last_entry_position > self._interval:
            self._index.append(header.last_offset, self.size)
            self._time_index.maybe_append(self._max_timestamp, self._offset_of_max_timestamp)
            self._last_entry_position = self.size
        self._pending.append(data)
        self._pending_bytes += len(data)
        self.size += len(data)
        if self._pending_bytes >= self._buffer_size:
            self._write_pending()

    def append_aborted_txn(self, txn: AbortedTxn) -> None:
        self._txn_index.append(txn)

    def _write_pending(self) -> None:
        data = b"".join(self._pending)
        written = 0
        view = memoryview(data)
        while written < len(data):
            written += os.write(self._fd, view[written:])
        self._pending = []
        self._pending_bytes = 0

    def finish(self, last_modified_ms: int) -> None:
        """Write out, fsync, close; the files get the replaced segments' modification time."""
        self._write_pending()
        if self._max_timestamp >= 0:
            self._time_index.maybe_append(
                self._max_timestamp, self._offset_of_max_timestamp, skip_full_check=True
            )
        os.fsync(self._fd)
        os.close(self._fd)
        self._index.flush(fsync=True)
        self._time_index.flush(fsync=True)
        fd = os.open(self.paths[3], os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        self._txn_index.close()
        ns = last_modified_ms * 1_000_000
        for path in self.paths:
            os.utime(path, ns=(ns, ns))

    def discard(self) -> None:
        self._txn_index.close()
        with contextlib.suppress(OSError):
            os.close(self._fd)
        for path in self.paths:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)


def _filter_control_batch(
    data: bytes,
    header: BatchHeader,
    records: Sequence[Record],
    plan: CleanPlan,
    keep_if_empty: bool,
    txns: _CleanedTxns,
    writer: _CleanedWriter,
) -> bytes | None:
    may_go, kept_abort = txns.on_control_batch(header, records)
    if kept_abort is not None:
        writer.append_aborted_txn(kept_abort)
    if not records:
        return data if keep_if_empty else None
    if not may_go:
        return data
    horizon = header.delete_horizon_ms
    if horizon is None:
        # Its transaction has nothing left: it goes delete.retention.ms from now (KIP-534).
        return rebuild_batch(
            header, records, delete_horizon_ms=plan.now_ms + plan.config.delete_retention_ms
        )
    if plan.now_ms < horizon:
        return data
    return rebuild_batch(header, []) if keep_if_empty else None


def _filter_batch(
    data: bytes,
    offset_map: OffsetMap,
    plan: CleanPlan,
    end_offset: int,
    is_last_of_group: bool,
    stats: _Stats,
    txns: _CleanedTxns,
    writer: _CleanedWriter,
) -> bytes | None:
    """What becomes of one batch: its bytes, rebuilt bytes, or None (dropped)."""
    header, records = decode_batch(data, verify_crc=False)
    stats.records_read += len(records)
    keep_if_empty = is_last_of_group or (
        header.producer_id >= 0 and header.last_offset in plan.producer_last_offsets
    )
    if header.is_control:
        return _filter_control_batch(data, header, records, plan, keep_if_empty, txns, writer)
    if txns.on_batch(header) and records:  # an aborted transaction's: no record stays
        return rebuild_batch(header, []) if keep_if_empty else None
    if not records:  # emptied by an earlier cleaning: kept only while it still has a role
        return data if keep_if_empty else None
    now = plan.now_ms
    horizon = header.delete_horizon_ms
    tombstones_expire = horizon is not None and now >= horizon
    kept: list[Record] = []
    for record in records:
        if record.key is None:
            continue
        if record.offset < end_offset and record.offset < offset_map.get(record.key):
            continue  # a later record of the key is in the dirty part
        if record.value is None and tombstones_expire:
            continue
        kept.append(record)
    stats.records_kept += len(kept)
    # A tombstone's horizon starts once the map covered it, so that every older record of its
    # key is gone by then (a map that filled up before it leaves it for the next cleaning).
    tombstones = [record.offset for record in kept if record.value is None]
    needs_horizon = horizon is None and bool(tombstones) and max(tombstones) < end_offset
    if len(kept) == len(records) and not needs_horizon:
        return data
    new_horizon = now + plan.config.delete_retention_ms if needs_horizon else None
    if kept:
        return rebuild_batch(header, kept, delete_horizon_ms=new_horizon)
    if keep_if_empty:
        return rebuild_batch(header, [])
    return None


def clean_segments(
    plan: CleanPlan,
    offset_map: OffsetMap,
    end_offset: int,
    buffer_size: int,
    stats: _Stats,
    fault: Fault,
    stop: threading.Event | None = None,
) -> list[CleanedGroup]:
    """Write the ``.cleaned`` segments of every group below ``end_offset``."""
    cleaned: list[CleanedGroup] = []
    writers: list[_CleanedWriter] = []
    txns = _CleanedTxns(plan.aborted_txns)
    try:
        for group in _group_segments(plan, end_offset):
            writer = _CleanedWriter(plan, group[0].base_offset, buffer_size)
            writers.append(writer)
            # One batch of lookahead tells which batch is the group's last.
            pending: bytes | None = None
            for ref in group:
                for data in _read_batches(ref, buffer_size, stats, stop):
                    if pending is not None:
                        out = _filter_batch(
                            pending, offset_map, plan, end_offset, False, stats, txns, writer
                        )
                        if out is not None:
                            writer.append(out, read_header(out))
                    pending = data
            if pending is not None:
                out = _filter_batch(
                    pending, offset_map, plan, end_offset, True, stats, txns, writer
                )
                if out is not None:
                    writer.append(out, read_header(out))
            writer.finish(max(r.last_modified_ms for r in group))
            stats.bytes_written += writer.size
            cleaned.append(
                CleanedGroup(
                    group[0].base_offset,
                    tuple((r.base_offset, r.size, r.inode) for r in group),
                    writer.size,
                )
            )
            fault("write_cleaned")
    except Exception:
        for writer in writers:
            writer.discard()
        raise
    fsync_dir(plan.directory)
    return cleaned


def discard_cleaned(result: CleanResult) -> None:
    """Delete the ``.cleaned`` files of a cleaning that will not be swapped in."""
    for group in result.groups:
        name = log_file_name(group.base_offset)
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(result.plan.directory / (name + suffix + CLEANED_SUFFIX))


def run_cleaning(
    plan: CleanPlan,
    config: CleanerConfig,
    fault: Fault = _no_fault,
    stop: threading.Event | None = None,
) -> CleanResult:
    """Steps 2 and 3 of the module docstring (the worker thread's part). Closes the plan's
    file descriptors when done; CleaningAbortedError (no ``.cleaned`` file left) within a
    batch of ``stop`` being set."""
    started = time.monotonic()
    stats = _Stats()
    offset_map = OffsetMap(config.map_capacity)
    try:
        end = build_offset_map(plan, offset_map, config.io_buffer_size, stats, fault, stop)
        if end <= plan.first_dirty_offset:
            raise KafkaStorageError(
                f"log.cleaner.dedupe.buffer.size is too small to map one record of "
                f"{plan.topic_partition}"
            )
        groups = clean_segments(plan, offset_map, end, config.io_buffer_size, stats, fault, stop)
    finally:
        close_plan(plan)
    return CleanResult(
        plan._replace(segments=tuple(ref._replace(fd=-1) for ref in plan.segments)),
        tuple(groups),
        end,
        stats.bytes_read,
        stats.bytes_written,
        stats.records_read,
        stats.records_kept,
        len(offset_map),
        time.monotonic() - started,
    )


# --- the cleaner --------------------------------------------------------------------------


class LogCleaner:
    """Chooses logs to clean, cleans them, swaps the result in, keeps the checkpoints.

    ``grab_filthiest_log`` and ``swap`` run on the owner of the logs (the event loop);
    ``clean`` in a worker thread. The in-progress set and checkpoints are guarded by a lock.
    ``fault(step)`` is called at each step (``build_map``, ``write_cleaned``, and the swap's
    ``swap_renamed``, ``old_deleted``, ``swapped``): tests raise from it to simulate a crash.
    """

    def __init__(
        self,
        config: CleanerConfig,
        *,
        time_ms: Callable[[], int] = _wall_clock_ms,
        fault: Fault = _no_fault,
    ) -> None:
        self.config = config
        self._time_ms = time_ms
        self._fault = fault
        self._lock = threading.Lock()
        self._in_progress: set[TopicPartition] = set()
        self._stop = threading.Event()

    def shutdown(self) -> None:
        """Make every cleaning under way stop within a batch (CleaningAbortedError, its
        ``.cleaned`` files deleted), and every later one at once."""
        self._stop.set()

    # --- checkpoints ----------------------------------------------------------------------

    def first_dirty_offset(self, log: Log) -> int:
        offset = log.cleaner_checkpoint.get(TopicPartition(log.topic, log.partition))
        return log.log_start_offset if offset is None else offset

    # --- the three steps ------------------------------------------------------------------

    def grab_filthiest_log(
        self,
        logs: Mapping[TopicPartition, Log],
        *,
        high_watermarks: Mapping[TopicPartition, int] | None = None,
        producer_last_offsets: Callable[[TopicPartition], frozenset[int]] | None = None,
        last_stable_offsets: Mapping[TopicPartition, int] | None = None,
    ) -> CleanPlan | None:
        """On the owner: the plan for the dirtiest cleanable log, marked in progress.
        ``last_stable_offsets`` (the partitions'): a log's cleaning stops at its LSO."""
        now = self._time_ms()
        best: tuple[bool, float, CleanPlan] | None = None
        for tp, log in logs.items():
            if log.closed or not log.config.compact:
                continue
            with self._lock:
                if tp in self._in_progress:
                    continue
            hw = None if high_watermarks is None else high_watermarks.get(tp)
            if high_watermarks is not None and hw is None:
                continue  # no partition state: not a replica this broker serves
            producers = producer_last_offsets(tp) if producer_last_offsets else frozenset()
            plan, must = plan_cleaning(
                log,
                first_dirty_offset=self.first_dirty_offset(log),
                now_ms=now,
                high_watermark=hw,
                producer_last_offsets=producers,
                last_stable_offset=(
                    None if last_stable_offsets is None else last_stable_offsets.get(tp)
                ),
            )
            if plan is None:
                continue
            if not must and plan.dirty_ratio < plan.config.min_cleanable_dirty_ratio:
                continue
            key = (must, plan.dirty_ratio, plan)
            if best is None or key[:2] > best[:2]:
                best = key
        if best is None:
            return None
        plan = open_plan(logs[best[2].topic_partition], best[2])
        with self._lock:
            self._in_progress.add(plan.topic_partition)
        return plan

    def clean(self, plan: CleanPlan) -> CleanResult:
        """In a worker thread: build the map and write the ``.cleaned`` segments."""
        return run_cleaning(plan, self.config, self._fault, self._stop)

    def swap(self, log: Log, result: CleanResult) -> bool:
        """On the owner: replace the cleaned segments and move the checkpoint; False when the
        log changed meanwhile (the cleaning is discarded)."""
        plan = result.plan
        swapped = 0
        try:
            if log.closed or log.dir != plan.directory or log.generation != plan.generation:
                # Closed, deleted, or truncated since planned: the map may hold records that
                # are gone, so nothing of this cleaning may be installed (Kafka aborts it).
                discard_cleaned(result)
                return False
            checkpoint = log.cleaner_checkpoint
            # Before the first gap is on disk, the log is one that may have gaps.
            checkpoint.ensure(plan.topic_partition, plan.first_dirty_offset)
            for group in result.groups:
                if log.replace_with_cleaned(
                    group.base_offset,
                    group.replaced,
                    generation=plan.generation,
                    fault=self._fault,
                ):
                    swapped += 1
                else:
                    discard_cleaned(result)
                    break
            if swapped == len(result.groups):
                checkpoint.set(plan.topic_partition, result.end_offset)
            _log.info(
                "log.cleaned",
                topic=plan.topic_partition.topic,
                partition=plan.topic_partition.partition,
                first_dirty_offset=plan.first_dirty_offset,
                end_offset=result.end_offset,
                segments=sum(len(g.replaced) for g in result.groups),
                segments_swapped=swapped,
                bytes_read=result.bytes_read,
                bytes_before=sum(s for g in result.groups for _, s, _ in g.replaced),
                bytes_after=sum(g.size for g in result.groups),
                records_read=result.records_read,
                records_kept=result.records_kept,
                map_entries=result.map_entries,
                duration_ms=round(result.duration_s * 1000, 1),
            )
            return swapped == len(result.groups)
        finally:
            self.done(plan)

    def done(self, plan: CleanPlan) -> None:
        """The cleaning of ``plan`` ended (swapped, aborted or failed)."""
        with self._lock:
            self._in_progress.discard(plan.topic_partition)


def clean_log(
    cleaner: LogCleaner,
    log: Log,
    *,
    high_watermark: int | None = None,
    producer_last_offsets: frozenset[int] = frozenset(),
    last_stable_offset: int | None = None,
    force: bool = False,
) -> CleanResult | None:
    """One whole cleaning of ``log`` in the calling thread (tests, benchmarks, tools).

    ``force`` ignores ``min.cleanable.dirty.ratio``. None when there was nothing to clean or
    the swap was refused.
    """
    tp = TopicPartition(log.topic, log.partition)
    now = cleaner._time_ms()
    plan, must = plan_cleaning(
        log,
        first_dirty_offset=cleaner.first_dirty_offset(log),
        now_ms=now,
        high_watermark=high_watermark,
        producer_last_offsets=producer_last_offsets,
        last_stable_offset=last_stable_offset,
    )
    if plan is None:
        return None
    if not (force or must or plan.dirty_ratio >= plan.config.min_cleanable_dirty_ratio):
        return None
    plan = open_plan(log, plan)
    with cleaner._lock:
        cleaner._in_progress.add(tp)
    try:
        result = cleaner.clean(plan)
    except BaseException:
        cleaner.done(plan)
        raise
    return result if cleaner.swap(log, result) else None


async def run_cleaner_thread(
    cleaner: LogCleaner,
    logs: Callable[[], Mapping[TopicPartition, Log]],
    *,
    high_watermarks: Callable[[], Mapping[TopicPartition, int]] | None = None,
    producer_last_offsets: Callable[[TopicPartition], frozenset[int]] | None = None,
    failure_channel: LogDirFailureChannel | None = None,
    last_stable_offsets: Callable[[], Mapping[TopicPartition, int]] | None = None,
) -> None:
    """One of Kafka's cleaner threads, on the event loop that owns the logs: choose a log and
    swap on the loop, build the map and write the ``.cleaned`` files in a worker thread; sleep
    ``log.cleaner.backoff.ms`` when no log needs cleaning. Runs until cancelled (a cleaning
    cancelled mid-way leaves ``.cleaned`` files, which the next load deletes)."""
    backoff_s = cleaner.config.backoff_ms / 1000
    while True:
        plan: CleanPlan | None = None
        current: Mapping[TopicPartition, Log] = {}
        try:
            current = logs()
            plan = cleaner.grab_filthiest_log(
                current,
                high_watermarks=None if high_watermarks is None else high_watermarks(),
                producer_last_offsets=producer_last_offsets,
                last_stable_offsets=None if last_stable_offsets is None else last_stable_offsets(),
            )
            if plan is None:
                await asyncio.sleep(backoff_s)
                continue
            result = await asyncio.to_thread(cleaner.clean, plan)
            log = logs().get(plan.topic_partition)
            if log is None:
                discard_cleaned(result)
                cleaner.done(plan)
            else:
                cleaner.swap(log, result)
        except CleaningAbortedError as exc:
            _log.info("log.cleaning_aborted", reason=exc.message)
            if plan is not None:
                cleaner.done(plan)
            await asyncio.sleep(backoff_s)
        except Exception as exc:  # keep cleaning the other logs; this one is retried later
            cleaned = None if plan is None else current.get(plan.topic_partition)
            # An I/O error takes the log's dir offline (one log line there), not a traceback.
            if (
                failure_channel is None
                or cleaned is None
                or not failure_channel.maybe_add_offline_log_dir(
                    cleaned.dir.parent, exc, f"error cleaning {cleaned.dir.name}"
                )
            ):
                _log.exception("log.cleaning_failed", error=str(exc))
            if plan is not None:
                cleaner.done(plan)
            await asyncio.sleep(backoff_s)
