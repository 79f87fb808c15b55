"""The pure parts of spark_jobs, without Spark or a cluster: options, planning, the
__consumer_offsets decoder (against the broker's encoder), the offline segment reader."""

from __future__ import annotations

import itertools
import struct
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

from minikafka.proto.common import OffsetAndMetadata, TopicPartition
from minikafka.proto.consumer_offsets import encode_offset_key, encode_offset_value
from minikafka.proto.errors import UnknownTopicOrPartitionError, UnsupportedCompressionTypeError
from minikafka.proto.records import Compression, encode_batch
from minikafka.spark.consumer_offsets import decode_commit
from minikafka.spark.options import SourceOptions, SourceOptionsError, parse_source_options
from minikafka.spark.planner import OffsetRange, rate_limit, resolve_offsets, split_ranges
from minikafka.spark.segments import SourceFilter, list_segments, read_checkpoint, read_segment
from tests.batches import poison_batch

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


# --- options ------------------------------------------------------------------------------


def test_options_follow_sparks_kafka_source() -> None:
    options = parse_source_options(
        {
            "kafka.bootstrap.servers": "h:1",
            "SUBSCRIBE": "a,b",
            "startingOffsets": '{"a":{"0":5,"1":-2}}',
            "maxOffsetsPerTrigger": "100",
            "failOnDataLoss": "false",
            "includeHeaders": "true",
        },
        streaming=True,
    )
    assert options.bootstrap_servers == "h:1"
    assert options.subscribe == ("a", "b")
    assert options.starting_offsets == {"a": {0: 5, 1: -2}}
    assert options.max_offsets_per_trigger == 100
    assert not options.fail_on_data_loss
    assert options.include_headers
    assert options.topic_matches("a") and not options.topic_matches("c")
    assert options.isolation_level == "read_uncommitted"


def test_kafka_isolation_level_is_sparks_option_name() -> None:
    options = parse_source_options(
        {"bootstrap.servers": "h:1", "subscribe": "a", "KAFKA.ISOLATION.LEVEL": "READ_COMMITTED"},
        streaming=False,
    )
    assert options.isolation_level == "read_committed"
    with pytest.raises(SourceOptionsError, match="read_uncommitted or read_committed"):
        parse_source_options(
            {"bootstrap.servers": "h:1", "subscribe": "a", "kafka.isolation.level": "dirty"},
            streaming=False,
        )


@pytest.mark.parametrize(
    ("options", "streaming", "message"),
    [
        ({"bootstrap.servers": "h:1"}, False, "exactly one of"),
        ({"bootstrap.servers": "h:1", "subscribe": "a", "assign": '{"a":[0]}'}, False, "exactly"),
        ({"subscribe": "a"}, False, "bootstrap.servers"),
        (
            {"bootstrap.servers": "h:1", "subscribe": "a", "startingOffsets": "latest"},
            False,
            "streaming",
        ),
        ({"bootstrap.servers": "h:1", "subscribe": "a", "endingOffsets": "latest"}, True, "batch"),
        ({"bootstrap.servers": "h:1", "assign": "[nope"}, False, "assign"),
        ({"bootstrap.servers": "h:1", "subscribe": "a", "minPartitions": "0"}, 0, "positive"),
        (
            {"bootstrap.servers": "h:1", "subscribe": "a", "failOnDataLoss": "maybe"},
            False,
            "true or false",
        ),
    ],
)
def test_bad_options_are_refused(options: dict[str, str], streaming: bool, message: str) -> None:
    with pytest.raises(SourceOptionsError, match=message):
        parse_source_options(options, streaming=streaming)


# --- planning -----------------------------------------------------------------------------


class FakeOffsets:
    def __init__(self, start: dict[TopicPartition, int], end: dict[TopicPartition, int]) -> None:
        self.start, self.end = start, end

    def topic_partitions(
        self, options: SourceOptions, *, require_existing: bool = False
    ) -> list[TopicPartition]:
        return sorted(self.end)

    def beginning_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: self.start[tp] for tp in tps}

    def end_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: self.end[tp] for tp in tps}

    def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, int | None]:
        return {tp: (ts if ts < self.end[tp] else None) for tp, ts in timestamps.items()}


