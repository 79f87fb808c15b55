"""Partition reassignment (KIP-455, Kafka's ZooKeeper-mode controller).

A partition's replicas (RS) move from the original set (ORS) to a target set (TRS) without a
moment in which fewer replicas hold its committed records than before::

    RS               adding   removing  leader  isr
    [0,1,2]          []       []        0       [0,1,2]      before
    [1,2,3,0]        [3]      [0]       0       [0,1,2]      A: written, LeaderAndIsr to RS
    [1,2,3,0]        [3]      [0]       0       [0,1,2,3]    3 caught up: the leader added it
    [1,2,3]          []       []        1       [1,2,3]      B: leader from TRS, RS := TRS

A. Start (``reassign``): /brokers/topics/<t> gets RS = TRS + ORS with ``adding_replicas`` and
   ``removing_replicas`` (U1), the context too (U2); replicas a replaced reassignment had added
   and this one does not want are stopped and deleted at once; the leader epoch is bumped and
   LeaderAndIsr sent to every replica of RS, so the new ones create their logs and fetch.
   The controller watches the partition's state znode from now on.
B. Completion, once every TRS member is in the ISR (the leader writes ISR changes to the state
   znode; a watch on it, and the isr change notifications, bring ``on_isr_change``): RS := TRS
   in memory; one state write elects a leader from TRS if the current one is leaving or dead
   and takes the removed replicas out of the ISR (Kafka does this in two writes, B3 and B4:
   one is enough, and no broker ever leads with an ISR member that is not a replica);
   LeaderAndIsr to TRS; StopReplica with delete to the removed replicas (the replica state
   machine's Offline → NonExistent); then /brokers/topics/<t> gets RS = TRS, without adding
   or removing replicas -- last, since it is the only place ORS is kept: a controller that
   fails before it leaves the next one a reassignment to resume.

A cancellation is a reassignment back to ORS (the replicas being added are stopped and
deleted; RS = ORS is complete at once). A new reassignment of a partition being reassigned
replaces the old one, ORS staying what it was. The new controller resumes every partition
with adding or removing replicas (``resume``), as does a broker of a TRS coming back.

Requests come from AlterPartitionReassignments (``reassign``, each partition checked as
Kafka's controller does: INVALID_REPLICA_ASSIGNMENT for an empty list, a duplicate, a
negative id or a new replica on a broker that is not alive; UNKNOWN_TOPIC_OR_PARTITION for a
partition that does not exist or whose topic is being deleted; NO_REASSIGNMENT_IN_PROGRESS for
a cancellation of nothing) and from the old znode /admin/reassign_partitions
(``on_zk_reassignment``), from which the controller removes each entry it completes; an API
request for a partition takes it out of the znode (the latest request wins)::

    manager = ReassignmentManager(context, zk, partitions, new_batch, channels, watch_state)
    manager.reassign({TopicPartition("orders", 0): (1, 2, 3)})   # -> {tp: ApiResult}
    manager.on_isr_change(TopicPartition("orders", 0))           # complete if TRS ⊆ ISR

Not thread-safe: one per term as controller, used on the controller's event thread.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import structlog

from minikafka.controller import election
from minikafka.controller.channels import BrokerChannels
from minikafka.controller.partition_state_machine import PartitionStateMachine
from minikafka.controller.request_batch import RequestBatch
from minikafka.controller.state import ApiResult, ControllerContext, ReplicaAssignment
from minikafka.proto.cluster_state import BadZNodeVersionError, PartitionState
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode
from minikafka.zk.errors import ZkDataError
from minikafka.zk.zk_data import NO_LEADER, TopicAssignment
from minikafka.zk.zk_store import Watch, ZkStore

__all__ = ["ReassignmentManager", "validate_target_replicas"]

log = structlog.get_logger("controller")

_MAX_ASSIGNMENT_WRITES = 5
_NO_PARTITION = "The partition does not exist."

WatchState = Callable[[TopicPartition], Watch]
"""Starts a watch on a partition's state znode whose changes call ``on_isr_change``."""


def validate_target_replicas(
    current: ReplicaAssignment, target: Sequence[int], live_brokers: Iterable[int]
) -> ApiResult | None:
    """Kafka's checks of one partition's target replicas; None when they pass.

    >>> validate_target_replicas(ReplicaAssignment((0, 1)), (1, 1), {0, 1}).error.name
    'INVALID_REPLICA_ASSIGNMENT'
    """
    invalid = ErrorCode.INVALID_REPLICA_ASSIGNMENT
    replicas = list(target)
    if not replicas:
        return ApiResult(invalid, "Empty replica list specified in partition reassignment.")
    if len(set(replicas)) != len(replicas):
        return ApiResult(
            invalid, f"Duplicate replica ids in partition reassignment replica list: {replicas}"
        )
    if any(r < 0 for r in replicas):
        return ApiResult(invalid, f"Invalid broker id in replica list: {replicas}")
    live = set(live_brokers)
    adding = current.reassign_to(replicas).adding_replicas
    if not set(adding) <= live:
        return ApiResult(
            invalid,
            f"Replica assignment has brokers that are not alive. Replica list: {list(adding)}, "
            f"live broker list: {sorted(live)}",
        )
    return None


