"""The log of one partition: a directory of segments, appended to at the end.

On disk, one directory per partition replica, named ``<topic>-<partition>`` (the partition is
what follows the last ``-``), holding::

    00000000000000000000.log        segments, named by base offset (layout in segment.py)
    00000000000000000000.index
    00000000000000000000.timeindex
    00000000000000000000.txnindex   aborted transactions (layout in txn_index.py), if any
    00000000000000004096.log ...
    leader-epoch-checkpoint         epoch -> start offset (layout in epoch_cache.py)

Offsets: ``log_start_offset`` (first offset a reader may ask for; at or above the first
segment's base offset) <= ``recovery_point`` (everything below it is fsynced) <=
``log_end_offset`` (LEO: the offset the next appended record gets). Offsets only grow from batch
to batch. They may have gaps: the log cleaner (cleaner.py) removes records and batches and keeps
the survivors at their offsets, as Kafka's does, and a follower copies its leader's cleaned
batches (starting a new segment at a batch after a gap, so the previous segment may end below
the next one's base offset). In a log that cannot have been cleaned a gap is damage (the CRC
does not cover a batch's base offset), so recovery accepts gaps only where cleaning can have
made them: in a log whose topic is compacted now, or one with an entry in its log dir's
``cleaner-offset-checkpoint`` (``CleanerCheckpoint``). That entry is made durable before any
gapped data is (by the cleaner's swap, or by a follower append that brings a gap), lowered by
truncation and removed with the log, so the fact outlives a change of ``cleanup.policy``.

A fetch at an offset that cleaning removed returns the next batch that holds a later offset.

Opening a log recovers it the way Kafka does after an unclean shutdown: every segment from the
one holding the recovery point onwards is re-read and every batch re-validated (CRC, lengths,
offsets); the first bad or incomplete batch and everything after it is removed, including later
segments. Indexes that are missing or fail a sanity check are rebuilt from their ``.log``
(below the recovery point without removing anything). Nothing before the first bad batch is
ever lost, and nothing below the recovery point is removed: that data was flushed, so damage
there is not a torn write. Such segments are not re-read at load; reads from them check each
batch's CRC instead (``LogSegment.verified``), and a damaged batch answers CorruptRecordError
(CORRUPT_MESSAGE) with a ``log.read.corrupt_batch`` line, the batches before it still served.
Transactions: each segment's ``.txnindex`` lists the transactions aborted by a marker in it
(written by the partition, which knows the producers' open transactions, as it appends);
``collect_aborted_transactions`` answers a read_committed fetch from them. Recovery truncates a
re-read segment's entries with its data but cannot recompute the rest without producer state:
when re-read segments hold transactional batches, ``txn_index_rebuild_offset`` names the first
of them and the recovery point stays there until the partition has rebuilt their ``.txnindex``
files from the batches and called ``complete_txn_index_rebuild`` (a crash before that re-reads
them again, so the rebuild is never skipped; Kafka's LogLoader does it inline with its
ProducerStateManager, which here lives in replication). A read_committed reader's upper bound
is the last stable offset, which the partition passes as ``max_offset`` to ``read``.

The recovery point moves when a flush completes: a roll asks for the segments before the new
one to be flushed, which the owner runs in the background (``prepare_flush``, ``PendingFlush``,
``complete_flush``), as Kafka's roll schedules it.

Not thread-safe: a Log belongs to the broker's single event loop, or to whichever single caller
holds it (blocking file I/O may run in an executor, one call at a time). The one exception is
the log cleaner, which reads inactive segments through its own file descriptors in a worker
thread and hands its result to ``replace_with_cleaned`` on the owner.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import time
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import ClassVar, NamedTuple

import structlog

from minikafka.broker.storage.checkpoints import CleanerCheckpoint, fsync_dir
from minikafka.broker.storage.config import LogConfig
from minikafka.broker.storage.epoch_cache import (
    LEADER_EPOCH_CHECKPOINT,
    EpochSnapshot,
    LeaderEpochFileCache,
)
from minikafka.broker.storage.index import NO_TIMESTAMP
from minikafka.broker.storage.segment import (
    FetchDataInfo,
    FileRecords,
    LogSegment,
    TimestampAndOffset,
)
from minikafka.broker.storage.txn_index import TXN_INDEX_SUFFIX, AbortedTxn
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import (
    CorruptRecordError,
    ErrorCode,
    InvalidRecordError,
    KafkaError,
    KafkaStorageError,
    OffsetOutOfRangeError,
    RecordError,
    RecordValidationError,
    error_for_code,
)
from minikafka.proto.log_files import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    log_file_name,
    parse_log_file_name,
    parse_partition_dir,
)
from minikafka.proto.records import (
    HEADER_SIZE,
    BatchHeader,
    assign_offsets,
    decode_batch,
    iter_batch_headers,
    read_header,
    validate_batch,
    validate_batches,
)

__all__ = [
    "EARLIEST_LOCAL_TIMESTAMP",
    "EARLIEST_TIMESTAMP",
    "FUTURE_DIR_SUFFIX",
    "LATEST_TIMESTAMP",
    "MAX_TIMESTAMP",
    "FetchDataInfo",
    "FileRecords",
    "Log",
    "LogAppendInfo",
    "LogHooks",
    "PendingFlush",
    "TimestampAndOffset",
    "UnexpectedAppendOffsetError",
    "future_dir_name",
    "is_future_dir",
    "parse_topic_partition",
]

# ListOffsets' special timestamps.
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
# KIP-405 (ListOffsets v8): the first offset kept on local disk. Without tiered storage every
# offset is local, so it is the log start offset.
EARLIEST_LOCAL_TIMESTAMP = -4

DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
_TMP_SUFFIX = ".tmp"
_LEFTOVER_SUFFIXES = (DELETED_SUFFIX, CLEANED_SUFFIX, _TMP_SUFFIX, SWAP_SUFFIX)

_log = structlog.get_logger(__name__)

_CHECK_CHUNK = 1 << 20  # records left in a file are checked this much at a time

_generations = itertools.count(1)  # Log.generation: unique across the logs of the process


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def _starts_with_records(data: bytes | FileRecords) -> bool:
    head = data.read(HEADER_SIZE) if isinstance(data, FileRecords) else data
    return read_header(head).record_count > 0


def _valid_prefix(data: bytes, expected: int = -1) -> tuple[int, str | None, int]:
    """How many bytes of ``data`` are valid batches, why the next one is not (None: all are),
    and the offset the next batch must start at or above (``expected``: the one before's)."""
    position = 0
    while position < len(data):
        try:
            header = validate_batch(data, position)
            if header.base_offset < expected:
                raise CorruptRecordError(
                    f"batch has base offset {header.base_offset}, below the previous "
                    f"batch's next offset {expected}"
                )
        except (CorruptRecordError, InvalidRecordError) as exc:
            return position, exc.message, expected
        expected = header.next_offset
        position += header.size
    return position, None, expected


def _valid_file_prefix(records: FileRecords) -> tuple[int, str | None]:
    """``_valid_prefix`` of records left in their file, read a chunk of whole batches at a
    time (a batch larger than the chunk on its own)."""
    position = 0
    expected = -1
    while position < records.size:
        chunk = records.read(_CHECK_CHUNK, position)
        if not chunk:
            return position, f"the file ends {records.size - position} bytes early"
        whole = 0
        for relative, header in iter_batch_headers(chunk):
            whole = relative + header.size
        if whole:
            chunk = chunk[:whole]
        elif len(chunk) >= HEADER_SIZE and read_header(chunk).size > len(chunk):
            chunk = records.read(read_header(chunk).size, position)  # one large batch
        valid, error, expected = _valid_prefix(chunk, expected)
        position += valid
        if error is not None:
            return position, error
    return position, None


def _holds_records(data: bytes) -> bool:
    return any(header.record_count > 0 for _, header in iter_batch_headers(data))


class LogAppendInfo(NamedTuple):
    """What an append wrote: its offset range, its largest timestamp and where that is."""

    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    record_count: int
    valid_bytes: int


class LogHooks(NamedTuple):
    """Calls into a layer above storage, which storage does not import (replication keeps its
    producer-state snapshots in step with the log through them). Each runs synchronously on
    the log's owner, inside the Log method that triggers it; None = nothing to call.

    ``segment_rolled(base_offset)``: a new active segment starts at ``base_offset``, the log
    end offset. ``log_start_offset_moved(offset)``: retention or DeleteRecords moved the log
    start offset up to ``offset``. ``closing()``: ``close`` is about to close the segments
    (the log is still open).
    """

    segment_rolled: Callable[[int], None] | None = None
    log_start_offset_moved: Callable[[int], None] | None = None
    closing: Callable[[], None] | None = None


class PendingFlush:
    """A flush split in three, so that the fsyncs run off the log's owner: ``prepare_flush``
    (on the owner) writes the indexes and opens the files, ``sync`` (any thread) fsyncs them
    and the directory and closes them, ``complete_flush`` (on the owner) moves the recovery
    point. Kafka's roll schedules the same background flush of the rolled segment."""

    def __init__(
        self,
        directory: Path,
        up_to_offset: int,
        generation: int,
        fds: list[int],
        epochs: tuple[LeaderEpochFileCache, EpochSnapshot] | None = None,
    ):
        self.directory = directory
        self.up_to_offset = up_to_offset
        self.generation = generation
        self._fds = fds
        self._epochs = epochs  # an epoch file not written yet: written before the data
        self.synced = False
        self.error: OSError | None = None  # why ``sync`` failed

    def sync(self) -> None:
        """Write a pending epoch file, fsync the files and the directory, then close the
        files; an OSError (or the KafkaStorageError of the epoch write) is kept in ``error``
        for the owner, not raised."""
        try:
            if self._epochs is not None:
                cache, snapshot = self._epochs
                try:
                    cache.write(snapshot)
                except KafkaStorageError as exc:
                    raise OSError(str(exc)) from exc
            for fd in self._fds:
                os.fsync(fd)
            fsync_dir(self.directory)
            self.synced = True
        except OSError as exc:
            self.error = exc
        finally:
            self.close()

    def close(self) -> None:
        fds, self._fds = self._fds, []
        for fd in fds:
            os.close(fd)


class UnexpectedAppendOffsetError(KafkaError):
    """A follower's fetched batches do not start at its log end offset.

    Carries the appended range so the fetcher can react (for an empty log: restart it at
    ``first_offset`` with ``truncate_fully_and_start_at``), as Kafka's
    UnexpectedAppendOffsetException does. Reported as INVALID_RECORD should it ever reach
    a client.
    """

    code: ClassVar[ErrorCode] = ErrorCode.INVALID_RECORD

    def __init__(self, message: str, first_offset: int, last_offset: int) -> None:
        super().__init__(message)
        self.first_offset = first_offset
        self.last_offset = last_offset


FUTURE_DIR_SUFFIX = "-future"


def future_dir_name(tp: TopicPartition, unique_id: str) -> str:
    """Kafka's name of a future log (KIP-113): ``<topic>-<partition>.<32 hex digits>-future``."""
    return f"{tp}.{unique_id}{FUTURE_DIR_SUFFIX}"


def is_future_dir(dir_name: str) -> bool:
    return dir_name.endswith(FUTURE_DIR_SUFFIX)


def parse_topic_partition(dir_name: str) -> TopicPartition:
    """``my-topic-3`` -> (my-topic, 3): the partition follows the last ``-``. A future log's
    ``my-topic-3.<id>-future`` names the same partition."""
    if is_future_dir(dir_name):
        dir_name = dir_name[: -len(FUTURE_DIR_SUFFIX)].rpartition(".")[0]
    parsed = parse_partition_dir(dir_name)
    if parsed is None:
        raise KafkaStorageError(
            f"directory name {dir_name!r} is not of the form <topic>-<partition>"
        )
    return TopicPartition(*parsed)


def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def _summarize(headers: Sequence[BatchHeader], size: int) -> LogAppendInfo:
    max_timestamp = NO_TIMESTAMP
    offset_of_max = -1
    records = 0
    for header in headers:
        records += header.record_count
        if header.max_timestamp > max_timestamp:
            max_timestamp = header.max_timestamp
            offset_of_max = header.base_offset + header.last_offset_delta
    last = headers[-1]
    return LogAppendInfo(
        headers[0].base_offset,
        last.base_offset + last.last_offset_delta,
        max_timestamp,
        offset_of_max,
        records,
        size,
    )


def _segment_sized(
    headers: Sequence[BatchHeader], segment_bytes: int
) -> Iterator[Sequence[BatchHeader]]:
    """Consecutive runs of ``headers`` whose batches together fit ``segment_bytes``; a batch
    larger than that is a run of its own."""
    run_start, run_size = 0, 0
    for i, header in enumerate(headers):
        size = header.size
        if run_size and run_size + size > segment_bytes:
            yield headers[run_start:i]
            run_start, run_size = i, 0
        run_size += size
    yield headers[run_start:]


class Log:
    """The segments of one partition directory, with appends, reads, truncation, retention.

    Directory ``<topic>-<partition>`` of segment files and ``leader-epoch-checkpoint`` (see
    the module docstring). Not thread-safe: one owner (the broker's event loop), one call at a
    time, blocking file I/O included.
    """

    def __init__(
        self,
        directory: str | Path,
        config: LogConfig,
        *,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        had_clean_shutdown: bool = False,
        time_ms: Callable[[], int] = _wall_clock_ms,
        sync_parent: bool = True,
    ) -> None:
        """``sync_parent=False``: a new directory is created without fsyncing its parent (the
        log dir); the creator fsyncs it before anything is written (LogManager.create_logs)."""
        self.dir = directory if isinstance(directory, Path) else Path(directory)
        created = False
        self.topic, self.partition = parse_topic_partition(self.dir.name)
        # Its entry says this log may have gaps (see the module docstring).
        self._cleaner_checkpoint = CleanerCheckpoint.of(self.dir.parent)
        self._generation = next(_generations)
        self._config = config
        self._time_ms = time_ms
        self._segments: dict[int, LogSegment] = {}
        self._bases: list[int] = []  # sorted base offsets of _segments
        self._closed = False
        self._dir_dirty = False  # a segment file was created since the directory was fsynced
        # (due time, files): segments retention removed, renamed *.deleted and kept for
        # file.delete.delay.ms so that a read already under way still finds them.
        self._files_to_delete: list[tuple[int, list[Path]]] = []
        self._pending_flush_offset = 0  # rolls ask for the old segments to be flushed
        self._flush_listener: Callable[[Log], None] | None = None
        self._hooks = LogHooks()
        self._txn_index_rebuild_offset: int | None = None
        # One listing of the directory serves the whole load (None: there is none yet).
        names: list[str] | None
        try:
            names = os.listdir(self.dir)
        except FileNotFoundError:
            names = None
        if names is None:
            # An entry without a directory belongs to a deleted log of the same name: a new
            # log starts dirty from its first offset (removed before the directory exists, so
            # a crash in between cannot leave the new log with it).
            self._cleaner_checkpoint.remove(self._tp)
            self.dir.mkdir(parents=True)
            if sync_parent:
                fsync_dir(self.dir.parent)
            had_clean_shutdown = True  # a new log: nothing was written, nothing to recover
            created = True
            names = []
        self.leader_epoch_cache = LeaderEpochFileCache(
            self.dir / LEADER_EPOCH_CHECKPOINT,
            topic=self.topic,
            partition=self.partition,
            read=LEADER_EPOCH_CHECKPOINT in names,
        )
        self._log_start_offset = log_start_offset
        self._recovery_point = recovery_point
        self._leo = 0
        self._load(names, recovery_point, log_start_offset, had_clean_shutdown, created=created)
        self._last_flush_ms = time_ms()

    def __repr__(self) -> str:
        return (
            f"Log({self.topic}-{self.partition}, log_start_offset={self._log_start_offset}, "
            f"log_end_offset={self._leo}, segments={len(self._bases)})"
        )

    # --- loading --------------------------------------------------------------------------

    def _load(
        self,
        names: list[str],
        recovery_point: int,
        log_start_offset: int,
        clean: bool,
        *,
        created: bool = False,
    ) -> None:
        """Load the segments of ``names``, the directory's listing, and recover them."""
        started = time.monotonic()
        swapped, names = self._remove_temp_files(names)
        for base in self._segment_files(names):
            self._add(LogSegment.open(self.dir, base, self._config, time_ms=self._time_ms))
        for base in swapped:
            if base in self._segments:
                self._complete_swap(self._segments[base])

        # Recovery starts at the segment holding the recovery point (all of it, as Kafka).
        if clean or not self._bases:
            first_recovered = len(self._bases)
        else:
            first_recovered = max(bisect_right(self._bases, recovery_point) - 1, 0)
        validated = 0  # segments re-read by recovery (what an unclean restart pays for)
        rebuild_txn_index_from: int | None = None  # first re-read segment with transactions
        gaps_allowed = self.may_have_gaps
        touched: list[LogSegment] = []  # segments that recovery rewrote (indexes, maybe data)
        index = 0
        previous_next_offset: int | None = None
        while index < len(self._bases):
            segment = self._segments[self._bases[index]]
            touched.append(segment)
            if index >= first_recovered:
                result = segment.recover(self.leader_epoch_cache, allow_gaps=gaps_allowed)
                validated += 1
                if result.transactional and rebuild_txn_index_from is None:
                    rebuild_txn_index_from = segment.base_offset
                if segment.size == 0 and not result.bytes_truncated:
                    # Empty and left as it was: nothing of it needs to become durable (an
                    # unclean restart beside thousands of idle partitions would otherwise
                    # fsync three files of each).
                    touched.pop()
            else:
                problem = segment.check_indexes()
                if problem is None:
                    touched.pop()
                    previous_next_offset = None
                    index += 1
                    continue
                _log.warning(
                    "index.rebuilt",
                    topic=self.topic,
                    partition=self.partition,
                    segment=segment.path.name,
                    reason=problem,
                )
                # Below the recovery point the data was flushed: only the indexes are
                # rebuilt; a damaged batch there is for reads to report, not for a cut.
                result = segment.recover(allow_gaps=gaps_allowed, truncate=False)
                if result.error is not None:
                    _log.error(
                        "log.recovery.corrupt_below_recovery_point",
                        topic=self.topic,
                        partition=self.partition,
                        segment=segment.path.name,
                        offset=result.next_offset,
                        recovery_point=recovery_point,
                        error=result.error,
                    )
                touched.pop()  # its data is untouched; the indexes are flushed here
                segment.flush()
                previous_next_offset = None
                index += 1
                continue
            gap = False
            # Segment boundaries are checked between recovered segments only: the flushed
            # ones below the recovery point are trusted, as Kafka's LogLoader does.
            if index > first_recovered:
                previous_end = self._next_offset_of(index - 1, previous_next_offset)
                gap = (
                    previous_end > segment.base_offset
                    if gaps_allowed
                    else previous_end != segment.base_offset
                )
            if gap:
                # The previous segment does not end where this one starts (or, where gaps are
                # allowed, ends beyond it): offsets are missing or overlap.
                _log.warning(
                    "log.recovery.truncated",
                    topic=self.topic,
                    partition=self.partition,
                    segment=segment.path.name,
                    bytes_truncated=segment.size,
                    offset=segment.base_offset,
                    reason="segment does not follow on from the previous one",
                )
                self._remove_segments_from(index)
                break
            if result.bytes_truncated:
                _log.warning(
                    "log.recovery.truncated",
                    topic=self.topic,
                    partition=self.partition,
                    segment=segment.path.name,
                    bytes_truncated=result.bytes_truncated,
                    offset=result.next_offset,
                    reason=result.error,
                )
                self._remove_segments_from(index + 1)
                previous_next_offset = result.next_offset
                break
            previous_next_offset = result.next_offset
            index += 1

        if not self._bases:
            self._add(
                LogSegment.create(self.dir, log_start_offset, self._config, time_ms=self._time_ms)
            )
        self._leo = self.active_segment.read_next_offset()
        if self._leo < log_start_offset:
            _log.warning(
                "log.recovery.truncated",
                topic=self.topic,
                partition=self.partition,
                segment=self.active_segment.path.name,
                bytes_truncated=sum(s.size for s in self._segments.values()),
                offset=log_start_offset,
                reason=f"log end offset {self._leo} is below log start offset {log_start_offset}",
            )
            self._replace_all_segments(log_start_offset)
        self._log_start_offset = max(log_start_offset, self._bases[0])
        # What recovery validated, rebuilt or truncated becomes durable before the recovery
        # point moves past it.
        for segment in touched:
            if self._segments.get(segment.base_offset) is segment:
                segment.flush()
        if clean or validated:
            self._recovery_point = self._leo
        else:
            self._recovery_point = min(recovery_point, self._leo)
        if rebuild_txn_index_from is not None and rebuild_txn_index_from in self._segments:
            # Held until the partition rebuilt the .txnindex files (module docstring).
            self._txn_index_rebuild_offset = rebuild_txn_index_from
            self._recovery_point = min(self._recovery_point, rebuild_txn_index_from)
        self._pending_flush_offset = self._recovery_point
        self._flush_dir()
        # Entries of epochs that never got data (a leader's last epoch): no fsync each, the
        # next append or flush writes the file (epoch_cache.py).
        self.leader_epoch_cache.truncate_from_end(self._leo, flush=False)
        self.leader_epoch_cache.truncate_from_start(self._log_start_offset)
        # A log just created has nothing to report that log.created does not say: at debug,
        # which costs nothing, rather than a line per partition when thousands are created.
        (_log.debug if created else _log.info)(
            "log.loaded",
            topic=self.topic,
            partition=self.partition,
            log_start_offset=self._log_start_offset,
            log_end_offset=self._leo,
            recovery_point=self._recovery_point,
            segments=len(self._bases),
            clean_shutdown=clean,
            segments_validated=validated,
            duration_ms=round((time.monotonic() - started) * 1000, 1),
        )

    def _next_offset_of(self, index: int, known: int | None) -> int:
        if known is not None:
            return known
        return self._segments[self._bases[index]].read_next_offset()

    def _remove_temp_files(self, names: list[str]) -> tuple[list[int], list[str]]:
        """Delete leftovers of interrupted deletes, cleanings and checkpoint writes; finish
        interrupted swaps. ``names`` is the directory's listing. Returns the base offsets of
        segments swapped in, and the listing after these changes (listed again only when
        there was something to do, which a clean directory never has)."""
        leftovers = [name for name in names if name.endswith(_LEFTOVER_SUFFIXES)]
        if not leftovers:
            return [], names
        swapped: list[int] = []
        for name in leftovers:
            path = self.dir / name
            if name.endswith((DELETED_SUFFIX, CLEANED_SUFFIX, _TMP_SUFFIX)):
                _unlink(path)
            elif name.endswith(SWAP_SUFFIX):
                # A .swap .log is a finished replacement segment: complete the swap as Kafka
                # does. Its indexes are rebuilt rather than trusted, except its .txnindex,
                # which needs producer state to rebuild: the cleaner wrote it whole, and
                # fsynced it before any .swap rename (it is renamed with the .log).
                real = name[: -len(SWAP_SUFFIX)]
                parsed = parse_log_file_name(real)
                if parsed is not None and parsed.suffix == LOG_SUFFIX:
                    os.replace(path, self.dir / real)
                    swapped.append(parsed.offset)
                elif parsed is None or parsed.suffix != TXN_INDEX_SUFFIX:
                    _unlink(path)
        for name in leftovers:
            if name.endswith(TXN_INDEX_SUFFIX + SWAP_SUFFIX):
                parsed = parse_log_file_name(name)
                path = self.dir / name
                if parsed is not None and parsed.offset in swapped:
                    os.replace(path, self.dir / name[: -len(SWAP_SUFFIX)])
                else:
                    _unlink(path)  # the swap did not reach its .log: the old files stand
        for base in swapped:
            for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
                _unlink(self.dir / log_file_name(base, suffix))
        return swapped, os.listdir(self.dir)

    def _segment_files(self, names: list[str]) -> list[int]:
        """Base offsets of the ``.log`` files among ``names`` (the directory's listing); index
        files without a ``.log`` are deleted."""
        logs: set[int] = set()
        indexes: list[tuple[int, Path]] = []
        for name in names:
            parsed = parse_log_file_name(name)
            if parsed is None:
                continue
            if parsed.suffix == LOG_SUFFIX:
                logs.add(parsed.offset)
            elif parsed.suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
                indexes.append((parsed.offset, self.dir / name))
        for base, path in indexes:
            if base not in logs:
                _log.info(
                    "index.orphan_deleted",
                    topic=self.topic,
                    partition=self.partition,
                    file=path.name,
                )
                _unlink(path)
        return sorted(logs)

    @property
    def may_have_gaps(self) -> bool:
        """Whether recovery accepts offset gaps here (see the module docstring)."""
        return self._config.compact or self._cleaner_checkpoint.get(self._tp) is not None

    @property
    def _tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @property
    def cleaner_checkpoint(self) -> CleanerCheckpoint:
        """The ``cleaner-offset-checkpoint`` of this log's log dir."""
        return self._cleaner_checkpoint

    @property
    def generation(self) -> int:
        """Changes whenever segments are truncated, removed or recreated (not by retention
        or rolls); unique in the process, so a recreated log never repeats an old value. The
        cleaner's swap compares it with the one its plan saw."""
        return self._generation

    def _complete_swap(self, segment: LogSegment) -> None:
        result = segment.recover(self.leader_epoch_cache, allow_gaps=True)  # cleaned data
        segment.flush()
        for base in [b for b in self._bases if segment.base_offset < b < result.next_offset]:
            self._segments.pop(base).delete()
            self._bases.remove(base)
            self._dir_dirty = True

    # --- segments -------------------------------------------------------------------------

    def _add(self, segment: LogSegment) -> None:
        self._segments[segment.base_offset] = segment
        if self._bases and segment.base_offset <= self._bases[-1]:
            raise KafkaStorageError(
                f"segment {segment.base_offset} added after segment {self._bases[-1]} in {self.dir}"
            )
        self._bases.append(segment.base_offset)

    def _remove_segments_from(self, index: int, *, delete_later: bool = False) -> list[int]:
        """Delete the segments at positions >= ``index``; returns their base offsets. With
        ``delete_later`` (a truncation, as Kafka's asynchronous delete) their files are renamed
        ``.deleted`` and removed after file.delete.delay.ms."""
        removed = self._bases[index:]
        del self._bases[index:]
        segments = [self._segments.pop(base) for base in removed]
        if delete_later:
            self._delete_segment_files(segments)
        else:
            for segment in segments:
                segment.delete()
        if removed:
            self._dir_dirty = True
            self._generation = next(_generations)
        return removed

    def _replace_all_segments(self, new_offset: int, *, delete_later: bool = False) -> None:
        self._remove_segments_from(0, delete_later=delete_later)
        self._add(LogSegment.create(self.dir, new_offset, self._config, time_ms=self._time_ms))
        self._dir_dirty = True
        self._leo = new_offset

    def replace_with_cleaned(
        self,
        base_offset: int,
        replaced: Sequence[tuple[int, int, int]],
        *,
        generation: int | None = None,
        fault: Callable[[str], None] | None = None,
    ) -> bool:
        """Swap in the cleaner's ``<base_offset>.*.cleaned`` files for the segments
        ``replaced`` ((base offset, size, inode) each, oldest first, the first at
        ``base_offset``), read by the cleaner when the log's generation was ``generation``.

        Kafka's order, so that a crash at any point loads either the old segments or the new
        one: ``.cleaned`` -> ``.swap`` (the ``.log`` last), directory fsynced; the replaced
        segments deleted; ``.swap`` -> real names (the ``.log`` last), directory fsynced. All
        of it within this call, on the log's owner: no reader sees a half-swapped log. False
        (nothing changed, the ``.cleaned`` files deleted) when the segments are no longer
        those the cleaner read (the log was truncated since, or a segment is missing, another
        file or another size), or one of them is the active segment. ``fault(step)`` is a
        test hook for crash simulation.
        """
        self._check_open()
        name = log_file_name(base_offset)
        # The .log last. The cleaner always writes a .txnindex (maybe empty), so that a swap
        # completed at load never pairs the cleaned .log with the old segment's entries.
        suffixes = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX, LOG_SUFFIX)
        current = [self._segments.get(base) for base, _, _ in replaced]
        position = bisect_right(self._bases, base_offset) - 1
        unchanged = (
            bool(replaced)
            and (generation is None or generation == self._generation)
            and replaced[0][0] == base_offset
            and all(
                segment is not None and segment.size == size and segment.inode == inode
                for segment, (_, size, inode) in zip(current, replaced, strict=True)
            )
            and self._bases[position : position + len(replaced)] == [b for b, _, _ in replaced]
            and position + len(replaced) < len(self._bases)  # never the active segment
        )
        if not unchanged:
            for suffix in suffixes:
                _unlink(self.dir / (name + suffix + CLEANED_SUFFIX))
            return False
        for suffix in suffixes:
            cleaned = self.dir / (name + suffix + CLEANED_SUFFIX)
            os.replace(cleaned, self.dir / (name + suffix + SWAP_SUFFIX))
        fsync_dir(self.dir)
        if fault is not None:
            fault("swap_renamed")
        removed = [segment for segment in current[1:] if segment is not None]
        for segment in removed:
            del self._segments[segment.base_offset]
            self._bases.remove(segment.base_offset)
        self._delete_segment_files(removed)
        if fault is not None:
            fault("old_deleted")
        first = current[0]
        assert first is not None
        first.close()
        for suffix in suffixes:
            os.replace(self.dir / (name + suffix + SWAP_SUFFIX), self.dir / (name + suffix))
        fsync_dir(self.dir)
        if fault is not None:
            fault("swapped")
        segment = LogSegment.open(self.dir, base_offset, self._config, time_ms=self._time_ms)
        if not segment.txn_index.entries:
            segment.txn_index.delete()  # no abort kept: no file, as for any segment
        self._segments[base_offset] = segment
        return True

    def set_flush_listener(self, listener: Callable[[Log], None] | None) -> None:
        """``listener(log)`` runs (on the owner, inside ``roll``) when a roll leaves a flush
        pending: the LogManager then asks only those logs, not every log, every second."""
        self._flush_listener = listener

    def set_hooks(self, hooks: LogHooks) -> None:
        """Install the callbacks of the layer above (replacing any installed before)."""
        self._hooks = hooks

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[self._bases[-1]]

    @property
    def segments(self) -> list[LogSegment]:
        """The segments, oldest first."""
        return [self._segments[base] for base in self._bases]

    @property
    def number_of_segments(self) -> int:
        return len(self._bases)

    # --- transactions ---------------------------------------------------------------------

    def collect_aborted_transactions(
        self, start_offset: int, upper_bound_offset: int
    ) -> list[AbortedTxn]:
        """The aborted transactions overlapping [``start_offset``, ``upper_bound_offset``),
        for a read_committed fetch (Kafka's collectAbortedTransactions): from the ``.txnindex``
        of the segment holding ``start_offset`` and of the later ones, until an entry's last
        stable offset reaches the bound (no transaction open before it can still overlap)."""
        self._check_open()
        found: list[AbortedTxn] = []
        for base in self._bases[max(self._floor_index(start_offset), 0) :]:
            result = self._segments[base].txn_index.collect(start_offset, upper_bound_offset)
            found.extend(result.aborted)
            if result.is_complete:
                break
        return found

    @property
    def txn_index_rebuild_offset(self) -> int | None:
        """Where the ``.txnindex`` files of segments recovery re-read start needing a rebuild
        from their batches (the base offset of the first with transactional batches), or None
        (see the module docstring)."""
        return self._txn_index_rebuild_offset

    def complete_txn_index_rebuild(self) -> None:
        """The partition rebuilt the ``.txnindex`` files from ``txn_index_rebuild_offset`` on:
        make them durable, and let the recovery point reach the LEO, as recovery would have."""
        self._check_open()
        if self._txn_index_rebuild_offset is None:
            return
        for base in self._bases[max(self._floor_index(self._txn_index_rebuild_offset), 0) :]:
            self._segments[base].txn_index.flush(fsync=True)
        fsync_dir(self.dir)
        self._txn_index_rebuild_offset = None
        self._recovery_point = max(self._recovery_point, self._leo)
        self._pending_flush_offset = max(self._pending_flush_offset, self._recovery_point)

    def _floor_index(self, offset: int) -> int:
        return bisect_right(self._bases, offset) - 1

    # --- offsets and config ---------------------------------------------------------------

    @property
    def config(self) -> LogConfig:
        return self._config

    def update_config(self, config: LogConfig) -> None:
        """Use ``config`` from now on (segments already open keep their index settings)."""
        self._config = config

    @property
    def log_end_offset(self) -> int:
        return self._leo

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def recovery_point(self) -> int:
        return self._recovery_point

    @property
    def last_flush_ms(self) -> int:
        return self._last_flush_ms

    @property
    def size(self) -> int:
        """Bytes in all segments."""
        return sum(segment.size for segment in self._segments.values())

    @property
    def latest_epoch(self) -> int | None:
        return self.leader_epoch_cache.latest_epoch

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetsForLeaderEpoch; (-1, -1) when unknown."""
        return self.leader_epoch_cache.end_offset_for(leader_epoch, self._leo)

    def maybe_assign_epoch_start_offset(
        self, leader_epoch: int, start_offset: int, *, flush: bool = True
    ) -> None:
        """A new leader records where its epoch starts (its LEO) before it appends. With
        ``flush=False`` the caller writes the epoch file later (LeaderEpochFileCache.write);
        until then the log writes it before fsyncing any data."""
        self.leader_epoch_cache.assign(leader_epoch, start_offset, flush=flush)

    def _check_open(self) -> None:
        if self._closed:
            raise KafkaStorageError(f"log {self.dir} is closed")

    # --- appending ------------------------------------------------------------------------

    def append_as_leader(
        self,
        data: bytes | bytearray | memoryview,
        leader_epoch: int,
        *,
        allow_control: bool = False,
    ) -> LogAppendInfo:
        """Validate a produce request's batches, give them offsets from the LEO and this
        leader's epoch, and append them. ``allow_control``: the broker's own transaction
        markers (Kafka's AppendOrigin.COORDINATOR), which clients may not write."""
        self._check_open()
        self._check_append_size(len(data))
        config, now_ms = self._config, self._time_ms()
        patched, headers = assign_offsets(
            data,
            self._leo,
            leader_epoch,
            max_batch_size=config.max_message_bytes,
            log_append_time_ms=now_ms if config.log_append_time else None,
            timestamp_range=config.timestamp_range(now_ms),
            recompression=config.recompression,
            allow_control=allow_control,
        )
        if self._config.compact:
            self._check_keys(patched)
        info = _summarize(headers, len(patched))
        self._append(patched, headers, info)
        return info

    def _check_keys(self, data: bytes | bytearray | memoryview) -> None:
        # The cleaner keeps the latest record per key, so a record without one has no place in
        # a compacted log: refused as Kafka's LogValidator does, the first batch with such
        # records naming each of them (KIP-467). Only compacted topics pay for decoding here.
        for position, header in iter_batch_headers(data):
            if header.is_control:
                continue
            _, records = decode_batch(data, position, verify_crc=False)
            keyless = [
                RecordError(
                    index,
                    "Compacted topic cannot accept message without key in topic partition "
                    f"{self.topic}-{self.partition}.",
                )
                for index, record in enumerate(records)
                if record.key is None
            ]
            if keyless:
                raise RecordValidationError(keyless)

    def append_as_follower(
        self,
        data: bytes | bytearray | memoryview,
        on_appended: Callable[[Sequence[BatchHeader]], None] | None = None,
    ) -> LogAppendInfo:
        """Append batches fetched from the leader, keeping their offsets and epochs.

        They must start at or above the LEO and their offsets must grow from batch to batch (a
        cleaned leader log has gaps, as in Kafka); otherwise UnexpectedAppendOffsetError
        (nothing is written). The first gap gives the log its ``cleaner-offset-checkpoint``
        entry, durable before the gapped batches are written (see the module docstring).

        Neither max.message.bytes nor segment.bytes refuses them: the leader accepted them
        under its config, and a follower that refused its leader's data would fall out of the
        ISR for good (a lowered segment.bytes, a fetch of replica.fetch.max.bytes). An append
        larger than a segment is written in pieces of at most segment.bytes, rolling between
        batches as needed; a single batch larger than segment.bytes gets a segment of its own
        (Kafka, KAFKA-17375).

        ``on_appended`` gets the headers of each piece as soon as it is written, before the
        next piece's roll: the partition's producer state, which the snapshot taken at that
        roll (``LogHooks.segment_rolled``) must already hold, as it covers every offset below.
        """
        self._check_open()
        if not data:
            return LogAppendInfo(self._leo, self._leo - 1, NO_TIMESTAMP, -1, 0, 0)
        headers = validate_batches(data)
        expected = self._leo
        gapped = False
        for header in headers:
            if header.base_offset < expected:
                raise UnexpectedAppendOffsetError(
                    f"append to {self.topic}-{self.partition} has a batch at offset "
                    f"{header.base_offset} where offset {expected} was expected "
                    f"(log end offset {self._leo}, appended offsets "
                    f"{headers[0].base_offset}..{headers[-1].last_offset})",
                    headers[0].base_offset,
                    headers[-1].last_offset,
                )
            gapped = gapped or header.base_offset > expected
            expected = header.next_offset
        if gapped:
            # Records the leader's cleaner removed: before the gap is on disk, the log is
            # marked as one that may have gaps, so recovery keeps them whatever the policy.
            self._cleaner_checkpoint.ensure(self._tp, self._log_start_offset)
        info = _summarize(headers, len(data))
        if len(data) <= self._config.segment_bytes:
            self._append(data, headers, info)
            if on_appended is not None:
                on_appended(headers)
            return info
        view = memoryview(data)
        start = 0
        for piece in _segment_sized(headers, self._config.segment_bytes):
            end = start + sum(h.size for h in piece)
            self._append(view[start:end], piece, _summarize(piece, end - start))
            if on_appended is not None:
                on_appended(piece)
            start = end
        return info

    def _check_append_size(self, size: int) -> None:
        if size > self._config.segment_bytes:
            raise error_for_code(
                ErrorCode.RECORD_LIST_TOO_LARGE,
                f"append of {size} bytes to {self.topic}-{self.partition} is larger than "
                f"segment.bytes ({self._config.segment_bytes})",
            )

    def _append(
        self,
        data: bytes | bytearray | memoryview,
        headers: Sequence[BatchHeader],
        info: LogAppendInfo,
    ) -> None:
        # Epochs first, as Kafka: the checkpoint is fsynced before data of a new epoch can be
        # (and one left to a later write goes out now, see epoch_cache.py).
        self._write_epochs_if_dirty()
        segment = self._maybe_roll(len(data), info)
        cache = self.leader_epoch_cache
        for header in headers:
            epoch = header.partition_leader_epoch
            if epoch >= 0:
                latest = cache.latest_epoch
                if latest is None or epoch > latest:
                    cache.assign(epoch, header.base_offset)
        segment.append(data, headers)
        self._leo = info.last_offset + 1
        if self._leo - self._recovery_point >= self._config.flush_messages:
            self.flush()

    def _maybe_roll(self, size: int, info: LogAppendInfo) -> LogSegment:
        segment = self.active_segment
        config = self._config
        if segment.should_roll(
            segment_bytes=config.segment_bytes,
            segment_ms=config.segment_ms - segment.roll_jitter_ms,
            messages_size=size,
            max_timestamp_in_messages=info.max_timestamp,
            max_offset_in_messages=info.last_offset,
            now_ms=self._time_ms(),
        ):
            return self.roll(info.first_offset)
        return segment

    def roll(self, expected_next_offset: int | None = None) -> LogSegment:
        """Start a new active segment at the LEO. The segments before it are flushed by the
        next ``maybe_flush`` (Kafka schedules that flush in the background too)."""
        self._check_open()
        new_offset = max(expected_next_offset or 0, self._leo)
        active = self.active_segment
        if new_offset in self._segments:
            if active.base_offset == new_offset and active.size == 0:
                # Nothing to roll away from (an index filled up with no data, say): reuse the
                # base offset with fresh files.
                self._remove_segments_from(len(self._bases) - 1)
            else:
                raise KafkaStorageError(
                    f"cannot roll {self.topic}-{self.partition} to a new segment at offset "
                    f"{new_offset}: a segment with that base offset exists"
                )
        elif new_offset < active.base_offset:
            raise KafkaStorageError(
                f"cannot roll {self.topic}-{self.partition} to offset {new_offset}, below the "
                f"active segment's base offset {active.base_offset}"
            )
        else:
            active.on_become_inactive()
        segment = LogSegment.create(self.dir, new_offset, self._config, time_ms=self._time_ms)
        self._add(segment)
        self._dir_dirty = True
        self._pending_flush_offset = max(self._pending_flush_offset, new_offset)
        if self._flush_listener is not None:
            self._flush_listener(self)
        _log.info(
            "log.segment.rolled",
            topic=self.topic,
            partition=self.partition,
            base_offset=new_offset,
            previous_base_offset=active.base_offset,
            previous_size=active.size,
        )
        if self._hooks.segment_rolled is not None:
            self._hooks.segment_rolled(new_offset)
        return segment

    # --- reading --------------------------------------------------------------------------

    def read(
        self,
        fetch_offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        min_one_message: bool = True,
        *,
        file_records: bool = False,
    ) -> FetchDataInfo:
        """Whole batches from the one holding ``fetch_offset``, up to ``max_bytes``.

        ``max_offset`` is an exclusive bound such as the high watermark: no batch whose base
        offset is >= it is returned. With ``min_one_message`` the first batch comes back even
        when larger than ``max_bytes``. OffsetOutOfRangeError when ``fetch_offset`` is below
        the log start offset or above the LEO. With ``file_records`` the batches may come
        back left in their file (``FileRecords``, for sendfile), those of a segment recovery
        did not re-validate checked first; a run of batches the cleaner emptied is read.
        """
        self._check_open()
        if fetch_offset < self._log_start_offset or fetch_offset > self._leo:
            raise OffsetOutOfRangeError(
                f"offset {fetch_offset} of {self.topic}-{self.partition} is outside the log's "
                f"range [{self._log_start_offset}, {self._leo}]"
            )
        upper = self._leo if max_offset is None else min(max_offset, self._leo)
        if fetch_offset >= upper:
            return FetchDataInfo(fetch_offset, b"")
        index = max(self._floor_index(fetch_offset), 0)
        collected: list[bytes] = []  # empty batches (left by cleaning) read so far
        size = 0
        while index < len(self._bases):
            segment = self._segments[self._bases[index]]
            if upper <= segment.base_offset:
                break
            segment_end = self._bases[index + 1] if index + 1 < len(self._bases) else self._leo
            max_position = (
                None if upper >= segment_end else segment.position_of_first_batch_from(upper)
            )
            info = segment.read(
                fetch_offset,
                max_bytes - size,
                max_position,
                min_one_message and not collected,
                file_records=file_records and not collected,
            )
            index += 1
            if info is None:
                if not segment.verified:
                    stop = segment.unwalkable_position(fetch_offset)
                    if stop is not None:
                        # A damaged batch length: the batches from here on cannot be found.
                        raise self._corrupt(
                            segment, fetch_offset, f"no valid batch header at position {stop}"
                        )
                continue
            if not segment.verified and info.records:
                info = self._checked(segment, info)
            if not collected and (not info.records or _starts_with_records(info.records)):
                return info
            if not info.records:
                break
            records = info.records
            if isinstance(records, FileRecords):  # its first batch is empty: read them
                records = records.read_and_close()
            collected.append(records)
            size += len(records)
            if _holds_records(records) or size >= max_bytes:
                break
            # Only batches the cleaner emptied: go on, so that the reader gets to the next
            # record rather than a response it cannot move past.
        return FetchDataInfo(fetch_offset, b"".join(collected))

    def _checked(self, segment: LogSegment, info: FetchDataInfo) -> FetchDataInfo:
        """The batches read from a segment recovery did not re-validate (one below the
        recovery point), cut before the first that fails validation; CorruptRecordError
        (CORRUPT_MESSAGE) when that is the first one, so the reader stops at the damage.
        Records left in the file are read to be checked, ``_CHECK_CHUNK`` bytes at a time."""
        data = info.records
        if isinstance(data, FileRecords):
            valid, error = _valid_file_prefix(data)
        else:
            valid, error, _ = _valid_prefix(data)
        if error is None:
            return info
        if valid > 0:
            return info._replace(
                records=data.cut(valid) if isinstance(data, FileRecords) else data[:valid]
            )
        if isinstance(data, FileRecords):
            data.close()
        raise self._corrupt(segment, info.fetch_offset, error)

    def _corrupt(self, segment: LogSegment, fetch_offset: int, error: str) -> KafkaError:
        _log.error(
            "log.read.corrupt_batch",
            topic=self.topic,
            partition=self.partition,
            segment=segment.path.name,
            fetch_offset=fetch_offset,
            error=error,
        )
        return CorruptRecordError(
            f"corrupt record batch in {self.topic}-{self.partition} at fetch offset "
            f"{fetch_offset} (segment {segment.path.name}): {error}"
        )

    def fetch_offset_by_timestamp(self, timestamp: int) -> TimestampAndOffset | None:
        """ListOffsets: the first offset whose record timestamp is >= ``timestamp``, with that
        timestamp and its leader epoch; None when every record is older.

        The special timestamps: LATEST_TIMESTAMP (-1) -> the LEO, EARLIEST_TIMESTAMP (-2) and
        EARLIEST_LOCAL_TIMESTAMP (-4) -> the log start offset (all with timestamp -1),
        MAX_TIMESTAMP (-3) -> the record with the largest timestamp (KIP-734; the first such
        record when several share it).
        """
        self._check_open()
        cache = self.leader_epoch_cache
        if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            start = self._log_start_offset
            return TimestampAndOffset(NO_TIMESTAMP, start, cache.epoch_for_offset(start))
        if timestamp == LATEST_TIMESTAMP:
            return TimestampAndOffset(NO_TIMESTAMP, self._leo, cache.latest_epoch)
        if timestamp == MAX_TIMESTAMP:
            best = max(self.segments, key=lambda s: s.max_timestamp_so_far)
            if best.max_timestamp_so_far < 0:
                return None
            # The index knows the batch; the record inside it is found by reading that batch.
            return best.find_offset_by_timestamp(best.max_timestamp_so_far, self._log_start_offset)
        for segment in self.segments:
            if segment.largest_timestamp < timestamp:
                continue
            found = segment.find_offset_by_timestamp(timestamp, self._log_start_offset)
            if found is not None:
                return found
        return None

    # --- truncation -----------------------------------------------------------------------

    def truncate_to(self, target_offset: int) -> bool:
        """Remove every offset >= ``target_offset`` (a follower diverging from its leader).

        Whole batches go: a target inside a batch removes that batch, and the LEO becomes its
        base offset. No-op (False) when the target is at or beyond the LEO.
        """
        self._check_open()
        if target_offset < 0:
            raise ValueError(f"cannot truncate {self.dir} to negative offset {target_offset}")
        if target_offset >= self._leo:
            return False
        if self._bases[0] > target_offset:
            self.truncate_fully_and_start_at(target_offset)
            return True
        # The cleaner's first dirty offset must not stay above the new log end (new records
        # would pass as clean), nor above the start of the segment the new ones will join:
        # lowered first, as Kafka does. A cleaning under way is refused at its swap (the
        # generation changes).
        self._cleaner_checkpoint.lower(self._tp, self._bases[self._floor_index(target_offset)])
        self._generation = next(_generations)
        old_leo = self._leo
        removed = self._remove_segments_from(
            bisect_right(self._bases, target_offset), delete_later=True
        )
        bytes_truncated = self.active_segment.truncate_to(target_offset)
        self._leo = self.active_segment.read_next_offset()
        self.leader_epoch_cache.truncate_from_end(self._leo)
        self._log_start_offset = min(self._log_start_offset, self._leo)
        self._recovery_point = min(self._recovery_point, self._leo)
        self._pending_flush_offset = min(self._pending_flush_offset, self._leo)
        _log.info(
            "log.truncated",
            topic=self.topic,
            partition=self.partition,
            target_offset=target_offset,
            previous_log_end_offset=old_leo,
            log_end_offset=self._leo,
            segments_deleted=removed,
            bytes_truncated=bytes_truncated,
        )
        return True

    def truncate_fully_and_start_at(self, new_offset: int) -> None:
        """Delete every segment and restart the log, empty, at ``new_offset``."""
        self._check_open()
        if new_offset < 0:
            raise ValueError(f"cannot restart {self.dir} at negative offset {new_offset}")
        old_start, old_leo = self._log_start_offset, self._leo
        self._cleaner_checkpoint.lower(self._tp, new_offset)
        self._replace_all_segments(new_offset, delete_later=True)
        self.leader_epoch_cache.clear()
        self._log_start_offset = new_offset
        self._recovery_point = new_offset
        self._pending_flush_offset = new_offset
        self._flush_dir()
        _log.info(
            "log.truncated_fully",
            topic=self.topic,
            partition=self.partition,
            previous_log_start_offset=old_start,
            previous_log_end_offset=old_leo,
            log_start_offset=new_offset,
        )

    # --- flushing -------------------------------------------------------------------------

    def flush(self, up_to_offset: int | None = None) -> None:
        """fsync the segments holding offsets [recovery point, ``up_to_offset``) and move the
        recovery point there (default: the LEO)."""
        self._check_open()
        self._write_epochs_if_dirty()
        offset = self._leo if up_to_offset is None else min(up_to_offset, self._leo)
        if offset <= self._recovery_point:
            return
        start = max(self._floor_index(self._recovery_point), 0)
        for base in self._bases[start:]:
            if base >= offset:
                break
            self._segments[base].flush()
        self._flush_dir()
        self._recovery_point = offset
        self._last_flush_ms = self._time_ms()

    def flush_due(self, now_ms: int) -> int | None:
        """The offset a flush should reach now (what rolls left pending, or the LEO once
        ``flush.ms`` has passed since the last flush), or None when nothing is due."""
        if self._closed:
            return None
        due = now_ms - self._last_flush_ms >= self._config.flush_ms
        if due and self._leo > self._recovery_point:
            return self._leo
        if self._pending_flush_offset > self._recovery_point:
            return self._pending_flush_offset
        return None

    def prepare_flush(self, up_to_offset: int | None = None) -> PendingFlush | None:
        """The first step of a background flush of [recovery point, ``up_to_offset``) (see
        ``PendingFlush``); None when the recovery point is already there."""
        self._check_open()
        offset = self._leo if up_to_offset is None else min(up_to_offset, self._leo)
        if offset <= self._recovery_point:
            return None
        fds: list[int] = []
        cache = self.leader_epoch_cache
        epochs = (cache, cache.snapshot()) if cache.dirty else None
        try:
            for base in self._bases[max(self._floor_index(self._recovery_point), 0) :]:
                if base >= offset:
                    break
                fds.extend(self._segments[base].open_for_sync())
        except BaseException:
            PendingFlush(self.dir, offset, self._generation, fds).close()
            raise
        return PendingFlush(self.dir, offset, self._generation, fds, epochs)

    def complete_flush(self, pending: PendingFlush) -> bool:
        """The last step of a background flush: move the recovery point, unless the log was
        closed or truncated since ``prepare_flush`` (the synced data may be gone)."""
        if self._closed or not pending.synced or pending.generation != self._generation:
            return False
        offset = min(pending.up_to_offset, self._leo)
        if offset <= self._recovery_point:
            return False
        self._recovery_point = offset
        self._last_flush_ms = self._time_ms()
        _log.debug(
            "log.flushed",
            topic=self.topic,
            partition=self.partition,
            recovery_point=offset,
        )
        return True

    def _write_epochs_if_dirty(self) -> None:
        # The epoch file before any data of its epochs (see PendingFlush).
        if self.leader_epoch_cache.dirty:
            self.leader_epoch_cache.flush()

    def _flush_dir(self) -> None:
        # New segment files only survive a crash once the directory entry is durable.
        if self._dir_dirty:
            fsync_dir(self.dir)
            self._dir_dirty = False

    def maybe_flush(self, now_ms: int) -> None:
        """For the broker's scheduler: flush what rolls left pending, and everything when
        ``flush.ms`` has passed since the last flush."""
        self._check_open()
        if self._pending_flush_offset > self._recovery_point:
            self.flush(self._pending_flush_offset)
        if now_ms - self._last_flush_ms >= self._config.flush_ms:
            self.flush()

    # --- retention and log start ----------------------------------------------------------

    def delete_old_segments(self, now_ms: int, high_watermark: int | None = None) -> int:
        """Retention: delete the oldest segments that are wholly below the log start offset,
        beyond retention.bytes or older than retention.ms; returns how many went.

        Only segments wholly below ``high_watermark`` may go, when it is given; the active
        segment may go only then (and only when it is not empty; a new empty segment takes its
        place, as in Kafka). Without a high watermark the active segment always stays.
        """
        self._check_open()
        deleted = self._delete_segments(
            lambda segment, following: (
                following is not None and following.base_offset <= self._log_start_offset
            ),
            "log_start_offset",
            high_watermark,
        )
        config = self._config
        if not config.delete_enabled:
            return deleted
        if config.retention_bytes >= 0:
            excess = self.size - config.retention_bytes
            if excess > 0:

                def over_size(segment: LogSegment, following: LogSegment | None) -> bool:
                    nonlocal excess
                    if excess - segment.size >= 0:
                        excess -= segment.size
                        return True
                    return False

                deleted += self._delete_segments(over_size, "retention.bytes", high_watermark)
        if config.retention_ms >= 0:
            deleted += self._delete_segments(
                lambda segment, following: now_ms - segment.largest_timestamp > config.retention_ms,
                "retention.ms",
                high_watermark,
            )
        return deleted

    def _delete_segments(
        self,
        predicate: Callable[[LogSegment, LogSegment | None], bool],
        reason: str,
        high_watermark: int | None,
    ) -> int:
        deletable: list[LogSegment] = []
        for index, base in enumerate(self._bases):
            segment = self._segments[base]
            following = (
                self._segments[self._bases[index + 1]] if index + 1 < len(self._bases) else None
            )
            if following is None and (high_watermark is None or segment.size == 0):
                break
            upper = following.base_offset if following is not None else self._leo
            if high_watermark is not None and high_watermark < upper:
                break
            if not predicate(segment, following):
                break
            deletable.append(segment)
        if not deletable:
            return 0
        if len(deletable) == len(self._bases):
            self.roll()
        for segment in deletable:
            del self._segments[segment.base_offset]
            self._bases.remove(segment.base_offset)
        self._delete_segment_files(deletable)
        self._dir_dirty = True
        if self._bases[0] > self._log_start_offset:
            self._advance_log_start_offset(self._bases[0])
        _log.info(
            "log.segments.deleted",
            topic=self.topic,
            partition=self.partition,
            reason=reason,
            base_offsets=[segment.base_offset for segment in deletable],
            log_start_offset=self._log_start_offset,
        )
        return len(deletable)

    def _delete_segment_files(self, segments: Sequence[LogSegment]) -> None:
        """Kafka's deleteSegmentFiles: rename them *.deleted now, remove them after
        file.delete.delay.ms (at once when it is 0)."""
        due_ms = self._time_ms() + self._config.file_delete_delay_ms
        for segment in segments:
            self._files_to_delete.append((due_ms, segment.rename_to_deleted(DELETED_SUFFIX)))
        if self._config.file_delete_delay_ms == 0:
            self.delete_due_files(due_ms)

    def delete_due_files(self, now_ms: int) -> int:
        """Remove the *.deleted files whose file.delete.delay.ms is over; how many went."""
        due = [paths for when, paths in self._files_to_delete if when <= now_ms]
        if not due:
            return 0
        self._files_to_delete = [e for e in self._files_to_delete if e[0] > now_ms]
        for paths in due:
            for path in paths:
                _unlink(path)
        return sum(len(paths) for paths in due)

    def maybe_increment_log_start_offset(
        self, new_log_start_offset: int, high_watermark: int | None = None
    ) -> bool:
        """DeleteRecords: move the log start offset up (never past the high watermark, or the
        LEO when none is given). The segments wholly below it go at the next retention pass."""
        self._check_open()
        limit = self._leo if high_watermark is None else high_watermark
        if new_log_start_offset > limit:
            raise OffsetOutOfRangeError(
                f"cannot move the log start offset of {self.topic}-{self.partition} to "
                f"{new_log_start_offset}, beyond the high watermark {limit}"
            )
        if new_log_start_offset <= self._log_start_offset:
            return False
        self._advance_log_start_offset(new_log_start_offset)
        return True

    def _advance_log_start_offset(self, offset: int) -> None:
        previous = self._log_start_offset
        self._log_start_offset = offset
        self._recovery_point = max(self._recovery_point, offset)
        self.leader_epoch_cache.truncate_from_start(offset)
        _log.info(
            "log.start_offset.moved",
            topic=self.topic,
            partition=self.partition,
            previous_log_start_offset=previous,
            log_start_offset=offset,
        )
        if self._hooks.log_start_offset_moved is not None:
            self._hooks.log_start_offset_moved(offset)

    # --- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        """Close the segment files (without fsync: call ``flush`` first for durability)."""
        if self._closed:
            return
        try:
            self._write_epochs_if_dirty()
            if self._hooks.closing is not None:
                self._hooks.closing()
        finally:
            for segment in self._segments.values():
                segment.close()
            self._closed = True

    @property
    def closed(self) -> bool:
        return self._closed
