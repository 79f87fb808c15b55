"""Followers fetch in incremental fetch sessions (KIP-227): in-process brokers over real gRPC
(harness.py), the test playing the controller."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from minikafka.broker.replication.fetch_session import FetchSessionStats
from minikafka.broker.replication.fetcher import ReplicaFetcher
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode
from tests.unit.replication.harness import (
    Cluster,
    Node,
    produce_request,
    records,
    run,
    wait_until,
)

IDLE = "idle"
BUSY = "busy"


def _stats(node: Node) -> FetchSessionStats:
    return FetchSessionStats(**vars(node.replica_manager.fetch_sessions.stats))


def _fetcher(node: Node, leader: int) -> ReplicaFetcher:
    fetcher = node.replica_manager.fetchers.fetchers[leader]
    assert isinstance(fetcher, ReplicaFetcher)
    return fetcher


async def _produce(node: Node, topic: str, partition: int, value: bytes) -> None:
    results = await node.replica_manager.append_records(
        produce_request(records(value), acks=-1, topic=topic, partition=partition)
    )
    assert results[0].error_code == ErrorCode.NONE, results[0]


def _session_partitions(leader: Node, follower: Node) -> set[TopicPartition]:
    session_id = _fetcher(follower, leader.broker_id).session.session_id
    session = leader.replica_manager.fetch_sessions.cache.get(session_id)
    return set() if session is None else set(session.partitions)


def _settled(leader: Node, follower: Node) -> bool:
    """The follower's session at the leader holds no partition changed since last answered."""
    session_id = _fetcher(follower, leader.broker_id).session.session_id
    session = leader.replica_manager.fetch_sessions.cache.get(session_id)
    return session is not None and not session.changed


def test_incremental_fetches_list_only_the_busy_partition(tmp_path: Path) -> None:
    """40 idle partitions beside a busy one: after the first full fetch, the follower's requests
    and the leader's answers carry about one partition each, and the leader reads only the busy
    one (when it is listed, and when it changed)."""

    async def scenario() -> None:
        cluster = Cluster(tmp_path, (1, 2))
        await cluster.start()
        try:
            for p in range(40):
                await cluster.elect(1, 1, [1, 2], [1, 2], topic=IDLE, partition=p)
            await cluster.elect(1, 1, [1, 2], [1, 2], topic=BUSY, partition=0)
            leader, follower = cluster[1], cluster[2]
            await wait_until(lambda: _stats(leader).partitions_cached == 41)
            assert _stats(leader).sessions == 1
            # The new partitions' first high watermarks are answered after the full fetch:
            # count from when they all have been.
            await wait_until(lambda: _settled(leader, follower))
            before = _stats(leader)
            for i in range(30):
                await _produce(leader, BUSY, 0, b"v%d" % i)
            after = _stats(leader)
            fetches = after.incremental_fetches - before.incremental_fetches
            assert fetches >= 30  # acks=all: at least one follower fetch per produce
            assert after.full_fetches == before.full_fetches == 1
            requested = after.partitions_requested - before.partitions_requested
            answered = after.partitions_answered - before.partitions_answered
            read = after.partitions_read - before.partitions_read
            # Without sessions every fetch lists, reads and answers all 41 partitions; with them
            # only the busy one, plus an idle one now and then (a HW the follower has not yet
            # seen, a fetch that raced a produce on a loaded machine). The busy one is read when
            # the fetch that lists it comes and when a produce wakes the fetch parked after it.
            assert requested <= 2 * fetches, (requested, fetches)
            assert answered <= 4 * fetches, (answered, fetches)
            assert read <= 3 * fetches, (read, fetches)
            tp = TopicPartition(BUSY, 0)
            await wait_until(lambda: follower.high_watermark(tp) == 30)
            assert follower.values(tp) == leader.values(tp)
            assert leader.isr(TopicPartition(IDLE, 7)) == {1, 2}
        finally:
            await cluster.stop()

    run(scenario)


def test_a_new_record_wakes_a_parked_incremental_fetch_at_once(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, (1, 2), replica_fetch_wait_max_ms=5_000)
        await cluster.start()
        try:
            for p in range(5):
                await cluster.elect(1, 1, [1, 2], [1, 2], topic=BUSY, partition=p)
            leader = cluster[1]
            await wait_until(lambda: _stats(leader).incremental_fetches > 0)
            await wait_until(lambda: leader.replica_manager.stats.delayed_fetch == 1)
            started = time.monotonic()
            await _produce(leader, BUSY, 3, b"now")  # acks=all: needs the follower's fetch
            assert time.monotonic() - started < 2.0  # not the 5 s long poll
            assert _stats(leader).incremental_fetches >= 2
        finally:
            await cluster.stop()

    run(scenario)


