"""KIP-392 on the broker: a leader with a replica selector answers a consumer in another rack
with ``preferred_read_replica`` and no records; a follower serves consumers that carry client
metadata, up to its own high watermark; consumers without it (Kafka's Fetch before v11) still
read from leaders only."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

from minikafka.broker.replication.replica_selector import (
    RACK_AWARE_REPLICA_SELECTOR,
    ClientMetadata,
)
from minikafka.broker.replication.requests import FetchPartitionResult
from minikafka.proto.errors import ErrorCode
from tests.unit.replication.harness import (
    Cluster,
    fetch_request,
    produce,
    run,
    values_of,
    wait_until,
)

RACKS = {1: "r1", 2: "r2", 3: "r3"}


def rack_cluster(
    tmp_path: Path, selector: str | None = RACK_AWARE_REPLICA_SELECTOR, **config: Any
) -> Cluster:
    cluster = Cluster(tmp_path, replica_selector_class=selector, **config)
    for broker_id, node in cluster.nodes.items():
        node.config = dataclasses.replace(node.config, broker_rack=RACKS[broker_id])
        node.metadata.racks = dict(RACKS)
    return cluster


def client(rack: str) -> ClientMetadata:
    return ClientMetadata(rack, "PLAINTEXT")


async def fetch(
    cluster: Cluster, broker_id: int, offset: int, metadata: ClientMetadata | None, **kwargs: Any
) -> FetchPartitionResult:
    request = dataclasses.replace(fetch_request(offset, **kwargs), client_metadata=metadata)
    (result,) = await cluster[broker_id].replica_manager.fetch_messages(request)
    return result


async def replicated(cluster: Cluster, count: int) -> None:
    await wait_until(
        lambda: all(cluster[b].high_watermark() == count for b in (1, 2, 3)),
        message="every replica's HW reached the produce",
    )


def test_the_leader_sends_a_consumer_to_the_replica_in_its_rack(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = rack_cluster(tmp_path)
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1, 2, 3])
            assert (await produce(cluster[1], b"a", b"b", b"c")).error_code == ErrorCode.NONE
            await replicated(cluster, 3)
            # a long poll is not held: the answer names the replica at once, with no records
            away = await fetch(cluster, 1, 0, client("r2"), max_wait_ms=5_000, min_bytes=1 << 20)
            assert (away.error_code, away.preferred_read_replica) == (ErrorCode.NONE, 2)
            assert (away.records, away.high_watermark) == (b"", 3)
            # the leader's own rack, no rack, no replica in the rack: the leader reads
            for metadata in (client("r1"), client(""), client("r9"), None):
                home = await fetch(cluster, 1, 0, metadata)
                assert home.preferred_read_replica == -1
                assert values_of(home.records) == [b"a", b"b", b"c"]
            # the follower in r2 serves the consumer up to its HW
            near = await fetch(cluster, 2, 0, client("r2"))
            assert (near.error_code, near.preferred_read_replica) == (ErrorCode.NONE, -1)
            assert values_of(near.records) == [b"a", b"b", b"c"]
        finally:
            await cluster.stop()

    run(scenario)


def test_a_follower_reads_up_to_its_own_high_watermark(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = rack_cluster(tmp_path)
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1, 2, 3])
            await produce(cluster[1], b"a", b"b")
            await replicated(cluster, 2)
            # without client metadata (Fetch before v11) a consumer reads from leaders only
            old = await fetch(cluster, 2, 0, None)
            assert old.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
            # at its HW: nothing yet, no error; past its LEO: OFFSET_OUT_OF_RANGE, as Kafka's
            at_end = await fetch(cluster, 2, 2, client("r2"))
            assert (at_end.error_code, at_end.records) == (ErrorCode.NONE, b"")
            beyond = await fetch(cluster, 2, 5, client("r2"))
            assert beyond.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
            # a stale leader epoch is fenced on a follower too
            stale = await fetch(cluster, 2, 0, client("r2"), current_leader_epoch=0)
            assert stale.error_code == ErrorCode.FENCED_LEADER_EPOCH
            # a long poll on the follower wakes when its HW moves
            waiting = fetch(cluster, 2, 2, client("r2"), max_wait_ms=5_000)
            produced = produce(cluster[1], b"c")
            parked, _ = await asyncio.gather(waiting, produced)
            assert values_of(parked.records) == [b"c"]
        finally:
            await cluster.stop()

    run(scenario)


def test_no_preferred_replica_outside_the_isr_or_without_a_selector(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = rack_cluster(tmp_path)
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1, 3], to=[1, 3])  # 2 is not in the ISR
            await produce(cluster[1], b"a")
            result = await fetch(cluster, 1, 0, client("r2"))
            assert result.preferred_read_replica == -1 and values_of(result.records) == [b"a"]
        finally:
            await cluster.stop()

    run(scenario)

    async def unset() -> None:
        cluster = rack_cluster(tmp_path / "unset", selector=None)
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1, 2, 3])
            await produce(cluster[1], b"a")
            result = await fetch(cluster, 1, 0, client("r2"))
            assert result.preferred_read_replica == -1 and values_of(result.records) == [b"a"]
        finally:
            await cluster.stop()

    run(unset)


def test_followers_learn_a_new_high_watermark_at_once(tmp_path: Path) -> None:
    """With a selector, a follower's parked fetch is answered when the HW moves (KIP-392), not
    after replica.fetch.wait.max.ms: the followers serve consumers a fresh HW."""

    async def scenario() -> None:
        cluster = rack_cluster(tmp_path, replica_fetch_wait_max_ms=10_000)
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1, 2, 3])
            await asyncio.sleep(0.3)  # both followers' fetches parked at the leader
            assert (await produce(cluster[1], b"a", acks=-1)).error_code == ErrorCode.NONE
            await wait_until(
                lambda: cluster[2].high_watermark() == 1 and cluster[3].high_watermark() == 1,
                timeout_s=2,
                message="the followers' HW",
            )
        finally:
            await cluster.stop()

    run(scenario)
