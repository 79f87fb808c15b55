"""Replication throttles (KIP-73) on in-process brokers (harness.py): which fetches a quota holds
back and what it counts, with a quota the test switches on and off (the rate itself:
tests/unit/server/test_replication_quotas.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from minikafka.broker.replication.replica_quota import ReplicaQuotas
from minikafka.broker.storage.log_manager import LogManager
from minikafka.proto.common import TopicPartition
from tests.unit.replication import harness
from tests.unit.replication.harness import (
    TOPIC,
    TP,
    Cluster,
    fetch_request,
    produce,
    produce_request,
    records,
    run,
    wait_until,
)

OTHER = TopicPartition(TOPIC, 1)


class FakeQuota:
    """A quota exceeded or not as the test says; counts what is recorded."""

    def __init__(self, *throttled: TopicPartition) -> None:
        self.throttled = set(throttled)
        self.exceeded = True
        self.recorded = 0

    def is_throttled(self, tp: TopicPartition) -> bool:
        return tp in self.throttled

    def is_quota_exceeded(self) -> bool:
        return self.exceeded

    def record(self, value: int) -> None:
        self.recorded += value


def test_a_leader_over_its_quota_sends_no_records_of_a_throttled_partition_to_a_lagging_follower(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, (1, 2))
        await cluster.start()
        quota = FakeQuota(TP)
        leader, follower = cluster[1], cluster[2]
        leader.replica_manager.quotas = ReplicaQuotas(leader=quota)
        try:
            await cluster.elect(1, 1, [1], [1, 2])  # 2 is being added: not in the ISR
            for i in range(5):
                await produce(leader, b"v%d" % i, acks=1)
            answer = (await leader.replica_manager.fetch_messages(fetch_request(0, replica_id=2)))[
                0
            ]
            assert answer.records == b"" and answer.high_watermark == 5
            # Consumers are not throttled: they read up to the HW.
            assert len((await leader.replica_manager.fetch_messages(fetch_request(0)))[0].records)
            await asyncio.sleep(0.5)
            assert follower.log().log_end_offset == 0
            assert quota.recorded == 0

            quota.exceeded = False
            await wait_until(lambda: follower.log().log_end_offset == 5)
            assert quota.recorded == leader.log().size
            await wait_until(lambda: leader.isr() == {1, 2})

            # Over the quota again: an in-sync follower is not throttled, its bytes still count.
            quota.exceeded = True
            recorded = quota.recorded
            assert (await produce(leader, b"in-sync", acks=-1)).error_code == 0
            assert follower.values()[-1] == b"in-sync"
            assert quota.recorded > recorded
        finally:
            await cluster.stop()

    run(scenario)


def test_a_follower_over_its_quota_leaves_its_throttled_partitions_out_of_its_fetches(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, (1, 2))
        await cluster.start()
        quota = FakeQuota(TP)
        leader, follower = cluster[1], cluster[2]
        follower.replica_manager.quotas = ReplicaQuotas(follower=quota)  # before its fetchers
        try:
            await cluster.elect(1, 1, [1], [1, 2], partition=0)
            await cluster.elect(1, 1, [1], [1, 2], partition=1)
            for tp in (TP, OTHER):
                for i in range(3):
                    data = records(b"%s-%d" % (str(tp).encode(), i))
                    results = await leader.replica_manager.append_records(
                        produce_request(data, acks=1, partition=tp.partition)
                    )
                    assert results[0].error_code == 0
            # The other partition goes on replicating; the throttled one waits.
            await wait_until(lambda: follower.log(OTHER).log_end_offset == 3)
            await asyncio.sleep(0.3)
            assert follower.log(TP).log_end_offset == 0
            assert quota.recorded == 0

            quota.exceeded = False
            await wait_until(lambda: follower.log(TP).log_end_offset == 3)
            # Only the throttled partition's bytes count.
            assert quota.recorded == leader.log(TP).size
            assert follower.values(TP) == leader.values(TP)
        finally:
            await cluster.stop()

    run(scenario)


def test_a_move_between_log_dirs_waits_while_its_quota_is_exceeded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def with_b(dirs: Sequence[Path], *args: Any, **kwargs: Any) -> LogManager:
        first = Path(dirs[0])
        return LogManager([first, first.with_name(first.name + "-b")], *args, **kwargs)

    monkeypatch.setattr(harness, "LogManager", with_b)

    async def scenario() -> None:
        cluster = Cluster(tmp_path, (1,))
        await cluster.start()
        node = cluster[1]
        rm = node.replica_manager
        quota = FakeQuota()  # replica.alter.log.dirs.io.max.bytes.per.second: every copy counts
        rm.alter_log_dirs.fetcher._quota = quota
        try:
            await cluster.elect(1, 1, [1], [1])
            for i in range(20):
                await produce(node, b"v%d" % i)
            manager = rm.log_manager
            target = next(d for d in manager.log_dirs if d != manager.log_dir_of(TOPIC, 0))
            assert rm.alter_log_dirs.alter_replica_log_dirs({TP: str(target)}) == {TP: 0}
            await asyncio.sleep(0.5)
            assert rm.alter_log_dirs.swaps == 0 and quota.recorded == 0

            quota.exceeded = False
            await wait_until(lambda: rm.alter_log_dirs.swaps == 1)
            assert manager.log_dir_of(TOPIC, 0) == target
            assert quota.recorded == node.log().size
            assert node.values() == [b"v%d" % i for i in range(20)]
        finally:
            await cluster.stop()

    run(scenario)
