"""Produce, Fetch, ListOffsets, DeleteRecords and InitProducerId on the Kafka listener, driven by
kafka-python and confluent-kafka (librdkafka) against real broker processes; records cross
between the two front doors byte for byte."""

from __future__ import annotations

import datetime
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import confluent_kafka
import kafka
import pytest
from confluent_kafka.admin import AdminClient
from kio.index import load_request_schema

import minikafka
from minikafka.client.admin import NewTopic
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.common import TopicPartition as MiniTopicPartition
from minikafka.proto.errors import ErrorCode
from tests.integration.cluster import DEFAULT_REPLICATION, Cluster
from tests.integration.conftest import ClusterFactory
from tests.integration.kafka_protocol.raw import RawKafka, batch, produce_fields

pytestmark = pytest.mark.integration

# (key, value, headers, timestamp_ms): what a consumer must give back exactly as produced.
Record = tuple[bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...], int]

_T0 = 1_700_000_000_000


def _cluster(
    cluster_factory: ClusterFactory,
    topic: str,
    *,
    brokers: int = 1,
    replication_factor: int = 1,
    overrides: dict[str, str] | None = None,
    replication: str = DEFAULT_REPLICATION,
    topic_configs: dict[str, str] | None = None,
) -> Cluster:
    """A cluster with a one-partition ``topic`` (created over gRPC), once its leader serves."""
    cluster = cluster_factory(n_brokers=brokers, overrides=overrides, replication=replication)
    with cluster.admin() as admin:
        admin.create_topics([NewTopic(topic, 1, replication_factor, configs=topic_configs or {})])

    def leading() -> bool:
        leader = cluster.leader(topic, 0)
        return leader >= 0 and cluster.fetch(leader, topic, 0, 0).error_code == ErrorCode.NONE

    cluster.wait_for(leading, 30, f"a leader serving {topic}")
    return cluster


def _records(tag: str, count: int, first_timestamp: int) -> list[Record]:
    """Keys and values of every byte, null and empty ones, headers, explicit timestamps."""
    records: list[Record] = []
    for i in range(count):
        key = None if i % 5 == 0 else f"{tag}-k{i}".encode()
        value: bytes | None = bytes(range(256)) + f"{tag}{i}".encode()
        if i % 7 == 3 and key is not None:
            value = None  # a tombstone (kafka-python refuses a record without key and value)
        elif i % 7 == 4:
            value = b""
        headers = tuple((f"h{j}", bytes([i, j]) * j) for j in range(i % 3))
        records.append((key, value, headers, first_timestamp + i))
    return records


def _produce_kafka_python(
    bootstrap: str, topic: str, records: Sequence[Record], **config: Any
) -> None:
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, **config)
    try:
        futures = [
            producer.send(topic, value=v, key=k, headers=list(h), partition=0, timestamp_ms=ts)
            for k, v, h, ts in records
        ]
        producer.flush(timeout=20)
        for future in futures:
            future.get(timeout=20)
    finally:
        producer.close(timeout=5)


def _produce_confluent(
    bootstrap: str, topic: str, records: Sequence[Record], **config: Any
) -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, **config})
    errors: list[Any] = []
    for k, v, h, ts in records:
        producer.produce(
            topic,
            value=v,
            key=k,
            headers=list(h),
            partition=0,
            timestamp=ts,
            on_delivery=lambda err, msg: errors.append(err) if err is not None else None,
        )
    assert producer.flush(20) == 0, "records still undelivered after 20 s"
    assert errors == []


def _read_kafka_python(
    bootstrap: str, topic: str, count: int, start: int = 0
) -> list[tuple[int, Record]]:
    consumer = kafka.KafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False, fetch_max_wait_ms=100
    )
    try:
        tp = kafka.TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, start)
        read: list[tuple[int, Record]] = []
        deadline = time.monotonic() + 20
        while len(read) < count and time.monotonic() < deadline:
            for message in consumer.poll(timeout_ms=500).get(tp, []):
                read.append(
                    (
                        message.offset,
                        (message.key, message.value, tuple(message.headers), message.timestamp),
                    )
                )
        return read
    finally:
        consumer.close()


