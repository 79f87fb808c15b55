"""Idempotent and transactional producers: per-partition producer state and its snapshots (the
ids themselves come from producer_id_manager.py).

``ProducerStateManager`` (Kafka's class of the same name): per producer id the epoch, the last
``MAX_BATCHES_PER_PRODUCER`` (5, as Kafka) batches' sequence and offset ranges, the coordinator
epoch of its last transaction marker and the first offset of its open transaction. On the
leader a produced batch is checked before it is appended:

* a batch equal (same first and last sequence) to one of the cached batches is a retry: it is
  not appended again, and the producer is answered with the offsets the original got;
* an older producer epoch -> INVALID_PRODUCER_EPOCH; a newer epoch must start at sequence 0;
* otherwise the first sequence must follow the last one (mod 2^31) -> else
  OUT_OF_ORDER_SEQUENCE_NUMBER. A producer this partition has no state for is accepted at any
  sequence;
* a non-transactional batch from a producer with a transaction open -> INVALID_TXN_STATE.

A coordinator's own writes (``AppendOrigin.COORDINATOR``: the group coordinator's transactional
offset commits, sequence 0 every time) skip the duplicate and sequence checks and keep the
others, as Kafka's. A COMMIT/ABORT marker (``check_end_txn_marker``) is refused with
INVALID_PRODUCER_EPOCH when its producer epoch is older than the producer's, and with
TRANSACTION_COORDINATOR_FENCED when its coordinator epoch is older than the last one seen.

Transactions (KIP-98): a transactional batch opens its producer's transaction at its base
offset, unless one is open; a marker closes it (one without an open transaction closes an empty
one at the marker's offset, as Kafka) and ``update`` returns it as a ``CompletedTxn``, with the
last stable offset a ``.txnindex`` entry records: the first offset of the oldest transaction of
another producer still open at that point of the log, else the marker's offset + 1. Batches are
taken one by one in offset order, so every replica derives the same entries from the same log.
A completed transaction stays "unreplicated" until the high watermark passes its marker
(``on_high_watermark_updated``), and until then holds the first unstable offset as an open one
does: ``first_unstable_offset`` is the smallest first offset of both kinds, and the partition's
last stable offset is min(first unstable offset, high watermark), so a read_committed reader
never passes a marker that could still be lost.

Followers record the batches they fetch (no checks) so that a new leader knows the producers.
Every replica forgets a producer whose last batch or marker is ``producer.id.expiration.ms`` old
and that has no transaction open (``remove_expired_producers``, called by the broker every
``producer.id.expiration.check.interval.ms``).

Snapshots (Kafka's producer-state snapshot files, version 1). The state is written to
``<offset>.snapshot`` in the partition directory, the offset 20 digits zero-padded as for
segments: the log end offset the snapshot covers (every batch below it is in the snapshot, none
at or above it). The Partition takes one when a segment rolls (at the new segment's base offset)
and when its log closes (at the LEO), and on open loads the newest snapshot at or below the LEO
and replays the batch headers from there (``Partition`` describes the whole cycle). A snapshot
keeps, like Kafka's, only the last batch of each producer: enough to refuse an old epoch or a
sequence gap and to answer a retry of the last batch as a duplicate; and its open transaction,
which loading puts back among the open ones. All integers big-endian::

    position  size  field
    0         2     version                   int16, 1
    2         4     crc                       uint32, CRC32C of every byte from position 6 to
                                              the end of the file
    6         4     producer_entries count    int32, N
    10        46*N  producer_entries          N entries, by producer id:

    entry  +0   8   producer_id               int64
           +8   2   epoch                     int16, the producer epoch
           +10  4   last_sequence             int32, last sequence of the producer's last batch
           +14  8   last_offset               int64, last offset of that batch
           +22  4   offset_delta              int32, last - first sequence (= last - first
                                              offset) of that batch
           +26  8   timestamp                 int64, the producer's last timestamp (of its
                                              last batch or marker)
           +34  4   coordinator_epoch         int32, of its last marker (-1: none)
           +38  8   current_txn_first_offset  int64, first offset of its open transaction
                                              (-1: none open)

A producer whose last write was a marker alone has last_sequence -1, last_offset -1 and
offset_delta 0 (no batch).

A file whose version is not 1, whose size does not match its count or whose CRC fails is
corrupt (``CorruptSnapshotError``, with Kafka's messages); loading skips and deletes it.
Snapshots are written to ``<name>.tmp``, fsynced and renamed (the Log deletes stray ``.tmp``
files when it opens).

Not thread-safe: the broker's event loop only.
Snapshot files are written and read inline on the loop: a few dozen bytes per producer, at
segment rolls, truncations, opens and closes.
"""

