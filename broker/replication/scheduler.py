"""Named periodic tasks on the broker's event loop (Kafka's KafkaScheduler), and one-off
background tasks a coordinator starts and forgets (``BackgroundTasks``).

Each task sleeps its period, runs its work, and goes round again. The work is a function or a
coroutine function (its coroutine is awaited before the next sleep: rounds never overlap). An
exception from one round is logged (``scheduler.task_failed`` with the task's name and the
traceback) and the next round tried: a failing checkpoint or retention pass never stops the
broker or the task.

    scheduler = Scheduler()
    scheduler.schedule("highwatermark-checkpoint", checkpoint, period_ms=5000)
    ...
    await scheduler.shutdown()          # cancels every task and waits for it

    tasks = BackgroundTasks("transaction_coordinator.task_failed")
    tasks.spawn(self._load(partition, epoch))   # runs on; a failure is logged, not raised
    tasks.cancel_all()                          # at shutdown

Not thread-safe: the event loop that calls ``schedule`` / ``spawn`` owns the object.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any

import structlog

__all__ = ["BackgroundTasks", "Scheduler"]

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


class BackgroundTasks:
    """Coroutines started now and not awaited by anyone (a coordinator's loads and marker
    rounds): each is kept until it ends, so that it is not garbage-collected mid-way and can be
    cancelled at shutdown; an exception is logged as ``failure_event`` (with ``fields``), never
    lost."""

    def __init__(self, failure_event: str) -> None:
        self._failure_event = failure_event
        self._tasks: set[asyncio.Task[None]] = set()

    def spawn(self, coroutine: Coroutine[Any, Any, object], **fields: object) -> None:
        async def run() -> None:
            try:
                await coroutine
            except asyncio.CancelledError:
                raise
            except Exception:
                _log.exception(self._failure_event, **fields)

        task = asyncio.get_running_loop().create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def cancel_all(self) -> None:
        for task in list(self._tasks):
            task.cancel()

    def __len__(self) -> int:
        return len(self._tasks)