class ReassignmentManager:
    def __init__(
        self,
        context: ControllerContext,
        zk: ZkStore,
        partitions: PartitionStateMachine,
        new_batch: Callable[[], RequestBatch],
        channels: BrokerChannels,
        watch_state: WatchState,
    ) -> None:
        self._ctx = context
        self._zk = zk
        self._partitions = partitions
        self._new_batch = new_batch
        self._channels = channels
        self._watch_state = watch_state
        self._isr_watches: dict[TopicPartition, Watch] = {}

    def close(self) -> None:
        """The term as controller ended: stop watching ISRs."""
        for watch in self._isr_watches.values():
            watch.cancel()
        self._isr_watches.clear()

    # --- requests ------------------------------------------------------------------------------

    def reassign(
        self, requests: Mapping[TopicPartition, Sequence[int] | None]
    ) -> dict[TopicPartition, ApiResult]:
        """AlterPartitionReassignments: target replicas per partition, None to cancel."""
        ctx = self._ctx
        results: dict[TopicPartition, ApiResult] = {}
        wanted: dict[TopicPartition, ReplicaAssignment] = {}
        for tp, target in requests.items():
            current = ctx.full_assignment(tp)
            refused = None
            if target is not None:
                refused = validate_target_replicas(current, target, ctx.live_broker_ids)
            if refused is not None:
                results[tp] = refused
                continue
            built = self._build(current, target)
            if built is None:
                results[tp] = ApiResult(
                    ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
                    f"No reassignment of {tp} is in progress.",
                )
            else:
                wanted[tp] = built
        # The latest request wins over one in /admin/reassign_partitions.
        self._remove_from_zk_reassignment(lambda tp, _: tp in wanted)
        results.update(self._trigger(wanted, "AlterPartitionReassignments"))
        return results

    def list_reassignments(
        self, partitions: Iterable[TopicPartition] | None
    ) -> dict[TopicPartition, ReplicaAssignment]:
        """ListPartitionReassignments: the named partitions being reassigned (others are left
        out), or all of them."""
        ctx = self._ctx
        wanted = ctx.partitions_being_reassigned() if partitions is None else list(partitions)
        return {
            tp: ctx.full_assignment(tp)
            for tp in wanted
            if ctx.full_assignment(tp).is_being_reassigned and not ctx.is_being_deleted(tp.topic)
        }

    def on_zk_reassignment(self) -> set[TopicPartition]:
        """/admin/reassign_partitions appeared: start what it asks for (entries that cannot be
        started are removed from it, as Kafka does); the partitions started."""
        try:
            requested = self._zk.get_partition_reassignment()
        except ZkDataError as exc:
            log.warning("partition_reassignment_znode_unreadable", error=str(exc))
            self._zk.set_partition_reassignment(
                {}, controller_epoch_zk_version=self._ctx.epoch_zk_version
            )
            return set()
        if requested is None:
            return set()
        ctx = self._ctx
        results: dict[TopicPartition, ApiResult] = {}
        wanted: dict[TopicPartition, ReplicaAssignment] = {}
        for tp, target in requested.items():
            current = ctx.full_assignment(tp)
            # Kafka's controller takes the znode as its tool wrote it, checked; one written by
            # hand could name a broker that never comes, and the move would wait for ever.
            refused = validate_target_replicas(current, target, ctx.live_broker_ids)
            if refused is not None:
                results[tp] = refused
                continue
            built = self._build(current, target)
            assert built is not None  # a target is given
            wanted[tp] = built
        results.update(self._trigger(wanted, "/admin/reassign_partitions"))
        failed = {tp: r for tp, r in results.items() if r.error != ErrorCode.NONE}
        if failed:
            log.warning(
                "partition_reassignment_refused",
                source="/admin/reassign_partitions",
                partitions={str(tp): r.error.name for tp, r in sorted(failed.items())},
            )
            self._remove_from_zk_reassignment(lambda tp, _: tp in failed)
        return {tp for tp, r in results.items() if r.error == ErrorCode.NONE}

    def resume(self, which: Callable[[TopicPartition, ReplicaAssignment], bool]) -> None:
        """Carry on with the reassignments ``which`` picks (controller failover: all; a broker
        back: those whose TRS it is in)."""
        ctx = self._ctx
        for tp in ctx.partitions_being_reassigned():
            assignment = ctx.full_assignment(tp)
            if ctx.is_being_deleted(tp.topic) or not which(tp, assignment):
                continue
            self._trigger({tp: assignment}, "resumed")

    def on_isr_change(self, tp: TopicPartition) -> None:
        """The ISR of a partition may have changed: complete its reassignment if it can."""
        ctx = self._ctx
        assignment = ctx.full_assignment(tp)
        if not assignment.is_being_reassigned or ctx.is_being_deleted(tp.topic):
            return
        if self._is_complete(tp, assignment):
            batch = self._new_batch()
            self._complete(tp, assignment, batch)
            batch.send(self._channels)

    def forget_topic(self, topic: str) -> None:
        """The topic is being deleted (its deletion stops every replica of RS) or is gone."""
        for tp in [tp for tp in self._isr_watches if tp.topic == topic]:
            self._isr_watches.pop(tp).cancel()

    # --- the steps -----------------------------------------------------------------------------

    @staticmethod
    def _build(
        current: ReplicaAssignment, target: Sequence[int] | None
    ) -> ReplicaAssignment | None:
        """Kafka's maybeBuildReassignment: None for a cancellation of nothing."""
        if current.is_being_reassigned:
            return current.reassign_to(current.origin_replicas if target is None else target)
        return None if target is None else current.reassign_to(target)

    def _trigger(
        self, wanted: Mapping[TopicPartition, ReplicaAssignment], source: str
    ) -> dict[TopicPartition, ApiResult]:
        ctx = self._ctx
        results = {}
        for tp, reassignment in wanted.items():
            if ctx.is_being_deleted(tp.topic) or not ctx.assignments.get(tp):
                results[tp] = ApiResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, _NO_PARTITION)
                continue
            batch = self._new_batch()
            try:
                self._on_partition_reassignment(tp, reassignment, batch, source)
            finally:
                batch.send(self._channels)
            results[tp] = ApiResult()
        return results

    def _on_partition_reassignment(
        self,
        tp: TopicPartition,
        reassignment: ReplicaAssignment,
        batch: RequestBatch,
        source: str,
    ) -> None:
        ctx = self._ctx
        current = ctx.full_assignment(tp)
        if current != reassignment:
            log.info(
                "partition_reassignment_started",
                topic=tp.topic,
                partition=tp.partition,
                replicas=list(reassignment.replicas),
                adding_replicas=list(reassignment.adding_replicas),
                removing_replicas=list(reassignment.removing_replicas),
                previous_replicas=list(current.replicas),
                source=source,
            )
            self._write_assignment(tp, reassignment)
            ctx.set_full_assignment(tp, reassignment)
            unneeded = [r for r in current.replicas if r not in reassignment.replicas]
            if unneeded:
                # Replicas a replaced (or cancelled) reassignment was adding.
                self._stop_removed(tp, unneeded, reassignment.replicas, batch)
        if reassignment.is_being_reassigned and tp not in self._isr_watches:
            self._isr_watches[tp] = self._watch_state(tp)
        if not self._is_complete(tp, reassignment):
            # A: the new replicas start (their LeaderAndIsr names them; a new leader epoch
            # makes every replica take the new replica set).
            if self._partitions.update(tp, _same_leader_and_isr, "partition reassignment"):
                adding = set(reassignment.adding_replicas)
                live = ctx.live_replicas(tp)
                batch.add_leader_and_isr([r for r in live if r not in adding], tp)
                batch.add_leader_and_isr([r for r in live if r in adding], tp, is_new=True)
                batch.add_update_metadata(ctx.live_brokers, [tp])
        else:
            self._complete(tp, reassignment, batch)

    def _is_complete(self, tp: TopicPartition, assignment: ReplicaAssignment) -> bool:
        if not assignment.is_being_reassigned:
            return True
        state = self._partitions.reload_state(tp)
        return state is not None and set(assignment.target_replicas) <= set(state.value.isr)

    def _complete(
        self, tp: TopicPartition, reassignment: ReplicaAssignment, batch: RequestBatch
    ) -> None:
        """B: RS := TRS, a leader from TRS, the removed replicas stopped and deleted."""
        ctx = self._ctx
        target = reassignment.target_replicas
        removing = reassignment.removing_replicas
        completed = ReplicaAssignment(target)
        ctx.set_full_assignment(tp, completed)  # B2: LeaderAndIsr below name TRS only
        live = {b for b in ctx.live_broker_ids if ctx.is_replica_online(b, tp)}

        def decide(old: PartitionState) -> election.LeaderAndIsr | None:
            return election.reassignment_leader(old.leader, target, old.isr, live, removing)

        state = self._partitions.update(tp, decide, "partition reassignment completed")
        if state is None:
            ctx.set_full_assignment(tp, reassignment)  # no target replica can lead: wait
            log.warning(
                "partition_reassignment_waiting",
                topic=tp.topic,
                partition=tp.partition,
                target_replicas=list(target),
                reason="no target replica is alive and in the ISR",
            )
            return
        batch.add_leader_and_isr(ctx.live_replicas(tp), tp)
        for replica in removing:
            batch.add_stop_replica(replica, tp, delete=True, leader_epoch=state.leader_epoch)
        self._write_assignment(tp, completed)  # B6: last, ORS is kept nowhere else
        self._remove_from_zk_reassignment(lambda p, replicas: p == tp and tuple(replicas) == target)
        watch = self._isr_watches.pop(tp, None)
        if watch is not None:
            watch.cancel()
        batch.add_update_metadata(ctx.live_brokers, [tp])
        log.info(
            "partition_reassignment_completed",
            topic=tp.topic,
            partition=tp.partition,
            replicas=list(target),
            removed_replicas=list(removing),
            leader=state.leader,
            leader_epoch=state.leader_epoch,
            isr=list(state.isr),
        )

    def _stop_removed(
        self,
        tp: TopicPartition,
        removed: Sequence[int],
        replicas: Sequence[int],
        batch: RequestBatch,
    ) -> None:
        """Replicas no longer assigned leave the ISR (a new leader from ``replicas`` if one of
        them led) and are stopped and deleted."""
        ctx = self._ctx
        live = {b for b in ctx.live_broker_ids if ctx.is_replica_online(b, tp)}

        def decide(old: PartitionState) -> election.LeaderAndIsr | None:
            result = election.LeaderAndIsr(old.leader, old.isr)
            for replica in removed:
                if replica == result.leader or replica in result.isr:
                    result = election.remove_replica_from_isr(result.leader, result.isr, replica)
            if result.leader == NO_LEADER:
                result = (
                    election.reassignment_leader(NO_LEADER, replicas, result.isr, live) or result
                )
            return None if result == (old.leader, old.isr) else result

        if self._partitions.update(tp, decide, "replicas removed by a reassignment"):
            self._partitions.announce(tp, batch)
        state = ctx.partition_states.get(tp)
        epoch = state.value.leader_epoch if state is not None else -1
        for replica in removed:
            batch.add_stop_replica(replica, tp, delete=True, leader_epoch=epoch)

    def _write_assignment(self, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
        """/brokers/topics/<t> with ``assignment`` for ``tp``, fenced; the topic's other
        partitions as ZooKeeper has them."""
        ctx = self._ctx
        for _ in range(_MAX_ASSIGNMENT_WRITES):
            read = self._zk.get_topic(tp.topic)
            if read is None:
                return
            old = read.value

            def replace(
                by_partition: Mapping[int, tuple[int, ...]], value: tuple[int, ...]
            ) -> dict[int, tuple[int, ...]]:
                result = {p: r for p, r in by_partition.items() if p != tp.partition}
                if value:
                    result[tp.partition] = value
                return result

            new = TopicAssignment(
                tp.topic,
                old.topic_id,
                replace(old.partitions, assignment.replicas),
                replace(old.adding_replicas, assignment.adding_replicas),
                replace(old.removing_replicas, assignment.removing_replicas),
            )
            try:
                self._zk.update_topic(
                    new, read.zk_version, controller_epoch_zk_version=ctx.epoch_zk_version
                )
                return
            except BadZNodeVersionError:
                continue
        raise RuntimeError(f"/brokers/topics/{tp.topic} kept changing while it was written")

    def _remove_from_zk_reassignment(
        self, remove: Callable[[TopicPartition, tuple[int, ...]], bool]
    ) -> None:
        """Kafka's maybeRemoveFromZkReassignment: entries of /admin/reassign_partitions that
        ``remove`` picks go; the znode goes with its last entry."""
        try:
            current = self._zk.get_partition_reassignment()
        except ZkDataError:
            current = {}  # unreadable: nothing in it can be started, so it goes
        if current is None:
            return
        kept = {tp: r for tp, r in current.items() if not remove(tp, r)}
        if current and len(kept) == len(current):
            return
        self._zk.set_partition_reassignment(
            kept, controller_epoch_zk_version=self._ctx.epoch_zk_version
        )


def _same_leader_and_isr(old: PartitionState) -> election.LeaderAndIsr:
    """A new leader epoch only, so that every replica takes the new replica set."""
    return election.LeaderAndIsr(old.leader, old.isr)