from __future__ import annotations

import contextlib
import os
import struct
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import ClassVar, NamedTuple

import crc32c
import structlog

from minikafka.broker.storage.checkpoints import fsync_dir
from minikafka.proto.errors import (
    ErrorCode,
    KafkaError,
    OutOfOrderSequenceError,
    error_for_code,
)
from minikafka.proto.log_files import log_file_name, parse_log_file_name
from minikafka.proto.records import (
    NO_PRODUCER_ID,
    NO_TIMESTAMP,
    BatchHeader,
    ControlType,
    EndTxnMarker,
)

__all__ = [
    "MAX_BATCHES_PER_PRODUCER",
    "PRODUCER_SNAPSHOT_VERSION",
    "SNAPSHOT_SUFFIX",
    "ActiveProducer",
    "AppendOrigin",
    "BatchMetadata",
    "CompletedTxn",
    "CorruptSnapshotError",
    "ProducerSnapshotEntry",
    "ProducerStateManager",
    "decode_snapshot",
    "encode_snapshot",
    "list_snapshot_files",
    "read_snapshot",
    "snapshot_file_name",
    "write_snapshot",
]

MAX_BATCHES_PER_PRODUCER = 5
PRODUCER_SNAPSHOT_VERSION = 1
SNAPSHOT_SUFFIX = ".snapshot"
_SEQUENCE_MODULO = 2**31
_NO_OFFSET = -1

_SNAPSHOT_HEADER = struct.Struct(">hIi")  # version, crc, entry count
_CRC_START = 6  # the CRC covers the count and the entries
_SNAPSHOT_ENTRY = struct.Struct(">qhiqiqiq")
_TMP_SUFFIX = ".tmp"

_log = structlog.get_logger(__name__)


class AppendOrigin(Enum):
    """Who appends a batch on the leader (Kafka's AppendOrigin): a client's produce is checked
    for sequence order; a coordinator's own writes (the group coordinator's transactional offset
    commits, the transaction coordinator's markers) are not, as it writes sequence 0 each time."""

    CLIENT = "client"
    COORDINATOR = "coordinator"


class CorruptSnapshotError(KafkaError):
    """A ``.snapshot`` file that cannot be trusted (bad version, size or CRC); Kafka's
    CorruptSnapshotException. Reported as KAFKA_STORAGE_ERROR should it reach a client."""

    code: ClassVar[ErrorCode] = ErrorCode.KAFKA_STORAGE_ERROR


class ProducerSnapshotEntry(NamedTuple):
    """One producer in a snapshot file, field for field (layout in the module docstring)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int = -1
    current_txn_first_offset: int = _NO_OFFSET

    @property
    def first_sequence(self) -> int:
        return (self.last_sequence - self.offset_delta) % _SEQUENCE_MODULO

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


def snapshot_file_name(offset: int) -> str:
    return log_file_name(offset, SNAPSHOT_SUFFIX)


def list_snapshot_files(directory: Path) -> dict[int, Path]:
    """The snapshot files of a partition directory, by offset."""
    found: dict[int, Path] = {}
    with contextlib.suppress(FileNotFoundError), os.scandir(directory) as entries:
        for entry in entries:
            parsed = parse_log_file_name(entry.name)
            if parsed is not None and parsed.suffix == SNAPSHOT_SUFFIX:
                found[parsed.offset] = Path(entry.path)
    return found


def encode_snapshot(entries: Iterable[ProducerSnapshotEntry]) -> bytes:
    rows = sorted(entries)
    body = bytearray(_SNAPSHOT_HEADER.size + _SNAPSHOT_ENTRY.size * len(rows))
    _SNAPSHOT_HEADER.pack_into(body, 0, PRODUCER_SNAPSHOT_VERSION, 0, len(rows))
    for i, row in enumerate(rows):
        _SNAPSHOT_ENTRY.pack_into(body, _SNAPSHOT_HEADER.size + i * _SNAPSHOT_ENTRY.size, *row)
    crc = crc32c.crc32c(memoryview(body)[_CRC_START:])
    struct.pack_into(">I", body, 2, crc)
    return bytes(body)


def decode_snapshot(data: bytes) -> list[ProducerSnapshotEntry]:
    """Raises CorruptSnapshotError, with Kafka's messages, when ``data`` cannot be trusted."""
    if len(data) < _SNAPSHOT_HEADER.size:
        raise CorruptSnapshotError(
            f"Snapshot failed schema validation: {len(data)} bytes is shorter than the "
            f"{_SNAPSHOT_HEADER.size}-byte header"
        )
    version, stored_crc, count = _SNAPSHOT_HEADER.unpack_from(data)
    if version != PRODUCER_SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"Snapshot contained an unknown file version {version}")
    expected = _SNAPSHOT_HEADER.size + max(count, 0) * _SNAPSHOT_ENTRY.size
    if count < 0 or len(data) < expected:
        raise CorruptSnapshotError(
            f"Snapshot failed schema validation: {count} entries need {expected} bytes, "
            f"the file has {len(data)}"
        )
    # As Kafka: the CRC covers the file to its end, so trailing bytes fail it.
    computed = crc32c.crc32c(memoryview(data)[_CRC_START:])
    if computed != stored_crc:
        raise CorruptSnapshotError(
            f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {stored_crc}. "
            f"Computed crc: {computed}"
        )
    if len(data) != expected:
        raise CorruptSnapshotError(
            f"Snapshot failed schema validation: {len(data) - expected} bytes after the "
            f"{count} entries"
        )
    return [
        ProducerSnapshotEntry._make(row)
        for row in _SNAPSHOT_ENTRY.iter_unpack(memoryview(data)[_SNAPSHOT_HEADER.size :])
    ]


