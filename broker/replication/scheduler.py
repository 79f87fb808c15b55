"""Named periodic tasks on the broker's event loop (Kafka's KafkaScheduler).

Each task sleeps its period, runs its work, and goes round again. The work is a function or a
coroutine function (its coroutine is awaited before the next sleep: rounds never overlap). An
exception from one round is logged (``scheduler.task_failed`` with the task's name and the
traceback) and the next round tried: a failing checkpoint or retention pass never stops the
broker or the task.

    scheduler = Scheduler()
    scheduler.schedule("highwatermark-checkpoint", checkpoint, period_ms=5000)
    ...
    await scheduler.shutdown()          # cancels every task and waits for it

Not thread-safe: the event loop that calls ``schedule`` owns the scheduler.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import structlog

__all__ = ["Scheduler"]

_log = structlog.get_logger(__name__)


class Scheduler:
    """The periodic tasks of one owner (the ReplicaManager, the BrokerServer)."""

    def __init__(self) -> None:
        self._tasks: list[asyncio.Task[None]] = []

    def schedule(self, name: str, work: Callable[[], object], *, period_ms: float) -> None:
        """Run ``work`` every ``period_ms``, the first time one period from now."""
        task = asyncio.get_running_loop().create_task(
            self._run(name, work, period_ms / 1000), name=name
        )
        self._tasks.append(task)

    async def shutdown(self) -> None:
        """Cancel every task and wait for it; ``schedule`` may be called again afterwards."""
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    @staticmethod
    async def _run(name: str, work: Callable[[], object], period_s: float) -> None:
        while True:
            await asyncio.sleep(period_s)
            try:
                result = work()
                if asyncio.iscoroutine(result):
                    await result
            except Exception as exc:  # keep the broker up; the next round tries again
                _log.exception("scheduler.task_failed", task=name, error=str(exc))
