"""``python -m minikafka.spark.topic_stats``: what a topic holds, from a batch read of all of it.

    python -m minikafka.spark.topic_stats --bootstrap-server 127.0.0.1:9092 --topic orders \\
        [--top 10] [--output /tmp/orders-stats] [--master spark://host:7077]

Prints, as tables: records and bytes (key + value) per partition with their offset ranges;
records and bytes per minute of record timestamp; key cardinality and the top keys; and the
producer rate (records/s between the first and last timestamp). The summary line
``Total records: N`` is the number of records read. ``--output DIR`` also writes each table as
Parquet under DIR (per_partition, per_minute, top_keys, summary). An empty topic gives zero
rows; a missing one is one line on stderr (``Error: UNKNOWN_TOPIC_OR_PARTITION (3): Topic T
not found.``) and exit status 1.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

import minikafka.spark as spark_jobs
from minikafka.proto.errors import KafkaError
from minikafka.spark._cli import (
    base_parser,
    fail,
    format_table,
    require_topics,
    run_job,
)

__all__ = ["TopicStats", "compute", "main"]


@dataclass(frozen=True)
class TopicStats:
    per_partition: DataFrame  # partition, records, bytes, first_offset, last_offset
    per_minute: DataFrame  # minute, records, bytes
    top_keys: DataFrame  # key, records
    summary: DataFrame  # one row: records, bytes, distinct_keys, first/last timestamp, rate

    def summary_row(self) -> Row:
        row = self.summary.first()
        assert row is not None  # a global aggregate has exactly one row
        return row

    def total_records(self) -> int:
        return int(self.summary_row()["records"])


def compute(df: DataFrame, top: int = 10) -> TopicStats:
    """The statistics of ``df`` (rows in the Kafka schema); lazily, nothing runs yet."""
    sized = df.select(
        "partition",
        "offset",
        "timestamp",
        F.col("key"),
        (F.coalesce(F.length("key"), F.lit(0)) + F.coalesce(F.length("value"), F.lit(0))).alias(
            "size"
        ),
    ).cache()
    per_partition = (
        sized.groupBy("partition")
        .agg(
            F.count("*").alias("records"),
            F.sum("size").alias("bytes"),
            F.min("offset").alias("first_offset"),
            F.max("offset").alias("last_offset"),
        )
        .orderBy("partition")
    )
    per_minute = (
        sized.groupBy(F.date_trunc("minute", "timestamp").alias("minute"))
        .agg(F.count("*").alias("records"), F.sum("size").alias("bytes"))
        .orderBy("minute")
    )
    top_keys = (
        sized.where(F.col("key").isNotNull())
        .groupBy(F.col("key").cast("string").alias("key"))
        .agg(F.count("*").alias("records"))
        .orderBy(F.desc("records"), "key")
        .limit(top)
    )
    span = F.unix_micros(F.max("timestamp")) - F.unix_micros(F.min("timestamp"))
    summary = sized.agg(
        F.count("*").alias("records"),
        F.coalesce(F.sum("size"), F.lit(0)).alias("bytes"),
        F.countDistinct("key").alias("distinct_keys"),
        F.min("timestamp").alias("first_timestamp"),
        F.max("timestamp").alias("last_timestamp"),
        F.when(span > 0, F.round(F.count("*") / (span / 1e6), 1)).alias("records_per_sec"),
    )
    return TopicStats(per_partition, per_minute, top_keys, summary)


def report(stats: TopicStats, topic: str) -> str:
    summary = stats.summary_row()
    total = summary["records"]
    first, last = summary["first_timestamp"], summary["last_timestamp"]
    span = "" if first is None else f" ({first} .. {last})"
    return "\n\n".join(
        [
            format_table(f"Topic {topic}: per partition", stats.per_partition),
            format_table("Per minute (record timestamps, UTC)", stats.per_minute),
            format_table("Top keys", stats.top_keys),
            f"Total records: {total}\n"
            f"Total bytes (key + value): {summary['bytes']}\n"
            f"Distinct keys: {summary['distinct_keys']}\n"
            f"Producer rate: {summary['records_per_sec'] or 0} records/s{span}",
        ]
    )


def write(stats: TopicStats, output: str) -> None:
    for name in ("per_partition", "per_minute", "top_keys", "summary"):
        frame: DataFrame = getattr(stats, name)
        frame.write.mode("overwrite").parquet(f"{output.rstrip('/')}/{name}")


def load(spark: SparkSession, bootstrap: str, topic: str) -> DataFrame:
    return (
        spark.read.format(spark_jobs.FORMAT)
        .option("bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = base_parser("Records, bytes, keys and rates of a minikafka topic.")
    parser.add_argument("--top", type=int, default=10, help="how many top keys (default 10)")
    parser.add_argument("--output", help="also write the tables as Parquet under this dir")
    args = parser.parse_args(argv)
    try:
        require_topics(args.bootstrap_server, [args.topic])
    except KafkaError as exc:
        return fail(exc)

    def job(spark: SparkSession) -> None:
        stats = compute(load(spark, args.bootstrap_server, args.topic), args.top)
        print(report(stats, args.topic))
        if args.output:
            write(stats, args.output)
            print(f"Parquet written under {args.output}")

    return run_job("topic_stats", args.master, job)


if __name__ == "__main__":
    sys.exit(main())
