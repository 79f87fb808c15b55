"""The recovery point after a crash (issue 16, item 5): recovery re-reads only the segments
from the recovery point on, the recovery point follows rolled segments as they are flushed,
and damage found below it is reported to readers as corruption, never cut from the log."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from minikafka.broker.storage.log import Log
from minikafka.broker.storage.log_manager import CLEAN_SHUTDOWN_FILE, LogManager
from minikafka.proto.errors import CorruptRecordError, ErrorCode
from tests.unit.storage.helpers import (
    T0,
    Clock,
    batch,
    batch_bases,
    memory_records,
    segment_files,
    small_config,
)
from tests.unit.storage.test_recovery import locate, reopen, written_log


def flip(path: Path, position: int) -> None:
    data = bytearray(path.read_bytes())
    data[position] ^= 0x01
    path.write_bytes(bytes(data))


def test_flipped_byte_below_the_recovery_point(tmp_path: Path) -> None:
    directory, stored = written_log(tmp_path)
    segments = segment_files(directory)
    path, position = locate(directory, 3)  # the second batch of the first segment
    flip(path, position + 70)  # inside the records: only the CRC can tell
    recovery_point = int(segments[2].name[:20])
    with capture_logs() as events:
        log = reopen(directory, recovery_point=recovery_point)
    # Nothing is cut: the damaged batch and all later records stay.
    assert log.log_end_offset == 90
    assert segment_files(directory) == segments
    [loaded] = [e for e in events if e["event"] == "log.loaded"]
    assert loaded["segments_validated"] == len(segments) - 2
    # A read stops before the damaged batch; a read at it is refused as corruption.
    assert log.read(0, 1 << 20).records == stored[0]
    with capture_logs() as events, pytest.raises(CorruptRecordError) as raised:
        log.read(3, 1 << 20)
    assert raised.value.code == ErrorCode.CORRUPT_MESSAGE
    assert "offset 3" in raised.value.message
    [event] = [e for e in events if e["event"] == "log.read.corrupt_batch"]
    assert event["log_level"] == "error"
    assert (event["topic"], event["partition"], event["fetch_offset"]) == ("events", 0, 3)
    assert event["segment"] == path.name
    # Every later record is still served.
    assert memory_records(log.read(6, 1 << 20).records).startswith(stored[2])
    assert log.read(87, 1 << 20).records == stored[29]


def test_index_rebuilt_below_the_recovery_point_keeps_the_data(tmp_path: Path) -> None:
    directory, stored = written_log(tmp_path)
    segments = segment_files(directory)
    path, position = locate(directory, 3)
    flip(path, position + 70)
    segment_files(directory, ".index")[0].unlink()  # its index must be rebuilt
    with capture_logs() as events:
        log = reopen(directory, recovery_point=int(segments[2].name[:20]))
    assert log.log_end_offset == 90
    assert segment_files(directory) == segments
    assert [e["segment"] for e in events if e["event"] == "index.rebuilt"] == [path.name]
    assert not [e for e in events if e["event"] == "log.recovery.truncated"]
    with pytest.raises(CorruptRecordError):
        log.read(3, 1 << 20)
    assert log.read(6, 1).records == stored[2]


def test_damaged_batch_length_below_the_recovery_point(tmp_path: Path) -> None:
    directory, stored = written_log(tmp_path)
    segments = segment_files(directory)
    path, position = locate(directory, 6)
    data = bytearray(path.read_bytes())
    data[position + 8 : position + 12] = (1 << 30).to_bytes(4, "big")  # batchLength
    path.write_bytes(bytes(data))
    log = reopen(directory, recovery_point=int(segments[2].name[:20]))
    assert log.log_end_offset == 90
    assert log.read(0, 1 << 20).records == b"".join(stored[:2])
    # The batches from the damaged one to the end of its segment cannot be found: a read
    # there is refused rather than answered from the next segment.
    with pytest.raises(CorruptRecordError):
        log.read(6, 1 << 20)
    with pytest.raises(CorruptRecordError):
        log.read(9, 1 << 20)
    next_segment = int(segments[1].name[:20])
    assert log.read(next_segment, 1).records == stored[next_segment // 3]


def test_unclean_restart_validates_only_from_the_recovery_point(tmp_path: Path) -> None:
    directory, _ = written_log(tmp_path)
    segments = segment_files(directory)
    active_base = int(segments[-1].name[:20])
    with capture_logs() as events:
        log = reopen(directory, recovery_point=active_base)
    [loaded] = [e for e in events if e["event"] == "log.loaded"]
    assert loaded["segments_validated"] == 1
    assert log.recovery_point == 90
    log.close()
    with capture_logs() as events:
        Log(directory, small_config(), had_clean_shutdown=True, time_ms=Clock()).close()
    [loaded] = [e for e in events if e["event"] == "log.loaded"]
    assert loaded["segments_validated"] == 0


def crash(logs: LogManager) -> None:
    """What SIGKILL leaves: no flush, no checkpoint, no clean-shutdown marker."""
    for log in logs.all_logs():
        log.close()
    logs._release_locks()


def run_background_flushes(logs: LogManager, now_ms: int) -> int:
    """What the broker's flush task does, inline: prepare, fsync, complete."""
    pending = logs.prepare_flushes(now_ms)
    for _, flush in pending:
        flush.sync()
    logs.complete_flushes(pending)
    return len(pending)


