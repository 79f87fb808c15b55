"""TransactionCoordinator with a fake clock, an in-memory __transaction_state, fake producer
ids and a fake marker writer: every transition, Kafka's errors for bad input, fencing,
failover, the marker retry rules, timeouts and expiration."""

from __future__ import annotations

import asyncio

import pytest

from minikafka.broker.group.coordinator import partition_for
from minikafka.broker.transaction.coordinator import MarkerEntry
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode, KafkaError
from minikafka.proto.records import assign_offsets, encode_batch
from minikafka.proto.transaction_log import (
    TransactionLogValue,
    TransactionState,
    encode_key,
    encode_value,
)

from .fakes import FakeStateLog, Harness, settle

TP0 = TopicPartition("out", 0)
TP1 = TopicPartition("out", 1)
E = ErrorCode


async def _started(**config: int) -> Harness:
    h = Harness(None, **config)
    await h.start()
    return h


async def _ongoing(h: Harness, tid: str = "t") -> tuple[int, int]:
    result = await h.coordinator.init_producer_id(tid, 60_000)
    assert result.error_code == E.NONE
    errors = await h.coordinator.add_partitions_to_txn(
        tid, result.producer_id, result.producer_epoch, [TP0, TP1]
    )
    assert errors == {TP0: E.NONE, TP1: E.NONE}
    return result.producer_id, result.producer_epoch


async def test_a_new_id_gets_a_producer_id_at_epoch_zero_and_a_record() -> None:
    h = await _started()
    result = await h.coordinator.init_producer_id("t", 60_000)
    assert result == (E.NONE, 1000, 0)
    ((key, value),) = h.log.records()
    assert key == "t"
    assert value == TransactionLogValue(
        1000, 0, 60_000, TransactionState.EMPTY, (), h.timers.now_ms, -1
    )


async def test_without_a_transactional_id_a_fresh_idempotent_producer_id() -> None:
    h = await _started()
    assert await h.coordinator.init_producer_id(None, 60_000) == (E.NONE, 1000, 0)
    assert await h.coordinator.init_producer_id(None, 60_000) == (E.NONE, 1001, 0)
    assert h.log.records() == []


async def test_producer_id_source_failure_is_answered() -> None:
    h = await _started()
    h.producer_ids.fail = KafkaError()
    assert (await h.coordinator.init_producer_id("t", 1000)).error_code == E.UNKNOWN_SERVER_ERROR


@pytest.mark.parametrize("timeout_ms", [0, -1, 900_001])
async def test_transaction_timeout_above_the_maximum_is_refused(timeout_ms: int) -> None:
    h = await _started()
    result = await h.coordinator.init_producer_id("t", timeout_ms)
    assert result == (E.INVALID_TRANSACTION_TIMEOUT, -1, -1)
    assert h.log.records() == []


async def test_commit_runs_prepare_markers_complete() -> None:
    h = await _started()
    pid, epoch = await _ongoing(h)
    assert h.state() == "Ongoing"
    assert await h.coordinator.end_txn("t", pid, epoch, True) == E.NONE
    await settle()
    assert h.writer.calls == [MarkerEntry(pid, epoch, 3, True, (TP0, TP1))]
    assert h.log.states() == ["Empty", "Ongoing", "PrepareCommit", "CompleteCommit"]
    prepare = h.log.records()[2][1]
    assert prepare is not None and set(prepare.partitions) == {TP0, TP1}
    assert h.state() == "CompleteCommit"
    # A retried EndTxn of the same outcome is answered NONE; the other outcome is refused.
    assert await h.coordinator.end_txn("t", pid, epoch, True) == E.NONE
    assert await h.coordinator.end_txn("t", pid, epoch, False) == E.INVALID_TXN_STATE
    # The next transaction starts from CompleteCommit.
    assert await h.coordinator.add_partitions_to_txn("t", pid, epoch, [TP1]) == {TP1: E.NONE}
    assert h.state() == "Ongoing"


