"""The rows every minikafka source returns: Spark's Kafka source schema, and how to build them.

    key binary, value binary, topic string, partition int, offset long, timestamp timestamp,
    timestampType int [, headers array<struct<key string, value binary>>]

``headers`` is there only with ``includeHeaders=true``, as in Spark's Kafka source. Readers build
Arrow record batches column by column (``RowBuffer``): Spark takes them without converting
Python objects row by row, which is most of a Python source's cost.

Pure values and functions; a RowBuffer belongs to the one task that fills it.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from minikafka.proto.records import Header

__all__ = ["HEADERS_TYPE", "RowBuffer", "arrow_schema", "kafka_schema"]

HEADERS_TYPE = ArrayType(
    StructType([StructField("key", StringType()), StructField("value", BinaryType())]),
    containsNull=False,
)

# Spark's array<struct<...>> with containsNull=false, as Arrow names and flags it
_ARROW_HEADERS = pa.list_(
    pa.field("element", pa.struct([("key", pa.string()), ("value", pa.binary())]), nullable=False)
)


def kafka_schema(include_headers: bool = False) -> StructType:
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        fields.append(StructField("headers", HEADERS_TYPE))
    return StructType(fields)


def arrow_schema(include_headers: bool = False) -> pa.Schema:
    fields = [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")),
        pa.field("timestampType", pa.int32()),
    ]
    if include_headers:
        fields.append(pa.field("headers", _ARROW_HEADERS))
    return pa.schema(fields)


class RowBuffer:
    """Columns of one topic-partition's rows, flushed as Arrow record batches.

    Not thread-safe: one reading task owns it.
    """

    def __init__(self, topic: str, partition: int, include_headers: bool) -> None:
        self.topic = topic
        self.partition = partition
        self.include_headers = include_headers
        self._schema = arrow_schema(include_headers)
        self._clear()

    def _clear(self) -> None:
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.timestamp_types: list[int] = []
        self.headers: list[list[dict[str, object]]] = []

    def __len__(self) -> int:
        return len(self.offsets)

    def append(
        self,
        offset: int,
        timestamp_ms: int,
        timestamp_type: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[Header] = (),
    ) -> None:
        self.keys.append(key)
        self.values.append(value)
        self.offsets.append(offset)
        self.timestamps.append(timestamp_ms)
        self.timestamp_types.append(timestamp_type)
        if self.include_headers:
            self.headers.append([{"key": k, "value": v} for k, v in headers])

    def flush(self) -> pa.RecordBatch:
        """The buffered rows as one record batch; the buffer is empty afterwards."""
        n = len(self.offsets)
        columns: list[pa.Array] = [
            pa.array(self.keys, pa.binary()),
            pa.array(self.values, pa.binary()),
            pa.array([self.topic] * n, pa.string()),
            pa.array([self.partition] * n, pa.int32()),
            pa.array(self.offsets, pa.int64()),
            pa.array(self.timestamps, pa.int64())
            .cast(pa.timestamp("ms", tz="UTC"))
            .cast(pa.timestamp("us", tz="UTC")),
            pa.array(self.timestamp_types, pa.int32()),
        ]
        if self.include_headers:
            columns.append(pa.array(self.headers, _ARROW_HEADERS))
        batch = pa.RecordBatch.from_arrays(columns, schema=self._schema)
        self._clear()
        return batch
