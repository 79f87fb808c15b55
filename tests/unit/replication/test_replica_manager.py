"""A leader and two followers on one event loop, replicating over real grpc.aio servers."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from minikafka.proto.cluster_state import PartitionState
from minikafka.proto.errors import ErrorCode
from tests.unit.replication.harness import (
    TP,
    Cluster,
    consume,
    fetch_request,
    produce,
    produce_request,
    records,
    run,
    values_of,
    wait_until,
)


def test_acks_all_waits_for_followers_and_advances_hw(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1, 2, 3])
            result = await produce(cluster[1], b"a", b"b", acks=-1)
            assert result.error_code == ErrorCode.NONE
            assert result.base_offset == 0
            # acked with acks=all: every ISR member has it
            assert cluster[1].high_watermark() == 2
            for broker in (2, 3):
                assert cluster[broker].values() == [b"a", b"b"]
            # followers learn the HW on their next fetch
            await wait_until(lambda: all(cluster[b].high_watermark() == 2 for b in (2, 3)))
        finally:
            await cluster.stop()

    run(scenario)


def test_acks_1_and_0_answer_after_the_leader_append(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1, 2))
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1, 2], [1, 2])
            # Stop the follower first: acks=1 does not wait for it.
            await cluster[2].stop()
            result = await produce(cluster[1], b"a", acks=1)
            assert result.error_code == ErrorCode.NONE and result.base_offset == 0
            assert cluster[1].high_watermark() == 0  # the follower has not fetched it
            response = await cluster[1].replica_manager.append_records(
                produce_request(records(b"b"), acks=0)
            )
            assert response == []
            assert cluster[1].values() == [b"a", b"b"]
        finally:
            await cluster.stop()

    run(scenario)


def test_consumer_fetch_is_bounded_by_the_high_watermark(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1, 2))
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1, 2], [1, 2])
            await cluster[2].stop()
            await produce(cluster[1], b"a", acks=1)
            data = await consume(cluster[1], 0)
            assert data.error_code == ErrorCode.NONE
            assert data.high_watermark == 0 and data.records == b""
            # a follower's fetch reads beyond the HW
            follower = await cluster[1].replica_manager.fetch_messages(
                fetch_request(0, replica_id=2)
            )
            assert values_of(follower[0].records) == [b"a"]
            # ...and that fetch at offset 0 did not move the HW; the next one (offset 1) does
            assert cluster[1].high_watermark() == 0
            await cluster[1].replica_manager.fetch_messages(fetch_request(1, replica_id=2))
            assert cluster[1].high_watermark() == 1
            data = await consume(cluster[1], 0)
            assert values_of(data.records) == [b"a"] and data.high_watermark == 1
        finally:
            await cluster.stop()

    run(scenario)


def test_long_poll_fetch_returns_when_data_arrives(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1,))
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1], [1])
            started = time.monotonic()
            empty = await consume(cluster[1], 0, max_wait_ms=100)
            assert empty.records == b"" and time.monotonic() - started >= 0.09

            waiting = asyncio.create_task(consume(cluster[1], 0, max_wait_ms=10_000))
            await asyncio.sleep(0.05)
            assert not waiting.done()
            started = time.monotonic()
            await produce(cluster[1], b"x", acks=1)
            data = await asyncio.wait_for(waiting, 2)
            assert values_of(data.records) == [b"x"]
            assert time.monotonic() - started < 1
            assert len(cluster[1].replica_manager.purgatory) == 0
        finally:
            await cluster.stop()

    run(scenario)


def test_min_insync_replicas_refuses_acks_all_before_appending(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1, 2), min_insync_replicas=2)
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1], [1, 2], to=[1])
            result = await produce(cluster[1], b"a", acks=-1)
            assert result.error_code == ErrorCode.NOT_ENOUGH_REPLICAS
            assert result.base_offset == -1
            assert cluster[1].log().log_end_offset == 0
            # acks=1 is not held to min.insync.replicas
            assert (await produce(cluster[1], b"b", acks=1)).error_code == ErrorCode.NONE
        finally:
            await cluster.stop()

    run(scenario)


def test_topic_min_insync_replicas_overrides_the_broker_default(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1,))
        cluster.zk.topic_configs["t"] = {"min.insync.replicas": "2"}
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1], [1])
            result = await produce(cluster[1], b"a", acks=-1)
            assert result.error_code == ErrorCode.NOT_ENOUGH_REPLICAS
        finally:
            await cluster.stop()

    run(scenario)


def test_isr_shrinks_after_the_lag_time_and_expands_when_caught_up(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, replica_lag_time_max_ms=400, replica_fetch_wait_max_ms=100)
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1, 2, 3])
            assert (await produce(cluster[1], b"a")).error_code == ErrorCode.NONE
            await cluster[3].stop()
            await wait_until(lambda: cluster[1].isr() == {1, 2}, message="3 removed from ISR")
            state = cluster.zk.get_partition_state("t", 0)
            assert state is not None and state.value.isr == (1, 2)
            assert state.value.leader == 1 and state.value.leader_epoch == 1
            # The notification follows once the changes pause (isr_change.py).
            await wait_until(
                lambda: cluster.zk.notifications[-1:] == [{("t", 0)}],
                message="an isr_change_notification for t-0",
            )
            # acks=all no longer waits for 3
            assert (await produce(cluster[1], b"b")).error_code == ErrorCode.NONE

            await cluster[3].start()
            await cluster.elect(1, 2, [1, 2])
            await wait_until(lambda: cluster[1].isr() == {1, 2, 3}, message="3 back in ISR")
            assert cluster[3].values() == [b"a", b"b"]
            state = cluster.zk.get_partition_state("t", 0)
            assert state is not None and state.value.isr == (1, 2, 3)
            assert state.value.leader_epoch == 2
        finally:
            await cluster.stop()

    run(scenario)


def test_produce_waiting_when_the_isr_shrinks_below_min_isr_fails_after_append(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        cluster = Cluster(
            tmp_path,
            replica_lag_time_max_ms=300,
            replica_fetch_wait_max_ms=100,
            min_insync_replicas=3,
        )
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1, 2, 3])
            await cluster[3].stop()
            result = await produce(cluster[1], b"a", acks=-1, timeout_ms=10_000)
            assert result.error_code == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
            assert result.base_offset == 0
            assert cluster[1].isr() == {1, 2}
        finally:
            await cluster.stop()

    run(scenario)


def test_acks_all_times_out_when_a_follower_does_not_fetch(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1, 2))
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1, 2], [1, 2])
            await cluster[2].stop()
            result = await produce(cluster[1], b"a", acks=-1, timeout_ms=100)
            assert result.error_code == ErrorCode.REQUEST_TIMED_OUT
            assert result.base_offset == 0
        finally:
            await cluster.stop()

    run(scenario)


def test_a_leader_that_wrote_nothing_in_its_epoch_follows_cleanly(tmp_path: Path) -> None:
    """Broker 1 leads epoch 3 but writes nothing; broker 2, which never heard of epoch 3, leads
    epoch 4. Broker 1 drops its empty epoch 3 entry instead of presenting it for ever."""

    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1, 2))
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1, 2], [1, 2])
            await produce(cluster[1], b"a", b"b")
            await cluster.elect(1, 3, [1, 2], [1, 2], to=[1])
            await cluster.elect(2, 4, [1, 2], [1, 2])
            assert (await produce(cluster[2], b"c")).error_code == ErrorCode.NONE
            assert cluster[1].values() == [b"a", b"b", b"c"]
            epochs = [tuple(e) for e in cluster[1].log().leader_epoch_cache.entries]
            assert epochs == [(1, 0), (4, 2)]
        finally:
            await cluster.stop()

    run(scenario)


def test_isr_write_losing_a_race_adopts_the_znode_then_retries(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, replica_lag_time_max_ms=300, replica_fetch_wait_max_ms=100)
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1, 2, 3])
            # Another writer moved the znode's version under the same leader epoch.
            cluster.zk.set_state("t", 0, PartitionState(1, 1, (1, 2, 3), 1))
            await cluster[3].stop()
            await wait_until(lambda: cluster[1].isr() == {1, 2}, message="3 removed from ISR")
            state = cluster.zk.get_partition_state("t", 0)
            assert state is not None and state.value.isr == (1, 2) and state.zk_version == 2
        finally:
            await cluster.stop()

    run(scenario)


def test_fetch_answers_are_capped_by_the_broker_as_kafka_caps_them(tmp_path: Path) -> None:
    # fetch.max.bytes caps a consumer's answer, replica.fetch.response.max.bytes a follower's,
    # whatever max_bytes the request asks for; the first batch is sent even when larger.
    async def scenario() -> None:
        cluster = Cluster(
            tmp_path,
            broker_ids=(1, 2),
            fetch_max_bytes=3000,
            replica_fetch_response_max_bytes=5000,
        )
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1], [1, 2])
            for _ in range(4):
                assert (await produce(cluster[1], b"x" * 2000, acks=1)).error_code == 0
            manager = cluster[1].replica_manager
            follower = await manager.fetch_messages(fetch_request(0, replica_id=2, max_bytes=10**8))
            assert len(values_of(follower[0].records)) == 2  # 2 x ~2 KB within 5000
            await manager.fetch_messages(fetch_request(4, replica_id=2))  # HW to 4
            consumer = await consume(cluster[1], 0, max_bytes=10**8)
            assert len(values_of(consumer.records)) == 1  # one ~2 KB batch within 3000
            tiny = await consume(cluster[1], 0, max_bytes=10)
            assert len(values_of(tiny.records)) == 1  # the first batch, however large
        finally:
            await cluster.stop()

    run(scenario)


def test_a_broker_in_controlled_shutdown_does_not_fetch_what_it_now_follows(
    tmp_path: Path,
) -> None:
    """The leader moves away from a leaving broker: it becomes a follower but does not fetch,
    so the new leader cannot take it back into the ISR just as it stops."""

    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1, 2, 3])
            assert (await produce(cluster[1], b"a", acks=-1)).error_code == ErrorCode.NONE
            leaving = cluster[1].replica_manager
            leaving.begin_shutdown()
            # The controller's controlled-shutdown election: broker 2 leads, 1 left the ISR.
            await cluster.elect(2, 2, [2, 3])
            assert leaving.fetchers.fetch_state(TP) is None
            left = leaving.get_partition(TP)
            assert left is not None and not left.is_leader
            # The others go on without it, and it stays out of the ISR.
            assert (await produce(cluster[2], b"b", acks=-1)).error_code == ErrorCode.NONE
            await asyncio.sleep(0.3)
            assert cluster[2].isr() == frozenset({2, 3})
            assert cluster[1].values() == [b"a"]
            # A broker that is not leaving fetches as before.
            assert cluster[3].replica_manager.fetchers.fetch_state(TP) is not None
        finally:
            await cluster.stop()

    run(scenario)


def test_a_waiting_produce_survives_a_new_epoch_that_keeps_its_leader(tmp_path: Path) -> None:
    """The controller takes a dead follower out of the ISR with the same leader and
    leader_epoch + 1 (Kafka ZK mode). The leader keeps its parked acks=all produce, as Kafka's
    DelayedProduce does (it asks only that this broker still leads), and answers it once the
    smaller ISR has the append: failing it made the producer append the record again."""

    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1, 2, 3])
            await cluster[3].stop()
            waiting = asyncio.ensure_future(produce(cluster[1], b"a", acks=-1, timeout_ms=10_000))
            await wait_until(lambda: cluster[2].values() == [b"a"], message="2 fetched it")
            assert not waiting.done() and cluster[1].high_watermark() == 0  # waits for 3
            await cluster.elect(1, 2, [1, 2])
            result = await waiting
            assert (result.error_code, result.base_offset) == (ErrorCode.NONE, 0)
            assert cluster[1].values() == [b"a"]
        finally:
            await cluster.stop()

    run(scenario)


def test_a_waiting_produce_fails_when_its_leader_becomes_a_follower(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1, 2, 3])
            await cluster[3].stop()
            waiting = asyncio.ensure_future(produce(cluster[1], b"a", acks=-1, timeout_ms=10_000))
            await wait_until(lambda: cluster[2].values() == [b"a"], message="2 fetched it")
            await cluster.elect(2, 2, [1, 2])
            result = await asyncio.wait_for(waiting, 2)
            assert result.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        finally:
            await cluster.stop()

    run(scenario)


def test_an_append_truncated_away_is_never_acknowledged_by_a_leader_again(
    tmp_path: Path,
) -> None:
    """Broker 1 appends "a" and loses leadership before the produce waits (the gap between
    ``append_to_leaders`` and ``produce_response``); as a follower it truncates "a" and takes
    "b" at the same offset; it leads again and its HW passes that offset. The produce of "a"
    must fail, not answer NONE for "b"."""

    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1, 2))
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1, 2], [1, 2], to=[1])  # 2 does not fetch
            request = produce_request(records(b"a"), acks=-1, timeout_ms=10_000)
            statuses = cluster[1].replica_manager.append_to_leaders(request)
            await cluster.elect(2, 2, [2], [1, 2])
            await wait_until(lambda: cluster[1].values() == [], message="1 truncated a")
            assert (await produce(cluster[2], b"b", acks=1)).error_code == ErrorCode.NONE
            await wait_until(lambda: cluster[1].values() == [b"b"], message="1 fetched b")
            await cluster.elect(1, 3, [1], [1, 2])
            assert cluster[1].high_watermark() == 1
            (result,) = await cluster[1].replica_manager.produce_response(request, statuses)
            assert result.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        finally:
            await cluster.stop()

    run(scenario)
