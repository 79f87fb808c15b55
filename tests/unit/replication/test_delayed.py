"""The purgatory: parked futures woken by key, with deadlines."""

from __future__ import annotations

import asyncio

from minikafka.broker.replication.delayed import (
    Purgatory,
    complete_when,
    high_watermark_key,
    log_end_offset_key,
)
from minikafka.proto.common import TopicPartition

TP = TopicPartition("t", 0)


def test_notify_wakes_only_its_key() -> None:
    async def scenario() -> None:
        purgatory = Purgatory()
        hw = asyncio.create_task(purgatory.wait([high_watermark_key(TP)], 5))
        leo = asyncio.create_task(purgatory.wait([log_end_offset_key(TP)], 0.05))
        await asyncio.sleep(0)
        assert len(purgatory) == 2
        purgatory.notify(high_watermark_key(TP))
        assert await hw is True
        assert await leo is False  # timed out
        assert len(purgatory) == 0

    asyncio.run(scenario())


def test_complete_when_rechecks_after_each_wake_up() -> None:
    async def scenario() -> None:
        purgatory = Purgatory()
        value = 0
        checks = 0

        def check() -> int | None:
            nonlocal checks
            checks += 1
            return value if value >= 2 else None

        loop = asyncio.get_running_loop()
        task = asyncio.create_task(
            complete_when(check, [high_watermark_key(TP)], purgatory, loop.time() + 5)
        )
        for _ in range(2):
            await asyncio.sleep(0.01)  # the task is parked again
            value += 1
            purgatory.notify(high_watermark_key(TP))
        assert await task == 2
        assert checks == 3  # once at the start, once per wake-up: no polling

        def never() -> bool | None:
            return None

        assert await complete_when(never, ["k"], purgatory, loop.time() + 0.02) is None

    asyncio.run(scenario())


def test_a_notified_waiter_runs_in_the_next_turn_of_the_loop() -> None:
    """No hops between ``notify`` and the waiter: on a busy broker each turn of the loop runs
    every other ready callback first (the acks=all path waits here up to three times)."""

    async def scenario() -> None:
        purgatory = Purgatory()
        loop = asyncio.get_running_loop()
        turns = 0
        resumed_after: int | None = None

        async def waiter() -> None:
            nonlocal resumed_after
            assert await purgatory.wait([high_watermark_key(TP)], 5) is True
            resumed_after = turns

        def count() -> None:
            nonlocal turns
            turns += 1
            if resumed_after is None and turns < 10:
                loop.call_soon(count)

        task = asyncio.create_task(waiter())
        await asyncio.sleep(0)
        purgatory.notify(high_watermark_key(TP))
        loop.call_soon(count)
        await task
        assert resumed_after == 0

    asyncio.run(scenario())


def test_a_cancelled_waiter_leaves_nothing_parked() -> None:
    async def scenario() -> None:
        purgatory = Purgatory()
        task = asyncio.create_task(
            purgatory.wait([high_watermark_key(TP), log_end_offset_key(TP)], 5)
        )
        await asyncio.sleep(0)
        assert len(purgatory) == 2
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        assert len(purgatory) == 0
        purgatory.notify(high_watermark_key(TP))  # nothing left to wake

    asyncio.run(scenario())