async def test_abort_writes_abort_markers() -> None:
    h = await _started()
    pid, epoch = await _ongoing(h)
    assert await h.coordinator.end_txn("t", pid, epoch, False) == E.NONE
    await settle()
    assert h.writer.calls == [MarkerEntry(pid, epoch, 3, False, (TP0, TP1))]
    assert h.state() == "CompleteAbort"
    assert await h.coordinator.end_txn("t", pid, epoch, True) == E.INVALID_TXN_STATE


async def test_requests_while_the_markers_are_written() -> None:
    h = await _started()
    pid, epoch = await _ongoing(h)
    h.writer.gate = asyncio.Event()
    assert await h.coordinator.end_txn("t", pid, epoch, True) == E.NONE
    await settle()
    assert h.state() == "PrepareCommit"
    assert await h.coordinator.end_txn("t", pid, epoch, True) == E.CONCURRENT_TRANSACTIONS
    assert await h.coordinator.end_txn("t", pid, epoch, False) == E.CONCURRENT_TRANSACTIONS
    assert await h.coordinator.add_partitions_to_txn("t", pid, epoch, [TP0]) == {
        TP0: E.CONCURRENT_TRANSACTIONS
    }
    assert (await h.coordinator.init_producer_id("t", 1000)).error_code == (
        E.CONCURRENT_TRANSACTIONS
    )
    h.writer.gate.set()
    await settle()
    assert h.state() == "CompleteCommit"


async def test_end_txn_in_prepare_without_pending_markers() -> None:
    # PrepareCommit as loaded, before the markers start: same outcome is a retry to wait for,
    # the other one is refused.
    h = await _started()
    pid, epoch = await _ongoing(h)
    (_, current) = h.coordinator.state.get_transaction_state("t")
    assert current is not None
    current.metadata.state = TransactionState.PREPARE_COMMIT
    assert await h.coordinator.end_txn("t", pid, epoch, True) == E.CONCURRENT_TRANSACTIONS
    assert await h.coordinator.end_txn("t", pid, epoch, False) == E.INVALID_TXN_STATE


async def test_end_txn_without_a_transaction_is_invalid_txn_state() -> None:
    h = await _started()
    result = await h.coordinator.init_producer_id("t", 60_000)
    for committed in (True, False):
        code = await h.coordinator.end_txn("t", result.producer_id, 0, committed)
        assert code == E.INVALID_TXN_STATE
    assert h.log.states() == ["Empty"]


async def test_unknown_transactional_id_and_producer_id() -> None:
    h = await _started()
    assert await h.coordinator.end_txn("nobody", 1, 0, True) == E.INVALID_PRODUCER_ID_MAPPING
    assert await h.coordinator.add_partitions_to_txn("nobody", 1, 0, [TP0]) == {
        TP0: E.INVALID_PRODUCER_ID_MAPPING
    }
    assert await h.coordinator.add_offsets_to_txn("nobody", 1, 0, "g") == (
        E.INVALID_PRODUCER_ID_MAPPING
    )
    await h.coordinator.init_producer_id("t", 60_000)
    assert await h.coordinator.end_txn("t", 999, 0, True) == E.INVALID_PRODUCER_ID_MAPPING
    assert await h.coordinator.add_partitions_to_txn("t", 999, 0, [TP0]) == {
        TP0: E.INVALID_PRODUCER_ID_MAPPING
    }
    assert await h.coordinator.end_txn("", 1, 0, True) == E.INVALID_REQUEST
    assert (await h.coordinator.init_producer_id("", 1000)).error_code == E.INVALID_REQUEST
    assert h.log.states() == ["Empty"]


async def test_a_wrong_epoch_is_fenced_and_changes_nothing() -> None:
    h = await _started()
    pid, epoch = await _ongoing(h)
    assert await h.coordinator.add_partitions_to_txn("t", pid, epoch + 1, [TP0]) == {
        TP0: E.PRODUCER_FENCED
    }
    assert await h.coordinator.end_txn("t", pid, epoch + 1, True) == E.PRODUCER_FENCED
    assert await h.coordinator.end_txn("t", pid, epoch - 1, True) == E.PRODUCER_FENCED
    assert h.log.states() == ["Empty", "Ongoing"]


