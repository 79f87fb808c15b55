"""Followers fetch in incremental fetch sessions (KIP-227): in-process brokers over real gRPC
(harness.py), the test playing the controller, and in the last tests a follower too (its
fetches made by hand, to place them exactly)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from minikafka.broker.replication.fetch_session import (
    FetchContext,
    FetchMetadata,
    FetchSessionResponse,
    FetchSessionStats,
)
from minikafka.broker.replication.fetcher import ReplicaFetcher
from minikafka.broker.replication.partition import Partition
from minikafka.broker.replication.requests import (
    FetchPartition,
    FetchPartitionResult,
    FetchRequest,
)
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode
from tests.unit.replication.harness import (
    TOPIC,
    TP,
    Cluster,
    Node,
    produce,
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
            # The follower's first (full) fetch may itself park for the whole 5 s long poll
            # before its first incremental one: the setup waits longer than that.
            await wait_until(lambda: _stats(leader).incremental_fetches > 0, timeout_s=15)
            await wait_until(lambda: leader.replica_manager.stats.delayed_fetch == 1, timeout_s=15)
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
            # and at least two idle rounds of each follower (200 ms long polls): counted, not
            # expected of the 3 s, which a loaded machine may spend on fewer
            await wait_until(
                lambda: (
                    all(f.stats.rounds - n >= 2 for f, n in zip(fetchers, rounds, strict=True))
                    and _stats(leader).incremental_fetches - before.incremental_fetches >= 4
                ),
                message="two idle rounds of each follower",
            )
            after = _stats(leader)
            # Nor did the followers: their idle rounds filed no partition again.
            assert [f.stats.partitions_refiled for f in fetchers] == refiled
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


# --- a follower played by the test ------------------------------------------------------------

FOLLOWER = 2


def _at(offset: int, partition: int = 0) -> FetchPartition:
    """The follower's fetch of ``partition`` at ``offset`` (its LEO), in leader epoch 1."""
    return FetchPartition(TOPIC, partition, offset, 1, -1, 0, 1 << 20)


async def _session_fetch(
    node: Node,
    metadata: FetchMetadata,
    partitions: Sequence[FetchPartition],
    forgotten: Sequence[TopicPartition] = (),
    *,
    replica_id: int = FOLLOWER,
    max_wait_ms: int = 0,
) -> FetchSessionResponse:
    """One fetch through a fetch session at ``node``, as the front doors make it."""
    rm = node.replica_manager

    async def read(context: FetchContext) -> list[FetchPartitionResult]:
        request = FetchRequest(replica_id, max_wait_ms, 1, 1 << 20, context.partitions)
        return await rm.fetch_messages(request, context)

    return await rm.fetch_sessions.fetch(
        metadata, partitions, forgotten, replica_id=replica_id, read=read
    )


async def _expansion_refused_then_parked_fetch(cluster: Cluster) -> tuple[Partition, int]:
    """Follower 2, out of the ISR, catches up while an ISR write is in flight (the expansion is
    refused); the write ends while its next fetch, listing nothing, is parked. Returns the
    partition and the session id; the session's next epoch is 3."""
    await cluster.elect(1, 1, [1], [1, FOLLOWER], to=[1])
    leader = cluster[1]
    rm = leader.replica_manager
    assert (await produce(leader, b"a", acks=1)).error_code == ErrorCode.NONE
    assert leader.high_watermark() == 1
    full = await _session_fetch(leader, FetchMetadata.initial(), [_at(0)])
    sid = full.session_id
    assert sid != 0

    gate = threading.Event()
    write = cluster.zk.update_partition_state

    def slow_write(*args: Any, **kwargs: Any) -> int:
        gate.wait(5)
        return write(*args, **kwargs)

    cluster.zk.update_partition_state = slow_write  # type: ignore[method-assign]
    partition = rm.get_partition(TP)
    assert partition is not None
    rm.alter_partition_manager.submit(partition, frozenset({1}), "shrink")  # any write in flight
    assert partition.pending_isr is not None
    caught_up = await _session_fetch(leader, FetchMetadata(sid, 1), [_at(1)])
    assert caught_up.error_code == ErrorCode.NONE
    assert partition.remote_replicas[FOLLOWER].log_end_offset == 1
    assert FOLLOWER not in partition.isr  # refused while the write is in flight

    parked = asyncio.ensure_future(
        _session_fetch(leader, FetchMetadata(sid, 2), [], max_wait_ms=300)
    )
    await asyncio.sleep(0.05)
    gate.set()
    await wait_until(lambda: partition.pending_isr is None)
    assert (await parked).error_code == ErrorCode.NONE
    return partition, sid


def test_a_refused_expansion_is_retried_at_the_next_fetch_after_a_parked_one(
    tmp_path: Path,
) -> None:
    """As Kafka's every fetch visits every partition, the follower's next fetch after the ISR
    write ended retries the expansion, though the fetch parked meanwhile read the partition."""

    async def scenario() -> None:
        cluster = Cluster(tmp_path, (1,), replica_lag_time_max_ms=60_000)
        await cluster.start()
        try:
            partition, sid = await _expansion_refused_then_parked_fetch(cluster)
            await _session_fetch(cluster[1], FetchMetadata(sid, 3), [])
            await wait_until(
                lambda: FOLLOWER in partition.isr, timeout_s=3, message="follower 2 in the ISR"
            )
        finally:
            await cluster.stop()

    run(scenario)


