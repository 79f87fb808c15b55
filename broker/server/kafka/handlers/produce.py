"""Produce (key 0), versions 3-11: record batches appended by the same path as gRPC's
ProduceStream. The request's RecordBatch v2 bytes go to the core's ``DataApi.append_to_leaders``
(Write on each topic, else TOPIC_AUTHORIZATION_FAILED for its partitions), then the
ReplicaManager's, as they came (the leader validates them and patches offsets and epochs into
the headers; nothing here decodes a record), so a batch with a bad CRC gets CORRUPT_MESSAGE
exactly as over gRPC.

Pipelined, like the gRPC produce stream: the append happens when the request is read, in
arrival order, and the answer (``ReplicaManager.produce_response``: for acks=all, once the ISR
has the append or ``timeout_ms`` passed) is awaited while the connection reads the next
requests, so a client may keep several produce requests in flight on one connection. With
acks=0 Kafka sends no response, and neither do we; when such an append fails the connection is
closed, as Kafka does, so that the client refreshes its metadata.

A batch refused for some of its records (keyless records on a compacted topic) answers
INVALID_RECORD with, from v8 (KIP-467), ``record_errors``: the index of each such record in its
batch and why, so that a client fails only those.

A transactional producer's request carries its ``transactional_id``: the core needs Write on
it, and refuses transactional batches that come without one (TRANSACTIONAL_ID_AUTHORIZATION_FAILED
for every partition, nothing appended), as Kafka.

Not supported:
- Produce v12 (KIP-890, newer than Kafka 3.9, whose newest is v11) and v13+ (topics by id) are not
  served: ApiVersions caps the version at 11, as Kafka 3.9 does.
"""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Awaitable

from minikafka.broker.replication.requests import (
    ProducePartition,
    ProducePartitionResult,
    ProduceRequest,
    by_topic,
)
from minikafka.broker.server.kafka.broker import KafkaBroker
from minikafka.broker.server.kafka.registry import CloseConnection, Request, handler
from minikafka.broker.server.kafka.schema import Entity
from minikafka.broker.server.quotas import QuotaType, quota_user
from minikafka.proto.errors import ErrorCode

_MS = datetime.timedelta(milliseconds=1)


@handler(api_key=0, min_version=3, max_version=11, pipelined=True)
def produce(request: Request, broker: KafkaBroker) -> Awaitable[Entity | None]:
    body = request.body
    produce_request = ProduceRequest(
        body.acks,
        body.timeout // _MS,
        [
            ProducePartition(topic.name, data.index, data.records or b"")
            for topic in body.topic_data
            for data in topic.partition_data
        ],
        body.transactional_id,
    )
    data = broker.data
    statuses = data.append_to_leaders(produce_request, request.session)  # now, in order
    # producer_byte_rate counts the request's bytes, appended or not, as Kafka's.
    throttle_ms = broker.quotas.record(
        QuotaType.PRODUCE, quota_user(request.session), request.client_id or "", request.size
    )
    if throttle_ms:
        request.throttle(throttle_ms)  # with acks=0 the muting is all the client gets
    if body.acks == 0:
        failed = [(key, status.code) for key, status in statuses.items() if status.code]
        if failed:
            # As Kafka: no answer to carry the error, so the connection closes (after the
            # answers before it) and the client refreshes its metadata.
            (topic, partition), code = failed[0]
            closing: asyncio.Future[Entity | None] = asyncio.get_running_loop().create_future()
            closing.set_exception(
                CloseConnection(
                    "acks=0 produce failed",
                    topic=topic,
                    partition=partition,
                    error=ErrorCode(code).name,
                    failed_partitions=len(failed),
                )
            )
            return closing
        return _answered(None)
    # A task, started at once as ProduceStream does: acks=all's timeout runs from arrival.
    return asyncio.ensure_future(
        _respond(request, data.produce_response(produce_request, statuses), throttle_ms)
    )


async def _respond(
    request: Request, answer: Awaitable[list[ProducePartitionResult]], throttle_ms: int
) -> Entity:
    return request.response(
        {
            "throttle_time": throttle_ms,
            "responses": [
                {
                    "name": name,
                    "partition_responses": [
                        {
                            "index": result.partition,
                            "error_code": result.error_code,
                            "base_offset": result.base_offset,
                            # None is the wire's -1: CreateTime
                            "log_append_time": (
                                result.log_append_time if result.log_append_time >= 0 else None
                            ),
                            "log_start_offset": result.log_start_offset,
                            "error_message": result.error_message or None,
                            # v8+ (KIP-467): only these records failed; the client may
                            # resend the others.
                            "record_errors": [
                                {
                                    "batch_index": e.batch_index,
                                    "batch_index_error_message": e.message,
                                }
                                for e in result.record_errors
                            ],
                        }
                        for result in results
                    ],
                }
                for name, results in by_topic(await answer).items()
            ],
        }
    )


def _answered(response: Entity | None) -> asyncio.Future[Entity | None]:
    answer: asyncio.Future[Entity | None] = asyncio.get_running_loop().create_future()
    answer.set_result(response)
    return answer
