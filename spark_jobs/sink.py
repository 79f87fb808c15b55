"""The ``minikafka`` sink: batch and streaming writers that produce a DataFrame to topics.

    df.selectExpr("CAST(k AS BINARY) AS key", "CAST(v AS STRING) AS value")
      .write.format("minikafka").mode("append").option("bootstrap.servers", servers)
      .option("topic", "out").save()       # Spark refuses Python sources its default mode

Columns as Spark's Kafka sink takes them: ``value`` (string or binary, required), ``key``
(string or binary, optional), ``topic`` (string; the ``topic`` option wins over it),
``partition`` (int, optional: the producer's partitioner otherwise), ``headers``
(array<struct<key string, value binary>>, optional). Each task produces with its own
idempotent acks=all Producer and waits for every acknowledgement before its commit message
goes back, so a finished write (or micro-batch) is durable. Like Spark's Kafka sink this is
at-least-once: a retried task produces its rows again.

A writer object is pickled to the executors; each ``write`` call owns its Producer.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import BinaryType, IntegerType, StringType, StructType

from minikafka.client.producer.producer import Producer
from minikafka.spark.options import SourceOptionsError, bootstrap_servers, get_option

__all__ = ["SinkSettings", "StreamWriter", "Writer", "produce_batches", "sink_settings"]


@dataclass(frozen=True)
class SinkSettings:
    bootstrap_servers: str
    topic: str | None


@dataclass(frozen=True)
class ProducedMessage(WriterCommitMessage):
    records: int


def sink_settings(options: Mapping[str, str], schema: StructType) -> SinkSettings:
    """Check the DataFrame's columns as Spark's KafkaWriter does."""
    fields = {f.name: f.dataType for f in schema.fields}
    topic = get_option(options, "topic")
    if "value" not in fields:
        raise SourceOptionsError("the sink needs a 'value' column (string or binary)")
    for name in ("key", "value"):
        if name in fields and not isinstance(fields[name], StringType | BinaryType):
            raise SourceOptionsError(f"column {name!r} must be string or binary")
    if topic is None:
        if "topic" not in fields:
            raise SourceOptionsError("the sink needs a 'topic' column or the 'topic' option")
        if not isinstance(fields["topic"], StringType):
            raise SourceOptionsError("column 'topic' must be a string")
    if "partition" in fields and not isinstance(fields["partition"], IntegerType):
        raise SourceOptionsError("column 'partition' must be an int")
    return SinkSettings(bootstrap_servers(options), topic)


def _as_bytes(value: object) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    raise TypeError(f"key and value must be string or binary, not {type(value).__name__}")


def produce_batches(batches: Iterator[pa.RecordBatch], settings: SinkSettings) -> int:
    """Produce every row; return how many once all are acknowledged."""
    count = 0
    with Producer(
        settings.bootstrap_servers, acks="all", linger_ms=20, client_id="minikafka-spark-sink"
    ) as producer:
        futures = []
        for batch in batches:
            columns = {name: batch.column(name).to_pylist() for name in batch.schema.names}
            n = batch.num_rows
            values = columns["value"]
            keys = columns.get("key", [None] * n)
            topics = [settings.topic] * n if settings.topic else columns["topic"]
            partitions = columns.get("partition", [None] * n)
            headers = columns.get("headers", [None] * n)
            for i in range(n):
                topic = topics[i]
                if topic is None:
                    raise SourceOptionsError("a row has a null topic and no 'topic' option")
                futures.append(
                    producer.send(
                        topic,
                        _as_bytes(values[i]),
                        key=_as_bytes(keys[i]),
                        partition=partitions[i],
                        headers=[(h["key"], h["value"]) for h in headers[i]]
                        if headers[i]
                        else None,
                    )
                )
            count += n
        producer.flush()
        for future in futures:
            future.result(timeout=120)
    return count


class Writer(DataSourceArrowWriter):
    def __init__(self, settings: SinkSettings) -> None:
        self.settings = settings

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return ProducedMessage(produce_batches(iterator, self.settings))


class StreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, settings: SinkSettings) -> None:
        self.settings = settings

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return ProducedMessage(produce_batches(iterator, self.settings))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        pass  # every record was acknowledged before its task's message came back

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        pass  # produced records stay: at-least-once, as Spark's Kafka sink
