"""``python -m minikafka.spark.consumer_lag``: consumer-group lag now and over time.

    python -m minikafka.spark.consumer_lag --bootstrap-server 127.0.0.1:9092 \\
        [--group billing] [--topic orders] [--output /tmp/lag] [--master ...]

Reads every record of ``__consumer_offsets`` with the minikafka source and decodes Kafka's
offset-commit records (spark_jobs.consumer_offsets). For every commit, lag at that moment is
the partition's log end at the commit time (one more than the highest offset whose record
timestamp is at or before it, from a batch read of the topic) minus the committed offset:
that is the "over time" table. The "now" table takes each group's latest commit per
partition (a tombstone removes it) against the partition's end offset now (ListOffsets).
``--output DIR`` writes both as Parquet (DIR/now, DIR/over_time).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

import minikafka.spark as spark_jobs
from minikafka.proto.common import TopicPartition
from minikafka.spark._cli import base_parser, format_table, run_job
from minikafka.spark.consumer_offsets import COMMIT_SCHEMA, offset_commits
from minikafka.spark.planner import OffsetsClient

__all__ = ["ConsumerLag", "compute", "main"]

OFFSETS_TOPIC = "__consumer_offsets"


@dataclass(frozen=True)
class ConsumerLag:
    now: DataFrame  # group, topic, partition, committed_offset, log_end_offset, lag
    over_time: DataFrame  # group, topic, partition, commit_timestamp, committed_offset,
    #                       log_end_offset, lag


def read_topic(spark: SparkSession, bootstrap: str, topics: Sequence[str]) -> DataFrame:
    return (
        spark.read.format(spark_jobs.FORMAT)
        .option("bootstrap.servers", bootstrap)
        .option("subscribe", ",".join(topics))
        .option("startingOffsets", "earliest")
        .option("failOnDataLoss", "false")
        .load()
    )


def commits(spark: SparkSession, bootstrap: str) -> DataFrame:
    """Every offset commit (and tombstone) in ``__consumer_offsets``, in the COMMIT_SCHEMA."""
    raw = (
        spark.read.format(spark_jobs.FORMAT)
        .option("bootstrap.servers", bootstrap)
        # a pattern, not subscribe: before the first commit the topic does not exist (no rows)
        .option("subscribePattern", re.escape(OFFSETS_TOPIC))
        .option("startingOffsets", "earliest")
        .option("failOnDataLoss", "false")
        .load()
        .select("key", "value", "timestamp")
    )
    return raw.mapInArrow(offset_commits, COMMIT_SCHEMA)


def compute(
    spark: SparkSession, bootstrap: str, group: str | None = None, topic: str | None = None
) -> ConsumerLag:
    found = commits(spark, bootstrap)
    if group is not None:
        found = found.where(F.col("group") == group)
    if topic is not None:
        found = found.where(F.col("topic") == topic)
    found = found.cache()
    pairs = [
        TopicPartition(r.topic, r.partition)
        for r in found.select("topic", "partition").distinct().collect()
    ]
    with OffsetsClient(bootstrap) as client:
        existing = set(client.topic_partitions_of({tp.topic for tp in pairs}))
        ends = client.end_offsets([tp for tp in pairs if tp in existing])
    end_df = spark.createDataFrame(
        [(tp.topic, tp.partition, offset) for tp, offset in ends.items()],
        "topic string, partition int, log_end_offset long",
    )

    latest = Window.partitionBy("group", "topic", "partition").orderBy(
        F.desc("commit_timestamp"), F.desc("tombstone")
    )
    now = (
        found.withColumn("rank", F.row_number().over(latest))
        .where((F.col("rank") == 1) & ~F.col("tombstone"))
        .join(end_df, ["topic", "partition"], "left")
        .select(
            "group",
            "topic",
            "partition",
            "committed_offset",
            "log_end_offset",
            (F.col("log_end_offset") - F.col("committed_offset")).alias("lag"),
        )
        .orderBy("group", "topic", "partition")
    )

    topics = sorted({tp.topic for tp in ends})
    history = found.where(~F.col("tombstone"))
    if topics:
        records = read_topic(spark, bootstrap, topics).select(
            F.col("topic").alias("r_topic"),
            F.col("partition").alias("r_partition"),
            "offset",
            F.col("timestamp").alias("record_timestamp"),
        )
        # the log end at commit time: records appended up to then (an as-of join)
        joined = history.join(
            records,
            (history["topic"] == records["r_topic"])
            & (history["partition"] == records["r_partition"])
            & (records["record_timestamp"] <= history["commit_timestamp"]),
            "left",
        )
        over_time = joined.groupBy(
            "group", "topic", "partition", "commit_timestamp", "committed_offset"
        ).agg(F.coalesce(F.max("offset") + 1, F.lit(0)).alias("log_end_offset"))
    else:
        over_time = history.select(
            "group",
            "topic",
            "partition",
            "commit_timestamp",
            "committed_offset",
            F.lit(0).cast("long").alias("log_end_offset"),
        )
    over_time = over_time.withColumn(
        "lag", F.greatest(F.col("log_end_offset") - F.col("committed_offset"), F.lit(0))
    ).orderBy("group", "topic", "partition", "commit_timestamp")
    return ConsumerLag(now, over_time)


def main(argv: Sequence[str] | None = None) -> int:
    parser = base_parser(
        "Lag per consumer group, topic and partition, now and at every commit.",
        topic_required=False,
    )
    parser.add_argument("--group", help="only this group")
    parser.add_argument("--output", help="also write the tables as Parquet under this dir")
    args = parser.parse_args(argv)

    def job(spark: SparkSession) -> None:
        lag = compute(spark, args.bootstrap_server, args.group, args.topic)
        print(format_table("Consumer lag now", lag.now))
        print()
        print(format_table("Consumer lag over time (at each commit)", lag.over_time))
        if args.output:
            lag.now.write.mode("overwrite").parquet(f"{args.output.rstrip('/')}/now")
            lag.over_time.write.mode("overwrite").parquet(f"{args.output.rstrip('/')}/over_time")
            print(f"Parquet written under {args.output}")

    return run_job("consumer_lag", args.master, job)


if __name__ == "__main__":
    sys.exit(main())
