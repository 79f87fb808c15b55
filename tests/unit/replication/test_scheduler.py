"""The broker's periodic tasks (Kafka's KafkaScheduler): a failing round is logged and the
next one tried; shutdown stops every task."""

from __future__ import annotations

import asyncio

from structlog.testing import capture_logs

from minikafka.broker.replication.scheduler import Scheduler
from tests.unit.virtual_time import run_virtual


def test_a_failing_round_is_logged_and_the_next_round_runs() -> None:
    rounds: list[int] = []

    def work() -> None:
        rounds.append(len(rounds))
        if len(rounds) == 1:
            raise OSError("disk says no")

    async def scenario() -> None:
        scheduler = Scheduler()
        scheduler.schedule("checkpoint", work, period_ms=1)
        while len(rounds) < 3:
            await asyncio.sleep(0.001)
        await scheduler.shutdown()

    with capture_logs() as logs:
        asyncio.run(scenario())
    failures = [e for e in logs if e["event"] == "scheduler.task_failed"]
    assert [(e["task"], e["error"]) for e in failures] == [("checkpoint", "disk says no")]


def test_coroutine_work_is_awaited_and_shutdown_stops_every_task() -> None:
    runs = {"flush": 0, "retention": 0}

    async def flush() -> None:
        await asyncio.sleep(0)
        runs["flush"] += 1

    def retention() -> None:
        runs["retention"] += 1

    async def scenario() -> None:
        scheduler = Scheduler()
        scheduler.schedule("flush", flush, period_ms=1)
        scheduler.schedule("retention", retention, period_ms=1)
        while min(runs.values()) < 2:
            await asyncio.sleep(0.001)
        await scheduler.shutdown()
        stopped = dict(runs)
        await asyncio.sleep(0.02)  # twenty periods of loop time, on any machine
        assert runs == stopped
        assert not [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]

    run_virtual(scenario())