async def test_epoch_bump_fences_the_old_producer() -> None:
    h = await _started()
    first = await h.coordinator.init_producer_id("t", 60_000)
    second = await h.coordinator.init_producer_id("t", 60_000)
    assert (second.producer_id, second.producer_epoch) == (first.producer_id, 1)
    assert await h.coordinator.add_partitions_to_txn("t", first.producer_id, 0, [TP0]) == {
        TP0: E.PRODUCER_FENCED
    }
    assert await h.coordinator.add_offsets_to_txn("t", first.producer_id, 0, "g") == (
        E.PRODUCER_FENCED
    )
    assert await h.coordinator.add_partitions_to_txn("t", first.producer_id, 1, [TP0]) == {
        TP0: E.NONE
    }


async def test_init_with_an_ongoing_transaction_aborts_it_under_a_bumped_epoch() -> None:
    h = await _started()
    pid, epoch = await _ongoing(h)
    result = await h.coordinator.init_producer_id("t", 60_000)
    assert result.error_code == E.CONCURRENT_TRANSACTIONS
    await settle()
    # The abort markers carry the fencing epoch, never told to any client.
    assert h.writer.calls == [MarkerEntry(pid, epoch + 1, 3, False, (TP0, TP1))]
    assert h.log.states()[-2:] == ["PrepareAbort", "CompleteAbort"]
    prepare = h.log.records()[-2][1]
    assert prepare is not None and prepare.producer_epoch == epoch + 1
    # The zombie's commit is fenced; the new producer's retry bumps once more.
    assert await h.coordinator.end_txn("t", pid, epoch, True) == E.PRODUCER_FENCED
    assert await h.coordinator.init_producer_id("t", 60_000) == (E.NONE, pid, epoch + 2)


async def test_a_failed_fence_is_not_bumped_again() -> None:
    h = await _started()
    pid, epoch = await _ongoing(h)
    h.log.fail_with = [E.NOT_ENOUGH_REPLICAS]
    result = await h.coordinator.init_producer_id("t", 60_000)
    assert result.error_code == E.COORDINATOR_NOT_AVAILABLE
    assert h.state() == "Ongoing"
    assert await h.coordinator.init_producer_id("t", 60_000) == (E.CONCURRENT_TRANSACTIONS, -1, -1)
    await settle()
    assert h.writer.calls == [MarkerEntry(pid, epoch + 1, 3, False, (TP0, TP1))]
    assert await h.coordinator.init_producer_id("t", 60_000) == (E.NONE, pid, epoch + 2)


async def test_kip360_producer_id_and_epoch_in_the_request() -> None:
    h = await _started()
    first = await h.coordinator.init_producer_id("t", 60_000)
    pid = first.producer_id
    bumped = await h.coordinator.init_producer_id("t", 60_000, pid, 0)
    assert bumped == (E.NONE, pid, 1)
    # The answer was lost: the same request again gets the same epoch.
    assert await h.coordinator.init_producer_id("t", 60_000, pid, 0) == (E.NONE, pid, 1)
    assert await h.coordinator.init_producer_id("t", 60_000, pid + 5, 1) == (
        E.PRODUCER_FENCED,
        -1,
        -1,
    )
    assert (await h.coordinator.init_producer_id("t", 60_000, pid, 7)).error_code == (
        E.PRODUCER_FENCED
    )
    assert (await h.coordinator.init_producer_id("t", 60_000, pid, -1)).error_code == (
        E.INVALID_REQUEST
    )


async def test_an_exhausted_epoch_takes_a_new_producer_id() -> None:
    log = FakeStateLog()
    _write(
        log, "t", TransactionLogValue(77, 32766, 60_000, TransactionState.COMPLETE_COMMIT, (), 5, 1)
    )
    h = Harness(log)
    await h.start()
    # KIP-360: the producer at the exhausted epoch gets a new producer id at epoch 0 ...
    assert await h.coordinator.init_producer_id("t", 60_000, 77, 32766) == (E.NONE, 1000, 0)
    # ... and again when it retries because the answer was lost.
    assert await h.coordinator.init_producer_id("t", 60_000, 77, 32766) == (E.NONE, 1000, 0)
    assert await h.coordinator.init_producer_id("t", 60_000, 77, 100) == (E.PRODUCER_FENCED, -1, -1)
    assert await h.coordinator.init_producer_id("t", 60_000) == (E.NONE, 1000, 1)


