"""``minikafka dump-log``: kafka-dump-log for our segment files.

For a ``.log``, one line per batch (and with ``--print-data-log`` or ``--deep-iteration`` one
``|``-prefixed line per record), in the field order of Kafka's DumpLogSegments, so output can be
compared with Kafka's side by side. For ``.index`` and ``.timeindex``, the entries, then a report
on stderr of entries that disagree with the ``.log`` beside them. For a producer-state
``.snapshot``, one line per producer as Kafka prints it (a corrupt snapshot is reported on
stderr with Kafka's message). For a ``.txnindex``, one line per aborted transaction as Kafka
prints it. A control batch's records say what they are, as Kafka's (``endTxnMarker: COMMIT
coordinatorEpoch: 3``, or ``controlType: NAME(id)``). Damaged data is reported (``isvalid:
false``, "Found N invalid bytes at the end"), never a crash.

``--transaction-info`` (this tool's, not Kafka's: Kafka's batch line holds the same fields
among others) prints, for a ``.log``, one line per batch with only what transactions need:
offsets, producer id and epoch, sequences, ``isTransactional``, ``isControl`` and a marker's
type and coordinator epoch.
"""

from __future__ import annotations

import argparse
import mmap
import os
import sys
from collections.abc import Iterator
from typing import BinaryIO, NamedTuple, TextIO

from minikafka.broker.replication.producer_state import (
    SNAPSHOT_SUFFIX,
    CorruptSnapshotError,
    ProducerSnapshotEntry,
    read_snapshot,
)
from minikafka.broker.storage.index import CorruptIndexError, OffsetIndex, TimeIndex
from minikafka.broker.storage.txn_index import TXN_INDEX_SUFFIX, AbortedTxn, TransactionIndex
from minikafka.proto.errors import KafkaError
from minikafka.proto.log_files import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    parse_log_file_name,
)
from minikafka.proto.records import (
    HEADER_SIZE,
    BatchHeader,
    ControlType,
    EndTxnMarker,
    Record,
    TimestampType,
    batch_crc,
    control_type_of,
    decode_batch,
    decode_end_txn_marker,
    end_txn_marker_of,
    iter_batch_headers,
    read_header,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--files",
        required=True,
        help="comma-separated .log, .index, .timeindex, .txnindex or .snapshot files to dump",
    )
    parser.add_argument(
        "--print-data-log",
        action="store_true",
        help="print each record's key and payload (implies --deep-iteration)",
    )
    parser.add_argument(
        "--deep-iteration", action="store_true", help="print one line per record, not just batches"
    )
    parser.add_argument(
        "--transaction-info",
        action="store_true",
        help="for .log files, one line per batch of its producer and transaction fields only",
    )
    parser.add_argument(
        "--verify-index-only",
        action="store_true",
        help="for index files, only report mismatches against the log",
    )


def run(args: argparse.Namespace) -> int:
    status = 0
    for path in (p for p in args.files.split(",") if p):
        try:
            # A file that cannot be read is the error alone: nothing is printed for it first.
            with open(path, "rb"):
                pass
            print(f"Dumping {path}")
            if path.endswith(LOG_SUFFIX) and args.transaction_info:
                dump_transaction_info(path)
            elif path.endswith(LOG_SUFFIX):
                dump_log(
                    path,
                    deep=args.deep_iteration or args.print_data_log,
                    print_data=args.print_data_log,
                )
            elif path.endswith(INDEX_SUFFIX):
                dump_offset_index(path, verify_only=args.verify_index_only)
            elif path.endswith(TIME_INDEX_SUFFIX):
                dump_time_index(path, verify_only=args.verify_index_only)
            elif path.endswith(SNAPSHOT_SUFFIX):
                dump_producer_snapshot(path)
            elif path.endswith(TXN_INDEX_SUFFIX):
                dump_txn_index(path)
            else:
                print(f"Ignoring unknown file {path}", file=sys.stderr)
        except OSError as exc:
            print(f"minikafka dump-log: cannot read {path}: {exc.strerror}", file=sys.stderr)
            status = 1
    return status


class FileBatch(NamedTuple):
    position: int
    header: BatchHeader
    data: bytes
    valid: bool


def base_offset_of(path: str) -> int:
    parsed = parse_log_file_name(os.path.basename(path))
    if parsed is None:
        raise SystemExit(f"minikafka dump-log: {path}: file name is not a 20-digit base offset")
    return parsed.offset


