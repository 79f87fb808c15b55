"""``__consumer_offsets`` records as Spark rows: the offset commits, for the consumer-lag job.

The record layout (Kafka's OffsetCommitKey / OffsetCommitValue, and the group-metadata records
skipped here) is proto.consumer_offsets'. ``offset_commits`` is the ``mapInArrow`` function that
turns rows of the minikafka source (key, value, timestamp) into rows of ``COMMIT_SCHEMA``; a
null value is a tombstone (the group's offset for that partition was deleted). Pure functions.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import pyarrow as pa

from minikafka.proto.consumer_offsets import OffsetKey, decode_key, decode_offset_value

__all__ = ["COMMIT_SCHEMA", "OffsetCommit", "decode_commit", "offset_commits"]

COMMIT_SCHEMA = (
    "group string, topic string, partition int, committed_offset long, "
    "commit_timestamp timestamp, tombstone boolean"
)

_ARROW_COMMIT = pa.schema(
    [
        ("group", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("committed_offset", pa.int64()),
        ("commit_timestamp", pa.timestamp("us", tz="UTC")),
        ("tombstone", pa.bool_()),
    ]
)


class OffsetCommit(NamedTuple):
    group: str
    topic: str
    partition: int
    committed_offset: int | None  # None for a tombstone
    commit_timestamp_ms: int | None


def decode_commit(key: bytes, value: bytes | None) -> OffsetCommit | None:
    """The offset commit a record holds; None for group-metadata records. A record that is
    neither raises proto.errors.CorruptRecordError."""
    decoded = decode_key(key)
    if not isinstance(decoded, OffsetKey):
        return None
    if value is None:
        return OffsetCommit(*decoded, None, None)
    committed = decode_offset_value(value)
    return OffsetCommit(*decoded, committed.offset, committed.commit_timestamp)


def offset_commits(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow: (key, value, timestamp) rows -> COMMIT_SCHEMA rows.

    A tombstone carries the record's timestamp as its commit time."""
    for batch in batches:
        keys = batch.column("key").to_pylist()
        values = batch.column("value").to_pylist()
        stamps = batch.column("timestamp").cast(pa.int64()).to_pylist()  # µs
        out: dict[str, list[object]] = {name: [] for name in _ARROW_COMMIT.names}
        for key, value, stamp in zip(keys, values, stamps, strict=True):
            if key is None:
                continue
            commit = decode_commit(key, value)
            if commit is None:
                continue
            out["group"].append(commit.group)
            out["topic"].append(commit.topic)
            out["partition"].append(commit.partition)
            out["committed_offset"].append(commit.committed_offset)
            ms = commit.commit_timestamp_ms
            out["commit_timestamp"].append(stamp if ms is None else ms * 1000)
            out["tombstone"].append(commit.committed_offset is None)
        yield pa.RecordBatch.from_pydict(out, schema=_ARROW_COMMIT)
