"""The Kafka door's CreateTopics and CreatePartitions answer what TopicAdmin answers: a topic
(or new partitions) whose leaders this broker's metadata did not learn within the request's
timeout is REQUEST_TIMED_OUT (Kafka's DelayedCreatePartitions), with the message and, for a
topic, without id, counts or configs."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from minikafka.broker.config import BrokerConfig
from minikafka.broker.server.core.admin import TopicAdmin
from minikafka.broker.server.kafka.handlers.topic_ids import ZERO
from minikafka.broker.server.kafka.handlers.topics import (
    create_partitions as create_partitions_handler,
)
from minikafka.broker.server.kafka.handlers.topics import create_topics
from minikafka.broker.server.kafka.registry import Request
from minikafka.broker.server.kafka.schema import build, request_class
from minikafka.broker.server.metadata_cache import MetadataCache
from minikafka.proto.errors import ErrorCode
from tests.unit.broker.test_admin_service import CreatingController

_CREATE_TOPICS = 19
_CREATE_PARTITIONS = 37


def test_a_topic_whose_leaders_stay_unknown_is_answered_request_timed_out() -> None:
    admin = TopicAdmin(
        BrokerConfig(broker_id=1, zookeeper_connect="127.0.0.1:1"),
        controller=CreatingController(),  # type: ignore[arg-type]
        zk=None,  # type: ignore[arg-type]
        metadata_cache=MetadataCache(1),  # never told of a leader
    )
    broker: Any = SimpleNamespace(admin=admin)
    body = build(
        request_class(_CREATE_TOPICS, 7),
        {
            "topics": [{"name": "t", "num_partitions": 1, "replication_factor": 1}],
            "timeout": 50,
        },
    )
    request = Request(_CREATE_TOPICS, 7, 3, "admin", "127.0.0.1", 50000, "PLAINTEXT", body)

    async def answer_of() -> Any:  # the handler's registered type is an Awaitable
        return await create_topics(request, broker)

    answer = asyncio.run(answer_of())

    ((topic,),) = [answer.topics]
    assert topic.error_code == ErrorCode.REQUEST_TIMED_OUT
    assert topic.error_message and "'t' was created" in topic.error_message
    assert (topic.topic_id, topic.num_partitions, topic.replication_factor) == (ZERO, -1, -1)
    assert list(topic.configs) == []


def test_new_partitions_whose_leaders_stay_unknown_are_answered_request_timed_out() -> None:
    cache = MetadataCache(1)  # never told of the new partitions' leaders
    admin = TopicAdmin(
        BrokerConfig(broker_id=1, zookeeper_connect="127.0.0.1:1"),
        controller=CreatingController(),  # type: ignore[arg-type]
        zk=None,  # type: ignore[arg-type]
        metadata_cache=cache,
    )
    broker: Any = SimpleNamespace(admin=admin)

    def create_partitions(timeout_ms: int) -> Any:
        body = build(
            request_class(_CREATE_PARTITIONS, 3),
            {
                "topics": [{"name": "t", "count": 2, "assignments": None}],
                "timeout": timeout_ms,
                "validate_only": False,
            },
        )
        request = Request(_CREATE_PARTITIONS, 3, 3, "admin", "127.0.0.1", 50000, "PLAINTEXT", body)

        async def answer_of() -> Any:  # the handler's registered type is an Awaitable
            return await create_partitions_handler(request, broker)

        ((result,),) = [asyncio.run(answer_of()).results]
        return result

    late = create_partitions(50)
    assert late.error_code == ErrorCode.REQUEST_TIMED_OUT
    assert late.error_message and "topic 't' were created" in late.error_message
    # timeout 0: answered at once, as Kafka does
    assert create_partitions(0).error_code == ErrorCode.NONE
