"""Partition states and their leaders (Kafka's PartitionStateMachine).

Owns every write of ``/brokers/topics/<t>/partitions/<p>/state`` the controller makes: a new
partition's first state, a leader elected for a partition whose leader is gone, a preferred,
unclean or controlled-shutdown election, and ISR shrinks the replica state machine asks for.
Each write bumps the leader epoch, is fenced on the /controller_epoch znode version and is
conditional on the state's own znode version (re-read and decided again when the leader changed
the ISR meanwhile)::

    partitions = PartitionStateMachine(context, zk, lambda: config)
    partitions.online_partition_state_change(context.all_partitions(), batch)
    partitions.update(tp, decide, "preferred replica election")   # -> PartitionState | None

The rules themselves (who may lead) are the pure functions of controller.election. Requests for
the brokers go into the RequestBatch the caller passes and sends.

Not thread-safe: one per term as controller, used on the controller's event thread.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import structlog

from minikafka.controller import election
from minikafka.controller.config import ControllerConfig
from minikafka.controller.request_batch import RequestBatch
from minikafka.controller.state import ControllerContext
from minikafka.proto.cluster_state import BadZNodeVersionError, PartitionState, Versioned
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import KafkaError
from minikafka.proto.topic_config import TOPIC_KEY_SPECS
from minikafka.zk.errors import ControllerMovedError
from minikafka.zk.zk_data import NO_LEADER
from minikafka.zk.zk_store import ZkStore

__all__ = ["Decision", "PartitionStateMachine"]

log = structlog.get_logger("controller")

_UNCLEAN = TOPIC_KEY_SPECS["unclean.leader.election.enable"]
_MAX_WRITE_ATTEMPTS = 5

Decision = Callable[[PartitionState], election.LeaderAndIsr | None]
"""Picks a partition's next (leader, isr) from its current state; None: nothing to change."""


def _nothing(state: PartitionState) -> election.LeaderAndIsr | None:
    return None


