"""``minikafka-segments``: the Kafka schema read straight from a broker's log dirs, offline.

    spark.read.format("minikafka-segments")
         .option("path", "/data/broker-0/logs")          # log.dirs, comma-separated
         .option("subscribe", "orders")                   # or subscribePattern / assign; all
         .load()                                          # topics when none is given

Files (Kafka's layout): ``<log dir>/<topic>-<partition>/<base offset, 20 digits>.log``, each a
sequence of RecordBatch v2 batches (proto.records), plus the log dir's text checkpoints
``replication-offset-checkpoint`` (high watermarks) and ``log-start-offset-checkpoint``::

    0                      version
    2                      number of entries
    orders 0 1500          topic, partition, offset
    orders 1 1499

A topic named by ``subscribe`` (or a partition by ``assign``) that has no directory in the
log dirs is UNKNOWN_TOPIC_OR_PARTITION (``Topic t not found in log dirs /d.``), as the live
source fails for a topic the cluster does not have; a ``subscribePattern`` that matches
nothing reads no rows.

Rows are the records with log start offset <= offset < high watermark, so they are the rows a
consumer (and the live ``minikafka`` source) would read; ``readUncommitted=true`` reads to the
end of each log instead. The broker writes the high-watermark checkpoint every
replica.high.watermark.checkpoint.interval.ms, so a copy taken from a running broker may end a
little before its live high watermark. Directories being deleted (``*-delete``) or moved
(``*-future``) are skipped. Point it at one broker's log dirs: replicas on several brokers
would be read once each.

One Spark task per segment file. Pure file reading; nothing is shared between tasks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from minikafka.proto.errors import KafkaError
from minikafka.proto.log_files import (
    LOG_START_OFFSET_CHECKPOINT,
    LOG_SUFFIX,
    REPLICATION_OFFSET_CHECKPOINT,
    parse_log_file_name,
    parse_offset_checkpoint,
    parse_partition_dir,
)
from minikafka.proto.records import TimestampType, decode_batch, iter_batch_headers
from minikafka.spark.options import (
    SourceOptionsError,
    get_bool,
    get_option,
    require_partitions,
    require_topics,
)
from minikafka.spark.schema import RowBuffer, kafka_schema

__all__ = ["SegmentFile", "SegmentsDataSource", "list_segments", "read_checkpoint", "read_segment"]

HIGH_WATERMARK_CHECKPOINT = REPLICATION_OFFSET_CHECKPOINT
LOG_START_CHECKPOINT = LOG_START_OFFSET_CHECKPOINT

_ROWS_PER_BATCH = 50_000


@dataclass(frozen=True, order=True)
class SegmentFile:
    """One ``.log`` file and the offsets of it that are rows: [min_offset, max_offset)."""

    topic: str
    partition: int
    base_offset: int
    path: str
    min_offset: int
    max_offset: int | None  # None: to the end of the file


def read_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    """An offset checkpoint file (``0``, count, then ``topic partition offset`` lines), parsed as
    the broker parses it (proto.log_files); a missing file is empty, a malformed one ValueError."""
    if not path.exists():
        return {}
    return parse_offset_checkpoint(path.read_text(), source=str(path))


def list_segments(
    log_dirs: Sequence[str],
    wanted: SourceFilter,
    *,
    read_uncommitted: bool = False,
) -> list[SegmentFile]:
    segments: list[SegmentFile] = []
    found: set[tuple[str, int]] = set()
    for log_dir in log_dirs:
        root = Path(log_dir)
        if not root.is_dir():
            raise SourceOptionsError(f"log dir {root} does not exist")
        high_watermarks = read_checkpoint(root / HIGH_WATERMARK_CHECKPOINT)
        log_starts = read_checkpoint(root / LOG_START_CHECKPOINT)
        for child in sorted(root.iterdir()):
            parsed = parse_partition_dir(child.name) if child.is_dir() else None
            if parsed is None or not wanted.matches(*parsed):
                continue
            found.add(parsed)
            topic, partition = parsed
            high_watermark = None if read_uncommitted else high_watermarks.get(parsed)
            for file in sorted(child.iterdir()):
                file_name = parse_log_file_name(file.name)
                if file_name is None or file_name.suffix != LOG_SUFFIX:
                    continue
                segments.append(
                    SegmentFile(
                        topic,
                        partition,
                        file_name.offset,
                        str(file),
                        log_starts.get(parsed, 0),
                        high_watermark,
                    )
                )
    # As the live reader: a topic or partition named outright must be there; a pattern that
    # matches nothing reads no rows.
    where = f" in log dirs {','.join(log_dirs)}"
    require_topics([*wanted.topics, *(t for t, _ in wanted.assign)], {t for t, _ in found}, where)
    require_partitions(wanted.assign, found, where)
    return sorted(segments)


@dataclass(frozen=True)
class SourceFilter:
    """subscribe / subscribePattern / assign, each optional here (all topics by default)."""

    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assign: tuple[tuple[str, int], ...] = ()

    def matches(self, topic: str, partition: int) -> bool:
        if self.assign:
            return (topic, partition) in self.assign
        if self.topics:
            return topic in self.topics
        if self.pattern is not None:
            return re.fullmatch(self.pattern, topic) is not None
        return True


def _source_filter(options: dict[str, str]) -> SourceFilter:
    subscribe = get_option(options, "subscribe")
    pattern = get_option(options, "subscribePattern")
    assign = get_option(options, "assign")
    if sum(x is not None for x in (subscribe, pattern, assign)) > 1:
        raise SourceOptionsError("at most one of subscribe, subscribePattern or assign")
    if assign is not None:
        try:
            pairs = tuple((str(t), int(p)) for t, ps in json.loads(assign).items() for p in ps)
        except (ValueError, AttributeError, TypeError):
            raise SourceOptionsError(
                f'assign must be JSON like {{"t":[0]}}, not {assign!r}'
            ) from None
        return SourceFilter(assign=pairs)
    if subscribe is not None:
        return SourceFilter(topics=tuple(t.strip() for t in subscribe.split(",")))
    return SourceFilter(pattern=pattern)


def read_segment(segment: SegmentFile, include_headers: bool) -> Iterator[pa.RecordBatch]:
    """The rows of one segment file; CRCs are checked, control batches skipped, a torn
    trailing batch (a crash mid-append) ignored."""
    rows = RowBuffer(segment.topic, segment.partition, include_headers)
    low = segment.min_offset
    high = segment.max_offset
    data = Path(segment.path).read_bytes()
    for pos, header in iter_batch_headers(data):
        if high is not None and header.base_offset >= high:
            break
        if header.is_control or header.last_offset < low:
            continue
        ts_type = int(header.timestamp_type)
        if header.timestamp_type is TimestampType.NO_TIMESTAMP_TYPE:
            ts_type = int(TimestampType.CREATE_TIME)
        try:
            _, records = decode_batch(data, pos)
        except KafkaError as exc:
            # Spark shows the worker's exception: make its message say where the batch is.
            raise type(exc)(
                f"cannot read the batch at offset {header.base_offset} (position {pos}) of "
                f"{segment.path}: {exc.message}"
            ) from exc
        for r in records:
            if r.offset < low or (high is not None and r.offset >= high):
                continue
            rows.append(r.offset, r.timestamp, ts_type, r.key, r.value, r.headers)
        if len(rows) >= _ROWS_PER_BATCH:
            yield rows.flush()
    if len(rows):
        yield rows.flush()


class SegmentsDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "minikafka-segments"

    def schema(self) -> StructType:
        return kafka_schema(get_bool(self.options, "includeHeaders", False))

    def reader(self, schema: StructType) -> DataSourceReader:
        paths = get_option(self.options, "path")
        if not paths:
            raise SourceOptionsError("option path (the broker's log.dirs) is required")
        return SegmentsReader(
            [p.strip() for p in paths.split(",") if p.strip()],
            _source_filter(dict(self.options)),
            include_headers=get_bool(self.options, "includeHeaders", False),
            read_uncommitted=get_bool(self.options, "readUncommitted", False),
        )


class SegmentsReader(DataSourceReader):
    def __init__(
        self,
        log_dirs: list[str],
        wanted: SourceFilter,
        *,
        include_headers: bool,
        read_uncommitted: bool,
    ) -> None:
        self.log_dirs = log_dirs
        self.wanted = wanted
        self.include_headers = include_headers
        self.read_uncommitted = read_uncommitted

    def partitions(self) -> Sequence[InputPartition]:
        segments = list_segments(self.log_dirs, self.wanted, read_uncommitted=self.read_uncommitted)
        return [InputPartition(s) for s in segments]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        # None: Spark's one empty task (InputPartition(None)) when partitions() planned none
        segment: SegmentFile | None = None if partition is None else partition.value
        if segment is not None:
            yield from read_segment(segment, self.include_headers)
