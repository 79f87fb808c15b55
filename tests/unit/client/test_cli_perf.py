"""perf-produce and perf-consume: Kafka's summary lines and CSV, with fake clocks and clients."""

from __future__ import annotations

import argparse
import io
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import pytest

from minikafka.cli import build_parser
from minikafka.client.cli import perf_consume, perf_produce
from minikafka.client.cli.perf_consume import HEADER, ConsumeResult, format_result
from minikafka.client.cli.perf_produce import Stats, ThroughputThrottler, percentiles
from minikafka.client.consumer.fetcher import ConsumerRecord
from minikafka.client.producer.future import (
    FutureRecordMetadata,
    ProduceRequestResult,
    SendBatchFuture,
    SentRun,
)
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode, error_for_code

SUMMARY = re.compile(
    r"^(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
    r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99\.9th\.$"
)


def test_percentiles_are_kafkas_index_rule() -> None:
    assert percentiles(list(range(1000)), (0.5, 0.95, 0.99, 0.999)) == [500, 950, 990, 999]
    assert percentiles([], (0.5,)) == [0]
    assert percentiles([7], (0.5, 0.999)) == [7, 7]


def test_stats_window_and_summary_lines() -> None:
    now = [100.0]
    out = io.StringIO()
    stats = Stats(100, out, clock=lambda: now[0], reporting_interval_ms=5000)
    stats.latencies.extend([1.0, 3.0, 2.0, 10.0])
    stats.maybe_report(102.0)  # window not over yet
    assert out.getvalue() == ""
    stats.maybe_report(105.0)
    assert out.getvalue() == (
        "4 records sent, 0.8 records/sec (0.00 MB/sec), 4.0 ms avg latency, 10.0 ms max latency.\n"
    )
    assert stats.summary(110.0) == (
        "4 records sent, 0.400000 records/sec (0.00 MB/sec), 4.00 ms avg latency, "
        "10.00 ms max latency, 3 ms 50th, 10 ms 95th, 10 ms 99th, 10 ms 99.9th."
    )


def test_throttler_sleeps_only_when_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]
    slept: list[float] = []
    monkeypatch.setattr("minikafka.client.cli.perf_produce.time.sleep", slept.append)
    throttler = ThroughputThrottler(1000, 0.0, lambda: now[0])
    throttler.throttle(500)  # 0.5 s of budget used at t=0
    now[0] = 1.0
    throttler.throttle(500)  # behind: no sleep
    ThroughputThrottler(-1, 0.0, lambda: 0.0).throttle(10**6)
    assert slept == [0.5]


class FakeProducer:
    def __init__(self, fail: bool = False) -> None:
        self.sent = 0
        self.fail = fail

    def send(self, topic: str, value: bytes | None = None) -> FutureRecordMetadata:
        result = ProduceRequestResult()
        self.sent += 1
        error = error_for_code(ErrorCode.NOT_ENOUGH_REPLICAS, "isr") if self.fail else None
        result.set(self.sent, -1, error)
        return FutureRecordMetadata(result, 0, topic, 0, 0)

    def flush(self, timeout: float | None = None) -> None:
        pass


def perf_args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(
        ["perf-produce", "--topic", "t", "--num-records", "1000", "--record-size", "100",
         "--throughput", "-1", "--producer-props", "bootstrap.servers=127.0.0.1:9092", *argv]
    )  # fmt: skip


def test_perf_produce_prints_kafkas_summary() -> None:
    out, err = io.StringIO(), io.StringIO()
    producer = FakeProducer()
    assert perf_produce.execute(perf_args(), producer, out, err) == 0
    assert producer.sent == 1000
    match = SUMMARY.match(out.getvalue().strip())
    assert match is not None, out.getvalue()
    assert match.group(1) == "1000"
    assert err.getvalue() == ""


def test_perf_produce_failures_print_once_and_exit_1() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert perf_produce.execute(perf_args(), FakeProducer(fail=True), out, err) == 1
    assert err.getvalue() == (
        "ERROR Error when sending message to topic t: NOT_ENOUGH_REPLICAS (19): isr\n"
    )
    assert out.getvalue().startswith("0 records sent, ")


