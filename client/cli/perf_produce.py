"""``minikafka perf-produce``: Kafka's kafka-producer-perf-test.sh — throughput and latency.

    minikafka perf-produce --topic T --num-records N --record-size S --throughput -1 \\
        --producer-props bootstrap.servers=H:P acks=all linger.ms=5 [--bootstrap-server H:P]

Sends N records of S random capital letters (one payload, reused) as fast as it can, or at
``--throughput`` records/s. A record's latency is the time from ``send()`` to its callback (the
broker's answer for its batch). Every 5 s a window line, and at the end the summary, both as
Kafka prints them (MB = 2^20 bytes)::

    50000 records sent, 9999.0 records/sec (0.95 MB/sec), 2.1 ms avg latency, 40.0 ms max latency.
    100000 records sent, 9998.200324 records/sec (0.95 MB/sec), 2.15 ms avg latency, \\
40.00 ms max latency, 2 ms 50th, 4 ms 95th, 9 ms 99th, 30 ms 99.9th.

Percentiles are over every record's latency (Kafka samples at most 500,000), in whole ms as
Kafka prints them. A failed send prints the first error on stderr; the exit status is then 1.

``--batch-send N`` (not in Kafka's tool) hands the producer N records per call
(``Producer.send_batch``) instead of one per ``send``: the per-record Python is then the
C record loop's. Each record's latency then runs from the call that queued it.
"""

from __future__ import annotations

import argparse
import bisect
import random
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Protocol, TextIO

from minikafka.client.cli._config import ConfigError, parse_key_values, read_properties_file
from minikafka.proto.errors import KafkaError

if TYPE_CHECKING:
    from minikafka.client.producer.future import (
        FutureRecordMetadata,
        ProduceRequestResult,
        SendBatchFuture,
    )

__all__ = ["Stats", "ThroughputThrottler", "add_arguments", "execute", "run"]

MB = 1024 * 1024
REPORTING_INTERVAL_MS = 5_000


class PerfProducer(Protocol):
    def send(self, topic: str, value: bytes | None = None) -> FutureRecordMetadata: ...
    def flush(self, timeout: float | None = None) -> None: ...


class BatchPerfProducer(PerfProducer, Protocol):
    def send_batch(self, topic: str, values: Sequence[bytes | None]) -> SendBatchFuture: ...


class Stats:
    """Kafka's ProducerPerformance.Stats: totals, latencies, 5 s windows.

    Only the sending thread touches it: ``execute`` turns the runs of records that batch
    callbacks have marked done into ``latencies`` (ms, in completion order) and ``errors``.
    """

    def __init__(
        self,
        record_size: int,
        out: TextIO,
        *,
        clock: Callable[[], float] = time.perf_counter,
        reporting_interval_ms: int = REPORTING_INTERVAL_MS,
    ) -> None:
        self._clock = clock
        self._out = out
        self._size = record_size
        self._interval_s = reporting_interval_ms / 1000
        self.start = clock()
        self.latencies: list[float] = []  # ms, in completion order
        self.errors: list[BaseException] = []
        self._window_start = self.start
        self._window_index = 0

    def window_due(self, now: float) -> bool:
        return now - self._window_start >= self._interval_s

    def maybe_report(self, now: float) -> None:
        """Print the window line when the window is over (called by the sending thread)."""
        if now - self._window_start < self._interval_s:
            return
        window = self.latencies[self._window_index :]
        elapsed = now - self._window_start
        if window:
            rate = len(window) / elapsed
            mb = len(window) * self._size / MB / elapsed
            print(
                f"{len(window)} records sent, {rate:.1f} records/sec ({mb:.2f} MB/sec), "
                f"{sum(window) / len(window):.1f} ms avg latency, "
                f"{max(window):.1f} ms max latency.",
                file=self._out,
                flush=True,
            )
        self._window_start = now
        self._window_index += len(window)

    def summary(self, now: float | None = None) -> str:
        latencies = list(self.latencies)
        count = len(latencies)
        elapsed = max((self._clock() if now is None else now) - self.start, 1e-9)
        rate = count / elapsed
        mb = count * self._size / MB / elapsed
        avg = sum(latencies) / count if count else 0.0
        top = max(latencies) if latencies else 0.0
        p50, p95, p99, p999 = percentiles([int(x) for x in latencies], (0.5, 0.95, 0.99, 0.999))
        return (
            f"{count} records sent, {rate:f} records/sec ({mb:.2f} MB/sec), "
            f"{avg:.2f} ms avg latency, {top:.2f} ms max latency, "
            f"{p50} ms 50th, {p95} ms 95th, {p99} ms 99th, {p999} ms 99.9th."
        )


