"""The log cleaner next to everything else that changes a log: followers copying a cleaned
leader, a changed cleanup.policy, topic deletion, truncation and refetching during a cleaning,
broker shutdown. Each case, done wrong, loses records or brings deleted ones back."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

from minikafka.broker.storage.checkpoints import (
    CLEANER_OFFSET_CHECKPOINT,
    CleanerCheckpoint,
    OffsetCheckpointFile,
)
from minikafka.broker.storage.cleaner import (
    CleanerConfig,
    CleaningAbortedError,
    LogCleaner,
    clean_log,
    open_plan,
    plan_cleaning,
)
from minikafka.broker.storage.config import LogConfig
from minikafka.broker.storage.log import Log
from minikafka.broker.storage.log_manager import LogManager
from minikafka.proto.common import TopicPartition
from minikafka.proto.records import decode_records, encode_batch, iter_batch_headers
from tests.unit.storage.helpers import T0, Clock, batch, read_all, small_config

DAY_MS = 86_400_000
TP = TopicPartition("t", 0)


def compacted(**overrides: object) -> LogConfig:
    return small_config(cleanup_policy=frozenset({"compact"}), **overrides)


def put(log: Log, key: bytes, value: bytes | None, *, epoch: int = 1, gap: int = 0) -> None:
    """A follower's append of one record fetched from its leader, ``gap`` offsets past the LEO
    (what a cleaned leader sends)."""
    data = encode_batch(
        [(T0, key, value, ())],
        base_offset=log.log_end_offset + gap,
        partition_leader_epoch=epoch,
    )
    log.append_as_follower(data)


def values_of(log: Log, key: bytes) -> list[bytes | None]:
    return [record.value for record in decode_records(read_all(log)) if record.key == key]


# --- 1, 2: gaps a follower copies are kept by recovery -------------------------------------


def test_a_follower_segment_rolled_at_a_batch_after_a_gap_survives_recovery(
    tmp_path: Path,
) -> None:
    # A fetched batch after a range the leader's cleaner removed, with the active segment
    # full, starts a new segment at its own base offset, above where the previous one ends.
    clock = Clock()
    config = compacted()
    log = Log(tmp_path / "t-0", config, time_ms=clock)
    offset = 0
    while log.active_segment.size < 900:
        log.append_as_follower(batch(3, base_offset=offset, tag=offset))
        offset += 3
    log.append_as_follower(batch(3, base_offset=offset + 10, tag=1))
    log.append_as_follower(batch(3, base_offset=offset + 13, tag=2))
    assert [s.base_offset for s in log.segments][-1] == offset + 10
    before, leo = read_all(log), log.log_end_offset
    log.flush()
    # Killed: no close, no clean-shutdown marker; everything from 0 is recovered.
    reopened = Log(tmp_path / "t-0", config, recovery_point=0, time_ms=clock)
    assert (reopened.log_end_offset, read_all(reopened)) == (leo, before)


def test_gaps_a_follower_copied_survive_a_change_of_policy_to_delete(tmp_path: Path) -> None:
    clock = Clock()
    log = Log(tmp_path / "t-0", compacted(segment_bytes=100_000), time_ms=clock)
    put(log, b"k0", b"v")
    for i in range(1, 20):
        put(log, b"k%d" % i, b"v", gap=4)
    before, leo = read_all(log), log.log_end_offset
    log.flush()
    # The first gap made the log one that may have gaps, durably, before the gap was written.
    assert TP in OffsetCheckpointFile(tmp_path / CLEANER_OFFSET_CHECKPOINT).read()
    deleting = small_config(segment_bytes=100_000)  # cleanup.policy altered, broker killed
    reopened = Log(tmp_path / "t-0", deleting, recovery_point=0, time_ms=clock)
    assert (reopened.log_end_offset, read_all(reopened)) == (leo, before)


def test_a_dense_follower_log_stays_strict(tmp_path: Path) -> None:
    # No gap fetched: no entry, and a log that is not compacted keeps refusing gaps.
    log = Log(tmp_path / "t-0", small_config(), time_ms=Clock())
    for i in range(5):
        put(log, b"k%d" % i, b"v")
    assert log.cleaner_checkpoint.get(TP) is None
    assert not log.may_have_gaps


# --- 3: the checkpoint entry goes with the log, and comes down with truncation -------------


def fill(log: Log, count: int, prefix: str) -> None:
    for i in range(count):
        log.append_as_leader(encode_batch([(T0, f"{prefix}{i}".encode(), b"v" * 20, ())]), 1)


def test_a_topic_created_again_does_not_inherit_the_cleaner_checkpoint(tmp_path: Path) -> None:
    clock = Clock()
    config = compacted(delete_retention_ms=DAY_MS)
    manager = LogManager([tmp_path], config, broker_id=1, time_ms=clock)
    cleaner = LogCleaner(CleanerConfig(), time_ms=clock)
    log = manager.get_or_create_log("t", 0)
    fill(log, 200, "old")
    log.roll()
    assert clean_log(cleaner, log, force=True) is not None
    assert cleaner.first_dirty_offset(log) > 2
    manager.delete_log("t", 0)
    assert TP not in OffsetCheckpointFile(tmp_path / CLEANER_OFFSET_CHECKPOINT).read()
    log = manager.get_or_create_log("t", 0)
    log.append_as_leader(encode_batch([(T0, b"K", b"secret", ())]), 1)  # offset 0
    log.append_as_leader(encode_batch([(T0, b"K", None, ())]), 1)  # offset 1 deletes K
    fill(log, 250, "new")
    log.roll()
    assert cleaner.first_dirty_offset(log) == 0
    clean_log(cleaner, log, force=True)
    clock.advance(DAY_MS + 1)
    fill(log, 5, "more")
    log.roll()
    clean_log(cleaner, log, force=True)
    assert values_of(log, b"K") == []
    manager.close()


def test_a_log_created_where_none_exists_drops_a_stale_entry(tmp_path: Path) -> None:
    # The directory went without delete_log (by hand, or a crash between the rename and the
    # entry's removal): the new log still starts dirty from 0.
    clock = Clock()
    config = compacted(delete_retention_ms=DAY_MS)
    cleaner = LogCleaner(CleanerConfig(), time_ms=clock)
    log = Log(tmp_path / "t-0", config, time_ms=clock)
    fill(log, 200, "old")
    log.roll()
    assert clean_log(cleaner, log, force=True) is not None
    log.close()
    shutil.rmtree(tmp_path / "t-0")
    log = Log(tmp_path / "t-0", config, time_ms=clock)
    assert cleaner.first_dirty_offset(log) == 0
    assert TP not in OffsetCheckpointFile(tmp_path / CLEANER_OFFSET_CHECKPOINT).read()


def test_loading_drops_the_entries_of_logs_whose_deletion_a_crash_interrupted(
    tmp_path: Path,
) -> None:
    manager = LogManager([tmp_path], compacted(), broker_id=1, time_ms=Clock())
    manager.get_or_create_log("t", 0)
    manager.close()
    OffsetCheckpointFile(tmp_path / CLEANER_OFFSET_CHECKPOINT).write({TP: 5, ("gone", 0): 7})
    CleanerCheckpoint._instances.clear()  # a new process
    manager = LogManager([tmp_path], compacted(), broker_id=1, time_ms=Clock())
    assert OffsetCheckpointFile(tmp_path / CLEANER_OFFSET_CHECKPOINT).read() == {TP: 5}
    manager.close()


def test_truncation_lowers_the_cleaner_checkpoint(tmp_path: Path) -> None:
    clock = Clock()
    log = Log(tmp_path / "t-0", compacted(), time_ms=clock)
    cleaner = LogCleaner(CleanerConfig(), time_ms=clock)
    for i in range(120):
        put(log, b"k%d" % (i % 7), b"v" * 20)
    log.roll()
    put(log, b"x", b"y")
    assert clean_log(cleaner, log, force=True) is not None
    checkpoint = cleaner.first_dirty_offset(log)
    assert checkpoint > 60
    log.truncate_to(60)
    lowered = cleaner.first_dirty_offset(log)
    assert lowered <= 60 and lowered <= log.log_end_offset
    assert lowered == log.active_segment.base_offset  # as Kafka: the new active segment's base
    log.truncate_fully_and_start_at(10)
    assert cleaner.first_dirty_offset(log) == 10
    assert log.cleaner_checkpoint.get(TP) is not None  # lowered, never removed


# --- 4, 5: a log truncated or refetched during a cleaning is not swapped -------------------


def test_a_truncation_during_a_cleaning_refuses_its_swap(tmp_path: Path) -> None:
    # The map was built from records the truncation removes: nothing of the cleaning may be
    # installed, not even the groups below the truncation point.
    clock = Clock()
    log = Log(tmp_path / "t-0", compacted(segment_bytes=100_000), time_ms=clock)
    put(log, b"K", b"old")
    for i in range(10):
        put(log, b"a%d" % i, b"x" * 9000)
    log.roll()
    for i in range(10):
        put(log, b"b%d" % i, b"x" * 9000)
    log.roll()
    third = log.log_end_offset
    put(log, b"K", b"new")
    for i in range(10):
        put(log, b"c%d" % i, b"x" * 9000)
    log.roll()
    put(log, b"z", b"z")
    cleaner = LogCleaner(CleanerConfig(), time_ms=clock)
    plan, _ = plan_cleaning(log, first_dirty_offset=0, now_ms=clock())
    assert plan is not None
    result = cleaner.clean(plan)  # the worker thread
    log.truncate_to(third)  # meanwhile on the loop: an unclean leader election
    assert not cleaner.swap(log, result)
    assert values_of(log, b"K") == [b"old"]
    assert not list(tmp_path.glob("t-0/*.cleaned"))


def test_a_log_truncated_and_refilled_to_the_same_sizes_is_not_swapped(tmp_path: Path) -> None:
    clock = Clock()
    log = Log(tmp_path / "t-0", compacted(), time_ms=clock)
    for i in range(60):
        put(log, b"k%02d" % (i % 20), b"A" * 20)
    log.roll()
    put(log, b"x", b"y")
    cleaner = LogCleaner(CleanerConfig(), time_ms=clock)
    plan, _ = plan_cleaning(log, first_dirty_offset=0, now_ms=clock())
    assert plan is not None
    result = cleaner.clean(plan)
    bases = [s.base_offset for s in log.segments]
    log.truncate_to(bases[1])  # a divergent history refetched: same offsets, same sizes
    while log.log_end_offset < 60:
        put(log, b"k%02d" % (log.log_end_offset % 20), b"B" * 20, epoch=2)
    log.roll()
    put(log, b"x", b"y", epoch=2)
    assert [s.base_offset for s in log.segments] == bases
    assert not cleaner.swap(log, result)
    refetched = {r.value for r in decode_records(read_all(log)) if bases[1] <= r.offset < 60}
    assert refetched == {b"B" * 20}


def test_a_swap_refuses_a_segment_file_that_is_not_the_one_read(tmp_path: Path) -> None:
    # Same base offsets, same sizes, same generation, another file: refused on its inode.
    clock = Clock()
    log = Log(tmp_path / "t-0", compacted(), time_ms=clock)
    for i in range(30):
        put(log, b"k%d" % (i % 5), b"A" * 20)
    log.roll()
    put(log, b"x", b"y")
    segment = log.segments[0]
    replaced = ((segment.base_offset, segment.size, segment.inode + 1),)
    name = segment.path.name
    for suffix in ("", ".index", ".timeindex"):  # stand-in .cleaned files
        target = name if not suffix else name.replace(".log", suffix)
        (tmp_path / "t-0" / (target + ".cleaned")).write_bytes(b"")
    assert not log.replace_with_cleaned(segment.base_offset, replaced, generation=log.generation)
    assert not list(tmp_path.glob("t-0/*.cleaned"))


def test_the_worker_reads_the_files_planned_even_when_they_are_replaced(tmp_path: Path) -> None:
    clock = Clock()
    log = Log(tmp_path / "t-0", compacted(), time_ms=clock)
    for i in range(30):
        put(log, b"k%d" % (i % 5), b"A" * 20)
    log.roll()
    put(log, b"x", b"y")
    plan, _ = plan_cleaning(log, first_dirty_offset=0, now_ms=clock())
    assert plan is not None
    opened = open_plan(log, plan)
    path = opened.segments[0].path
    os.rename(path, path.with_name("moved"))  # the name now reaches nothing
    result = LogCleaner(CleanerConfig(), time_ms=clock).clean(opened)
    assert result.records_read == 30
    for ref in opened.segments:  # the worker closed its descriptors
        with pytest.raises(OSError):
            os.fstat(ref.fd)


# --- 6: emptied batches do not pile up ------------------------------------------------------


def test_emptied_batches_do_not_pile_up(tmp_path: Path) -> None:
    clock = Clock()
    log = Log(tmp_path / "t-0", compacted(), time_ms=clock)
    cleaner = LogCleaner(CleanerConfig(), time_ms=clock)
    empties: list[int] = []
    for _ in range(6):
        for i in range(60):
            log.append_as_leader(encode_batch([(T0, b"k%d" % (i % 3), b"v" * 30, ())]), 1)
        log.roll()
        clean_log(cleaner, log, force=True)
        headers = [h for _, h in iter_batch_headers(read_all(log))]
        empties.append(sum(h.record_count == 0 for h in headers))
        # At most one empty batch per segment: the one that keeps where the segment ends.
        assert empties[-1] <= log.number_of_segments
    assert empties[-1] <= empties[1]


# --- 8: shutdown stops a cleaning within a batch -------------------------------------------


def test_shutdown_stops_a_cleaning_under_way(tmp_path: Path) -> None:
    clock = Clock()
    stopping = threading.Event()
    cleaner: LogCleaner

    def fault(step: str) -> None:
        if step == "build_map":  # the map is built: SIGTERM arrives now
            cleaner.shutdown()
            stopping.set()

    cleaner = LogCleaner(CleanerConfig(), time_ms=clock, fault=fault)
    log = Log(tmp_path / "t-0", compacted(), time_ms=clock)
    for i in range(200):
        put(log, b"k%d" % (i % 9), b"v" * 20)
    log.roll()
    put(log, b"x", b"y")
    before = read_all(log)
    with pytest.raises(CleaningAbortedError):
        clean_log(cleaner, log, force=True)
    assert stopping.is_set()
    assert not list(tmp_path.glob("t-0/*.cleaned"))
    assert read_all(log) == before