class FakeBatchProducer(FakeProducer):
    """Batches of 300 records, answered when full or flushed; send_batch only."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[int] = []
        self.batch = ProduceRequestResult()
        self.in_batch = 0
        self.base = 0

    def send_batch(self, topic: str, values: Sequence[bytes | None]) -> SendBatchFuture:
        self.calls.append(len(values))
        runs, position = [], 0
        while position < len(values):
            n = min(300 - self.in_batch, len(values) - position)
            runs.append(SentRun(self.batch, self.in_batch, range(position, position + n), 0))
            position += n
            self.in_batch += n
            if self.in_batch == 300:
                self.flush()
        return SendBatchFuture(topic, 0, runs)

    def flush(self, timeout: float | None = None) -> None:
        if self.in_batch:
            self.batch.set(self.base, -1, None)
            self.base += self.in_batch
            self.batch, self.in_batch = ProduceRequestResult(), 0


def test_perf_produce_batch_send_times_every_record_from_its_call() -> None:
    out, err = io.StringIO(), io.StringIO()
    producer = FakeBatchProducer()
    assert perf_produce.execute(perf_args("--batch-send", "128"), producer, out, err) == 0
    assert producer.calls == [128] * 7 + [104]
    match = SUMMARY.match(out.getvalue().strip())
    assert match is not None, out.getvalue()
    assert match.group(1) == "1000"  # each record's latency counted once
    assert err.getvalue() == ""


def test_perf_produce_config() -> None:
    config = perf_produce.producer_config(perf_args("acks=1", "linger.ms=2"))
    assert config == {"bootstrap.servers": "127.0.0.1:9092", "acks": "1", "linger.ms": "2"}
    args = build_parser().parse_args(
        ["perf-produce", "--topic", "t", "--num-records", "1", "--record-size", "1",
         "--throughput", "-1", "--bootstrap-server", "h:1"]
    )  # fmt: skip
    assert perf_produce.producer_config(args) == {"bootstrap.servers": "h:1"}


def test_perf_consume_csv_line() -> None:
    start = datetime(2026, 1, 2, 3, 4, 5, 678_000).timestamp() * 1000
    result = ConsumeResult(start, start + 2000, start + 500, 100_000, 10 * 1024 * 1024, False)
    assert format_result(result) == (
        "2026-01-02 03:04:05:678, 2026-01-02 03:04:07:678, 10.0000, 5.0000, 100000, "
        "50000.0000, 500, 1500, 6.6667, 66666.6667"
    )
    assert HEADER.split(", ")[:3] == ["start.time", "end.time", "data.consumed.in.MB"]


class FakeConsumer:
    def __init__(self, batches: list[int]) -> None:
        self.batches = batches
        self.assigned: list[TopicPartition] = []
        self.closed = False

    def partitions_for_topic(self, topic: str) -> set[int]:
        return {0, 1}

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.assigned = partitions

    def poll(self, timeout_ms: int = 0, max_records: int | None = None) -> dict[Any, Any]:
        if not self.batches:
            return {}
        n = min(self.batches.pop(0), max_records or 10**9)
        records = [ConsumerRecord("t", 0, i, 0, 0, b"k", b"x" * 9, []) for i in range(n)]
        return {TopicPartition("t", 0): records}

    def close(self) -> None:
        self.closed = True


def test_perf_consume_counts_and_times_out_with_kafkas_warning() -> None:
    consumer = FakeConsumer([3, 4])
    args = build_parser().parse_args(
        ["perf-consume", "--bootstrap-server", "h:1", "--topic", "t", "--messages", "10",
         "--timeout", "50"]
    )  # fmt: skip
    out, err = io.StringIO(), io.StringIO()
    configs: dict[str, str] = {}

    def make(config: dict[str, str]) -> FakeConsumer:
        configs.update(config)
        return consumer

    assert perf_consume.execute(args, make, out, err) == 0
    assert consumer.assigned == [TopicPartition("t", 0), TopicPartition("t", 1)]
    assert consumer.closed
    assert configs["auto.offset.reset"] == "earliest"
    header, line = out.getvalue().splitlines()
    assert header == HEADER
    fields = line.split(", ")
    assert fields[4] == "7"  # messages
    assert fields[2] == f"{7 * 10 / 1024 / 1024:.4f}"  # key + value bytes
    assert err.getvalue().startswith(
        "WARNING: Exiting before consuming the expected number of messages: timeout (50 ms) "
        "exceeded."
    )
