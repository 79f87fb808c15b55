"""aiokafka, a third Kafka client with protocol code of its own (neither librdkafka's nor
kafka-python's), against a real 3-broker cluster: an admin creates and describes topics, a
producer writes with acks=all, consumers of one group read and commit, and a consumer that
joins the group after them resumes at the committed offsets; and Kafka 3.9's topic keys,
LogAppendTime, CreatePartitions and per-record refusals as aiokafka meets them (its static
membership is in test_groups.py)."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import KafkaError

from minikafka.proto.errors import ErrorCode
from tests.integration.cluster import Cluster
from tests.integration.conftest import ClusterFactory
from tests.integration.kafka_protocol.raw import RawKafka

pytestmark = pytest.mark.integration

GROUP_OVERRIDES = {"offsets.topic.num.partitions": "3", "group.min.session.timeout.ms": "1000"}
PARTITIONS = 3


@pytest.fixture
def cluster(cluster_factory: ClusterFactory) -> Cluster:
    return cluster_factory(n_brokers=3, overrides=GROUP_OVERRIDES)


async def _create(bootstrap: str, topic: str) -> tuple[Any, list[dict[str, Any]]]:
    """Create ``topic`` (3 partitions, 3 replicas), then describe it once every partition has
    a leader: (the CreateTopics answer, the described topics)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
    await admin.start()
    try:
        created = await admin.create_topics([NewTopic(topic, PARTITIONS, 3)])
        for _ in range(100):
            described: list[dict[str, Any]] = await admin.describe_topics([topic])
            partitions = described[0]["partitions"]
            if len(partitions) == PARTITIONS and all(p["leader"] >= 0 for p in partitions):
                return created, described
            await asyncio.sleep(0.1)
        raise AssertionError(f"{topic} has no leaders: {described}")
    finally:
        await admin.close()


def test_aiokafka_admin_creates_and_describes_a_topic(cluster: Cluster) -> None:
    created, described = asyncio.run(_create(cluster.kafka_bootstrap_servers, "orders"))

    (result,) = created.to_object()["topic_errors"]
    assert (result["topic"], result["error_code"]) == ("orders", ErrorCode.NONE)
    (topic,) = described
    assert (topic["topic"], topic["error_code"]) == ("orders", ErrorCode.NONE)
    assert sorted(p["partition"] for p in topic["partitions"]) == list(range(PARTITIONS))
    for partition in topic["partitions"]:
        assert sorted(partition["replicas"]) == sorted(cluster.brokers)
        assert sorted(partition["isr"]) == sorted(cluster.brokers)
        assert partition["leader"] == cluster.leader("orders", partition["partition"])


async def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        sent = [await producer.send(topic, value, key=value) for value in values]
        for future in sent:
            metadata = await future
            assert metadata.offset >= 0
    finally:
        await producer.stop()


async def _consume(
    bootstrap: str, topic: str, group: str, count: int
) -> tuple[list[bytes], dict[int, int | None]]:
    """``count`` records read in ``group`` (committed as they are read), and the group's
    committed offset of each partition afterwards."""
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
    )
    await consumer.start()
    try:
        values: list[bytes] = []
        while len(values) < count:
            batches = await asyncio.wait_for(consumer.getmany(timeout_ms=1000), 30)
            for records in batches.values():
                values.extend(r.value for r in records)
            if batches:
                await consumer.commit()
        committed = {p: await consumer.committed(TopicPartition(topic, p)) for p in range(3)}
        return values, committed
    finally:
        await consumer.stop()


def test_aiokafka_produces_and_a_group_consumes_and_resumes(cluster: Cluster) -> None:
    bootstrap = cluster.kafka_bootstrap_servers
    group = f"g-{uuid.uuid4().hex[:6]}"
    first = [f"a{i}".encode() for i in range(30)]
    later = [f"b{i}".encode() for i in range(9)]

    async def scenario() -> None:
        await _create(bootstrap, "clicks")
        await _produce(bootstrap, "clicks", first)
        values, committed = await _consume(bootstrap, "clicks", group, len(first))
        assert sorted(values) == sorted(first)
        assert sum(offset or 0 for offset in committed.values()) == len(first)

        await _produce(bootstrap, "clicks", later)
        # The group's next member starts at the commits: only the later records.
        values, committed = await _consume(bootstrap, "clicks", group, len(later))
        assert sorted(values) == sorted(later)
        assert sum(offset or 0 for offset in committed.values()) == len(first) + len(later)

    asyncio.run(scenario())


# Kafka 3.9 topic keys, each at a value other than its default (issue 32's round trip).
TOPIC_CONFIGS = {
    "message.timestamp.type": "LogAppendTime",
    "compression.type": "zstd",
    "retention.ms": "123456789",
    "segment.jitter.ms": "1000",
    "file.delete.delay.ms": "30000",
    "preallocate": "true",
    "message.timestamp.after.max.ms": "3600000",
    "message.downconversion.enable": "false",
}


