"""The flush scheduler (LogManager.prepare_flushes, run every second by the broker) asks only
the logs with something to flush: those a roll left a flush pending for and those with a
finite flush.ms, not every log (issue 18: an idle broker with thousands of partitions)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from minikafka.broker.storage.log import Log
from minikafka.broker.storage.log_manager import LogManager
from minikafka.proto.common import TopicPartition
from tests.unit.storage.helpers import T0, Clock, batch, small_config


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[TopicPartition]:
    """The logs whose ``flush_due`` the scheduler called, in order (the real method runs)."""
    calls: list[TopicPartition] = []
    flush_due = Log.flush_due

    def spy(self: Log, now_ms: int) -> int | None:
        calls.append(TopicPartition(self.topic, self.partition))
        return flush_due(self, now_ms)

    monkeypatch.setattr(Log, "flush_due", spy)
    return calls


def run_background_flushes(logs: LogManager, now_ms: int) -> int:
    """What the broker's flush task does, inline: prepare, fsync, complete."""
    pending = logs.prepare_flushes(now_ms)
    for _, flush in pending:
        flush.sync()
    logs.complete_flushes(pending)
    return len(pending)


def test_only_logs_a_roll_left_a_flush_pending_are_asked(
    tmp_path: Path, asked: list[TopicPartition]
) -> None:
    logs = LogManager([tmp_path], small_config(), broker_id=1, time_ms=Clock())
    for partition in range(50):
        logs.get_or_create_log("t", partition)
    assert run_background_flushes(logs, T0) == 0
    assert len(asked) == 50  # a new log is asked once
    asked.clear()
    assert run_background_flushes(logs, T0) == 0
    assert asked == []  # nothing rolled: no log is asked

    busy = logs.get_or_create_log("t", 7)
    for n in range(30):
        busy.append_as_leader(batch(3, tag=n), 0)
    assert busy.number_of_segments > 3
    assert run_background_flushes(logs, T0) == 1
    assert set(asked) == {TopicPartition("t", 7)}
    assert busy.recovery_point == busy.active_segment.base_offset  # the flush happened
    asked.clear()
    assert run_background_flushes(logs, T0) == 0
    assert asked == [TopicPartition("t", 7)]  # once more, to find nothing is left
    asked.clear()
    assert run_background_flushes(logs, T0) == 0
    assert asked == []
    logs.close()


def test_logs_with_a_finite_flush_ms_are_asked_every_time(
    tmp_path: Path, asked: list[TopicPartition]
) -> None:
    clock = Clock()
    timed = dataclasses.replace(small_config(), flush_ms=1000)
    logs = LogManager(
        [tmp_path],
        small_config(),
        broker_id=1,
        time_ms=clock,
        topic_config=lambda topic: timed if topic == "timed" else None,
    )
    logs.get_or_create_log("idle", 0)
    log = logs.get_or_create_log("timed", 0)
    run_background_flushes(logs, clock.now_ms)
    asked.clear()
    log.append_as_leader(batch(3), 0)  # no roll: only flush.ms makes this flush due
    assert run_background_flushes(logs, clock.now_ms) == 0
    clock.now_ms += 1000
    assert run_background_flushes(logs, clock.now_ms) == 1
    assert log.recovery_point == log.log_end_offset == 3
    assert asked == [TopicPartition("timed", 0)] * 2

    # The topic's flush.ms goes back to "never": the log is no longer asked each time.
    logs.update_topic_config("timed", small_config())
    run_background_flushes(logs, clock.now_ms)
    asked.clear()
    run_background_flushes(logs, clock.now_ms)
    assert asked == []
    logs.close()


def test_a_log_deleted_with_a_flush_pending_is_forgotten(tmp_path: Path) -> None:
    logs = LogManager([tmp_path], small_config(), broker_id=1, time_ms=Clock())
    log = logs.get_or_create_log("t", 0)
    for n in range(30):
        log.append_as_leader(batch(3, tag=n), 0)
    assert logs.delete_log("t", 0)
    assert run_background_flushes(logs, T0) == 0
    logs.close()