async def test_add_offsets_adds_the_groups_offsets_partition() -> None:
    h = await _started(offsets_topic_num_partitions=7)
    result = await h.coordinator.init_producer_id("t", 60_000)
    code = await h.coordinator.add_offsets_to_txn("t", result.producer_id, 0, "my-group")
    assert code == E.NONE
    (description,) = h.coordinator.describe_transactions(["t"])
    expected = TopicPartition("__consumer_offsets", partition_for("my-group", 7))
    assert description.partitions == (expected,)
    assert await h.coordinator.end_txn("t", result.producer_id, 0, True) == E.NONE
    await settle()
    assert h.writer.calls[-1].partitions == (expected,)


async def test_adding_partitions_already_in_the_transaction_writes_nothing() -> None:
    h = await _started()
    pid, epoch = await _ongoing(h)
    assert await h.coordinator.add_partitions_to_txn("t", pid, epoch, [TP0]) == {TP0: E.NONE}
    assert h.log.states() == ["Empty", "Ongoing"]


async def test_concurrent_add_partitions_gets_concurrent_transactions() -> None:
    h = await _started()
    result = await h.coordinator.init_producer_id("t", 60_000)
    first = asyncio.ensure_future(
        h.coordinator.add_partitions_to_txn("t", result.producer_id, 0, [TP0])
    )
    await asyncio.sleep(0)
    second = await h.coordinator.add_partitions_to_txn("t", result.producer_id, 0, [TP1])
    assert second == {TP1: E.CONCURRENT_TRANSACTIONS}
    assert await first == {TP0: E.NONE}


@pytest.mark.parametrize(
    ("append_error", "answer"),
    [
        (E.NOT_ENOUGH_REPLICAS, E.COORDINATOR_NOT_AVAILABLE),
        (E.REQUEST_TIMED_OUT, E.COORDINATOR_NOT_AVAILABLE),
        (E.NOT_LEADER_OR_FOLLOWER, E.NOT_COORDINATOR),
        (E.MESSAGE_TOO_LARGE, E.UNKNOWN_SERVER_ERROR),
    ],
)
async def test_a_failed_append_changes_nothing(append_error: E, answer: E) -> None:
    h = await _started()
    result = await h.coordinator.init_producer_id("t", 60_000)
    h.log.fail_with = [append_error]
    assert await h.coordinator.add_partitions_to_txn("t", result.producer_id, 0, [TP0]) == {
        TP0: answer
    }
    assert h.state() == "Empty"
    assert await h.coordinator.add_partitions_to_txn("t", result.producer_id, 0, [TP0]) == {
        TP0: E.NONE
    }


async def test_verify_partitions_in_txn() -> None:
    h = await _started()
    pid, epoch = await _ongoing(h)
    other = TopicPartition("x", 0)
    verify = h.coordinator.verify_partitions_in_txn
    assert verify("t", pid, epoch, [TP0, other]) == {TP0: E.NONE, other: E.TRANSACTION_ABORTABLE}
    assert verify("t", pid, epoch + 1, [TP0]) == {TP0: E.PRODUCER_FENCED}
    assert verify("u", pid, epoch, [TP0]) == {TP0: E.INVALID_PRODUCER_ID_MAPPING}


# --- markers --------------------------------------------------------------------------------


