"""Refusals and edge cases of each request: nothing invalid is stored, stale epochs are fenced."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from minikafka.broker.replication.requests import (
    FetchPartition,
    FetchRequest,
    ListOffsetsPartition,
    ListOffsetsRequest,
    OffsetForLeaderPartition,
    OffsetsForLeaderEpochRequest,
    StopReplicaPartitionState,
    StopReplicaRequest,
    by_request_topic,
)
from minikafka.broker.server.kafka import leader_endpoint as kafka_leader_endpoint
from minikafka.broker.storage.config import LogConfig
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto.errors import ErrorCode
from minikafka.proto.records import decode_records
from tests.batches import poison_batch
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
from tests.unit.storage.helpers import memory_records


async def _produce_raw(cluster: Cluster, broker: int, data: bytes, *, acks: int = -1) -> int:
    [result] = await cluster[broker].replica_manager.append_records(
        produce_request(data, acks=acks)
    )
    return result.error_code


def test_invalid_produce_requests_store_nothing(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1,), log=LogConfig(max_message_bytes=300))
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1], [1])
            good = records(b"ok")
            corrupt = bytearray(good)
            corrupt[-1] ^= 0xFF
            assert await _produce_raw(cluster, 1, bytes(corrupt)) == ErrorCode.CORRUPT_MESSAGE
            assert await _produce_raw(cluster, 1, good[:-3]) == ErrorCode.CORRUPT_MESSAGE
            # a valid batch followed by a corrupt one: the whole request is refused
            assert (
                await _produce_raw(cluster, 1, good + bytes(corrupt)) == ErrorCode.CORRUPT_MESSAGE
            )
            assert await _produce_raw(cluster, 1, b"") == ErrorCode.INVALID_RECORD
            big = records(b"x" * 400)
            assert await _produce_raw(cluster, 1, big) == ErrorCode.MESSAGE_TOO_LARGE
            assert await _produce_raw(cluster, 1, good, acks=2) == ErrorCode.INVALID_REQUIRED_ACKS
            assert cluster[1].log().log_end_offset == 0
            assert await _produce_raw(cluster, 1, good) == ErrorCode.NONE
            assert cluster[1].values() == [b"ok"]
        finally:
            await cluster.stop()

    run(scenario)


def test_produce_to_unknown_or_unled_partitions(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1, 2))
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1, 2], [1, 2])
            rm = cluster[1].replica_manager
            [unknown] = await rm.append_records(produce_request(records(b"a"), topic="nope"))
            code = unknown.error_code
            assert code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            # broker 2 is a follower: it refuses produce and consumer fetches
            assert await _produce_raw(cluster, 2, records(b"a")) == ErrorCode.NOT_LEADER_OR_FOLLOWER
            assert (await consume(cluster[2], 0)).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
            # a partition the metadata knows but this broker does not host
            cluster[1].metadata.partitions.add(("t", 7))
            [elsewhere] = await rm.append_records(produce_request(records(b"a"), partition=7))
            code = elsewhere.error_code
            assert code == ErrorCode.NOT_LEADER_OR_FOLLOWER
            assert cluster[2].log().log_end_offset == 0
        finally:
            await cluster.stop()

    run(scenario)


def test_leader_and_isr_fencing(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1, 2))
        await cluster.start()
        try:
            cluster.controller_epoch = 5
            await cluster.elect(1, 3, [1, 2], [1, 2])
            rm = cluster[1].replica_manager
            assert rm.controller_epoch == 5

            cluster.controller_epoch = 4  # a zombie controller
            stale = await rm.become_leader_or_follower(cluster.leader_and_isr(2, 9, [2], [1, 2]))
            assert stale.error_code == ErrorCode.STALE_CONTROLLER_EPOCH
            assert cluster[1].replica_manager.get_partition(TP).is_leader  # type: ignore[union-attr]

            cluster.controller_epoch = 5
            # broker epoch 7: an older registration of broker 1
            request = cluster.leader_and_isr(2, 9, [2], [1, 2], broker_epoch=7)
            stale_broker = await rm.become_leader_or_follower(request)
            assert stale_broker.error_code == ErrorCode.STALE_BROKER_EPOCH

            older = await rm.become_leader_or_follower(cluster.leader_and_isr(2, 2, [2], [1, 2]))
            assert older.error_code == ErrorCode.NONE
            assert older.partition_errors[0].error_code == ErrorCode.STALE_CONTROLLER_EPOCH
            same = await rm.become_leader_or_follower(cluster.leader_and_isr(2, 3, [2], [1, 2]))
            assert same.partition_errors[0].error_code == ErrorCode.STALE_CONTROLLER_EPOCH

            not_replica = await rm.become_leader_or_follower(
                cluster.leader_and_isr(2, 4, [2], [2, 3], partition=1)
            )
            code = not_replica.partition_errors[0].error_code
            assert code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            partition = rm.get_partition(TP)
            assert partition is not None and partition.is_leader and partition.leader_epoch == 3
        finally:
            await cluster.stop()

    run(scenario)


def test_the_state_already_followed_is_accepted_again(tmp_path: Path) -> None:
    # A new controller sends every partition's current state to its replicas; a broker that
    # already follows it has nothing to refuse (and nothing to change).
    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1, 2))
        await cluster.start()
        try:
            cluster.controller_epoch = 5
            await cluster.elect(1, 3, [1, 2], [1, 2])
            cluster.controller_epoch = 6  # the new controller
            for broker_id in (1, 2):
                rm = cluster[broker_id].replica_manager
                before = rm.get_partition(TP)
                assert before is not None
                state = before.state
                again = await rm.become_leader_or_follower(
                    cluster.leader_and_isr(1, 3, [1, 2], [1, 2])
                )
                assert again.error_code == ErrorCode.NONE
                assert [e.error_code for e in again.partition_errors] == [ErrorCode.NONE]
                assert rm.get_partition(TP) is before and before.state is state
                assert rm.controller_epoch == 6
        finally:
            await cluster.stop()

    run(scenario)


def test_fetch_fencing_and_offset_range(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1,))
        await cluster.start()
        try:
            await cluster.elect(1, 4, [1], [1])
            await produce(cluster[1], b"a", b"b")
            fenced = await consume(cluster[1], 0, current_leader_epoch=3)
            assert fenced.error_code == ErrorCode.FENCED_LEADER_EPOCH
            unknown = await consume(cluster[1], 0, current_leader_epoch=5)
            assert unknown.error_code == ErrorCode.UNKNOWN_LEADER_EPOCH
            current = await consume(cluster[1], 1, current_leader_epoch=4)
            assert current.error_code == ErrorCode.NONE
            # whole batches: offset 1 is inside the batch starting at 0
            assert values_of(current.records) == [b"a", b"b"]
            out_of_range = await consume(cluster[1], 3)
            assert out_of_range.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
            assert (await consume(cluster[1], 2)).records == b""
            [unknown_topic] = await cluster[1].replica_manager.fetch_messages(
                fetch_request(0, topic="nope")
            )
            code = unknown_topic.error_code
            assert code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        finally:
            await cluster.stop()

    run(scenario)


def test_fetch_respects_max_bytes_but_returns_one_batch(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1,))
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1], [1])
            for value in (b"a" * 100, b"b" * 100, b"c" * 100):
                await produce(cluster[1], value)
            rm = cluster[1].replica_manager
            [data] = await rm.fetch_messages(fetch_request(0, max_bytes=10))
            assert values_of(data.records) == [b"a" * 100]
            # two 170-byte batches
            [data] = await rm.fetch_messages(fetch_request(0, partition_max_bytes=350))
            assert len(values_of(data.records)) == 2
        finally:
            await cluster.stop()

    run(scenario)


def test_list_offsets(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1, 2))
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1, 2], [1, 2])
            await produce(cluster[1], b"a", b"b")  # acked: HW 2
            await cluster[2].stop()
            await produce(cluster[1], b"c", acks=1)  # LEO 3, HW stays 2

            async def list_offset(timestamp: int, replica_id: int = -1) -> tuple[int, int, int]:
                request = ListOffsetsRequest(
                    replica_id, [ListOffsetsPartition("t", 0, timestamp, current_leader_epoch=-1)]
                )
                [result] = await cluster[1].replica_manager.list_offsets(request)
                return result.error_code, result.offset, result.leader_epoch

            assert await list_offset(-2) == (ErrorCode.NONE, 0, 1)
            assert await list_offset(-1) == (ErrorCode.NONE, 2, 1)
            assert await list_offset(-1, replica_id=2) == (ErrorCode.NONE, 3, 1)
            assert (await list_offset(0))[:2] == (ErrorCode.NONE, 0)
            assert (await list_offset(2**62))[:2] == (ErrorCode.NONE, -1)
            # -3: the record with the largest timestamp (c, or a if they share a millisecond);
            # consumers are not told of offsets at or above the HW
            _, offset, _ = await list_offset(-3, replica_id=2)
            _, consumer_offset, _ = await list_offset(-3)
            assert (offset, consumer_offset) in ((2, -1), (0, 0))
        finally:
            await cluster.stop()

    run(scenario)


def test_offsets_for_leader_epoch_and_diverging_epoch(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1,))
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1], [1], to=[1])
            await produce(cluster[1], b"a", b"b")  # epoch 1: offsets 0-1
            # broker 2 is assigned (not in the ISR) so that its fetch below is a follower's
            await cluster.elect(1, 3, [1], [1, 2], to=[1])
            await produce(cluster[1], b"c")  # epoch 3: offset 2

            async def end_offset(epoch: int, current: int = -1) -> tuple[int, int, int]:
                request = OffsetsForLeaderEpochRequest(
                    2, [OffsetForLeaderPartition("t", 0, epoch, current_leader_epoch=current)]
                )
                [result] = await cluster[1].replica_manager.offsets_for_leader_epoch(request)
                return result.error_code, result.leader_epoch, result.end_offset

            assert await end_offset(1) == (ErrorCode.NONE, 1, 2)
            assert await end_offset(2) == (ErrorCode.NONE, 1, 2)
            assert await end_offset(3) == (ErrorCode.NONE, 3, 3)
            assert (await end_offset(3, current=2))[0] == ErrorCode.FENCED_LEADER_EPOCH

            # KIP-320: a follower at offset 3 whose last batch is of epoch 2 diverged at 2
            request = fetch_request(3, replica_id=2, last_fetched_epoch=2)
            [data] = await cluster[1].replica_manager.fetch_messages(request)
            assert data.error_code == ErrorCode.NONE and data.records == b""
            assert data.diverging_epoch == (1, 2)
        finally:
            await cluster.stop()

    run(scenario)


def test_a_follower_over_the_kafka_door_gets_the_diverging_epoch_and_epoch_end_offsets(
    tmp_path: Path,
) -> None:
    """The leader's Kafka handlers answer a follower's Fetch v12 (diverging_epoch, a tagged
    field) and OffsetsForLeaderEpoch v4 as the ReplicaManager does."""

    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1,), transport="kafka")
        await cluster.start()
        follower = kafka_leader_endpoint.KafkaLeaderEndpoint(
            "127.0.0.1", cluster[1].port, timeout_s=5, max_response_bytes=1 << 20, client_id="f"
        )
        try:
            await cluster.elect(1, 1, [1], [1], to=[1])
            await produce(cluster[1], b"a", b"b")  # epoch 1: offsets 0-1
            await cluster.elect(1, 3, [1], [1, 2], to=[1])
            await produce(cluster[1], b"c")  # epoch 3: offset 2
            answer = await follower.fetch(
                FetchRequest(2, 0, 1, 1 << 20, [FetchPartition("t", 0, 3, 3, 2, 0, 1 << 20)])
            )
            [data] = answer.partitions
            assert (data.error_code, data.records, data.diverging_epoch) == (0, b"", (1, 2))
            answer = await follower.fetch(
                FetchRequest(2, 0, 1, 1 << 20, [FetchPartition("t", 0, 1, 3, 1, 0, 1 << 20)])
            )
            [data] = answer.partitions
            assert data.diverging_epoch is None and data.high_watermark == 3
            # whole batches, from the one holding offset 1
            assert [r.value for r in decode_records(memory_records(data.records))] == [
                b"a",
                b"b",
                b"c",
            ]
            results = await follower.offsets_for_leader_epoch(
                OffsetsForLeaderEpochRequest(
                    2,
                    [
                        OffsetForLeaderPartition("t", 0, 2, current_leader_epoch=3),
                        OffsetForLeaderPartition("t", 0, 3, current_leader_epoch=2),
                    ],
                )
            )
            assert [(r.error_code, r.leader_epoch, r.end_offset) for r in results] == [
                (ErrorCode.NONE, 1, 2),
                (ErrorCode.FENCED_LEADER_EPOCH, -1, -1),
            ]
        finally:
            await follower.close()
            await cluster.stop()

    run(scenario)


def test_stop_replica_stops_fetching_and_deletes(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1, 2))
        await cluster.start()
        try:
            await cluster.elect(1, 2, [1, 2], [1, 2])
            await produce(cluster[1], b"a")
            rm = cluster[2].replica_manager

            def stop_request(leader_epoch: int, delete: bool, epoch: int = 1) -> StopReplicaRequest:
                return StopReplicaRequest(
                    controller_id=1,
                    controller_epoch=epoch,
                    broker_epoch=-1,
                    partition_states=[
                        StopReplicaPartitionState(
                            topic="t",
                            partition=0,
                            leader_epoch=leader_epoch,
                            delete_partition=delete,
                        )
                    ],
                )

            stale = await rm.stop_replicas(stop_request(2, True, epoch=0))
            assert stale.error_code == ErrorCode.STALE_CONTROLLER_EPOCH
            fenced = await rm.stop_replicas(stop_request(1, True))
            assert fenced.partition_errors[0].error_code == ErrorCode.FENCED_LEADER_EPOCH
            log_dir = cluster[2].log().dir
            assert log_dir.exists()

            kept = await rm.stop_replicas(stop_request(2, False))
            assert kept.partition_errors[0].error_code == ErrorCode.NONE
            assert rm.fetchers.fetch_state(TP) is None
            assert rm.get_partition(TP) is not None

            deleted = await rm.stop_replicas(stop_request(-2, True))
            assert deleted.partition_errors[0].error_code == ErrorCode.NONE
            assert rm.get_partition(TP) is None
            assert not log_dir.exists()
        finally:
            await cluster.stop()

    run(scenario)


def test_high_watermark_survives_a_restart(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1, 2))
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1, 2], [1, 2])
            await produce(cluster[1], b"a", b"b")
            await wait_until(lambda: cluster[2].high_watermark() == 2)
            checkpoint = cluster[2].log_dir / "replication-offset-checkpoint"
            await cluster[2].stop()
            assert checkpoint.read_text().splitlines()[2:] == ["t 0 2"]
            await cluster[2].start()
            await cluster.elect(1, 2, [1, 2], [1, 2])
            assert cluster[2].high_watermark() == 2
        finally:
            await cluster.stop()

    run(scenario)


def test_follower_keeps_fetching_across_leader_moves(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1, 2, 3])
            await produce(cluster[1], b"a")
            await cluster.elect(2, 2, [1, 2, 3])
            assert (await produce(cluster[2], b"b")).error_code == ErrorCode.NONE
            await cluster.elect(3, 3, [1, 2, 3])
            assert (await produce(cluster[3], b"c")).error_code == ErrorCode.NONE
            for broker in (1, 2, 3):
                assert cluster[broker].values() == [b"a", b"b", b"c"]
            epochs = [e.epoch for e in cluster[1].log().leader_epoch_cache.entries]
            assert epochs == [1, 2, 3]
        finally:
            await cluster.stop()

    run(scenario)


def test_a_poison_batch_is_refused_on_the_produce_path(tmp_path: Path) -> None:
    """Issue 16: a batch naming codec 5 or 7 (CRC valid) was stored and replicated."""

    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1,))
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1], [1])
            for codec in (5, 7):
                code = await _produce_raw(cluster, 1, poison_batch(codec))
                assert code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
            assert cluster[1].log().log_end_offset == 0
            assert await _produce_raw(cluster, 1, records(b"ok")) == ErrorCode.NONE
            assert cluster[1].values() == [b"ok"]
        finally:
            await cluster.stop()

    run(scenario)


def test_fetches_kafka_refuses_get_its_errors_not_an_empty_answer(tmp_path: Path) -> None:
    """Issue 16: max_bytes -1, or a replica id that is no follower of the partition, got an
    empty answer without an error (and the second could read past the HW)."""

    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1,))
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1], [1, 2], to=[1])
            await produce(cluster[1], b"a", b"b")
            manager = cluster[1].replica_manager

            async def fetch(**fields: Any) -> tuple[int, str, bytes | memoryview]:
                [data] = await manager.fetch_messages(fetch_request(0, **fields))
                return data.error_code, data.error_message, memory_records(data.records)

            for fields in ({"max_bytes": -1}, {"partition_max_bytes": -1}):
                code, message, data = await fetch(**fields)
                assert (code, data) == (ErrorCode.UNKNOWN_SERVER_ERROR, b""), fields
                assert message.startswith("Invalid max size -1 for log read from t-0")
            assert (await fetch(max_bytes=0))[0] == ErrorCode.NONE  # 0: the default

            code, message, data = await fetch(replica_id=9)
            assert (code, data) == (ErrorCode.NOT_LEADER_OR_FOLLOWER, b"")
            assert "replica 9 is not a follower of t-0 (assigned replicas [1, 2])" in message
            code, _, _ = await fetch(replica_id=9, current_leader_epoch=1)
            assert code == ErrorCode.UNKNOWN_LEADER_EPOCH
            assert (await fetch(replica_id=1))[0] == ErrorCode.NOT_LEADER_OR_FOLLOWER  # itself
            code, _, data = await fetch(replica_id=2)  # the follower reads past the HW
            assert code == ErrorCode.NONE and data
        finally:
            await cluster.stop()

    run(scenario)


def test_flat_answers_go_back_under_their_request_topics() -> None:
    topics = [
        pb.ListOffsetsRequest.ListOffsetsTopic(
            name=name,
            partitions=[pb.ListOffsetsRequest.ListOffsetsPartition(partition_index=i) for i in ps],
        )
        for name, ps in (("a", [0, 1]), ("b", []), ("c", [2]))
    ]
    laid_out = by_request_topic(topics, ["a0", "a1", "c2"])
    assert [(t.name, answers) for t, answers in laid_out] == [
        ("a", ["a0", "a1"]),
        ("b", []),
        ("c", ["c2"]),
    ]