def read_batches(log: BinaryIO) -> Iterator[FileBatch]:
    """Every structurally complete batch of a .log file, with whether its CRC holds: the walk
    of proto.records.iter_batch_headers, the one LogSegment.iter_batches makes (this tool opens
    no LogSegment: that would create or rebuild the index files it inspects).

    Stops where the file no longer holds a whole batch; the caller reports the bytes left.
    """
    if os.fstat(log.fileno()).st_size == 0:
        return
    with (
        mmap.mmap(log.fileno(), 0, access=mmap.ACCESS_READ) as mapped,
        memoryview(mapped) as view,
    ):
        for position, header in iter_batch_headers(view):
            data = bytes(view[position : position + header.size])
            valid = header.magic == 2 and batch_crc(data, 0, len(data)) == header.crc
            yield FileBatch(position, header, data, valid)


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def format_batch(batch: FileBatch) -> str:
    h = batch.header
    ts_type = "LogAppendTime" if h.timestamp_type is TimestampType.LOG_APPEND_TIME else "CreateTime"
    try:
        codec = h.compression.name.lower()
    except KafkaError:  # codec 5-7: no codec Kafka defines
        codec = f"unknown({h.attributes & 0x07})"
    # A cleaned batch with tombstones carries the time they may go (KIP-534).
    delete_horizon = h.delete_horizon_ms
    horizon = "OptionalLong.empty" if delete_horizon is None else f"OptionalLong[{delete_horizon}]"
    return (
        f"baseOffset: {h.base_offset} lastOffset: {h.last_offset} count: {h.record_count} "
        f"baseSequence: {h.base_sequence} lastSequence: {h.last_sequence} "
        f"producerId: {h.producer_id} producerEpoch: {h.producer_epoch} "
        f"partitionLeaderEpoch: {h.partition_leader_epoch} "
        f"isTransactional: {_bool(h.is_transactional)} isControl: {_bool(h.is_control)} "
        f"deleteHorizonMs: {horizon} position: {batch.position} "
        f"{ts_type}: {h.max_timestamp} size: {h.size} magic: {h.magic} "
        f"compresscodec: {codec} crc: {h.crc} isvalid: {_bool(batch.valid)}"
    )


def dump_log(path: str, *, deep: bool, print_data: bool, out: TextIO | None = None) -> None:
    out = out or sys.stdout
    print(f"Log starting offset: {base_offset_of(path)}", file=out)
    valid_bytes = 0
    with open(path, "rb") as log:
        size = os.fstat(log.fileno()).st_size
        for batch in read_batches(log):
            print(format_batch(batch), file=out)
            valid_bytes += batch.header.size
            if deep:
                _dump_records(batch, print_data, out)
    if valid_bytes < size:
        print(
            f"Found {size - valid_bytes} invalid bytes at the end of {os.path.basename(path)}",
            file=out,
        )


def _dump_records(batch: FileBatch, print_data: bool, out: TextIO) -> None:
    header = batch.header
    ts_type = (
        "LogAppendTime" if header.timestamp_type is TimestampType.LOG_APPEND_TIME else "CreateTime"
    )
    try:
        _, records = decode_batch(batch.data, verify_crc=False)
    except KafkaError as exc:
        print(f"| cannot decode the records of this batch: {exc}", file=out)
        return
    for record in records:
        sequence = -1
        if header.base_sequence >= 0:
            sequence = (header.base_sequence + record.offset - header.base_offset) & 0x7FFFFFFF
        key_size = -1 if record.key is None else len(record.key)
        value_size = -1 if record.value is None else len(record.value)
        line = (
            f"| offset: {record.offset} {ts_type}: {record.timestamp} keySize: {key_size} "
            f"valueSize: {value_size} sequence: {sequence} "
            f"headerKeys: [{','.join(k for k, _ in record.headers)}]"
        )
        if header.is_control:
            line += " " + describe_control_record(record)
        if print_data and not header.is_control:
            if record.key is not None:
                line += f" key: {_text(record.key)}"
            if record.value is not None:
                line += f" payload: {_text(record.value)}"
        print(line, file=out)


# Kafka's ControlRecordType names, by id (only the markers are written here).
_CONTROL_TYPES = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
}


def describe_control_record(record: Record) -> str:
    """What Kafka's DumpLogSegments prints after a control record's metadata."""
    type_id = control_type_of(record.key)
    if type_id in (ControlType.ABORT, ControlType.COMMIT):
        try:
            marker = end_txn_marker_of(record)
        except KafkaError:
            pass  # printed by its type id below
        else:
            return _marker_text(marker)
    name = _CONTROL_TYPES.get(type_id if type_id is not None else -1, "UNKNOWN")
    return f"controlType: {name}({type_id if type_id is not None else -1})"


def format_transaction_info(batch: FileBatch) -> str:
    h = batch.header
    line = (
        f"baseOffset: {h.base_offset} lastOffset: {h.last_offset} "
        f"producerId: {h.producer_id} producerEpoch: {h.producer_epoch} "
        f"baseSequence: {h.base_sequence} lastSequence: {h.last_sequence} "
        f"isTransactional: {_bool(h.is_transactional)} isControl: {_bool(h.is_control)}"
    )
    if h.is_control:
        try:
            marker = decode_end_txn_marker(batch.data)
        except KafkaError:
            return line
        line += " " + _marker_text(marker)
    return line


def _marker_text(marker: EndTxnMarker) -> str:
    return f"endTxnMarker: {marker.control_type.name} coordinatorEpoch: {marker.coordinator_epoch}"


