"""A broker killed at every step of a cleaning restarts with every record that should survive,
at its offset: a fault hook raises at each step, then the directory is reopened as after a
crash (the old Log object is abandoned, not closed)."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest

from minikafka.broker.storage.cleaner import CleanerConfig, LogCleaner, clean_log
from minikafka.broker.storage.log import Log
from tests.unit.storage.helpers import Clock, read_all
from tests.unit.storage.test_cleaner import (
    Model,
    appended_records,
    check_against_model,
    compact_config,
    open_log,
    produce,
)

# (step, which occurrence): the map is built once per cleaning; the other steps come once per
# cleaned segment, and a crash at the second one leaves the first swapped and the rest not.
CRASH_POINTS = [
    ("build_map", 1),
    ("write_cleaned", 1),
    ("write_cleaned", 2),
    ("swap_renamed", 1),
    ("swap_renamed", 2),
    ("old_deleted", 1),
    ("old_deleted", 2),
    ("swapped", 1),
    ("swapped", 2),
]


class SimulatedCrash(BaseException):
    """Not an Exception: nothing in the cleaner may catch it and tidy up."""


def crash_at(step: str, occurrence: int) -> object:
    seen = 0

    def fault(name: str) -> None:
        nonlocal seen
        if name == step:
            seen += 1
            if seen == occurrence:
                raise SimulatedCrash(step)

    return fault


@pytest.mark.parametrize(("step", "occurrence"), CRASH_POINTS)
@pytest.mark.parametrize("recovery_point", ["none", "flushed"])
def test_a_crash_at_any_step_loses_no_surviving_record(
    tmp_path: Path, step: str, occurrence: int, recovery_point: str
) -> None:
    clock = Clock()
    log = open_log(tmp_path / "compacted-0", clock)
    model: Model = {}
    produce(log, model, random.Random(13), 200, keys=30)
    appended = appended_records(log)
    log.flush()
    flushed = log.recovery_point
    cleaner = LogCleaner(CleanerConfig(), time_ms=clock, fault=crash_at(step, occurrence))  # type: ignore[arg-type]
    with pytest.raises(SimulatedCrash):
        clean_log(cleaner, log, force=True)
    # The process died here: nothing flushed or closed. A new broker opens the directory.
    reopened = Log(
        log.dir,
        compact_config(),  # type: ignore[arg-type]
        recovery_point=flushed if recovery_point == "flushed" else 0,
        time_ms=clock,
    )
    assert reopened.log_end_offset == log.log_end_offset
    leftovers = [p.name for p in log.dir.iterdir() if p.name.endswith((".cleaned", ".swap"))]
    assert leftovers == []
    check_against_model(reopened, model, appended)
    # Segments follow on: nothing was truncated as damage.
    segments = reopened.segments
    for previous, following in itertools.pairwise(segments):
        assert previous.read_next_offset() == following.base_offset
    # A cleaning after the restart finishes the job.
    clean_log(LogCleaner(CleanerConfig(), time_ms=clock), reopened, force=True)
    records = check_against_model(reopened, model, appended)
    below = [r.key for r in records if r.offset < reopened.active_segment.base_offset]
    assert len(below) == len(set(below))
    assert read_all(reopened)
