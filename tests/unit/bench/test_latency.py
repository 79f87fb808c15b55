"""bench/latency.py: latency is measured from each record's scheduled send time, so a sender
that falls behind shows its delay in every record it owes (no coordinated omission), and the
achieved send rate is reported beside the target."""

from __future__ import annotations

import pytest

from bench.latency import (
    LatencyResult,
    Schedule,
    SendReport,
    latency_line,
    read_stamp,
    run_schedule,
    stamp,
)

MS = 1_000_000  # ns


class FakeClock:
    """time.time_ns and time.sleep on virtual time; ``send_cost_ns`` per send."""

    def __init__(self, send_cost_ns: int = 0) -> None:
        self.now = 1_700_000_000 * 1_000_000_000
        self.send_cost_ns = send_cost_ns
        self.sends: list[tuple[int, bytes]] = []  # (when it left, value)

    def clock(self) -> int:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += round(seconds * 1e9)

    def send(self, value: bytes) -> None:
        self.sends.append((self.now, value))
        self.now += self.send_cost_ns


def test_record_i_is_due_at_start_plus_i_over_rate_without_drift() -> None:
    schedule = Schedule(10_000, 5_000)
    assert schedule.due_ns(0) == 5_000
    assert schedule.due_ns(1) == 5_000 + 100_000
    assert schedule.due_ns(1_000_000) == 5_000 + 100 * 1_000_000_000  # 100 s, to the ns
    assert Schedule(3, 0).due_ns(1) == 333_333_333


def test_a_value_carries_its_sequence_and_due_time_padded_to_its_size() -> None:
    value = stamp(7, 123_456_789, 100)
    assert len(value) == 100
    assert read_stamp(value) == (7, 123_456_789)
    assert value[16:] == bytes(84)


def test_the_receiver_measures_from_the_due_time_and_skips_warm_up_records() -> None:
    assert latency_line(stamp(3, 10 * MS, 100), 12 * MS) == f"3 {2 * MS}"
    assert latency_line(stamp(-1, 0, 100), 12 * MS) is None


def test_a_sender_on_time_sends_each_record_at_its_due_time_never_before() -> None:
    fake = FakeClock(send_cost_ns=10_000)  # 10 us a send, well inside the 100 us period
    report = run_schedule(fake.send, 10_000, 50, 100, clock=fake.clock, sleep=fake.sleep)
    start = fake.sends[0][0]
    for sequence, (left, value) in enumerate(fake.sends):
        assert read_stamp(value) == (sequence, start + sequence * 100_000)
        assert left == start + sequence * 100_000  # not early, not late
    assert report.max_behind_ms == 0
    assert report.achieved_rate == pytest.approx(10_000)


def test_a_sender_that_falls_behind_stamps_due_times_so_its_delay_is_measured() -> None:
    # Each send takes 300 us against a 100 us period: the sender can do 3,333 records/s.
    fake = FakeClock(send_cost_ns=300_000)
    report = run_schedule(fake.send, 10_000, 100, 100, clock=fake.clock, sleep=fake.sleep)
    start = fake.sends[0][0]
    # The stamp is the schedule's, not the (later) time the record left ...
    due = [read_stamp(value)[1] for _, value in fake.sends]
    assert due == [start + i * 100_000 for i in range(100)]
    # ... so a receiver that gets each record as it leaves sees the backlog grow: record 99
    # left 19.8 ms after its due time, and its latency says so (a send-time stamp: 0).
    latencies = [left - read_stamp(value)[1] for left, value in fake.sends]
    assert latencies[0] == 0
    assert latencies[-1] == 99 * 200_000
    assert report.max_behind_ms == pytest.approx(99 * 0.2)
    assert report.achieved_rate == pytest.approx(1e9 / 300_000)
    assert report.target_rate == 10_000


def test_percentiles_need_every_record_and_carry_both_rates() -> None:
    lines = "\n".join(f"{i} {(i + 1) * MS}" for i in range(1000)) + "\n"
    report = SendReport(10_000, 1000, 0.999 / 8, 0.0)
    result = LatencyResult.from_lines(lines, report)
    assert (result.p50_ms, result.p99_ms, result.p999_ms) == (501.0, 991.0, 1000.0)
    assert (result.target_rate, result.achieved_rate) == (10_000, 8_000)
    assert "sent at 8,000 records/s (target 10,000)" in result.describe()
    with pytest.raises(ValueError, match="999 of 1000"):
        LatencyResult.from_lines("\n".join(lines.splitlines()[1:]), report)
