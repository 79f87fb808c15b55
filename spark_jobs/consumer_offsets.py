"""Decoding ``__consumer_offsets`` records: Kafka's OffsetCommitKey / OffsetCommitValue.

Big-endian; ``string`` = int16 length + UTF-8 (-1 = null)::

    key   version int16 (0 or 1 = an offset commit; 2 = group metadata, skipped)
          group string, topic string, partition int32
    value version int16, then by version
          0: offset int64, metadata string, commit_timestamp int64
          1: offset int64, metadata string, commit_timestamp int64, expire_timestamp int64
          2: offset int64, metadata string, commit_timestamp int64
          3: offset int64, leader_epoch int32, metadata string, commit_timestamp int64
    a null value is a tombstone: the group's offset for that partition was deleted

``offset_commits`` is the ``mapInArrow`` function that turns rows of the minikafka source
(key, value, timestamp) into rows of ``COMMIT_SCHEMA``. Written here from the format (the
broker's encoder lives in broker/, which spark_jobs does not import). Pure functions.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import NamedTuple

import pyarrow as pa

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


def _string(buf: bytes, pos: int) -> tuple[str | None, int]:
    (length,) = struct.unpack_from(">h", buf, pos)
    pos += 2
    if length < 0:
        return None, pos
    return buf[pos : pos + length].decode(), pos + length


def decode_commit(key: bytes, value: bytes | None) -> OffsetCommit | None:
    """The offset commit a record holds; None for group-metadata records."""
    (key_version,) = struct.unpack_from(">h", key, 0)
    if key_version not in (0, 1):
        return None
    group, pos = _string(key, 2)
    topic, pos = _string(key, pos)
    (partition,) = struct.unpack_from(">i", key, pos)
    if group is None or topic is None:
        raise ValueError("an offset commit key with a null group or topic")
    if value is None:
        return OffsetCommit(group, topic, partition, None, None)
    (value_version,) = struct.unpack_from(">h", value, 0)
    (offset,) = struct.unpack_from(">q", value, 2)
    pos = 10
    if value_version >= 3:
        pos += 4  # leader_epoch
    _, pos = _string(value, pos)  # metadata
    (commit_timestamp,) = struct.unpack_from(">q", value, pos)
    return OffsetCommit(group, topic, partition, offset, commit_timestamp)


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