def percentiles(latencies: list[int], points: tuple[float, ...]) -> list[int]:
    """Kafka's: the sorted sample at index ``int(size * p)``; 0 without samples."""
    ordered = sorted(latencies)
    if not ordered:
        return [0 for _ in points]
    return [ordered[min(int(len(ordered) * p), len(ordered) - 1)] for p in points]


class _Run:
    """Records ``start`` .. ``end`` (send order; ``end`` -1 while open) in one batch."""

    __slots__ = ("done_at", "end", "result", "start")

    def __init__(self, result: ProduceRequestResult, start: int) -> None:
        self.result = result
        self.start = start
        self.end = -1
        self.done_at = 0.0


class ThroughputThrottler:
    """Keeps sends at ``target`` records/s (Kafka's ThroughputThrottler); -1 = no limit."""

    def __init__(self, target: float, start: float, clock: Callable[[], float]) -> None:
        self._target = target
        self._start = start
        self._clock = clock

    def throttle(self, sent: int) -> None:
        if self._target <= 0:
            return
        ahead = sent / self._target - (self._clock() - self._start)
        if ahead > 0.001:  # sleeping below a millisecond costs more than it gains
            time.sleep(ahead)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--topic", required=True, help="topic to produce to")
    parser.add_argument("--num-records", type=int, required=True, help="records to send")
    parser.add_argument("--record-size", type=int, required=True, help="bytes per record")
    parser.add_argument(
        "--throughput",
        type=float,
        required=True,
        help="records/s to aim for; -1 = as fast as possible",
    )
    parser.add_argument(
        "--producer-props",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="producer configs by Kafka name, bootstrap.servers among them",
    )
    parser.add_argument(
        "--producer.config", dest="producer_config", metavar="FILE", help="producer .properties"
    )
    parser.add_argument(
        "--bootstrap-server", metavar="HOST:PORT", help="brokers (overrides bootstrap.servers)"
    )
    parser.add_argument(
        "--batch-send",
        type=int,
        default=0,
        metavar="N",
        help="give the producer N records per call (Producer.send_batch), not one per send",
    )


