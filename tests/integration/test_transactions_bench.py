"""bench/transactions_bench.py's round on real brokers with tiny counts: its confluent-kafka
child processes produce idempotently and in transactions of both sizes, then read the
transactional topic read_committed and read_uncommitted, each counting every record (a child
exits non-zero otherwise). bench/ is not type-checked, so this run is what catches a broken
bench."""

from __future__ import annotations

import pytest

from bench.kafka_protocol_bench import Result
from bench.transactions_bench import MODES, print_table, run_round
from tests.integration.conftest import ClusterFactory

pytestmark = pytest.mark.integration


def test_every_mode_runs_and_counts_every_record(
    cluster_factory: ClusterFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = cluster_factory(3, {"min.insync.replicas": "2"})
    result = Result()
    run_round(cluster, 2_500, 0, result)  # 3 transactions of 1,000 records, 1 of 100,000
    assert list(result.rates) == list(MODES)
    assert all(len(rates) == 1 and rates[0] > 0 for rates in result.rates.values())
    print_table(result)
    table = capsys.readouterr().out
    assert all(f"| {mode} |" in table for mode in MODES)
