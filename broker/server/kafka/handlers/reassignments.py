"""AlterPartitionReassignments (key 45) and ListPartitionReassignments (key 46), KIP-455: the
controller's requests, answered by the TopicAdmin calls (broker/server/core/reassignments.py)
the gRPC door makes.

Kafka clients send them to the controller named in Metadata's ``controller_id``; any other
broker answers the whole request NOT_CONTROLLER. A partition whose ``replicas`` is null cancels
its reassignment. A 3.9 ZooKeeper broker serves version 0 of both.
"""

from __future__ import annotations

from minikafka.broker.replication.requests import by_topic
from minikafka.broker.server.kafka.broker import KafkaBroker
from minikafka.broker.server.kafka.registry import Request, handler
from minikafka.broker.server.kafka.schema import Entity
from minikafka.proto.common import TopicPartition


@handler(api_key=45, min_version=0, max_version=0)
async def alter_partition_reassignments(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    requests: dict[TopicPartition, list[int] | None] = {}
    for topic in body.topics:
        for p in topic.partitions:
            tp = TopicPartition(topic.name, p.partition_index)
            requests[tp] = None if p.replicas is None else [int(r) for r in p.replicas]
    answer = await broker.admin.alter_partition_reassignments(requests, session=request.session)
    return request.response(
        {
            "throttle_time": 0,
            "error_code": answer.error_code,
            "error_message": answer.error_message or None,
            "responses": [
                {
                    "name": topic,
                    "partitions": [
                        {
                            "partition_index": r.partition,
                            "error_code": r.error_code,
                            "error_message": r.error_message or None,
                        }
                        for r in rs
                    ],
                }
                for topic, rs in by_topic(answer.partitions).items()
            ],
        }
    )


@handler(api_key=46, min_version=0, max_version=0)
async def list_partition_reassignments(request: Request, broker: KafkaBroker) -> Entity:
    named = request.body.topics
    partitions = (
        None
        if named is None
        else [TopicPartition(t.name, int(p)) for t in named for p in t.partition_indexes]
    )
    answer = await broker.admin.list_partition_reassignments(partitions, session=request.session)
    return request.response(
        {
            "throttle_time": 0,
            "error_code": answer.error_code,
            "error_message": answer.error_message or None,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {
                            "partition_index": r.partition,
                            "replicas": list(r.replicas),
                            "adding_replicas": list(r.adding_replicas),
                            "removing_replicas": list(r.removing_replicas),
                        }
                        for r in rs
                    ],
                }
                for topic, rs in by_topic(answer.reassignments).items()
            ],
        }
    )