def test_resolve_offsets_words_json_and_timestamps() -> None:
    view = FakeOffsets({T0: 3, T1: 0}, {T0: 10, T1: 20})
    assert resolve_offsets(view, [T0, T1], "earliest") == {T0: 3, T1: 0}
    assert resolve_offsets(view, [T0, T1], "latest") == {T0: 10, T1: 20}
    assert resolve_offsets(view, [T0, T1], {"t": {0: -1, 1: 7}}) == {T0: 10, T1: 7}
    with pytest.raises(SourceOptionsError, match="no offset for t-1"):
        resolve_offsets(view, [T0, T1], {"t": {0: -2}})
    by_time = SourceOptions("h:1", subscribe=("t",), starting_timestamp=15)
    with pytest.raises(SourceOptionsError, match="timestamp"):
        resolve_offsets(view, [T0, T1], "earliest", by_time, use_timestamps=True)
    from_zero = SourceOptions("h:1", starting_timestamp=0)
    assert resolve_offsets(view, [T0, T1], "latest", from_zero, use_timestamps=True) == {
        T0: 0,
        T1: 0,
    }
    latest = SourceOptions("h:1", starting_timestamp=15, timestamp_strategy="latest")
    assert resolve_offsets(view, [T0, T1], "earliest", latest, use_timestamps=True) == {
        T0: 10,
        T1: 15,
    }


def test_split_ranges_reaches_min_partitions_in_proportion() -> None:
    ranges = [OffsetRange("t", 0, 0, 90), OffsetRange("t", 1, 100, 110)]
    split = split_ranges(ranges, 10)
    assert len(split) >= 10
    assert sum(r.size for r in split) == 100
    assert [r for r in split if r.partition == 1] == [OffsetRange("t", 1, 100, 110)]
    covered = sorted((r.from_offset, r.until_offset) for r in split if r.partition == 0)
    assert covered[0][0] == 0 and covered[-1][1] == 90
    assert all(a[1] == b[0] for a, b in itertools.pairwise(covered))
    assert split_ranges(ranges, None) == ranges


def test_rate_limit_prorates_and_never_starves() -> None:
    start = {T0: 0, T1: 0}
    assert rate_limit(start, {T0: 5, T1: 5}, 100) == {T0: 5, T1: 5}
    limited = rate_limit(start, {T0: 990, T1: 10}, 100)
    assert limited == {T0: 99, T1: 1}  # T1's share is 1.0: it still moves
    tiny = rate_limit(start, {T0: 10_000, T1: 1}, 10)
    assert tiny[T1] == 1 and tiny[T0] <= 10


# --- __consumer_offsets -------------------------------------------------------------------


def test_commit_decoder_reads_the_brokers_records() -> None:
    key = encode_offset_key("billing", "orders", 3)
    value = encode_offset_value(
        OffsetAndMetadata(42, "meta", leader_epoch=7, commit_timestamp=1_700_000_000_123)
    )
    commit = decode_commit(key, value)
    assert commit is not None
    assert commit == ("billing", "orders", 3, 42, 1_700_000_000_123)
    assert decode_commit(key, None) == ("billing", "orders", 3, None, None)
    # value v1 (Kafka 2.x): offset, metadata, commit_timestamp, expire_timestamp
    v1 = struct.pack(">hqh", 1, 9, 0) + struct.pack(">qq", 55, 99)
    assert decode_commit(key, v1) == ("billing", "orders", 3, 9, 55)
    group_key = struct.pack(">h", 2) + struct.pack(">h", 1) + b"g"
    assert decode_commit(group_key, b"anything") is None


# --- offline segments ---------------------------------------------------------------------


