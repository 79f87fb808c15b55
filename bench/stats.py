"""How every benchmark reports a figure: the median of its rounds and their range.

docs/benchmarks.md records the median and the range of at least three rounds, never the best
one: the machines are shared, and the best round says more about a quiet moment than about
the code.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence


def summary(values: Sequence[float], fmt: str = ",.0f") -> str:
    """``median (min-max)``, e.g. ``1,234 (1,100-1,300)``."""
    return f"{statistics.median(values):{fmt}} ({min(values):{fmt}}-{max(values):{fmt}})"


def rates(fn: Callable[[], object], count: int, rounds: int) -> list[float]:
    """``count`` / seconds of each of ``rounds`` calls of ``fn``."""
    out = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        out.append(count / (time.perf_counter() - start))
    return out