def _confluent_consumer(bootstrap: str) -> confluent_kafka.Consumer:
    return confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "data-path-test",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 100,
        }
    )


def _read_confluent(
    bootstrap: str, topic: str, count: int, start: int = 0
) -> list[tuple[int, Record]]:
    consumer = _confluent_consumer(bootstrap)
    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, 0, start)])
        read: list[tuple[int, Record]] = []
        deadline = time.monotonic() + 20
        while len(read) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            read.append(
                (
                    _offset(message),
                    (
                        message.key(),
                        message.value(),
                        _headers(message),
                        message.timestamp()[1],
                    ),
                )
            )
        return read
    finally:
        consumer.close()


# confluent-kafka's OffsetSpec, its class methods untyped.
_OFFSET_SPEC: Any = confluent_kafka.admin.OffsetSpec


def _offset(message: confluent_kafka.Message) -> int:
    offset = message.offset()
    assert offset is not None
    return offset


def _headers(message: confluent_kafka.Message) -> tuple[tuple[str, bytes | None], ...]:
    raw = message.headers() or []
    assert isinstance(raw, list)
    headers = []
    for name, value in raw:
        assert not isinstance(value, str)
        headers.append((name, value))
    return tuple(headers)


def _has_read(records: Sequence[object], count: int) -> bool:
    return len(records) >= count


def _wait_for_end_offset(cluster: Cluster, topic: str, offset: int) -> None:
    """Until the partition's high watermark reaches ``offset`` (read over gRPC)."""
    cluster.wait_for(
        lambda: cluster.fetch(cluster.leader(topic, 0), topic, 0, 0).high_watermark >= offset,
        20,
        f"{topic}'s high watermark at {offset}",
    )


