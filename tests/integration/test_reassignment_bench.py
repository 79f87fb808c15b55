"""bench/reassignment_bench.py's round on real brokers with a tiny partition: both moves finish,
the produce child beside them counts acknowledged records, the table prints every row. bench/ is
not type-checked, so this run is what catches a broken bench."""

from __future__ import annotations

import pytest

from bench.reassignment_bench import MB, ROWS, print_table, run

pytestmark = pytest.mark.integration


def test_a_round_moves_both_partitions_and_counts_produce_beside(
    capsys: pytest.CaptureFixture[str],
) -> None:
    results = run(2 * MB, 1 * MB, rounds=1, produce_seconds=1)
    assert list(results) == list(ROWS)
    assert all(len(v) == 1 and v[0][1] > 0 for v in results.values())
    assert all(v[0][0] > 0 for row, v in results.items() if row != ROWS[0])
    print_table(results, 2 * MB, 1 * MB)
    table = capsys.readouterr().out
    assert "| move, --throttle 1 MB/s |" in table and "| no move |" in table
