"""Topic admin pieces that need no ZooKeeper: topic config checks, and DeleteRecords and
CreateTopics' wait for this broker's metadata through the gRPC AdminService onto TopicAdmin."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from minikafka.broker.config import BrokerConfig
from minikafka.broker.replication.requests import (
    DeleteRecordsPartition,
    DeleteRecordsPartitionResult,
)
from minikafka.broker.server.admin_service import AdminService
from minikafka.broker.server.core.admin import TopicAdmin
from minikafka.broker.server.core.configs import TOPIC_CONFIG_KEYS, validate_topic_configs
from minikafka.broker.server.core.topic_creation import OFFSETS_TOPIC_CONFIGS
from minikafka.broker.server.metadata_cache import MetadataCache
from minikafka.controller.controller import CreateTopicResult, NewPartitions, NewTopic
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto.errors import ErrorCode, InvalidConfigError
from tests.unit.grpc_context import PeerContext


def test_topic_config_keys_are_kafkas() -> None:
    assert {"retention.ms", "cleanup.policy", "min.insync.replicas"} <= TOPIC_CONFIG_KEYS
    assert "unclean.leader.election.enable" in TOPIC_CONFIG_KEYS
    assert "log.retention.ms" not in TOPIC_CONFIG_KEYS  # a broker key, not a topic key


def test_valid_topic_configs_pass() -> None:
    validate_topic_configs(
        {
            "retention.ms": "-1",
            "cleanup.policy": "compact,delete",
            "min.insync.replicas": "2",
            "unclean.leader.election.enable": "TRUE",
            "segment.bytes": "1048576",
        }
    )


@pytest.mark.parametrize(
    "config",
    [
        {"retention.minutes": "1"},
        {"segment.bytes": "1"},
        {"segment.bytes": "big"},
        {"cleanup.policy": "archive"},
        {"min.insync.replicas": "0"},
        {"min.insync.replicas": "two"},
        {"unclean.leader.election.enable": "yes"},
    ],
)
def test_invalid_topic_configs(config: dict[str, str]) -> None:
    with pytest.raises(InvalidConfigError):
        validate_topic_configs(config)


def test_the_offsets_topic_configs_validate() -> None:
    # An alter of __consumer_offsets revalidates the configs it was created with.
    validate_topic_configs({**OFFSETS_TOPIC_CONFIGS, "retention.ms": "1000"})


def test_compression_type_takes_a_codec_and_refuses_others() -> None:
    validate_topic_configs({"compression.type": "gzip"})
    with pytest.raises(InvalidConfigError, match="String must be one of"):
        validate_topic_configs({"compression.type": "brotli"})


class FakeReplicaManager:
    """Records what the adapter asks; ReplicaManager.delete_records itself is tested on real
    replicas in tests/unit/replication/test_delete_records.py."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[DeleteRecordsPartition], int]] = []

    async def delete_records(
        self, partitions: Sequence[DeleteRecordsPartition], timeout_ms: int
    ) -> list[DeleteRecordsPartitionResult]:
        self.calls.append((list(partitions), timeout_ms))
        return [
            DeleteRecordsPartitionResult(
                p.topic, p.partition, p.offset, ErrorCode.NONE if p.offset >= 0 else 7, "m"
            )
            for p in partitions
        ]


def test_delete_records_adapter_passes_the_timeout_and_regroups_by_topic() -> None:
    manager = FakeReplicaManager()
    service = AdminService(
        TopicAdmin(
            BrokerConfig(broker_id=1, zookeeper_connect="127.0.0.1:1"),
            controller=None,  # type: ignore[arg-type]
            zk=None,  # type: ignore[arg-type]
            replica_manager=manager,  # type: ignore[arg-type]
        )
    )
    P = pb.DeleteRecordsRequest.DeleteRecordsPartition
    T = pb.DeleteRecordsRequest.DeleteRecordsTopic
    request = pb.DeleteRecordsRequest(
        topics=[
            T(name="a", partitions=[P(partition_index=0, offset=4), P(partition_index=1)]),
            T(name="b", partitions=[P(partition_index=2, offset=-1)]),
        ],
        timeout_ms=1234,
    )
    context: Any = PeerContext()
    response = asyncio.run(service.DeleteRecords(request, context))
    assert manager.calls == [
        (
            [
                DeleteRecordsPartition("a", 0, 4),
                DeleteRecordsPartition("a", 1, 0),
                DeleteRecordsPartition("b", 2, -1),
            ],
            1234,
        )
    ]
    assert [
        (t.name, p.partition_index, p.low_watermark, p.error_code, p.error_message)
        for t in response.topics
        for p in t.partitions
    ] == [("a", 0, 4, 0, "m"), ("a", 1, 0, 0, "m"), ("b", 2, -1, 7, "m")]


