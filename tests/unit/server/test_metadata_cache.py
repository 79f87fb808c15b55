"""MetadataCache.wait_until: a wait woken by the UpdateMetadata that makes its condition hold,
not by a poll, bounded by its timeout, and nothing left parked after a timeout or a cancel."""

from __future__ import annotations

import asyncio

import pytest

from minikafka.broker.server.metadata_cache import MetadataCache
from minikafka.proto import minikafka_pb2 as pb


def update(*partitions: tuple[str, int, int]) -> pb.UpdateMetadataRequest:
    """An UpdateMetadata from controller 1 with (topic, partition, leader) states."""
    request = pb.UpdateMetadataRequest(controller_id=1, controller_epoch=1, broker_epoch=5)
    request.live_brokers.add(id=1, host="127.0.0.1", port=9091)
    for topic, partition, leader in partitions:
        request.partition_states.add(
            topic_name=topic,
            topic_id="AAAAAAAAAAAAAAAAAAAAAQ",
            partition_index=partition,
            leader=leader,
            isr=[1],
            replicas=[1],
        )
    return request


def has_leader(cache: MetadataCache, topic: str, partition: int) -> bool:
    info = cache.get_partition(topic, partition)
    return info is not None and info.leader >= 0


async def turns(n: int = 3) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


def test_an_update_that_makes_the_condition_hold_wakes_the_wait() -> None:
    async def scenario() -> None:
        cache = MetadataCache(1)
        wait = asyncio.ensure_future(cache.wait_until(lambda: has_leader(cache, "t", 0), 30))
        await turns()
        assert not wait.done() and cache.waiting == 1

        cache.update(update())  # no news of t: parked again
        await turns()
        assert not wait.done() and cache.waiting == 1
        cache.update(update(("t", 0, -1)))  # t-0 known, without a leader yet
        await turns()
        assert not wait.done() and cache.waiting == 1

        cache.update(update(("t", 0, 1)))
        await turns()  # a few turns of the loop, not a poll's interval
        assert wait.done() and wait.result() is True
        assert cache.waiting == 0

    asyncio.run(scenario())


def test_a_condition_that_already_holds_parks_nothing() -> None:
    async def scenario() -> None:
        cache = MetadataCache(1)
        cache.update(update(("t", 0, 1)))
        assert await cache.wait_until(lambda: has_leader(cache, "t", 0), 30) is True
        assert cache.waiting == 0

    asyncio.run(scenario())


def test_a_wait_times_out_and_leaves_nothing_parked() -> None:
    async def scenario() -> None:
        cache = MetadataCache(1)
        loop = asyncio.get_running_loop()
        started = loop.time()
        assert await cache.wait_until(lambda: has_leader(cache, "t", 0), 0.05) is False
        assert loop.time() - started >= 0.05
        assert cache.waiting == 0
        cache.update(update(("t", 0, 1)))  # nobody left to wake
        assert cache.waiting == 0

    asyncio.run(scenario())


def test_a_cancelled_wait_leaves_nothing_parked() -> None:
    async def scenario() -> None:
        cache = MetadataCache(1)
        wait = asyncio.ensure_future(cache.wait_until(lambda: has_leader(cache, "t", 0), 30))
        await turns()
        assert cache.waiting == 1
        wait.cancel()
        with pytest.raises(asyncio.CancelledError):
            await wait
        assert cache.waiting == 0

    asyncio.run(scenario())


def test_each_wait_is_woken_when_its_own_condition_holds() -> None:
    async def scenario() -> None:
        cache = MetadataCache(1)
        for_a = asyncio.ensure_future(cache.wait_until(lambda: has_leader(cache, "a", 0), 30))
        for_b = asyncio.ensure_future(cache.wait_until(lambda: has_leader(cache, "b", 0), 30))
        await turns()
        assert cache.waiting == 2
        cache.update(update(("a", 0, 1)))
        await turns()
        assert for_a.done() and not for_b.done() and cache.waiting == 1
        cache.update(update(("b", 0, 1)))
        await turns()
        assert for_b.done() and cache.waiting == 0

    asyncio.run(scenario())
