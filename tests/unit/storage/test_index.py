"""OffsetIndex and TimeIndex: byte layout, lookups, fullness, truncation, load checks."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from minikafka.broker.storage.index import (
    CorruptIndexError,
    OffsetIndex,
    OffsetPosition,
    TimeIndex,
    TimestampOffset,
)
from minikafka.proto.errors import KafkaStorageError

BASE = 1000


def offset_index(tmp_path: Path, max_entries: int = 100) -> OffsetIndex:
    return OffsetIndex(tmp_path / "00000000000000001000.index", BASE, max_entries)


def time_index(tmp_path: Path, max_entries: int = 100) -> TimeIndex:
    return TimeIndex(tmp_path / "00000000000000001000.timeindex", BASE, max_entries)


class TestOffsetIndex:
    def test_file_layout_is_relative_offset_and_position_big_endian(self, tmp_path: Path) -> None:
        index = offset_index(tmp_path)
        index.append(1003, 0)
        index.append(1010, 4200)
        index.flush()
        assert index.path.read_bytes() == struct.pack(">iiii", 3, 0, 10, 4200)
        assert OffsetIndex.read_entries(index.path, BASE) == [(1003, 0), (1010, 4200)]

    def test_lookup_finds_largest_entry_at_or_below_target(self, tmp_path: Path) -> None:
        index = offset_index(tmp_path)
        for offset, position in ((1005, 100), (1010, 200), (1020, 300)):
            index.append(offset, position)
        assert index.lookup(999) == OffsetPosition(BASE, 0)
        assert index.lookup(1004) == OffsetPosition(BASE, 0)
        assert index.lookup(1005) == OffsetPosition(1005, 100)
        assert index.lookup(1019) == OffsetPosition(1010, 200)
        assert index.lookup(5000) == OffsetPosition(1020, 300)

    def test_empty_index_lookup_points_at_start(self, tmp_path: Path) -> None:
        assert offset_index(tmp_path).lookup(1234) == OffsetPosition(BASE, 0)

    def test_appends_must_increase(self, tmp_path: Path) -> None:
        index = offset_index(tmp_path)
        index.append(1005, 100)
        with pytest.raises(KafkaStorageError):
            index.append(1005, 200)
        with pytest.raises(KafkaStorageError):
            index.append(999, 300)  # below the base offset

    def test_full_at_max_entries(self, tmp_path: Path) -> None:
        index = offset_index(tmp_path, max_entries=2)
        index.append(1001, 10)
        assert not index.is_full
        index.append(1002, 20)
        assert index.is_full
        with pytest.raises(KafkaStorageError):
            index.append(1003, 30)

    def test_truncate_to_removes_entries_at_and_after_offset(self, tmp_path: Path) -> None:
        index = offset_index(tmp_path)
        for offset, position in ((1005, 100), (1010, 200), (1020, 300)):
            index.append(offset, position)
        index.flush()
        index.truncate_to(1010)
        assert index.entries == 1
        assert index.last_entry == OffsetPosition(1005, 100)
        # The file is shortened at once, not at the next flush.
        assert index.path.stat().st_size == 8
        index.truncate_to(1000)
        assert index.entries == 0

    def test_truncate_to_between_entries(self, tmp_path: Path) -> None:
        index = offset_index(tmp_path)
        for offset, position in ((1005, 100), (1010, 200)):
            index.append(offset, position)
        index.truncate_to(1007)
        assert [index.entry(n) for n in range(index.entries)] == [OffsetPosition(1005, 100)]

    def test_reload_reads_what_was_flushed(self, tmp_path: Path) -> None:
        index = offset_index(tmp_path)
        index.append(1005, 100)
        index.flush()
        index.append(1010, 200)  # not flushed: not in the file
        again = offset_index(tmp_path)
        assert again.entries == 1
        assert again.lookup(1010) == OffsetPosition(1005, 100)

    def test_load_rejects_partial_entry(self, tmp_path: Path) -> None:
        (tmp_path / "00000000000000001000.index").write_bytes(b"\x00" * 12)
        with pytest.raises(CorruptIndexError, match=r"offset index .* 12 bytes long, not a multi"):
            offset_index(tmp_path)
        with pytest.raises(CorruptIndexError, match="offset index <given> is 4 bytes long"):
            OffsetIndex(Path("<given>"), BASE, 10, data=b"\x00" * 4)  # the file is not read

    def test_sanity_check(self, tmp_path: Path) -> None:
        path = tmp_path / "00000000000000001000.index"
        path.write_bytes(struct.pack(">iiii", 5, 100, 3, 200))  # offsets go down
        with pytest.raises(CorruptIndexError):
            offset_index(tmp_path).sanity_check(log_size=1000)
        path.write_bytes(struct.pack(">iiii", 3, 100, 5, 2000))  # beyond the log
        with pytest.raises(CorruptIndexError):
            offset_index(tmp_path).sanity_check(log_size=1000)
        path.write_bytes(struct.pack(">iiii", 3, 100, 5, 200))
        offset_index(tmp_path).sanity_check(log_size=1000)


class TestTimeIndex:
    def test_file_layout_is_timestamp_and_relative_offset(self, tmp_path: Path) -> None:
        index = time_index(tmp_path)
        index.maybe_append(1_700_000_000_000, 1004)
        index.flush()
        assert index.path.read_bytes() == struct.pack(">qi", 1_700_000_000_000, 4)
        assert TimeIndex.read_entries(index.path, BASE) == [(1_700_000_000_000, 1004)]

    def test_only_growing_timestamps_are_added(self, tmp_path: Path) -> None:
        index = time_index(tmp_path)
        index.maybe_append(-1, 1001)  # no timestamp: nothing to index
        assert index.entries == 0
        index.maybe_append(100, 1002)
        index.maybe_append(100, 1005)  # same timestamp: skipped
        index.maybe_append(150, 1007)
        assert [index.entry(n) for n in range(index.entries)] == [
            TimestampOffset(100, 1002),
            TimestampOffset(150, 1007),
        ]
        with pytest.raises(KafkaStorageError):
            index.maybe_append(90, 1010)  # timestamps may not go back
        with pytest.raises(KafkaStorageError):
            index.maybe_append(200, 1003)  # nor offsets

    def test_lookup(self, tmp_path: Path) -> None:
        index = time_index(tmp_path)
        index.maybe_append(100, 1002)
        index.maybe_append(150, 1007)
        assert index.lookup(99) == TimestampOffset(-1, BASE)
        assert index.lookup(100) == TimestampOffset(100, 1002)
        assert index.lookup(149) == TimestampOffset(100, 1002)
        assert index.lookup(10**13) == TimestampOffset(150, 1007)

    def test_one_slot_is_kept_for_the_roll_entry(self, tmp_path: Path) -> None:
        index = time_index(tmp_path, max_entries=3)
        index.maybe_append(100, 1001)
        index.maybe_append(200, 1002)
        assert index.is_full
        with pytest.raises(KafkaStorageError):
            index.maybe_append(300, 1003)
        index.maybe_append(300, 1003, skip_full_check=True)
        assert index.entries == 3

    def test_truncate_to(self, tmp_path: Path) -> None:
        index = time_index(tmp_path)
        for timestamp, offset in ((100, 1002), (150, 1007), (190, 1012)):
            index.maybe_append(timestamp, offset)
        index.flush()
        index.truncate_to(1007)
        assert index.last_entry == TimestampOffset(100, 1002)
        assert index.path.stat().st_size == 12

    def test_sanity_check(self, tmp_path: Path) -> None:
        path = tmp_path / "00000000000000001000.timeindex"
        path.write_bytes(struct.pack(">qiqi", 200, 2, 100, 5))
        with pytest.raises(CorruptIndexError):
            time_index(tmp_path).sanity_check(next_offset=1010)
        path.write_bytes(struct.pack(">qiqi", 100, 2, 200, 50))
        with pytest.raises(CorruptIndexError):
            time_index(tmp_path).sanity_check(next_offset=1010)
        path.write_bytes(struct.pack(">qiqi", 100, 2, 200, 5))
        time_index(tmp_path).sanity_check(next_offset=1010)
        path.write_bytes(b"\x01" * 13)
        with pytest.raises(CorruptIndexError, match=r"time index .* 13 bytes long, not a multiple"):
            time_index(tmp_path)
