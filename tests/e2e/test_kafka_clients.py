"""Unmodified Kafka clients against the compose cluster from the host, through a broker kill.

confluent-kafka (librdkafka) administers and produces with idempotence and acks=all while the
leader of a partition is killed; kafka-python consumes in a group and commits; a second member
resumes from the committed offsets. Every delivered record is read exactly once and in order
per partition, and the replicas agree afterwards.
"""

from __future__ import annotations

import time
from collections import defaultdict

import confluent_kafka
import kafka
from confluent_kafka.admin import AdminClient, NewTopic

from tests.e2e.conftest import BROKER_IDS, ComposeCluster
from tests.e2e.faults import assert_replicas_agree, wait_for, wait_full_isr

# KAFKA_EXTERNAL of broker1..3 (docker-compose.yml), on the session's host ports
KAFKA_BOOTSTRAP = ",".join(f"127.0.0.1:{ComposeCluster.kafka_port(b)}" for b in BROKER_IDS)
PARTITIONS = 3
RECORDS = 3000


def _create_topic(topic: str) -> AdminClient:
    admin = AdminClient({"bootstrap.servers": KAFKA_BOOTSTRAP})
    futures = admin.create_topics(
        [NewTopic(topic, PARTITIONS, 3, config={"min.insync.replicas": "2"})],
        operation_timeout=30,
    )
    futures[topic].result(30)

    def led() -> bool:
        partitions = admin.list_topics(topic, timeout=5).topics[topic].partitions.values()
        return len(partitions) == PARTITIONS and all(p.leader >= 0 for p in partitions)

    wait_for(led, 30, f"leaders for {topic}")
    return admin


def _where(message: confluent_kafka.Message) -> tuple[int, int]:
    """A delivered or consumed record's partition and offset (None only in an error)."""
    partition, offset = message.partition(), message.offset()
    assert partition is not None and offset is not None
    return partition, offset


def test_kafka_clients_produce_consume_and_commit_through_a_leader_kill(
    cluster: ComposeCluster,
) -> None:
    topic = "kafka-clients-kill"
    admin = _create_topic(topic)
    victim = admin.list_topics(topic, timeout=10).topics[topic].partitions[0].leader

    delivered: list[tuple[int, int, bytes | None, bytes | None]] = []
    failed: list[str] = []

    def on_delivery(err: confluent_kafka.KafkaError | None, msg: confluent_kafka.Message) -> None:
        if err is not None:
            failed.append(str(err))
        else:
            delivered.append((*_where(msg), msg.key(), msg.value()))

    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": KAFKA_BOOTSTRAP,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "message.timeout.ms": 120_000,
        }
    )
    for i in range(RECORDS):
        producer.produce(topic, key=b"k%d" % (i % 17), value=b"v%06d" % i, on_delivery=on_delivery)
        producer.poll(0)
        if i == RECORDS // 3:
            producer.flush(30)
            cluster.docker("kill", cluster.container(cluster.service(victim)))
            time.sleep(0.5)
    assert producer.flush(120) == 0
    assert not failed, failed[:5]
    assert len(delivered) == RECORDS

    # A kafka-python group member reads part, commits and leaves; a second member resumes.
    first = kafka.KafkaConsumer(
        topic,
        bootstrap_servers=KAFKA_BOOTSTRAP,
        group_id="kafka-clients-kill",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=20_000,
    )
    read: dict[int, list[tuple[int, bytes | None, bytes | None]]] = defaultdict(list)
    for message in first:
        read[message.partition].append((message.offset, message.key, message.value))
        if sum(len(v) for v in read.values()) >= RECORDS // 2:
            break
    first.commit()
    first.close()

    second = confluent_kafka.Consumer(
        {
            "bootstrap.servers": KAFKA_BOOTSTRAP,
            "group.id": "kafka-clients-kill",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    second.subscribe([topic])
    deadline = time.monotonic() + 60
    while sum(len(v) for v in read.values()) < RECORDS and time.monotonic() < deadline:
        message = second.poll(1.0)
        if message is None or message.error() is not None:
            continue
        partition, offset = _where(message)
        read[partition].append((offset, message.key(), message.value()))
    second.commit(asynchronous=False)
    second.close()

    expected: dict[int, list[tuple[int, bytes | None, bytes | None]]] = defaultdict(list)
    for partition, offset, key, value in delivered:
        expected[partition].append((offset, key, value))
    for partition in expected:
        expected[partition].sort()
        # exactly once and in order: the second member started at the first one's commit
        assert read[partition] == expected[partition], f"partition {partition}"

    cluster.start(cluster.service(victim))
    cluster.wait_healthy()
    wait_full_isr(topic, 120)
    assert_replicas_agree(cluster, topic, PARTITIONS)
