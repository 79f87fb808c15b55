"""The transaction state machine: Kafka's valid transitions, pending states, KIP-360 epochs."""

from __future__ import annotations

import pytest

from minikafka.broker.transaction.transaction_metadata import (
    NO_PRODUCER_EPOCH,
    TransactionMetadata,
    TransactionStateError,
    TxnTransitMetadata,
)
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode
from minikafka.proto.transaction_log import TransactionState as S

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


def _metadata(state: S = S.EMPTY, epoch: int = 0) -> TransactionMetadata:
    partitions = () if state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT) else (TP0,)
    return TransactionMetadata(
        "txn", 7, epoch, 60_000, state, 100, partitions=partitions, txn_start_timestamp=50
    )


def _prepare(m: TransactionMetadata, target: S) -> TxnTransitMetadata:
    if target is S.EMPTY:
        result = m.prepare_increment_producer_epoch(60_000, None, 200)
        assert isinstance(result, TxnTransitMetadata)
        return result
    if target is S.ONGOING:
        return m.prepare_add_partitions([TP1], 200)
    if target in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
        return m.prepare_abort_or_commit(target, 200)
    if target in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
        return m.prepare_complete(200)
    if target is S.DEAD:
        return m.prepare_dead()
    return m.prepare_fence_producer_epoch()


# Kafka's TransactionState.validPreviousStates, written out independently of the code.
VALID = {
    (S.EMPTY, S.EMPTY), (S.COMPLETE_COMMIT, S.EMPTY), (S.COMPLETE_ABORT, S.EMPTY),
    (S.EMPTY, S.ONGOING), (S.ONGOING, S.ONGOING), (S.COMPLETE_COMMIT, S.ONGOING),
    (S.COMPLETE_ABORT, S.ONGOING),
    (S.ONGOING, S.PREPARE_COMMIT), (S.ONGOING, S.PREPARE_ABORT),
    (S.PREPARE_EPOCH_FENCE, S.PREPARE_ABORT),
    (S.PREPARE_COMMIT, S.COMPLETE_COMMIT), (S.PREPARE_ABORT, S.COMPLETE_ABORT),
    (S.EMPTY, S.DEAD), (S.COMPLETE_COMMIT, S.DEAD), (S.COMPLETE_ABORT, S.DEAD),
    (S.ONGOING, S.PREPARE_EPOCH_FENCE),
}  # fmt: skip


@pytest.mark.parametrize("source", list(S))
@pytest.mark.parametrize("target", list(S))
def test_only_kafkas_transitions_can_be_prepared(source: S, target: S) -> None:
    if target in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
        # prepare_complete picks its target from the state: test the pair it would pick
        target = S.COMPLETE_COMMIT if source is S.PREPARE_COMMIT else S.COMPLETE_ABORT
    m = _metadata(source)
    if (source, target) in VALID:
        transit = _prepare(m, target)
        assert transit.state is target
        assert m.pending_state is target
    else:
        with pytest.raises(TransactionStateError):
            _prepare(m, target)
        assert m.pending_state is None


def test_a_pending_state_blocks_another_transition() -> None:
    m = _metadata(S.EMPTY)
    m.prepare_add_partitions([TP0], 200)
    assert m.pending_transition_in_progress
    with pytest.raises(TransactionStateError):
        m.prepare_add_partitions([TP1], 201)


def test_add_partitions_then_commit_then_complete() -> None:
    m = _metadata(S.EMPTY, epoch=3)
    transit = m.prepare_add_partitions([TP0, TP1], 200)
    m.complete_transition_to(transit)
    assert (m.state, m.partitions, m.txn_start_timestamp) == (S.ONGOING, {TP0, TP1}, 200)
    m.complete_transition_to(m.prepare_add_partitions([TP1], 300))
    assert m.txn_start_timestamp == 200  # the transaction started at its first partition
    m.complete_transition_to(m.prepare_abort_or_commit(S.PREPARE_COMMIT, 400))
    assert m.state is S.PREPARE_COMMIT and m.partitions == {TP0, TP1}
    complete = m.prepare_complete(500)
    m.remove_partition(TP0)
    m.remove_partition(TP1)
    m.complete_transition_to(complete)
    assert (m.state, m.partitions, m.txn_last_update_timestamp) == (S.COMPLETE_COMMIT, set(), 500)
    with pytest.raises(TransactionStateError):
        m.remove_partition(TP0)  # only while the markers are being written


def test_completing_something_else_than_the_pending_state_is_refused() -> None:
    m = _metadata(S.EMPTY)
    transit = m.prepare_add_partitions([TP0], 200)
    m.pending_state = None
    with pytest.raises(TransactionStateError):
        m.complete_transition_to(transit)
    fence = _metadata(S.ONGOING)
    with pytest.raises(TransactionStateError):  # PrepareEpochFence is never completed
        fence.complete_transition_to(fence.prepare_fence_producer_epoch())


def test_epoch_bump_without_expected_epoch() -> None:
    m = _metadata(S.COMPLETE_COMMIT, epoch=4)
    transit = m.prepare_increment_producer_epoch(30_000, None, 200)
    assert isinstance(transit, TxnTransitMetadata)
    m.complete_transition_to(transit)
    assert (m.producer_epoch, m.last_producer_epoch, m.txn_timeout_ms) == (5, -1, 30_000)
    assert m.state is S.EMPTY and m.txn_start_timestamp == 50  # Empty keeps no start time


def test_kip360_expected_epoch_rules() -> None:
    m = _metadata(S.EMPTY, epoch=4)
    bumped = m.prepare_increment_producer_epoch(60_000, 4, 200)  # the current epoch: bump
    assert isinstance(bumped, TxnTransitMetadata)
    m.complete_transition_to(bumped)
    assert (m.producer_epoch, m.last_producer_epoch) == (5, 4)
    retry = m.prepare_increment_producer_epoch(60_000, 4, 300)  # the last: a lost answer
    assert isinstance(retry, TxnTransitMetadata)
    assert (retry.producer_epoch, retry.last_producer_epoch) == (5, 4)
    m.pending_state = None
    assert m.prepare_increment_producer_epoch(60_000, 2, 300) == ErrorCode.PRODUCER_FENCED
    assert m.pending_state is None


def test_a_new_id_starts_at_epoch_zero() -> None:
    m = TransactionMetadata("txn", 7, NO_PRODUCER_EPOCH, 1000, S.EMPTY, 0)
    transit = m.prepare_increment_producer_epoch(1000, None, 1)
    assert isinstance(transit, TxnTransitMetadata)
    m.complete_transition_to(transit)
    assert (m.producer_id, m.producer_epoch) == (7, 0)


def test_exhausted_epoch_rotates_the_producer_id() -> None:
    m = _metadata(S.COMPLETE_ABORT, epoch=32766)
    assert m.is_producer_epoch_exhausted
    with pytest.raises(TransactionStateError):
        m.prepare_increment_producer_epoch(1000, None, 1)
    transit = m.prepare_producer_id_rotation(8, 1000, 1, record_last_epoch=True)
    m.complete_transition_to(transit)
    assert (m.producer_id, m.producer_epoch, m.last_producer_id, m.last_producer_epoch) == (
        8,
        0,
        7,
        32766,
    )


def test_a_failed_fence_does_not_bump_twice() -> None:
    m = _metadata(S.ONGOING, epoch=4)
    assert m.prepare_fence_producer_epoch().producer_epoch == 5
    m.pending_state = None
    m.producer_epoch = 5  # the coordinator bumped in memory before its append failed
    m.has_failed_epoch_fence = True
    assert m.prepare_fence_producer_epoch().producer_epoch == 5
