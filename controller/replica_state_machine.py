"""Replicas going online and offline (Kafka's ReplicaStateMachine).

A replica comes online when its broker registers (it gets LeaderAndIsr for every partition it
holds) and goes offline when its broker dies, when it stops in a controlled shutdown, or when
its log dir fails (KIP-112: the broker answers LeaderAndIsr with KAFKA_STORAGE_ERROR for it).
An offline replica leaves the ISR, and its partitions elect another leader if it led; those
state writes go through the PartitionStateMachine::

    replicas = ReplicaStateMachine(context, partitions)
    replicas.replicas_offline({3}, batch)      # broker 3 died: its replicas leave the ISRs
    batch.send(channels)

Requests for the brokers go into the RequestBatch the caller passes and sends.

Not thread-safe: one per term as controller, used on the controller's event thread.
"""

from __future__ import annotations

from collections.abc import Iterable

import structlog

from minikafka.controller import election
from minikafka.controller.partition_state_machine import PartitionStateMachine
from minikafka.controller.request_batch import RequestBatch
from minikafka.controller.state import ControllerContext
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto.cluster_state import PartitionState, Versioned
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode

__all__ = ["ReplicaStateMachine"]

log = structlog.get_logger("controller")


class ReplicaStateMachine:
    def __init__(self, context: ControllerContext, partitions: PartitionStateMachine) -> None:
        self._ctx = context
        self._partitions = partitions

    def replicas_online(self, brokers: Iterable[int], batch: RequestBatch) -> None:
        """Brokers (re)registered: LeaderAndIsr to each for every replica it holds."""
        ctx = self._ctx
        for broker_id in sorted(brokers):
            for tp in ctx.partitions_on_broker(broker_id):
                if not ctx.is_being_deleted(tp.topic):
                    batch.add_leader_and_isr([broker_id], tp)

    def replicas_offline(self, dead: set[int], batch: RequestBatch) -> None:
        """Kafka's OfflineReplica transition: dead replicas leave the ISR (leader_epoch + 1);
        a dead leader that nobody could replace leaves leader -1 (the last ISR member stays)."""
        ctx = self._ctx

        def decide(old: PartitionState) -> election.LeaderAndIsr | None:
            result = election.LeaderAndIsr(old.leader, old.isr)
            for replica in sorted(dead):
                if replica == result.leader or replica in result.isr:
                    result = election.remove_replica_from_isr(result.leader, result.isr, replica)
            if result == (old.leader, old.isr):
                return None
            return result

        # Every partition with a replica on a dead broker, decided on its state read afresh
        # (update_many): the cached ISR can be seconds old, since leaders tell the controller
        # of their ISR changes in batches, and a dead broker just taken into an ISR must
        # leave it too (as Kafka picks the dead brokers' replicas, not its cached ISRs).
        decisions = {
            tp: decide
            for tp, _ in ctx.iter_states(ctx.all_partitions())
            if not ctx.is_being_deleted(tp.topic) and dead & set(ctx.assignments.get(tp, ()))
        }
        for tp in self._partitions.update_many(decisions, "replica offline"):
            self._partitions.announce(tp, batch)

    def shut_down_follower(
        self,
        broker_id: int,
        tp: TopicPartition,
        state: Versioned[PartitionState],
        batch: RequestBatch,
    ) -> None:
        """Controlled shutdown of a follower: StopReplica (keep the log), leave the ISR."""
        ctx = self._ctx
        batch.add_stop_replica(broker_id, tp, delete=False, leader_epoch=state.value.leader_epoch)

        def follow(old: PartitionState) -> election.LeaderAndIsr | None:
            if broker_id not in old.isr or old.leader == broker_id:
                return None
            return election.remove_replica_from_isr(old.leader, old.isr, broker_id)

        if self._partitions.update(tp, follow, "controlled shutdown") is not None:
            others = [r for r in ctx.live_replicas(tp) if r != broker_id]
            batch.add_leader_and_isr(others, tp)
            batch.add_update_metadata(ctx.live_brokers, [tp])

    # --- log dir failures (KIP-112) -------------------------------------------------------------

    def probe_replicas(self, broker_id: int, batch: RequestBatch) -> None:
        """A log dir of the broker failed: LeaderAndIsr for every replica it holds; its answer
        (KAFKA_STORAGE_ERROR per partition) says which replicas went offline."""
        ctx = self._ctx
        for tp in ctx.partitions_on_broker(broker_id):
            if tp in ctx.partition_states and not ctx.is_being_deleted(tp.topic):
                batch.add_leader_and_isr([broker_id], tp)

    def record_log_dir_answers(
        self, broker_id: int, response: pb.LeaderAndIsrResponse
    ) -> set[TopicPartition]:
        """Note which of the broker's replicas are on offline log dirs; the newly offline."""
        ctx = self._ctx
        offline = set()
        online = set()
        for e in response.partition_errors:
            tp = TopicPartition(e.topic_name, e.partition_index)
            if e.error_code == ErrorCode.KAFKA_STORAGE_ERROR:
                offline.add(tp)
            elif e.error_code == ErrorCode.NONE:
                online.add(tp)
        previous = ctx.replicas_on_offline_dirs.get(broker_id, set())
        current = (previous - online) | offline
        if current:
            ctx.replicas_on_offline_dirs[broker_id] = current
        else:
            ctx.replicas_on_offline_dirs.pop(broker_id, None)
        return current - previous

    def log_dir_replicas_offline(
        self, broker_id: int, partitions: set[TopicPartition], batch: RequestBatch
    ) -> None:
        """Kafka's onReplicasBecomeOffline for one broker's replicas on offline log dirs: the
        partitions they led elect another leader from the ISR, then they leave the ISR."""
        ctx = self._ctx
        log.warning(
            "replicas_offline",
            broker_id=broker_id,
            partitions=[str(tp) for tp in sorted(partitions)],
            controller_epoch=ctx.epoch,
            reason="log dir offline",
        )
        for tp in sorted(partitions):
            if tp not in ctx.partition_states or ctx.is_being_deleted(tp.topic):
                continue
            if ctx.leader(tp) == broker_id:
                self._partitions.update(
                    tp, self._partitions.offline_decision(tp), "leader log dir offline"
                )

            def leave_isr(old: PartitionState) -> election.LeaderAndIsr | None:
                if broker_id != old.leader and broker_id not in old.isr:
                    return None
                result = election.remove_replica_from_isr(old.leader, old.isr, broker_id)
                return None if result == (old.leader, old.isr) else result

            self._partitions.update(tp, leave_isr, "replica log dir offline")
            self._partitions.announce(tp, batch)
