"""Partition reassignment (KIP-455) in the controller, on a fake ZooKeeper and fake channels:
the replica sets it writes, the states it elects, the requests it sends, at each step."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

import pytest

from minikafka.controller.channels import BrokerChannels
from minikafka.controller.config import ControllerConfig
from minikafka.controller.partition_state_machine import PartitionStateMachine
from minikafka.controller.reassignment import ReassignmentManager, validate_target_replicas
from minikafka.controller.request_batch import RequestBatch
from minikafka.controller.state import ControllerContext, LiveBroker, ReplicaAssignment
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto.cluster_state import BadZNodeVersionError, PartitionState, Versioned
from minikafka.proto.common import EndPoint, TopicPartition
from minikafka.proto.errors import ErrorCode
from minikafka.zk.zk_data import BrokerRegistration, TopicAssignment
from minikafka.zk.zk_store import Watch, ZkStore

EPOCH = 3
TP = TopicPartition("orders", 0)


# --- the value type -------------------------------------------------------------------------


def test_reassign_to_puts_the_target_first_and_names_adding_and_removing() -> None:
    moved = ReplicaAssignment((0, 1, 2)).reassign_to((1, 2, 3))
    assert moved == ReplicaAssignment((1, 2, 3, 0), (3,), (0,))
    assert moved.origin_replicas == (1, 2, 0)
    assert moved.target_replicas == (1, 2, 3)
    # A new target replaces the old one; the origin stays what it was.
    again = moved.reassign_to((4, 5, 6))
    assert again == ReplicaAssignment((4, 5, 6, 1, 2, 0), (4, 5, 6), (1, 2, 0))
    # Back to the origin: nothing left to add or remove (Kafka's cancellation).
    assert not moved.reassign_to(moved.origin_replicas).is_being_reassigned


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ((), "Empty replica list specified in partition reassignment."),
        ((1, 1, 2), "Duplicate replica ids in partition reassignment replica list: [1, 1, 2]"),
        ((1, -1, 2), "Invalid broker id in replica list: [1, -1, 2]"),
        ((1, 2, 9), "Replica assignment has brokers that are not alive. Replica list: [9], "
         "live broker list: [0, 1, 2, 3]"),
    ],
)  # fmt: skip
def test_bad_targets_are_invalid_replica_assignments(target: tuple[int, ...], message: str) -> None:
    refused = validate_target_replicas(ReplicaAssignment((0, 1, 2)), target, {0, 1, 2, 3})
    assert refused is not None
    assert (refused.error, refused.message) == (ErrorCode.INVALID_REPLICA_ASSIGNMENT, message)


def test_a_dead_broker_already_assigned_may_stay() -> None:
    # Only the replicas being added must be alive (Kafka's check).
    assert validate_target_replicas(ReplicaAssignment((0, 1, 2)), (2, 1, 0), {1, 2}) is None


# --- the manager ----------------------------------------------------------------------------


class FakeZk:
    """The parts of ZkStore the reassignment uses: one topic's znode, its partition states and
    /admin/reassign_partitions."""

    def __init__(self, replicas: Sequence[int], state: PartitionState) -> None:
        self.topic = Versioned(TopicAssignment("orders", "id", {0: tuple(replicas)}), 0)
        self.states = {TP: Versioned(state, 0)}
        self.legacy: dict[TopicPartition, tuple[int, ...]] | None = None

    def get_topic(self, topic: str) -> Versioned[TopicAssignment] | None:
        return self.topic if topic == "orders" else None

    def update_topic(
        self, assignment: TopicAssignment, expected: int, *, controller_epoch_zk_version: int
    ) -> int:
        if expected != self.topic.zk_version:
            raise BadZNodeVersionError("/brokers/topics/orders", expected)
        self.topic = Versioned(assignment, expected + 1)
        return expected + 1

    def get_partition_states(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, Versioned[PartitionState]]:
        return {tp: self.states[tp] for tp in partitions if tp in self.states}

    def update_partition_states(
        self,
        updates: Mapping[TopicPartition, tuple[PartitionState, int]],
        *,
        controller_epoch_zk_version: int | None = None,
    ) -> dict[TopicPartition, int | Exception]:
        answers: dict[TopicPartition, int | Exception] = {}
        for tp, (state, expected) in updates.items():
            if self.states[tp].zk_version != expected:
                answers[tp] = BadZNodeVersionError(str(tp), expected)
                continue
            self.states[tp] = Versioned(state, expected + 1)
            answers[tp] = expected + 1
        return answers

    def leader_writes_isr(self, isr: tuple[int, ...]) -> None:
        """The leader added a caught-up replica to the ISR."""
        current = self.states[TP]
        self.states[TP] = Versioned(
            dataclasses.replace(current.value, isr=isr), current.zk_version + 1
        )

    def get_partition_reassignment(self) -> dict[TopicPartition, tuple[int, ...]] | None:
        return self.legacy

    def set_partition_reassignment(
        self,
        reassignment: Mapping[TopicPartition, Sequence[int]],
        *,
        controller_epoch_zk_version: int,
    ) -> None:
        self.legacy = {tp: tuple(r) for tp, r in reassignment.items()} or None

    def get_topic_config(self, topic: str) -> dict[str, str]:
        return {}


class FakeChannels:
    def __init__(self) -> None:
        self.sent: list[tuple[int, Any]] = []

    def send(self, broker_id: int, request: Any, callback: Any = None) -> None:
        self.sent.append((broker_id, request))

    def leader_and_isr(self) -> dict[int, pb.LeaderAndIsrRequest.LeaderAndIsrPartitionState]:
        return {
            b: r.partition_states[0]
            for b, r in self.sent
            if isinstance(r, pb.LeaderAndIsrRequest) and r.partition_states
        }

    def stop_replica(self) -> dict[int, pb.StopReplicaRequest.StopReplicaPartitionState]:
        return {
            b: r.partition_states[0] for b, r in self.sent if isinstance(r, pb.StopReplicaRequest)
        }


class Setup:
    def __init__(
        self,
        replicas: Sequence[int] = (0, 1, 2),
        state: PartitionState | None = None,
        live: Iterable[int] = (0, 1, 2, 3),
    ) -> None:
        state = state or PartitionState(0, 5, tuple(replicas), EPOCH)
        self.zk = FakeZk(replicas, state)
        self.ctx = ControllerContext(epoch=EPOCH, epoch_zk_version=9)
        self.ctx.live_brokers = {
            b: LiveBroker(BrokerRegistration(b, (EndPoint("PLAINTEXT", "h", 9000 + b),)), 10 + b)
            for b in live
        }
        self.ctx.add_topic("orders", "id", {0: tuple(replicas)})
        self.ctx.partition_states[TP] = self.zk.states[TP]
        self.channels = FakeChannels()
        self.watched: list[TopicPartition] = []
        self.cancelled: list[TopicPartition] = []
        partitions = PartitionStateMachine(self.ctx, cast(ZkStore, self.zk), ControllerConfig)
        self.partitions = partitions
        self.manager = ReassignmentManager(
            self.ctx,
            cast(ZkStore, self.zk),
            partitions,
            lambda: RequestBatch(self.ctx, controller_id=0, listener_name="PLAINTEXT"),
            cast(BrokerChannels, self.channels),
            self._watch,
        )

    def _watch(self, tp: TopicPartition) -> Watch:
        self.watched.append(tp)
        setup = self

        class _Watch(Watch):
            def cancel(self) -> None:
                setup.cancelled.append(tp)
                super().cancel()

        return _Watch()

    def znode(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        a = self.zk.topic.value
        return a.partitions[0], a.adding_replicas.get(0, ()), a.removing_replicas.get(0, ())

    def state(self) -> PartitionState:
        return self.zk.states[TP].value

    def next_event(self) -> None:
        self.partitions.event_done()
        self.channels.sent.clear()


def test_a_move_starts_the_new_replica_and_completes_once_it_is_in_the_isr() -> None:
    s = Setup()
    assert s.manager.reassign({TP: (1, 2, 3)}) == {TP: (ErrorCode.NONE, "")}
    # A: RS = TRS + ORS in ZooKeeper and in memory, a new leader epoch, every replica told.
    assert s.znode() == ((1, 2, 3, 0), (3,), (0,))
    assert s.ctx.full_assignment(TP) == ReplicaAssignment((1, 2, 3, 0), (3,), (0,))
    assert s.state() == PartitionState(0, 6, (0, 1, 2), EPOCH)
    told = s.channels.leader_and_isr()
    assert sorted(told) == [0, 1, 2, 3]
    assert list(told[3].replicas) == [1, 2, 3, 0] and told[3].is_new and not told[1].is_new
    assert list(told[0].adding_replicas) == [3] and list(told[0].removing_replicas) == [0]
    assert s.watched == [TP]
    assert s.manager.list_reassignments(None) == {TP: ReplicaAssignment((1, 2, 3, 0), (3,), (0,))}

    # Not caught up yet: nothing happens.
    s.next_event()
    s.manager.on_isr_change(TP)
    assert s.znode() == ((1, 2, 3, 0), (3,), (0,)) and not s.channels.sent

    # B: broker 3 joined the ISR. The leader (0) leaves: 1 leads; 0 leaves the ISR, is
    # stopped and deleted; RS = TRS last.
    s.next_event()
    s.zk.leader_writes_isr((0, 1, 2, 3))
    s.manager.on_isr_change(TP)
    assert s.state() == PartitionState(1, 7, (1, 2, 3), EPOCH)
    assert s.znode() == ((1, 2, 3), (), ())
    assert s.ctx.full_assignment(TP) == ReplicaAssignment((1, 2, 3))
    assert sorted(s.channels.leader_and_isr()) == [1, 2, 3]
    assert list(s.channels.leader_and_isr()[1].replicas) == [1, 2, 3]
    stop = s.channels.stop_replica()
    assert list(stop) == [0] and stop[0].delete_partition and stop[0].leader_epoch == 7
    assert s.cancelled == [TP]
    assert s.manager.list_reassignments(None) == {}


def test_a_leader_that_stays_keeps_leading() -> None:
    s = Setup(state=PartitionState(1, 5, (0, 1, 2), EPOCH))
    s.manager.reassign({TP: (1, 2, 3)})
    s.next_event()
    s.zk.leader_writes_isr((0, 1, 2, 3))
    s.manager.on_isr_change(TP)
    assert s.state() == PartitionState(1, 7, (1, 2, 3), EPOCH)


def test_completion_waits_while_no_target_replica_can_lead() -> None:
    # Every target replica is in the ISR, but 1, 2 and 3 are dead: the move waits.
    s = Setup(live=(0, 1, 2, 3))
    s.manager.reassign({TP: (1, 2, 3)})
    for broker in (1, 2, 3):
        del s.ctx.live_brokers[broker]
    s.next_event()
    s.zk.leader_writes_isr((0, 1, 2, 3))
    s.manager.on_isr_change(TP)
    assert s.znode() == ((1, 2, 3, 0), (3,), (0,))
    assert s.ctx.full_assignment(TP) == ReplicaAssignment((1, 2, 3, 0), (3,), (0,))
    assert s.state().leader == 0


def test_cancel_reverts_to_the_origin_and_deletes_the_added_replica() -> None:
    s = Setup()
    s.manager.reassign({TP: (1, 2, 3)})
    s.next_event()
    assert s.manager.reassign({TP: None}) == {TP: (ErrorCode.NONE, "")}
    # The origin replicas, in the order RS kept them (Kafka's caveat).
    assert s.znode() == ((1, 2, 0), (), ())
    assert list(s.channels.stop_replica()) == [3]
    assert s.state().leader == 0
    assert s.manager.reassign({TP: None}) == {
        TP: (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, f"No reassignment of {TP} is in progress.")
    }


def test_cancel_moves_leadership_off_an_added_replica_that_led() -> None:
    s = Setup()
    s.manager.reassign({TP: (3, 1, 2)})
    s.next_event()
    s.zk.leader_writes_isr((0, 1, 2, 3))
    # (a preferred election made 3 leader before the move completed)
    current = s.zk.states[TP]
    s.zk.states[TP] = Versioned(
        dataclasses.replace(current.value, leader=3), current.zk_version + 1
    )
    s.manager.reassign({TP: None})
    assert s.state().leader in (1, 2, 0) and 3 not in s.state().isr


def test_refusals_change_nothing() -> None:
    s = Setup()
    s.ctx.topics_to_delete.add("orders")
    results = s.manager.reassign(
        {TP: (1, 2, 3), TopicPartition("orders", 7): (1, 2, 3), TopicPartition("x", 0): (1, 2)}
    )
    assert {tp: r.error for tp, r in results.items()} == {
        TP: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,  # being deleted
        TopicPartition("orders", 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        TopicPartition("x", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert s.znode() == ((0, 1, 2), (), ()) and not s.channels.sent


def test_a_new_controller_resumes_from_zookeeper() -> None:
    # The previous controller wrote RS = TRS + ORS and died; 3 has caught up since.
    s = Setup(replicas=(1, 2, 3, 0), state=PartitionState(0, 6, (0, 1, 2, 3), EPOCH - 1))
    s.ctx.set_full_assignment(TP, ReplicaAssignment((1, 2, 3, 0), (3,), (0,)))
    s.zk.topic = Versioned(
        TopicAssignment("orders", "id", {0: (1, 2, 3, 0)}, {0: (3,)}, {0: (0,)}), 4
    )
    s.zk.legacy = {TP: (1, 2, 3), TopicPartition("other", 0): (1,)}
    s.manager.resume(lambda tp, assignment: True)
    assert s.znode() == ((1, 2, 3), (), ())
    assert s.state() == PartitionState(1, 7, (1, 2, 3), EPOCH)
    # Its entry in /admin/reassign_partitions is done; the other stays.
    assert s.zk.legacy == {TopicPartition("other", 0): (1,)}


def test_the_old_znode_starts_moves_and_drops_what_it_cannot_start() -> None:
    s = Setup()
    s.zk.legacy = {TP: (1, 2, 3), TopicPartition("orders", 9): (1, 2, 3)}
    started = s.manager.on_zk_reassignment()
    assert started == {TP}
    assert s.znode() == ((1, 2, 3, 0), (3,), (0,))
    assert s.zk.legacy == {TP: (1, 2, 3)}
    # An API request for the partition takes it out of the znode: the latest wins.
    s.next_event()
    s.manager.reassign({TP: (2, 3, 1)})
    assert s.zk.legacy is None
    assert s.znode() == ((2, 3, 1, 0), (3,), (0,))
