"""The ``.txnindex`` (Kafka's TransactionIndex): 34-byte entries, the file only once an entry
is written, truncation with the segment, the search a read_committed fetch makes, and the
segment's and log's handling of the file (roll, truncation, deletion, recovery)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from minikafka.broker.storage.index import CorruptIndexError
from minikafka.broker.storage.log import Log
from minikafka.broker.storage.txn_index import (
    ENTRY_SIZE,
    AbortedTxn,
    TransactionIndex,
    decode_entries,
)
from minikafka.proto.records import ControlType, encode_batch, encode_end_txn_marker
from tests.unit.storage.helpers import Clock, batch, small_config


def index(tmp_path: Path, base: int = 0) -> TransactionIndex:
    return TransactionIndex(tmp_path / f"{base:020d}.txnindex", base)


def test_an_entry_is_34_bytes_version_0_then_four_int64(tmp_path: Path) -> None:
    idx = index(tmp_path)
    assert not idx.path.exists()  # no file until an entry is written, as Kafka's
    idx.append(AbortedTxn(producer_id=7, first_offset=10, last_offset=15, last_stable_offset=12))
    idx.append(AbortedTxn(9, 11, 20, 21))
    idx.close()
    data = idx.path.read_bytes()
    assert ENTRY_SIZE == 34 and len(data) == 68
    assert data[:34] == struct.pack(">hqqqq", 0, 7, 10, 15, 12)
    assert TransactionIndex.read_entries(idx.path) == [(7, 10, 15, 12), (9, 11, 20, 21)]


def test_last_offsets_must_grow(tmp_path: Path) -> None:
    idx = index(tmp_path)
    idx.append(AbortedTxn(1, 0, 5, 6))
    with pytest.raises(ValueError, match="does not follow"):
        idx.append(AbortedTxn(2, 3, 5, 6))
    assert idx.entries == [AbortedTxn(1, 0, 5, 6)]


def test_truncate_drops_entries_whose_marker_is_at_or_above(tmp_path: Path) -> None:
    idx = index(tmp_path)
    for n in range(4):
        idx.append(AbortedTxn(n, 10 * n, 10 * n + 5, 10 * n + 6))
    idx.truncate_to(25)  # markers at 5, 15 stay; 25, 35 go
    assert [t.last_offset for t in idx.entries] == [5, 15]
    assert idx.path.stat().st_size == 2 * ENTRY_SIZE
    idx.append(AbortedTxn(9, 20, 22, 23))  # appends continue after the cut
    assert [t.last_offset for t in TransactionIndex.read_entries(idx.path)] == [5, 15, 22]


def test_collect_overlap_and_completeness(tmp_path: Path) -> None:
    idx = index(tmp_path)
    idx.append(AbortedTxn(1, 0, 4, 2))  # LSO 2: producer 2's txn was open from 2
    idx.append(AbortedTxn(2, 2, 9, 10))
    idx.append(AbortedTxn(3, 12, 14, 15))
    found = idx.collect(5, 9)
    assert found.aborted == [AbortedTxn(2, 2, 9, 10)] and found.is_complete
    found = idx.collect(0, 100)
    assert len(found.aborted) == 3 and not found.is_complete  # later segments may hold more
    assert idx.collect(10, 12).aborted == []  # [10, 12) holds none of them


def test_a_torn_entry_is_cut_and_a_bad_version_is_corrupt(tmp_path: Path) -> None:
    idx = index(tmp_path)
    idx.path.write_bytes(struct.pack(">hqqqq", 0, 1, 2, 3, 4) + b"\x00" * 10)
    assert idx.entries == [AbortedTxn(1, 2, 3, 4)]
    assert idx.path.stat().st_size == ENTRY_SIZE
    with pytest.raises(CorruptIndexError):
        decode_entries(struct.pack(">hqqqq", 1, 1, 2, 3, 4))


def _log(tmp_path: Path, **overrides: object) -> Log:
    return Log(tmp_path / "t-0", small_config(**overrides), time_ms=Clock())


def _txn_batch(pid: int) -> bytes:
    return encode_batch(
        [(1, b"k", b"v", ())],
        is_transactional=True,
        producer_id=pid,
        producer_epoch=0,
        base_sequence=0,
    )


def _abort(log: Log, pid: int, first: int) -> AbortedTxn:
    info = log.append_as_leader(
        encode_end_txn_marker(pid, 0, 0, ControlType.ABORT, 1), 0, allow_control=True
    )
    txn = AbortedTxn(pid, first, info.last_offset, info.last_offset + 1)
    log.active_segment.append_aborted_txn(txn)
    return txn


def test_the_log_collects_across_segments_and_truncation_cuts_the_entries(
    tmp_path: Path,
) -> None:
    log = _log(tmp_path)
    first = log.append_as_leader(_txn_batch(1), 0).first_offset
    one = _abort(log, 1, first)
    log.roll()
    second = log.append_as_leader(_txn_batch(2), 0).first_offset
    two = _abort(log, 2, second)
    assert log.collect_aborted_transactions(0, log.log_end_offset) == [one, two]
    # the first entry's LSO (2) reaches the bound: the second segment is not searched
    assert log.collect_aborted_transactions(0, 2) == [one]
    assert log.collect_aborted_transactions(2, 4) == [two]
    log.truncate_to(two.last_offset)  # the second marker goes, and its entry
    assert log.collect_aborted_transactions(0, log.log_end_offset) == [one]
    assert log.active_segment.txn_index.path.exists()  # empty now, but it had an entry
    log.close()


def test_a_roll_starts_without_a_file_and_retention_deletes_it(tmp_path: Path) -> None:
    log = _log(tmp_path, file_delete_delay_ms=0)
    first = log.append_as_leader(_txn_batch(1), 0).first_offset
    _abort(log, 1, first)
    old = log.active_segment.txn_index.path
    log.roll()
    assert not log.active_segment.txn_index.path.exists()
    log.append_as_leader(batch(1), 0)
    log.maybe_increment_log_start_offset(log.active_segment.base_offset)
    log.delete_old_segments(Clock()(), high_watermark=log.log_end_offset)
    assert not old.exists()
    assert not list(tmp_path.glob("t-0/*.deleted"))
    log.close()


def test_an_orphan_txnindex_is_deleted_at_load(tmp_path: Path) -> None:
    log = _log(tmp_path)
    log.append_as_leader(batch(1), 0)
    log.close()
    orphan = tmp_path / "t-0" / f"{500:020d}.txnindex"
    orphan.write_bytes(struct.pack(">hqqqq", 0, 1, 500, 501, 502))
    _log(tmp_path).close()
    assert not orphan.exists()
