"""The log cleaner in real broker processes: compacted topics shrink on every replica, readers
get the latest value of each key, __consumer_offsets stays bounded, a SIGKILL mid-cleaning
loses nothing that should survive."""

from __future__ import annotations

import contextlib
import random
import time
from pathlib import Path

import pytest

from minikafka.client.admin import NewTopic
from minikafka.client.consumer.consumer import Consumer
from minikafka.client.producer.producer import Producer
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode
from tests.integration.cluster import Cluster
from tests.integration.conftest import ClusterFactory

pytestmark = pytest.mark.integration

TOPIC = "compacted"
CLEANER_OVERRIDES = {
    "log.cleaner.backoff.ms": "200",
    "log.retention.check.interval.ms": "1000",
}
COMPACTED = {
    "cleanup.policy": "compact",
    "segment.bytes": "16384",
    "min.cleanable.dirty.ratio": "0.1",
}


def _produce_updates(bootstrap: str, keys: int, updates: int, seed: int) -> dict[bytes, bytes]:
    """``updates`` records over ``keys`` keys; returns the last value of each key."""
    rng = random.Random(seed)
    latest: dict[bytes, bytes] = {}
    # Requests well below segment.bytes: a produce larger than a segment is refused.
    with Producer(
        bootstrap_servers=bootstrap,
        acks="all",
        linger_ms=5,
        batch_size=2048,
        max_request_size=4096,
    ) as producer:
        futures = []
        for n in range(updates):
            key = f"key-{rng.randrange(keys)}".encode()
            value = f"value-{seed}-{n}-".encode() + b"x" * 40
            futures.append(producer.send(TOPIC, value, key=key, partition=0))
            latest[key] = value
        producer.flush(timeout=60)
        for future in futures:
            future.get(timeout=10)
    return latest


def _read_latest(bootstrap: str) -> tuple[dict[bytes, bytes], int]:
    """The last value of each key from offset 0 to the end, and how many records were read."""
    tp = TopicPartition(TOPIC, 0)
    latest: dict[bytes, bytes] = {}
    count = 0
    with Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([tp])
        end = consumer.end_offsets([tp])[tp]
        consumer.seek_to_beginning(tp)
        deadline = time.monotonic() + 60
        while consumer.position(tp) < end:
            assert time.monotonic() < deadline, f"stuck at {consumer.position(tp)} of {end}"
            for records in consumer.poll(timeout_ms=500).values():
                for record in records:
                    assert record.key is not None and record.value is not None
                    latest[record.key] = record.value
                    count += 1
    return latest, count


def _log_bytes(directory: Path) -> int:
    """The bytes of the directory's segments; one the cleaner deletes while we look counts 0."""
    total = 0
    for segment in directory.glob("*.log"):
        with contextlib.suppress(FileNotFoundError):
            total += segment.stat().st_size
    return total


def _partition_bytes(cluster: Cluster, broker_id: int, topic: str, partition: int) -> int:
    return _log_bytes(cluster.brokers[broker_id].log_dir / f"{topic}-{partition}")


def _cleaned(cluster: Cluster, broker_id: int, topic: str) -> list[dict[str, object]]:
    return [e for e in cluster.brokers[broker_id].log_events("log.cleaned") if e["topic"] == topic]


