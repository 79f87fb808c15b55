"""AlterReplicaLogDirs (key 34) and DescribeLogDirs (key 35), KIP-113: the LogDirApi calls
(broker/server/core/log_dirs.py) the gRPC door makes too.

Each broker answers for its own log dirs, so admin clients send these to every broker whose
dirs they want (kafka-log-dirs.sh asks each broker of --broker-list). Kafka 3.9 serves
DescribeLogDirs 0-4 and AlterReplicaLogDirs 0-2; kio carries neither v0, so 1-4 and 1-2 here.
DescribeLogDirs v3 added the top-level error (CLUSTER_AUTHORIZATION_FAILED); before it a
refused request answers no dirs, as Kafka does.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from minikafka.broker.server.core.log_dirs import LogDirDescription
from minikafka.broker.server.kafka.broker import KafkaBroker
from minikafka.broker.server.kafka.registry import Request, handler
from minikafka.broker.server.kafka.schema import Entity
from minikafka.proto.common import TopicPartition


@handler(api_key=34, min_version=1, max_version=2)
async def alter_replica_log_dirs(request: Request, broker: KafkaBroker) -> Entity:
    destinations: dict[TopicPartition, str] = {}
    for log_dir in request.body.dirs:
        for topic in log_dir.topics:
            for partition in topic.partitions:
                destinations[TopicPartition(topic.name, int(partition))] = log_dir.path
    errors = broker.log_dirs.alter_replica_log_dirs(destinations, session=request.session)
    by_topic: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for tp, code in errors.items():
        by_topic[tp.topic].append({"partition_index": tp.partition, "error_code": code})
    return request.response(
        {
            "throttle_time": 0,
            "results": [
                {"topic_name": topic, "partitions": partitions}
                for topic, partitions in by_topic.items()
            ],
        }
    )


def _log_dir_result(description: LogDirDescription) -> dict[str, Any]:
    partitions: dict[str, list[dict[str, Any]]] = {topic: [] for topic in description.topics}
    for p in description.partitions:
        partitions.setdefault(p.topic, []).append(
            {
                "partition_index": p.partition,
                "partition_size": p.size,
                "offset_lag": p.offset_lag,
                "is_future_key": p.is_future,
            }
        )
    return {
        "error_code": description.error_code,
        "log_dir": description.log_dir,
        "topics": [{"name": topic, "partitions": ps} for topic, ps in partitions.items()],
        "total_bytes": description.total_bytes,
        "usable_bytes": description.usable_bytes,
    }


@handler(api_key=35, min_version=1, max_version=4)
async def describe_log_dirs(request: Request, broker: KafkaBroker) -> Entity:
    topics = request.body.topics
    partitions = (
        None
        if topics is None
        else [TopicPartition(t.topic, int(p)) for t in topics for p in t.partitions]
    )
    answer = broker.log_dirs.describe_log_dirs(partitions, session=request.session)
    return request.response(
        {
            "throttle_time": 0,
            "error_code": answer.error_code,
            "results": [_log_dir_result(d) for d in answer.log_dirs],
        }
    )
