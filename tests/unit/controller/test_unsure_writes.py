"""The batched partition-state writes: what happens to a write
that landed when ZooKeeper answered it with an error and the read-back failed too (no
network: a fake store)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import cast

from kazoo.exceptions import ConnectionClosedError

from minikafka.controller.config import ControllerConfig
from minikafka.controller.partition_state_machine import PartitionStateMachine
from minikafka.controller.request_batch import RequestBatch
from minikafka.controller.state import ControllerContext, LiveBroker
from minikafka.controller.zk_data import BrokerRegistration
from minikafka.controller.zk_store import ZkStore
from minikafka.proto.cluster_state import BadZNodeVersionError, PartitionState, Versioned
from minikafka.proto.common import TopicPartition

EPOCH = 4
TP = TopicPartition("orders", 0)


class FlakyStates:
    """ZooKeeper's partition states; ``blip`` makes every call land its writes but answer
    with an error, and fail every read (a connection lost for longer than the retry
    deadline, as ZkStore's writes answer then); ``blip_at_write`` starts it at the next
    write (the decision read its state before)."""

    def __init__(self, state: PartitionState) -> None:
        self.znodes = {TP: Versioned(state, 0)}
        self.blip = False
        self.blip_at_write = False

    def get_partition_states(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, Versioned[PartitionState]]:
        if self.blip:
            raise ConnectionClosedError("connection closed")
        return {tp: self.znodes[tp] for tp in partitions if tp in self.znodes}

    def update_partition_states(
        self,
        updates: Mapping[TopicPartition, tuple[PartitionState, int]],
        *,
        controller_epoch_zk_version: int | None = None,
    ) -> dict[TopicPartition, int | Exception]:
        answers: dict[TopicPartition, int | Exception] = {}
        if self.blip_at_write:
            self.blip = True
        for tp, (state, expected) in updates.items():
            current = self.znodes[tp]
            if current.zk_version != expected:
                answers[tp] = BadZNodeVersionError(str(tp), expected)
                continue
            self.znodes[tp] = Versioned(state, expected + 1)
            answers[tp] = ConnectionClosedError("connection closed") if self.blip else expected + 1
        return answers

    def get_topic_config(self, topic: str) -> dict[str, str]:
        return {}


def _live(*ids: int) -> dict[int, LiveBroker]:
    return {b: LiveBroker(BrokerRegistration(b, ()), 100 + b) for b in ids}


def _leader_and_isr_targets(batch: RequestBatch) -> dict[int, set[TopicPartition]]:
    return {b: set(tps) for b, tps in batch._leader_and_isr.items()}


def test_a_landed_election_whose_read_back_failed_is_announced_at_a_later_event() -> None:
    # Broker 1, the leader, died; 2 and 3 are alive.
    zk = FlakyStates(PartitionState(1, 5, (1, 2, 3), EPOCH))
    ctx = ControllerContext(epoch=EPOCH, epoch_zk_version=7)
    ctx.live_brokers = _live(2, 3)
    ctx.topic_ids["orders"] = None
    ctx.assignments[TP] = (1, 2, 3)
    ctx.partition_states[TP] = zk.znodes[TP]
    machine = PartitionStateMachine(ctx, cast(ZkStore, zk), ControllerConfig)

    # Event 1 (broker 1 failed): the election of broker 2 lands in ZooKeeper, but the
    # connection is lost before its answer, and the read-back fails too.
    zk.blip_at_write = True
    first = RequestBatch(ctx, controller_id=9, listener_name="PLAINTEXT")
    machine.elect_for_failed_leaders({1}, first)
    machine.event_done()
    zk.blip = zk.blip_at_write = False
    assert zk.znodes[TP].value == PartitionState(2, 6, (2, 3), EPOCH)  # it landed
    assert _leader_and_isr_targets(first) == {}  # nobody was told (unknown outcome)

    # Event 2 (anything that runs online_partition_state_change over every partition, e.g.
    # a broker joining): ZooKeeper names broker 2 leader at epoch 6, which nobody has been
    # told. The controller must tell broker 2 (and 3), or the partition stays leaderless for
    # every broker and client until the next controller failover.
    ctx.live_brokers.update(_live(4))
    second = RequestBatch(ctx, controller_id=9, listener_name="PLAINTEXT")
    machine.online_partition_state_change(ctx.all_partitions(), second)
    assert ctx.partition_states[TP].value.leader == 2  # the re-read found it ...
    targets = _leader_and_isr_targets(second)
    assert TP in targets.get(2, set()), (  # ... but the new leader is never told
        f"the landed election of broker 2 was never announced: LeaderAndIsr went to {targets}"
    )
