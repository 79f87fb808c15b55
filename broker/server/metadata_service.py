"""The Metadata RPC family: Metadata and DescribeCluster, answered from the MetadataCache.

As Kafka: only live brokers are listed; a requested topic the cache does not know gets
UNKNOWN_TOPIC_OR_PARTITION (``allow_auto_topic_creation`` is not acted on yet), an illegal
name INVALID_TOPIC_EXCEPTION; a partition
whose leader is -1 or not alive gets LEADER_NOT_AVAILABLE with leader_id -1. The cluster id is
the MetadataCache's, read once from /cluster/id when the cache does not have it.

Runs on the broker's event loop (grpc.aio).
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

import grpc
import structlog

from minikafka.broker.config import BrokerConfig
from minikafka.broker.server.metadata_cache import BrokerInfo, MetadataCache
from minikafka.controller.topics import validate_topic_name
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.errors import ErrorCode, KafkaError

__all__ = ["MetadataService"]

INTERNAL_TOPICS = frozenset({"__consumer_offsets"})

_Context = grpc.aio.ServicerContext[Any, Any]

_log = structlog.get_logger(__name__)


class ClusterIdSource(Protocol):
    def get_or_create_cluster_id(self) -> str: ...


class MetadataService(pb_grpc.MetadataServicer):
    """Cluster and topic metadata for clients."""

    def __init__(
        self,
        config: BrokerConfig,
        metadata_cache: MetadataCache,
        zk: ClusterIdSource | None = None,
        *,
        listener: str | None = None,
    ) -> None:
        self._config = config
        self._cache = metadata_cache
        self._zk = zk
        # The listener this servicer answers on: brokers are described by their endpoint on
        # it (a client on EXTERNAL gets EXTERNAL addresses); None = each broker's first one.
        self._listener = listener

    def _endpoint(self, broker: BrokerInfo) -> tuple[str, int] | None:
        """The broker's endpoint on this servicer's listener; None when it has none, and then,
        as in Kafka, it is left out of the answer (a client must never be sent to a port that
        speaks another protocol, nor to another network's names)."""
        if self._listener is None:
            return broker.host, broker.port
        return self._cache.get_listener_endpoint(broker.broker_id, self._listener)

    async def _cluster_id(self) -> str:
        if self._cache.cluster_id is None and self._zk is not None:
            try:
                self._cache.cluster_id = await asyncio.to_thread(self._zk.get_or_create_cluster_id)
            except Exception as exc:
                _log.warning("cluster_id.unreadable", error=str(exc))
        return self._cache.cluster_id or ""

    async def Metadata(self, request: pb.MetadataRequest, context: _Context) -> pb.MetadataResponse:
        cache = self._cache
        response = pb.MetadataResponse(
            cluster_id=await self._cluster_id(), controller_id=cache.controller_id
        )
        listed: set[int] = set()
        for broker in cache.alive_brokers():
            endpoint = self._endpoint(broker)
            if endpoint is None:
                continue
            listed.add(broker.broker_id)
            host, port = endpoint
            entry = response.brokers.add(node_id=broker.broker_id, host=host, port=port)
            if broker.rack is not None:
                entry.rack = broker.rack
        names = [t.name for t in request.topics] if request.topics else cache.topics()
        for name in names:
            topic = response.topics.add(name=name, is_internal=name in INTERNAL_TOPICS)
            partitions = cache.partitions_of(name)
            if not partitions:
                try:
                    validate_topic_name(name)
                except KafkaError as exc:
                    topic.error_code = exc.code
                    topic.error_message = exc.message
                else:
                    topic.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            topic.topic_id = partitions[0].topic_id
            for info in partitions:
                partition = topic.partitions.add(
                    partition_index=info.partition,
                    leader_id=info.leader,
                    leader_epoch=info.leader_epoch,
                    replica_nodes=info.replicas,
                    isr_nodes=info.isr,
                    offline_replicas=info.offline_replicas,
                )
                if info.leader < 0 or not cache.is_alive(info.leader):
                    partition.error_code = ErrorCode.LEADER_NOT_AVAILABLE
                    partition.leader_id = -1
                elif info.leader not in listed:  # alive, but not on this listener
                    partition.error_code = ErrorCode.LISTENER_NOT_FOUND
                    partition.leader_id = -1
        return response

    async def DescribeCluster(
        self, request: pb.DescribeClusterRequest, context: _Context
    ) -> pb.DescribeClusterResponse:
        cache = self._cache
        response = pb.DescribeClusterResponse(
            cluster_id=await self._cluster_id(), controller_id=cache.controller_id
        )
        for broker in cache.alive_brokers():
            endpoint = self._endpoint(broker)
            if endpoint is None:
                continue
            host, port = endpoint
            entry = response.brokers.add(broker_id=broker.broker_id, host=host, port=port)
            if broker.rack is not None:
                entry.rack = broker.rack
        return response
