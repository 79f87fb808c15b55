"""The Metadata RPC family over gRPC: Metadata and DescribeCluster, adapted to the core's
MetadataApi (broker/server/core/metadata.py, where the rules are).

An empty topic list asks for every topic (the gRPC message has no null list).
Runs on the broker's event loop (grpc.aio).
"""

from __future__ import annotations

from typing import Any

import grpc

from minikafka.broker.server.core.metadata import MetadataApi
from minikafka.broker.server.grpc_session import grpc_session
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.common import Node

__all__ = ["MetadataService"]

_Context = grpc.aio.ServicerContext[Any, Any]


class MetadataService(pb_grpc.MetadataServicer):
    """Cluster and topic metadata for gRPC clients on one listener."""

    def __init__(self, api: MetadataApi, *, listener: str | None = None) -> None:
        self._api = api
        # Brokers are described by their endpoint on this listener (a client on EXTERNAL gets
        # EXTERNAL addresses); None = each broker's first one.
        self._listener = listener

    async def Metadata(self, request: pb.MetadataRequest, context: _Context) -> pb.MetadataResponse:
        answer = await self._api.metadata(
            [t.name for t in request.topics] or None,
            listener=self._listener,
            allow_auto_topic_creation=request.allow_auto_topic_creation,
            session=grpc_session(context, self._listener or ""),
        )
        response = pb.MetadataResponse(
            cluster_id=answer.cluster_id, controller_id=answer.controller_id
        )
        for node in answer.brokers:
            _add_broker(response.brokers.add(node_id=node.id), node)
        for topic in answer.topics:
            entry = response.topics.add(
                name=topic.name,
                error_code=topic.error,
                error_message=topic.error_message,
                topic_id=topic.topic_id,
                is_internal=topic.is_internal,
            )
            for p in topic.partitions:
                entry.partitions.add(
                    error_code=p.error,
                    partition_index=p.partition_index,
                    leader_id=p.leader_id,
                    leader_epoch=p.leader_epoch,
                    replica_nodes=p.replica_nodes,
                    isr_nodes=p.isr_nodes,
                    offline_replicas=p.offline_replicas,
                )
        return response

    async def DescribeCluster(
        self, request: pb.DescribeClusterRequest, context: _Context
    ) -> pb.DescribeClusterResponse:
        answer = await self._api.describe_cluster(
            listener=self._listener, session=grpc_session(context, self._listener or "")
        )
        response = pb.DescribeClusterResponse(
            cluster_id=answer.cluster_id, controller_id=answer.controller_id
        )
        for node in answer.brokers:
            _add_broker(response.brokers.add(broker_id=node.id), node)
        return response


def _add_broker(
    entry: pb.MetadataResponse.MetadataResponseBroker
    | pb.DescribeClusterResponse.DescribeClusterBroker,
    node: Node,
) -> None:
    entry.host = node.host
    entry.port = node.port
    if node.rack is not None:
        entry.rack = node.rack