def test_acks_all_is_accepted_once_the_caught_up_follower_fetches_again(tmp_path: Path) -> None:
    """min.insync.replicas 2 and the only follower caught up: acks=all produces must not be
    refused with NOT_ENOUGH_REPLICAS for good after an expansion refused mid-write."""

    async def scenario() -> None:
        cluster = Cluster(tmp_path, (1,), replica_lag_time_max_ms=60_000, min_insync_replicas=2)
        await cluster.start()
        try:
            partition, sid = await _expansion_refused_then_parked_fetch(cluster)
            leader = cluster[1]
            await _session_fetch(leader, FetchMetadata(sid, 3), [], max_wait_ms=50)
            await wait_until(lambda: FOLLOWER in partition.isr, timeout_s=3)
            for epoch, offset in ((4, 2), (5, 3), (6, 4)):
                produced = asyncio.ensure_future(produce(leader, b"x", acks=-1, timeout_ms=2_000))

                def appended(offset: int = offset) -> bool:
                    return leader.log().log_end_offset == offset

                await wait_until(appended)
                # The follower appends what it fetched and fetches at its new LEO.
                await _session_fetch(leader, FetchMetadata(sid, epoch), [_at(offset)])
                assert (await produced).error_code == ErrorCode.NONE
        finally:
            await cluster.stop()

    run(scenario)


def test_a_partition_readded_to_a_session_is_not_credited_for_fetches_without_it(
    tmp_path: Path,
) -> None:
    """A follower forgets a partition (a back-off) and adds it back later, behind the leader:
    it was last caught up at its last fetch of the partition that reached the leader's LEO, not
    at the session's previous fetch, which did not hold the partition."""

    async def scenario() -> None:
        cluster = Cluster(tmp_path, (1,), replica_lag_time_max_ms=60_000)
        await cluster.start()
        try:
            for p in (0, 1):
                await cluster.elect(1, 1, [1, FOLLOWER], [1, FOLLOWER], to=[1], partition=p)
            leader = cluster[1]
            assert (await produce(leader, b"a", acks=1)).error_code == ErrorCode.NONE
            full = await _session_fetch(leader, FetchMetadata.initial(), [_at(0), _at(0, 1)])
            sid = full.session_id
            await _session_fetch(leader, FetchMetadata(sid, 1), [_at(1)])  # caught up
            partition = leader.replica_manager.get_partition(TP)
            assert partition is not None
            caught_up = partition.remote_replicas[FOLLOWER].last_caught_up_time_ms
            assert partition.remote_replicas[FOLLOWER].log_end_offset == 1

            await _session_fetch(leader, FetchMetadata(sid, 2), [], [TP])
            await asyncio.sleep(0.2)
            assert (await produce(leader, b"b", acks=1)).error_code == ErrorCode.NONE
            await asyncio.sleep(0.2)
            await _session_fetch(leader, FetchMetadata(sid, 3), [])  # without TP
            await asyncio.sleep(0.2)
            await _session_fetch(leader, FetchMetadata(sid, 4), [_at(1)])  # back, at 1 of 2
            assert partition.remote_replicas[FOLLOWER].last_caught_up_time_ms == caught_up
        finally:
            await cluster.stop()

    run(scenario)


def test_a_fetch_parked_on_an_evicted_session_answers_at_once(tmp_path: Path) -> None:
    """Its session gone, nothing would wake it: the eviction does, and it answers what a read
    of all its partitions finds; the consumer's next fetch of that session starts over."""

    async def scenario() -> None:
        cluster = Cluster(tmp_path, (1,))
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1], [1], to=[1])
            await cluster.elect(1, 1, [1, FOLLOWER], [1, FOLLOWER], to=[1], partition=1)
            leader = cluster[1]
            leader.replica_manager.fetch_sessions.cache.max_entries = 1
            consumer = FetchPartition(TOPIC, 0, 0, -1, -1, -1, 1 << 20)
            full = await _session_fetch(leader, FetchMetadata.initial(), [consumer], replica_id=-1)
            sid = full.session_id
            assert sid != 0
            started = time.monotonic()
            parked = asyncio.ensure_future(
                _session_fetch(leader, FetchMetadata(sid, 1), [], replica_id=-1, max_wait_ms=5_000)
            )
            await asyncio.sleep(0.05)
            # A follower's new session takes the only slot (a consumer's may be evicted), and
            # a record comes before the parked fetch runs again: no session is told of it.
            await _session_fetch(leader, FetchMetadata.initial(), [_at(0, 1)])
            assert sid not in leader.replica_manager.fetch_sessions.cache
            assert (await produce(leader, b"x", acks=1)).error_code == ErrorCode.NONE
            answer = await parked
            assert time.monotonic() - started < 2.0  # not the 5 s long poll
            assert [p.records != b"" for p in answer.partitions] == [True]
            again = await _session_fetch(leader, FetchMetadata(sid, 2), [], replica_id=-1)
            assert again.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
        finally:
            await cluster.stop()

    run(scenario)
