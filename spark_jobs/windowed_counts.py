"""``python -m minikafka.spark.windowed_counts``: streaming tumbling-window counts per key.

    python -m minikafka.spark.windowed_counts --bootstrap-server 127.0.0.1:9092 --topic clicks \\
        --output-topic clicks-per-minute --checkpoint /tmp/wc-checkpoint \\
        [--window "1 minute"] [--watermark "10 minutes"] [--starting-offsets earliest|latest]
        [--max-offsets-per-trigger 100000] [--available-now] [--master ...]

Reads ``--topic`` with the minikafka streaming source, counts records per key in tumbling
windows of record time (late records up to ``--watermark`` still count), and produces, in
update mode, one record per changed (window, key) to ``--output-topic``: key = the input key,
value = JSON ``{"window_start": ms, "window_end": ms, "key": "...", "count": n}``. A later
record for the same window and key supersedes the earlier one (the output topic can be
compacted). Progress lives in ``--checkpoint``; a restarted job resumes where it stopped.
``--available-now`` (Trigger.AvailableNow) processes what is there when it starts, in
micro-batches of at most ``--max-offsets-per-trigger``, and exits. A new checkpoint starts at
``--starting-offsets``: by default the earliest offsets with ``--available-now`` (the records
already in the topic are counted) and the latest otherwise (only records produced from now
on, Spark's default for a stream). A missing topic is one line on stderr and exit status 1,
before Spark starts; the output topic is not created for the job (create it with the
``minikafka topics --create`` line the error gives). Ctrl-C stops the query and the job with
one line on stderr (exit status 0); the checkpoint keeps its progress.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

import minikafka.spark as spark_jobs
from minikafka.proto.errors import ErrorCode, KafkaError
from minikafka.spark._cli import await_query, base_parser, fail, require_topics, run_job

__all__ = ["counts", "main", "start"]


def counts(stream: DataFrame, window: str, watermark: str) -> DataFrame:
    """Sink rows (key, value) of per-key tumbling-window counts of ``stream``."""
    windowed = (
        stream.withWatermark("timestamp", watermark)
        .groupBy(F.window("timestamp", window), F.col("key"))
        .count()
    )
    payload = F.to_json(
        F.struct(
            (F.unix_micros(F.col("window.start")) / 1000).cast("long").alias("window_start"),
            (F.unix_micros(F.col("window.end")) / 1000).cast("long").alias("window_end"),
            F.col("key").cast("string").alias("key"),
            F.col("count"),
        ),
        {"ignoreNullFields": "false"},  # records without a key are counted as key null
    )
    return windowed.select(F.col("key"), payload.alias("value"))


def start(
    spark: SparkSession,
    bootstrap: str,
    topic: str,
    output_topic: str,
    checkpoint: str,
    *,
    window: str = "1 minute",
    watermark: str = "10 minutes",
    starting_offsets: str | None = None,
    max_offsets_per_trigger: int | None = None,
    available_now: bool = False,
) -> StreamingQuery:
    if starting_offsets is None:
        # "process what is there" means the records already in the topic too
        starting_offsets = "earliest" if available_now else "latest"
    reader = (
        spark.readStream.format(spark_jobs.FORMAT)
        .option("bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", starting_offsets)
    )
    if max_offsets_per_trigger is not None:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))

    def produce(batch: DataFrame, batch_id: int) -> None:
        batch.write.format(spark_jobs.FORMAT).option("bootstrap.servers", bootstrap).option(
            "topic", output_topic
        ).mode("append").save()

    # Python data source sinks take append mode only; update mode goes through foreachBatch
    # and the batch writer (at-least-once either way, as Spark's Kafka sink).
    writer = (
        counts(reader.load(), window, watermark)
        .writeStream.outputMode("update")
        .foreachBatch(produce)
        .option("checkpointLocation", checkpoint)
        .queryName(f"windowed_counts-{topic}")
    )
    if available_now:
        writer = writer.trigger(availableNow=True)
    return writer.start()


def main(argv: Sequence[str] | None = None) -> int:
    parser = base_parser("Streaming per-key tumbling-window counts, written to a topic.")
    parser.add_argument("--output-topic", required=True)
    parser.add_argument("--checkpoint", required=True, help="Spark checkpoint directory")
    parser.add_argument("--window", default="1 minute")
    parser.add_argument("--watermark", default="10 minutes")
    parser.add_argument(
        "--starting-offsets",
        help="earliest | latest | JSON, for a new checkpoint (default: earliest with "
        "--available-now, latest otherwise)",
    )
    parser.add_argument("--max-offsets-per-trigger", type=int)
    parser.add_argument(
        "--available-now", action="store_true", help="process what is there, then exit"
    )
    args = parser.parse_args(argv)
    try:
        require_topics(args.bootstrap_server, [args.topic])
    except KafkaError as exc:
        return fail(exc)
    try:
        require_topics(args.bootstrap_server, [args.output_topic])
    except KafkaError as exc:
        if exc.code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            return fail(exc)
        return fail(
            f"{exc} The job writes to --output-topic and does not create it; create it first: "
            f"minikafka topics --bootstrap-server {args.bootstrap_server} --create "
            f"--topic {args.output_topic} --config cleanup.policy=compact"
        )

    stop = threading.Event()  # Ctrl-C

    def job(spark: SparkSession) -> None:
        if stop.is_set():  # pressed while Spark started
            print("windowed_counts stopped (Ctrl-C) before it started", file=sys.stderr)
            return
        query = start(
            spark,
            args.bootstrap_server,
            args.topic,
            args.output_topic,
            args.checkpoint,
            window=args.window,
            watermark=args.watermark,
            starting_offsets=args.starting_offsets,
            max_offsets_per_trigger=args.max_offsets_per_trigger,
            available_now=args.available_now,
        )
        if await_query(spark, query, stop):
            print(
                f"windowed_counts stopped (Ctrl-C); {args.checkpoint} keeps its progress",
                file=sys.stderr,
            )

    return run_job("windowed_counts", args.master, job, stop=stop)


if __name__ == "__main__":
    sys.exit(main())
