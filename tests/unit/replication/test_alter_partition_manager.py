"""The AlterPartitionManager writing a leader's ISR changes to (the harness's in-memory)
ZooKeeper: changes proposed meanwhile go in one batch, each answer goes to its own partition, a
ZooKeeper error part-way through a batch does not forget writes that landed, a newer epoch in
the znode abandons the change, and what was applied is told to the controller."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import SimpleNamespace
from typing import Any

from minikafka.broker.replication.alter_partition_manager import (
    AlterPartitionItem,
    AlterPartitionManager,
)
from minikafka.broker.replication.isr_change import IsrChangePropagationConfig
from minikafka.broker.replication.partition import LeaderState
from minikafka.proto.cluster_state import PartitionState
from minikafka.proto.common import TopicPartition
from tests.unit.replication.harness import FakeZk, run, wait_until

Applied = tuple[str, frozenset[int], int, "frozenset[int] | None"]


def _leader_state(epoch: int, isr: Iterable[int], version: int) -> LeaderState:
    return LeaderState(
        leader_epoch=epoch,
        epoch_start_offset=0,
        led_since_epoch=epoch,
        isr=frozenset(isr),
        replicas=(1, 2, 3),
        partition_epoch=version,
        controller_epoch=1,
    )


def _partition(topic: str, state: LeaderState) -> Any:
    """What the manager reads and marks of a Partition."""
    return SimpleNamespace(topic=topic, partition=0, pending_isr=None, state=state)


class _Recorder:
    """The ReplicaManager's side: answers applied (ours only count for the controller) and
    partitions settled."""

    def __init__(self) -> None:
        self.applied: list[Applied] = []
        self.settled: list[TopicPartition] = []
        self.now_ms = 0

    def manager(self, zk: FakeZk) -> AlterPartitionManager:
        return AlterPartitionManager(
            1,
            zk,
            on_written=self._written,
            on_settled=self.settled.append,
            time_ms=lambda: self.now_ms,
            isr_change_propagation=IsrChangePropagationConfig(
                check_interval_ms=10, linger_ms=100, max_delay_ms=1000
            ),
        )

    def _written(
        self, item: AlterPartitionItem, version: int, adopted: frozenset[int] | None
    ) -> bool:
        self.applied.append((item.partition.topic, item.new_isr, version, adopted))
        return adopted is None


class _CountsBatches(FakeZk):
    def __init__(self) -> None:
        super().__init__()
        self.batches: list[set[str]] = []

    def update_partition_states(
        self,
        updates: Mapping[TopicPartition, tuple[PartitionState, int]],
        *,
        controller_epoch_zk_version: int | None = None,
    ) -> dict[TopicPartition, int | Exception]:
        self.batches.append({tp.topic for tp in updates})
        return super().update_partition_states(updates)


def test_changes_proposed_meanwhile_are_one_batch_and_a_partition_keeps_its_latest() -> None:
    async def scenario() -> None:
        zk = _CountsBatches()
        zk.set_state("p", 0, PartitionState(1, 5, (1, 2, 3), 1))  # version 0
        zk.set_state("p", 0, PartitionState(1, 6, (1, 2, 3), 1))  # version 1: epoch 6
        zk.set_state("q", 0, PartitionState(1, 3, (1, 2), 1))  # version 0
        p = _partition("p", _leader_state(5, (1, 2, 3), 0))
        q = _partition("q", _leader_state(3, (1, 2), 0))
        recorder = _Recorder()
        manager = recorder.manager(zk)
        manager.submit(p, frozenset({1, 2}), "shrink")
        assert p.pending_isr == frozenset({1, 2})
        manager.submit(p, frozenset({1}), "shrink")  # one change in flight per partition
        assert p.pending_isr == frozenset({1, 2})
        # A LeaderAndIsr of epoch 6 (same leader) resets the pending ISR; P is proposed again.
        p.state, p.pending_isr = _leader_state(6, (1, 2, 3), 1), None
        manager.submit(p, frozenset({1, 3}), "shrink")
        manager.submit(q, frozenset({1, 2, 3}), "expand")
        await wait_until(lambda: len(recorder.settled) == 3)
        assert zk.batches == [{"p", "q"}]
        assert set(zk.states[("p", 0)].value.isr) == {1, 3}
        assert set(zk.states[("q", 0)].value.isr) == {1, 2, 3}
        assert sorted(recorder.applied) == [
            ("p", frozenset({1, 3}), 2, None),
            ("q", frozenset({1, 2, 3}), 1, None),
        ]
        assert p.pending_isr is None and q.pending_isr is None

    run(scenario)


class _SessionExpired(Exception):
    pass


class _FailsOnQ(FakeZk):
    """As ZkStore.update_partition_states when one answer of a pipelined batch is an error
    other than a version conflict: it raises after the other writes have landed."""

    def update_partition_states(
        self,
        updates: Mapping[TopicPartition, tuple[PartitionState, int]],
        *,
        controller_epoch_zk_version: int | None = None,
    ) -> dict[TopicPartition, int | Exception]:
        for tp, (state, expected) in updates.items():
            if tp.topic == "q":
                raise _SessionExpired("q")
            self.update_partition_state(*tp, state, expected)
        return {}


def test_a_write_that_landed_before_a_zookeeper_error_is_applied_and_told() -> None:
    async def scenario() -> None:
        zk = _FailsOnQ()
        zk.set_state("p", 0, PartitionState(1, 5, (1, 2), 1))
        zk.set_state("q", 0, PartitionState(1, 5, (1, 2), 1))
        p = _partition("p", _leader_state(5, (1, 2), 0))
        q = _partition("q", _leader_state(5, (1, 2), 0))
        recorder = _Recorder()
        manager = recorder.manager(zk)
        manager.submit(p, frozenset({1, 2, 3}), "expand")
        manager.submit(q, frozenset({1, 2, 3}), "expand")
        await wait_until(lambda: len(recorder.settled) == 2)
        # P's expansion is in ZooKeeper: the leader counts broker 3 for P's HW from now on.
        assert set(zk.states[("p", 0)].value.isr) == {1, 2, 3}
        assert ("p", frozenset({1, 2, 3}), 1, None) in recorder.applied
        # Q's did not land: read back, ZooKeeper's ISR is taken (and the expansion asked again).
        assert ("q", frozenset({1, 2, 3}), 0, frozenset({1, 2})) in recorder.applied
        # Only P's change is the controller's news, once no change came for linger_ms.
        await manager.propagate_isr_changes()
        assert zk.notifications == []
        recorder.now_ms = 101
        await manager.propagate_isr_changes()
        assert zk.notifications == [frozenset({TopicPartition("p", 0)})]

    run(scenario)


def test_a_newer_epoch_in_the_znode_abandons_the_change() -> None:
    async def scenario() -> None:
        zk = FakeZk()
        zk.set_state("p", 0, PartitionState(1, 5, (1, 2, 3), 1))  # version 0
        zk.set_state("p", 0, PartitionState(2, 6, (2, 3), 1))  # the controller moved it on
        p = _partition("p", _leader_state(5, (1, 2, 3), 0))
        recorder = _Recorder()
        manager = recorder.manager(zk)
        manager.submit(p, frozenset({1, 2}), "shrink")
        await wait_until(lambda: len(recorder.settled) == 1)
        assert recorder.applied == []
        assert p.pending_isr is None
        assert zk.states[("p", 0)].value == PartitionState(2, 6, (2, 3), 1)
        recorder.now_ms = 10_000
        await manager.propagate_isr_changes()
        assert zk.notifications == []

    run(scenario)
