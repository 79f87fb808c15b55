"""DeleteRecords at the leader (Kafka's ReplicaManager.deleteRecords + DelayedDeleteRecords):
the answer waits until the lowest log start offset over the replicas on live brokers reaches
the target, or times out."""

from __future__ import annotations

import asyncio
from pathlib import Path

from minikafka.broker.replication.requests import DeleteRecordsPartition
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode
from tests.unit.replication.harness import TOPIC, Cluster, produce, run, wait_until


async def _replicated(cluster: Cluster, count: int) -> None:
    await cluster.start()
    await cluster.elect(1, 1, [1, 2, 3])
    result = await produce(cluster[1], *[b"v%d" % i for i in range(count)], acks=-1)
    assert result.error_code == ErrorCode.NONE
    await wait_until(lambda: all(cluster[b].high_watermark() == count for b in (2, 3)))


def test_answers_once_every_replica_moved_its_log_start_offset(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        try:
            await _replicated(cluster, 10)
            [result] = await cluster[1].replica_manager.delete_records(
                [DeleteRecordsPartition(TOPIC, 0, 4)], 5_000
            )
            assert result.error_code == ErrorCode.NONE
            assert result.low_watermark == 4
            # The answer came after the followers reported their log start offsets.
            assert [cluster[b].log().log_start_offset for b in (1, 2, 3)] == [4, 4, 4]
            [to_hw] = await cluster[1].replica_manager.delete_records(
                [DeleteRecordsPartition(TOPIC, 0, -1)], 5_000
            )
            assert (to_hw.error_code, to_hw.low_watermark) == (ErrorCode.NONE, 10)
        finally:
            await cluster.stop()

    run(scenario)


def test_times_out_while_a_live_follower_lags_and_skips_dead_brokers(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        try:
            await _replicated(cluster, 10)
            await cluster[3].stop()  # still alive in the leader's metadata
            loop = asyncio.get_running_loop()
            started = loop.time()
            [result] = await cluster[1].replica_manager.delete_records(
                [DeleteRecordsPartition(TOPIC, 0, 4)], 300
            )
            assert loop.time() - started >= 0.3
            assert result.error_code == ErrorCode.REQUEST_TIMED_OUT
            assert result.low_watermark == 4  # the leader's own, as Kafka answers
            assert cluster[1].log().log_start_offset == 4
            # Broker 3 gone from the metadata: the low watermark is over the live replicas.
            cluster[1].metadata.dead.add(3)
            [result] = await cluster[1].replica_manager.delete_records(
                [DeleteRecordsPartition(TOPIC, 0, 6)], 5_000
            )
            assert (result.error_code, result.low_watermark) == (ErrorCode.NONE, 6)
            assert cluster[2].log().log_start_offset == 6
        finally:
            await cluster.stop()

    run(scenario)


def test_error_codes(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        try:
            await _replicated(cluster, 3)
            leader = cluster[1].replica_manager
            cluster[1].metadata.partitions.add((TOPIC, 7))  # known, not hosted here
            results = await leader.delete_records(
                [
                    DeleteRecordsPartition(TOPIC, 0, 4),  # beyond the high watermark
                    DeleteRecordsPartition(TOPIC, 7, 1),
                    DeleteRecordsPartition(TOPIC, 9, 1),
                    DeleteRecordsPartition("other", 0, 1),
                ],
                1_000,
            )
            assert [(r.topic, r.partition, r.error_code, r.low_watermark) for r in results] == [
                (TOPIC, 0, ErrorCode.OFFSET_OUT_OF_RANGE, -1),
                (TOPIC, 7, ErrorCode.NOT_LEADER_OR_FOLLOWER, -1),
                (TOPIC, 9, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
                ("other", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
            ]
            [at_follower] = await cluster[2].replica_manager.delete_records(
                [DeleteRecordsPartition(TOPIC, 0, 1)], 1_000
            )
            assert at_follower.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
            assert cluster[2].log().log_start_offset == 0
            assert leader.get_partition(TopicPartition(TOPIC, 0)) is not None
        finally:
            await cluster.stop()

    run(scenario)
