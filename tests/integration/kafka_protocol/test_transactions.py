"""Transactions (KIP-98) on the Kafka listener, driven by confluent-kafka (librdkafka) and
kafka-python's transactional producers and read_committed consumers against real broker
processes: what a committed transaction writes is read once, what an aborted one writes never
reaches a read_committed consumer, offsets sent in a transaction count only once it commits,
and a second producer with the same transactional id fences the first."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import confluent_kafka
import kafka
import pytest

from minikafka.client.admin import NewTopic
from minikafka.proto.errors import ErrorCode
from tests.integration.cluster import Cluster
from tests.integration.conftest import ClusterFactory

pytestmark = pytest.mark.integration


@pytest.fixture
def cluster(cluster_factory: ClusterFactory) -> Iterator[Cluster]:
    cluster = cluster_factory(n_brokers=3, overrides={"min.insync.replicas": "2"})
    yield cluster


def _create(cluster: Cluster, *topics: str, partitions: int = 2) -> None:
    with cluster.admin() as admin:
        admin.create_topics([NewTopic(t, partitions, 3) for t in topics])

    def leading() -> bool:
        return all(
            cluster.leader(t, p) >= 0
            and cluster.fetch(cluster.leader(t, p), t, p, 0).error_code == ErrorCode.NONE
            for t in topics
            for p in range(partitions)
        )

    cluster.wait_for(leading, 30, f"leaders serving {topics}")


def _producer(cluster: Cluster, transactional_id: str) -> confluent_kafka.Producer:
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": cluster.kafka_bootstrap_servers,
            "transactional.id": transactional_id,
            "transaction.timeout.ms": 30_000,
            "linger.ms": 5,
        }
    )
    producer.init_transactions(60)
    return producer


def _consume_all(
    cluster: Cluster, topic: str, isolation: str, expected: int, timeout_s: float = 30
) -> list[tuple[int, int, bytes]]:
    """(partition, offset, value) of every record ``isolation`` sees, once ``expected`` came
    (and a little longer, to see one too many)."""
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": cluster.kafka_bootstrap_servers,
            "group.id": f"reader-{uuid.uuid4()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }
    )
    consumer.subscribe([topic])
    seen: list[tuple[int, int, bytes]] = []
    deadline = time.monotonic() + timeout_s
    quiet_until: float | None = None
    try:
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                seen.append(
                    (message.partition() or 0, message.offset() or 0, message.value() or b"")
                )
            if len(seen) >= expected and quiet_until is None:
                quiet_until = time.monotonic() + 2
            if quiet_until is not None and time.monotonic() > quiet_until:
                break
    finally:
        consumer.close()
    return seen


def _values(seen: list[tuple[int, int, bytes]]) -> list[bytes]:
    return sorted(v for _, _, v in seen)


def test_committed_records_are_read_and_aborted_ones_are_not(cluster: Cluster) -> None:
    _create(cluster, "payments")
    producer = _producer(cluster, "tx-payments")
    expected: list[bytes] = []
    for round_, commit in enumerate([True, False, True]):
        producer.begin_transaction()
        values = [f"r{round_}-{i}".encode() for i in range(20)]
        for i, value in enumerate(values):
            producer.produce("payments", value=value, key=str(i).encode())
        if commit:
            producer.commit_transaction(30)
            expected += values
        else:
            producer.flush(30)
            producer.abort_transaction(30)
    committed = _consume_all(cluster, "payments", "read_committed", len(expected))
    assert _values(committed) == sorted(expected)
    everything = _consume_all(cluster, "payments", "read_uncommitted", 60)
    assert len(everything) == 60  # the aborted records are in the log; markers are not records
    # Each transaction's marker took an offset of its own in each partition it wrote to.
    offsets = {(p, o) for p, o, _ in everything}
    assert len(offsets) == 60


def test_an_open_transaction_holds_read_committed_consumers_back(cluster: Cluster) -> None:
    _create(cluster, "held", partitions=1)
    producer = _producer(cluster, "tx-held")
    producer.begin_transaction()
    producer.produce("held", value=b"pending", partition=0)
    producer.flush(30)
    # Nothing is stable yet: the last stable offset stays at the transaction's first offset.
    assert _consume_all(cluster, "held", "read_committed", 1, timeout_s=4) == []
    assert _values(_consume_all(cluster, "held", "read_uncommitted", 1)) == [b"pending"]
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": cluster.kafka_bootstrap_servers,
            "group.id": "lso-check",
            "isolation.level": "read_committed",
        }
    )
    try:
        _low, high = consumer.get_watermark_offsets(
            confluent_kafka.TopicPartition("held", 0), timeout=10, cached=False
        )
        assert high == 0  # read_committed's end: the LSO
    finally:
        consumer.close()
    producer.commit_transaction(30)
    assert _values(_consume_all(cluster, "held", "read_committed", 1)) == [b"pending"]


def test_offsets_sent_in_a_transaction_count_only_when_it_commits(cluster: Cluster) -> None:
    _create(cluster, "orders", "invoices")
    source = confluent_kafka.Producer({"bootstrap.servers": cluster.kafka_bootstrap_servers})
    for i in range(40):
        source.produce("orders", value=f"order-{i}".encode(), key=str(i).encode())
    source.flush(30)

    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": cluster.kafka_bootstrap_servers,
            "group.id": "billing",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    consumer.subscribe(["orders"])
    producer = _producer(cluster, "tx-billing")
    done = 0
    aborted_once = False
    deadline = time.monotonic() + 60
    try:
        while done < 40 and time.monotonic() < deadline:
            messages = consumer.consume(10, 1.0)
            messages = [m for m in messages if m.error() is None]
            if not messages:
                continue
            producer.begin_transaction()
            for m in messages:
                producer.produce("invoices", value=b"invoice-of-" + (m.value() or b""), key=m.key())
            producer.send_offsets_to_transaction(
                consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), 30
            )
            if not aborted_once:
                # The first batch is aborted: its invoices vanish and its offsets are not
                # committed, so the group reads those orders again.
                aborted_once = True
                producer.abort_transaction(30)
                committed = consumer.committed(consumer.assignment(), timeout=10)
                assert all(tp.offset < 0 for tp in committed)
                for tp in consumer.assignment():
                    consumer.seek(confluent_kafka.TopicPartition(tp.topic, tp.partition, 0))
                continue
            producer.commit_transaction(30)
            done += len(messages)
        assert done == 40
        committed = consumer.committed(consumer.assignment(), timeout=10)
        assert sum(tp.offset for tp in committed) == 40
    finally:
        consumer.close()
    invoices = _consume_all(cluster, "invoices", "read_committed", 40)
    assert _values(invoices) == sorted(f"invoice-of-order-{i}".encode() for i in range(40))


def test_a_second_producer_with_the_same_id_fences_the_first(cluster: Cluster) -> None:
    _create(cluster, "fenced", partitions=1)
    first = _producer(cluster, "tx-fence")
    first.begin_transaction()
    first.produce("fenced", value=b"zombie", partition=0)
    first.flush(30)
    second = _producer(cluster, "tx-fence")  # bumps the epoch and aborts first's transaction
    second.begin_transaction()
    second.produce("fenced", value=b"alive", partition=0)
    second.commit_transaction(30)
    with pytest.raises(confluent_kafka.KafkaException) as raised:
        first.produce("fenced", value=b"zombie-2", partition=0)
        first.commit_transaction(30)
    assert raised.value.args[0].fatal() or raised.value.args[0].txn_requires_abort()
    assert _values(_consume_all(cluster, "fenced", "read_committed", 1)) == [b"alive"]


def test_kafka_python_transactions(cluster: Cluster) -> None:
    _create(cluster, "kp-tx", partitions=1)
    producer = kafka.KafkaProducer(
        bootstrap_servers=cluster.kafka_bootstrap_servers, transactional_id="tx-kafka-python"
    )
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("kp-tx", b"kept")
        producer.commit_transaction()
        producer.begin_transaction()
        producer.send("kp-tx", b"dropped")
        producer.abort_transaction()
    finally:
        producer.close(timeout=10)
    consumer = kafka.KafkaConsumer(
        "kp-tx",
        bootstrap_servers=cluster.kafka_bootstrap_servers,
        isolation_level="read_committed",
        auto_offset_reset="earliest",
        consumer_timeout_ms=5_000,
    )
    try:
        assert [m.value for m in consumer] == [b"kept"]
    finally:
        consumer.close()
