"""Transactions on the log side (KIP-98): the producer state's open and completed
transactions and its refusals, the last stable offset, the ``.txnindex`` entries leader and
follower write alike, and their survival through snapshots, truncation and recovery."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from minikafka.broker.replication.partition import Partition, PartitionRegistration
from minikafka.broker.replication.producer_state import (
    AppendOrigin,
    CompletedTxn,
    ProducerStateManager,
    read_snapshot,
)
from minikafka.broker.storage.config import LogConfig
from minikafka.broker.storage.log import Log
from minikafka.broker.storage.txn_index import AbortedTxn
from minikafka.proto.errors import ErrorCode, KafkaError
from minikafka.proto.records import (
    ControlType,
    EndTxnMarker,
    encode_batch,
    encode_end_txn_marker,
    read_header,
)
from tests.unit.storage.helpers import read_all

T = time.time_ns() // 1_000_000  # markers are stamped now: records too (segment.ms rolls)
COMMIT, ABORT = ControlType.COMMIT, ControlType.ABORT


def txn(pid: int, seq: int, *values: bytes, epoch: int = 0, transactional: bool = True) -> bytes:
    return encode_batch(
        [(T, b"k", v, ()) for v in values],
        is_transactional=transactional,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
    )


def leader(tmp_path: Path, name: str = "t-0", config: LogConfig | None = None) -> Partition:
    partition = Partition(Log(tmp_path / name, config or LogConfig()), 1)
    partition.make_leader(
        PartitionRegistration(1, 1, (1,), (1,), partition_epoch=0, controller_epoch=1), 0
    )
    return partition


def refused(call: object, *args: object, **kwargs: object) -> int:
    with pytest.raises(KafkaError) as info:
        call(*args, **kwargs)  # type: ignore[operator]
    return int(info.value.code)


def raise_hw(partition: Partition) -> None:
    partition.maybe_increment_high_watermark()  # a one-replica ISR: HW = LEO


# --- producer state ---------------------------------------------------------------------------


def test_a_transaction_opens_at_its_first_batch_and_a_marker_completes_it() -> None:
    state = ProducerStateManager()
    first = read_header(txn(7, 0, b"a"))._replace(base_offset=10)
    second = read_header(txn(7, 1, b"b"))._replace(base_offset=11)
    assert state.update([first, second]) == []
    assert state.ongoing_transactions == {7: 10} and state.first_unstable_offset == 10
    marker = read_header(encode_end_txn_marker(7, 0, 3, ABORT, T))._replace(base_offset=12)
    done = state.update([marker], {12: EndTxnMarker(ABORT, 3)})
    assert done == [CompletedTxn(7, 10, 12, True, 13)]
    assert state.ongoing_transactions == {}
    assert state.first_unstable_offset == 10  # until the HW passes the marker
    state.on_high_watermark_updated(12)
    assert state.first_unstable_offset == 10
    state.on_high_watermark_updated(13)
    assert state.first_unstable_offset is None
    [producer] = state.active_producers()
    assert (producer.coordinator_epoch, producer.current_txn_start_offset) == (3, -1)


def test_the_entry_lso_is_the_oldest_other_open_transaction() -> None:
    state = ProducerStateManager()
    state.update([read_header(txn(1, 0, b"a"))._replace(base_offset=0)])
    state.update([read_header(txn(2, 0, b"b"))._replace(base_offset=1)])
    marker = read_header(encode_end_txn_marker(2, 0, 0, ABORT, T))._replace(base_offset=2)
    [done] = state.update([marker], {2: EndTxnMarker(ABORT, 0)})
    assert done.last_stable_offset == 0  # producer 1's transaction, still open from 0


def test_leader_refusals(tmp_path: Path) -> None:
    partition = leader(tmp_path)
    partition.append_records_to_leader(txn(7, 0, b"a", epoch=2), -1)
    # a non-transactional batch while the producer's transaction is open
    plain = txn(7, 1, b"b", epoch=2, transactional=False)
    assert refused(partition.append_records_to_leader, plain, -1) == ErrorCode.INVALID_TXN_STATE
    # a marker of an older producer epoch, then of an older coordinator epoch
    marker = partition.append_end_txn_marker
    assert refused(marker, 7, 1, 5, COMMIT) == ErrorCode.INVALID_PRODUCER_EPOCH
    partition.append_end_txn_marker(7, 2, 5, COMMIT)
    assert refused(marker, 7, 2, 4, ABORT) == ErrorCode.TRANSACTION_COORDINATOR_FENCED
    # nothing of the refusals was written: a, the marker
    assert partition.log_end_offset == 2
    # a coordinator's batch (sequence 0 every time) passes; a client's repeat is a duplicate
    offsets = txn(9, 0, b"o")
    assert (
        partition.append_records_to_leader(offsets, -1, AppendOrigin.COORDINATOR).first_offset == 2
    )
    partition.append_end_txn_marker(9, 0, 0, COMMIT)
    assert (
        partition.append_records_to_leader(offsets, -1, AppendOrigin.COORDINATOR).first_offset == 4
    )
    assert refused(partition.append_records_to_leader, txn(9, 5, b"x"), -1) == (
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    )


def test_an_open_transaction_keeps_its_producer_from_expiring() -> None:
    state = ProducerStateManager()
    state.update([read_header(txn(1, 0, b"a"))._replace(base_offset=0)])
    state.update([read_header(txn(2, 0, b"b", transactional=False))._replace(base_offset=1)])
    assert state.remove_expired_producers(T + 10**9, 1000) == 1
    assert [p.producer_id for p in state.active_producers()] == [1]


# --- the partition: LSO, .txnindex, replicas ------------------------------------------------------


def test_the_lso_stops_at_an_open_transaction_and_at_an_unreplicated_marker(tmp_path: Path) -> None:
    partition = leader(tmp_path)
    partition.append_records_to_leader(txn(0, 0, b"plain", transactional=False), -1)  # offset 0
    partition.append_records_to_leader(txn(7, 0, b"a", b"b"), -1)  # 1-2
    raise_hw(partition)
    assert (partition.high_watermark, partition.last_stable_offset) == (3, 1)
    partition.append_end_txn_marker(7, 0, 0, COMMIT)  # 3
    # the marker is not below the HW yet: the transaction still holds the LSO
    assert (partition.high_watermark, partition.last_stable_offset) == (3, 1)
    raise_hw(partition)
    assert partition.last_stable_offset == partition.high_watermark == 4


def test_leader_and_follower_write_the_same_txnindex(tmp_path: Path) -> None:
    lead = leader(tmp_path, "t-0")
    lead.append_records_to_leader(txn(1, 0, b"a"), -1)  # 0, producer 1 opens
    lead.append_records_to_leader(txn(2, 0, b"b"), -1)  # 1, producer 2 opens
    lead.append_end_txn_marker(2, 0, 0, ABORT)  # 2: LSO then = 0 (producer 1 open)
    lead.append_records_to_leader(txn(1, 1, b"c"), -1)  # 3
    lead.append_end_txn_marker(1, 0, 0, ABORT)  # 4: LSO then = 5
    expected = [AbortedTxn(2, 1, 2, 0), AbortedTxn(1, 0, 4, 5)]
    assert lead.aborted_transactions(0, 5) == expected
    follower = Partition(Log(tmp_path / "f" / "t-0", LogConfig()), 2)
    data = read_all(lead.log)
    follower.append_records_as_follower(data)  # all five batches in one fetch
    assert follower.aborted_transactions(0, 5) == expected
    lead_file = lead.log.active_segment.txn_index.path
    assert lead_file.read_bytes() == follower.log.active_segment.txn_index.path.read_bytes()
    assert len(lead_file.read_bytes()) == 68
    follower.update_follower_high_watermark(3)
    assert follower.last_stable_offset == 0  # producer 1's marker (4) is not below the HW
    follower.update_follower_high_watermark(5)
    assert follower.last_stable_offset == 5
    assert lead.aborted_transactions(3, 5) == [AbortedTxn(1, 0, 4, 5)]


def test_a_snapshot_keeps_an_open_transaction(tmp_path: Path) -> None:
    partition = leader(tmp_path)
    partition.append_records_to_leader(txn(7, 0, b"a"), -1)
    partition.append_end_txn_marker(7, 0, 4, COMMIT)
    partition.append_records_to_leader(txn(7, 1, b"b"), -1)  # opens at 2
    partition.log.close()  # snapshot at the LEO
    [row] = read_snapshot(tmp_path / "t-0" / f"{3:020d}.snapshot")
    assert (row.coordinator_epoch, row.current_txn_first_offset) == (4, 2)
    reopened = leader(tmp_path)
    assert reopened.producer_state.ongoing_transactions == {7: 2}
    raise_hw(reopened)
    assert reopened.last_stable_offset == 2
    reopened.append_end_txn_marker(7, 0, 4, ABORT)
    assert reopened.aborted_transactions(0, 10) == [AbortedTxn(7, 2, 3, 4)]
    assert refused(reopened.append_end_txn_marker, 7, 0, 3, COMMIT) == (
        ErrorCode.TRANSACTION_COORDINATOR_FENCED
    )


def test_truncation_drops_the_entries_and_reopens_the_transaction(tmp_path: Path) -> None:
    partition = leader(tmp_path)
    partition.append_records_to_leader(txn(7, 0, b"a"), -1)
    partition.append_end_txn_marker(7, 0, 0, ABORT)  # 1
    assert partition.aborted_transactions(0, 2) == [AbortedTxn(7, 0, 1, 2)]
    partition.truncate_to(1, "test")  # the marker goes
    assert partition.aborted_transactions(0, 2) == []
    assert partition.producer_state.ongoing_transactions == {7: 0}
    assert partition.log.active_segment.txn_index.path.stat().st_size == 0


def test_recovery_rebuilds_a_deleted_txnindex(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=300)
    partition = leader(tmp_path, config=config)
    partition.append_records_to_leader(txn(1, 0, b"a" * 50), -1)
    partition.append_records_to_leader(txn(2, 0, b"b" * 50), -1)
    partition.append_end_txn_marker(2, 0, 0, ABORT)
    partition.append_records_to_leader(txn(3, 0, b"c" * 50), -1)
    partition.append_end_txn_marker(1, 0, 0, ABORT)
    partition.append_end_txn_marker(3, 0, 0, COMMIT)
    before = partition.aborted_transactions(0, 100)
    assert before == [AbortedTxn(2, 1, 2, 0), AbortedTxn(1, 0, 4, 3)]
    files = {p.name: p.read_bytes() for p in (tmp_path / "t-0").glob("*.txnindex")}
    assert len(files) >= 1
    partition.log.flush()
    partition.log.close()
    for name in files:
        os.unlink(tmp_path / "t-0" / name)
    for snapshot in (tmp_path / "t-0").glob("*.snapshot"):
        os.unlink(snapshot)
    # an unclean restart below the data: recovery re-reads every segment
    log = Log(tmp_path / "t-0", config, recovery_point=0, had_clean_shutdown=False)
    assert log.txn_index_rebuild_offset == 0 and log.recovery_point == 0
    reopened = Partition(log, 1)
    assert reopened.aborted_transactions(0, 100) == before
    assert {p.name: p.read_bytes() for p in (tmp_path / "t-0").glob("*.txnindex")} == files
    assert log.txn_index_rebuild_offset is None
    assert log.recovery_point == log.log_end_offset