async def test_markers_retry_retriable_errors_after_a_backoff() -> None:
    h = await _started()
    pid, epoch = await _ongoing(h)
    h.writer.script = {TP0: [E.NOT_LEADER_OR_FOLLOWER, E.UNKNOWN_TOPIC_OR_PARTITION]}
    assert await h.coordinator.end_txn("t", pid, epoch, True) == E.NONE
    await settle()
    assert [c.partitions for c in h.writer.calls] == [(TP0, TP1)]
    assert h.state() == "PrepareCommit"
    await h.timers.advance(100)
    assert [c.partitions for c in h.writer.calls] == [(TP0, TP1), (TP0,)]
    await h.timers.advance(100)
    assert [c.partitions for c in h.writer.calls] == [(TP0, TP1), (TP0,), (TP0,)]
    assert h.state() == "CompleteCommit"


async def test_a_lost_connection_resends_every_partition() -> None:
    h = await _started()
    pid, epoch = await _ongoing(h)
    h.writer.raise_next = 1
    await h.coordinator.end_txn("t", pid, epoch, False)
    await h.timers.advance(100)
    assert [c.partitions for c in h.writer.calls] == [(TP0, TP1), (TP0, TP1)]
    assert h.state() == "CompleteAbort"


async def test_a_deleted_partition_is_dropped() -> None:
    h = await _started()
    pid, epoch = await _ongoing(h)
    h.writer.script = {TP1: [E.UNKNOWN_TOPIC_OR_PARTITION]}
    await h.coordinator.end_txn("t", pid, epoch, True)
    await settle()
    h.deleted.add(TP1)
    await h.timers.advance(100)
    assert [c.partitions for c in h.writer.calls] == [(TP0, TP1)]
    assert h.state() == "CompleteCommit"


async def test_unsupported_version_drops_the_partition() -> None:
    h = await _started()
    pid, epoch = await _ongoing(h)
    h.writer.script = {TP1: [E.UNSUPPORTED_FOR_MESSAGE_FORMAT]}
    await h.coordinator.end_txn("t", pid, epoch, True)
    await settle()
    assert len(h.writer.calls) == 1 and h.state() == "CompleteCommit"


@pytest.mark.parametrize("error", [E.INVALID_PRODUCER_EPOCH, E.TRANSACTION_COORDINATOR_FENCED])
async def test_a_fenced_marker_stops_sending(error: E) -> None:
    h = await _started()
    pid, epoch = await _ongoing(h)
    h.writer.script = {TP0: [error]}
    await h.coordinator.end_txn("t", pid, epoch, True)
    await h.timers.advance(1000)
    assert len(h.writer.calls) == 1
    assert h.state() == "PrepareCommit"  # left to the newer producer or coordinator
    assert h.coordinator.markers.pending_transactional_ids == []


async def test_complete_append_is_retried_while_replicas_are_short() -> None:
    h = await _started()
    pid, epoch = await _ongoing(h)
    h.writer.gate = asyncio.Event()
    await h.coordinator.end_txn("t", pid, epoch, True)
    h.log.fail_with = [E.NOT_ENOUGH_REPLICAS, E.REQUEST_TIMED_OUT]
    h.writer.gate.set()
    await settle()
    assert h.state() == "PrepareCommit"
    await h.timers.advance(200)
    assert h.state() == "CompleteCommit"
    assert h.log.states() == ["Empty", "Ongoing", "PrepareCommit", "CompleteCommit"]


# --- leadership -----------------------------------------------------------------------------


def _write(log: FakeStateLog, tid: str, value: TransactionLogValue | None) -> None:
    data = encode_batch([(1, encode_key(tid), None if value is None else encode_value(value), ())])
    out, _ = assign_offsets(data, log.log_end_offset(0), 0)
    log.logs.setdefault(0, bytearray()).extend(out)


async def test_not_coordinator_and_load_in_progress() -> None:
    h = Harness()
    assert (await h.coordinator.init_producer_id("t", 1000)).error_code == E.NOT_COORDINATOR
    h.coordinator.on_elected(0)
    assert (await h.coordinator.init_producer_id("t", 1000)).error_code == (
        E.COORDINATOR_LOAD_IN_PROGRESS
    )
    assert h.coordinator.list_transactions().error_code == E.COORDINATOR_LOAD_IN_PROGRESS
    await settle()
    assert (await h.coordinator.init_producer_id("t", 1000)).error_code == E.NONE
    h.coordinator.on_leadership_change([], [("__transaction_state", 0)])
    assert (await h.coordinator.init_producer_id("t", 1000)).error_code == E.NOT_COORDINATOR
    assert h.coordinator.describe_transactions(["t"])[0].error_code == E.NOT_COORDINATOR


