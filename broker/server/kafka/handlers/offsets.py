"""ListOffsets (key 2, versions 1-8), OffsetsForLeaderEpoch (key 23, versions 2-4) and
DeleteRecords (key 21, versions 0-2): the first two straight to the ReplicaManager, DeleteRecords
to TopicAdmin (broker/server/core/records.py), as the gRPC door does.

Each asks the core's DataApi (TopicAdmin for DeleteRecords) with the request's Session: a topic
the principal may not Describe (ListOffsets; OffsetsForLeaderEpoch unless it has ClusterAction)
or Delete (DeleteRecords) is TOPIC_AUTHORIZATION_FAILED for its partitions.

ListOffsets: timestamp -1 is the latest offset (the high watermark for a consumer, the log end
offset for a replica), -2 the log start offset, -3 the offset of the record with the largest
timestamp (KIP-734, v7+), -4 the first offset on local disk (KIP-405, v8+: without tiered
storage the log start offset, as Kafka answers when remote storage is off); any other
timestamp is a seek by time: the first offset whose record timestamp is at or after it, below
the high watermark (offset -1 when there is none). There are no transactions, so
READ_COMMITTED's latest offset (the last stable offset) is the high watermark too.
``current_leader_epoch`` (v4+) fences as in Kafka (FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH).
v9 (KIP-1005's -5, the last tiered offset) is unstable in Kafka 3.9, which does not serve it:
ApiVersions caps ListOffsets at 8, as Kafka 3.9 does.

OffsetsForLeaderEpoch: the end offset of the requested epoch on the leader (what librdkafka and
the Java consumer ask after a leader change, KIP-320), and what a follower replicating over a
Kafka inter-broker listener asks before it fetches (v4, ``replica_id`` its broker id,
broker/server/kafka/leader_endpoint.py). Kafka answers it from the leader only; v2 has no
``replica_id``, so it is asked as a consumer (-1), not as Kafka's debugging replica. The answer
reads no records and moves nothing, so it is served on every listener.

DeleteRecords: TopicAdmin.delete_records, sent by the client to each partition's leader; the
offset -1 means the high watermark. The answer waits up to ``timeout`` for the followers' log
start offsets (ReplicaManager.delete_records), then REQUEST_TIMED_OUT.
"""

from __future__ import annotations

import datetime

from minikafka.broker.replication.requests import (
    DeleteRecordsPartition,
    ListOffsetsPartition,
    ListOffsetsRequest,
    OffsetForLeaderPartition,
    OffsetsForLeaderEpochRequest,
    by_request_topic,
)
from minikafka.broker.server.kafka.broker import KafkaBroker
from minikafka.broker.server.kafka.registry import Request, handler
from minikafka.broker.server.kafka.schema import Entity

_CONSUMER_REPLICA_ID = -1


@handler(api_key=2, min_version=1, max_version=8)
async def list_offsets(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    results = await broker.data.list_offsets(
        ListOffsetsRequest(
            body.replica_id,
            [
                ListOffsetsPartition(
                    topic.name,
                    p.partition_index,
                    p.timestamp,
                    getattr(p, "current_leader_epoch", -1),
                )
                for topic in body.topics
                for p in topic.partitions
            ],
            getattr(body, "isolation_level", 0),  # v2+; READ_COMMITTED: latest is the LSO
        ),
        request.session,
    )
    # One result per partition in request order: answered in the request's topic layout.
    return request.response(
        {
            "throttle_time": 0,
            "topics": [
                {
                    "name": topic.name,
                    "partitions": [
                        {
                            "partition_index": r.partition,
                            "error_code": r.error_code,
                            "timestamp": r.timestamp,
                            "offset": r.offset,
                            "leader_epoch": r.leader_epoch,
                        }
                        for r in answers
                    ],
                }
                for topic, answers in by_request_topic(body.topics, results)
            ],
        }
    )


@handler(api_key=23, min_version=2, max_version=4)
async def offset_for_leader_epoch(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    replica_id = body.replica_id if request.api_version >= 3 else _CONSUMER_REPLICA_ID
    results = await broker.data.offsets_for_leader_epoch(
        OffsetsForLeaderEpochRequest(
            replica_id,
            [
                OffsetForLeaderPartition(
                    topic.topic, p.partition, p.leader_epoch, p.current_leader_epoch
                )
                for topic in body.topics
                for p in topic.partitions
            ],
        ),
        request.session,
    )
    return request.response(
        {
            "throttle_time": 0,
            "topics": [
                {
                    "topic": topic.topic,
                    "partitions": [
                        {
                            "error_code": r.error_code,
                            "partition": r.partition,
                            "leader_epoch": r.leader_epoch,
                            "end_offset": r.end_offset,
                        }
                        for r in answers
                    ],
                }
                for topic, answers in by_request_topic(body.topics, results)
            ],
        }
    )


@handler(api_key=21, min_version=0, max_version=2)
async def delete_records(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    results = await broker.admin.delete_records(
        [
            DeleteRecordsPartition(topic.name, p.partition_index, p.offset)
            for topic in body.topics
            for p in topic.partitions
        ],
        body.timeout // datetime.timedelta(milliseconds=1),
        session=request.session,
    )
    return request.response(
        {
            "throttle_time": 0,
            "topics": [
                {
                    "name": topic.name,
                    "partitions": [
                        {
                            "partition_index": r.partition,
                            "low_watermark": r.low_watermark,
                            "error_code": r.error_code,
                        }
                        for r in answers
                    ],
                }
                for topic, answers in by_request_topic(body.topics, results)
            ],
        }
    )
