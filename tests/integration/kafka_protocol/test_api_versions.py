"""Kafka 3.9's versions on a real broker: ApiVersions answers Kafka 3.9's table, a Fetch names
topics by id from v13 (KIP-516), a deleted and re-created topic's old id answers
UNKNOWN_TOPIC_ID, and librdkafka (which fetches by topic id when the broker offers v13+) and
kafka-python produce and consume in a group on a 3-broker cluster with the new versions."""

from __future__ import annotations

import logging
import re
import uuid
from typing import Any

import confluent_kafka
import kafka
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from minikafka.proto.errors import ErrorCode
from tests.integration.cluster import Cluster
from tests.integration.conftest import ClusterFactory
from tests.integration.kafka_protocol.raw import RawKafka, batch, produce_fields
from tests.unit.server.kafka.test_api_versions import KAFKA_3_9

pytestmark = pytest.mark.integration

GROUP_OVERRIDES = {"offsets.topic.num.partitions": "3", "group.min.session.timeout.ms": "1000"}


def _topic_id(raw: RawKafka, topic: str) -> uuid.UUID | None:
    """The topic's id as Metadata v12 answers it; None while the topic is unknown."""
    answer = raw.call(3, 12, {"topics": [{"name": topic}], "allow_auto_topic_creation": False})
    (found,) = answer.topics
    if int(found.error_code) != ErrorCode.NONE or not found.partitions:
        return None
    if any(p.leader_id < 0 for p in found.partitions):
        return None
    return found.topic_id  # type: ignore[no-any-return]


def _one_broker_with_orders(cluster_factory: ClusterFactory) -> tuple[Cluster, str, AdminClient]:
    """A one-broker cluster with the topic ``orders`` (1 partition): the cluster, its Kafka
    address and a confluent-kafka admin client on it."""
    cluster = cluster_factory(n_brokers=1)
    address = cluster.brokers[0].kafka_address
    admin = AdminClient({"bootstrap.servers": address})
    admin.create_topics([NewTopic("orders", 1, 1)])["orders"].result(30)
    return cluster, address, admin


def _fetch_by_id(
    raw: RawKafka,
    version: int,
    topic_id: uuid.UUID | None,
    session: tuple[int, int] = (0, -1),
    forget: uuid.UUID | None = None,
) -> Any:
    """Fetch ``version`` (13+) of partition 0 of ``topic_id`` (None: no partition) from offset
    0, sessionless unless ``session`` (session id, epoch) says otherwise; ``forget``: a topic
    id whose partition 0 the session is to forget."""
    values: dict[str, Any] = {
        "max_wait": 0,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": session[0],
        "session_epoch": session[1],
        "topics": [
            {
                "topic_id": topic_id,
                "partitions": [
                    {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20},
                ],
            }
        ]
        if topic_id is not None
        else [],
        "forgotten_topics_data": []
        if forget is None
        else [{"topic_id": forget, "partitions": [0]}],
        "rack_id": "",
    }
    if version < 15:
        values["replica_id"] = -1
    return raw.call(1, version, values)


