"""Every Kafka 3.9 topic config key, over Kafka's wire protocol with Kafka's own clients.

A topic created with every key at a non-default value reads back the same through
DescribeConfigs; keys of features this broker lacks are refused with the reason; the
message.timestamp.* keys are honoured by the leader (LogAppendTime stamps the batch,
before/after.max.ms refuse a record with INVALID_TIMESTAMP), and compression.type other
than producer makes the leader store every batch in the topic's codec.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import confluent_kafka
import confluent_kafka.admin as ck
import kafka
import kafka.errors
import pytest
from kafka.admin import ConfigResource

from minikafka.proto.records import Compression, iter_batch_headers
from tests.integration.cluster import Cluster
from tests.integration.conftest import ClusterFactory

pytestmark = pytest.mark.integration

# Every Kafka 3.9 topic key with a valid value other than its default, but the three whose only
# accepted value here is the default (tiered storage is missing).
NON_DEFAULT = {
    "cleanup.policy": "compact,delete",
    "compression.gzip.level": "5",
    "compression.lz4.level": "10",
    "compression.type": "zstd",
    "compression.zstd.level": "7",
    "delete.retention.ms": "3600000",
    "follower.replication.throttled.replicas": "*",
    "leader.replication.throttled.replicas": "0:0,1:0",
    "file.delete.delay.ms": "1000",
    "flush.messages": "10000",
    "flush.ms": "5000",
    "index.interval.bytes": "8192",
    "local.retention.bytes": "1000000",
    "local.retention.ms": "60000",
    "max.compaction.lag.ms": "86400000",
    "max.message.bytes": "2000000",
    "message.downconversion.enable": "false",
    "message.format.version": "2.8",
    "message.timestamp.after.max.ms": "3600000",
    "message.timestamp.before.max.ms": "86400000",
    "message.timestamp.difference.max.ms": "86400000",
    "message.timestamp.type": "LogAppendTime",
    "min.cleanable.dirty.ratio": "0.25",
    "min.compaction.lag.ms": "1000",
    "min.insync.replicas": "2",
    "preallocate": "true",
    "retention.bytes": "100000000",
    "retention.ms": "86400000",
    "segment.bytes": "10485760",
    "segment.index.bytes": "1048576",
    "segment.jitter.ms": "1000",
    "segment.ms": "3600000",
    "unclean.leader.election.enable": "true",
}
OFF_ONLY = {
    "remote.storage.enable": "false",
    "remote.log.copy.disable": "false",
    "remote.log.delete.on.disable": "false",
}


@pytest.fixture
def cluster(cluster_factory: ClusterFactory) -> Cluster:
    return cluster_factory(n_brokers=1)


@pytest.fixture
def kp_admin(cluster: Cluster) -> Iterator[kafka.KafkaAdminClient]:
    admin = kafka.KafkaAdminClient(
        bootstrap_servers=cluster.kafka_bootstrap_servers, request_timeout_ms=10_000
    )
    yield admin
    admin.close()


def _create(cluster: Cluster, topic: str, configs: dict[str, str]) -> None:
    admin = ck.AdminClient({"bootstrap.servers": cluster.kafka_bootstrap_servers})
    futures = admin.create_topics([ck.NewTopic(topic, 1, 1, config=configs)])
    futures[topic].result(timeout=20)


def test_every_key_at_a_non_default_value_round_trips_through_describe_configs(
    cluster: Cluster, kp_admin: kafka.KafkaAdminClient
) -> None:
    _create(cluster, "every-key", {**NON_DEFAULT, **OFF_ONLY})
    described = kp_admin.describe_configs(
        [ConfigResource("TOPIC", "every-key")], include_synonyms=True, config_filter="all"
    )["topic"]["every-key"]
    assert {k: described[k]["value"] for k in NON_DEFAULT} == NON_DEFAULT
    assert {described[k]["config_source"] for k in NON_DEFAULT} == {"DYNAMIC_TOPIC_CONFIG"}
    assert len(described) == len(NON_DEFAULT) + len(OFF_ONLY)  # Kafka 3.9's 36 keys
    # each new key with its broker synonym and Kafka's type
    jitter = described["segment.jitter.ms"]
    assert jitter["config_type"] == "LONG"
    assert [(s["name"], s["source"]) for s in jitter["synonyms"]] == [
        ("segment.jitter.ms", "DYNAMIC_TOPIC_CONFIG"),
        ("log.roll.jitter.ms", "DEFAULT_CONFIG"),
    ]
    assert described["message.timestamp.type"]["config_type"] == "STRING"
    assert described["preallocate"]["config_type"] == "BOOLEAN"
    assert described["compression.zstd.level"]["config_type"] == "INT"

    # a topic without overrides shows Kafka's defaults; the topic-only keys have no synonym
    _create(cluster, "defaults", {})
    defaults = kp_admin.describe_configs(
        [ConfigResource("TOPIC", "defaults")], include_synonyms=True, config_filter="all"
    )["topic"]["defaults"]
    assert defaults["message.timestamp.type"]["value"] == "CreateTime"
    assert defaults["file.delete.delay.ms"]["value"] == "60000"
    assert defaults["local.retention.ms"]["value"] == "-2"
    assert defaults["remote.storage.enable"]["value"] == "false"
    assert defaults["remote.storage.enable"]["config_source"] == "DEFAULT_CONFIG"
    assert defaults["remote.storage.enable"]["synonyms"] == []


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("remote.storage.enable", "true", "tiered storage"),
        ("leader.replication.throttled.replicas", "0:x", "must be the literal '*'"),
        ("message.timestamp.type", "WallClock", "String must be one of"),
    ],
)
def test_a_refused_key_gets_invalid_config_naming_it_and_the_reason(
    cluster: Cluster, key: str, value: str, reason: str
) -> None:
    with pytest.raises(confluent_kafka.KafkaException) as raised:
        _create(cluster, "refused", {key: value})
    error = raised.value.args[0]
    assert error.code() == confluent_kafka.KafkaError.INVALID_CONFIG
    assert key in error.str() and reason in error.str()
    assert "Unknown" not in error.str()


def _produce(
    cluster: Cluster, topic: str, timestamp_ms: int
) -> kafka.producer.future.RecordMetadata:
    producer = kafka.KafkaProducer(bootstrap_servers=cluster.kafka_bootstrap_servers, retries=0)
    try:
        return producer.send(topic, b"v", timestamp_ms=timestamp_ms).get(timeout=20)
    finally:
        producer.close()


def _consume(cluster: Cluster, topic: str) -> list[kafka.consumer.fetcher.ConsumerRecord]:
    consumer = kafka.KafkaConsumer(
        topic,
        bootstrap_servers=cluster.kafka_bootstrap_servers,
        auto_offset_reset="earliest",
        consumer_timeout_ms=10_000,
    )
    try:
        return list(consumer)
    finally:
        consumer.close()


def test_log_append_time_gives_records_the_leaders_clock(cluster: Cluster) -> None:
    _create(cluster, "append-time", {"message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    metadata = _produce(cluster, "append-time", timestamp_ms=1_000)
    after = int(time.time() * 1000)
    assert before <= metadata.timestamp <= after  # the produce response's log_append_time
    (record,) = _consume(cluster, "append-time")
    assert record.timestamp_type == 1  # LogAppendTime, the batch's attribute bit
    assert before <= record.timestamp <= after


def test_a_timestamp_out_of_range_gets_invalid_timestamp(cluster: Cluster) -> None:
    _create(
        cluster,
        "bounded",
        {"message.timestamp.before.max.ms": "60000", "message.timestamp.after.max.ms": "60000"},
    )
    now = int(time.time() * 1000)
    for timestamp in (now - 3_600_000, now + 3_600_000):
        with pytest.raises(kafka.errors.InvalidTimestampError):
            _produce(cluster, "bounded", timestamp_ms=timestamp)
    _produce(cluster, "bounded", timestamp_ms=now)
    (record,) = _consume(cluster, "bounded")
    assert record.timestamp == now and record.timestamp_type == 0
    # the deprecated difference key bounds both sides when before/after are left unset
    _create(cluster, "difference", {"message.timestamp.difference.max.ms": "60000"})
    with pytest.raises(kafka.errors.InvalidTimestampError):
        _produce(cluster, "difference", timestamp_ms=now - 3_600_000)


def _stored_codecs(cluster: Cluster, topic: str) -> list[Compression]:
    (broker,) = cluster.brokers.values()
    (segment,) = (broker.log_dir / f"{topic}-0").glob("*.log")
    return [header.compression for _, header in iter_batch_headers(segment.read_bytes())]


@pytest.mark.parametrize(
    ("producer_codec", "topic_codec", "stored"),
    [
        ("none", "zstd", Compression.ZSTD),
        ("lz4", "gzip", Compression.GZIP),
        ("gzip", "uncompressed", Compression.NONE),
        ("snappy", "producer", Compression.SNAPPY),
    ],
)
def test_the_leader_stores_batches_in_the_topics_codec(
    cluster: Cluster, producer_codec: str, topic_codec: str, stored: Compression
) -> None:
    topic = f"codec-{topic_codec}"
    _create(cluster, topic, {"compression.type": topic_codec, "compression.zstd.level": "9"})
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": cluster.kafka_bootstrap_servers,
            "compression.type": producer_codec,
            "linger.ms": 50,
        }
    )
    for i in range(20):
        producer.produce(topic, key=b"k%d" % i, value=b"value %d " % i * 20)
    assert producer.flush(20) == 0
    codecs = _stored_codecs(cluster, topic)
    assert codecs and set(codecs) == {stored}
    values = [record.value for record in _consume(cluster, topic)]
    assert values == [b"value %d " % i * 20 for i in range(20)]
