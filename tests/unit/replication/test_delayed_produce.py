"""An acks=all produce over many partitions: each partition answered when its own HW passes its
append, and the work of the wait follows the partitions that moved."""

from __future__ import annotations

import asyncio
from pathlib import Path

from minikafka.broker.replication.delayed import Purgatory, high_watermark_key
from minikafka.broker.replication.delayed_produce import DelayedProduce, ProducePartitionStatus
from minikafka.broker.replication.requests import ProducePartition, ProduceRequest
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode
from tests.unit.replication.harness import (
    TOPIC,
    Cluster,
    fetch_request,
    records,
    run,
    wait_until,
)


def _statuses(n: int) -> dict[TopicPartition, ProducePartitionStatus]:
    return {
        TopicPartition(TOPIC, i): ProducePartitionStatus(
            ErrorCode.NONE, required_offset=1, leader_epoch=1, done=False
        )
        for i in range(n)
    }


def test_checks_follow_the_partitions_that_moved() -> None:
    async def scenario() -> None:
        purgatory = Purgatory()
        statuses = _statuses(1000)
        high_watermarks = dict.fromkeys(statuses, 0)

        def outcome(tp: TopicPartition, status: ProducePartitionStatus) -> ErrorCode | None:
            return ErrorCode.NONE if high_watermarks[tp] >= status.required_offset else None

        delayed = DelayedProduce(
            {high_watermark_key(tp): s for tp, s in statuses.items()}, outcome, purgatory
        )
        waiting = asyncio.create_task(delayed.wait(5))
        await asyncio.sleep(0)
        assert delayed.checks == 1000  # each partition once, on arrival
        assert len(purgatory) == 1000

        moved = list(statuses)[:10]
        for tp in moved:
            high_watermarks[tp] = 1
            purgatory.notify(high_watermark_key(tp))
        purgatory.notify(high_watermark_key(TopicPartition("other", 0)))
        await asyncio.sleep(0)
        assert delayed.checks == 1010  # the ten that moved, nothing else
        assert not waiting.done()
        assert [tp for tp, s in statuses.items() if s.done] == moved
        assert len(purgatory) == 990  # answered partitions are no longer watched

        # A notification that does not reach the append: checked, still waiting.
        tp = list(statuses)[10]
        purgatory.notify(high_watermark_key(tp))
        await asyncio.sleep(0)
        assert delayed.checks == 1011 and not statuses[tp].done

        for tp in list(statuses)[10:]:
            high_watermarks[tp] = 1
            purgatory.notify(high_watermark_key(tp))
        await asyncio.wait_for(waiting, 1)
        assert delayed.checks == 2001
        assert all(s.done and s.code == ErrorCode.NONE for s in statuses.values())
        assert len(purgatory) == 0

    asyncio.run(scenario())


def test_timeout_leaves_the_partitions_still_waiting_and_unwatches_them() -> None:
    async def scenario() -> None:
        purgatory = Purgatory()
        statuses = _statuses(3)
        first = next(iter(statuses))

        def outcome(tp: TopicPartition, status: ProducePartitionStatus) -> ErrorCode | None:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER if tp == first else None

        delayed = DelayedProduce(
            {high_watermark_key(tp): s for tp, s in statuses.items()}, outcome, purgatory
        )
        await asyncio.wait_for(delayed.wait(0.05), 1)
        assert statuses[first].done and statuses[first].code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert [s.done for s in statuses.values()] == [True, False, False]
        assert len(purgatory) == 0

    asyncio.run(scenario())


def test_acks_all_over_many_partitions_answers_once_each_hw_passes(tmp_path: Path) -> None:
    partitions = 20

    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1, 2))
        await cluster.start()
        try:
            await cluster[2].stop()  # broker 2's fetches are made by hand below
            for p in range(partitions):
                await cluster.elect(1, 1, [1, 2], [1, 2], to=[1], partition=p)
            replica_manager = cluster[1].replica_manager
            request = ProduceRequest(
                -1,
                5_000,
                [ProducePartition(TOPIC, p, records(b"v%d" % p)) for p in range(partitions)],
            )
            answer = asyncio.create_task(replica_manager.append_records(request))
            await wait_until(lambda: replica_manager.stats.delayed_produce == 1)  # parked
            assert not answer.done()

            async def follower_fetches(indexes: range) -> None:
                for p in indexes:
                    await replica_manager.fetch_messages(
                        fetch_request(1, replica_id=2, partition=p)
                    )

            await follower_fetches(range(partitions - 1))
            await asyncio.sleep(0.05)
            assert not answer.done()  # one partition's HW has not passed its append
            assert replica_manager.stats.delayed_produce == 1
            await follower_fetches(range(partitions - 1, partitions))
            results = await asyncio.wait_for(answer, 2)
            assert [(r.partition, r.error_code, r.base_offset) for r in results] == [
                (p, ErrorCode.NONE, 0) for p in range(partitions)
            ]
            assert replica_manager.stats.delayed_produce == 0
            assert len(replica_manager.purgatory) == 0
        finally:
            await cluster.stop()

    run(scenario)


def test_acks_all_over_many_partitions_times_out_per_partition(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1, 2))
        await cluster.start()
        try:
            await cluster[2].stop()
            for p in range(3):
                await cluster.elect(1, 1, [1, 2], [1, 2], to=[1], partition=p)
            replica_manager = cluster[1].replica_manager
            request = ProduceRequest(
                -1, 200, [ProducePartition(TOPIC, p, records(b"x")) for p in range(3)]
            )
            answer = asyncio.create_task(replica_manager.append_records(request))
            await asyncio.sleep(0.02)
            await replica_manager.fetch_messages(fetch_request(1, replica_id=2, partition=1))
            results = await asyncio.wait_for(answer, 2)
            assert [r.error_code for r in results] == [
                ErrorCode.REQUEST_TIMED_OUT,
                ErrorCode.NONE,
                ErrorCode.REQUEST_TIMED_OUT,
            ]
            assert len(replica_manager.purgatory) == 0
        finally:
            await cluster.stop()

    run(scenario)