def dump_transaction_info(path: str, out: TextIO | None = None) -> None:
    out = out or sys.stdout
    print(f"Log starting offset: {base_offset_of(path)}", file=out)
    with open(path, "rb") as log:
        for batch in read_batches(log):
            print(format_transaction_info(batch), file=out)


def format_aborted_txn(txn: AbortedTxn) -> str:
    """Kafka's line for one ``.txnindex`` entry."""
    return (
        f"version: 0 producerId: {txn.producer_id} firstOffset: {txn.first_offset} "
        f"lastOffset: {txn.last_offset} lastStableOffset: {txn.last_stable_offset}"
    )


def dump_txn_index(path: str, out: TextIO | None = None) -> None:
    out = out or sys.stdout
    try:
        entries = TransactionIndex.read_entries(path)
    except CorruptIndexError as exc:
        print(str(exc), file=sys.stderr)
        return
    for txn in entries:
        print(format_aborted_txn(txn), file=out)


def _log_beside(index_path: str) -> str:
    return index_path.rsplit(".", 1)[0] + LOG_SUFFIX


def _batch_at(log: BinaryIO, position: int) -> BatchHeader | None:
    log.seek(position)
    head = log.read(HEADER_SIZE)
    if len(head) < HEADER_SIZE:
        return None
    return read_header(head)


def dump_offset_index(path: str, *, verify_only: bool, out: TextIO | None = None) -> None:
    out = out or sys.stdout
    base_offset = base_offset_of(path)
    entries = OffsetIndex.read_entries(path, base_offset)
    if not entries:
        print(f"{path} is empty.", file=out)
        return
    mismatches: list[tuple[int, int]] = []
    log_path = _log_beside(path)
    with open(log_path, "rb") as log:
        for offset, position in entries:
            header = _batch_at(log, position)
            log_offset = -1 if header is None else header.last_offset
            if log_offset != offset:
                mismatches.append((offset, log_offset))
            if not verify_only:
                print(f"offset: {offset} position: {position}", file=out)
    if mismatches:
        print(f"Mismatches in :{os.path.abspath(path)}", file=sys.stderr)
        for index_offset, log_offset in mismatches:
            print(f"  Index offset: {index_offset}, log offset: {log_offset}", file=sys.stderr)


def dump_time_index(path: str, *, verify_only: bool, out: TextIO | None = None) -> None:
    out = out or sys.stdout
    base_offset = base_offset_of(path)
    entries = TimeIndex.read_entries(path, base_offset)
    if not entries:
        print(f"{path} is empty.", file=out)
        return
    problems: list[str] = []
    batches: list[BatchHeader] = []
    with open(_log_beside(path), "rb") as log:
        batches = [b.header for b in read_batches(log)]
    previous = -1
    for timestamp, offset in entries:
        batch = next((b for b in batches if b.last_offset >= offset), None)
        if batch is None or batch.last_offset != offset:
            found = -1 if batch is None else batch.last_offset
            problems.append(f"Indexed offset: {offset}, found log offset: {found}")
        elif batch.max_timestamp != timestamp:
            problems.append(f"Index timestamp: {timestamp}, log timestamp: {batch.max_timestamp}")
        if previous >= timestamp:
            problems.append(
                f"Index timestamp: {timestamp}, Previously indexed timestamp: {previous}"
            )
        previous = timestamp
        if not verify_only:
            print(f"timestamp: {timestamp} offset: {offset}", file=out)
    if problems:
        print(f"Found time index mismatches in :{os.path.abspath(path)}", file=sys.stderr)
        for line in problems:
            print(f"  {line}", file=sys.stderr)


def format_snapshot_entry(entry: ProducerSnapshotEntry) -> str:
    """Kafka's line for one producer of a snapshot (Java's OptionalLong for the transaction)."""
    txn = (
        f"OptionalLong[{entry.current_txn_first_offset}]"
        if entry.current_txn_first_offset >= 0
        else "OptionalLong.empty"
    )
    line = (
        f"producerId: {entry.producer_id} producerEpoch: {entry.producer_epoch} "
        f"coordinatorEpoch: {entry.coordinator_epoch} currentTxnFirstOffset: {txn} "
        f"lastTimestamp: {entry.timestamp} "
    )
    if entry.last_offset >= 0:
        line += (
            f"firstSequence: {entry.first_sequence} lastSequence: {entry.last_sequence} "
            f"lastOffset: {entry.last_offset} offsetDelta: {entry.offset_delta} "
            f"timestamp: {entry.timestamp}"
        )
    return line


def dump_producer_snapshot(path: str, out: TextIO | None = None) -> None:
    out = out or sys.stdout
    try:
        entries = read_snapshot(path)
    except CorruptSnapshotError as exc:
        print(exc.message, file=sys.stderr)
        return
    for entry in entries:
        print(format_snapshot_entry(entry), file=out)
