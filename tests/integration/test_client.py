"""The Python Producer and Consumer against real broker processes."""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Mapping

import pytest

from minikafka.client.admin import NewTopic
from minikafka.client.consumer.consumer import Consumer
from minikafka.client.producer.partitioner import partition_for_key
from minikafka.client.producer.producer import Producer
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode, KafkaError
from tests.integration.cluster import Cluster
from tests.integration.conftest import ClusterFactory

pytestmark = pytest.mark.integration


def _create(
    cluster_factory: ClusterFactory,
    topic: str,
    partitions: int,
    rf: int,
    *,
    configs: Mapping[str, str] | None = None,
    overrides: Mapping[str, str] | None = None,
) -> Cluster:
    """Three brokers (with ``overrides``) and ``topic``, once every partition has a leader."""
    cluster = cluster_factory(n_brokers=3, overrides=overrides)
    with cluster.admin() as admin:
        admin.create_topics([NewTopic(topic, partitions, rf, configs=configs or {})])
    cluster.wait_for(
        lambda: all(cluster.leader(topic, p) >= 0 for p in range(partitions)),
        timeout_s=30,
        what=f"leaders for {topic}",
    )
    return cluster


def _values(bootstrap: str, topic: str, count: int) -> list[bytes | None]:
    """The values of partition 0 of ``topic`` from the start, once ``count`` have come (or
    after 30 s)."""
    with Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        values: list[bytes | None] = []
        deadline = time.monotonic() + 30
        while len(values) < count and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                values.extend(r.value for r in records)
    return values


def test_produce_then_consume_everything_in_order(cluster_factory: ClusterFactory) -> None:
    bootstrap = _create(cluster_factory, "orders", partitions=3, rf=3).bootstrap_servers
    acked: dict[int, list[tuple[int, bytes]]] = defaultdict(list)
    with Producer(bootstrap_servers=bootstrap, acks="all", linger_ms=5) as producer:
        futures = [
            (producer.send("orders", f"v{i}".encode(), key=f"k{i % 17}".encode()), i)
            for i in range(600)
        ]
        producer.flush(timeout=30)
        for future, i in futures:
            md = future.result(timeout=1)
            assert md.topic == "orders"
            # Keys land where the Java client would put them.
            assert md.partition == partition_for_key(f"k{i % 17}".encode(), 3)
            acked[md.partition].append((md.offset, f"v{i}".encode()))

    with Consumer("orders", bootstrap_servers=bootstrap, auto_offset_reset="earliest") as consumer:
        seen: dict[int, list[tuple[int, bytes]]] = defaultdict(list)
        deadline = time.monotonic() + 30
        while sum(map(len, seen.values())) < 600 and time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=500).items():
                seen[tp.partition].extend((r.offset, r.value or b"") for r in records)
        for partition, sent in acked.items():
            assert seen[partition] == sorted(sent)
        end = consumer.end_offsets([TopicPartition("orders", p) for p in range(3)])
        assert sum(end.values()) == 600


def test_idempotent_producer_through_a_leader_kill(cluster_factory: ClusterFactory) -> None:
    """No acknowledged record lost, none written twice, order kept, across a leader kill."""
    cluster = _create(cluster_factory, "events", 1, 3, overrides={"min.insync.replicas": "2"})
    acked: list[tuple[int, bytes]] = []
    failed: list[BaseException] = []
    stop = threading.Event()

    def produce() -> None:
        with Producer(
            bootstrap_servers=cluster.bootstrap_servers,
            acks="all",
            linger_ms=2,
            request_timeout_ms=5_000,
            delivery_timeout_ms=60_000,
            max_in_flight_requests_per_connection=5,
            enable_idempotence=True,
        ) as producer:
            i = 0
            while not stop.is_set():
                # Bursts, so that batches of several records are in flight when the leader dies.
                burst = [f"e{i + j}".encode() for j in range(20)]
                futures = [(value, producer.send("events", value)) for value in burst]
                i += len(burst)
                for value, future in futures:
                    try:
                        acked.append((future.result(timeout=60).offset, value))
                    except Exception as exc:  # an error is allowed; a lost ack is not
                        failed.append(exc)

    thread = threading.Thread(target=produce)
    thread.start()
    cluster.wait_for(lambda: len(acked) >= 200, timeout_s=30, what="200 acks")
    old_leader = cluster.leader("events", 0)
    cluster.kill(old_leader)
    count = len(acked)
    cluster.wait_for(lambda: len(acked) >= count + 200, timeout_s=45, what="acks after the kill")
    stop.set()
    thread.join(60)
    assert cluster.leader("events", 0) not in (-1, old_leader)

    with Consumer(bootstrap_servers=cluster.bootstrap_servers) as consumer:
        tp = TopicPartition("events", 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp])[tp]
        read: dict[int, bytes] = {}
        deadline = time.monotonic() + 30
        while consumer.position(tp) < end and time.monotonic() < deadline:
            for record in consumer.poll(timeout_ms=500).get(tp, []):
                read[record.offset] = record.value or b""
    for offset, value in acked:
        assert read.get(offset) == value, f"acked record at offset {offset} lost"
    values = [read[offset] for offset in sorted(read)]
    assert len(values) == len(set(values)), "a record was written twice"
    indexes = [int(v[1:]) for v in values]
    assert indexes == sorted(indexes), "records are out of send order"


