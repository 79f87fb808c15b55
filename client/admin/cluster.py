"""The cluster as any broker describes it: brokers, controller, topics, the replicas each hosts.

admin.describe_cluster()                  # ClusterDescription(cluster_id, controller_id, ...)
admin.describe_topics(["orders"])         # {"orders": TopicDescription(...)}
admin.describe_replicas([1, 2])           # {1: BrokerReplicas(...), 2: KafkaError(...)}
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import grpc

from minikafka.client.admin._routing import AdminBase, _error
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.common import Node, TopicPartition
from minikafka.proto.errors import ErrorCode, KafkaError, error_for_code

NO_LEADER = -1


@dataclass(frozen=True)
class ClusterDescription:
    cluster_id: str
    controller_id: int  # -1 while no controller is known
    brokers: tuple[Node, ...]


@dataclass(frozen=True)
class PartitionInfo:
    partition: int
    leader: int  # -1 = no leader
    leader_epoch: int
    replicas: tuple[int, ...]  # assigned replicas, preferred leader first
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    error: ErrorCode = ErrorCode.NONE  # e.g. LEADER_NOT_AVAILABLE for an offline partition


@dataclass(frozen=True)
class TopicDescription:
    name: str
    topic_id: str
    is_internal: bool
    partitions: tuple[PartitionInfo, ...]  # by partition number

    @property
    def replication_factor(self) -> int:
        return len(self.partitions[0].replicas) if self.partitions else 0


class ClusterAdmin(AdminBase):
    """Metadata reads, from any broker (DescribeReplicas: from each broker named)."""

    def describe_cluster(self, *, timeout_ms: int | None = None) -> ClusterDescription:
        metadata = self._describe_cluster(timeout_ms)
        return ClusterDescription(
            cluster_id=metadata.cluster_id,
            controller_id=metadata.controller_id,
            brokers=tuple(sorted(metadata.brokers.values(), key=lambda n: n.id)),
        )

    def list_topics(
        self, *, include_internal: bool = True, timeout_ms: int | None = None
    ) -> list[str]:
        response = self._metadata([], timeout_ms)
        return sorted(
            t.name
            for t in response.topics
            if t.error_code == ErrorCode.NONE and (include_internal or not t.is_internal)
        )

    def describe_topics(
        self, topics: Sequence[str] | None = None, *, timeout_ms: int | None = None
    ) -> dict[str, TopicDescription]:
        """Leaders, replicas and ISR of the named topics (None = every topic), by name.

        A named topic that does not exist raises UnknownTopicOrPartitionError (or the topic's
        own error, e.g. INVALID_TOPIC_EXCEPTION).
        """
        response = self._metadata(list(topics or []), timeout_ms)
        described: dict[str, TopicDescription] = {}
        for topic in response.topics:
            error = _error(topic.error_code, topic.error_message)
            if error is not None:
                if topics:
                    raise error
                continue
            partitions = sorted(
                (
                    PartitionInfo(
                        partition=p.partition_index,
                        leader=p.leader_id,
                        leader_epoch=p.leader_epoch,
                        replicas=tuple(p.replica_nodes),
                        isr=tuple(p.isr_nodes),
                        offline_replicas=tuple(p.offline_replicas),
                        error=ErrorCode(p.error_code)
                        if p.error_code in ErrorCode._value2member_map_
                        else ErrorCode.UNKNOWN_SERVER_ERROR,
                    )
                    for p in topic.partitions
                ),
                key=lambda p: p.partition,
            )
            described[topic.name] = TopicDescription(
                topic.name, topic.topic_id, topic.is_internal, tuple(partitions)
            )
        return dict(sorted(described.items()))

    def describe_replicas(
        self,
        broker_ids: Iterable[int] | None = None,
        *,
        topics: Sequence[str] = (),
        timeout_ms: int | None = None,
    ) -> dict[int, BrokerReplicas | KafkaError]:
        """What each broker knows of the replicas it hosts (DescribeReplicas, asked of every
        named broker at once; None = every live broker), as Kafka's describeLogDirs: a broker
        that does not answer within the timeout, or that is not live, maps to its error.
        ``topics`` empty = every hosted partition."""
        timeout_s = self._timeout(timeout_ms) / 1000
        brokers = self._cluster(refresh=broker_ids is None, timeout_s=timeout_s).brokers
        wanted = sorted(brokers) if broker_ids is None else sorted(set(broker_ids))
        request = pb.DescribeReplicasRequest(topics=list(topics))
        calls: dict[int, grpc.Future[pb.DescribeReplicasResponse]] = {}
        results: dict[int, BrokerReplicas | KafkaError] = {}
        for broker_id in wanted:
            node = brokers.get(broker_id)
            if node is None:
                results[broker_id] = error_for_code(
                    ErrorCode.BROKER_NOT_AVAILABLE, f"broker {broker_id} is not alive"
                )
                continue
            stub = pb_grpc.AdminStub(self._pool.get(node.address))
            calls[broker_id] = stub.DescribeReplicas.future(request, timeout=timeout_s)
        for broker_id, call in calls.items():
            try:
                response: pb.DescribeReplicasResponse = call.result()
            except grpc.RpcError as exc:
                results[broker_id] = error_for_code(
                    ErrorCode.NETWORK_EXCEPTION, f"broker {broker_id}: {exc.code().name}"
                )
                continue
            error = _error(response.error_code, response.error_message)
            results[broker_id] = error if error is not None else _broker_replicas(response)
        return dict(sorted(results.items()))


@dataclass(frozen=True)
class FollowerReplica:
    """A follower as its leader sees it."""

    broker_id: int
    log_end_offset: int  # as of its last fetch; -1 = none since this leader's epoch began
    last_caught_up_time_ms: int  # wall clock; 0 = never


@dataclass(frozen=True)
class PartitionReplicas:
    """One replica as the broker hosting it sees it."""

    topic: str
    partition: int
    is_leader: bool
    leader: int  # -1 = offline
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    followers: tuple[FollowerReplica, ...]  # on the leader only

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True)
class BrokerReplicas:
    broker_id: int
    broker_epoch: int  # its registration in ZooKeeper (czxid); -1 before it registered
    controller_epoch: int  # the newest it has seen
    partitions: tuple[PartitionReplicas, ...]


def _broker_replicas(response: pb.DescribeReplicasResponse) -> BrokerReplicas:
    return BrokerReplicas(
        response.broker_id,
        response.broker_epoch,
        response.controller_epoch,
        tuple(
            PartitionReplicas(
                p.topic,
                p.partition_index,
                p.is_leader,
                p.leader_id,
                p.leader_epoch,
                tuple(p.replica_nodes),
                tuple(p.isr_nodes),
                p.high_watermark,
                p.log_start_offset,
                p.log_end_offset,
                tuple(
                    FollowerReplica(f.broker_id, f.log_end_offset, f.last_caught_up_time_ms)
                    for f in p.followers
                ),
            )
            for p in response.partitions
        ),
    )
