"""LeaderEpochFileCache: Kafka's assign/truncate rules, end_offset_for answers, file bytes."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.broker.storage.epoch_cache import (
    UNDEFINED_EPOCH,
    UNDEFINED_EPOCH_OFFSET,
    EpochEntry,
    LeaderEpochFileCache,
)
from minikafka.proto.errors import KafkaStorageError

UNDEFINED = (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)


def cache_at(tmp_path: Path, *entries: tuple[int, int]) -> LeaderEpochFileCache:
    cache = LeaderEpochFileCache(tmp_path / "leader-epoch-checkpoint", topic="t", partition=0)
    for epoch, start in entries:
        cache.assign(epoch, start)
    return cache


def test_file_format_is_byte_exact(tmp_path: Path) -> None:
    cache = cache_at(tmp_path, (0, 0), (3, 17))
    assert (tmp_path / "leader-epoch-checkpoint").read_bytes() == b"0\n2\n0 0\n3 17\n"
    again = LeaderEpochFileCache(tmp_path / "leader-epoch-checkpoint", topic="t", partition=0)
    assert again.entries == cache.entries == [EpochEntry(0, 0), EpochEntry(3, 17)]


def test_empty_cache_file(tmp_path: Path) -> None:
    cache = cache_at(tmp_path)
    assert cache.latest_epoch is None
    cache.flush()
    assert (tmp_path / "leader-epoch-checkpoint").read_bytes() == b"0\n0\n"


def test_malformed_file_raises(tmp_path: Path) -> None:
    (tmp_path / "leader-epoch-checkpoint").write_text("0\n1\n3\n")
    with pytest.raises(KafkaStorageError, match="line 3"):
        cache_at(tmp_path)


class TestAssign:
    def test_same_epoch_later_offset_is_ignored(self, tmp_path: Path) -> None:
        cache = cache_at(tmp_path, (2, 10))
        assert not cache.assign(2, 15)
        assert cache.entries == [EpochEntry(2, 10)]

    def test_same_epoch_earlier_offset_replaces(self, tmp_path: Path) -> None:
        cache = cache_at(tmp_path, (1, 0), (2, 10))
        assert cache.assign(2, 5)
        assert cache.entries == [EpochEntry(1, 0), EpochEntry(2, 5)]

    def test_newer_epoch_is_appended(self, tmp_path: Path) -> None:
        cache = cache_at(tmp_path, (1, 0))
        assert cache.assign(4, 20)
        assert cache.latest_epoch == 4
        assert cache.latest_entry == EpochEntry(4, 20)
        assert cache.earliest_entry == EpochEntry(1, 0)

    def test_conflicting_entries_are_removed(self, tmp_path: Path) -> None:
        cache = cache_at(tmp_path, (1, 0), (2, 10), (3, 20))
        # An older epoch at an offset that later epochs cover wins over them (Kafka's rule:
        # drop every entry with an epoch >= new or a start offset >= new).
        cache.assign(2, 8)
        assert cache.entries == [EpochEntry(1, 0), EpochEntry(2, 8)]
        cache.assign(5, 0)
        assert cache.entries == [EpochEntry(5, 0)]

    def test_rejects_negative(self, tmp_path: Path) -> None:
        with pytest.raises(ValueError):
            cache_at(tmp_path).assign(-1, 0)


class TestEndOffsetFor:
    @pytest.fixture
    def cache(self, tmp_path: Path) -> LeaderEpochFileCache:
        return cache_at(tmp_path, (2, 10), (4, 25), (7, 40))

    def test_undefined_epoch(self, cache: LeaderEpochFileCache) -> None:
        assert cache.end_offset_for(UNDEFINED_EPOCH, 60) == UNDEFINED

    def test_latest_epoch_ends_at_log_end(self, cache: LeaderEpochFileCache) -> None:
        assert cache.end_offset_for(7, 60) == (7, 60)

    def test_known_epoch_ends_where_next_starts(self, cache: LeaderEpochFileCache) -> None:
        assert cache.end_offset_for(2, 60) == (2, 25)
        assert cache.end_offset_for(4, 60) == (4, 40)

    def test_unknown_epoch_between_uses_largest_below(self, cache: LeaderEpochFileCache) -> None:
        assert cache.end_offset_for(3, 60) == (2, 25)
        assert cache.end_offset_for(6, 60) == (4, 40)

    def test_epoch_below_earliest_ends_at_earliest_start(self, cache: LeaderEpochFileCache) -> None:
        assert cache.end_offset_for(1, 60) == (1, 10)
        assert cache.end_offset_for(0, 60) == (0, 10)

    def test_epoch_above_latest_is_undefined(self, cache: LeaderEpochFileCache) -> None:
        assert cache.end_offset_for(8, 60) == UNDEFINED

    def test_empty_cache(self, tmp_path: Path) -> None:
        assert cache_at(tmp_path).end_offset_for(0, 60) == UNDEFINED


class TestTruncation:
    def test_truncate_from_end_removes_entries_starting_at_or_after(self, tmp_path: Path) -> None:
        cache = cache_at(tmp_path, (2, 10), (4, 25), (7, 40))
        cache.truncate_from_end(41)
        assert cache.latest_epoch == 7
        cache.truncate_from_end(25)
        assert cache.entries == [EpochEntry(2, 10)]
        assert (tmp_path / "leader-epoch-checkpoint").read_bytes() == b"0\n1\n2 10\n"

    def test_truncate_from_start_keeps_covering_entry_moved_up(self, tmp_path: Path) -> None:
        cache = cache_at(tmp_path, (2, 10), (4, 25), (7, 40))
        cache.truncate_from_start(30)
        assert cache.entries == [EpochEntry(4, 30), EpochEntry(7, 40)]
        cache.truncate_from_start(40)
        assert cache.entries == [EpochEntry(7, 40)]
        cache.truncate_from_start(5)  # below everything: nothing to do
        assert cache.entries == [EpochEntry(7, 40)]
        assert (tmp_path / "leader-epoch-checkpoint").read_bytes() == b"0\n1\n7 40\n"

    def test_clear(self, tmp_path: Path) -> None:
        cache = cache_at(tmp_path, (2, 10))
        cache.clear()
        assert cache.entries == []
        assert (tmp_path / "leader-epoch-checkpoint").read_bytes() == b"0\n0\n"

    def test_epoch_for_offset(self, tmp_path: Path) -> None:
        cache = cache_at(tmp_path, (2, 10), (4, 25))
        assert cache.epoch_for_offset(5) is None
        assert cache.epoch_for_offset(10) == 2
        assert cache.epoch_for_offset(24) == 2
        assert cache.epoch_for_offset(99) == 4
        assert cache.previous_epoch(4) == 2
        assert cache.previous_epoch(2) is None


def test_an_assignment_left_to_a_later_write(tmp_path: Path) -> None:
    path = tmp_path / "leader-epoch-checkpoint"
    cache = cache_at(tmp_path, (0, 0))
    assert not cache.dirty
    cache.assign(2, 10, flush=False)
    assert cache.dirty and cache.latest_epoch == 2  # answers from memory at once
    assert path.read_bytes() == b"0\n1\n0 0\n"
    older = cache.snapshot()
    cache.assign(3, 12, flush=False)
    newer = cache.snapshot()
    cache.write(newer)
    assert not cache.dirty
    assert path.read_bytes() == b"0\n3\n0 0\n2 10\n3 12\n"
    cache.write(older)  # a worker thread that ran late never puts an older file back
    assert path.read_bytes() == b"0\n3\n0 0\n2 10\n3 12\n"
    cache.truncate_from_end(12)  # written at once, as every other change
    assert path.read_bytes() == b"0\n2\n0 0\n2 10\n" and not cache.dirty