class PartitionStateMachine:
    def __init__(
        self,
        context: ControllerContext,
        zk: ZkStore,
        config: Callable[[], ControllerConfig],
    ) -> None:
        self._ctx = context
        self._zk = zk
        self._config = config  # read at each use: a config change may replace it
        # States read from ZooKeeper or written during the current event: as fresh as another
        # read would be, so an event that elects, then shrinks ISRs, reads each state once.
        self._fresh: set[TopicPartition] = set()
        # Writes whose outcome is unknown (ZooKeeper answered with an error and the read-back
        # failed too), with the state written: kept across events until a later read tells
        # whether it landed, so that one that did is announced (``update_many``).
        self._unsure: dict[TopicPartition, PartitionState] = {}

    def event_done(self) -> None:
        """The controller finished an event: what it read may be stale at the next one."""
        self._fresh.clear()

    def announce(self, tp: TopicPartition, batch: RequestBatch) -> None:
        """LeaderAndIsr to the partition's live replicas, UpdateMetadata to every broker."""
        batch.add_leader_and_isr(self._ctx.live_replicas(tp), tp)
        batch.add_update_metadata(self._ctx.live_brokers, [tp])

    def reload_state(self, tp: TopicPartition) -> Versioned[PartitionState] | None:
        return self.reload_states([tp]).get(tp)

    def reload_states(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, Versioned[PartitionState]]:
        """Read the partitions' states again (together); those without a state are forgotten."""
        ctx = self._ctx
        partitions = list(partitions)
        states = self._zk.get_partition_states(partitions)
        self._fresh.update(partitions)
        for tp in partitions:
            state = states.get(tp)
            if state is None:
                ctx.partition_states.pop(tp, None)
                continue
            if state.value.controller_epoch > ctx.epoch:
                raise ControllerMovedError(
                    f"{tp} was written by controller epoch {state.value.controller_epoch}, "
                    f"this controller has epoch {ctx.epoch}"
                )
            ctx.partition_states[tp] = state
        return states

    def update(self, tp: TopicPartition, decide: Decision, reason: str) -> PartitionState | None:
        """Write the state ``decide`` picks (leader_epoch + 1), fenced and version-checked.

        Re-reads and decides again when the leader changed the ISR meanwhile. None when
        ``decide`` found nothing to do.
        """
        return self.update_many({tp: decide}, reason).get(tp)

    def update_many(
        self, decisions: Mapping[TopicPartition, Decision], reason: str
    ) -> dict[TopicPartition, PartitionState]:
        """``update`` for many partitions, their writes in flight together (Kafka's
        updateLeaderAndIsr): the partitions whose write lost to another writer are re-read
        together and decided again; a write that met another ZooKeeper error is read back
        (``_read_back``), so that one that landed is announced like the others. The new
        states of the partitions written.

        Decisions start from states read afresh (in this event), as Kafka's
        doElectLeaderForPartitions does:
        leaders change ISRs without the controller (it hears of them through batched ISR
        change notifications, seconds later), and an election from a stale ISR would pick a
        leader or an ISR that is no longer right, or refuse one that is."""
        ctx = self._ctx
        written: dict[TopicPartition, PartitionState] = {}
        remaining = dict(decisions)
        stale = [tp for tp in remaining if tp not in self._fresh]
        if stale:
            self.reload_states(stale)
        for tp in [tp for tp in remaining if tp in self._unsure]:
            # An earlier write of this controller's whose outcome was unknown: if ZooKeeper
            # holds it, nobody has been told of it yet, whatever is decided now.
            tried = self._unsure.pop(tp)
            current = ctx.partition_states.get(tp)
            if current is not None and current.value == tried:
                written[tp] = tried
                log.info(
                    "partition_state_write_found",
                    topic=tp.topic,
                    partition=tp.partition,
                    leader=tried.leader,
                    leader_epoch=tried.leader_epoch,
                    isr=list(tried.isr),
                    reason=reason,
                )
        for _ in range(_MAX_WRITE_ATTEMPTS):
            updates: dict[TopicPartition, tuple[PartitionState, int]] = {}
            olds: dict[TopicPartition, PartitionState] = {}
            for tp, decide in remaining.items():
                current = ctx.partition_states.get(tp)
                if current is None:
                    continue
                old = current.value
                decision = decide(old)
                if decision is None:
                    continue
                new = PartitionState(decision.leader, old.leader_epoch + 1, decision.isr, ctx.epoch)
                updates[tp] = (new, current.zk_version)
                olds[tp] = old
            if not updates:
                return written
            answers = self._zk.update_partition_states(
                updates, controller_epoch_zk_version=ctx.epoch_zk_version
            )
            lost: list[TopicPartition] = []
            unsure: list[TopicPartition] = []
            for tp, answer in answers.items():
                if isinstance(answer, BadZNodeVersionError):
                    lost.append(tp)
                elif isinstance(answer, Exception):
                    unsure.append(tp)
                else:
                    new = updates[tp][0]
                    ctx.partition_states[tp] = Versioned(new, answer)
                    written[tp] = new
                    _log_state_change(tp, olds[tp], new, reason)
            if unsure:
                log.warning(
                    "partition_state_write_failed",
                    partitions=len(unsure),
                    error=str(answers[unsure[0]]),
                    reason=reason,
                )
            again = self._read_back([*lost, *unsure], updates, olds, reason, written)
            if not again:
                return written
            remaining = {tp: remaining[tp] for tp in again}
        for tp in remaining:
            log.warning("partition_state_write_gave_up", topic=tp.topic, partition=tp.partition)
        return written

    def _read_back(
        self,
        partitions: list[TopicPartition],
        updates: Mapping[TopicPartition, tuple[PartitionState, int]],
        olds: Mapping[TopicPartition, PartitionState],
        reason: str,
        written: dict[TopicPartition, PartitionState],
    ) -> list[TopicPartition]:
        """Writes refused on their znode version, or that met another ZooKeeper error, may
        still have landed (a request retried after a lost connection, whose first attempt
        did): go by what ZooKeeper holds. A state equal to the one this controller wrote is
        its write (only the controller bumps leader epochs, and nobody has heard of this one
        yet, so nobody has changed it since): taken into ``written``, to be announced. The
        partitions to decide again (their states read afresh); one without a state znode any
        more is forgotten. When the read-back fails too, the writes' outcome is unknown
        (``_unsure``)."""
        if not partitions:
            return []
        try:
            states = self.reload_states(partitions)
        except ControllerMovedError:
            raise
        except Exception as exc:
            # Outcome unknown: the next decision about each re-reads its state, and announces
            # the write if it landed (``_unsure``), even when there is nothing left to decide.
            log.warning(
                "partition_state_read_back_failed", partitions=len(partitions), error=str(exc)
            )
            for tp in partitions:
                self._unsure[tp] = updates[tp][0]
                self._fresh.discard(tp)
            return []
        again = []
        for tp in partitions:
            read = states.get(tp)
            if read is None:
                continue
            if read.value == updates[tp][0]:
                written[tp] = read.value
                _log_state_change(tp, olds[tp], read.value, reason)
            else:
                again.append(tp)
        return again

    # --- NewPartition / OfflinePartition -> OnlinePartition ------------------------------------

    def online_partition_state_change(
        self, partitions: Iterable[TopicPartition], batch: RequestBatch
    ) -> None:
        """New partitions get states, partitions without a live leader get one if they can."""
        ctx = self._ctx
        new: list[TopicPartition] = []
        offline: dict[TopicPartition, Decision] = {}
        for tp in partitions:
            if ctx.is_being_deleted(tp.topic) or tp not in ctx.assignments:
                continue
            if tp not in ctx.partition_states:
                new.append(tp)
            elif not ctx.has_live_leader(tp):
                offline[tp] = self.offline_decision(tp)
        for tp in self._init_partitions(new, batch) if new else ():
            # It had a state already (left by an earlier controller): as any other partition.
            if ctx.has_live_leader(tp):
                self.announce(tp, batch)
            else:
                offline[tp] = self.offline_decision(tp)
        for tp in self._unsure:
            # A write of unknown outcome whose partition looks led: re-read, nothing to decide.
            if tp not in offline and tp in ctx.assignments and not ctx.is_being_deleted(tp.topic):
                offline[tp] = _nothing
        for tp in self.update_many(offline, "offline partition"):
            self.announce(tp, batch)

    def elect_for_failed_leaders(self, dead: set[int], batch: RequestBatch) -> None:
        """Partitions whose leader was on a dead broker: elect from the live ISR in AR order."""
        ctx = self._ctx
        decisions = {
            tp: self.offline_decision(tp)
            for tp, state in ctx.iter_states(ctx.all_partitions())
            if not ctx.is_being_deleted(tp.topic) and state.value.leader in dead
        }
        for tp in self.update_many(decisions, "leader broker failed"):
            self.announce(tp, batch)

    def _init_partitions(
        self, partitions: list[TopicPartition], batch: RequestBatch
    ) -> list[TopicPartition]:
        """NewPartition -> OnlinePartition: first live replica leads, live replicas in ISR; the
        state znodes are created together. The partitions found to have a state already (read
        into the context), for the caller to announce or elect a leader for."""
        ctx = self._ctx
        states: dict[TopicPartition, PartitionState] = {}
        for tp in partitions:
            live = [r for r in ctx.assignments[tp] if ctx.is_alive(r)]
            if not live:
                log.warning(
                    "partition_offline",
                    topic=tp.topic,
                    partition=tp.partition,
                    reason="no live replica for a new partition",
                    replicas=list(ctx.assignments[tp]),
                )
                continue
            states[tp] = PartitionState(live[0], 0, tuple(live), ctx.epoch)
        if not states:
            return []
        answers = self._zk.create_partition_states(
            states, controller_epoch_zk_version=ctx.epoch_zk_version
        )
        existing = [tp for tp, answer in answers.items() if isinstance(answer, Exception)]
        for tp, answer in answers.items():
            if isinstance(answer, Exception):
                continue
            state = states[tp]
            ctx.partition_states[tp] = Versioned(state, answer)
            self._fresh.add(tp)
            log.info(
                "leader_elected",
                topic=tp.topic,
                partition=tp.partition,
                leader=state.leader,
                leader_epoch=0,
                isr=list(state.isr),
                controller_epoch=ctx.epoch,
                reason="new partition",
            )
            batch.add_leader_and_isr(ctx.live_replicas(tp), tp, is_new=True)
            batch.add_update_metadata(ctx.live_brokers, [tp])
        if not existing:
            return []
        # A state left by an earlier controller, or a create that met a ZooKeeper error and
        # may have landed: go by what ZooKeeper holds.
        try:
            found = self.reload_states(existing)
        except ControllerMovedError:
            raise
        except Exception as exc:
            log.warning(
                "partition_state_read_back_failed", partitions=len(existing), error=str(exc)
            )
            return []
        missed = [tp for tp in existing if tp not in found]
        if missed:
            # Their creates failed and did not land: new partitions still, tried again at the
            # next change of brokers or partitions (as Kafka's NewPartition state).
            log.warning(
                "partition_state_create_failed",
                partitions=len(missed),
                error=str(answers[missed[0]]),
                first=str(missed[0]),
            )
        return list(found)

    def _unclean_allowed(self, topic: str) -> bool:
        raw = self._zk.get_topic_config(topic).get(_UNCLEAN.name)
        if raw is None:
            return self._config().unclean_leader_election_enable
        try:
            return bool(_UNCLEAN.parse(_UNCLEAN.name, raw))
        except KafkaError:  # written to ZooKeeper by hand, past the admin's check: not "true"
            return False

    def offline_decision(self, tp: TopicPartition) -> Decision:
        """Kafka's OfflinePartitionLeaderElectionStrategy, unclean when the topic allows it."""
        ctx = self._ctx

        def decide(state: PartitionState) -> election.LeaderAndIsr | None:
            if (
                state.leader != NO_LEADER
                and ctx.is_alive(state.leader)
                and ctx.is_replica_online(state.leader, tp)
            ):
                return None  # someone already leads
            assignment = ctx.assignments[tp]
            live = {b for b in ctx.live_broker_ids if ctx.is_replica_online(b, tp)}
            result = election.offline_leader(assignment, state.isr, live)
            if result is None and self._unclean_allowed(tp.topic):
                result = election.offline_leader(assignment, state.isr, live, unclean=True)
                if result is not None:
                    log.warning(
                        "unclean_leader_election",
                        topic=tp.topic,
                        partition=tp.partition,
                        leader=result.leader,
                        previous_isr=list(state.isr),
                    )
            return result

        return decide

    # --- elections asked for (ElectLeaders, auto rebalance, controlled shutdown) ----------------

    def elect_preferred(self, tp: TopicPartition) -> PartitionState | None:
        ctx = self._ctx
        assignment = ctx.assignments[tp]

        def decide(state: PartitionState) -> election.LeaderAndIsr | None:
            return election.preferred_leader(assignment, state.isr, ctx.live_broker_ids)

        return self.update(tp, decide, "preferred replica election")

    def elect_unclean(self, tp: TopicPartition) -> PartitionState | None:
        ctx = self._ctx
        assignment = ctx.assignments[tp]

        def decide(state: PartitionState) -> election.LeaderAndIsr | None:
            return election.offline_leader(assignment, state.isr, ctx.live_broker_ids, unclean=True)

        return self.update(tp, decide, "unclean election requested")

    def elect_away_from(self, tp: TopicPartition, broker_id: int) -> PartitionState | None:
        """Controlled shutdown: a leader other than the brokers shutting down, which leave the
        ISR; nothing when ``broker_id`` no longer leads ``tp``."""
        ctx = self._ctx
        assignment = ctx.assignments[tp]

        def decide(old: PartitionState) -> election.LeaderAndIsr | None:
            if old.leader != broker_id:
                return None
            return election.controlled_shutdown_leader(
                assignment, old.isr, ctx.live_broker_ids, ctx.shutting_down
            )

        return self.update(tp, decide, "controlled shutdown")


def _log_state_change(
    tp: TopicPartition, old: PartitionState, new: PartitionState, reason: str
) -> None:
    fields: dict[str, Any] = {
        "topic": tp.topic,
        "partition": tp.partition,
        "leader": new.leader,
        "leader_epoch": new.leader_epoch,
        "isr": list(new.isr),
        "previous_leader": old.leader,
        "previous_isr": list(old.isr),
        "controller_epoch": new.controller_epoch,
        "reason": reason,
    }
    if new.leader == NO_LEADER:
        log.warning("partition_offline", **fields)
    elif new.leader != old.leader:
        log.info("leader_elected", **fields)
    else:
        log.info("isr_changed", **fields)
