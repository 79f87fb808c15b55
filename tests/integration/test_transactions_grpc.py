"""Transactions (KIP-98) on the gRPC door, driven by minikafka's own Producer, Consumer and
``minikafka transactions`` against real broker processes: a committed transaction is read by
read_committed consumers, an aborted one never (read_uncommitted sees both), offsets sent in a
transaction become the group's only when it commits, a second producer with the same
transactional id fences the first, and the CLI lists and describes what is going on."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator

import pytest

from minikafka.client.admin import NewTopic
from minikafka.client.consumer.consumer import Consumer
from minikafka.client.producer.producer import Producer
from minikafka.proto.common import OffsetAndMetadata, TopicPartition
from minikafka.proto.errors import ErrorCode, KafkaError
from tests.integration.cluster import REPO_ROOT, Cluster
from tests.integration.conftest import ClusterFactory

pytestmark = pytest.mark.integration


@pytest.fixture
def cluster(cluster_factory: ClusterFactory) -> Iterator[Cluster]:
    yield cluster_factory(n_brokers=3, overrides={"min.insync.replicas": "2"})


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


def _producer(cluster: Cluster, transactional_id: str) -> Producer:
    producer = Producer(
        cluster.bootstrap_servers,
        transactional_id=transactional_id,
        transaction_timeout_ms=30_000,
        linger_ms=5,
        max_block_ms=60_000,
    )
    producer.init_transactions()
    return producer


def _read_all(
    cluster: Cluster, topic: str, isolation: str, partitions: int = 2, *, settle: bool = True
) -> list[bytes]:
    """Every value ``isolation`` lets a consumer read from the start to the end offsets (the
    LSO for read_committed). ``settle``: first wait until no transaction is open (the LSO has
    reached the high watermark: EndTxn answers before the markers are written, as Kafka's)."""
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    with (
        Consumer(bootstrap_servers=cluster.bootstrap_servers) as plain,
        Consumer(
            bootstrap_servers=cluster.bootstrap_servers,
            isolation_level=isolation,
            auto_offset_reset="earliest",
        ) as consumer,
    ):
        if settle:
            cluster.wait_for(
                lambda: consumer.end_offsets(tps) == plain.end_offsets(tps),
                30,
                f"no open transaction on {topic}",
            )
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        values: list[bytes] = []
        for _ in range(100):
            if all(consumer.position(tp) >= ends[tp] for tp in tps):
                break
            for records in consumer.poll(500).values():
                values += [r.value or b"" for r in records]
        return sorted(values)


def test_commit_is_visible_to_read_committed_and_abort_never(cluster: Cluster) -> None:
    _create(cluster, "out")
    with _producer(cluster, f"tx-{uuid.uuid4()}") as producer:
        producer.begin_transaction()
        for i in range(10):
            producer.send("out", b"committed-%d" % i, partition=i % 2)
        producer.commit_transaction()
        producer.begin_transaction()
        for i in range(5):
            producer.send("out", b"aborted-%d" % i, partition=i % 2)
        producer.flush()  # written to the log, then aborted
        producer.abort_transaction()
        producer.begin_transaction()
        producer.send("out", b"after", partition=0)
        producer.commit_transaction()

    committed = sorted([b"committed-%d" % i for i in range(10)] + [b"after"])
    assert _read_all(cluster, "out", "read_committed") == committed
    uncommitted = _read_all(cluster, "out", "read_uncommitted")
    assert uncommitted == sorted(committed + [b"aborted-%d" % i for i in range(5)])


def test_an_open_transaction_holds_read_committed_at_the_lso(cluster: Cluster) -> None:
    _create(cluster, "held", partitions=1)
    tp = TopicPartition("held", 0)
    with _producer(cluster, f"tx-{uuid.uuid4()}") as producer:
        producer.begin_transaction()
        producer.send("held", b"open", partition=0)
        producer.flush()
        with (
            Consumer(bootstrap_servers=cluster.bootstrap_servers) as uncommitted,
            Consumer(
                bootstrap_servers=cluster.bootstrap_servers, isolation_level="read_committed"
            ) as committed,
        ):
            assert uncommitted.end_offsets([tp])[tp] == 1  # the high watermark
            assert committed.end_offsets([tp])[tp] == 0  # the LSO: the open transaction's start
        assert _read_all(cluster, "held", "read_committed", partitions=1, settle=False) == []
        producer.commit_transaction()
    assert _read_all(cluster, "held", "read_committed", partitions=1) == [b"open"]


def test_offsets_sent_in_a_transaction_count_only_when_it_commits(cluster: Cluster) -> None:
    _create(cluster, "in", "out")
    group = f"etl-{uuid.uuid4()}"
    tp = TopicPartition("in", 0)
    with cluster.admin() as admin, _producer(cluster, f"tx-{uuid.uuid4()}") as producer:
        producer.begin_transaction()
        producer.send("out", b"x", partition=0)
        producer.send_offsets_to_transaction({tp: OffsetAndMetadata(7)}, group)
        producer.abort_transaction()
        assert tp not in admin.list_consumer_group_offsets(group)

        producer.begin_transaction()
        producer.send("out", b"y", partition=0)
        producer.send_offsets_to_transaction({tp: OffsetAndMetadata(9)}, group)
        producer.commit_transaction()

        def committed() -> bool:
            return admin.list_consumer_group_offsets(group).get(tp) == OffsetAndMetadata(9)

        cluster.wait_for(committed, 30, "the transaction's offset committed")


def test_a_second_producer_with_the_same_id_fences_the_first(cluster: Cluster) -> None:
    _create(cluster, "out")
    transactional_id = f"tx-{uuid.uuid4()}"
    zombie = _producer(cluster, transactional_id)
    try:
        zombie.begin_transaction()
        zombie.send("out", b"zombie", partition=0)
        zombie.flush()
        with _producer(cluster, transactional_id) as successor:  # aborts the zombie's
            successor.begin_transaction()
            successor.send("out", b"successor", partition=1)
            successor.commit_transaction()
        with pytest.raises(KafkaError) as fenced:
            zombie.send("out", b"late", partition=0)
            zombie.commit_transaction()
        assert fenced.value.code == ErrorCode.PRODUCER_FENCED
        with pytest.raises(KafkaError) as again:
            zombie.begin_transaction()
        assert again.value.code == ErrorCode.PRODUCER_FENCED
    finally:
        zombie.close(timeout=0)
    assert _read_all(cluster, "out", "read_committed") == [b"successor"]


def _transactions_cli(cluster: Cluster, *argv: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "minikafka", "transactions"]
    command += ["--bootstrap-server", cluster.bootstrap_servers, *argv]
    return subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)


