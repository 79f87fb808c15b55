"""A full disk under a leader and under a follower (KIP-112), in-process.

The ENOSPC is real: the active segment's file descriptor is replaced (dup2) by one on
/dev/full, whose writes fail as a full disk's do. The harness plays the broker's part of
wiring the LogManager's failure channel to ``ReplicaManager.handle_log_dir_failure``.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from minikafka.broker.replication.requests import ListOffsetsPartition, ListOffsetsRequest
from minikafka.broker.storage.log import LATEST_TIMESTAMP
from minikafka.proto.errors import ErrorCode
from tests.unit.replication.harness import TP, Cluster, Node, consume, produce, run, wait_until

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")


def _wire_failure_handling(node: Node) -> None:
    """What BrokerServer does: an offline dir is handed to the replica manager on the loop."""
    loop = asyncio.get_running_loop()
    rm = node.replica_manager
    assert node.log_manager is not None

    def on_offline(log_dir: Path) -> None:
        loop.call_soon_threadsafe(lambda: loop.create_task(rm.handle_log_dir_failure(log_dir)))

    node.log_manager.failure_channel.add_listener(on_offline)


def _fill_disk(node: Node) -> None:
    """Every later write to the replica's active segment fails with ENOSPC."""
    segment = node.log().active_segment
    full = os.open("/dev/full", os.O_WRONLY)
    try:
        os.dup2(full, segment._file)
    finally:
        os.close(full)


def test_a_full_disk_under_the_leader_answers_kafka_storage_error(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start()
        try:
            leader = cluster[1]
            _wire_failure_handling(leader)
            await cluster.elect(1, 1, [1, 2, 3])
            assert (await produce(leader, b"a", b"b")).error_code == ErrorCode.NONE
            _fill_disk(leader)
            with capture_logs() as logs:
                first = await produce(leader, b"c")
                await wait_until(lambda: TP in leader.replica_manager.offline_partitions)
                second = await produce(leader, b"d")
            # Never UNKNOWN_SERVER_ERROR: the producer retries on the next leader.
            assert first.error_code == ErrorCode.KAFKA_STORAGE_ERROR, first
            assert "No space left on device" in first.error_message
            assert second.error_code == ErrorCode.KAFKA_STORAGE_ERROR
            events = [e["event"] for e in logs]
            assert events.count("log_dir.offline") == 1
            assert "produce.failed" not in events
            assert not any("exc_info" in e or "exception" in e for e in logs)

            # Fetch, ListOffsets and LeaderAndIsr answer KAFKA_STORAGE_ERROR for it too.
            fetched = await consume(leader, 0)
            assert fetched.error_code == ErrorCode.KAFKA_STORAGE_ERROR
            offsets = await leader.replica_manager.list_offsets(
                ListOffsetsRequest(-1, [ListOffsetsPartition(TP.topic, 0, LATEST_TIMESTAMP)])
            )
            assert offsets[0].error_code == ErrorCode.KAFKA_STORAGE_ERROR
            responses = await cluster.elect(2, 2, [2, 3])
            errors = {b: r.partition_errors[0].error_code for b, r in responses.items()}
            assert errors == {
                1: ErrorCode.KAFKA_STORAGE_ERROR,
                2: ErrorCode.NONE,
                3: ErrorCode.NONE,
            }
            # The other replicas go on: nothing acknowledged was lost.
            assert (await produce(cluster[2], b"e")).error_code == ErrorCode.NONE
            assert cluster[2].values() == [b"a", b"b", b"e"]
        finally:
            await cluster.stop()

    run(scenario)


def test_a_full_disk_under_a_follower_takes_its_dir_offline(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start()
        try:
            follower = cluster[3]
            _wire_failure_handling(follower)
            await cluster.elect(1, 1, [1, 2, 3])
            assert (await produce(cluster[1], b"a")).error_code == ErrorCode.NONE
            _fill_disk(follower)
            with capture_logs() as logs:
                result = await produce(cluster[1], b"b", timeout_ms=500)
                await wait_until(lambda: TP in follower.replica_manager.offline_partitions)
            # The follower never got b: acks=all cannot complete until the ISR shrinks.
            assert result.error_code == ErrorCode.REQUEST_TIMED_OUT
            events = [e["event"] for e in logs]
            assert events.count("log_dir.offline") == 1
            assert "fetcher.error" not in events
            assert follower.replica_manager.get_partition(TP) is None
            assert follower.replica_manager.fetchers.fetch_state(TP) is None
        finally:
            await cluster.stop()

    run(scenario)
