"""Streaming exactly once across a restart, data loss, and the offline segment reader."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from minikafka.client.producer.producer import Producer
from minikafka.proto.common import TopicPartition
from minikafka.spark.segments import HIGH_WATERMARK_CHECKPOINT, read_checkpoint
from tests.integration.cluster import Cluster
from tests.spark.conftest import TopicFactory
from tests.spark.test_batch import produce, read

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def run_stream(
    spark: SparkSession,
    cluster: Cluster,
    topic: str,
    out: Path,
    checkpoint: Path,
    *,
    available_now: bool = False,
) -> int:
    """Run the query until it has read everything available; return its micro-batch count."""
    stream = (
        spark.readStream.format("minikafka")
        .option("bootstrap.servers", cluster.bootstrap_servers)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "10")
        .load()
        .selectExpr("partition", "offset", "CAST(value AS STRING) AS value")
    )
    writer = (
        stream.writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
    )
    if available_now:
        writer = writer.trigger(availableNow=True)
    query = writer.start()
    try:
        if available_now:
            query.awaitTermination(120)
        else:
            query.processAllAvailable()
        return sum(1 for p in query.recentProgress if p["numInputRows"] > 0)
    finally:
        query.stop()


def test_stream_reads_new_records_exactly_once_across_a_restart(
    spark: SparkSession, cluster: Cluster, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    topic = topic_factory(partitions=2)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    produce(cluster, topic, 30, partitions=2)

    batches = run_stream(spark, cluster, topic, out, checkpoint)
    assert batches >= 3  # maxOffsetsPerTrigger=10 over 30 records

    produce(cluster, topic, 20, partitions=2, start=30)
    with cluster.admin() as admin:
        admin.create_partitions({topic: 3})
        cluster.wait_for(
            lambda: len(admin.describe_topics([topic])[topic].partitions) == 3,
            what="the new partition in the brokers' metadata",
        )
    with Producer(cluster.bootstrap_servers) as producer:
        futures = [producer.send(topic, f"value-{i}".encode(), partition=2) for i in range(50, 55)]
        producer.flush()
        for future in futures:
            future.result(timeout=30)

    batches = run_stream(spark, cluster, topic, out, checkpoint, available_now=True)
    assert batches >= 3  # 25 new records, still at most 10 per micro-batch

    rows = spark.read.parquet(str(out)).collect()
    values = sorted(int(r.value.split("-")[1]) for r in rows)
    assert values == list(range(55))  # every record once: none lost, none read twice
    assert {r.partition for r in rows} == {0, 1, 2}


def test_records_deleted_before_they_are_read_fail_or_are_skipped(
    spark: SparkSession, cluster: Cluster, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(partitions=1)
    produce(cluster, topic, 20, partitions=1)
    with cluster.admin() as admin:
        admin.delete_records({TopicPartition(topic, 0): 10})
    from_zero = json.dumps({topic: {"0": 0}})

    with pytest.raises(Exception, match="failOnDataLoss"):
        read(spark, cluster, subscribe=topic, startingOffsets=from_zero).collect()
    rows = read(
        spark, cluster, subscribe=topic, startingOffsets=from_zero, failOnDataLoss="false"
    ).collect()
    assert sorted(r.offset for r in rows) == list(range(10, 20))


def test_offline_reader_returns_the_rows_of_the_live_reader(
    spark: SparkSession, cluster: Cluster, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(partitions=2)
    produce(cluster, topic, 200, partitions=2)
    log_dir = cluster.brokers[0].log_dir
    # the broker checkpoints high watermarks every 200 ms here
    cluster.wait_for(
        lambda: all(
            read_checkpoint(log_dir / HIGH_WATERMARK_CHECKPOINT).get((topic, p)) == 100
            for p in range(2)
        ),
        what="high watermarks checkpointed",
    )
    columns = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    live = read(spark, cluster, subscribe=topic).select(*columns).collect()
    offline = (
        spark.read.format("minikafka-segments")
        .option("path", str(log_dir))
        .option("subscribe", topic)
        .load()
        .select(*columns)
        .collect()
    )
    assert len(live) == 200
    assert sorted(map(tuple, offline)) == sorted(map(tuple, live))


def test_offline_reader_of_a_dir_without_segments_reads_zero_rows(
    spark: SparkSession, tmp_path: Path
) -> None:
    (tmp_path / "orders-0").mkdir()
    empty = spark.read.format("minikafka-segments").option("path", str(tmp_path)).load()
    assert empty.count() == 0


def test_offline_reader_of_a_topic_not_in_the_log_dirs_fails_as_the_live_reader(
    spark: SparkSession, tmp_path: Path
) -> None:
    # The live reader fails with UNKNOWN_TOPIC_OR_PARTITION for a topic the cluster lacks; the
    # offline one did return no rows, silently, for one the log dirs lack.
    from pyspark.errors import PySparkException

    (tmp_path / "orders-0").mkdir()

    def offline(**options: str) -> int:
        reader = spark.read.format("minikafka-segments").option("path", str(tmp_path))
        return reader.options(**options).load().count()

    where = re.escape(f"in log dirs {tmp_path}.")
    with pytest.raises(
        PySparkException,
        match=rf"UNKNOWN_TOPIC_OR_PARTITION \(3\): Topic payments not found {where}",
    ):
        offline(subscribe="payments")
    with pytest.raises(PySparkException, match=r"Partition orders-3 not found in log dirs"):
        offline(assign=json.dumps({"orders": [0, 3]}))
    assert offline(subscribe="orders") == 0  # there, and empty
    assert offline(subscribePattern="pay.*") == 0  # a pattern may match nothing
