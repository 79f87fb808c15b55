"""Fetch (key 1), versions 4-12, for consumers and followers: the core's ``FetchApi``
(broker/server/core/fetch.py), which the gRPC Fetch calls too, records as it returns them: left
in the segment files (``FileRecords``, asked for with ``file_records``), which the connection
sends with sendfile(2), never decoded or copied here.

``max_wait_ms``, ``min_bytes``, ``max_bytes`` and ``partition_max_bytes`` go to the core's
long-poll as they are; the first batch comes back even when larger than the limits, as in
Kafka. There are no transactions, so READ_COMMITTED reads what READ_UNCOMMITTED reads (up to
the high watermark), ``last_stable_offset`` is the high watermark and no transaction is ever
aborted (``aborted_transactions`` is empty for READ_COMMITTED, null otherwise, as Kafka sends).

Fetch sessions (KIP-227), v7+: served from the broker's one session cache
(``ReplicaManager.fetch_sessions``, broker/replication/fetch_session.py), the one the followers'
gRPC fetches use. A full fetch with ``session_epoch`` 0 opens a session (or gets session id 0
when the cache has no slot for it); later fetches list only changed partitions plus
``forgotten_topics_data``, and their answers carry only partitions with news. Java clients and
kafka-python open sessions; librdkafka sends sessionless fetches (``session_epoch`` -1), and
fetches before v7 are sessionless too. An unknown session is FETCH_SESSION_ID_NOT_FOUND, a wrong
epoch INVALID_FETCH_SESSION_EPOCH, in the top-level ``error_code``, after which clients send a
full fetch.

Followers (``replica_id`` >= 0, the follower's broker id) fetch on the inter-broker listener
when inter.broker.listener.name names a Kafka listener (KIP-291's split: the controller's
requests stay on control.plane.listener.name, a gRPC one). Their fetch takes the path of the
gRPC follower fetch: the same session cache and ``fetch_messages``, whose fetch offset is the
follower's LEO (it moves the HW and the ISR); the answer adds ``diverging_epoch`` (KIP-320, a
tagged field) when the follower's ``last_fetched_epoch`` says its log diverged. v12 carries no
broker epoch (``replica_epoch``, KIP-903, comes with v15); the gRPC fetch's is not checked by
the leader either. On any other listener a fetch with ``replica_id`` >= 0 gets
TOPIC_AUTHORIZATION_FAILED on every partition (the core refuses it, as for gRPC).

Not supported:
- reading from followers (KIP-392): ``rack_id`` is ignored and ``preferred_read_replica`` is -1.
- Fetch v13+ names topics by id (KIP-516); ApiVersions caps the version at 12.
"""

from __future__ import annotations

import datetime
from typing import Any

from minikafka.broker.replication.fetch_session import FINAL_EPOCH, INVALID_SESSION_ID
from minikafka.broker.replication.requests import (
    FetchPartition,
    FetchPartitionResult,
    FetchRequest,
    by_topic,
)
from minikafka.broker.server.kafka.broker import KafkaBroker
from minikafka.broker.server.kafka.registry import Request, handler
from minikafka.broker.server.kafka.schema import Entity
from minikafka.proto.common import TopicPartition

_MS = datetime.timedelta(milliseconds=1)
_READ_COMMITTED = 1
_NO_DIVERGENCE: dict[str, Any] = {}  # the tagged field's default: not sent


@handler(api_key=1, min_version=4, max_version=12)
async def fetch(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    answer = await broker.fetches.fetch(
        FetchRequest(
            body.replica_id,
            body.max_wait // _MS,
            body.min_bytes,
            body.max_bytes,
            [
                FetchPartition(
                    topic.topic,
                    p.partition,
                    p.fetch_offset,
                    getattr(p, "current_leader_epoch", -1),
                    getattr(p, "last_fetched_epoch", -1),
                    getattr(p, "log_start_offset", -1),
                    p.partition_max_bytes,
                )
                for topic in body.topics
                for p in topic.partitions
            ],
            file_records=True,
            # before v7 a fetch is sessionless
            session_id=getattr(body, "session_id", INVALID_SESSION_ID),
            session_epoch=getattr(body, "session_epoch", FINAL_EPOCH),
            forgotten=[
                TopicPartition(topic.topic, partition)
                for topic in getattr(body, "forgotten_topics_data", ())
                for partition in topic.partitions
            ],
        ),
        listener=request.listener,
        session=request.session,
    )
    aborted: list[Any] | None = [] if body.isolation_level == _READ_COMMITTED else None
    return request.response(
        {
            "throttle_time": 0,
            "error_code": answer.error_code,
            "session_id": answer.session_id,
            "responses": [
                {"topic": topic, "partitions": [_partition(r, aborted) for r in results]}
                for topic, results in by_topic(answer.partitions).items()
            ],
        }
    )


def _partition(result: FetchPartitionResult, aborted: list[Any] | None) -> dict[str, Any]:
    return {
        "partition_index": result.partition,
        "error_code": result.error_code,
        "high_watermark": result.high_watermark,
        "last_stable_offset": result.last_stable_offset,
        "log_start_offset": result.log_start_offset,
        "aborted_transactions": aborted,
        "preferred_read_replica": -1,
        "records": result.records,
        **(
            _NO_DIVERGENCE
            if result.diverging_epoch is None
            else {
                "diverging_epoch": {
                    "epoch": result.diverging_epoch[0],
                    "end_offset": result.diverging_epoch[1],
                }
            }
        ),
    }
