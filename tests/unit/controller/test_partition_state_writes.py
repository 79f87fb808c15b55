"""The partition state machine's batched writes when ZooKeeper answers some of them with an
error other than a version conflict (no network: a fake store)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, cast

from kazoo.exceptions import ConnectionClosedError

from minikafka.controller import election
from minikafka.controller.config import ControllerConfig
from minikafka.controller.partition_state_machine import PartitionStateMachine
from minikafka.controller.request_batch import RequestBatch
from minikafka.controller.state import ControllerContext, LiveBroker
from minikafka.proto.cluster_state import BadZNodeVersionError, PartitionState, Versioned
from minikafka.proto.common import TopicPartition
from minikafka.zk.zk_data import BrokerRegistration
from minikafka.zk.zk_store import ZkStore

EPOCH = 4
LANDED = TopicPartition("orders", 0)  # its write landed, but its answer was an error
REFUSED = TopicPartition("orders", 1)  # its write met the error and did not land
WRITTEN = TopicPartition("orders", 2)  # written, answered
CONFLICT = TopicPartition("orders", 3)  # a leader changed the ISR first
# Its write landed but the answer was a version conflict: a request retried after a lost
# connection whose first attempt had landed.
RETRIED = TopicPartition("orders", 4)


class FakeStates:
    """The partition-state part of ZkStore, with chosen errors on the first batch."""

    def __init__(self, states: Mapping[TopicPartition, PartitionState]) -> None:
        self.znodes = {tp: Versioned(state, 0) for tp, state in states.items()}
        self.batches: list[set[TopicPartition]] = []
        self.failing_reads = False

    def get_partition_states(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, Versioned[PartitionState]]:
        if self.failing_reads:
            raise ConnectionClosedError("connection closed")
        return {tp: self.znodes[tp] for tp in partitions if tp in self.znodes}

    def update_partition_states(
        self,
        updates: Mapping[TopicPartition, tuple[PartitionState, int]],
        *,
        controller_epoch_zk_version: int | None = None,
    ) -> dict[TopicPartition, int | Exception]:
        first = not self.batches
        self.batches.append(set(updates))
        answers: dict[TopicPartition, int | Exception] = {}
        for tp, (state, expected) in updates.items():
            current = self.znodes[tp]
            if first and tp == REFUSED:
                answers[tp] = ConnectionClosedError("connection closed")
                continue
            if first and tp == CONFLICT:
                # the leader's ISR write lands just before ours
                self.znodes[tp] = current = Versioned(
                    PartitionState(current.value.leader, current.value.leader_epoch, (1, 3), 3),
                    current.zk_version + 1,
                )
            if current.zk_version != expected:
                answers[tp] = BadZNodeVersionError(str(tp), expected)
                continue
            self.znodes[tp] = Versioned(state, expected + 1)
            answers[tp] = expected + 1
            if first and tp == LANDED:
                answers[tp] = ConnectionClosedError("connection closed")
            elif first and tp == RETRIED:
                answers[tp] = BadZNodeVersionError(str(tp), expected + 1)
        return answers

    def get_topic_config(self, topic: str) -> dict[str, str]:
        return {}


def _machine(zk: FakeStates) -> tuple[PartitionStateMachine, ControllerContext]:
    ctx = ControllerContext(epoch=EPOCH, epoch_zk_version=7)
    for tp, state in zk.znodes.items():
        ctx.assignments[tp] = (1, 2, 3)
        ctx.partition_states[tp] = state
    machine = PartitionStateMachine(ctx, cast(ZkStore, zk), ControllerConfig)
    return machine, ctx


def _drop_replica_3(old: PartitionState) -> election.LeaderAndIsr | None:
    if 3 not in old.isr:
        return None
    return election.remove_replica_from_isr(old.leader, old.isr, 3)


def test_a_write_answered_with_an_error_is_read_back_and_announced_when_it_landed() -> None:
    before = PartitionState(1, 5, (1, 2, 3), 3)
    zk = FakeStates({tp: before for tp in (LANDED, REFUSED, WRITTEN, CONFLICT, RETRIED)})
    machine, ctx = _machine(zk)

    written = machine.update_many({tp: _drop_replica_3 for tp in zk.znodes}, "replica offline")

    after = PartitionState(1, 6, (1, 2), EPOCH)
    # Every partition's write is known, none raised: the landed ones were read back and
    # kept, the refused one and the one that lost to the leader were decided again and
    # written.
    assert written == {
        LANDED: after,
        REFUSED: after,
        WRITTEN: after,
        CONFLICT: PartitionState(1, 6, (1,), EPOCH),
        RETRIED: after,
    }
    assert zk.batches[1] == {REFUSED, CONFLICT}  # the landed writes were not made twice
    assert {tp: ctx.partition_states[tp] for tp in zk.znodes} == zk.znodes


def test_a_failed_read_back_leaves_the_others_written() -> None:
    before = PartitionState(1, 5, (1, 2, 3), 3)
    zk = FakeStates({tp: before for tp in (LANDED, WRITTEN)})
    machine, ctx = _machine(zk)
    real_update = zk.update_partition_states

    def update_then_lose_connection(*args: Any, **kwargs: Any) -> dict[TopicPartition, Any]:
        answers = real_update(*args, **kwargs)
        zk.failing_reads = True
        return answers

    zk.update_partition_states = update_then_lose_connection  # type: ignore[method-assign]

    written = machine.update_many({tp: _drop_replica_3 for tp in zk.znodes}, "replica offline")

    assert written == {WRITTEN: PartitionState(1, 6, (1, 2), EPOCH)}
    assert ctx.partition_states[WRITTEN] == Versioned(written[WRITTEN], 1)
    # Unknown: the cache keeps the state it had until the next decision about it re-reads.
    assert ctx.partition_states[LANDED] == Versioned(before, 0)


def test_a_landed_election_whose_read_back_failed_is_announced_at_a_later_event() -> None:
    # Broker 1, the leader, died; 2 and 3 are alive.
    zk = FakeStates({LANDED: PartitionState(1, 5, (1, 2, 3), EPOCH)})
    machine, ctx = _machine(zk)
    ctx.live_brokers = _live(2, 3)
    ctx.topic_ids["orders"] = None
    real_update = zk.update_partition_states

    def update_then_lose_connection(*args: Any, **kwargs: Any) -> dict[TopicPartition, Any]:
        answers = real_update(*args, **kwargs)  # LANDED: written, answered with an error
        zk.failing_reads = True
        return answers

    zk.update_partition_states = update_then_lose_connection  # type: ignore[method-assign]
    # Event 1 (broker 1 failed): the election of broker 2 lands, its answer and the read-back
    # fail: nobody is told.
    first = RequestBatch(ctx, controller_id=9, listener_name="PLAINTEXT")
    machine.elect_for_failed_leaders({1}, first)
    machine.event_done()
    zk.failing_reads = False
    assert zk.znodes[LANDED].value == PartitionState(2, 6, (2, 3), EPOCH)
    assert not first._leader_and_isr

    # Event 2 (a broker joins): nothing is left to decide, but the landed election has not
    # been announced: the new leader must hear of it, or the partition stays leaderless for
    # every broker and client until the next controller.
    ctx.live_brokers.update(_live(4))
    second = RequestBatch(ctx, controller_id=9, listener_name="PLAINTEXT")
    machine.online_partition_state_change(ctx.all_partitions(), second)
    assert ctx.partition_states[LANDED].value.leader == 2
    assert LANDED in second._leader_and_isr.get(2, {})
    assert zk.batches == [{LANDED}]  # found, not written again


def _live(*ids: int) -> dict[int, LiveBroker]:
    return {b: LiveBroker(BrokerRegistration(b, ()), 100 + b) for b in ids}
