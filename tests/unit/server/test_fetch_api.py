"""FetchApi, the fetch both front doors call: a follower's fetch off the inter-broker listener
is refused with one answer and one warning per (listener, replica), whichever door it came in
on; every other fetch goes through the session cache to the ReplicaManager's read."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from structlog.testing import capture_logs

from minikafka.broker.replication.fetch_session import (
    INITIAL_EPOCH,
    INVALID_SESSION_ID,
    FetchContext,
    FetchManager,
    FetchSessionCache,
)
from minikafka.broker.replication.requests import (
    FetchPartition,
    FetchPartitionResult,
    FetchRequest,
)
from minikafka.broker.server.core.fetch import REPLICA_FETCH_REFUSED, FetchApi
from minikafka.broker.server.data_service import DataService
from minikafka.broker.server.kafka.broker import KafkaBroker
from minikafka.broker.server.kafka.handlers.fetch import fetch as kafka_fetch
from minikafka.broker.server.kafka.registry import Request
from minikafka.broker.server.kafka.schema import build, request_class
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto.errors import ErrorCode
from tests.unit.grpc_context import PeerContext

_FETCH = 1
_INTER_BROKER = "INTERNAL"


class _ReplicaManager:
    """A FetchSource: a real session cache, and a read that records what it was asked."""

    def __init__(self) -> None:
        self.fetch_sessions = FetchManager(
            FetchSessionCache(10, 120_000), lambda: int(time.time() * 1000)
        )
        self.reads: list[FetchRequest] = []

    async def fetch_messages(
        self, request: FetchRequest, context: FetchContext | None = None
    ) -> Sequence[FetchPartitionResult]:
        self.reads.append(request)
        return [
            FetchPartitionResult(p.topic, p.partition, ErrorCode.NONE, "", 5, 5, 0, b"")
            for p in request.partitions
        ]


def _request(replica_id: int, **session: Any) -> FetchRequest:
    return FetchRequest(
        replica_id, 0, 1, 1 << 20, [FetchPartition("t", 0, 3), FetchPartition("u", 1, 4)], **session
    )


def test_a_replica_fetch_off_the_inter_broker_listener_is_refused_and_warned_of_once() -> None:
    first, second = _ReplicaManager(), _ReplicaManager()
    first_api, second_api = FetchApi(first, _INTER_BROKER), FetchApi(second, _INTER_BROKER)

    async def fetches() -> list[Any]:
        return [
            await api.fetch(_request(replica_id), listener=listener)
            for api in (first_api, second_api)
            for replica_id, listener in [(2, "EXTERNAL"), (2, "EXTERNAL"), (3, "EXTERNAL")]
        ] + [await first_api.fetch(_request(2), listener="OTHER")]

    with capture_logs() as logs:
        answers = asyncio.run(fetches())

    for answer in answers:
        assert (answer.error_code, answer.session_id) == (ErrorCode.NONE, INVALID_SESSION_ID)
        assert [
            (p.topic, p.partition, p.error_code, p.error_message) for p in answer.partitions
        ] == [
            ("t", 0, ErrorCode.TOPIC_AUTHORIZATION_FAILED, REPLICA_FETCH_REFUSED),
            ("u", 1, ErrorCode.TOPIC_AUTHORIZATION_FAILED, REPLICA_FETCH_REFUSED),
        ]
    assert first.reads == second.reads == []  # nothing read, no HW moved
    warned = [(e["replica"], e["listener"]) for e in logs if e["event"] == "fetch.replica_refused"]
    # each broker warns of its own (the in-process test clusters run several), repeats are quiet
    assert warned == [
        (2, "EXTERNAL"),
        (3, "EXTERNAL"),
        (2, "EXTERNAL"),
        (3, "EXTERNAL"),
        (2, "OTHER"),
    ]


def test_fetches_that_may_be_served_go_through_a_session_to_the_read() -> None:
    replica_manager = _ReplicaManager()
    api = FetchApi(replica_manager, _INTER_BROKER)

    async def fetches() -> list[Any]:
        return [
            await api.fetch(_request(2, session_epoch=INITIAL_EPOCH), listener=_INTER_BROKER),
            await api.fetch(_request(-1), listener="EXTERNAL"),  # a consumer, sessionless
        ]

    follower, consumer = asyncio.run(fetches())

    assert follower.session_id != INVALID_SESSION_ID  # a full fetch opened a session
    assert consumer.session_id == INVALID_SESSION_ID
    for answer in (follower, consumer):
        assert [(p.topic, p.error_code, p.high_watermark) for p in answer.partitions] == [
            ("t", ErrorCode.NONE, 5),
            ("u", ErrorCode.NONE, 5),
        ]
    assert [
        (r.replica_id, [p.fetch_offset for p in r.partitions]) for r in replica_manager.reads
    ] == [
        (2, [3, 4]),
        (-1, [3, 4]),
    ]


def test_both_doors_refuse_through_the_core() -> None:
    """The Kafka Fetch handler and the gRPC DataService share the broker's FetchApi: the same
    refusal, and one warning for the pair whichever door it came in on first."""
    replica_manager = _ReplicaManager()
    api = FetchApi(replica_manager, _INTER_BROKER)
    unused: Any = None
    kafka_broker = KafkaBroker(
        unused,
        unused,
        metadata_cache=unused,
        metadata_api=unused,
        groups=None,
        admin=unused,
        producer_ids=unused,
        fetches=api,
    )
    grpc_door = DataService(unused, api, producer_ids=unused, listener="EXTERNAL")
    kafka_body = build(
        request_class(_FETCH, 12),
        {
            "replica_id": 2,
            "max_wait": 0,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "session_epoch": -1,
            "topics": [{"topic": "t", "partitions": [{"partition": 0, "fetch_offset": 3}]}],
        },
    )
    kafka_request = Request(_FETCH, 12, 7, "posing", "127.0.0.1", 50000, "EXTERNAL", kafka_body)
    grpc_request = pb.FetchRequest(replica_id=2, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20)
    grpc_request.topics.add(topic="t").partitions.add(partition=0, fetch_offset=3)

    async def fetches() -> tuple[Any, pb.FetchResponse]:
        context: Any = PeerContext()
        return await kafka_fetch(kafka_request, kafka_broker), await grpc_door.Fetch(
            grpc_request, context
        )

    with capture_logs() as logs:
        kafka_answer, grpc_answer = asyncio.run(fetches())

    (kafka_partition,) = kafka_answer.responses[0].partitions
    assert int(kafka_partition.error_code) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert kafka_partition.high_watermark == -1 and not kafka_partition.records
    (grpc_partition,) = grpc_answer.responses[0].partitions
    assert grpc_partition.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert grpc_partition.error_message == REPLICA_FETCH_REFUSED
    assert replica_manager.reads == []
    assert [e["event"] for e in logs if e["event"] == "fetch.replica_refused"] == [
        "fetch.replica_refused"
    ]