def execute(
    args: argparse.Namespace,
    producer: PerfProducer,
    out: TextIO,
    err: TextIO,
    *,
    clock: Callable[[], float] = time.perf_counter,
) -> int:
    num_records: int = args.num_records
    payload = bytes(random.choice(range(65, 91)) for _ in range(args.record_size))
    stats = Stats(len(payload), out, clock=clock)
    throttler = ThroughputThrottler(args.throughput, stats.start, clock)
    topic: str = args.topic
    latencies = stats.latencies
    errors = stats.errors

    # A record's latency runs from its send() to the answer for its batch. Records sent one
    # after another into the same batch form a run, timed by one callback on the batch's
    # result: a callback per record would cost the producer a third of its throughput.
    sent_at: list[float] = []  # per record, or with --batch-send per call
    call_starts: list[int] = []  # --batch-send: each call's first record, and the end
    finished: list[_Run] = []  # appended to by callbacks, read by this thread
    taken = 0  # how much of ``finished`` has been looked at
    failed = 0  # records whose batch failed

    def on_batch_done(run: _Run) -> None:
        run.done_at = clock()
        finished.append(run)

    def collect() -> int:
        """Turn finished runs whose records are all sent into stats; how many still wait."""
        nonlocal taken, failed
        fresh = finished[taken:]
        taken += len(fresh)
        for run in fresh:
            if run.end < 0:  # still being filled: looked at again next time
                finished.append(run)
                continue
            error = run.result.error
            if error is not None:
                errors.append(error)
                failed += run.end - run.start
            elif not call_starts:
                times = sent_at[run.start : run.end]
                latencies.extend([(run.done_at - t) * 1000 for t in times])
            else:  # --batch-send: the records of one call share its time; a list per call
                call = bisect.bisect_right(call_starts, run.start) - 1
                position = run.start
                while position < run.end:
                    upto = min(run.end, call_starts[call + 1])
                    latency = (run.done_at - sent_at[call]) * 1000
                    latencies.extend([latency] * (upto - position))
                    position = upto
                    call += 1
        sent = call_starts[-1] if call_starts else len(sent_at)
        return sent - len(latencies) - failed

    run: _Run | None = None
    runs = 0
    throttled = args.throughput > 0
    send = producer.send
    record_sent = sent_at.append
    batch = None  # the result of the current run's batch
    per_call = getattr(args, "batch_send", 0)
    try:
        if per_call > 1:
            # One call per per_call records; each run of them in one batch joins the run of
            # the records before it when they share the batch, as sends one by one do.
            values = [payload] * per_call
            send_batch = producer.send_batch  # type: ignore[attr-defined]
            call_starts.append(0)  # then the end of each call: where the next one starts
            for i in range(0, num_records, per_call):
                n = min(per_call, num_records - i)
                now = clock()
                sent = send_batch(topic, values if n == per_call else values[:n])
                record_sent(now)  # once per call
                call_starts.append(i + n)
                for part in sent.runs:
                    start = i + part.positions[0]
                    if part.result is not batch:
                        if run is not None:
                            run.end = start
                        batch = part.result
                        run = _Run(part.result, start)
                        runs += 1
                        part.result.on_done(partial(on_batch_done, run))
                if stats.window_due(now):
                    collect()
                    stats.maybe_report(now)
                if throttled:
                    throttler.throttle(i + n)
        else:
            for i in range(num_records):
                now = clock()
                result = send(topic, payload).batch_result
                record_sent(now)
                if result is not batch:
                    if run is not None:
                        run.end = i
                    batch = result
                    run = _Run(result, i)
                    runs += 1
                    result.on_done(partial(on_batch_done, run))
                if not i & 1023 and stats.window_due(now):
                    collect()
                    stats.maybe_report(now)
                if throttled:
                    throttler.throttle(i + 1)
    except KafkaError as exc:
        errors.append(exc)
    if run is not None:
        run.end = call_starts[-1] if call_starts else len(sent_at)
    try:
        producer.flush()
    except KafkaError as exc:
        errors.append(exc)
    # flush returns once every batch is settled; its callbacks may still be running
    deadline = time.monotonic() + 5
    while len(finished) < runs and time.monotonic() < deadline:
        time.sleep(0.001)
    end = clock()
    collect()  # the latencies are worked out after the clock stops, as bookkeeping
    if errors:
        print(f"ERROR Error when sending message to topic {topic}: {errors[0]}", file=err)
    print(stats.summary(end), file=out, flush=True)
    return 1 if errors else 0


def producer_config(args: argparse.Namespace) -> dict[str, str]:
    config = read_properties_file(args.producer_config) if args.producer_config else {}
    config.update(parse_key_values(args.producer_props))
    if args.bootstrap_server:
        config["bootstrap.servers"] = args.bootstrap_server
    if "bootstrap.servers" not in config:
        raise ConfigError(
            "Missing bootstrap.servers: give --producer-props bootstrap.servers=H:P "
            "or --bootstrap-server"
        )
    return config


def run(args: argparse.Namespace) -> int:
    from minikafka.client.cli._config import client_kwargs
    from minikafka.client.cli._logging import configure_tool_logging
    from minikafka.client.producer.producer import Producer

    configure_tool_logging()

    def warn(message: str) -> None:
        print(f"WARN {message}", file=sys.stderr)

    if args.num_records <= 0 or args.record_size <= 0:
        print("ERROR --num-records and --record-size must be positive", file=sys.stderr)
        return 1
    try:
        config = producer_config(args)
        producer = Producer(
            bootstrap_servers=config["bootstrap.servers"],
            **client_kwargs(Producer, config, warn),
        )
    except (ConfigError, KafkaError) as exc:
        print(f"ERROR {exc}", file=sys.stderr)
        return 1
    try:
        producer.partitions_for(args.topic)  # metadata first, as Kafka's does before timing
        return execute(args, producer, sys.stdout, sys.stderr)
    except KafkaError as exc:
        print(f"ERROR {exc}", file=sys.stderr)
        return 1
    finally:
        producer.close()
