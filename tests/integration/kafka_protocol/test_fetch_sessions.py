"""Incremental fetch sessions (KIP-227) on the Kafka listener: kafka-python's consumer opens
one and reads correctly across incremental fetches; the session rules as a raw client sees them;
librdkafka's sessionless fetches still work."""

from __future__ import annotations

import time
from typing import Any

import confluent_kafka
import kafka
import pytest

from minikafka.client.admin import NewTopic, raise_first
from minikafka.proto.errors import ErrorCode
from tests.integration.cluster import Cluster
from tests.integration.conftest import ClusterFactory
from tests.integration.kafka_protocol.raw import RawKafka

pytestmark = pytest.mark.integration

TOPIC = "sessions"
PARTITIONS = 12


def _cluster(cluster_factory: ClusterFactory) -> Cluster:
    cluster = cluster_factory(n_brokers=1)
    with cluster.admin() as admin:
        raise_first(admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)]))
    for p in range(PARTITIONS):
        cluster.wait_for(
            lambda p=p: (
                cluster.leader(TOPIC, p) >= 0  # type: ignore[misc]
                and cluster.fetch(0, TOPIC, p, 0).error_code == ErrorCode.NONE
            ),
            30,
            f"{TOPIC}-{p} served",
        )
    return cluster


def _count(cluster: Cluster, kind: str) -> float:
    value = cluster.metric(0, "minikafka_fetch_session_requests_total", kind=kind)
    return value or 0.0


def _fetch(
    session_id: int,
    epoch: int,
    partitions: list[int],
    forgotten: list[int],
    offsets: dict[int, int] | None = None,
) -> Any:
    return {
        "replica_id": -1,
        "max_wait": 0,
        "min_bytes": 0,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": session_id,
        "session_epoch": epoch,
        "topics": [
            {
                "topic": TOPIC,
                "partitions": [
                    {
                        "partition": p,
                        "current_leader_epoch": -1,
                        "fetch_offset": (offsets or {}).get(p, 0),
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1 << 20,
                    }
                    for p in partitions
                ],
            }
        ]
        if partitions
        else [],
        "forgotten_topics_data": [{"topic": TOPIC, "partitions": forgotten}] if forgotten else [],
        "rack_id": "",
    }


def _answered(answer: Any) -> list[int]:
    return sorted(p.partition_index for t in answer.responses for p in t.partitions)


def test_kafka_python_reads_across_incremental_fetches(cluster_factory: ClusterFactory) -> None:
    cluster = _cluster(cluster_factory)
    bootstrap = cluster.kafka_bootstrap_servers
    consumer = kafka.KafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False, fetch_max_wait_ms=100
    )
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=0)
    try:
        tps = [kafka.TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        consumer.seek_to_beginning()
        expected: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
        read: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(PARTITIONS)}
        incremental_before = _count(cluster, "incremental")
        for wave in range(6):
            # A few partitions get news each wave; the others stay idle in the session.
            for p in (wave % PARTITIONS, (wave * 5 + 3) % PARTITIONS):
                for i in range(3):
                    value = b"w%d-p%d-%d" % (wave, p, i)
                    producer.send(TOPIC, value=value, partition=p).get(timeout=20)
                    expected[p].append(value)
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and any(
                len(read[p]) < len(expected[p]) for p in expected
            ):
                for tp, messages in consumer.poll(timeout_ms=200).items():
                    read[tp.partition].extend((m.offset, m.value) for m in messages)
        for p in range(PARTITIONS):
            assert read[p] == list(enumerate(expected[p])), p
        # Waves 1-5 were produced after the previous wave was read: each needed a fetch of its
        # own, inside the one session.
        assert _count(cluster, "incremental") - incremental_before >= 5
        assert _count(cluster, "full") == 1
        assert _count(cluster, "error") == 0
    finally:
        producer.close(timeout=5)
        consumer.close()


def test_session_rules_as_a_raw_client_sees_them(cluster_factory: ClusterFactory) -> None:
    cluster = _cluster(cluster_factory)
    assert cluster.produce(TOPIC, 2, [b"a", b"b"], acks=-1).ok
    with RawKafka(cluster.brokers[0].kafka_address) as raw:
        full = raw.call(1, 12, _fetch(0, 0, list(range(PARTITIONS)), []))
        assert full.error_code == ErrorCode.NONE
        assert full.session_id != 0
        assert _answered(full) == list(range(PARTITIONS))

        # The client moves its fetch offset past what it read: listed, and not answered.
        quiet = raw.call(1, 12, _fetch(full.session_id, 1, [2], [], {2: 2}))
        assert (quiet.error_code, quiet.session_id, _answered(quiet)) == (0, full.session_id, [])

        assert cluster.produce(TOPIC, 5, [b"c"], acks=-1).ok
        news = raw.call(1, 12, _fetch(full.session_id, 2, [], [2]))  # and forget partition 2
        assert _answered(news) == [5]
        [[five]] = [t.partitions for t in news.responses]
        assert five.high_watermark == 1 and five.records

        wrong = raw.call(1, 12, _fetch(full.session_id, 9, [], []))
        assert (wrong.error_code, wrong.session_id) == (ErrorCode.INVALID_FETCH_SESSION_EPOCH, 0)
        unknown = raw.call(1, 12, _fetch(full.session_id + 1, 1, [], []))
        assert unknown.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND

        # Sessionless (librdkafka's way, and every fetch before v7): no session id back.
        legacy = raw.call(1, 12, _fetch(0, -1, [2], []))
        assert (legacy.session_id, _answered(legacy)) == (0, [2])
        old = raw.call(1, 6, _fetch(0, -1, [2], []))
        assert _answered(old) == [2]


def test_librdkafka_sessionless_consumer_still_reads(cluster_factory: ClusterFactory) -> None:
    cluster = _cluster(cluster_factory)
    for p in (0, 7):
        assert cluster.produce(TOPIC, p, [b"x%d" % p, b"y%d" % p], acks=-1).ok
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": cluster.kafka_bootstrap_servers,
            "group.id": "sessionless",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 100,
        }
    )
    try:
        consumer.assign([confluent_kafka.TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
        got: list[tuple[int, int, bytes | None]] = []
        deadline = time.monotonic() + 20
        while len(got) < 4 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            value = message.value()
            assert not isinstance(value, str)
            got.append((message.partition() or 0, message.offset() or 0, value))
        assert sorted(got) == [(0, 0, b"x0"), (0, 1, b"y0"), (7, 0, b"x7"), (7, 1, b"y7")]
    finally:
        consumer.close()
    assert _count(cluster, "sessionless") > 0
