"""End-to-end latency measured from each record's scheduled send time, one method for every
system the benches compare (bench.kafka_classic's row 8, bench.peers' Redis Streams and NATS
JetStream).

The sender works to a schedule: record ``i`` is due at ``t0 + i / rate``. It sleeps until a
record is due (never sends early) and, when it has fallen behind, sends at once without
sleeping. The record carries its due time, not the time it actually left, and the receiver's
latency is receive time - due time: a sender that falls behind (the client blocked, the machine
busy) shows its delay in every record it owes, rather than hiding it by sending them later and
stamping them then (coordinated omission). The achieved send rate is reported beside the target
so that a run whose sender could not keep up says so.

A record's value, ``size`` bytes (at least 16)::

    offset 0   int64 big-endian   sequence (negative: a warm-up record, not counted)
    offset 8   int64 big-endian   due time, ns since the epoch (time.time_ns: one wall clock
                                  for the sender and the receiver, processes of one machine)
    offset 16  zero bytes         padding up to ``size``

A receiver prints one ``sequence latency_ns`` line per record (``latency_line``); the sender's
side turns them into percentiles (``LatencyResult.from_lines``).
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = [
    "LatencyResult",
    "Schedule",
    "SendReport",
    "latency_line",
    "percentile",
    "read_stamp",
    "run_schedule",
    "stamp",
]

_STAMP = struct.Struct(">qq")
PERCENTILES = (0.5, 0.99, 0.999)


def stamp(sequence: int, due_ns: int, size: int) -> bytes:
    """A record's value: its sequence and due time, padded to ``size`` bytes."""
    return _STAMP.pack(sequence, due_ns) + bytes(max(size - _STAMP.size, 0))


def read_stamp(value: bytes) -> tuple[int, int]:
    """(sequence, due time in ns) of a value ``stamp`` made."""
    sequence, due_ns = _STAMP.unpack_from(value)
    return sequence, due_ns


def latency_line(value: bytes, received_ns: int) -> str | None:
    """The receiver's ``sequence latency_ns`` line for a record; None for a warm-up record."""
    sequence, due_ns = read_stamp(value)
    return None if sequence < 0 else f"{sequence} {received_ns - due_ns}"


@dataclass(frozen=True)
class Schedule:
    """Record ``i`` is due at ``start_ns + i / rate`` (integer ns, no drift over a long run)."""

    rate: float
    start_ns: int

    def due_ns(self, sequence: int) -> int:
        return self.start_ns + round(sequence * 1e9 / self.rate)


@dataclass(frozen=True)
class SendReport:
    """How the sender kept to its schedule."""

    target_rate: float
    records: int
    seconds: float  # from the first record's send to the last one's
    max_behind_ms: float  # the most a record left after its due time (0: never late)

    @property
    def achieved_rate(self) -> float:
        """Records per second between the first send and the last (``records - 1``
        intervals: exactly the target rate for a sender on time)."""
        return (self.records - 1) / self.seconds if self.seconds > 0 else 0.0


def run_schedule(
    send: Callable[[bytes], object],
    rate: float,
    records: int,
    size: int,
    *,
    clock: Callable[[], int] = time.time_ns,
    sleep: Callable[[float], object] = time.sleep,
) -> SendReport:
    """Send ``records`` values through ``send``, record ``i`` stamped and sent at its due time
    (or at once, when the sender is behind); see the module docstring."""
    schedule = Schedule(rate, clock())
    max_behind_ns = 0
    first_ns = last_ns = schedule.start_ns
    for sequence in range(records):
        due = schedule.due_ns(sequence)
        now = clock()
        if due > now:
            sleep((due - now) / 1e9)
            now = clock()
        max_behind_ns = max(max_behind_ns, now - due)
        last_ns = now
        if sequence == 0:
            first_ns = now
        send(stamp(sequence, due, size))
    return SendReport(rate, records, (last_ns - first_ns) / 1e9, max_behind_ns / 1e6)


def percentile(ordered: Sequence[float], p: float) -> float:
    """The value below which a fraction ``p`` of ``ordered`` (sorted ascending) lies."""
    return ordered[min(int(len(ordered) * p), len(ordered) - 1)]


@dataclass(frozen=True)
class LatencyResult:
    """One run: p50 / p99 / p99.9 in ms, and the sender's target and achieved rates."""

    p50_ms: float
    p99_ms: float
    p999_ms: float
    target_rate: float
    achieved_rate: float
    records: int

    @classmethod
    def from_lines(cls, lines: str, report: SendReport) -> LatencyResult:
        """From a receiver's ``sequence latency_ns`` lines; ValueError when records are
        missing (a figure over part of the records would flatter the run)."""
        latencies = sorted(
            int(line.split()[1]) / 1e6 for line in lines.splitlines() if line.strip()
        )
        if len(latencies) < report.records:
            raise ValueError(f"the receiver saw {len(latencies)} of {report.records} records")
        p50, p99, p999 = (percentile(latencies, p) for p in PERCENTILES)
        return cls(p50, p99, p999, report.target_rate, report.achieved_rate, len(latencies))

    def describe(self) -> str:
        return (
            f"p50 {self.p50_ms:.2f} ms, p99 {self.p99_ms:.2f} ms, p99.9 {self.p999_ms:.2f} ms; "
            f"sent at {self.achieved_rate:,.0f} records/s (target {self.target_rate:,.0f})"
        )
