"""bench/transfer_bench.py's kafka transport between two real processes: its stand-in leader
serves the Kafka door's real Fetch path and the real KafkaLeaderEndpoint reads the answers.

The leader builds a ``KafkaBroker`` by hand and bench/ is not type-checked, so a field added to
that class breaks the bench silently (the leader dies before it prints its port); this run
catches it."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.transfer_bench import run

_REPOSITORY = Path(__file__).resolve().parents[2]


def test_the_kafka_transport_moves_fetch_answers_between_two_processes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(_REPOSITORY)  # the leader is started as ``python -m bench.transfer_bench``
    mib_per_s, round_trip_ms, _, _ = run("kafka", 4096, messages=3)
    assert mib_per_s > 0 and round_trip_ms > 0