def write_snapshot(path: Path, entries: Iterable[ProducerSnapshotEntry]) -> None:
    """Write a snapshot file atomically (temp file, fsync, rename, directory fsync)."""
    data = encode_snapshot(entries)
    tmp = path.with_name(path.name + _TMP_SUFFIX)
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


def read_snapshot(path: Path | str) -> list[ProducerSnapshotEntry]:
    with open(path, "rb") as f:
        return decode_snapshot(f.read())


class CompletedTxn(NamedTuple):
    """A transaction a marker closed (Kafka's CompletedTxn), with the last stable offset its
    ``.txnindex`` entry records when it aborted (see the module docstring)."""

    producer_id: int
    first_offset: int
    last_offset: int  # the marker's offset
    is_aborted: bool
    last_stable_offset: int


class ActiveProducer(NamedTuple):
    """A producer as DescribeProducers lists it."""

    producer_id: int
    producer_epoch: int
    last_sequence: int  # -1 without a batch
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int  # -1: no transaction open


class BatchMetadata(NamedTuple):
    first_sequence: int
    last_sequence: int
    first_offset: int
    last_offset: int
    timestamp: int = NO_TIMESTAMP


@dataclass
class _ProducerEntry:
    epoch: int
    batches: deque[BatchMetadata] = field(
        default_factory=lambda: deque(maxlen=MAX_BATCHES_PER_PRODUCER)
    )
    coordinator_epoch: int = -1
    current_txn_first_offset: int = _NO_OFFSET
    last_timestamp: int = NO_TIMESTAMP  # of its last batch or marker

    def bump_epoch(self, epoch: int) -> None:
        """A newer epoch: the batches of the old one no longer count (Kafka's
        maybeUpdateProducerEpoch); an open transaction stays open."""
        if epoch != self.epoch:
            self.epoch = epoch
            self.batches.clear()

    def find_duplicate(self, header: BatchHeader) -> BatchMetadata | None:
        for batch in self.batches:
            if (
                batch.first_sequence == header.base_sequence
                and batch.last_sequence == header.last_sequence
            ):
                return batch
        return None

    @property
    def last_sequence(self) -> int | None:
        return self.batches[-1].last_sequence if self.batches else None

    def snapshot_entry(self, producer_id: int) -> ProducerSnapshotEntry:
        if not self.batches:
            return ProducerSnapshotEntry(
                producer_id,
                self.epoch,
                -1,
                _NO_OFFSET,
                0,
                self.last_timestamp,
                self.coordinator_epoch,
                self.current_txn_first_offset,
            )
        last = self.batches[-1]
        return ProducerSnapshotEntry(
            producer_id,
            self.epoch,
            last.last_sequence,
            last.last_offset,
            last.last_offset - last.first_offset,
            self.last_timestamp,
            self.coordinator_epoch,
            self.current_txn_first_offset,
        )

    @classmethod
    def from_snapshot(cls, row: ProducerSnapshotEntry) -> _ProducerEntry:
        entry = cls(
            row.producer_epoch,
            coordinator_epoch=row.coordinator_epoch,
            current_txn_first_offset=row.current_txn_first_offset,
            last_timestamp=row.timestamp,
        )
        if row.last_offset >= 0:
            entry.batches.append(
                BatchMetadata(
                    row.first_sequence,
                    row.last_sequence,
                    row.first_offset,
                    row.last_offset,
                    row.timestamp,
                )
            )
        return entry