def test_producer_bad_input_gets_clear_errors(cluster_factory: ClusterFactory) -> None:
    cluster = _create(
        cluster_factory, "small", 1, 1, overrides={"auto.create.topics.enable": "false"}
    )
    bootstrap = cluster.bootstrap_servers
    producer = Producer(bootstrap_servers=bootstrap, max_block_ms=2_000, max_request_size=10_000)
    try:
        # unknown topic that the brokers will not create: UNKNOWN_TOPIC_OR_PARTITION
        with pytest.raises(KafkaError) as unknown:
            producer.send("no-such-topic", b"v")
        assert unknown.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert "no-such-topic" in str(unknown.value)
        # a name no topic may have: refused, never created
        with pytest.raises(KafkaError) as invalid:
            producer.send("no/such/topic", b"v")
        assert invalid.value.code == ErrorCode.INVALID_TOPIC_EXCEPTION
        # oversize record: refused before it is queued
        with pytest.raises(KafkaError) as large:
            producer.send("small", b"x" * 20_000)
        assert large.value.code == ErrorCode.MESSAGE_TOO_LARGE
        # a partition the topic does not have: as Kafka, waited for (max.block.ms) in case it
        # was added a moment ago, then a timeout naming the partition count
        with pytest.raises(KafkaError) as partition:
            producer.send("small", b"v", partition=7)
        assert partition.value.code == ErrorCode.REQUEST_TIMED_OUT
        assert "partition 7 of topic small with partition count 1" in str(partition.value)
        # not bytes
        with pytest.raises(TypeError):
            producer.send("small", "text")
        assert producer.send("small", b"ok").result(timeout=10).offset == 0
    finally:
        producer.close()
    with pytest.raises(KafkaError, match="closed"):
        producer.send("small", b"late")
    # nothing refused was stored
    with Consumer(bootstrap_servers=bootstrap) as consumer:
        tp = TopicPartition("small", 0)
        assert consumer.end_offsets([tp])[tp] == 1


def test_idempotent_producer_goes_on_after_the_broker_refuses_a_batch(
    cluster_factory: ClusterFactory,
) -> None:
    # The broker refuses a batch that the client let through (the topic's max.message.bytes is
    # below the producer's max.request.size): that batch fails, and the partition's next
    # batches are written, not refused as out of sequence.
    cluster = _create(cluster_factory, "strict", 1, 3, configs={"max.message.bytes": "2000"})
    with Producer(bootstrap_servers=cluster.bootstrap_servers, linger_ms=0) as producer:
        assert producer.send("strict", b"a").result(timeout=30).offset == 0
        refused = producer.send("strict", b"x" * 5_000)
        error = refused.exception(timeout=30)
        assert isinstance(error, KafkaError)
        assert error.code == ErrorCode.MESSAGE_TOO_LARGE
        offsets = [producer.send("strict", b"b%d" % i).result(timeout=30).offset for i in range(5)]
    assert offsets == [1, 2, 3, 4, 5]
    assert _values(cluster.bootstrap_servers, "strict", 6) == [b"a"] + [
        b"b%d" % i for i in range(5)
    ]


def test_idle_producer_ids_expire_on_every_replica_and_the_producer_goes_on(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = _create(
        cluster_factory,
        "idle",
        1,
        3,
        overrides={
            "producer.id.expiration.ms": "1500",
            "producer.id.expiration.check.interval.ms": "200",
        },
    )

    def expired_on(broker_id: int) -> bool:
        return any(
            e.get("topic") == "idle"
            for e in cluster.brokers[broker_id].log_events("producer_state.expired")
        )

    with Producer(bootstrap_servers=cluster.bootstrap_servers, linger_ms=0) as producer:
        first = [producer.send("idle", b"a%d" % i).result(timeout=30).offset for i in range(3)]
        cluster.wait_for(
            lambda: all(expired_on(b) for b in cluster.brokers),
            timeout_s=30,
            what="the producer's state to expire on every replica",
        )
        # The broker no longer knows the producer: its next sequence is taken as it comes.
        later = [producer.send("idle", b"b%d" % i).result(timeout=30).offset for i in range(3)]
    assert first + later == list(range(6))
    assert _values(cluster.bootstrap_servers, "idle", 6) == [
        b"a0",
        b"a1",
        b"a2",
        b"b0",
        b"b1",
        b"b2",
    ]