def test_api_versions_v4_answers_kafka_3_9s_table(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(n_brokers=1)

    with RawKafka(cluster.brokers[0].kafka_address) as raw:
        answer = raw.call(18, 4, {"client_software_name": "t", "client_software_version": "1"})

    assert int(answer.error_code) == ErrorCode.NONE
    assert {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys} == KAFKA_3_9


def test_a_recreated_topics_old_id_answers_unknown_topic_id(
    cluster_factory: ClusterFactory,
) -> None:
    cluster, address, admin = _one_broker_with_orders(cluster_factory)
    with RawKafka(address) as raw:
        old_id = cluster.wait_for(lambda: _topic_id(raw, "orders"), 30, "orders' topic id")
        produced = raw.call(0, 8, produce_fields("orders", batch([b"a", b"b"])))
        assert int(produced.responses[0].partition_responses[0].error_code) == ErrorCode.NONE
        for version in range(13, 18):
            (topic,) = _fetch_by_id(raw, version, old_id).responses
            assert topic.topic_id == old_id
            assert int(topic.partitions[0].error_code) == ErrorCode.NONE
            assert topic.partitions[0].high_watermark == 2

        admin.delete_topics(["orders"])["orders"].result(30)
        cluster.wait_for(lambda: _topic_id(raw, "orders") is None, 30, "orders deleted")
        admin.create_topics([NewTopic("orders", 1, 1)])["orders"].result(30)
        new_id = cluster.wait_for(lambda: _topic_id(raw, "orders"), 30, "the new orders' id")

        assert new_id != old_id
        for version in range(13, 18):
            (topic,) = _fetch_by_id(raw, version, old_id).responses
            assert topic.topic_id == old_id
            (partition,) = topic.partitions
            assert int(partition.error_code) == ErrorCode.UNKNOWN_TOPIC_ID
        (topic,) = _fetch_by_id(raw, 16, new_id).responses
        assert (int(topic.partitions[0].error_code), topic.partitions[0].high_watermark) == (0, 0)


def test_a_fetch_session_of_a_recreated_topic_answers_inconsistent_topic_id(
    cluster_factory: ClusterFactory,
) -> None:
    cluster, address, admin = _one_broker_with_orders(cluster_factory)
    with RawKafka(address) as raw:
        old_id = cluster.wait_for(lambda: _topic_id(raw, "orders"), 30, "orders' topic id")
        raw.call(0, 8, produce_fields("orders", batch([b"a", b"b"])))
        opened = _fetch_by_id(raw, 16, old_id, session=(0, 0))  # a full fetch opens a session
        assert opened.session_id != 0
        assert opened.responses[0].partitions[0].high_watermark == 2

        admin.delete_topics(["orders"])["orders"].result(30)
        cluster.wait_for(lambda: _topic_id(raw, "orders") is None, 30, "orders deleted")
        admin.create_topics([NewTopic("orders", 1, 1)])["orders"].result(30)
        new_id = cluster.wait_for(lambda: _topic_id(raw, "orders"), 30, "the new orders' id")
        assert new_id != old_id

        # An incremental fetch lists nothing: the session's partition, named by the old id,
        # is the new topic's partition now.
        answer = _fetch_by_id(raw, 16, None, session=(opened.session_id, 1))

        # Forgetting the old id, which the broker no longer knows, takes the partition out of
        # the session (Kafka's sessions are keyed by id): it is answered no more.
        forgotten = _fetch_by_id(raw, 16, None, session=(opened.session_id, 2), forget=old_id)
        produced = raw.call(0, 8, produce_fields("orders", batch([b"new"])))
        assert int(produced.responses[0].partition_responses[0].error_code) == ErrorCode.NONE
        after = _fetch_by_id(raw, 16, None, session=(opened.session_id, 3))

    assert int(answer.error_code) == ErrorCode.NONE
    (topic,) = answer.responses
    assert topic.topic_id == old_id
    (partition,) = topic.partitions
    assert int(partition.error_code) == ErrorCode.INCONSISTENT_TOPIC_ID
    assert not partition.records
    assert int(forgotten.error_code) == ErrorCode.NONE
    assert not forgotten.responses
    # Left empty, the session was closed (as Kafka's FetchManager closes an empty one): the
    # next incremental fetch finds none, where it found the partition still held before.
    assert (int(after.error_code), after.responses) == (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ())


def test_list_offsets_v8_earliest_local_is_the_log_start_offset(
    cluster_factory: ClusterFactory,
) -> None:
    cluster, address, _ = _one_broker_with_orders(cluster_factory)
    with RawKafka(address) as raw:
        cluster.wait_for(lambda: _topic_id(raw, "orders"), 30, "orders' leader")
        raw.call(0, 8, produce_fields("orders", batch([b"a", b"b", b"c"])))
        deleted = raw.call(
            21,
            2,
            {
                "topics": [{"name": "orders", "partitions": [{"partition_index": 0, "offset": 2}]}],
                "timeout": 10_000,
            },
        )
        assert int(deleted.topics[0].partitions[0].error_code) == ErrorCode.NONE

        def list_offset(timestamp: int) -> tuple[int, int, int]:
            answer = raw.call(
                2,
                8,
                {
                    "replica_id": -1,
                    "isolation_level": 0,
                    "topics": [
                        {
                            "name": "orders",
                            "partitions": [
                                {
                                    "partition_index": 0,
                                    "current_leader_epoch": -1,
                                    "timestamp": timestamp,
                                }
                            ],
                        }
                    ],
                },
            )
            found = answer.topics[0].partitions[0]
            return int(found.error_code), found.timestamp, found.offset

        # -4 (KIP-405): the first offset on local disk; without tiered storage, the log start.
        assert list_offset(-4) == (ErrorCode.NONE, -1, 2)
        assert list_offset(-2) == (ErrorCode.NONE, -1, 2)
        assert list_offset(-1) == (ErrorCode.NONE, -1, 3)


def _three_brokers(cluster_factory: ClusterFactory, topic: str) -> Cluster:
    cluster = cluster_factory(n_brokers=3, overrides=GROUP_OVERRIDES)
    admin = AdminClient({"bootstrap.servers": cluster.kafka_bootstrap_servers})
    admin.create_topics([NewTopic(topic, 3, 3)])[topic].result(30)
    return cluster


class _Lines(logging.Handler):
    """librdkafka's debug lines, as confluent-kafka hands them to a Python logger."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_confluent_kafka_fetches_by_topic_id_in_a_group(cluster_factory: ClusterFactory) -> None:
    cluster = _three_brokers(cluster_factory, "clicks")
    bootstrap = cluster.kafka_bootstrap_servers
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(30):
        producer.produce("clicks", key=f"k{i}".encode(), value=f"v{i}".encode())
    assert producer.flush(30) == 0

    lines = _Lines()
    logger = logging.getLogger(f"rdkafka-{uuid.uuid4().hex[:6]}")
    logger.addHandler(lines)
    logger.setLevel(logging.DEBUG)
    group = f"g-{uuid.uuid4().hex[:6]}"
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "debug": "protocol",
            "logger": logger,
        }
    )
    seen: set[bytes] = set()
    try:
        consumer.subscribe(["clicks"])
        deadline = 60
        while len(seen) < 30 and deadline > 0:
            message = consumer.poll(1)
            deadline -= 1
            if message is None or message.error() is not None:
                continue
            value = message.value()
            assert value is not None
            seen.add(value)
            consumer.commit(message=message, asynchronous=False)
        committed = consumer.committed(
            [confluent_kafka.TopicPartition("clicks", p) for p in range(3)], timeout=10
        )
    finally:
        consumer.close()

    assert seen == {f"v{i}".encode() for i in range(30)}
    assert sum(tp.offset for tp in committed) == 30
    # librdkafka names each request it sends with its version: "Sent FetchRequest (v16, ...)".
    fetch_versions = {
        int(m.group(1))
        for line in lines.lines
        for m in [re.search(r"\bFetchRequest \(v(\d+)", line)]
        if m
    }
    assert fetch_versions and min(fetch_versions) >= 13, fetch_versions


def test_kafka_python_produces_and_consumes_in_a_group(cluster_factory: ClusterFactory) -> None:
    cluster = _three_brokers(cluster_factory, "views")
    bootstrap = cluster.kafka_bootstrap_servers
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        for i in range(30):
            producer.send("views", key=f"k{i}".encode(), value=f"v{i}".encode())
        producer.flush(timeout=30)
    finally:
        producer.close(timeout=5)

    group = f"g-{uuid.uuid4().hex[:6]}"
    consumer = kafka.KafkaConsumer(
        "views",
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        fetch_max_wait_ms=100,
    )
    seen: set[bytes] = set()
    try:
        for _ in range(60):
            for records in consumer.poll(timeout_ms=1000).values():
                seen.update(r.value for r in records)
            if len(seen) == 30:
                break
        consumer.commit()
        committed = [consumer.committed(kafka.TopicPartition("views", p)) for p in range(3)]
    finally:
        consumer.close()

    assert seen == {f"v{i}".encode() for i in range(30)}
    assert sum(c or 0 for c in committed) == 30


def test_metadata_v10_and_v11_refuse_topic_ids(cluster_factory: ClusterFactory) -> None:
    """Only v12 may name a topic by id (or by a null name): Kafka's KafkaApis answers a v10 or
    v11 request that does with INVALID_REQUEST on every topic it asked, and creates nothing."""
    cluster, address, _ = _one_broker_with_orders(cluster_factory)
    with RawKafka(address) as raw:
        topic_id = cluster.wait_for(lambda: _topic_id(raw, "orders"), 30, "orders' topic id")
        for version in (10, 11):
            by_id = raw.call(
                3,
                version,
                {
                    "topics": [{"name": None, "topic_id": topic_id}],
                    "allow_auto_topic_creation": True,
                },
            )
            ((error, name, answered_id, partitions),) = [
                (int(t.error_code), t.name, t.topic_id, t.partitions) for t in by_id.topics
            ]
            assert (error, name, answered_id, partitions) == (
                ErrorCode.INVALID_REQUEST,
                "",
                topic_id,
                (),
            )
            assert not by_id.brokers
            both = raw.call(
                3,
                version,
                {
                    "topics": [{"name": "orders"}, {"name": "other", "topic_id": uuid.uuid4()}],
                    "allow_auto_topic_creation": True,
                },
            )
            assert [(t.name, int(t.error_code)) for t in both.topics] == [
                ("orders", ErrorCode.INVALID_REQUEST),
                ("other", ErrorCode.INVALID_REQUEST),
            ]
            # by name alone, as before
            by_name = raw.call(3, version, {"topics": [{"name": "orders"}]})
            assert [(t.name, int(t.error_code)) for t in by_name.topics] == [
                ("orders", ErrorCode.NONE)
            ]
            assert by_name.topics[0].topic_id == topic_id
        # "other" was never auto-created by the refused requests
        assert _topic_id(raw, "other") is None


def test_followers_fetch_by_topic_id_across_a_recreated_topic(
    cluster_factory: ClusterFactory,
) -> None:
    """Followers replicate over the Kafka listener at Fetch v17, naming topics by id. A topic
    deleted and re-created under the same name gets a new id: the followers' fetches by the
    old one are refused until their metadata names the new one, and then every replica holds
    the new topic's acknowledged records, byte for byte."""
    cluster = cluster_factory(n_brokers=3, overrides={"min.insync.replicas": "2"})
    admin = AdminClient({"bootstrap.servers": cluster.kafka_bootstrap_servers})

    def produce(count: int) -> None:
        producer = confluent_kafka.Producer(
            {"bootstrap.servers": cluster.kafka_bootstrap_servers, "acks": "all"}
        )
        for i in range(count):
            producer.produce("orders", value=f"v{i}".encode())
        assert producer.flush(30) == 0

    def replicas_hold(count: int) -> bool:
        offsets = {
            b: cluster.metric(b, "kafka_log_log_logendoffset", topic="orders", partition="0")
            for b in cluster.brokers
        }
        return set(offsets.values()) == {count} and len(cluster.isr("orders", 0)) == 3

    admin.create_topics([NewTopic("orders", 1, 3)])["orders"].result(30)
    produce(50)
    cluster.wait_for(lambda: replicas_hold(50), 30, "every replica at offset 50")
    with RawKafka(cluster.kafka_bootstrap_servers.split(",")[0]) as raw:
        old_id = _topic_id(raw, "orders")
        admin.delete_topics(["orders"])["orders"].result(30)
        cluster.wait_for(lambda: _topic_id(raw, "orders") is None, 30, "orders deleted")
        admin.create_topics([NewTopic("orders", 1, 3)])["orders"].result(30)
        new_id = cluster.wait_for(lambda: _topic_id(raw, "orders"), 30, "the new orders' id")
    assert new_id != old_id
    produce(20)
    cluster.wait_for(lambda: replicas_hold(20), 30, "every replica of the new topic at 20")
    leader = cluster.leader("orders", 0)
    for broker in cluster.brokers:
        cluster.stop(broker)
    states = {b: cluster.replica_state(b, "orders", 0) for b in cluster.brokers}
    assert {s.log_end_offset for s in states.values()} == {20}
    assert len({s.batches for s in states.values()}) == 1, f"replicas differ (leader {leader})"
