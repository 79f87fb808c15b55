"""Log: leader and follower appends, reads, timestamps, truncation, retention, flushing."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from kafka.record.memory_records import MemoryRecords
from structlog.testing import capture_logs

from minikafka.broker.storage.config import LogConfig
from minikafka.broker.storage.epoch_cache import EpochEntry
from minikafka.broker.storage.log import (
    EARLIEST_LOCAL_TIMESTAMP,
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    Log,
    UnexpectedAppendOffsetError,
    parse_topic_partition,
)
from minikafka.proto.errors import (
    ErrorCode,
    KafkaError,
    KafkaStorageError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
)
from minikafka.proto.records import iter_batch_headers
from tests.unit.storage.helpers import (
    T0,
    Clock,
    batch,
    batch_bases,
    memory_records,
    offsets_of,
    read_all,
    segment_files,
    small_config,
)


def open_log(tmp_path: Path, config: LogConfig | None = None, clock: Clock | None = None) -> Log:
    return Log(tmp_path / "orders-3", config or small_config(), time_ms=clock or Clock())


def leader_fill(log: Log, batches: int, records: int = 3, epoch: int = 0, ts: int = T0) -> None:
    for n in range(batches):
        log.append_as_leader(batch(records, timestamp=ts + 10 * n, tag=n), epoch)


def test_topic_and_partition_come_from_the_directory_name(tmp_path: Path) -> None:
    log = Log(tmp_path / "my-dashed-topic-12", small_config())
    assert (log.topic, log.partition) == ("my-dashed-topic", 12)
    for bad in ("nopartition", "topic-", "-3", "topic-x"):
        with pytest.raises(KafkaStorageError):
            parse_topic_partition(bad)


class TestLeaderAppend:
    def test_offsets_and_epoch_are_assigned(self, tmp_path: Path) -> None:
        log = open_log(tmp_path)
        first = log.append_as_leader(batch(3, base_offset=999, timestamp=T0), leader_epoch=5)
        second = log.append_as_leader(
            batch(2, timestamp=T0 + 50) + batch(4, timestamp=T0 + 20), leader_epoch=5
        )
        assert (first.first_offset, first.last_offset, first.record_count) == (0, 2, 3)
        assert (second.first_offset, second.last_offset, second.record_count) == (3, 8, 6)
        assert (second.max_timestamp, second.offset_of_max_timestamp) == (T0 + 51, 4)
        assert log.log_end_offset == 9
        data = read_all(log)
        assert offsets_of(data) == list(range(9))
        assert [h.partition_leader_epoch for _, h in iter_batch_headers(data)] == [5, 5, 5]
        assert log.leader_epoch_cache.entries == [EpochEntry(5, 0)]

    def test_patched_batches_still_pass_kafka_pythons_crc_check(self, tmp_path: Path) -> None:
        log = open_log(tmp_path)
        log.append_as_leader(batch(2), 1)
        log.append_as_leader(batch(3, tag=1), 1)
        records = MemoryRecords(read_all(log))
        seen = []
        while (b := records.next_batch()) is not None:
            assert b.validate_crc()
            seen.append((b.base_offset, [r.offset for r in b]))
        assert seen == [(0, [0, 1]), (2, [2, 3, 4])]

    def test_new_epoch_starts_at_its_first_offset(self, tmp_path: Path) -> None:
        log = open_log(tmp_path)
        leader_fill(log, 2, epoch=1)
        leader_fill(log, 1, epoch=3)
        leader_fill(log, 1, epoch=3)
        assert log.leader_epoch_cache.entries == [EpochEntry(1, 0), EpochEntry(3, 6)]
        assert (log.dir / "leader-epoch-checkpoint").read_text() == "0\n2\n1 0\n3 6\n"
        assert log.end_offset_for_epoch(1) == (1, 6)
        assert log.end_offset_for_epoch(3) == (3, 12)

    def test_too_large_batch_is_refused(self, tmp_path: Path) -> None:
        log = open_log(tmp_path, small_config(max_message_bytes=200))
        with pytest.raises(RecordTooLargeError):
            log.append_as_leader(batch(1, value_size=300), 0)
        assert log.log_end_offset == 0

    def test_append_larger_than_a_segment_is_refused(self, tmp_path: Path) -> None:
        log = open_log(tmp_path, small_config(segment_bytes=200))
        with pytest.raises(KafkaError) as raised:
            log.append_as_leader(batch(1, value_size=300), 0)
        assert raised.value.code is ErrorCode.RECORD_LIST_TOO_LARGE

    def test_rolls_by_size(self, tmp_path: Path) -> None:
        log = open_log(tmp_path)
        with capture_logs() as events:
            leader_fill(log, 30)
        assert log.number_of_segments > 3
        rolled = [e for e in events if e["event"] == "log.segment.rolled"]
        assert len(rolled) == log.number_of_segments - 1
        assert rolled[0]["topic"] == "orders" and rolled[0]["partition"] == 3
        for segment in log.segments:
            assert segment.size <= 1024
            first = next(iter_batch_headers(segment.path.read_bytes()))[1]
            assert first.base_offset == segment.base_offset
        assert offsets_of(read_all(log)) == list(range(90))

    def test_segment_files_are_readable_by_kafka_python(self, tmp_path: Path) -> None:
        log = open_log(tmp_path)
        leader_fill(log, 30, epoch=2)
        log.close()
        offsets: list[int] = []
        for path in segment_files(log.dir):
            records = MemoryRecords(path.read_bytes())
            while (b := records.next_batch()) is not None:
                assert b.validate_crc()
                offsets.extend(r.offset for r in b)
        assert offsets == list(range(90))

    def test_explicit_roll(self, tmp_path: Path) -> None:
        log = open_log(tmp_path)
        leader_fill(log, 2)
        assert log.roll().base_offset == 6
        assert log.roll().base_offset == 6  # nothing appended: the empty segment is reused
        assert [s.base_offset for s in log.segments] == [0, 6]
        leader_fill(log, 1)
        assert offsets_of(read_all(log)) == list(range(9))

    def test_rolls_by_time(self, tmp_path: Path) -> None:
        log = open_log(tmp_path, small_config(segment_bytes=1 << 20, segment_ms=1000))
        log.append_as_leader(batch(1, timestamp=T0), 0)
        log.append_as_leader(batch(1, timestamp=T0 + 1000), 0)
        assert log.number_of_segments == 1
        log.append_as_leader(batch(1, timestamp=T0 + 1001), 0)
        assert [s.base_offset for s in log.segments] == [0, 2]


class TestFollowerAppend:
    def test_offsets_and_epochs_are_kept(self, tmp_path: Path) -> None:
        log = open_log(tmp_path)
        data = batch(2, base_offset=0, epoch=1) + batch(3, base_offset=2, epoch=4)
        info = log.append_as_follower(data)
        assert (info.first_offset, info.last_offset, info.record_count) == (0, 4, 5)
        assert read_all(log) == data
        assert log.leader_epoch_cache.entries == [EpochEntry(1, 0), EpochEntry(4, 2)]

    def test_must_not_start_below_the_log_end(self, tmp_path: Path) -> None:
        log = open_log(tmp_path)
        log.append_as_follower(batch(2, base_offset=0, epoch=1))
        with pytest.raises(UnexpectedAppendOffsetError) as raised:
            log.append_as_follower(batch(1, base_offset=1, epoch=1))
        assert raised.value.first_offset == 1
        assert "offset 2 was expected" in str(raised.value)
        with pytest.raises(UnexpectedAppendOffsetError):  # offsets going back inside the append
            log.append_as_follower(batch(1, base_offset=3) + batch(1, base_offset=3))
        assert log.log_end_offset == 2
        # Gaps are what a cleaned (compacted) leader log has; as Kafka, a follower takes them.
        log.append_as_follower(batch(1, base_offset=3) + batch(1, base_offset=5))
        assert log.log_end_offset == 6

    def test_an_append_larger_than_a_segment_is_split_between_batches(self, tmp_path: Path) -> None:
        # segment.bytes lowered under the follower's fetch size: the leader accepted these
        # batches one by one; refusing the fetch would wedge the follower out of the ISR.
        log = open_log(tmp_path, small_config(segment_bytes=400))
        batches = [batch(2, base_offset=2 * n, epoch=1, tag=n, value_size=40) for n in range(12)]
        data = b"".join(batches)
        assert len(data) > 2 * 400 and all(len(b) < 200 for b in batches)
        info = log.append_as_follower(data)
        assert (info.first_offset, info.last_offset, info.record_count) == (0, 23, 24)
        assert (info.valid_bytes, log.log_end_offset) == (len(data), 24)
        assert read_all(log) == data
        assert log.number_of_segments >= 3
        for segment in log.segments:
            assert 0 < segment.size <= 400
            first = next(iter_batch_headers(segment.path.read_bytes()))[1]
            assert first.base_offset == segment.base_offset
        assert log.leader_epoch_cache.entries == [EpochEntry(1, 0)]

    def test_a_batch_larger_than_a_segment_gets_a_segment_of_its_own(self, tmp_path: Path) -> None:
        log = open_log(tmp_path, small_config(segment_bytes=200))
        small, large = (
            batch(1, base_offset=0, value_size=20),
            batch(1, base_offset=1, value_size=300),
        )
        log.append_as_follower(small)
        log.append_as_follower(large + batch(1, base_offset=2, value_size=20))
        assert [s.base_offset for s in log.segments] == [0, 1, 2]
        assert [s.size for s in log.segments][:2] == [len(small), len(large)]
        assert offsets_of(read_all(log)) == [0, 1, 2]
        # the leader's own appends are still bounded by segment.bytes
        with pytest.raises(KafkaError) as raised:
            log.append_as_leader(batch(1, value_size=300), 0)
        assert raised.value.code is ErrorCode.RECORD_LIST_TOO_LARGE
        assert log.log_end_offset == 3

    def test_empty_append_is_a_no_op(self, tmp_path: Path) -> None:
        log = open_log(tmp_path)
        info = log.append_as_follower(b"")
        assert info.valid_bytes == 0 and log.log_end_offset == 0

    def test_corrupt_fetched_data_is_refused(self, tmp_path: Path) -> None:
        log = open_log(tmp_path)
        data = bytearray(batch(2))
        data[-1] ^= 0xFF
        with pytest.raises(KafkaError) as raised:
            log.append_as_follower(bytes(data))
        assert raised.value.code is ErrorCode.CORRUPT_MESSAGE


class TestRead:
    def test_out_of_range(self, tmp_path: Path) -> None:
        log = open_log(tmp_path)
        leader_fill(log, 3)
        with pytest.raises(OffsetOutOfRangeError):
            log.read(10, 1000)
        assert log.read(9, 1000).records == b""  # at the LEO: nothing yet, not an error
        log.maybe_increment_log_start_offset(4)
        with pytest.raises(OffsetOutOfRangeError):
            log.read(3, 1000)
        assert batch_bases(memory_records(log.read(4, 1000).records))[0] == 3  # the batch holding 4

    def test_from_the_middle_of_a_batch(self, tmp_path: Path) -> None:
        log = open_log(tmp_path)
        leader_fill(log, 3)
        info = log.read(4, 10_000)
        assert info.fetch_offset == 4
        assert batch_bases(memory_records(info.records)) == [3, 6]

    def test_bounded_by_max_offset(self, tmp_path: Path) -> None:
        log = open_log(tmp_path)
        leader_fill(log, 30)  # several segments of 3-record batches
        for high_watermark in (1, 3, 5, 30, 31, 45, 89):
            data = read_all_up_to(log, high_watermark)
            bases = batch_bases(data)
            assert bases and all(base < high_watermark for base in bases)
            assert bases[-1] + 3 >= high_watermark  # nothing below the bound is withheld
        assert log.read(12, 10_000, max_offset=12).records == b""
        assert log.read(13, 10_000, max_offset=12).records == b""

    def test_bounded_by_max_bytes(self, tmp_path: Path) -> None:
        log = open_log(tmp_path, small_config(segment_bytes=1 << 20))
        leader_fill(log, 10)
        size = len(log.read(0, 1).records)
        assert batch_bases(memory_records(log.read(0, size * 3 - 1).records)) == [0, 3]
        assert batch_bases(memory_records(log.read(0, 1).records)) == [0]  # min_one_message
        info = log.read(0, 1, min_one_message=False)
        assert info.records == b"" and info.first_entry_incomplete
        # The high watermark beats min_one_message.
        assert log.read(0, 1, max_offset=0).records == b""

    def test_moves_on_to_the_next_segment(self, tmp_path: Path) -> None:
        log = open_log(tmp_path)
        leader_fill(log, 30)
        boundary = log.segments[1].base_offset
        info = log.read(boundary, 10_000)
        assert batch_bases(memory_records(info.records))[0] == boundary


def read_all_up_to(log: Log, max_offset: int) -> bytes:
    out: list[bytes] = []
    offset = log.log_start_offset
    while True:
        records = memory_records(log.read(offset, 250, max_offset=max_offset).records)
        if not records:
            return b"".join(out)
        out.append(records)
        offset = [h for _, h in iter_batch_headers(records)][-1].next_offset


class TestTimestamps:
    def test_first_offset_at_or_after_timestamp(self, tmp_path: Path) -> None:
        log = open_log(tmp_path)
        leader_fill(log, 30, epoch=2)  # batch n: offsets 3n.., timestamps T0+10n, +1, +2
        for target, expected in ((T0 - 5, 0), (T0, 0), (T0 + 1, 1), (T0 + 3, 3), (T0 + 152, 47)):
            found = log.fetch_offset_by_timestamp(target)
            assert found is not None
            assert found.offset == expected
            assert found.leader_epoch == 2
        assert log.fetch_offset_by_timestamp(T0 + 10**6) is None

    def test_respects_the_log_start_offset(self, tmp_path: Path) -> None:
        log = open_log(tmp_path)
        leader_fill(log, 5)
        log.maybe_increment_log_start_offset(4)
        found = log.fetch_offset_by_timestamp(T0)
        assert found is not None and found.offset == 4

    def test_special_timestamps(self, tmp_path: Path) -> None:
        log = open_log(tmp_path)
        leader_fill(log, 3, epoch=1)
        log.append_as_leader(batch(2, timestamps=[T0 + 500, T0 + 100]), 4)
        log.append_as_leader(batch(1, timestamp=T0 + 200), 4)
        assert log.fetch_offset_by_timestamp(LATEST_TIMESTAMP) == (-1, 12, 4)
        assert log.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP) == (-1, 0, 1)
        assert log.fetch_offset_by_timestamp(MAX_TIMESTAMP) == (T0 + 500, 9, 4)

    def test_earliest_local_is_the_log_start_offset_without_tiered_storage(
        self, tmp_path: Path
    ) -> None:
        log = open_log(tmp_path)
        leader_fill(log, 3, epoch=1)
        log.append_as_leader(batch(2, timestamp=T0 + 100), 4)
        log.maybe_increment_log_start_offset(6)
        assert log.fetch_offset_by_timestamp(EARLIEST_LOCAL_TIMESTAMP) == (-1, 6, 1)
        assert log.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP) == (-1, 6, 1)


class TestTruncation:
    def test_truncate_inside_the_active_segment(self, tmp_path: Path) -> None:
        log = open_log(tmp_path, small_config(segment_bytes=1 << 20))
        leader_fill(log, 4, epoch=1)
        leader_fill(log, 4, epoch=2)
        assert log.truncate_to(15)
        assert log.log_end_offset == 15
        assert offsets_of(read_all(log)) == list(range(15))
        assert log.leader_epoch_cache.entries == [EpochEntry(1, 0), EpochEntry(2, 12)]
        assert log.truncate_to(12)
        assert log.leader_epoch_cache.entries == [EpochEntry(1, 0)]
        log.append_as_leader(batch(1), 3)
        assert offsets_of(read_all(log)) == list(range(13))

    def test_truncate_inside_a_batch_removes_the_whole_batch(self, tmp_path: Path) -> None:
        log = open_log(tmp_path)
        leader_fill(log, 4)
        assert log.truncate_to(7)
        assert log.log_end_offset == 6

    def test_truncate_deletes_later_segments(self, tmp_path: Path) -> None:
        log = open_log(tmp_path)
        leader_fill(log, 30)
        target = log.segments[1].base_offset + 3
        with capture_logs() as events:
            log.truncate_to(target)
        assert log.log_end_offset == target
        assert [s.base_offset for s in log.segments] == [0, log.segments[1].base_offset]
        assert len(segment_files(log.dir)) == 2
        assert events[-1]["event"] == "log.truncated"
        assert events[-1]["log_end_offset"] == target
        assert offsets_of(read_all(log)) == list(range(target))

    def test_truncate_at_or_beyond_the_end_is_a_no_op(self, tmp_path: Path) -> None:
        log = open_log(tmp_path)
        leader_fill(log, 2)
        assert not log.truncate_to(6)
        assert not log.truncate_to(60)
        assert log.log_end_offset == 6

    def test_truncate_fully_and_start_at(self, tmp_path: Path) -> None:
        log = open_log(tmp_path)
        leader_fill(log, 30, epoch=2)
        log.truncate_fully_and_start_at(500)
        assert (log.log_start_offset, log.log_end_offset, log.recovery_point) == (500, 500, 500)
        assert [p.name for p in segment_files(log.dir)] == ["00000000000000000500.log"]
        assert log.leader_epoch_cache.entries == []
        log.append_as_follower(batch(2, base_offset=500, epoch=3))
        assert offsets_of(read_all(log)) == [500, 501]
        with pytest.raises(OffsetOutOfRangeError):
            log.read(0, 100)

    def test_truncate_below_the_first_segment_restarts_the_log(self, tmp_path: Path) -> None:
        log = open_log(tmp_path)
        log.truncate_fully_and_start_at(100)
        leader_fill(log, 2)
        assert log.truncate_to(50)
        assert (log.log_start_offset, log.log_end_offset) == (50, 50)


class TestRetention:
    def test_by_time_spares_the_active_segment(self, tmp_path: Path) -> None:
        log = open_log(tmp_path, small_config(retention_ms=1000))
        leader_fill(log, 30, epoch=1, ts=T0)
        leader_fill(log, 1, epoch=2, ts=T0 + 5000)
        segments = log.segments
        now = T0 + 1000 + segments[2].max_timestamp_so_far - T0
        with capture_logs() as events:
            deleted = log.delete_old_segments(now)
        # Segments 0 and 1 are older than 1000 ms at ``now``; segment 2 is not (yet).
        assert deleted == 2
        assert log.log_start_offset == segments[2].base_offset
        assert [s.base_offset for s in log.segments] == [s.base_offset for s in segments[2:]]
        assert events[-1]["event"] == "log.segments.deleted"
        assert events[-1]["reason"] == "retention.ms"
        assert log.leader_epoch_cache.entries[0] == EpochEntry(1, segments[2].base_offset)
        # Everything old, but without a high watermark the active segment stays.
        log.delete_old_segments(T0 + 10**9)
        assert log.number_of_segments == 1
        assert log.log_start_offset == log.active_segment.base_offset
        assert log.leader_epoch_cache.entries == [
            EpochEntry(1, log.active_segment.base_offset),
            EpochEntry(2, 90),
        ]

    def test_by_time_with_a_high_watermark_takes_the_active_segment_too(
        self, tmp_path: Path
    ) -> None:
        log = open_log(tmp_path, small_config(retention_ms=1000))
        leader_fill(log, 30)
        leo = log.log_end_offset
        inactive = log.number_of_segments - 1
        assert log.delete_old_segments(T0 + 10**9, high_watermark=leo - 1) == inactive
        assert log.delete_old_segments(T0 + 10**9, high_watermark=leo) == 1
        assert log.number_of_segments == 1 and log.active_segment.size == 0
        assert (log.log_start_offset, log.log_end_offset) == (leo, leo)

    def test_high_watermark_protects_uncommitted_segments(self, tmp_path: Path) -> None:
        log = open_log(tmp_path, small_config(retention_ms=1000))
        leader_fill(log, 30)
        hw = log.segments[2].base_offset
        assert log.delete_old_segments(T0 + 10**9, high_watermark=hw) == 2
        assert log.log_start_offset == hw

    def test_by_size(self, tmp_path: Path) -> None:
        log = open_log(tmp_path)
        leader_fill(log, 40)
        sizes = [s.size for s in log.segments]
        limit = sum(sizes[2:]) + sizes[1] // 2  # segment 1 would take the total below it
        log.update_config(dataclasses.replace(log.config, retention_bytes=limit))
        with capture_logs() as events:
            assert log.delete_old_segments(T0) == 1
        assert events[-1]["reason"] == "retention.bytes"
        assert log.size == sum(sizes[1:])
        assert log.delete_old_segments(T0) == 0

    def test_by_size_never_takes_the_active_segment(self, tmp_path: Path) -> None:
        log = open_log(tmp_path, small_config(retention_bytes=0))
        leader_fill(log, 40)
        log.delete_old_segments(T0)
        assert log.number_of_segments == 1
        assert log.log_start_offset == log.active_segment.base_offset

    def test_segments_below_log_start_offset_go_even_without_retention(
        self, tmp_path: Path
    ) -> None:
        log = open_log(tmp_path, small_config(cleanup_policy=frozenset({"compact"})))
        leader_fill(log, 30)
        third = log.segments[2].base_offset
        assert log.maybe_increment_log_start_offset(third + 1)
        assert not log.maybe_increment_log_start_offset(third)
        assert log.delete_old_segments(T0 + 10**9) == 2
        assert log.segments[0].base_offset == third
        assert log.log_start_offset == third + 1
        with pytest.raises(OffsetOutOfRangeError):
            log.maybe_increment_log_start_offset(log.log_end_offset + 1)
        with pytest.raises(OffsetOutOfRangeError):
            log.maybe_increment_log_start_offset(third + 5, high_watermark=third + 4)

    def test_compact_only_topics_keep_old_segments(self, tmp_path: Path) -> None:
        log = open_log(
            tmp_path, small_config(retention_ms=1, cleanup_policy=frozenset({"compact"}))
        )
        leader_fill(log, 30)
        assert log.delete_old_segments(T0 + 10**9) == 0


class TestFlush:
    def test_flush_moves_the_recovery_point(self, tmp_path: Path) -> None:
        log = open_log(tmp_path)
        leader_fill(log, 10)
        assert log.recovery_point == 0
        log.flush(7)
        assert log.recovery_point == 7
        log.flush()
        assert log.recovery_point == log.log_end_offset == 30
        log.flush(5)  # never backwards
        assert log.recovery_point == 30

    def test_flush_messages(self, tmp_path: Path) -> None:
        log = open_log(tmp_path, small_config(flush_messages=7))
        leader_fill(log, 2)
        assert log.recovery_point == 0
        leader_fill(log, 1)  # 9 unflushed messages >= 7
        assert log.recovery_point == 9

    def test_flush_ms(self, tmp_path: Path) -> None:
        clock = Clock()
        log = open_log(tmp_path, small_config(flush_ms=1000, segment_bytes=1 << 20), clock)
        leader_fill(log, 2)
        log.maybe_flush(clock.now_ms + 999)
        assert log.recovery_point == 0
        log.maybe_flush(clock.now_ms + 1000)
        assert log.recovery_point == 6

    def test_a_roll_leaves_the_old_segments_to_be_flushed(self, tmp_path: Path) -> None:
        log = open_log(tmp_path)
        leader_fill(log, 30)
        log.maybe_flush(T0)
        assert log.recovery_point == log.active_segment.base_offset


def test_a_new_log_is_not_an_unclean_shutdown(tmp_path: Path) -> None:
    with capture_logs() as events:
        open_log(tmp_path)
    (loaded,) = [e for e in events if e["event"] == "log.loaded"]
    assert loaded["clean_shutdown"] is True
    assert not [e for e in events if e["log_level"] == "warning"]


def test_reopen_finds_everything(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    leader_fill(log, 30, epoch=3)
    before = read_all(log)
    log.flush()
    log.close()
    with pytest.raises(KafkaStorageError):
        log.read(0, 10)
    again = Log(log.dir, small_config(), recovery_point=90, time_ms=Clock())
    assert (again.log_end_offset, again.recovery_point) == (90, 90)
    assert read_all(again) == before
    assert again.leader_epoch_cache.entries == [EpochEntry(3, 0)]
    again.append_as_leader(batch(1), 3)
    assert again.log_end_offset == 91


def test_an_epoch_file_not_written_yet_is_written_before_any_data(tmp_path: Path) -> None:
    epoch_file = tmp_path / "orders-3" / "leader-epoch-checkpoint"
    log = open_log(tmp_path)
    # an append: the epoch file first, then the data
    log.maybe_assign_epoch_start_offset(4, 0, flush=False)
    assert not epoch_file.exists()
    leader_fill(log, 3, epoch=4)
    assert epoch_file.read_text() == "0\n1\n4 0\n"
    # a background flush of data appended before the change (prepare in the owner, sync in
    # a worker thread): the epoch file first too
    log.maybe_assign_epoch_start_offset(5, 9, flush=False)
    pending = log.prepare_flush()
    assert pending is not None and epoch_file.read_text() == "0\n1\n4 0\n"
    pending.sync()
    assert pending.error is None and epoch_file.read_text() == "0\n2\n4 0\n5 9\n"
    assert log.complete_flush(pending) and log.recovery_point == 9
    # Log.flush with no data to sync, and close: each writes one left behind
    log.maybe_assign_epoch_start_offset(6, 9, flush=False)
    log.flush()
    assert epoch_file.read_text() == "0\n2\n4 0\n6 9\n"  # 6 replaces 5: same start
    log.maybe_assign_epoch_start_offset(7, 9, flush=False)
    log.close()
    assert epoch_file.read_text() == "0\n2\n4 0\n7 9\n"


def test_loading_truncates_unused_epochs_without_a_write_until_the_next_append(
    tmp_path: Path,
) -> None:
    log = open_log(tmp_path)
    leader_fill(log, 2, epoch=1)
    log.maybe_assign_epoch_start_offset(2, 6)  # a leader's epoch that got no data
    log.flush()
    log.close()
    epoch_file = log.dir / "leader-epoch-checkpoint"
    assert epoch_file.read_text() == "0\n2\n1 0\n2 6\n"
    again = Log(log.dir, small_config(), recovery_point=6, time_ms=Clock())
    assert again.leader_epoch_cache.entries == [EpochEntry(1, 0)]
    assert epoch_file.read_text() == "0\n2\n1 0\n2 6\n"  # stale above the LEO: no data there
    again.append_as_follower(batch(2, base_offset=6, epoch=1))
    assert epoch_file.read_text() == "0\n1\n1 0\n"  # written before the data
    again.close()