async def test_failover_completes_a_prepared_commit() -> None:
    log = FakeStateLog()
    log.epochs[0] = 9
    start = 500
    _write(log, "gone", TransactionLogValue(5, 0, 1000, TransactionState.EMPTY, (), 1, -1))
    _write(log, "t", TransactionLogValue(42, 3, 60_000, TransactionState.EMPTY, (), 1, -1))
    _write(log, "t", TransactionLogValue(42, 3, 60_000, TransactionState.ONGOING, (TP0,), 2, start))
    _write(
        log,
        "t",
        TransactionLogValue(42, 3, 60_000, TransactionState.PREPARE_COMMIT, (TP0, TP1), 3, start),
    )
    _write(log, "gone", None)
    h = Harness(log)
    h.coordinator.on_leadership_change([("__transaction_state", 0)], [])
    await settle()
    # The new coordinator finishes the commit under its own coordinator epoch.
    assert h.writer.calls == [MarkerEntry(42, 3, 9, True, (TP0, TP1))]
    assert h.state() == "CompleteCommit"
    assert h.log.states()[-1] == "CompleteCommit"
    complete = h.log.records()[-1][1]
    assert complete is not None and complete.start_timestamp_ms == start
    assert h.coordinator.describe_transactions(["gone"])[0].error_code == (
        E.TRANSACTIONAL_ID_NOT_FOUND
    )
    # The producer's retried EndTxn is answered NONE.
    assert await h.coordinator.end_txn("t", 42, 3, True) == E.NONE


async def test_a_key_of_an_unknown_version_is_skipped_on_load() -> None:
    log = FakeStateLog()
    _write(log, "t", TransactionLogValue(42, 3, 60_000, TransactionState.EMPTY, (), 1, -1))
    odd, _ = assign_offsets(encode_batch([(1, b"\x7f\x00junk", b"x", ())]), 1, 0)
    log.logs[0].extend(odd)
    h = Harness(log)
    await h.start()
    assert h.state() == "Empty"


async def test_resigning_stops_the_markers() -> None:
    h = await _started()
    pid, epoch = await _ongoing(h)
    h.writer.script = {TP0: [E.NOT_LEADER_OR_FOLLOWER]}
    await h.coordinator.end_txn("t", pid, epoch, True)
    await settle()
    h.coordinator.on_resigned(0)
    await h.timers.advance(1000)
    assert len(h.writer.calls) == 1
    assert h.log.states()[-1] == "PrepareCommit"  # the next coordinator finishes it


async def test_a_new_leader_epoch_reloads_and_restarts_the_markers() -> None:
    h = await _started()
    pid, epoch = await _ongoing(h)
    h.writer.script = {TP0: [E.NOT_LEADER_OR_FOLLOWER]}
    await h.coordinator.end_txn("t", pid, epoch, True)
    await settle()
    h.log.epochs[0] = 4
    h.coordinator.on_elected(0)
    await settle()
    assert [(c.coordinator_epoch, c.partitions) for c in h.writer.calls] == [
        (3, (TP0, TP1)),
        (4, (TP0, TP1)),  # the reloaded PrepareCommit names both
    ]
    await h.timers.advance(1000)
    assert len(h.writer.calls) == 2  # the old epoch's retry was dropped
    assert h.state() == "CompleteCommit"


# --- timeouts and expiration ----------------------------------------------------------------


