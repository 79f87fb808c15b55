"""A follower's fetch on a listener other than the inter-broker one is refused, and each broker
warns of it once per (listener, replica): its own record, not one shared by every broker in
the process (the in-process test clusters run several)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from structlog.testing import capture_logs

from minikafka.broker.server.kafka.broker import KafkaBroker
from minikafka.broker.server.kafka.handlers.fetch import fetch
from minikafka.broker.server.kafka.registry import Request
from minikafka.broker.server.kafka.schema import build, request_class
from minikafka.proto.errors import ErrorCode

_FETCH = 1


def _broker() -> KafkaBroker:
    unused: Any = None  # a refused fetch reaches nothing but the config
    config: Any = SimpleNamespace(inter_broker_listener_name="INTERNAL")
    return KafkaBroker(config, unused, unused, unused, None, unused, unused)


def _follower_fetch(replica_id: int, listener: str) -> Request:
    body = build(
        request_class(_FETCH, 12),
        {
            "replica_id": replica_id,
            "max_wait": 500,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "session_epoch": -1,
            "topics": [
                {"topic": "t", "partitions": [{"partition": 0, "fetch_offset": 0}]},
            ],
        },
    )
    return Request(_FETCH, 12, 7, "follower", "127.0.0.1", 50000, listener, body)


def test_each_broker_warns_once_per_listener_and_replica() -> None:
    first, second = _broker(), _broker()

    async def fetches() -> list[Any]:
        return [
            await fetch(_follower_fetch(replica_id, listener), broker)
            for broker in (first, second)
            for replica_id, listener in [(2, "EXTERNAL"), (2, "EXTERNAL"), (3, "EXTERNAL")]
        ] + [await fetch(_follower_fetch(2, "OTHER"), first)]

    with capture_logs() as logs:
        answers = asyncio.run(fetches())

    for answer in answers:
        assert [p.error_code for t in answer.responses for p in t.partitions] == [
            ErrorCode.TOPIC_AUTHORIZATION_FAILED
        ]
    warned = [(e["replica"], e["listener"]) for e in logs if e["event"] == "fetch.replica_refused"]
    # the first broker of 2 and 3, the second of its own 2 and 3 (repeats are quiet), then the
    # first of 2 on another listener
    assert warned == [
        (2, "EXTERNAL"),
        (3, "EXTERNAL"),
        (2, "EXTERNAL"),
        (3, "EXTERNAL"),
        (2, "OTHER"),
    ]
    assert first.refused_replicas == {("EXTERNAL", 2), ("EXTERNAL", 3), ("OTHER", 2)}
    assert second.refused_replicas == {("EXTERNAL", 2), ("EXTERNAL", 3)}
