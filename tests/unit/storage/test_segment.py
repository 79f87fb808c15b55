"""LogSegment: appending with sparse indexing, reads as batch-aligned slices, roll rules,
truncation, recovery."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from minikafka.broker.storage.config import LogConfig
from minikafka.broker.storage.index import OffsetIndex, TimeIndex
from minikafka.broker.storage.segment import LogSegment
from minikafka.proto.records import validate_batches
from tests.unit.storage.helpers import (
    T0,
    Clock,
    batch,
    batch_bases,
    memory_records,
    offsets_of,
)

CONFIG = LogConfig(index_interval_bytes=150)


def new_segment(tmp_path: Path, base: int = 100, config: LogConfig = CONFIG) -> LogSegment:
    return LogSegment.create(tmp_path, base, config, time_ms=Clock())


def fill(segment: LogSegment, batches: int, records: int = 3, start_ts: int = T0) -> list[bytes]:
    """Append ``batches`` batches of ``records`` records at consecutive offsets."""
    written = []
    offset = segment.read_next_offset()
    for n in range(batches):
        data = batch(records, base_offset=offset, timestamp=start_ts + 10 * n, tag=n)
        segment.append(data, validate_batches(data))
        written.append(data)
        offset += records
    return written


def test_files_are_named_by_base_offset(tmp_path: Path) -> None:
    new_segment(tmp_path, base=4096)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "00000000000000004096.index",
        "00000000000000004096.log",
        "00000000000000004096.timeindex",
    ]


def test_log_file_is_the_batches_back_to_back(tmp_path: Path) -> None:
    segment = new_segment(tmp_path)
    written = fill(segment, 4)
    assert segment.path.read_bytes() == b"".join(written)
    assert segment.size == sum(len(b) for b in written)
    assert segment.read_next_offset() == 112


def test_index_entries_are_sparse_and_point_at_batches(tmp_path: Path) -> None:
    segment = new_segment(tmp_path)
    written = fill(segment, 12)
    positions = [sum(len(b) for b in written[:n]) for n in range(len(written))]
    entries = [segment.offset_index.entry(n) for n in range(segment.offset_index.entries)]
    # An entry each time more than index.interval.bytes went by since the last one; never
    # for the first batch.
    expected = []
    since = 0
    for n, data in enumerate(written):
        if since > CONFIG.index_interval_bytes:
            expected.append((100 + 3 * n + 2, positions[n]))
            since = 0
        since += len(data)
    assert [tuple(e) for e in entries] == expected
    assert 0 < len(entries) < len(written)
    segment.close()
    assert OffsetIndex.read_entries(segment.offset_index.path, 100) == expected
    time_entries = TimeIndex.read_entries(segment.time_index.path, 100)
    # Timestamps grow with every batch here, so each offset entry has a time entry, plus the
    # final (max timestamp, its offset) entry written on close.
    assert time_entries[-1] == (T0 + 10 * 11 + 2, 135)
    assert [t for t, _ in time_entries] == sorted({t for t, _ in time_entries})


def test_read_starts_at_the_batch_holding_the_offset(tmp_path: Path) -> None:
    segment = new_segment(tmp_path)
    written = fill(segment, 10)
    info = segment.read(107, 10_000)
    assert info is not None
    # 107 is the middle record of the batch 106..108: the slice starts at that batch.
    assert batch_bases(memory_records(info.records)) == [106, 109, 112, 115, 118, 121, 124, 127]
    assert info.records == b"".join(written[2:])
    assert info.fetch_offset == 107


def test_read_limits(tmp_path: Path) -> None:
    segment = new_segment(tmp_path)
    written = fill(segment, 6)
    size = len(written[0])
    info = segment.read(100, size * 2 + size // 2)
    assert info is not None and batch_bases(memory_records(info.records)) == [
        100,
        103,
    ]  # whole batches only
    small = segment.read(103, 10, min_one_message=True)
    assert small is not None and small.records == written[1]
    assert not small.first_entry_incomplete
    none = segment.read(103, 10, min_one_message=False)
    assert none is not None and none.records == b"" and none.first_entry_incomplete
    bounded = segment.read(100, 10_000, max_position=size * 3)
    assert bounded is not None and batch_bases(memory_records(bounded.records)) == [100, 103, 106]
    past_bound = segment.read(112, 10_000, max_position=size * 3)
    assert past_bound is not None and past_bound.records == b""
    assert segment.read(118, 10_000) is None  # past the end


def test_translate_offset(tmp_path: Path) -> None:
    segment = new_segment(tmp_path)
    written = fill(segment, 10)
    for offset in range(100, 130):
        location = segment.translate_offset(offset)
        assert location is not None
        n = (offset - 100) // 3
        assert location.position == sum(len(b) for b in written[:n])
        assert location.header.base_offset == 100 + 3 * n
    assert segment.translate_offset(130) is None
    assert segment.position_of_first_batch_from(104) == sum(len(b) for b in written[:2])
    assert segment.position_of_first_batch_from(103) == len(written[0])


def test_find_offset_by_timestamp(tmp_path: Path) -> None:
    segment = new_segment(tmp_path)
    fill(segment, 10)  # batch n: offsets 100+3n.., timestamps T0+10n, +1, +2
    found = segment.find_offset_by_timestamp(T0 + 31, starting_offset=100)
    assert found is not None and (found.timestamp, found.offset) == (T0 + 31, 110)
    found = segment.find_offset_by_timestamp(T0 + 33, starting_offset=100)
    assert found is not None and (found.timestamp, found.offset) == (T0 + 40, 112)
    found = segment.find_offset_by_timestamp(T0, starting_offset=105)
    assert found is not None and found.offset == 105
    assert segment.find_offset_by_timestamp(T0 + 1000, starting_offset=100) is None


class TestShouldRoll:
    def roll(self, segment: LogSegment, **kw: int) -> bool:
        args = {
            "segment_bytes": 10_000,
            "segment_ms": 1000,
            "messages_size": 100,
            "max_timestamp_in_messages": T0,
            "max_offset_in_messages": 200,
            "now_ms": T0,
        }
        args.update(kw)
        return segment.should_roll(**args)

    def test_by_size(self, tmp_path: Path) -> None:
        segment = new_segment(tmp_path)
        fill(segment, 2)
        size = segment.size
        assert not self.roll(segment, segment_bytes=size + 100, messages_size=100)
        assert self.roll(segment, segment_bytes=size + 99, messages_size=100)

    def test_by_time_of_first_batch(self, tmp_path: Path) -> None:
        segment = new_segment(tmp_path)
        fill(segment, 1, start_ts=T0)  # first batch's max timestamp: T0 + 2
        assert not self.roll(segment, max_timestamp_in_messages=T0 + 1002)
        assert self.roll(segment, max_timestamp_in_messages=T0 + 1003)

    def test_empty_segment_never_rolls_by_time(self, tmp_path: Path) -> None:
        segment = new_segment(tmp_path)
        assert not self.roll(segment, now_ms=T0 + 10**9, max_timestamp_in_messages=T0 + 10**9)

    def test_by_wall_clock_without_timestamps(self, tmp_path: Path) -> None:
        clock = Clock(T0)
        segment = LogSegment.create(tmp_path, 100, CONFIG, time_ms=clock)
        data = batch(1, base_offset=100, timestamps=[-1])
        segment.append(data, validate_batches(data))
        assert not self.roll(segment, now_ms=T0 + 1000, max_timestamp_in_messages=-1)
        assert self.roll(segment, now_ms=T0 + 1001, max_timestamp_in_messages=-1)

    def test_when_an_index_is_full(self, tmp_path: Path) -> None:
        # 36 bytes: 4 offset entries, 3 time entries of which one is kept for the roll.
        config = dataclasses.replace(CONFIG, segment_index_bytes=36, index_interval_bytes=0)
        segment = new_segment(tmp_path, config=config)
        fill(segment, 2)
        assert not self.roll(segment)
        fill(segment, 1, start_ts=T0 + 100)
        assert segment.time_index.is_full and not segment.offset_index.is_full
        assert self.roll(segment)
        fill(segment, 3, start_ts=T0 + 200)  # a full index skips entries rather than failing
        assert segment.offset_index.entries == 2

    def test_when_offsets_overflow_the_index(self, tmp_path: Path) -> None:
        segment = new_segment(tmp_path)
        assert not self.roll(segment, max_offset_in_messages=100 + 2**31 - 1)
        assert self.roll(segment, max_offset_in_messages=100 + 2**31)


def test_truncate_to(tmp_path: Path) -> None:
    segment = new_segment(tmp_path)
    written = fill(segment, 10)
    entries_before = segment.offset_index.entries
    removed = segment.truncate_to(110)  # inside batch 109..111: that batch goes too
    assert removed == sum(len(b) for b in written[3:])
    assert segment.size == sum(len(b) for b in written[:3])
    assert segment.read_next_offset() == 109
    assert segment.offset_index.entries < entries_before
    assert all(
        segment.offset_index.entry(n).offset < 109 for n in range(segment.offset_index.entries)
    )
    assert segment.max_timestamp_so_far == T0 + 22
    assert segment.truncate_to(500) == 0
    assert segment.truncate_to(100) == sum(len(b) for b in written[:3])
    assert segment.path.stat().st_size == 0
    assert segment.max_timestamp_so_far == -1


def test_recover_rebuilds_the_same_indexes(tmp_path: Path) -> None:
    segment = new_segment(tmp_path)
    fill(segment, 20)
    segment.close()
    built = (
        OffsetIndex.read_entries(segment.offset_index.path, 100),
        TimeIndex.read_entries(segment.time_index.path, 100),
    )
    segment.offset_index.path.unlink()
    reopened = LogSegment.open(tmp_path, 100, CONFIG, time_ms=Clock())
    assert reopened.check_indexes() is not None  # missing
    result = reopened.recover()
    assert result.bytes_truncated == 0 and result.next_offset == 160 and result.error is None
    reopened.close()
    rebuilt = (
        OffsetIndex.read_entries(reopened.offset_index.path, 100),
        TimeIndex.read_entries(reopened.time_index.path, 100),
    )
    assert rebuilt == built


def test_recover_truncates_a_torn_tail(tmp_path: Path) -> None:
    segment = new_segment(tmp_path)
    written = fill(segment, 5)
    segment.close()
    keep = sum(len(b) for b in written[:3])
    with open(segment.path, "r+b") as f:
        f.truncate(keep + 30)
    reopened = LogSegment.open(tmp_path, 100, CONFIG, time_ms=Clock())
    result = reopened.recover()
    assert result.bytes_truncated == 30
    assert result.next_offset == 109
    assert reopened.path.read_bytes() == b"".join(written[:3])


def test_reopen_keeps_state(tmp_path: Path) -> None:
    segment = new_segment(tmp_path)
    written = fill(segment, 8)
    segment.close()
    reopened = LogSegment.open(tmp_path, 100, CONFIG, time_ms=Clock())
    assert reopened.check_indexes() is None
    assert reopened.read_next_offset() == 124
    assert reopened.max_timestamp_so_far == T0 + 72
    info = reopened.read(110, 10_000)
    assert info is not None and offsets_of(memory_records(info.records))[0] == 109
    assert info.records == b"".join(written[3:])
    assert reopened.first_batch_timestamp() == T0 + 2


def test_delete_removes_the_files(tmp_path: Path) -> None:
    segment = new_segment(tmp_path)
    fill(segment, 2)
    segment.delete()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("position", [1, 63])
def test_check_indexes_catches_an_entry_off_a_batch_boundary(tmp_path: Path, position: int) -> None:
    segment = new_segment(tmp_path)
    fill(segment, 10)
    segment.close()
    data = bytearray(segment.offset_index.path.read_bytes())
    last = len(data) - 4
    data[last : last + 4] = (int.from_bytes(data[last : last + 4], "big") + position).to_bytes(
        4, "big"
    )
    segment.offset_index.path.write_bytes(bytes(data))
    reopened = LogSegment.open(tmp_path, 100, CONFIG, time_ms=Clock())
    assert reopened.check_indexes() is not None


# --- lazily read indexes (Kafka's LazyIndex) ---------------------------------------------


def closed_segment(tmp_path: Path, batches: int = 20) -> tuple[list[bytes], bytes, bytes]:
    """A filled, closed segment at base 100: its batches and both index files' bytes."""
    segment = new_segment(tmp_path)
    written = fill(segment, batches)
    segment.close()
    paths = sorted(tmp_path.glob("*index"))  # .index, .timeindex
    return written, paths[0].read_bytes(), paths[1].read_bytes()


