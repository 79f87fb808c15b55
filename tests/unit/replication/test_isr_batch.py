"""A leader's batched ISR writes (ReplicaManager._write_isrs), driven through the real methods
on a stand-in ReplicaManager and the harness's in-memory ZooKeeper: each answer goes to its own
partition, and a ZooKeeper error part-way through a batch does not forget writes that landed."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from types import SimpleNamespace
from typing import Any

from minikafka.broker.replication.partition import LeaderState
from minikafka.broker.replication.replica_manager import ReplicaManager
from minikafka.proto.cluster_state import PartitionState
from minikafka.proto.common import TopicPartition
from tests.unit.replication.harness import FakeZk


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
    return SimpleNamespace(topic=topic, partition=0, pending_isr=None, state=state)


def _manager(zk: FakeZk, applied: list[tuple[str, frozenset[int], int, Any]]) -> Any:
    rm: Any = SimpleNamespace(
        broker_id=1,
        _zk=zk,
        _isr_pending=[],
        _isr_writer=SimpleNamespace(done=lambda: False),  # a batch is already in flight
        _isr_written=lambda w, v, a: applied.append((w.partition.topic, w.new_isr, v, a)),
        fetch_sessions=SimpleNamespace(cache=SimpleNamespace(revisit=lambda tp: None)),
    )
    rm._write_isr_batch = lambda batch: ReplicaManager._write_isr_batch(rm, batch)
    return rm


def test_a_partition_proposed_twice_in_one_batch_keeps_its_latest_proposal() -> None:
    zk = FakeZk()
    zk.set_state("p", 0, PartitionState(1, 5, (1, 2, 3), 1))  # version 0
    zk.set_state("p", 0, PartitionState(1, 6, (1, 2, 3), 1))  # version 1: epoch 6
    zk.set_state("q", 0, PartitionState(1, 3, (1, 2), 1))  # version 0
    p = _partition("p", _leader_state(5, (1, 2, 3), 0))
    q = _partition("q", _leader_state(3, (1, 2), 0))
    applied: list[tuple[str, frozenset[int], int, Any]] = []
    rm = _manager(zk, applied)
    ReplicaManager._start_isr_write(rm, p, frozenset({1, 2}), "shrink")
    # A LeaderAndIsr of epoch 6 (same leader) resets the pending ISR; P is proposed again.
    p.state, p.pending_isr = _leader_state(6, (1, 2, 3), 1), None
    ReplicaManager._start_isr_write(rm, p, frozenset({1, 3}), "shrink")
    ReplicaManager._start_isr_write(rm, q, frozenset({1, 2, 3}), "expand")
    assert [w.partition.topic for w in rm._isr_pending] == ["p", "p", "q"]
    asyncio.run(ReplicaManager._write_isrs(rm))
    assert set(zk.states[("p", 0)].value.isr) == {1, 3}
    assert set(zk.states[("q", 0)].value.isr) == {1, 2, 3}
    assert sorted(applied) == [
        ("p", frozenset({1, 3}), 2, None),
        ("q", frozenset({1, 2, 3}), 1, None),
    ]
    assert p.pending_isr is None and q.pending_isr is None


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


def test_a_write_that_landed_before_a_zookeeper_error_is_applied() -> None:
    zk = _FailsOnQ()
    zk.set_state("p", 0, PartitionState(1, 5, (1, 2), 1))
    zk.set_state("q", 0, PartitionState(1, 5, (1, 2), 1))
    p = _partition("p", _leader_state(5, (1, 2), 0))
    q = _partition("q", _leader_state(5, (1, 2), 0))
    applied: list[tuple[str, frozenset[int], int, Any]] = []
    rm = _manager(zk, applied)
    ReplicaManager._start_isr_write(rm, p, frozenset({1, 2, 3}), "expand")
    ReplicaManager._start_isr_write(rm, q, frozenset({1, 2, 3}), "expand")
    asyncio.run(ReplicaManager._write_isrs(rm))
    # P's expansion is in ZooKeeper: the leader counts broker 3 for P's HW from now on.
    assert set(zk.states[("p", 0)].value.isr) == {1, 2, 3}
    assert ("p", frozenset({1, 2, 3}), 1, None) in applied
    # Q's did not land: read back, ZooKeeper's ISR is taken (and the expansion asked again).
    assert ("q", frozenset({1, 2, 3}), 0, frozenset({1, 2})) in applied