def test_each_replica_compacts_its_copy_and_readers_get_the_latest_values(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(n_brokers=3, overrides=CLEANER_OVERRIDES)
    with cluster.admin() as admin:
        admin.create_topics([NewTopic(TOPIC, 1, 3, configs=COMPACTED)])
    cluster.wait_for(lambda: cluster.leader(TOPIC, 0) >= 0, 30, "a leader")
    # A record without a key has no place in a compacted topic: refused as Kafka refuses it.
    refused = cluster.produce(TOPIC, 0, [b"no key"], retry_s=10)
    assert refused.error == ErrorCode.INVALID_RECORD
    assert "Compacted topic cannot accept message without key" in refused.message
    latest = _produce_updates(cluster.bootstrap_servers, keys=10, updates=3000, seed=1)
    written = 3000 * 60
    cluster.wait_for(
        lambda: all(_cleaned(cluster, b, TOPIC) for b in cluster.brokers),
        60,
        "every replica to clean its copy",
    )
    cluster.wait_for(
        lambda: all(_partition_bytes(cluster, b, TOPIC, 0) < written / 3 for b in cluster.brokers),
        60,
        "every replica to shrink",
    )
    seen, count = _read_latest(cluster.bootstrap_servers)
    assert seen == latest
    assert count < 3000


def test_consumer_offsets_stays_bounded_under_100000_commits(
    cluster_factory: ClusterFactory,
) -> None:
    segment_bytes = 64 * 1024
    cluster = cluster_factory(
        n_brokers=1,
        overrides={
            **CLEANER_OVERRIDES,
            "offsets.topic.num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.segment.bytes": str(segment_bytes),
            "log.cleaner.min.cleanable.ratio": "0.5",
        },
    )
    partitions = 50
    with cluster.admin() as admin:
        admin.create_topics([NewTopic("tracked", partitions, 1)])
    tps = [TopicPartition("tracked", p) for p in range(partitions)]
    bootstrap = cluster.bootstrap_servers
    with Consumer(bootstrap_servers=bootstrap, group_id="busy", enable_auto_commit=False) as c:
        for n in range(1, 100_000 // partitions + 1):  # 2,000 commits of 50 offsets each
            c.commit({tp: n * 10 + tp.partition for tp in tps})
    uncompacted = 100_000 * 60  # at least this many bytes of offset commit records

    def small() -> bool:
        return _partition_bytes(cluster, 0, "__consumer_offsets", 0) < 8 * segment_bytes

    cluster.wait_for(small, 60, "__consumer_offsets to be compacted")
    assert _cleaned(cluster, 0, "__consumer_offsets")
    assert _partition_bytes(cluster, 0, "__consumer_offsets", 0) < uncompacted / 10
    # The coordinator loads the compacted partition after a restart: the last commits stand.
    cluster.stop(0)
    cluster.start(0)
    cluster.wait_until_serving()
    last = 100_000 // partitions
    with Consumer(bootstrap_servers=bootstrap, group_id="busy", enable_auto_commit=False) as c:
        assert {tp.partition: c.committed(tp) for tp in tps} == {
            p: last * 10 + p for p in range(partitions)
        }


def test_a_broker_killed_while_cleaning_keeps_every_latest_value(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(n_brokers=1, overrides=CLEANER_OVERRIDES)
    with cluster.admin() as admin:
        admin.create_topics([NewTopic(TOPIC, 1, 1, configs=COMPACTED)])
    cluster.wait_for(lambda: cluster.leader(TOPIC, 0) >= 0, 30, "a leader")
    latest: dict[bytes, bytes] = {}
    rng = random.Random(5)
    for round_ in range(3):
        latest.update(
            _produce_updates(cluster.bootstrap_servers, keys=50, updates=2000, seed=round_)
        )
        # Kill somewhere in the cleaning that this round's segments start.
        cleanings = len(cluster.brokers[0].log_events("log.cleaned"))
        time.sleep(rng.uniform(0.0, 0.6))
        cluster.kill(0)
        cluster.start(0)
        cluster.wait_until_serving()
        cluster.wait_for(lambda: cluster.leader(TOPIC, 0) >= 0, 30, "a leader")
        seen, _ = _read_latest(cluster.bootstrap_servers)
        assert seen == latest, f"round {round_} (cleanings before the kill: {cleanings})"
    cluster.wait_for(
        lambda: len(_cleaned(cluster, 0, TOPIC)) >= 2, 60, "cleanings after the restarts"
    )
    seen, count = _read_latest(cluster.bootstrap_servers)
    assert seen == latest and count < 6000