def reopen(tmp_path: Path) -> LogSegment:
    return LogSegment.open(tmp_path, 100, CONFIG, time_ms=Clock())


def test_indexes_are_read_on_first_use_and_answer_as_when_read_at_open(tmp_path: Path) -> None:
    written, index_bytes, _ = closed_segment(tmp_path)
    assert len(index_bytes) > 8  # several entries: a lookup needs them
    segment = reopen(tmp_path)
    assert not segment.indexes_loaded
    info = segment.read(150, 10_000)
    assert segment.indexes_loaded
    assert info is not None and info.records == b"".join(written[16:])
    assert segment.offset_index.entries == len(index_bytes) // 8
    assert segment.max_timestamp_so_far == T0 + 192


def test_an_empty_segment_is_checked_and_closed_without_reading_its_indexes(
    tmp_path: Path,
) -> None:
    new_segment(tmp_path).close()
    segment = reopen(tmp_path)
    assert segment.check_indexes() is None
    assert segment.read_next_offset() == 100
    segment.close()
    assert not segment.indexes_loaded
    assert sorted(p.stat().st_size for p in tmp_path.iterdir()) == [0, 0, 0]


def test_an_empty_segment_with_index_entries_or_no_index_file_fails_its_check(
    tmp_path: Path,
) -> None:
    closed_segment(tmp_path)
    with open(tmp_path / "00000000000000000100.log", "r+b") as f:
        f.truncate(0)  # the entries now point past the data
    assert reopen(tmp_path).check_indexes() is not None
    (tmp_path / "00000000000000000100.index").write_bytes(b"")
    (tmp_path / "00000000000000000100.timeindex").unlink()
    problem = reopen(tmp_path).check_indexes()
    assert problem is not None and "00000000000000000100.timeindex is missing" in problem


