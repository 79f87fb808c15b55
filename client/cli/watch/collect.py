"""One ``Snapshot`` of the cluster from the brokers' own answers, a few RPCs a refresh.

    watcher = ClusterWatcher(admin, topics=["orders"])
    snapshot = watcher.snapshot()      # raises KafkaError only before the cluster first answered

Each refresh asks any broker for DescribeCluster (live brokers, controller) and Metadata
(leader, leader epoch, replicas and ISR of each partition, as the controller last sent them),
then every live broker at once for DescribeReplicas: what it hosts, and as leader its high
watermark, log start and log end offsets and the log end offset it last learnt from each
follower. A leader's answer is newer than the metadata for what it writes itself (an ISR shrink
or expansion reaches the other brokers only through the controller), so it wins when its
leader epoch is not older. A follower the leader has not heard from since its epoch began shows
the log end offset it reports itself; every answering replica's own LEO, HW and leader epoch
are kept too (``PartitionView.reports``: a follower's HW, which ``minikafka replay`` draws).
Group lag is each group's committed offsets (OffsetFetch
at its coordinator) against the partition's high watermark, what a consumer can read up to,
as kafka-consumer-groups.sh computes it.

Partitions being moved (KIP-455) show their adding and removing replicas: ListPartitionReassignments
at the controller, when the admin client has it (``ReassignmentLister``; a refresh whose
listing fails shows none).

Brokers are remembered: a broker seen once, or named in a partition's replicas, that is no
longer registered is shown dead, with the last address and epoch known for it. A refresh whose
group part fails (a coordinator moving during a failover) keeps the groups of the last one; a
refresh that reaches no broker at all keeps the whole last snapshot, with its error.

Not thread-safe: one watcher belongs to the watch loop's thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from minikafka.client.cli.watch.model import (
    UNKNOWN,
    BrokerView,
    GroupPartitionLag,
    GroupView,
    PartitionView,
    ReplicaReport,
    Snapshot,
)
from minikafka.proto.errors import KafkaError

if TYPE_CHECKING:  # client.admin loads grpc: only when the command runs (see minikafka.cli)
    from minikafka.client.admin import (
        BrokerReplicas,
        ClusterDescription,
        ConsumerGroupListing,
        PartitionReassignment,
        PartitionReplicas,
        TopicDescription,
    )
    from minikafka.proto.common import Node, OffsetAndMetadata, TopicPartition

__all__ = ["ClusterWatcher", "ReassignmentLister", "WatchAdmin"]

# Per refresh: a broker that has not answered by then is shown as not answering.
_REPLICAS_TIMEOUT_MS = 2000
_GROUPS_TIMEOUT_MS = 2000


class WatchAdmin(Protocol):
    """What the watch needs of AdminClient (unit tests pass a fake)."""

    def describe_cluster(self, *, timeout_ms: int | None = ...) -> ClusterDescription: ...
    def describe_topics(
        self, topics: Sequence[str] | None = ..., *, timeout_ms: int | None = ...
    ) -> dict[str, TopicDescription]: ...
    def describe_replicas(
        self,
        broker_ids: Iterable[int] | None = ...,
        *,
        topics: Sequence[str] = ...,
        timeout_ms: int | None = ...,
    ) -> dict[int, BrokerReplicas | KafkaError]: ...
    def list_groups(
        self, *, states: Sequence[str] = ..., timeout_ms: int | None = ...
    ) -> list[ConsumerGroupListing]: ...
    def list_consumer_group_offsets(
        self,
        group_id: str,
        partitions: Iterable[TopicPartition] | None = ...,
        *,
        timeout_ms: int | None = ...,
    ) -> dict[TopicPartition, OffsetAndMetadata]: ...


@runtime_checkable
class ReassignmentLister(Protocol):
    """An admin that can list the partitions being moved (AdminClient can)."""

    def list_partition_reassignments(
        self, partitions: Iterable[TopicPartition] | None = ..., *, timeout_ms: int | None = ...
    ) -> dict[TopicPartition, PartitionReassignment]: ...


class ClusterWatcher:
    """See the module docstring."""

    def __init__(
        self,
        admin: WatchAdmin,
        *,
        topics: Sequence[str] = (),
        include_internal: bool = False,
        groups: bool = True,
        clock: Callable[[], float] = time.time,
        replicas_timeout_ms: int = _REPLICAS_TIMEOUT_MS,
    ) -> None:
        self._admin = admin
        self._replicas_timeout_ms = replicas_timeout_ms
        self._topics = frozenset(topics)
        self._include_internal = include_internal
        self._groups = groups
        self._clock = clock
        self._known: dict[int, BrokerView] = {}  # every broker seen, as last seen
        self._controller_epoch = UNKNOWN
        self._last: Snapshot | None = None

    def snapshot(self) -> Snapshot:
        """The cluster now; after the first success a failure returns the last snapshot with
        its ``error`` set instead of raising."""
        now = self._clock()
        try:
            cluster = self._admin.describe_cluster()
            topics = self._admin.describe_topics(None)
        except KafkaError as exc:
            if self._last is None:
                raise
            self._last = replace(self._last, time=now, error=str(exc))
            return self._last
        watched = {
            name: topic
            for name, topic in topics.items()
            if (name in self._topics)
            or (not self._topics and (self._include_internal or not topic.is_internal))
        }
        live = {node.id: node for node in cluster.brokers}
        answers = self._admin.describe_replicas(
            sorted(live), topics=sorted(watched), timeout_ms=self._replicas_timeout_ms
        )
        replicas = {b: a for b, a in answers.items() if not isinstance(a, KafkaError)}
        partitions = _partitions(watched, replicas, self._reassignments())
        snapshot = Snapshot(
            time=now,
            cluster_id=cluster.cluster_id,
            controller_id=cluster.controller_id,
            controller_epoch=self._controller(replicas),
            brokers=self._brokers(live, replicas, partitions),
            partitions=partitions,
            groups=self._group_views(partitions),
        )
        self._last = snapshot
        return snapshot

    def _reassignments(self) -> dict[tuple[str, int], PartitionReassignment]:
        if not isinstance(self._admin, ReassignmentLister):
            return {}
        try:
            listed = self._admin.list_partition_reassignments(timeout_ms=self._replicas_timeout_ms)
        except KafkaError:
            return {}
        return {(tp.topic, tp.partition): r for tp, r in listed.items()}

    def _controller(self, replicas: dict[int, BrokerReplicas]) -> int:
        epochs = [answer.controller_epoch for answer in replicas.values()]
        if epochs:
            self._controller_epoch = max(epochs)
        return self._controller_epoch

    def _brokers(
        self,
        live: dict[int, Node],
        replicas: dict[int, BrokerReplicas],
        partitions: Sequence[PartitionView],
    ) -> tuple[BrokerView, ...]:
        ids = set(self._known) | set(live) | {r for p in partitions for r in p.replicas}
        views = []
        for broker_id in sorted(ids):
            before = self._known.get(broker_id, BrokerView(broker_id, alive=False))
            node = live.get(broker_id)
            answer = replicas.get(broker_id)
            if answer is not None:
                epoch = answer.broker_epoch
            elif node is not None and not before.alive:  # back, registered anew: not known yet
                epoch = UNKNOWN
            else:
                epoch = before.broker_epoch
            view = BrokerView(
                broker_id,
                alive=node is not None,
                answering=answer is not None,
                address=node.address if node is not None else before.address,
                broker_epoch=epoch,
            )
            self._known[broker_id] = view
            views.append(view)
        return tuple(views)

    def _group_views(self, partitions: Sequence[PartitionView]) -> tuple[GroupView, ...]:
        if not self._groups:
            return ()
        ends = {(p.topic, p.partition): p.high_watermark for p in partitions}
        try:
            views = []
            for listing in self._admin.list_groups(timeout_ms=_GROUPS_TIMEOUT_MS):
                offsets = self._admin.list_consumer_group_offsets(
                    listing.group_id, timeout_ms=_GROUPS_TIMEOUT_MS
                )
                lags = tuple(
                    GroupPartitionLag(tp.topic, tp.partition, om.offset, ends[tp])
                    for tp, om in offsets.items()
                    if (tp.topic, tp.partition) in ends
                )
                if lags or not self._topics:
                    views.append(GroupView(listing.group_id, listing.state, lags))
            return tuple(views)
        except KafkaError:
            return self._last.groups if self._last is not None else ()


def _partitions(
    topics: dict[str, TopicDescription],
    replicas: dict[int, BrokerReplicas],
    moving: dict[tuple[str, int], PartitionReassignment] | None = None,
) -> tuple[PartitionView, ...]:
    hosted: dict[tuple[str, int], dict[int, PartitionReplicas]] = {}
    for broker_id, answer in replicas.items():
        for p in answer.partitions:
            hosted.setdefault((p.topic, p.partition), {})[broker_id] = p
    views = []
    for name, topic in sorted(topics.items()):
        for info in topic.partitions:
            here = hosted.get((name, info.partition), {})
            leader, epoch, isr = info.leader, info.leader_epoch, tuple(sorted(info.isr))
            replica_ids = info.replicas
            leading = [
                p for p in here.values() if p.is_leader and p.leader_epoch >= info.leader_epoch
            ]
            own = max(leading, key=lambda p: p.leader_epoch, default=None)
            hw = lso = UNKNOWN
            known: dict[int, int] = {}
            if own is not None:
                leader, epoch, isr = own.leader, own.leader_epoch, tuple(sorted(own.isr))
                replica_ids = own.replicas or replica_ids
                hw, lso = own.high_watermark, own.log_start_offset
                known[own.leader] = own.log_end_offset
                known.update({f.broker_id: f.log_end_offset for f in own.followers})
            leos = []
            for replica in replica_ids:
                leo = known.get(replica, UNKNOWN)
                if leo == UNKNOWN and replica in here:
                    leo = here[replica].log_end_offset
                leos.append((replica, leo))
            views.append(
                PartitionView(
                    name,
                    info.partition,
                    leader,
                    epoch,
                    tuple(replica_ids),
                    isr,
                    hw,
                    lso,
                    tuple(leos),
                    tuple(
                        ReplicaReport(
                            b, r.log_end_offset, r.high_watermark, r.leader_epoch, r.is_leader
                        )
                        for b, r in sorted(here.items())
                    ),
                    *_moving(moving, name, info.partition),
                )
            )
    return tuple(views)


def _moving(
    moving: dict[tuple[str, int], PartitionReassignment] | None, topic: str, partition: int
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(adding, removing) replicas of a partition being moved; empty otherwise."""
    found = (moving or {}).get((topic, partition))
    return ((), ()) if found is None else (found.adding_replicas, found.removing_replicas)