async def _topic_configs(admin: AIOKafkaAdminClient, topic: str) -> dict[str, str]:
    (answer,) = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    (resource,) = answer.to_object()["resources"]
    assert resource["error_code"] == ErrorCode.NONE, resource
    return {c["config_names"]: c["config_value"] for c in resource["config_entries"]}


def test_aiokafka_meets_kafka_3_9s_topic_keys_partitions_and_per_record_errors(
    cluster: Cluster,
) -> None:
    """aiokafka's admin creates a topic with Kafka 3.9 keys that are not the defaults and
    reads them back; the leader stamps LogAppendTime; partitions added are in the answering
    broker's metadata when CreatePartitions answers; on a compacted topic a keyless record is
    refused and a keyed one is written after it."""
    bootstrap = cluster.kafka_bootstrap_servers

    async def scenario() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
        await admin.start()
        try:
            await admin.create_topics(
                [
                    NewTopic("audit", 1, 3, topic_configs=TOPIC_CONFIGS),
                    NewTopic("compacted", 1, 3, topic_configs={"cleanup.policy": "compact"}),
                ]
            )
            configs = await _topic_configs(admin, "audit")
            assert {k: configs[k] for k in TOPIC_CONFIGS} == TOPIC_CONFIGS

            # LogAppendTime: the leader's clock, not the producer's timestamp.
            before_ms = int(time.time() * 1000)
            producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
            await producer.start()
            try:
                stamped = await (await producer.send("audit", b"v", timestamp_ms=1_000))
                assert stamped.timestamp >= before_ms
                assert stamped.timestamp_type == 1
                # aiokafka reads no record_errors (KIP-467): a batch with a keyless record
                # fails whole, so the keyless one goes alone.
                with pytest.raises(KafkaError):
                    await producer.send_and_wait("compacted", b"no key")
                keyed = await producer.send_and_wait("compacted", b"kept", key=b"k")
                assert keyed.offset == 0
            finally:
                await producer.stop()
            consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest")
            await consumer.start()
            try:
                consumer.assign([TopicPartition("audit", 0)])
                batches = await consumer.getmany(timeout_ms=10_000)
                (record,) = batches[TopicPartition("audit", 0)]
                assert (record.timestamp_type, record.timestamp) == (1, stamped.timestamp)
            finally:
                await consumer.stop()

            # CreatePartitions goes to the controller, which answers once its own metadata
            # has every new partition's leader.
            await admin.create_partitions({"audit": NewPartitions(total_count=4)})
            controller = cluster.controller_id()
            assert controller is not None
            with RawKafka(cluster.brokers[controller].kafka_address) as raw:
                answer = raw.call(3, 12, {"topics": [{"name": "audit"}]})
            (topic,) = answer.topics
            assert sorted(p.partition_index for p in topic.partitions) == [0, 1, 2, 3]
            assert all(p.leader_id >= 0 for p in topic.partitions)
        finally:
            await admin.close()

    asyncio.run(scenario())


def test_aiokafka_commits_only_for_topics_that_exist_and_loses_a_deleted_topics_offsets(
    cluster_factory: ClusterFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """OffsetCommit of a topic that does not exist is refused (UNKNOWN_TOPIC_OR_PARTITION)
    and stores nothing; deleting a topic removes its committed offsets from the group."""
    # aiokafka's metadata requests would create "nope" otherwise
    cluster = cluster_factory(
        n_brokers=3, overrides={**GROUP_OVERRIDES, "auto.create.topics.enable": "false"}
    )
    bootstrap = cluster.kafka_bootstrap_servers
    group = f"g-{uuid.uuid4().hex[:6]}"
    clicks, nope = TopicPartition("clicks", 0), TopicPartition("nope", 0)

    async def scenario() -> None:
        await _create(bootstrap, "clicks")
        await _produce(bootstrap, "clicks", [b"a", b"b", b"c"])
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False
        )
        await consumer.start()
        try:
            consumer.assign([clicks])
            await consumer.commit({clicks: 3})
            assert await consumer.committed(clicks) == 3
            consumer.assign([clicks, nope])
            # aiokafka takes UNKNOWN_TOPIC_OR_PARTITION as retriable: it logs it and commits
            # again until given up on
            with caplog.at_level(logging.ERROR, logger="aiokafka"), pytest.raises(TimeoutError):
                await asyncio.wait_for(consumer.commit({nope: 5}), 5)
            refusals = [r for r in caplog.records if "UnknownTopicOrPartitionError" in r.message]
            assert refusals, caplog.text
            assert await asyncio.wait_for(consumer.committed(nope), 30) is None
            assert await asyncio.wait_for(consumer.committed(clicks), 30) == 3

            admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
            await admin.start()
            try:
                await admin.delete_topics(["clicks"])
            finally:
                await admin.close()
            for _ in range(300):
                if await consumer.committed(clicks) is None:
                    break
                await asyncio.sleep(0.1)
            assert await consumer.committed(clicks) is None
        finally:
            await consumer.stop()

    asyncio.run(scenario())