def test_rolled_segments_move_the_recovery_point(tmp_path: Path) -> None:
    logs = LogManager([tmp_path], small_config(), broker_id=1, time_ms=Clock())
    log = logs.get_or_create_log("t", 0)
    for n in range(30):
        log.append_as_leader(batch(3, tag=n), 0)
    active_base = log.active_segment.base_offset
    assert log.number_of_segments > 3
    assert log.recovery_point == 0  # rolls only asked for a flush
    assert run_background_flushes(logs, T0) == 1
    # As Kafka: the rolled segments are flushed, the recovery point is the active segment's base.
    assert log.recovery_point == active_base
    assert run_background_flushes(logs, T0) == 0
    logs.checkpoint_recovery_points()
    log.append_as_leader(batch(3, tag=99), 0)
    crash(logs)
    first = segment_files(tmp_path / "t-0")[0]
    flip(first, 100)  # an old, flushed segment goes bad on disk
    with capture_logs() as events:
        again = LogManager([tmp_path], small_config(), broker_id=1, time_ms=Clock())
    recovered = again.get_log("t", 0)
    assert recovered is not None
    assert recovered.log_end_offset == 93  # nothing cut, the unflushed batch included
    [loaded] = [e for e in events if e["event"] == "log.loaded"]
    assert loaded["segments_validated"] == 1
    assert loaded["clean_shutdown"] is False
    again.close()
    # A clean close writes the recovery point at the log end: the restart validates nothing.
    assert (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    assert (tmp_path / "recovery-point-offset-checkpoint").read_text().endswith("t 0 93\n")
    with capture_logs() as events:
        LogManager([tmp_path], small_config(), broker_id=1, time_ms=Clock()).close()
    [loaded] = [e for e in events if e["event"] == "log.loaded"]
    assert loaded["segments_validated"] == 0


def test_flush_ms_flushes_the_active_segment_in_the_background(tmp_path: Path) -> None:
    config = dataclasses.replace(small_config(), flush_ms=1000, segment_bytes=1 << 20)
    logs = LogManager([tmp_path], config, broker_id=1, time_ms=Clock())
    log = logs.get_or_create_log("t", 0)
    log.append_as_leader(batch(3), 0)
    assert run_background_flushes(logs, T0 + 999) == 0
    assert run_background_flushes(logs, T0 + 1000) == 1
    assert log.recovery_point == 3
    logs.close()


def test_a_flush_overtaken_by_truncation_does_not_move_the_recovery_point(
    tmp_path: Path,
) -> None:
    log = Log(tmp_path / "t-0", small_config(), time_ms=Clock())
    for n in range(30):
        log.append_as_leader(batch(3, tag=n), 0)
    pending = log.prepare_flush()
    assert pending is not None
    log.truncate_to(30)  # a follower truncating while the fsync runs
    for n in range(5):
        log.append_as_leader(batch(3, tag=100 + n), 1)
    pending.sync()
    assert not log.complete_flush(pending)
    assert log.recovery_point == 0  # the new batches at 30.. were never synced
    assert batch_bases(memory_records(log.read(30, 1 << 20).records))[0] == 30
    log.close()
