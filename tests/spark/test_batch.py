"""Batch reads through the brokers: counts, offset ranges, headers, minPartitions, the sink."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from minikafka.client.consumer.consumer import Consumer
from minikafka.client.producer.producer import Producer
from minikafka.proto.common import TopicPartition
from minikafka.spark import topic_stats
from tests.integration.cluster import Cluster
from tests.spark.conftest import TopicFactory

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = pytest.mark.spark


def produce(cluster: Cluster, topic: str, n: int, *, partitions: int, start: int = 0) -> None:
    with Producer(cluster.bootstrap_servers, linger_ms=5) as producer:
        futures = [
            producer.send(
                topic,
                f"value-{i}".encode(),
                key=f"key-{i % 7}".encode(),
                partition=i % partitions,
                headers=[("h", f"{i}".encode())],
            )
            for i in range(start, start + n)
        ]
        producer.flush()
        for future in futures:
            future.result(timeout=30)


def read(spark: SparkSession, cluster: Cluster, **options: str) -> DataFrame:
    reader = spark.read.format("minikafka").option("bootstrap.servers", cluster.bootstrap_servers)
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()


def test_batch_read_returns_every_produced_record_once(
    spark: SparkSession, cluster: Cluster, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(partitions=3)
    produce(cluster, topic, 300, partitions=3)

    df = read(spark, cluster, subscribe=topic, includeHeaders="true", minPartitions="5")
    assert df.columns == [
        "key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers",
    ]  # fmt: skip
    assert df.rdd.getNumPartitions() >= 5
    rows = df.collect()
    assert len(rows) == 300
    values = sorted(int(bytes(r.value).decode().split("-")[1]) for r in rows)
    assert values == list(range(300))
    for r in rows:
        i = int(bytes(r.value).decode().split("-")[1])
        assert r.partition == i % 3
        assert bytes(r.key) == f"key-{i % 7}".encode()
        assert r.topic == topic
        assert r.timestampType == 0
        assert [(h.key, bytes(h.value)) for h in r.headers] == [("h", str(i).encode())]
    per_partition = {p: sorted(r.offset for r in rows if r.partition == p) for p in range(3)}
    assert per_partition == {p: list(range(100)) for p in range(3)}


def test_offsets_json_assign_and_pattern(
    spark: SparkSession, cluster: Cluster, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(partitions=2)
    produce(cluster, topic, 40, partitions=2)  # 20 per partition

    ranged = read(
        spark,
        cluster,
        assign=json.dumps({topic: [0, 1]}),
        startingOffsets=json.dumps({topic: {"0": 5, "1": -2}}),
        endingOffsets=json.dumps({topic: {"0": 15, "1": -1}}),
    )
    counts = {r.partition: r["count"] for r in ranged.groupBy("partition").count().collect()}
    assert counts == {0: 10, 1: 20}

    assert read(spark, cluster, subscribePattern=topic[:6] + ".*").count() >= 40

    # startingTimestamp: from the first offset whose timestamp is at least that (ListOffsets)
    everything = read(spark, cluster, subscribe=topic).select("partition", "offset", "timestamp")
    rows = everything.collect()
    middle = sorted(r.timestamp for r in rows)[len(rows) // 2]
    middle_ms = int(middle.timestamp() * 1000)  # collect() gives naive local times
    expected = {}
    for p in (0, 1):
        first = min(r.offset for r in rows if r.partition == p and r.timestamp >= middle)
        expected[p] = sorted(r.offset for r in rows if r.partition == p and r.offset >= first)
    since = read(spark, cluster, subscribe=topic, startingTimestamp=str(middle_ms)).collect()
    assert {p: sorted(r.offset for r in since if r.partition == p) for p in (0, 1)} == expected


def test_sink_records_are_readable_by_the_consumer(
    spark: SparkSession, cluster: Cluster, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(partitions=2)
    df = spark.createDataFrame(
        [(f"k{i}".encode(), f"v{i}", i % 2, [("n", str(i).encode())]) for i in range(50)],
        "key binary, value string, partition int, headers array<struct<key string, value binary>>",
    )
    df.write.format("minikafka").option("bootstrap.servers", cluster.bootstrap_servers).option(
        "topic", topic
    ).mode("append").save()

    with Consumer(
        bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset="earliest"
    ) as consumer:
        consumer.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
        seen = []
        for _ in range(50):
            for records in consumer.poll(500).values():
                seen.extend(records)
            if len(seen) >= 50:
                break
    assert sorted((r.key, r.value, r.partition, list(r.headers)) for r in seen) == sorted(
        (f"k{i}".encode(), f"v{i}".encode(), i % 2, [("n", str(i).encode())]) for i in range(50)
    )


def test_an_empty_topic_reads_as_zero_rows(
    spark: SparkSession, cluster: Cluster, topic_factory: TopicFactory
) -> None:
    # Spark hands read() InputPartition(None) when partitions() planned no task
    topic = topic_factory(partitions=2)
    assert read(spark, cluster, subscribe=topic).count() == 0
    assert read(spark, cluster, subscribePattern=f"{topic}-nothing-matches").count() == 0
    stats = topic_stats.compute(topic_stats.load(spark, cluster.bootstrap_servers, topic))
    assert stats.total_records() == 0
    assert "Total records: 0" in topic_stats.report(stats, topic)


def test_a_missing_topic_is_unknown_topic_or_partition(
    spark: SparkSession, cluster: Cluster, topic_factory: TopicFactory
) -> None:
    # Spark's Kafka source fails as Kafka's Admin.describeTopics does for a missing topic
    from pyspark.errors import PySparkException

    unknown = r"UNKNOWN_TOPIC_OR_PARTITION \(3\): Topic no-such-topic not found"
    with pytest.raises(PySparkException, match=unknown):
        read(spark, cluster, subscribe="no-such-topic").count()
    topic = topic_factory(partitions=1)
    with pytest.raises(PySparkException, match=r"UNKNOWN_TOPIC_OR_PARTITION \(3\): Partition"):
        read(spark, cluster, assign=json.dumps({topic: [0, 3]})).count()
    stream = (
        spark.readStream.format("minikafka")
        .option("bootstrap.servers", cluster.bootstrap_servers)
        .option("subscribe", "no-such-topic")
        .load()
        .writeStream.format("noop")
        .start()
    )
    try:
        with pytest.raises(PySparkException, match=unknown):
            stream.processAllAvailable()
    finally:
        stream.stop()


def test_sink_refuses_overwrite_as_sparks_kafka_sink(
    spark: SparkSession, cluster: Cluster, topic_factory: TopicFactory
) -> None:
    # a topic cannot be replaced: "overwrite" appending silently would surprise
    from pyspark.errors import PySparkException

    topic = topic_factory(partitions=1)
    df = spark.createDataFrame([("k", "v")], "key string, value string")
    writer = df.write.format("minikafka").option("bootstrap.servers", cluster.bootstrap_servers)
    with pytest.raises(PySparkException, match="Save mode Overwrite not allowed"):
        writer.option("topic", topic).mode("overwrite").save()
    with Consumer(bootstrap_servers=cluster.bootstrap_servers) as consumer:
        tp = TopicPartition(topic, 0)
        assert consumer.end_offsets([tp]) == {tp: 0}


def test_read_committed_skips_aborted_transactions(
    spark: SparkSession, cluster: Cluster, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(partitions=1)
    with Producer(cluster.bootstrap_servers, transactional_id=f"spark-{topic}") as producer:
        producer.init_transactions()
        for outcome in ("committed", "aborted", "committed-again"):
            producer.begin_transaction()
            for i in range(3):
                producer.send(topic, f"{outcome}-{i}".encode(), partition=0)
            if outcome == "aborted":
                producer.flush()
                producer.abort_transaction()
            else:
                producer.commit_transaction()
    tp = TopicPartition(topic, 0)
    with (
        Consumer(bootstrap_servers=cluster.bootstrap_servers) as plain,
        Consumer(
            bootstrap_servers=cluster.bootstrap_servers, isolation_level="read_committed"
        ) as committed,
    ):
        cluster.wait_for(
            lambda: committed.end_offsets([tp]) == plain.end_offsets([tp]), 30, "markers"
        )

    def values(**options: str) -> list[str]:
        rows = read(spark, cluster, subscribe=topic, **options).collect()
        return sorted(bytes(r.value).decode() for r in rows)

    wanted = sorted(f"{o}-{i}" for o in ("committed", "committed-again") for i in range(3))
    assert values(**{"kafka.isolation.level": "read_committed"}) == wanted
    assert len(values()) == 9  # read_uncommitted, Spark's default: the aborted ones too