def test_the_cli_lists_describes_and_shows_producers(cluster: Cluster) -> None:
    _create(cluster, "out", partitions=1)
    transactional_id = f"tx-{uuid.uuid4()}"
    with _producer(cluster, transactional_id) as producer:
        producer.begin_transaction()
        producer.send("out", b"open", partition=0)
        producer.flush()

        listed = _transactions_cli(cluster, "list")
        assert listed.returncode == 0, listed.stderr
        header, *rows = [
            [c.strip() for c in line.split("\t")] for line in listed.stdout.splitlines()
        ]
        assert header == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
        (row,) = [r for r in rows if r[0] == transactional_id]
        assert row[3] == "Ongoing"

        described = _transactions_cli(cluster, "describe", "--transactional-id", transactional_id)
        assert described.returncode == 0, described.stderr
        cells = [c.strip() for c in described.stdout.splitlines()[1].split("\t")]
        assert (cells[1], cells[4], cells[8]) == (transactional_id, "Ongoing", "out-0")

        producers = _transactions_cli(cluster, "describe-producers", "--topic", "out",
                                      "--partition", "0")  # fmt: skip
        assert producers.returncode == 0, producers.stderr
        (line,) = producers.stdout.splitlines()[1:]
        producer_cells = [c.strip() for c in line.split("\t")]
        assert producer_cells[0] == row[2]  # the producer id
        assert producer_cells[5] == "0"  # the open transaction starts at offset 0
        producer.commit_transaction()

    unknown = _transactions_cli(cluster, "describe", "--transactional-id", "no-such-id")
    assert unknown.returncode == 1
    assert unknown.stderr.startswith(
        "Failed to describe transaction state of transactional-id `no-such-id`: "
    )
    assert unknown.stderr.count("\n") == 1
