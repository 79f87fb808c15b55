"""The log cleaner against a model: the latest record of each key survives at its offset,
tombstones go after delete.retention.ms, sparse offsets stay readable and recoverable."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
from pathlib import Path

import pytest

from minikafka.broker.storage.checkpoints import CleanerCheckpoint, OffsetCheckpointFile
from minikafka.broker.storage.cleaner import (
    CLEANER_OFFSET_CHECKPOINT,
    CleanerConfig,
    LogCleaner,
    clean_log,
    run_cleaner_thread,
)
from minikafka.broker.storage.log import Log
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode, RecordValidationError
from minikafka.proto.records import (
    Compression,
    Record,
    decode_records,
    encode_batch,
    iter_batch_headers,
)
from tests.unit.storage.helpers import T0, Clock, memory_records, read_all, small_config

DAY_MS = 24 * 60 * 60 * 1000
Model = dict[bytes, tuple[int, bytes | None]]  # key -> (offset, value) of its latest record


def compact_config(**overrides: object) -> object:
    return small_config(cleanup_policy=frozenset({"compact"}), **overrides)


def open_log(directory: Path, clock: Clock, **overrides: object) -> Log:
    return Log(directory, compact_config(**overrides), time_ms=clock)  # type: ignore[arg-type]


def produce(
    log: Log,
    model: Model,
    rng: random.Random,
    batches: int,
    *,
    keys: int = 8,
    tombstone_share: float = 0.1,
    compression: Compression = Compression.NONE,
    producer_id: int = -1,
    clock: Clock | None = None,
    epoch: int = 1,
) -> None:
    """Append ``batches`` batches of 1-4 random updates of ``keys`` keys; ``model`` follows."""
    for _ in range(batches):
        count = rng.randint(1, 4)
        records = []
        for _ in range(count):
            key = f"key-{rng.randrange(keys)}".encode()
            value = None if rng.random() < tombstone_share else rng.randbytes(rng.randint(5, 30))
            records.append((clock() if clock else T0, key, value, ()))
        sequence = 0 if producer_id >= 0 else -1
        data = encode_batch(
            records,
            compression=compression,
            producer_id=producer_id,
            producer_epoch=0 if producer_id >= 0 else -1,
            base_sequence=sequence,
        )
        info = log.append_as_leader(data, leader_epoch=epoch)
        for offset, (_, key, value, _) in enumerate(records, start=info.first_offset):
            model[key] = (offset, value)


def records_of(log: Log) -> list[Record]:
    return list(decode_records(read_all(log)))


def latest_per_key(records: list[Record]) -> Model:
    out: Model = {}
    for record in records:
        assert record.key is not None
        out[record.key] = (record.offset, record.value)
    return out


def check_against_model(log: Log, model: Model, appended: dict[int, Record]) -> list[Record]:
    records = records_of(log)
    offsets = [r.offset for r in records]
    assert offsets == sorted(set(offsets)), "offsets must grow"
    for record in records:  # every survivor is the record appended at that offset
        original = appended[record.offset]
        assert (record.key, record.value, record.timestamp) == (
            original.key,
            original.value,
            original.timestamp,
        )
    latest = latest_per_key(records)
    assert {k: v for k, v in latest.items() if v[1] is not None} == {
        k: v for k, v in model.items() if v[1] is not None
    }
    return records


def appended_records(log: Log) -> dict[int, Record]:
    return {r.offset: r for r in records_of(log)}


def test_keeps_the_latest_record_of_each_key_at_its_offset(tmp_path: Path) -> None:
    clock = Clock()
    log = open_log(tmp_path / "compacted-0", clock)
    rng = random.Random(7)
    model: Model = {}
    produce(log, model, rng, 300)
    appended = appended_records(log)
    size_before = log.size
    cleaner = LogCleaner(CleanerConfig(), time_ms=clock)
    result = clean_log(cleaner, log, force=True)
    assert result is not None and result.groups
    assert log.size < size_before / 2
    records = check_against_model(log, model, appended)
    # In the cleaned part, one record per key: the latest of the mapped range.
    cleaned_end = result.end_offset
    cleaned = [r for r in records if r.offset < cleaned_end]
    keys = [r.key for r in cleaned]
    assert len(keys) == len(set(keys))
    # The checkpoint holds where the next cleaning starts.
    checkpoint = OffsetCheckpointFile(tmp_path / CLEANER_OFFSET_CHECKPOINT).read()
    assert checkpoint == {TopicPartition("compacted", 0): cleaned_end}
    # The active segment is never cleaned.
    assert log.active_segment.base_offset >= cleaned_end


def test_a_fetch_at_any_offset_returns_the_next_survivor(tmp_path: Path) -> None:
    clock = Clock()
    log = open_log(tmp_path / "compacted-0", clock)
    model: Model = {}
    produce(log, model, random.Random(3), 200, keys=5)
    clean_log(LogCleaner(CleanerConfig(), time_ms=clock), log, force=True)
    surviving = [r.offset for r in records_of(log)]
    for offset in range(log.log_start_offset, log.log_end_offset):
        expected = next((o for o in surviving if o >= offset), None)
        records = memory_records(log.read(offset, 1 << 20).records)
        later = [r.offset for r in decode_records(records) if r.offset >= offset]
        assert (later[0] if later else None) == expected, offset


def test_cleaned_log_reopens_after_an_unclean_shutdown(tmp_path: Path) -> None:
    clock = Clock()
    log = open_log(tmp_path / "compacted-0", clock)
    model: Model = {}
    rng = random.Random(11)
    for epoch in (1, 2, 3):  # leader epochs survive cleaning
        log.maybe_assign_epoch_start_offset(epoch, log.log_end_offset)
        produce(log, model, rng, 70, epoch=epoch)
    epochs = log.leader_epoch_cache.entries
    assert len(epochs) == 3
    clean_log(LogCleaner(CleanerConfig(), time_ms=clock), log, force=True)
    assert log.leader_epoch_cache.entries == epochs
    before = read_all(log)
    leo, segments = log.log_end_offset, len(log.segments)
    log.flush()
    log.close()
    reopened = Log(log.dir, compact_config(), recovery_point=0, time_ms=clock)  # type: ignore[arg-type]
    assert (reopened.log_end_offset, len(reopened.segments)) == (leo, segments)
    assert read_all(reopened) == before
    assert reopened.leader_epoch_cache.entries == epochs
    assert reopened.end_offset_for_epoch(2) == (2, epochs[2].start_offset)


def test_a_cleaned_log_whose_policy_became_delete_keeps_its_gaps_on_recovery(
    tmp_path: Path,
) -> None:
    # Gaps are refused as damage where cleaning cannot have made them (the CRC does not cover
    # a batch's base offset), but a log with an entry in the cleaner's checkpoint may hold them
    # even once the topic is no longer compacted: recovery keeps them.
    clock = Clock()
    log = open_log(tmp_path / "compacted-0", clock)
    produce(log, {}, random.Random(5), 200, keys=5)
    result = clean_log(LogCleaner(CleanerConfig(), time_ms=clock), log, force=True)
    assert result is not None
    before, leo = read_all(log), log.log_end_offset
    log.flush()
    log.close()
    tp = TopicPartition("compacted", 0)
    assert tp in OffsetCheckpointFile(tmp_path / CLEANER_OFFSET_CHECKPOINT).read()
    deleting = small_config()  # cleanup.policy=delete
    reopened = Log(log.dir, deleting, recovery_point=0, time_ms=clock)
    assert (reopened.log_end_offset, read_all(reopened)) == (leo, before)
    reopened.close()
    # Without the entry the same gaps read as damage: the log is cut at the first one.
    CleanerCheckpoint.of(tmp_path).remove(tp)
    blind = Log(log.dir, deleting, recovery_point=0, time_ms=clock)
    assert blind.log_end_offset < leo


def test_tombstones_go_after_delete_retention(tmp_path: Path) -> None:
    clock = Clock()
    log = open_log(tmp_path / "compacted-0", clock, delete_retention_ms=DAY_MS)
    model: Model = {}
    produce(log, model, random.Random(5), 300, tombstone_share=0.3)
    appended = appended_records(log)
    cleaner = LogCleaner(CleanerConfig(), time_ms=clock)
    result = clean_log(cleaner, log, force=True)
    assert result is not None
    cleaned_end = result.end_offset
    tombstones = [r for r in records_of(log) if r.value is None and r.offset < cleaned_end]
    assert tombstones, "the first cleaning keeps tombstones (and sets their delete horizon)"
    headers = [h for _, h in iter_batch_headers(read_all(log))]
    assert any(h.delete_horizon_ms == clock() + DAY_MS for h in headers)
    # Within delete.retention.ms another cleaning keeps them.
    log.append_as_leader(encode_batch([(T0, b"other", b"x", ())]), 1)
    log.roll()
    clock.advance(DAY_MS - 1)
    clean_log(cleaner, log, force=True)
    assert [r for r in records_of(log) if r.value is None and r.offset < cleaned_end]
    # After it, they go, and so does every older record of their key.
    clock.advance(2)
    info = log.append_as_leader(encode_batch([(T0, b"other", b"y", ())]), 1)
    model[b"other"] = (info.first_offset, b"y")
    log.roll()
    clean_log(cleaner, log, force=True)
    records = check_against_model(log, model, appended | appended_records(log))
    gone = {r.key for r in tombstones}
    assert not [r for r in records if r.key in gone and r.offset < cleaned_end]


def test_compressed_batches_are_recompressed_with_their_codec(tmp_path: Path) -> None:
    clock = Clock()
    log = open_log(tmp_path / "compacted-0", clock)
    model: Model = {}
    produce(log, model, random.Random(9), 200, compression=Compression.LZ4)
    appended = appended_records(log)
    clean_log(LogCleaner(CleanerConfig(), time_ms=clock), log, force=True)
    check_against_model(log, model, appended)
    codecs = {h.compression for _, h in iter_batch_headers(read_all(log)) if h.record_count}
    assert codecs == {Compression.LZ4}


def test_segments_still_follow_on_and_producer_last_batches_stay(tmp_path: Path) -> None:
    clock = Clock()
    log = open_log(tmp_path / "compacted-0", clock)
    model: Model = {}
    produce(log, model, random.Random(2), 150, keys=3, producer_id=42)
    last_batch = [h for _, h in iter_batch_headers(read_all(log))][-1]
    # That batch's records are superseded by a later producer-less one, in the same segment.
    keys = [k for k, (o, _) in model.items() if o >= last_batch.base_offset]
    log.append_as_leader(encode_batch([(T0, k, b"newer", ()) for k in keys]), 1)
    log.roll()
    clean_log(
        LogCleaner(CleanerConfig(), time_ms=clock),
        log,
        force=True,
        producer_last_offsets=frozenset({last_batch.last_offset}),
    )
    data = read_all(log)
    headers = [h for _, h in iter_batch_headers(data)]
    kept = [h for h in headers if h.base_offset == last_batch.base_offset]
    assert kept and kept[0].last_offset == last_batch.last_offset
    assert kept[0].last_sequence == last_batch.last_sequence
    segments = log.segments
    for previous, following in itertools.pairwise(segments):
        assert previous.read_next_offset() == following.base_offset


def test_the_map_filling_up_cleans_what_it_covered(tmp_path: Path) -> None:
    clock = Clock()
    log = open_log(tmp_path / "compacted-0", clock)
    model: Model = {}
    produce(log, model, random.Random(4), 300, keys=40)
    appended = appended_records(log)
    # Room for 10 keys only: several rounds, each cleaning up to where its map filled.
    tiny = CleanerConfig(dedupe_buffer_size=int(10 * 24 / 0.9) + 1)
    cleaner = LogCleaner(tiny, time_ms=clock)
    ends = []
    for _ in range(100):
        result = clean_log(cleaner, log, force=True)
        if result is None:
            break
        ends.append(result.end_offset)
        check_against_model(log, model, appended)
    assert len(ends) > 2 and ends == sorted(ends)


def test_keyless_records_are_refused_in_a_compacted_topic(tmp_path: Path) -> None:
    log = open_log(tmp_path / "compacted-0", Clock())
    batch = [(T0, b"k", b"v", ()), (T0, None, b"v", ()), (T0, b"k", b"v", ()), (T0, None, b"", ())]
    with pytest.raises(RecordValidationError) as raised:
        log.append_as_leader(encode_batch(batch), 1)
    assert raised.value.code is ErrorCode.INVALID_RECORD
    assert "Compacted topic cannot accept message without key" in str(raised.value)
    # KIP-467: the refusal names the keyless records by their index in the batch.
    assert [e.batch_index for e in raised.value.record_errors] == [1, 3]
    assert raised.value.record_errors[0].message == (
        "Compacted topic cannot accept message without key in topic partition compacted-0."
    )
    assert log.log_end_offset == 0
    plain = Log(tmp_path / "plain-0", small_config(), time_ms=Clock())
    plain.append_as_leader(encode_batch([(T0, None, b"v", ())]), 1)


def test_a_follower_copies_a_cleaned_log_with_its_gaps(tmp_path: Path) -> None:
    clock = Clock()
    leader = open_log(tmp_path / "leader" / "compacted-0", clock)
    model: Model = {}
    produce(leader, model, random.Random(8), 200)
    clean_log(LogCleaner(CleanerConfig(), time_ms=clock), leader, force=True)
    follower = open_log(tmp_path / "follower" / "compacted-0", clock)
    while follower.log_end_offset < leader.log_end_offset:
        info = leader.read(follower.log_end_offset, 1000)
        follower.append_as_follower(memory_records(info.records))
    assert read_all(follower) == read_all(leader)


def test_logs_below_the_dirty_ratio_wait(tmp_path: Path) -> None:
    clock = Clock()
    log = open_log(tmp_path / "compacted-0", clock, min_cleanable_dirty_ratio=0.9)
    model: Model = {}
    produce(log, model, random.Random(1), 100)
    cleaner = LogCleaner(CleanerConfig(), time_ms=clock)
    tp = TopicPartition("compacted", 0)
    assert cleaner.grab_filthiest_log({tp: log}) is not None  # all dirty: ratio 1
    cleaner._in_progress.clear()
    clean_log(cleaner, log, force=True)
    produce(log, model, random.Random(2), 3)
    log.roll()
    assert cleaner.grab_filthiest_log({tp: log}) is None
    # max.compaction.lag.ms makes a log cleanable whatever its ratio.
    log.update_config(compact_config(min_cleanable_dirty_ratio=0.9, max_compaction_lag_ms=1000))  # type: ignore[arg-type]
    clock.advance(1001)
    assert cleaner.grab_filthiest_log({tp: log}) is not None


def test_min_compaction_lag_keeps_recent_segments_dirty(tmp_path: Path) -> None:
    clock = Clock()
    log = open_log(tmp_path / "compacted-0", clock, min_compaction_lag_ms=DAY_MS)
    model: Model = {}
    produce(log, model, random.Random(1), 100, clock=clock)
    cleaner = LogCleaner(CleanerConfig(), time_ms=clock)
    assert clean_log(cleaner, log, force=True) is None
    clock.advance(DAY_MS + 1)
    assert clean_log(cleaner, log, force=True) is not None


def test_no_deleted_key_comes_back_when_the_map_fills_up(tmp_path: Path) -> None:
    clock = Clock()
    log = open_log(tmp_path / "compacted-0", clock, delete_retention_ms=DAY_MS)
    for key, value in [(b"k", b"old"), (b"x", b"1"), (b"y", b"1"), (b"z", b"1"), (b"k", None)]:
        log.append_as_leader(encode_batch([(T0, key, value, ())]), 1)
    log.roll()
    log.append_as_leader(encode_batch([(T0, b"x", b"2", ())]), 1)
    log.roll()
    # A map of two keys: the first cleaning maps k and x and stops before the tombstone of k
    # (offset 4); the second maps y and z and stops before it again. Had the first given the
    # tombstone its delete horizon, the second would drop it, and k's old value come back.
    two_keys = CleanerConfig(dedupe_buffer_size=int(2 * 24 / 0.9) + 1)
    cleaner = LogCleaner(two_keys, time_ms=clock)
    for _ in range(4):
        clean_log(cleaner, log, force=True)
        latest = latest_per_key(records_of(log))
        assert latest.get(b"k", (0, None))[1] is None, latest
        clock.advance(2 * DAY_MS)


def test_a_cleaner_thread_cleans_off_the_loop_and_swaps_on_it(tmp_path: Path) -> None:
    clock = Clock()
    log = open_log(tmp_path / "compacted-0", clock)
    model: Model = {}
    produce(log, model, random.Random(6), 200)
    appended = appended_records(log)
    size = log.size
    cleaner = LogCleaner(CleanerConfig(backoff_ms=10), time_ms=clock)
    tp = TopicPartition("compacted", 0)

    async def run() -> None:
        task = asyncio.create_task(run_cleaner_thread(cleaner, lambda: {tp: log}))
        for _ in range(500):
            await asyncio.sleep(0.01)
            if log.size < size:
                break
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(run())
    assert log.size < size / 2
    check_against_model(log, model, appended)


def test_the_segments_a_cleaning_replaces_wait_file_delete_delay_as_deleted(
    tmp_path: Path,
) -> None:
    clock = Clock()
    log = open_log(tmp_path / "compacted-0", clock, file_delete_delay_ms=5_000)
    model: Model = {}
    produce(log, model, random.Random(3), 300)
    cleaner = LogCleaner(CleanerConfig(), time_ms=clock)
    clean_log(cleaner, log, force=True)
    produce(log, model, random.Random(4), 5)
    # the second cleaning groups the small cleaned segments: one replaces several
    segments_before = len(log.segments)
    result = clean_log(cleaner, log, force=True)
    assert result is not None and len(log.segments) < segments_before
    deleted = [p for p in log.dir.iterdir() if p.name.endswith(".log.deleted")]
    assert len(deleted) == segments_before - len(log.segments)
    assert log.delete_due_files(clock() + 4_999) == 0
    assert log.delete_due_files(clock() + 5_000) > 0
    assert not [p for p in log.dir.iterdir() if p.name.endswith(".deleted")]
    check_against_model(log, model, appended_records(log))