def test_a_leader_change_moves_the_partition_between_sessions(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, (1, 2, 3))
        await cluster.start()
        try:
            for p in range(4):
                await cluster.elect(1, 1, [1, 2, 3], topic=BUSY, partition=p)
            one, two, three = cluster[1], cluster[2], cluster[3]
            for p in range(4):
                await _produce(one, BUSY, p, b"before-%d" % p)
            moved = TopicPartition(BUSY, 0)
            await wait_until(lambda: moved in _session_partitions(one, three))

            # Partition 0 moves to broker 2 (broker 1 follows it now), mid-session.
            await cluster.elect(2, 2, [1, 2, 3], topic=BUSY, partition=0)
            await wait_until(
                lambda: (
                    moved not in _session_partitions(one, three)
                    and moved in _session_partitions(two, three)
                    and moved in _session_partitions(two, one)
                ),
                message="partition 0 forgotten by broker 1's session, in broker 2's",
            )
            assert {TopicPartition(BUSY, p) for p in (1, 2, 3)} == _session_partitions(one, three)
            await _produce(two, BUSY, 0, b"after-0")
            await _produce(one, BUSY, 1, b"after-1")
            for p, expected in ((0, [b"before-0", b"after-0"]), (1, [b"before-1", b"after-1"])):
                tp = TopicPartition(BUSY, p)

                def replicated(tp: TopicPartition = tp) -> bool:
                    return all(cluster[b].high_watermark(tp) == 2 for b in (1, 2, 3))

                await wait_until(replicated)
                for b in (1, 2, 3):
                    assert cluster[b].values(tp) == expected, (b, p)
        finally:
            await cluster.stop()

    run(scenario)


def test_an_idle_session_reads_nothing_and_its_followers_stay_in_the_isr(tmp_path: Path) -> None:
    """Incremental fetches of a session none of whose partitions changed read no partition (the
    leader's own count of the partitions its fetches read), build none on the follower, and
    park until the long poll ends;
    the idle followers are caught up all along: after several replica.lag.time.max.ms nobody
    left the ISR. A follower that stops fetching does leave it."""

    async def scenario() -> None:
        cluster = Cluster(
            tmp_path, (1, 2, 3), replica_lag_time_max_ms=1_000, replica_fetch_wait_max_ms=200
        )
        await cluster.start()
        try:
            for p in range(20):
                await cluster.elect(1, 1, [1, 2, 3], [1, 2, 3], topic=IDLE, partition=p)
            leader = cluster[1]
            await _produce(leader, IDLE, 5, b"once")
            await wait_until(lambda: _stats(leader).partitions_cached == 40)
            await wait_until(
                lambda: all(
                    cluster[b].high_watermark(TopicPartition(IDLE, 5)) == 1 for b in (1, 2, 3)
                )
            )
            await wait_until(
                lambda: all(_settled(leader, cluster[b]) for b in (2, 3)),
                message="every partition of both sessions settled",
            )
            before = _stats(leader)
            fetchers = [_fetcher(cluster[b], 1) for b in (2, 3)]
            refiled = [f.stats.partitions_refiled for f in fetchers]
            rounds = [f.stats.rounds for f in fetchers]
            await asyncio.sleep(3.0)  # three lag times; the ISR check runs every 0.5 s
            after = _stats(leader)
            # Nor did the followers: their idle rounds filed no partition again.
            assert [f.stats.partitions_refiled for f in fetchers] == refiled
            assert all(f.stats.rounds - n >= 2 for f, n in zip(fetchers, rounds, strict=True))
            fetches = after.incremental_fetches - before.incremental_fetches
            assert fetches >= 4, fetches  # two followers, 200 ms long polls
            assert after.partitions_read == before.partitions_read
            assert after.partitions_answered == before.partitions_answered
            assert after.full_fetches == before.full_fetches
            for p in range(20):
                assert leader.isr(TopicPartition(IDLE, p)) == {1, 2, 3}, p
            assert leader.replica_manager.stats.isr_shrinks == 0

            # Broker 3 stops: its session stays in the cache, but no fetch comes.
            await cluster[3].stop()
            await wait_until(
                lambda: all(leader.isr(TopicPartition(IDLE, p)) == {1, 2} for p in range(20)),
                timeout_s=10,
                message="broker 3 out of every ISR",
            )
        finally:
            await cluster.stop()

    run(scenario)
