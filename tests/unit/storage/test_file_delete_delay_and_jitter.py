"""file.delete.delay.ms and segment.jitter.ms, as Kafka's log applies them.

Retention does not unlink a segment at once: its files are renamed ``*.deleted`` and removed
file.delete.delay.ms later, so a read already under way still finds them (a broker that dies
in between removes them when it loads the log). Each segment rolls up to segment.jitter.ms
before segment.ms, a random amount per segment, so partitions created together do not all roll
at the same moment.
"""

from __future__ import annotations

from pathlib import Path

from minikafka.broker.storage.log import Log
from minikafka.broker.storage.segment import FileRecords
from tests.unit.storage.helpers import T0, Clock, batch, segment_files, small_config


def _retained(tmp_path: Path, delay_ms: int) -> tuple[Log, Clock, list[str]]:
    clock = Clock()
    log = Log(tmp_path / "t-0", small_config(file_delete_delay_ms=delay_ms), time_ms=clock)
    for n in range(30):
        log.append_as_leader(batch(3, timestamp=T0 + 10 * n, tag=n), 0)
    before = [p.name for p in segment_files(log.dir)]
    assert log.delete_old_segments(T0 + 10**9) > 0
    return log, clock, before


def test_retention_renames_segments_deleted_and_removes_them_after_the_delay(
    tmp_path: Path,
) -> None:
    log, clock, before = _retained(tmp_path, delay_ms=1000)
    gone = sorted(set(before) - {p.name for p in segment_files(log.dir)})
    assert gone
    deleted = {p.name for p in log.dir.iterdir() if p.name.endswith(".deleted")}
    for name in gone:
        stem = name.removesuffix(".log")
        assert {f"{stem}.log.deleted", f"{stem}.index.deleted"} <= deleted
    assert log.delete_due_files(clock.now_ms + 999) == 0
    assert log.delete_due_files(clock.now_ms + 1000) == len(deleted)
    assert not [p for p in log.dir.iterdir() if p.name.endswith(".deleted")]


def test_no_delay_removes_the_files_at_once(tmp_path: Path) -> None:
    log, _, _ = _retained(tmp_path, delay_ms=0)
    assert not [p for p in log.dir.iterdir() if p.name.endswith(".deleted")]


def test_loading_a_log_removes_deleted_files_left_by_a_crash(tmp_path: Path) -> None:
    log, _, _ = _retained(tmp_path, delay_ms=60_000)
    log.close()
    reopened = Log(tmp_path / "t-0", small_config())
    assert not [p for p in reopened.dir.iterdir() if p.name.endswith(".deleted")]


def test_a_segment_rolls_its_jitter_before_segment_ms(tmp_path: Path) -> None:
    config = small_config(segment_bytes=10**6, segment_ms=1000, segment_jitter_ms=10**9)
    log = Log(tmp_path / "t-0", config, time_ms=Clock())
    jitters = set()
    for n in range(40):
        ts = T0 + n * 10_000
        log.append_as_leader(batch(1, timestamp=ts, tag=n), 0)  # rolls: the last is old
        segment = log.active_segment
        jitter = segment.roll_jitter_ms
        assert 0 <= jitter < 1000  # bounded by segment.ms, as Kafka's
        jitters.add(jitter)
        # segment.ms minus this segment's jitter after its first record: not yet, then a roll
        log.append_as_leader(batch(1, timestamp=ts + 1000 - jitter - 1, tag=n), 0)
        assert log.active_segment is segment
        log.append_as_leader(batch(1, timestamp=ts + 1000 - jitter + 1, tag=n), 0)
        assert log.active_segment is not segment
    assert len(jitters) > 1  # random per segment


def test_no_jitter_by_default(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0", small_config())
    assert log.active_segment.roll_jitter_ms == 0


def test_truncation_renames_whole_segments_deleted_and_removes_them_after_the_delay(
    tmp_path: Path,
) -> None:
    # Kafka's truncateTo deletes the segments above the target asynchronously too.
    clock = Clock()
    log = Log(tmp_path / "t-0", small_config(file_delete_delay_ms=1000), time_ms=clock)
    for n in range(30):
        log.append_as_leader(batch(3, timestamp=T0 + 10 * n, tag=n), 0)
    assert len(log.segments) > 2
    target = log.segments[1].base_offset + 1
    assert log.truncate_to(target)
    assert log.log_end_offset <= target
    deleted = {p.name for p in log.dir.iterdir() if p.name.endswith(".log.deleted")}
    assert deleted
    assert log.delete_due_files(clock.now_ms + 999) == 0
    assert log.delete_due_files(clock.now_ms + 1000) > 0
    assert not [p for p in log.dir.iterdir() if p.name.endswith(".deleted")]
    log.truncate_fully_and_start_at(100)
    assert [p for p in log.dir.iterdir() if p.name.endswith(".log.deleted")]
    assert log.log_end_offset == 100


def test_records_read_before_retention_stay_readable_after_the_rename(tmp_path: Path) -> None:
    # An answer in flight holds the segment's descriptor: the rename to .deleted must not
    # close it under the answer (nor close it a second time when the answer lets go).
    clock = Clock()
    log = Log(tmp_path / "t-0", small_config(file_delete_delay_ms=60_000), time_ms=clock)
    for n in range(30):
        log.append_as_leader(batch(3, timestamp=T0 + 10 * n, tag=n), 0)
    held = log.read(0, 1 << 20, file_records=True).records
    assert isinstance(held, FileRecords)
    expected = held.read()
    assert log.delete_old_segments(T0 + 10**9) > 0
    assert held.read() == expected
    held.close()
