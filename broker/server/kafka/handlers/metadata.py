"""Metadata (key 3) and DescribeCluster (key 60), from the servicer the gRPC door uses, with the
brokers' endpoints on the Kafka listener the client came in on.

Versions: a null topic list (v1+) or an empty one (v0) asks for every topic; an empty list
from v1 on asks for none. ``allow_auto_topic_creation`` is not acted on, as over gRPC.
"""

from __future__ import annotations

from minikafka.broker.server.kafka.broker import KafkaBroker, peer_context
from minikafka.broker.server.kafka.handlers.topic_ids import to_uuid
from minikafka.broker.server.kafka.registry import Request, handler
from minikafka.broker.server.kafka.schema import Entity
from minikafka.proto import minikafka_pb2 as pb


@handler(api_key=3, min_version=0, max_version=12)
async def metadata(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    requested = body.topics
    every = requested is None or (request.api_version == 0 and not requested)
    names = [] if every else [t.name for t in requested if t.name is not None]
    service = broker.metadata(request.listener)
    context = peer_context(request)
    answer = await service.Metadata(
        pb.MetadataRequest(topics=[pb.MetadataRequest.MetadataRequestTopic(name=n) for n in names]),
        context,
    )
    topics = []
    if every or names:
        for topic in answer.topics:
            topics.append(
                {
                    "error_code": topic.error_code,
                    "name": topic.name,
                    "topic_id": to_uuid(topic.topic_id),
                    "is_internal": topic.is_internal,
                    "partitions": [
                        {
                            "error_code": p.error_code,
                            "partition_index": p.partition_index,
                            "leader_id": p.leader_id,
                            "leader_epoch": p.leader_epoch,
                            "replica_nodes": list(p.replica_nodes),
                            "isr_nodes": list(p.isr_nodes),
                            "offline_replicas": list(p.offline_replicas),
                        }
                        for p in topic.partitions
                    ],
                    "topic_authorized_operations": -2147483648,
                }
            )
    return request.response(
        {
            "throttle_time": 0,
            "brokers": [
                {
                    "node_id": b.node_id,
                    "host": b.host,
                    "port": b.port,
                    "rack": b.rack if b.HasField("rack") else None,
                }
                for b in answer.brokers
            ],
            "cluster_id": answer.cluster_id or None,
            "controller_id": answer.controller_id,
            "topics": topics,
            "cluster_authorized_operations": -2147483648,
        }
    )


@handler(api_key=60, min_version=0, max_version=1)
async def describe_cluster(request: Request, broker: KafkaBroker) -> Entity:
    service = broker.metadata(request.listener)
    context = peer_context(request)
    answer = await service.DescribeCluster(pb.DescribeClusterRequest(), context)
    return request.response(
        {
            "throttle_time": 0,
            "error_code": answer.error_code,
            "error_message": answer.error_message or None,
            "endpoint_type": 1,
            "cluster_id": answer.cluster_id,
            "controller_id": answer.controller_id,
            "brokers": [
                {
                    "broker_id": b.broker_id,
                    "host": b.host,
                    "port": b.port,
                    "rack": b.rack if b.HasField("rack") else None,
                }
                for b in answer.brokers
            ],
            "cluster_authorized_operations": -2147483648,
        }
    )