def _write_log(directory: Path, base: int, count: int) -> None:
    records = [(1_700_000_000_000 + i, b"k%d" % i, b"v%d" % i, [("h", b"x")]) for i in range(count)]
    data = encode_batch(records[: count // 2], base_offset=base) + encode_batch(
        records[count // 2 :], base_offset=base + count // 2, compression=Compression.GZIP
    )
    (directory / f"{base:020d}.log").write_bytes(data + data[:30])  # a torn trailing batch


def test_segments_are_read_between_log_start_and_high_watermark(tmp_path: Path) -> None:
    part = tmp_path / "my-topic-0"
    part.mkdir()
    _write_log(part, 0, 10)
    _write_log(part, 10, 10)
    for leftover in ("00000000000000000010.log.deleted", "00000000000000000010.index", "x.log"):
        (part / leftover).write_bytes(b"")  # named as the broker names them: no segment
    (tmp_path / "my-topic-0.abc-delete").mkdir()
    (tmp_path / "replication-offset-checkpoint").write_text("0\n1\nmy-topic 0 15\n")
    (tmp_path / "log-start-offset-checkpoint").write_text("0\n1\nmy-topic 0 3\n")
    assert read_checkpoint(tmp_path / "replication-offset-checkpoint") == {("my-topic", 0): 15}

    segments = list_segments([str(tmp_path)], SourceFilter())
    assert [(s.topic, s.partition, s.base_offset) for s in segments] == [
        ("my-topic", 0, 0),
        ("my-topic", 0, 10),
    ]
    rows = [
        row
        for segment in segments
        for batch in read_segment(segment, include_headers=True)
        for row in batch.to_pylist()
    ]
    assert [r["offset"] for r in rows] == list(range(3, 15))
    first = rows[0]
    assert (first["key"], first["value"], first["topic"], first["partition"]) == (
        b"k3",
        b"v3",
        "my-topic",
        0,
    )
    assert first["headers"] == [{"key": "h", "value": b"x"}]
    assert int(first["timestamp"].timestamp() * 1000) == 1_700_000_000_003

    # a topic named that is not in the log dirs is an error, as the live reader's (issue 30)
    with pytest.raises(UnknownTopicOrPartitionError, match="Topic other not found in log dirs"):
        list_segments([str(tmp_path)], SourceFilter(topics=("other",)))
    unbounded = list_segments([str(tmp_path)], SourceFilter(), read_uncommitted=True)
    assert all(s.max_offset is None for s in unbounded)


# --- the stream reader's offsets ------------------------------------------------------------


def test_stream_offsets_admission_new_partitions_and_available_now() -> None:
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

    from minikafka.spark.reader import DataLossError
    from minikafka.spark.source import StreamReader

    fake = FakeOffsets({T0: 0, T1: 4}, {T0: 100, T1: 10})
    reader = StreamReader(SourceOptions("h:1", subscribe=("t",), max_offsets_per_trigger=50))
    reader._client = fake  # type: ignore[assignment]
    assert reader.getDefaultReadLimit() == ReadMaxRows(50)

    # t-1 is new (not in the start offset): it starts at its earliest offset, 4
    start = {"t": {"0": 0}}
    limited = reader.latestOffset(start, ReadMaxRows(50))
    assert limited == {"t": {"0": 47, "1": 6}}  # 50 prorated over backlogs of 100 and 6
    assert reader.latestOffset(start, ReadAllAvailable()) == {"t": {"0": 100, "1": 10}}
    planned = [p.value for p in reader.partitions(start, limited)]
    assert planned == [OffsetRange("t", 0, 0, 47), OffsetRange("t", 1, 4, 6)]

    reader.prepareForTriggerAvailableNow()
    fake.end = {T0: 500, T1: 10}  # arrives after the query started: not read
    assert reader.latestOffset({"t": {"0": 100, "1": 10}}, ReadAllAvailable()) == {
        "t": {"0": 100, "1": 10}
    }

    gone = StreamReader(SourceOptions("h:1", subscribe=("t",)))
    gone._client = FakeOffsets({T0: 0}, {T0: 5})  # type: ignore[assignment]
    with pytest.raises(DataLossError, match="failOnDataLoss"):
        gone.latestOffset({"t": {"0": 0, "1": 3}}, ReadAllAvailable())
    assert "_client" in gone.__getstate__() and gone.__getstate__()["_client"] is None


def test_a_segment_batch_that_does_not_decode_is_one_clear_error(tmp_path: Path) -> None:
    """Issue 16: a batch an older broker stored with codec 5 (CRC valid) made the offline
    reader die with ``ValueError: 5 is not a valid Compression``."""
    part = tmp_path / "my-topic-0"
    part.mkdir()
    good = encode_batch([(1_700_000_000_000, b"k", b"v", [])])
    (part / f"{0:020d}.log").write_bytes(good + poison_batch(5, base_offset=1))
    (segment,) = list_segments([str(tmp_path)], SourceFilter(), read_uncommitted=True)
    with pytest.raises(UnsupportedCompressionTypeError) as info:
        list(read_segment(segment, include_headers=False))
    message = str(info.value)
    assert "\n" not in message
    assert f"offset 1 (position {len(good)}) of {part / f'{0:020d}.log'}" in message
    assert "names compression codec 5" in message
