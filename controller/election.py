"""Leader election rules of Kafka's ZooKeeper-mode controller, as pure functions.

Every rule walks the assigned replicas (AR) in assignment order, so the first replica (the
preferred one) wins whenever it qualifies::

    offline         first AR member alive and in ISR; ISR := ISR ∩ alive.
                    None of them and unclean.leader.election.enable: first alive AR member,
                    ISR := [it] (records it had not replicated may be lost).
    preferred       AR[0], if alive and in ISR; ISR unchanged.
    controlled      first AR member alive, in ISR and not shutting down;
    shutdown        ISR := ISR minus the brokers shutting down.
    reassignment    the current leader if it stays (in TRS) and is alive, else the first
                    target replica (TRS order) alive and in ISR; ISR := ISR minus the
                    replicas removed.

A rule returns the new (leader, isr), or None when no replica qualifies; the caller bumps the
leader epoch and writes the state znode. ``remove_replica_from_isr`` is what happens to a
partition when one of its replicas goes offline (Kafka's OfflineReplica transition).

    >>> offline_leader((1, 2, 3), isr=(2, 3), live={1, 3})
    LeaderAndIsr(leader=3, isr=(3,))

Pure functions: safe from any thread.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import NamedTuple

from minikafka.zk.zk_data import NO_LEADER

__all__ = [
    "LeaderAndIsr",
    "controlled_shutdown_leader",
    "offline_leader",
    "preferred_leader",
    "reassignment_leader",
    "remove_replica_from_isr",
]


class LeaderAndIsr(NamedTuple):
    leader: int
    isr: tuple[int, ...]


def offline_leader(
    assignment: Sequence[int],
    isr: Sequence[int],
    live: Collection[int],
    *,
    unclean: bool = False,
) -> LeaderAndIsr | None:
    """A leader for a partition whose leader is gone (or that has none); see module docstring."""
    live_isr = tuple(r for r in isr if r in live)
    for replica in assignment:
        if replica in live and replica in isr:
            return LeaderAndIsr(replica, live_isr)
    if unclean:
        for replica in assignment:
            if replica in live:
                return LeaderAndIsr(replica, (replica,))
    return None


def preferred_leader(
    assignment: Sequence[int], isr: Sequence[int], live: Collection[int]
) -> LeaderAndIsr | None:
    """AR[0] as leader, when it is alive and in sync; the ISR stays as it is."""
    if not assignment:
        return None
    preferred = assignment[0]
    if preferred in live and preferred in isr:
        return LeaderAndIsr(preferred, tuple(isr))
    return None


def controlled_shutdown_leader(
    assignment: Sequence[int],
    isr: Sequence[int],
    live: Collection[int],
    shutting_down: Collection[int],
) -> LeaderAndIsr | None:
    """A leader other than the brokers shutting down; they also leave the ISR."""
    new_isr = tuple(r for r in isr if r not in shutting_down)
    for replica in assignment:
        if replica in live and replica in isr and replica not in shutting_down:
            return LeaderAndIsr(replica, new_isr)
    return None


def reassignment_leader(
    leader: int,
    target: Sequence[int],
    isr: Sequence[int],
    live: Collection[int],
    removed: Collection[int] = (),
) -> LeaderAndIsr | None:
    """A partition's (leader, isr) once its replicas are ``target`` (Kafka's
    ReassignPartitionLeaderElectionStrategy); None when no target replica is alive and in sync.

        >>> reassignment_leader(0, target=(1, 2, 3), isr=(0, 1, 2, 3), live={0, 1, 2, 3},
        ...                     removed=(0,))
        LeaderAndIsr(leader=1, isr=(1, 2, 3))
    """
    new_isr = tuple(r for r in isr if r not in removed)
    if leader in target and leader in live and leader in new_isr:
        return LeaderAndIsr(leader, new_isr)
    for replica in target:
        if replica in live and replica in new_isr:
            return LeaderAndIsr(replica, new_isr)
    return None


def remove_replica_from_isr(leader: int, isr: Sequence[int], replica: int) -> LeaderAndIsr:
    """The state after ``replica`` went offline: it leaves the ISR and, if it led, the lead.

    As in Kafka, the last ISR member is never removed: a partition whose every in-sync replica
    died keeps the last one in its ISR with no leader, so that this replica (and only this one,
    without unclean election) can lead again when it returns.
    """
    new_leader = NO_LEADER if leader == replica else leader
    new_isr = tuple(isr) if len(isr) == 1 else tuple(r for r in isr if r != replica)
    return LeaderAndIsr(new_leader, new_isr)