class ProducerStateManager:
    """Producer epochs and recent batches of one partition, and its ``.snapshot`` files (see
    the module docstring). ``log_dir`` None keeps the state in memory only (no snapshots)."""

    def __init__(
        self, log_dir: Path | None = None, *, topic: str = "", partition: int = -1
    ) -> None:
        self._producers: dict[int, _ProducerEntry] = {}
        self._ongoing: dict[int, int] = {}  # first offset -> producer id, open transactions
        self._unreplicated: dict[int, int] = {}  # first -> last offset, completed above the HW
        self._log_dir = log_dir
        self._topic = topic
        self._partition = partition
        self._snapshots: dict[int, Path] = {} if log_dir is None else list_snapshot_files(log_dir)

    def __len__(self) -> int:
        return len(self._producers)

    def check_append(
        self, headers: Iterable[BatchHeader], origin: AppendOrigin = AppendOrigin.CLIENT
    ) -> BatchMetadata | None:
        """Leader: check produced batches before they get offsets.

        Returns the original batch when the (single) batch is a retry of one already appended;
        None when the batches may be appended; raises a KafkaError when they must be refused.
        ``origin`` COORDINATOR skips the duplicate and sequence checks (module docstring).
        """
        headers = list(headers)
        client = origin is AppendOrigin.CLIENT
        pending: dict[int, tuple[int, int | None]] = {}  # pid -> (epoch, last seq) so far
        in_txn: dict[int, bool] = {}  # pid -> a transaction open after the batches so far
        for header in headers:
            pid = header.producer_id
            if pid == NO_PRODUCER_ID:
                continue
            entry = self._producers.get(pid)
            if (
                client
                and len(headers) == 1
                and entry is not None
                and header.producer_epoch == entry.epoch
            ):
                duplicate = entry.find_duplicate(header)
                if duplicate is not None:
                    return duplicate
            epoch, last = pending.get(
                pid, (entry.epoch, entry.last_sequence) if entry is not None else (-1, None)
            )
            if entry is not None or pid in pending:
                if header.producer_epoch < epoch:
                    raise error_for_code(
                        ErrorCode.INVALID_PRODUCER_EPOCH,
                        f"producer {pid} has epoch {header.producer_epoch}, older than {epoch}",
                    )
                if not client:
                    pass  # a coordinator writes sequence 0 every time
                elif header.producer_epoch > epoch:
                    if header.base_sequence != 0:
                        raise OutOfOrderSequenceError(
                            f"producer {pid} starts epoch {header.producer_epoch} at sequence "
                            f"{header.base_sequence}, not 0"
                        )
                elif last is not None and header.base_sequence != (last + 1) % _SEQUENCE_MODULO:
                    raise OutOfOrderSequenceError(
                        f"producer {pid} sent sequence {header.base_sequence} after "
                        f"{last} (epoch {epoch})"
                    )
            open_txn = in_txn.get(
                pid, entry is not None and entry.current_txn_first_offset != _NO_OFFSET
            )
            if open_txn and not header.is_transactional:
                raise error_for_code(
                    ErrorCode.INVALID_TXN_STATE,
                    f"Expected transactional write from producer {pid} in "
                    f"{self._topic}-{self._partition}: its transaction is open",
                )
            in_txn[pid] = open_txn or header.is_transactional
            pending[pid] = (header.producer_epoch, header.last_sequence)
        return None

    def check_end_txn_marker(
        self, producer_id: int, producer_epoch: int, coordinator_epoch: int
    ) -> None:
        """Leader: may a COMMIT/ABORT marker of this producer be appended? Raises
        INVALID_PRODUCER_EPOCH (an older producer epoch) or TRANSACTION_COORDINATOR_FENCED (an
        older coordinator epoch than the producer's last marker), as Kafka's
        ProducerAppendInfo.appendEndTxnMarker."""
        entry = self._producers.get(producer_id)
        if entry is None:
            return
        if producer_epoch < entry.epoch:
            raise error_for_code(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"Epoch of producer {producer_id} in {self._topic}-{self._partition} is "
                f"{producer_epoch}, which is smaller than the last seen epoch {entry.epoch}",
            )
        if coordinator_epoch < entry.coordinator_epoch:
            raise error_for_code(
                ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                f"Invalid coordinator epoch for producer {producer_id} in "
                f"{self._topic}-{self._partition}: {coordinator_epoch} (zombie), "
                f"{entry.coordinator_epoch} (current)",
            )

    def update(
        self,
        headers: Iterable[BatchHeader],
        markers: Mapping[int, EndTxnMarker] | None = None,
    ) -> list[CompletedTxn]:
        """Record appended batches (leader after append, follower after fetch, replay), in
        offset order; returns the transactions their markers completed. ``markers``: the
        marker of each control batch, by base offset (a control batch without one, of
        another control type, changes nothing)."""
        completed: list[CompletedTxn] = []
        for header in headers:
            pid = header.producer_id
            if pid == NO_PRODUCER_ID:
                continue
            entry = self._producers.get(pid)
            if entry is not None and header.producer_epoch < entry.epoch:
                continue  # a leader refused it; replay skips it the same way
            if header.is_control:
                marker = None if markers is None else markers.get(header.base_offset)
                if marker is not None:
                    if entry is None:
                        entry = self._producers[pid] = _ProducerEntry(header.producer_epoch)
                    completed.append(self._complete(pid, entry, header, marker))
                continue
            if entry is None:
                entry = self._producers[pid] = _ProducerEntry(header.producer_epoch)
            entry.bump_epoch(header.producer_epoch)
            entry.batches.append(
                BatchMetadata(
                    header.base_sequence,
                    header.last_sequence,
                    header.base_offset,
                    header.last_offset,
                    header.max_timestamp,
                )
            )
            entry.last_timestamp = header.max_timestamp
            if header.is_transactional and entry.current_txn_first_offset == _NO_OFFSET:
                entry.current_txn_first_offset = header.base_offset
                self._ongoing[header.base_offset] = pid
        return completed

    def _complete(
        self, pid: int, entry: _ProducerEntry, header: BatchHeader, marker: EndTxnMarker
    ) -> CompletedTxn:
        entry.bump_epoch(header.producer_epoch)
        first = entry.current_txn_first_offset
        if first == _NO_OFFSET:
            first = header.base_offset  # an empty transaction, as Kafka records one
        self._ongoing.pop(first, None)
        others = [offset for offset, owner in self._ongoing.items() if owner != pid]
        last_stable = min(others, default=header.last_offset + 1)
        entry.current_txn_first_offset = _NO_OFFSET
        entry.coordinator_epoch = marker.coordinator_epoch
        entry.last_timestamp = header.max_timestamp
        self._unreplicated[first] = header.last_offset
        return CompletedTxn(
            pid,
            first,
            header.last_offset,
            marker.control_type is ControlType.ABORT,
            last_stable,
        )

    @property
    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest transaction open, or completed with its marker not
        yet below the high watermark; None when there is none."""
        return min((*self._ongoing, *self._unreplicated), default=None)

    def on_high_watermark_updated(self, high_watermark: int) -> None:
        """Completed transactions whose marker is now below the high watermark no longer hold
        the last stable offset back."""
        if self._unreplicated:
            self._unreplicated = {
                first: last for first, last in self._unreplicated.items() if last >= high_watermark
            }

    @property
    def ongoing_transactions(self) -> dict[int, int]:
        """Producer id -> first offset of its open transaction."""
        return {pid: first for first, pid in self._ongoing.items()}

    def active_producers(self) -> list[ActiveProducer]:
        """Every producer known here, by id (DescribeProducers)."""
        return [
            ActiveProducer(
                pid,
                entry.epoch,
                -1 if entry.last_sequence is None else entry.last_sequence,
                entry.last_timestamp,
                entry.coordinator_epoch,
                entry.current_txn_first_offset,
            )
            for pid, entry in sorted(self._producers.items())
        ]

    def clear(self) -> None:
        self._producers.clear()
        self._ongoing.clear()
        self._unreplicated.clear()

    def remove_expired_producers(self, now_ms: int, expiration_ms: int) -> int:
        """Forget the producers whose last batch or marker is ``expiration_ms`` or more older
        than ``now_ms`` (Kafka's ``producer.id.expiration.ms``, measured on the batch's max
        timestamp as Kafka does) and that have no transaction open (Kafka keeps those); returns
        how many. A forgotten producer's next batch is taken at any sequence, as from a
        producer never seen."""
        expired = [
            pid
            for pid, entry in self._producers.items()
            if entry.current_txn_first_offset == _NO_OFFSET
            and now_ms - entry.last_timestamp >= expiration_ms
        ]
        for pid in expired:
            del self._producers[pid]
        if expired:
            _log.info(
                "producer_state.expired",
                topic=self._topic,
                partition=self._partition,
                producers=len(expired),
                remaining=len(self._producers),
            )
        return len(expired)

    def snapshot_entries(self) -> list[ProducerSnapshotEntry]:
        """The state as a snapshot holds it: the last batch of each producer."""
        return sorted(entry.snapshot_entry(pid) for pid, entry in self._producers.items())

    # --- snapshot files -------------------------------------------------------------------

    @property
    def latest_snapshot_offset(self) -> int | None:
        return max(self._snapshots, default=None)

    def take_snapshot(self, offset: int) -> Path | None:
        """Write the state as ``<offset>.snapshot``; ``offset`` is the log end offset it
        covers (the caller's state must hold every batch below it and none above)."""
        if self._log_dir is None:
            return None
        path = self._log_dir / snapshot_file_name(offset)
        entries = self.snapshot_entries()
        write_snapshot(path, entries)
        self._snapshots[offset] = path
        _log.debug(
            "producer_snapshot.written",
            topic=self._topic,
            partition=self._partition,
            offset=offset,
            producers=len(entries),
        )
        return path

    def truncate_and_reload(self, log_start_offset: int, log_end_offset: int) -> int | None:
        """Forget the in-memory state and load the newest usable snapshot at or below
        ``log_end_offset``; returns its offset (None: no snapshot, the state is empty).

        Snapshots above the log end offset describe offsets the log no longer has and are
        deleted, as are snapshots that fail their checks (with a warning). The caller replays
        the log from the returned offset (or from where it sees fit when None).
        """
        self.clear()
        if self._log_dir is None:
            return None
        self._snapshots = list_snapshot_files(self._log_dir)
        for offset in [o for o in self._snapshots if o > log_end_offset]:
            self._delete_snapshot(offset, "above the log end offset")
        for offset in sorted(self._snapshots, reverse=True):
            path = self._snapshots[offset]
            try:
                rows = read_snapshot(path)
            except (CorruptSnapshotError, OSError) as exc:
                _log.warning(
                    "producer_snapshot.corrupt",
                    topic=self._topic,
                    partition=self._partition,
                    file=path.name,
                    reason=str(exc),
                )
                self._delete_snapshot(offset, "corrupt")
                continue
            for row in rows:
                self._producers[row.producer_id] = _ProducerEntry.from_snapshot(row)
                if row.current_txn_first_offset != _NO_OFFSET:
                    self._ongoing[row.current_txn_first_offset] = row.producer_id
            _log.info(
                "producer_snapshot.loaded",
                topic=self._topic,
                partition=self._partition,
                offset=offset,
                producers=len(rows),
                log_start_offset=log_start_offset,
                log_end_offset=log_end_offset,
            )
            return offset
        return None

    def delete_snapshots_below(self, offset: int) -> None:
        """Retention moved the log start offset to ``offset``: delete the snapshots below it,
        except the newest snapshot, which is always kept."""
        newest = self.latest_snapshot_offset
        for snapshot in [o for o in self._snapshots if o < offset and o != newest]:
            self._delete_snapshot(snapshot, "below the log start offset")

    def truncate_fully(self) -> None:
        """The log restarts empty elsewhere: no producer and no snapshot survives."""
        self.clear()
        if self._log_dir is not None:
            self._snapshots = list_snapshot_files(self._log_dir)
        for offset in list(self._snapshots):
            self._delete_snapshot(offset, "log truncated fully")

    def _delete_snapshot(self, offset: int, reason: str) -> None:
        path = self._snapshots.pop(offset, None)
        if path is None:
            return
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        _log.debug(
            "producer_snapshot.deleted",
            topic=self._topic,
            partition=self._partition,
            offset=offset,
            reason=reason,
        )
