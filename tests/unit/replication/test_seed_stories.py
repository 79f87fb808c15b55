"""KIP-101's two failure stories, replayed on two replicas.

With ``minikafka.test.follower.truncation=high_watermark`` (Kafka before KIP-101: a replica
becoming follower truncates to its own high watermark) the stories end as they did in Kafka: an
acknowledged message is lost, or the replicas hold different messages at the same offset. With
the default (leader-epoch truncation) they do not.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.broker.replication.replica_manager import FOLLOWER_TRUNCATION_KEY
from minikafka.proto.errors import ErrorCode
from tests.unit.replication.harness import Cluster, produce, run, wait_until

A, B = 1, 2
REPLICAS = (A, B)


def _cluster(tmp_path: Path, truncation: str, transport: str) -> Cluster:
    # A long replica.fetch.wait.max.ms: a follower's fetch that finds no new data is parked on
    # the leader that long, so the follower learns a new HW only that much later.
    return Cluster(
        tmp_path,
        broker_ids=REPLICAS,
        replica_fetch_wait_max_ms=3_000,
        replica_lag_time_max_ms=30_000,
        unknown={FOLLOWER_TRUNCATION_KEY: truncation},
        transport=transport,
    )


# Followers fetch over gRPC or over the Kafka protocol (Fetch, OffsetsForLeaderEpoch).
@pytest.mark.parametrize("transport", ["grpc", "kafka"])
@pytest.mark.parametrize("truncation", ["high_watermark", "leader_epoch"])
def test_story_1_acknowledged_message_lost(tmp_path: Path, truncation: str, transport: str) -> None:
    """A leads; m1 and m2 are acked with acks=all. B restarts before it learns HW=2, and
    A dies before B fetches again; B becomes leader. Pre-KIP-101, B truncated m2 away."""

    async def scenario() -> None:
        cluster = _cluster(tmp_path, truncation, transport)
        await cluster.start()
        try:
            await cluster.elect(A, 1, REPLICAS, REPLICAS)
            assert (await produce(cluster[A], b"m1")).error_code == ErrorCode.NONE
            assert (await produce(cluster[A], b"m2")).error_code == ErrorCode.NONE
            # m2 is acked: B has it, but its HW is still 1 (its next fetch is parked on A).
            assert cluster[B].values() == [b"m1", b"m2"]
            assert cluster[B].high_watermark() == 1

            await cluster[B].stop()  # HW 1 checkpointed
            await cluster[A].stop()  # A dies while B is down
            await cluster[B].start()
            # The controller has not noticed A's death yet: B rejoins as A's follower.
            await cluster.elect(A, 1, REPLICAS, REPLICAS, to=[B])
            # Then A's death is noticed: B, in the ISR, is elected.
            await cluster.elect(B, 2, [B], REPLICAS, to=[B])
            # A comes back as B's follower.
            await cluster[A].start()
            await cluster.elect(B, 2, [B], REPLICAS, to=[A])
            await wait_until(
                lambda: (
                    cluster[A].log().log_end_offset == cluster[B].log().log_end_offset
                    and cluster[A].values() == cluster[B].values()
                ),
                message="A caught up with B",
            )
            if truncation == "high_watermark":
                assert cluster[B].values() == [b"m1"]  # the acked m2 is gone
                assert cluster[A].values() == [b"m1"]
            else:
                assert cluster[B].values() == [b"m1", b"m2"]
                assert cluster[A].values() == [b"m1", b"m2"]
        finally:
            await cluster.stop()

    run(scenario)


@pytest.mark.parametrize("transport", ["grpc", "kafka"])
@pytest.mark.parametrize("truncation", ["high_watermark", "leader_epoch"])
def test_story_2_replicas_diverge(tmp_path: Path, truncation: str, transport: str) -> None:
    """A leads with m1, m2 (HW 2 on A). Both brokers crash; B loses its unflushed m2. B comes
    back first, is elected and takes m3 at offset 1. A comes back as follower: pre-KIP-101 it
    kept m2 (below its HW), and A and B held different messages at offset 1 for ever."""

    async def scenario() -> None:
        cluster = _cluster(tmp_path, truncation, transport)
        await cluster.start()
        try:
            await cluster.elect(A, 1, REPLICAS, REPLICAS)
            assert (await produce(cluster[A], b"m1")).error_code == ErrorCode.NONE
            assert (await produce(cluster[A], b"m2")).error_code == ErrorCode.NONE
            assert cluster[A].high_watermark() == 2

            # Power failure: both go down; B's m2 was never flushed and is lost.
            await cluster[A].stop()
            await cluster[B].stop()
            await cluster[B].start()
            cluster[B].log_manager.get_or_create_log("t", 0).truncate_to(1)  # type: ignore[union-attr]
            await cluster.elect(B, 2, [B], REPLICAS, to=[B])
            assert cluster[B].values() == [b"m1"]
            assert (await produce(cluster[B], b"m3", acks=1)).base_offset == 1

            await cluster[A].start()
            await cluster.elect(B, 2, [B], REPLICAS, to=[A])
            assert (await produce(cluster[B], b"m4", acks=1)).base_offset == 2
            await wait_until(
                lambda: cluster[A].log().log_end_offset == 3, message="A fetched up to m4"
            )
            assert cluster[B].values() == [b"m1", b"m3", b"m4"]
            if truncation == "high_watermark":
                assert cluster[A].values() == [b"m1", b"m2", b"m4"]  # diverged at offset 1
            else:
                assert cluster[A].values() == [b"m1", b"m3", b"m4"]
        finally:
            await cluster.stop()

    run(scenario)