class CreatingController:
    """Creates every topic at once, as the controller answers once it elected the leaders."""

    def create_topics(
        self, new_topics: Sequence[NewTopic], *, validate_only: bool = False
    ) -> concurrent.futures.Future[dict[str, CreateTopicResult]]:
        future: concurrent.futures.Future[dict[str, CreateTopicResult]]
        future = concurrent.futures.Future()
        future.set_result(
            {
                t.name: CreateTopicResult(ErrorCode.NONE, "", "id", t.num_partitions, 1)
                for t in new_topics
            }
        )
        return future

    def create_partitions(
        self, requests: Mapping[str, NewPartitions], *, validate_only: bool = False
    ) -> concurrent.futures.Future[dict[str, tuple[ErrorCode, str]]]:
        future: concurrent.futures.Future[dict[str, tuple[ErrorCode, str]]]
        future = concurrent.futures.Future()
        future.set_result(dict.fromkeys(requests, (ErrorCode.NONE, "")))
        return future


class SlowController(CreatingController):
    """Answers after ``seconds`` (many partitions, a slow ZooKeeper)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def create_topics(
        self, new_topics: Sequence[NewTopic], *, validate_only: bool = False
    ) -> concurrent.futures.Future[dict[str, CreateTopicResult]]:
        done = super().create_topics(new_topics, validate_only=validate_only)
        answer: concurrent.futures.Future[dict[str, CreateTopicResult]]
        answer = concurrent.futures.Future()
        # completed later on another thread, as the controller's thread does
        threading.Timer(self.seconds, lambda: answer.set_result(done.result())).start()
        return answer


def _leaders(topic: str, leaders: Sequence[int], topic_id: str = "id") -> pb.UpdateMetadataRequest:
    request = pb.UpdateMetadataRequest(controller_id=1, controller_epoch=1, broker_epoch=5)
    request.live_brokers.add(id=1, host="127.0.0.1", port=9091)
    for partition, leader in enumerate(leaders):
        request.partition_states.add(
            topic_name=topic, topic_id=topic_id, partition_index=partition, leader=leader
        )
    return request


def _create_topics_service(
    cache: MetadataCache, controller: CreatingController | None = None
) -> AdminService:
    return AdminService(
        TopicAdmin(
            BrokerConfig(broker_id=1, zookeeper_connect="127.0.0.1:1"),
            controller=controller or CreatingController(),  # type: ignore[arg-type]
            zk=None,  # type: ignore[arg-type]
            metadata_cache=cache,
        )
    )


def _create(name: str, partitions: int, timeout_ms: int, **kwargs: Any) -> pb.CreateTopicsRequest:
    topic = pb.CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=1
    )
    return pb.CreateTopicsRequest(topics=[topic], timeout_ms=timeout_ms, **kwargs)


def test_create_topics_answers_once_this_brokers_metadata_knows_every_leader() -> None:
    async def scenario() -> None:
        cache = MetadataCache(1)
        service = _create_topics_service(cache)
        context: Any = PeerContext()
        answer = asyncio.ensure_future(service.CreateTopics(_create("t", 2, 30_000), context))
        for _ in range(5):
            await asyncio.sleep(0)
        assert not answer.done() and cache.waiting == 1
        cache.update(_leaders("t", [1, -1]))  # partition 1 has no leader yet
        for _ in range(5):
            await asyncio.sleep(0)
        assert not answer.done()
        cache.update(_leaders("t", [1, 1]))
        response = await asyncio.wait_for(answer, 5)
        assert [(t.name, t.error_code) for t in response.topics] == [("t", ErrorCode.NONE)]
        assert cache.waiting == 0

    asyncio.run(scenario())


def test_create_topics_answers_after_the_timeout_or_at_once_without_one() -> None:
    async def scenario() -> None:
        cache = MetadataCache(1)
        service = _create_topics_service(cache)
        context: Any = PeerContext()
        loop = asyncio.get_running_loop()
        started = loop.time()
        response = await service.CreateTopics(_create("late", 1, 50), context)
        assert loop.time() - started >= 0.05
        # Kafka's DelayedCreatePartitions on expiry: created, but REQUEST_TIMED_OUT
        ((late,),) = [response.topics]
        assert late.error_code == ErrorCode.REQUEST_TIMED_OUT
        assert "'late' was created" in late.error_message
        assert (late.topic_id, late.num_partitions, late.replication_factor) == ("", -1, -1)
        assert cache.waiting == 0
        # timeout_ms 0 (do not wait) and validate_only answer without looking at the metadata
        for request in (_create("now", 1, 0), _create("checked", 1, 30_000, validate_only=True)):
            response = await asyncio.wait_for(service.CreateTopics(request, context), 5)
            assert [t.error_code for t in response.topics] == [ErrorCode.NONE]

    asyncio.run(scenario())


def test_the_wait_for_leaders_counts_from_the_request_not_from_the_controllers_answer() -> None:
    """timeout_ms bounds the whole answer, the controller's work included, so that a client
    whose call deadline is that long (less a margin) gets it before giving up."""

    async def scenario() -> None:
        cache = MetadataCache(1)
        service = _create_topics_service(cache, SlowController(0.6))
        context: Any = PeerContext()
        loop = asyncio.get_running_loop()
        started = loop.time()
        response = await service.CreateTopics(_create("slow", 1, 1000), context)
        assert [t.error_code for t in response.topics] == [ErrorCode.REQUEST_TIMED_OUT]
        # 1.0 s from the request; counted from the controller's answer it would be 1.6 s
        assert 0.6 <= loop.time() - started < 1.4
        assert cache.waiting == 0

    asyncio.run(scenario())


def test_create_topics_times_out_only_the_topics_whose_leaders_are_unknown() -> None:
    async def scenario() -> None:
        cache = MetadataCache(1)
        cache.update(_leaders("known", [1, 1]))
        service = _create_topics_service(cache)
        context: Any = PeerContext()
        request = _create("known", 2, 100)
        request.topics.add(name="unknown", num_partitions=1, replication_factor=1)
        response = await service.CreateTopics(request, context)
        assert [(t.name, t.error_code) for t in response.topics] == [
            ("known", ErrorCode.NONE),
            ("unknown", ErrorCode.REQUEST_TIMED_OUT),
        ]
        assert response.topics[0].topic_id == "id" and response.topics[0].num_partitions == 2

    asyncio.run(scenario())


def test_a_deleted_topics_leaders_do_not_answer_for_the_topic_created_in_its_place() -> None:
    """This broker may still hold the partitions of a topic of the same name that was just
    deleted (its UpdateMetadata not yet here): only the created topic's id counts."""

    async def scenario() -> None:
        cache = MetadataCache(1)
        cache.update(_leaders("t", [1], topic_id="old-id"))
        service = _create_topics_service(cache)  # creates "t" with id "id"
        context: Any = PeerContext()
        answer = asyncio.ensure_future(service.CreateTopics(_create("t", 1, 30_000), context))
        for _ in range(5):
            await asyncio.sleep(0)
        assert not answer.done() and cache.waiting == 1
        cache.update(_leaders("t", [1], topic_id="id"))
        response = await asyncio.wait_for(answer, 5)
        assert [(t.name, t.error_code) for t in response.topics] == [("t", ErrorCode.NONE)]

    asyncio.run(scenario())
