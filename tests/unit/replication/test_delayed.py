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
