"""bench/run_all.py's one table (each figure, its peers' figures, minikafka / peer) and
bench/hygiene.py's clean-up on every way out."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from bench.hygiene import scratch_dir
from bench.latency import LatencyResult
from bench.peers import NATS, REDIS, PeerResult
from bench.run_all import KAFKA_2014_NAME, Collected, Figure, format_table


def _latency(p50: float, p99: float, sent: float = 10_000) -> LatencyResult:
    return LatencyResult(p50, p99, p99 * 2, 10_000, sent, 50_000)


def test_a_row_shows_median_and_range_and_the_ratio_to_each_peer() -> None:
    figure = Figure("produce", "records/s", [900.0, 1000.0, 1200.0], {REDIS: [500.0, 400.0, 600.0]})
    header, rule, row = format_table([figure], peers=(REDIS, NATS))
    assert header == (f"| figure | minikafka | {REDIS} | / {REDIS} | {NATS} | / {NATS} | note |")
    assert rule == "|---|---:|---:|---:|---:|---:|---|"
    assert row == "| produce, records/s | 1,000 (900-1,200) | 500 (400-600) | 2.00 | - | - |  |"


def test_latency_in_ms_with_two_decimals_and_a_single_published_figure() -> None:
    figure = Figure("p50", "ms", [1.5, 2.5, 2.0], {KAFKA_2014_NAME: [2.0]}, note="n")
    row = format_table([figure], peers=(KAFKA_2014_NAME,))[2]
    assert row == "| p50, ms | 2.00 (1.50-2.50) | 2.00 | 1.00 | n |"


def test_collected_rounds_put_each_peer_beside_what_it_compares_with() -> None:
    collected = Collected()
    collected.classic["1 producer, no replication"] = [410_778.5]
    collected.protocol.rates["produce RF3 acks=all, Kafka protocol (confluent-kafka)"] = [300.0]
    collected.protocol.rates["consume, Kafka protocol (kcat)"] = [900.0]
    collected.latency.append(_latency(2.0, 4.0, sent=9_990))
    collected.peers[REDIS] = [PeerResult(600.0, 1800.0, _latency(0.5, 1.0, sent=10_000))]
    collected.peers[NATS] = [PeerResult(150.0, 300.0, _latency(1.0, 8.0, sent=9_000))]
    kreps, produce, consume, p50, p99 = collected.figures()
    assert kreps.peers == {KAFKA_2014_NAME: [821_557.0]}
    assert produce.peers == {REDIS: [600.0], NATS: [150.0]}
    assert consume.peers == {REDIS: [1800.0], NATS: [300.0]}
    assert (p50.unit, p50.values, p50.peers[REDIS], p50.peers[NATS]) == ("ms", [2.0], [0.5], [1.0])
    assert p99.peers[KAFKA_2014_NAME] == [3.0]
    assert "minikafka 9,990" in p50.note and f"{NATS} 9,000" in p50.note
    rows = format_table(collected.figures())
    assert "| 0.50 |" in rows[2]  # Kreps row: 410,779 / 821,557
    assert "| 4.00 |" in rows[5]  # p50: 2.0 ms / Redis's 0.5 ms


def test_the_scratch_directory_is_removed_after_an_error(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), scratch_dir("t-", tmp_path) as root:
        (root / "logs").mkdir()
        (root / "logs" / "00000.log").write_bytes(b"x" * 1000)
        raise RuntimeError("a bench failed")
    assert list(tmp_path.iterdir()) == []


def test_sigterm_ends_the_run_through_its_finally_clauses(tmp_path: Path) -> None:
    cleaned = []
    handler = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit) as exit_info, scratch_dir("t-", tmp_path):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
        finally:
            cleaned.append(True)
    assert exit_info.value.code == 128 + signal.SIGTERM
    assert cleaned == [True]
    assert list(tmp_path.iterdir()) == []
    assert signal.getsignal(signal.SIGTERM) == handler  # the previous handler is back


def test_a_single_round_shows_its_value_without_a_range() -> None:
    figure = Figure("consume", "records/s", [1_500.0], {NATS: [500.0]})
    row = format_table([figure], peers=(NATS,))[2]
    assert row == "| consume, records/s | 1,500 | 500 | 3.00 |  |"
