"""What this broker knows of the cluster, as the controller last told it (UpdateMetadata).

Kafka's ZkMetadataCache: each UpdateMetadata carries the full set of live brokers and the
partition states that changed (a partition whose leader is -2 is being deleted and leaves the
cache). Any broker answers Metadata and DescribeCluster from here, and the replica manager finds
a leader's inter-broker endpoint here when LeaderAndIsr did not name it.

A request that must not be answered before the cache knows something (CreateTopics, until its
partitions have leaders: Kafka's DelayedCreatePartitions) waits with ``wait_until``, a future
parked in a purgatory (broker/replication/delayed.py) that each applied UpdateMetadata wakes:

    known = await cache.wait_until(lambda: cache.contains_topic("t"), timeout_s=30)

Not thread-safe: owned by the broker's event loop. UpdateMetadata is applied there too (the
Control service is a grpc.aio servicer on that loop), so ``update`` wakes the waiters directly.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from minikafka.broker.replication.delayed import Purgatory, complete_when
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto.common import TopicPartition

__all__ = ["BrokerInfo", "MetadataCache", "PartitionInfo"]

LEADER_DURING_DELETE = -2
NO_LEADER = -1
_UPDATED = "metadata_cache.updated"  # the one key waiters park under, notified by every update

_log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class ListenerEndpoint:
    listener: str
    host: str
    port: int


@dataclass(frozen=True)
class BrokerInfo:
    broker_id: int
    host: str
    port: int
    rack: str | None
    endpoints: tuple[ListenerEndpoint, ...]


@dataclass(frozen=True)
class PartitionInfo:
    topic: str
    topic_id: str
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    offline_replicas: tuple[int, ...]
    partition_epoch: int
    controller_epoch: int


class MetadataCache:
    """Live brokers, partition states and the controller id (see the module docstring)."""

    def __init__(self, broker_id: int, cluster_id: str | None = None) -> None:
        self.broker_id = broker_id
        self.cluster_id = cluster_id
        self.controller_id = -1
        self._brokers: dict[int, BrokerInfo] = {}
        self._partitions: dict[str, dict[int, PartitionInfo]] = {}
        # Kafka's topicIdsToNames, rebuilt by each update that changes partitions: Fetch v13+
        # resolves every topic it names here.
        self._names_by_id: dict[str, str] = {}
        self._updates = Purgatory()

    # --- updates ------------------------------------------------------------------------------

    def update(self, request: pb.UpdateMetadataRequest) -> list[TopicPartition]:
        """Apply an UpdateMetadata (already checked for staleness); returns deleted partitions."""
        self.controller_id = request.controller_id
        self._brokers = {
            broker.id: BrokerInfo(
                broker_id=broker.id,
                host=broker.host,
                port=broker.port,
                rack=broker.rack if broker.HasField("rack") else None,
                endpoints=tuple(
                    ListenerEndpoint(e.listener, e.host, e.port) for e in broker.endpoints
                ),
            )
            for broker in request.live_brokers
        }
        deleted: list[TopicPartition] = []
        for ps in request.partition_states:
            if ps.leader == LEADER_DURING_DELETE:
                partitions = self._partitions.get(ps.topic_name)
                if partitions is not None and partitions.pop(ps.partition_index, None) is not None:
                    deleted.append(TopicPartition(ps.topic_name, ps.partition_index))
                    if not partitions:
                        del self._partitions[ps.topic_name]
                continue
            self._partitions.setdefault(ps.topic_name, {})[ps.partition_index] = PartitionInfo(
                topic=ps.topic_name,
                topic_id=ps.topic_id,
                partition=ps.partition_index,
                leader=ps.leader,
                leader_epoch=ps.leader_epoch,
                isr=tuple(ps.isr),
                replicas=tuple(ps.replicas),
                offline_replicas=tuple(ps.offline_replicas),
                partition_epoch=ps.partition_epoch,
                controller_epoch=ps.controller_epoch,
            )
        if request.partition_states:
            self._names_by_id = {
                info.topic_id: topic
                for topic, partitions in self._partitions.items()
                for info in itertools.islice(partitions.values(), 1)
                if info.topic_id
            }
        _log.debug(
            "metadata_cache.updated",
            controller_id=self.controller_id,
            controller_epoch=request.controller_epoch,
            live_brokers=sorted(self._brokers),
            partition_states=len(request.partition_states),
            deleted=[str(tp) for tp in deleted],
        )
        self._updates.notify(_UPDATED)
        return deleted

    async def wait_until(self, condition: Callable[[], bool], timeout_s: float) -> bool:
        """Until ``condition()`` holds, checked now and after every update applied, at most
        ``timeout_s``; whether it held. Nothing polls, and a wait that times out or is
        cancelled leaves nothing parked (``waiting``)."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        held = await complete_when(
            lambda: True if condition() else None, [_UPDATED], self._updates, deadline
        )
        return held is not None

    @property
    def waiting(self) -> int:
        """Waits parked until the next update."""
        return len(self._updates)

    # --- brokers ------------------------------------------------------------------------------

    def alive_brokers(self) -> list[BrokerInfo]:
        return [self._brokers[broker_id] for broker_id in sorted(self._brokers)]

    def get_alive_broker(self, broker_id: int) -> BrokerInfo | None:
        return self._brokers.get(broker_id)

    def is_alive(self, broker_id: int) -> bool:
        return broker_id in self._brokers

    def get_rack(self, broker_id: int) -> str | None:
        """The live broker's ``broker.rack`` (None: no rack, or not alive)."""
        broker = self._brokers.get(broker_id)
        return None if broker is None else broker.rack

    def get_alive_broker_endpoint(
        self, broker_id: int, listener_name: str
    ) -> tuple[str, int] | None:
        """The broker's (host, port) on ``listener_name`` (its first endpoint if not listed)."""
        broker = self._brokers.get(broker_id)
        if broker is None:
            return None
        return self.get_listener_endpoint(broker_id, listener_name) or (broker.host, broker.port)

    def get_listener_endpoint(self, broker_id: int, listener_name: str) -> tuple[str, int] | None:
        """The live broker's (host, port) on ``listener_name``; None when it is not alive or
        has no such listener (Kafka leaves it out of Metadata on that listener)."""
        broker = self._brokers.get(broker_id)
        if broker is None:
            return None
        for endpoint in broker.endpoints:
            if endpoint.listener == listener_name:
                return endpoint.host, endpoint.port
        return None

    # --- partitions ---------------------------------------------------------------------------

    def topics(self) -> list[str]:
        return sorted(self._partitions)

    def contains_topic(self, topic: str) -> bool:
        return topic in self._partitions

    def contains_partition(self, topic: str, partition: int) -> bool:
        return partition in self._partitions.get(topic, {})

    def topic_names_by_id(self) -> dict[str, str]:
        """Topic id (ZooKeeper's text form) -> name, for every topic with an id. Read only: the
        cache's own map, replaced (never changed in place) by an update."""
        return self._names_by_id

    def topic_id(self, topic: str) -> str:
        """The topic's id in ZooKeeper's text form; "" when the topic or its id is unknown."""
        partitions = self._partitions.get(topic)
        if not partitions:
            return ""
        return next(iter(partitions.values())).topic_id

    def partitions_of(self, topic: str) -> list[PartitionInfo]:
        """The topic's partitions by index; empty when the topic is unknown."""
        partitions = self._partitions.get(topic, {})
        return [partitions[index] for index in sorted(partitions)]

    def get_partition(self, topic: str, partition: int) -> PartitionInfo | None:
        return self._partitions.get(topic, {}).get(partition)
