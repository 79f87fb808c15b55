"""The batched partition-state writes against a real ZooKeeper: a multi-op that landed but
whose answer was lost (kazoo's ConnectionLoss) is retried by ZkStore, and each partition still
gets an answer its caller can read back."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kazoo.exceptions import ConnectionLoss

from minikafka.proto.cluster_state import BadZNodeVersionError, PartitionState, Versioned
from minikafka.proto.common import TopicPartition
from minikafka.zk.zk_data import TopicAssignment, random_uuid_base64
from minikafka.zk.zk_store import ZkStore

pytestmark = pytest.mark.integration


@pytest.fixture
def store(zk_connect: str) -> Iterator[ZkStore]:
    zk = ZkStore.connect(zk_connect, session_timeout_ms=6000)
    zk.ensure_paths()
    yield zk
    zk.close()


def _lose_first_answer(zk: ZkStore, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The first multi-op committed lands, but its caller is answered ConnectionLoss."""
    lost: list[int] = []
    real: Callable[[], Any] = zk.client.transaction

    def transaction() -> Any:
        txn = real()
        commit_async = txn.commit_async

        def landed_then_lost() -> Any:
            result = commit_async()
            if lost:
                return result
            lost.append(len(txn.operations))
            result.get()  # landed
            failed = zk.client.handler.async_result()
            failed.set_exception(ConnectionLoss())
            return failed

        txn.commit_async = landed_then_lost
        return txn

    monkeypatch.setattr(zk.client, "transaction", transaction)
    return lost


def test_a_landed_batch_whose_answer_was_lost_answers_each_partition(
    store: ZkStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    count = 450
    store.create_topic(
        TopicAssignment("retried", random_uuid_base64(), {p: (1, 2) for p in range(count)})
    )
    elected = store.elect_controller(broker_id=1)
    assert elected is not None
    tps = [TopicPartition("retried", p) for p in range(count)]
    first = {tp: PartitionState(1, 0, (1, 2), elected.value) for tp in tps}
    assert set(
        store.create_partition_states(
            first, controller_epoch_zk_version=elected.zk_version
        ).values()
    ) == {0}

    lost = _lose_first_answer(store, monkeypatch)
    new = PartitionState(2, 1, (2,), elected.value)
    answers = store.update_partition_states(
        {tp: (new, 0) for tp in tps}, controller_epoch_zk_version=elected.zk_version
    )
    assert lost == [201]  # the check on /controller_epoch and 200 writes
    landed = [tp for tp, a in answers.items() if isinstance(a, BadZNodeVersionError)]
    assert landed == tps[:200]  # the landed batch: refused on retry, read back by the caller
    assert all(answers[tp] == 1 for tp in tps[200:])
    assert store.get_partition_states(tps) == {tp: Versioned(new, 1) for tp in tps}

    # a leader's ISR writes (not fenced): the same, each on its own version
    lost.clear()
    grown = PartitionState(2, 1, (1, 2), elected.value)
    leader_answers = store.update_partition_states({tp: (grown, 1) for tp in tps})
    assert lost == [200]  # no /controller_epoch check in a leader's multi-op
    assert [tp for tp, a in leader_answers.items() if isinstance(a, BadZNodeVersionError)] == (
        tps[:200]
    )
    assert store.get_partition_states(tps) == {tp: Versioned(grown, 2) for tp in tps}