def test_every_acks_and_both_clients_read_back_byte_identical(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = _cluster(cluster_factory, "mixed", brokers=3, replication_factor=3)
    bootstrap = cluster.kafka_bootstrap_servers
    written: list[Record] = []
    ts = _T0
    # One producer at a time, each finished (acks=0: its records visible) before the next, so
    # that the partition's order is the order of ``written``.
    for acks, extra in ((0, {}), (1, {"compression_type": "gzip"}), ("all", {})):
        records = _records(f"kp{acks}", 25, ts)
        ts += 1000
        _produce_kafka_python(bootstrap, "mixed", records, acks=acks, linger_ms=5, **extra)
        written += records
        _wait_for_end_offset(cluster, "mixed", len(written))
    for acks, extra in (
        (0, {}),
        (1, {"compression.type": "lz4"}),
        ("all", {"compression.type": "zstd"}),
    ):
        records = _records(f"ck{acks}", 25, ts)
        ts += 1000
        _produce_confluent(bootstrap, "mixed", records, acks=acks, **{"linger.ms": 5, **extra})
        written += records
        _wait_for_end_offset(cluster, "mixed", len(written))
    large = (b"large", bytes(range(256)) * 800, (("h", b"\x00" * 10),), ts)  # 200 KB
    _produce_confluent(bootstrap, "mixed", [large], acks="all")
    written.append(large)

    expected = list(enumerate(written))
    leader = cluster.leader("mixed", 0)
    records_bytes = "minikafka_kafka_fetch_records_bytes_total"
    sent_before = cluster.metric(leader, records_bytes, path="sendfile") or 0
    assert _read_kafka_python(bootstrap, "mixed", len(written)) == expected
    assert _read_confluent(bootstrap, "mixed", len(written)) == expected
    # On a PLAINTEXT listener the large record went from the segment file to each consumer's
    # socket by sendfile, not through the broker's memory.
    sent = (cluster.metric(leader, records_bytes, path="sendfile") or 0) - sent_before
    assert sent >= 2 * len(large[1])
    # From the middle: the fetch starts inside a batch and the clients skip what precedes it.
    assert _read_kafka_python(bootstrap, "mixed", 10, start=60)[:10] == expected[60:70]
    assert _read_confluent(bootstrap, "mixed", 10, start=60)[:10] == expected[60:70]


def test_idempotent_producer_and_consumers_through_a_leader_kill(
    cluster_factory: ClusterFactory,
) -> None:
    """The partition leader is SIGKILLed while librdkafka's idempotent producer writes and both
    clients' consumers read: every record is delivered, written once and in send order, and each
    consumer reads the whole log once, in order, across the leader change."""
    cluster = _cluster(
        cluster_factory,
        "events",
        brokers=3,
        replication_factor=3,
        overrides={"min.insync.replicas": "2"},
    )
    bootstrap = cluster.kafka_bootstrap_servers
    delivered: list[tuple[int, bytes]] = []
    failed: list[str] = []
    produced = [0]
    undelivered: list[int] = []
    stop = threading.Event()

    def on_delivery(err: Any, message: Any) -> None:
        if err is None:
            delivered.append((_offset(message), message.value() or b""))
        else:
            failed.append(str(err))

    def produce() -> None:
        producer = confluent_kafka.Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 2,
                "max.in.flight.requests.per.connection": 5,
                "message.timeout.ms": 60_000,
                "request.timeout.ms": 5_000,
                "retry.backoff.ms": 100,
                "reconnect.backoff.max.ms": 500,
                "topic.metadata.refresh.interval.ms": 1_000,
            }
        )
        while not stop.is_set():
            for _ in range(20):
                value = b"e%d" % produced[0]
                producer.produce("events", value=value, partition=0, on_delivery=on_delivery)
                produced[0] += 1
            producer.poll(0.01)
        undelivered.append(producer.flush(60))

    # What each consumer read, (offset, value), from offset 0 on.
    consumed: dict[str, list[tuple[int, bytes]]] = {"kafka-python": [], "confluent": []}
    reading = threading.Event()
    reading.set()

    def consume_kafka_python() -> None:
        consumer = kafka.KafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=None,
            fetch_max_wait_ms=100,
            request_timeout_ms=5_000,
            metadata_max_age_ms=1_000,
            reconnect_backoff_max_ms=500,
        )
        tp = kafka.TopicPartition("events", 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        while reading.is_set():
            for message in consumer.poll(timeout_ms=200).get(tp, []):
                consumed["kafka-python"].append((message.offset, message.value))
        consumer.close()

    def consume_confluent() -> None:
        consumer = _confluent_consumer(bootstrap)
        consumer.assign([confluent_kafka.TopicPartition("events", 0, 0)])
        while reading.is_set():
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                consumed["confluent"].append((_offset(message), message.value() or b""))
        consumer.close()

    threads = [
        threading.Thread(target=produce),
        threading.Thread(target=consume_kafka_python),
        threading.Thread(target=consume_confluent),
    ]
    for thread in threads:
        thread.start()
    try:
        cluster.wait_for(lambda: len(delivered) >= 500, 30, "500 deliveries")
        old_leader = cluster.leader("events", 0)
        cluster.kill(old_leader)
        count = len(delivered)
        cluster.wait_for(lambda: len(delivered) >= count + 500, 45, "deliveries after the kill")
        stop.set()
        threads[0].join(90)
        total = produced[0]
        for name, records in consumed.items():
            cluster.wait_for(partial(_has_read, records, total), 30, f"{name} to read {total}")
    finally:
        stop.set()
        reading.clear()
        for thread in threads:
            thread.join(90)
    assert cluster.leader("events", 0) not in (-1, old_leader)
    assert failed == [] and undelivered == [0]
    assert len(delivered) == total

    log = dict(delivered)
    assert sorted(log) == list(range(total)), "a delivered record is missing or written twice"
    values = [log[offset] for offset in range(total)]
    assert values == [b"e%d" % i for i in range(total)], "records out of send order"
    for name, records in consumed.items():
        assert records == [(offset, log[offset]) for offset in range(total)], name


def test_records_cross_between_grpc_and_kafka_clients(cluster_factory: ClusterFactory) -> None:
    cluster = _cluster(cluster_factory, "crossing")
    records = _records("grpc", 30, _T0)
    with minikafka.Producer(bootstrap_servers=cluster.bootstrap_servers, linger_ms=5) as producer:
        futures = [
            producer.send("crossing", v, key=k, partition=0, headers=list(h), timestamp_ms=ts)
            for k, v, h, ts in records
        ]
        producer.flush(timeout=20)
        for future in futures:
            future.result(timeout=10)
    expected = list(enumerate(records))
    assert _read_kafka_python(cluster.kafka_bootstrap_servers, "crossing", 30) == expected
    assert _read_confluent(cluster.kafka_bootstrap_servers, "crossing", 30) == expected

    more = _records("kafka", 30, _T0 + 1000)
    _produce_confluent(cluster.kafka_bootstrap_servers, "crossing", more, acks="all")
    with minikafka.Consumer(bootstrap_servers=cluster.bootstrap_servers) as consumer:
        tp = MiniTopicPartition("crossing", 0)
        consumer.assign([tp])
        consumer.seek(tp, 30)
        read: list[tuple[int, Record]] = []
        deadline = time.monotonic() + 20
        while len(read) < 30 and time.monotonic() < deadline:
            for r in consumer.poll(timeout_ms=500).get(tp, []):
                headers = tuple((name, value) for name, value in r.headers)
                read.append((r.offset, (r.key, r.value, headers, r.timestamp)))
    assert read == [(30 + i, record) for i, record in enumerate(more)]


def test_seek_by_timestamp_and_list_offsets(cluster_factory: ClusterFactory) -> None:
    cluster = _cluster(cluster_factory, "times")
    bootstrap = cluster.kafka_bootstrap_servers
    # Timestamps 1 s apart, except offset 6, the largest of all.
    stamps = [_T0 + 1000 * i for i in range(10)]
    stamps[6] = _T0 + 1_000_000
    _produce_confluent(
        bootstrap, "times", [(b"k", b"v%d" % i, (), ts) for i, ts in enumerate(stamps)], acks=1
    )

    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    try:
        tp = kafka.TopicPartition("times", 0)
        found = consumer.offsets_for_times({tp: _T0 + 2500})[tp]
        assert (found.offset, found.timestamp) == (3, _T0 + 3000)
        assert consumer.offsets_for_times({tp: _T0 + 2_000_000})[tp] is None
        assert consumer.beginning_offsets([tp]) == {tp: 0}
        assert consumer.end_offsets([tp]) == {tp: 10}
        consumer.assign([tp])
        consumer.seek(tp, found.offset)
        first = next(iter(consumer.poll(timeout_ms=5000).get(tp, [])), None)
        assert first is not None and first.value == b"v3"
    finally:
        consumer.close()

    consumer = _confluent_consumer(bootstrap)
    try:
        [found_tp] = consumer.offsets_for_times(
            [confluent_kafka.TopicPartition("times", 0, _T0 + 6500)], timeout=10
        )
        assert found_tp.offset == 6  # the first record at or after the time, not the nearest
        assert consumer.get_watermark_offsets(found_tp, timeout=10) == (0, 10)
        consumer.assign([found_tp])
        message = consumer.poll(10)
        assert message is not None and message.error() is None
        assert (message.offset(), message.value()) == (6, b"v6")
    finally:
        consumer.close()

    admin = AdminClient({"bootstrap.servers": bootstrap})
    tp_c = confluent_kafka.TopicPartition("times", 0)
    for spec, expected_offset in (
        (_OFFSET_SPEC.max_timestamp(), 6),
        (_OFFSET_SPEC.earliest(), 0),
        (_OFFSET_SPEC.latest(), 10),
        (_OFFSET_SPEC.for_timestamp(_T0 + 2500), 3),
        (_OFFSET_SPEC.for_timestamp(_T0 + 7000), 6),
    ):
        result = admin.list_offsets({tp_c: spec}, request_timeout=10)[tp_c].result()
        assert result.offset == expected_offset, spec


def test_delete_records_with_both_admin_clients(cluster_factory: ClusterFactory) -> None:
    cluster = _cluster(cluster_factory, "trimmed")
    bootstrap = cluster.kafka_bootstrap_servers
    _produce_kafka_python(bootstrap, "trimmed", _records("d", 20, _T0), acks=1)

    admin = AdminClient({"bootstrap.servers": bootstrap})
    tp_c = confluent_kafka.TopicPartition("trimmed", 0, 5)
    deleted = admin.delete_records([tp_c], request_timeout=10)[tp_c].result()
    assert deleted.low_watermark == 5

    kafka_admin = kafka.KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        tp = kafka.TopicPartition("trimmed", 0)
        result = kafka_admin.delete_records({tp: 8})
        assert result[tp]["low_watermark"] == 8
        with pytest.raises(kafka.errors.OffsetOutOfRangeError):
            kafka_admin.delete_records({tp: 21})  # beyond the high watermark
    finally:
        kafka_admin.close()

    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    try:
        assert consumer.beginning_offsets([tp]) == {tp: 8}
    finally:
        consumer.close()
    read = _read_confluent(bootstrap, "trimmed", 12, start=confluent_kafka.OFFSET_BEGINNING)
    assert [offset for offset, _ in read] == list(range(8, 20))


# --- raw frames: what no well-behaved client sends ----------------------------------------------


def test_bad_requests_get_kafkas_error_codes(cluster_factory: ClusterFactory) -> None:
    # gRPC replication: the Kafka listener is not the inter-broker one (test_control_fencing has
    # a Kafka inter-broker listener beside a Kafka client one).
    cluster = _cluster(cluster_factory, "raw", replication="grpc")
    leader = cluster.brokers[cluster.leader("raw", 0)]
    connection = RawKafka(leader.kafka_address)
    try:
        good = batch([b"a", b"b"])
        answer = connection.call(0, 8, produce_fields("raw", good))
        [partition] = answer.responses[0].partition_responses
        assert (partition.error_code, partition.base_offset) == (ErrorCode.NONE, 0)

        # Pipelined: three requests sent before any answer is read are appended and answered
        # in order; acks=0 gets no answer at all.
        sent = [connection.send(0, 8, produce_fields("raw", good)) for _ in range(2)]
        connection.send(0, 8, produce_fields("raw", good, acks=0))
        sent.append(connection.send(0, 8, produce_fields("raw", good)))
        offsets = [
            connection.receive(0, 8, correlation_id).responses[0].partition_responses[0].base_offset
            for correlation_id in sent
        ]
        assert offsets == [2, 4, 8]

        # One flipped bit in the last record's value: the CRC no longer matches.
        corrupt = bytearray(good)
        corrupt[-2] ^= 0x01
        answer = connection.call(0, 8, produce_fields("raw", bytes(corrupt)))
        [partition] = answer.responses[0].partition_responses
        assert partition.error_code == ErrorCode.CORRUPT_MESSAGE
        assert partition.base_offset == -1
        # The gRPC door answers the same bytes the same way.
        grpc_answer = pb_grpc.DataStub(cluster.channel(leader.broker_id)).Produce(
            pb.ProduceRequest(
                acks=-1,
                timeout_ms=5000,
                topic_data=[
                    pb.ProduceRequest.TopicProduceData(
                        name="raw",
                        partition_data=[
                            pb.ProduceRequest.PartitionProduceData(index=0, records=bytes(corrupt))
                        ],
                    )
                ],
            ),
            timeout=10,
        )
        assert (
            grpc_answer.responses[0].partition_responses[0].error_code == ErrorCode.CORRUPT_MESSAGE
        )

        # Transactional records from a producer that names no transactional id: refused as
        # Kafka refuses them (nothing could ever end their transaction).
        transactional = batch([b"t"], transactional_producer=(4242, 0))
        answer = connection.call(0, 8, produce_fields("raw", transactional))
        [partition] = answer.responses[0].partition_responses
        assert partition.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        answer = connection.call(
            22, 4, {"transactional_id": None, "transaction_timeout": datetime.timedelta(seconds=60)}
        )
        assert answer.error_code == ErrorCode.NONE and answer.producer_id >= 0
        assert answer.producer_epoch == 0

        fetch_module = __import__(load_request_schema(1, 11).__module__, fromlist=["FetchTopic"])
        topics = (
            fetch_module.FetchTopic(
                topic="raw",
                partitions=(
                    fetch_module.FetchPartition(
                        partition=0, fetch_offset=0, partition_max_bytes=1 << 20
                    ),
                ),
            ),
        )
        fetch_fields: dict[str, Any] = {
            "max_wait": datetime.timedelta(0),
            "min_bytes": 1,
            "topics": topics,
            "forgotten_topics_data": (),
        }
        # A full fetch: records, and the id of the session it opened (KIP-227).
        answer = connection.call(1, 11, {**fetch_fields, "session_id": 0, "session_epoch": 0})
        assert answer.error_code == ErrorCode.NONE and answer.session_id != 0
        [partition] = answer.responses[0].partitions
        assert (partition.error_code, partition.high_watermark) == (ErrorCode.NONE, 10)
        # The first batch as it was sent, but for the partitionLeaderEpoch the leader set (bytes
        # 12-15); the others follow it.
        assert partition.records[:12] == good[:12]
        assert partition.records[16 : len(good)] == good[16:]
        assert len(partition.records) == 5 * len(good)
        # An incremental fetch names a session this broker never created.
        answer = connection.call(1, 11, {**fetch_fields, "session_id": 7, "session_epoch": 1})
        assert answer.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
        # Replication is not served on a Kafka listener other than the inter-broker one.
        answer = connection.call(1, 11, {**fetch_fields, "replica_id": 1})
        [partition] = answer.responses[0].partitions
        assert partition.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        assert partition.records in (b"", None)
    finally:
        connection.close()


def test_keyless_records_on_a_compacted_topic_fail_alone(cluster_factory: ClusterFactory) -> None:
    cluster = _cluster(cluster_factory, "keyed", topic_configs={"cleanup.policy": "compact"})
    # librdkafka (KIP-467): the records named in record_errors fail with INVALID_RECORD, the
    # others of the batch with _INVALID_DIFFERENT_RECORD; without record_errors all with
    # INVALID_RECORD.
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": cluster.kafka_bootstrap_servers, "linger.ms": 500}
    )
    outcomes: dict[int, int] = {}

    def delivered(i: int) -> Callable[[Any, Any], None]:
        return lambda err, _msg: outcomes.__setitem__(i, err.code() if err else 0)

    for i, key in enumerate([b"k0", None, b"k2", None]):
        producer.produce(
            "keyed",
            value=f"v{i}".encode(),
            key=key,
            partition=0,
            on_delivery=delivered(i),
        )
    assert producer.flush(20) == 0
    assert outcomes == {
        0: confluent_kafka.KafkaError._INVALID_DIFFERENT_RECORD,
        1: confluent_kafka.KafkaError.INVALID_RECORD,
        2: confluent_kafka.KafkaError._INVALID_DIFFERENT_RECORD,
        3: confluent_kafka.KafkaError.INVALID_RECORD,
    }

    # On the wire: Produce v8 names each keyless record by its index in the batch.
    leader = cluster.brokers[cluster.leader("keyed", 0)]
    with RawKafka(leader.kafka_address) as raw:
        answer = raw.call(0, 8, produce_fields("keyed", batch([b"a", b"b"])))
    [partition] = answer.responses[0].partition_responses
    assert (partition.error_code, partition.base_offset) == (ErrorCode.INVALID_RECORD, -1)
    assert [e.batch_index for e in partition.record_errors] == [0, 1]
    assert partition.record_errors[0].batch_index_error_message == (
        "Compacted topic cannot accept message without key in topic partition keyed-0."
    )
    assert partition.error_message.startswith(
        "One or more records have been rejected due to 2 record errors in total"
    )
    assert cluster.fetch(leader.broker_id, "keyed", 0, 0).records == b""  # nothing appended