def test_recover_does_not_need_the_old_entries(tmp_path: Path) -> None:
    _, index_bytes, time_index_bytes = closed_segment(tmp_path)
    (tmp_path / "00000000000000000100.index").write_bytes(b"\xff" * 13)  # malformed
    segment = reopen(tmp_path)
    result = segment.recover()
    assert result.next_offset == 160 and result.error is None
    segment.close()
    assert (tmp_path / "00000000000000000100.index").read_bytes() == index_bytes
    assert (tmp_path / "00000000000000000100.timeindex").read_bytes() == time_index_bytes


def test_truncation_roll_and_deletion_of_a_segment_whose_indexes_were_not_read(
    tmp_path: Path,
) -> None:
    written, _, _ = closed_segment(tmp_path)
    segment = reopen(tmp_path)
    assert segment.truncate_to(130) == sum(len(b) for b in written[10:])
    assert segment.read_next_offset() == 130
    assert all(
        segment.offset_index.entry(n).offset < 130 for n in range(segment.offset_index.entries)
    )
    assert segment.max_timestamp_so_far == T0 + 92
    segment.close()
    rolled = reopen(tmp_path)
    rolled.on_become_inactive()  # a roll: the final max timestamp into the time index
    assert rolled.time_index.last_entry == (T0 + 92, 129)
    rolled.close()
    deleted = reopen(tmp_path)
    deleted.delete()
    assert list(tmp_path.iterdir()) == []


def test_an_index_file_removed_before_first_use(tmp_path: Path) -> None:
    written, _, _ = closed_segment(tmp_path)
    segment = reopen(tmp_path)
    (tmp_path / "00000000000000000100.index").unlink()
    info = segment.read(150, 10_000)  # found by a scan from the start instead
    assert info is not None and info.records == b"".join(written[16:])
    assert segment.check_indexes() is not None  # a load would rebuild it
    segment.close()
    again = reopen(tmp_path)
    assert again.check_indexes() is not None
    again.recover()
    again.close()
    assert OffsetIndex.read_entries(tmp_path / "00000000000000000100.index", 100)
