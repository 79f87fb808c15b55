"""aiokafka, a third Kafka client with protocol code of its own (neither librdkafka's nor
kafka-python's), against a real 3-broker cluster: an admin creates and describes topics, a
producer writes with acks=all, consumers of one group read and commit, and a consumer that
joins the group after them resumes at the committed offsets."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from minikafka.proto.errors import ErrorCode
from tests.integration.cluster import Cluster
from tests.integration.conftest import ClusterFactory

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