async def test_a_timed_out_transaction_is_aborted_and_its_producer_fenced() -> None:
    h = await _started()
    result = await h.coordinator.init_producer_id("t", 15_000)
    pid = result.producer_id
    await h.coordinator.add_partitions_to_txn("t", pid, 0, [TP0])
    await h.timers.advance(10_000)
    assert h.state() == "Ongoing"  # 10 s < 15 s
    await h.timers.advance(10_000)
    assert h.writer.calls == [MarkerEntry(pid, 1, 3, False, (TP0,))]
    assert h.state() == "CompleteAbort"
    # The commit after the timeout: fenced, and nothing changes.
    assert await h.coordinator.end_txn("t", pid, 0, True) == E.PRODUCER_FENCED
    assert await h.coordinator.add_partitions_to_txn("t", pid, 0, [TP0]) == {TP0: E.PRODUCER_FENCED}
    assert h.log.states()[-1] == "CompleteAbort"
    assert await h.coordinator.init_producer_id("t", 15_000) == (E.NONE, pid, 2)


async def test_transactional_ids_expire_when_idle() -> None:
    h = await _started(
        transactional_id_expiration_ms=60_000,
        transaction_remove_expired_transaction_cleanup_interval_ms=30_000,
    )
    idle = await h.coordinator.init_producer_id("idle", 60_000)
    pid, epoch = await _ongoing(h, "busy")
    await h.timers.advance(30_000)
    assert h.state("idle") == "Empty"
    # Ongoing is never expired (it is aborted on its timeout, then expires).
    await h.coordinator.add_partitions_to_txn("busy", pid, epoch, [TopicPartition("z", 0)])
    await h.timers.advance(30_000)
    (gone,) = h.coordinator.describe_transactions(["idle"])
    assert gone.error_code == E.TRANSACTIONAL_ID_NOT_FOUND
    assert ("idle", None) in h.log.records()
    assert await h.coordinator.end_txn("idle", idle.producer_id, 0, True) == (
        E.INVALID_PRODUCER_ID_MAPPING
    )
    assert (await h.coordinator.init_producer_id("idle", 60_000)).producer_id != idle.producer_id


async def test_a_failed_tombstone_keeps_the_id() -> None:
    h = await _started(transactional_id_expiration_ms=10)
    await h.coordinator.init_producer_id("t", 60_000)
    h.timers.now_ms += 100
    h.log.fail_with = [E.NOT_ENOUGH_REPLICAS]
    await h.coordinator.remove_expired_transactional_ids()
    assert h.state() == "Empty"
    assert await h.coordinator.init_producer_id("t", 60_000) == (E.NONE, 1000, 1)


# --- admin ----------------------------------------------------------------------------------


async def test_describe_transactions() -> None:
    h = await _started()
    pid, epoch = await _ongoing(h)
    (d, missing, empty) = h.coordinator.describe_transactions(["t", "nope", ""])
    assert (d.error_code, d.state, d.producer_id, d.producer_epoch) == (
        E.NONE,
        "Ongoing",
        pid,
        epoch,
    )
    assert (d.transaction_timeout_ms, d.transaction_start_time_ms) == (60_000, h.timers.now_ms)
    assert d.partitions == (TP0, TP1)
    assert missing.error_code == E.TRANSACTIONAL_ID_NOT_FOUND
    assert empty.error_code == E.INVALID_REQUEST
    h.coordinator.shutdown()
    assert h.coordinator.describe_transactions(["t"])[0].error_code == (E.COORDINATOR_NOT_AVAILABLE)


async def test_list_transactions_filters() -> None:
    h = await _started()
    pid, _ = await _ongoing(h, "a")
    other = await h.coordinator.init_producer_id("b", 60_000)
    listing = h.coordinator.list_transactions
    assert [r.transactional_id for r in listing().transaction_states] == ["a", "b"]
    only = listing(states=["Ongoing", "Bogus"])
    assert (only.error_code, only.unknown_state_filters) == (E.NONE, ["Bogus"])
    assert only.transaction_states == [("a", pid, "Ongoing")]
    assert listing(producer_ids=[other.producer_id]).transaction_states == [
        ("b", other.producer_id, "Empty")
    ]
    await h.timers.advance(5_000)
    # v1: only transactions running longer than the duration (Empty counts from -1).
    longer = listing(duration_filter_ms=4_000).transaction_states
    assert [r.transactional_id for r in longer] == ["a", "b"]
    assert [r.transactional_id for r in listing(duration_filter_ms=6_000).transaction_states] == [
        "b"
    ]
