"""Producer.send_batch against real brokers: idempotent RF3 batches split at batch.size, each
record's offset as the log has it; a transaction's records committed or aborted together."""

from __future__ import annotations

import time
import uuid

import pytest

from minikafka.client.admin import NewTopic
from minikafka.client.consumer.consumer import Consumer
from minikafka.client.producer.partitioner import partition_for_key
from minikafka.client.producer.producer import Producer
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode
from tests.integration.cluster import Cluster
from tests.integration.conftest import ClusterFactory

pytestmark = pytest.mark.integration


def _cluster(cluster_factory: ClusterFactory, topic: str) -> Cluster:
    cluster = cluster_factory(n_brokers=3, overrides={"min.insync.replicas": "2"})
    with cluster.admin() as admin:
        admin.create_topics([NewTopic(topic, 3, 3)])
    cluster.wait_for(
        lambda: all(
            cluster.leader(topic, p) >= 0
            and cluster.fetch(cluster.leader(topic, p), topic, p, 0).error_code == ErrorCode.NONE
            for p in range(3)
        ),
        30,
        f"leaders serving {topic}",
    )
    return cluster


def _read(
    cluster: Cluster, topic: str, count: int, isolation: str = "read_uncommitted"
) -> dict[tuple[int, int], bytes]:
    """(partition, offset) -> value of the first ``count`` records of ``topic``."""
    tps = [TopicPartition(topic, p) for p in range(3)]
    seen: dict[tuple[int, int], bytes] = {}
    with Consumer(
        bootstrap_servers=cluster.bootstrap_servers,
        auto_offset_reset="earliest",
        isolation_level=isolation,
    ) as consumer:
        consumer.assign(tps)
        deadline = time.monotonic() + 30
        while len(seen) < count and time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=500).items():
                seen.update(((tp.partition, r.offset), r.value or b"") for r in records)
    return seen


def test_idempotent_batches_land_where_their_futures_say(cluster_factory: ClusterFactory) -> None:
    cluster = _cluster(cluster_factory, "many")
    values = [b"v%05d" % i + bytes(200) for i in range(3_000)]
    keys = [b"k%d" % (i % 23) for i in range(3_000)]
    with Producer(
        cluster.bootstrap_servers, acks="all", linger_ms=5, batch_size=16_384
    ) as producer:
        assert producer.idempotent
        unkeyed = producer.send_batch("many", values)
        keyed = producer.send_batch("many", values, keys=keys)
        producer.flush(timeout=30)
        placed = unkeyed.result(timeout=1) + keyed.result(timeout=1)
    assert len({r.result for r in unkeyed.runs}) > 3  # split at batch.size, several partitions
    for i, metadata in enumerate(keyed.result(timeout=0)):
        assert metadata.partition == partition_for_key(keys[i], 3)
    log = _read(cluster, "many", 6_000)
    assert len(log) == 6_000
    for metadata, value in zip(placed, values + values, strict=True):
        assert log[metadata.partition, metadata.offset] == value


def test_a_transactions_batches_commit_and_abort_together(cluster_factory: ClusterFactory) -> None:
    cluster = _cluster(cluster_factory, "txn")
    with Producer(
        cluster.bootstrap_servers,
        transactional_id=f"tx-{uuid.uuid4()}",
        transaction_timeout_ms=30_000,
        linger_ms=5,
        batch_size=4_096,
    ) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        committed = producer.send_batch("txn", [b"c%d" % i + bytes(100) for i in range(500)])
        producer.commit_transaction()
        producer.begin_transaction()
        aborted = producer.send_batch("txn", [b"a%d" % i for i in range(200)])
        producer.abort_transaction()
    assert all(error is None for error in committed.exceptions(timeout=0))
    assert aborted.done()  # written then aborted, or dropped unsent: never read committed
    values = set(_read(cluster, "txn", 500, "read_committed").values())
    assert values == {b"c%d" % i + bytes(100) for i in range(500)}
