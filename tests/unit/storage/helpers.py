"""Builders shared by the storage tests: batches, a settable clock, log factories."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

from minikafka.broker.storage.config import LogConfig
from minikafka.broker.storage.log import Log
from minikafka.broker.storage.segment import FileRecords
from minikafka.proto.records import decode_records, encode_batch, iter_batch_headers

T0 = 1_700_000_000_000  # a realistic record timestamp (ms)


class Clock:
    """A wall clock the test moves by hand."""

    def __init__(self, now_ms: int = T0) -> None:
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms

    def advance(self, ms: int) -> None:
        self.now_ms += ms


def batch(
    records: int = 1,
    *,
    timestamp: int = T0,
    value_size: int = 10,
    base_offset: int = 0,
    epoch: int = -1,
    tag: int = 0,
    timestamps: list[int] | None = None,
) -> bytes:
    """One RecordBatch v2 of ``records`` records; timestamps increase by 1 ms from
    ``timestamp`` unless given one by one; ``tag`` varies the payload."""
    stamps = timestamps if timestamps is not None else [timestamp + i for i in range(records)]
    return encode_batch(
        [
            (ts, f"k{tag}-{i}".encode(), bytes([(tag + i) % 256]) * value_size, ())
            for i, ts in enumerate(stamps)
        ],
        base_offset=base_offset,
        partition_leader_epoch=epoch,
    )


InMemory = TypeVar("InMemory", bound=bytes | memoryview)


def memory_records(records: InMemory | FileRecords) -> InMemory:
    """The records of a read that did not ask for ``file_records``: only the Kafka door's
    sendfile path asks, so a ``FileRecords`` here means a read left its batches in the file."""
    assert not isinstance(records, FileRecords), f"asked for bytes, read {records!r}"
    return records


def offsets_of(data: bytes) -> list[int]:
    return [record.offset for record in decode_records(data)]


def batch_bases(data: bytes) -> list[int]:
    return [header.base_offset for _, header in iter_batch_headers(data)]


def read_all(log: Log, start: int | None = None) -> bytes:
    """Every byte a reader can fetch from ``start`` (default: log start) to the LEO."""
    out = []
    offset = log.log_start_offset if start is None else start
    while offset < log.log_end_offset:
        records = memory_records(log.read(offset, 1 << 20).records)
        assert records, f"no data at offset {offset} below LEO {log.log_end_offset}"
        out.append(records)
        headers = [h for _, h in iter_batch_headers(records)]
        offset = headers[-1].next_offset
    return b"".join(out)


def small_config(**overrides: Any) -> LogConfig:
    """Small segments and a dense index, so a few batches exercise rolls and lookups."""
    return dataclasses.replace(LogConfig(segment_bytes=1024, index_interval_bytes=64), **overrides)


def segment_files(directory: Path, suffix: str = ".log") -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.name.endswith(suffix))


def headers_in(data: bytes) -> Iterator[tuple[int, int, int]]:
    """(position, base offset, next offset) of each batch in ``data``."""
    for position, header in iter_batch_headers(data):
        yield position, header.base_offset, header.next_offset
