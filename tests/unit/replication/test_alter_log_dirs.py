"""Moving a replica between log dirs (KIP-113) without any network but the harness's: the future
log's life cycle, the swap under produce, the checkpoints of both dirs, a restart mid-move and a
crash between the swap's renames, the refusals, and DescribeLogDirs' sizes and lags."""

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from minikafka.broker.replication.partition import Partition
from minikafka.broker.server.core.log_dirs import LogDirApi
from minikafka.broker.storage.checkpoints import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    OffsetCheckpointFile,
)
from minikafka.broker.storage.config import LogConfig
from minikafka.broker.storage.log_manager import LogManager
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode
from tests.unit.replication import harness
from tests.unit.replication.harness import TP, Cluster, Node, produce, records, run, wait_until


@pytest.fixture(autouse=True)
def two_log_dirs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every harness broker gets a second log dir, ``<its dir>-b``."""

    def with_b(dirs: Sequence[Path], *args: Any, **kwargs: Any) -> LogManager:
        first = Path(dirs[0])
        return LogManager([first, first.with_name(first.name + "-b")], *args, **kwargs)

    monkeypatch.setattr(harness, "LogManager", with_b)


def _dirs(node: Node) -> tuple[Path, Path]:
    a, b = node.replica_manager.log_manager.log_dirs
    return a, b


def _current_dir(node: Node, tp: TopicPartition = TP) -> Path:
    log_dir = node.replica_manager.log_manager.log_dir_of(tp.topic, tp.partition)
    assert log_dir is not None
    return log_dir


def _other_dir(node: Node, tp: TopicPartition = TP) -> Path:
    manager = node.replica_manager.log_manager
    current = manager.log_dir_of(tp.topic, tp.partition)
    return next(d for d in manager.log_dirs if d != current)


def _checkpoint(path: Path) -> dict[TopicPartition, int]:
    return OffsetCheckpointFile(path).read()


def test_move_under_produce_keeps_every_record_hw_epochs_and_producer_state(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1, 2))
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1, 2], [1, 2])
            leader = cluster[1]
            for i in range(50):
                assert (await produce(leader, b"v%d" % i)).error_code == ErrorCode.NONE
            await cluster.elect(1, 2, [1, 2], [1, 2])  # a second epoch in the cache
            source = _current_dir(leader)
            target = _other_dir(leader)
            acked: list[bytes] = [b"v%d" % i for i in range(50)]
            stop = asyncio.Event()

            async def keep_producing() -> None:
                i = 50
                while not stop.is_set():
                    result = await produce(leader, b"v%d" % i)
                    if result.error_code == ErrorCode.NONE:
                        acked.append(b"v%d" % i)
                    i += 1
                    await asyncio.sleep(0)

            producing = asyncio.create_task(keep_producing())
            await asyncio.sleep(0.05)
            manager = leader.replica_manager.alter_log_dirs
            errors = manager.alter_replica_log_dirs({TP: str(target)})
            assert errors == {TP: ErrorCode.NONE}
            await wait_until(lambda: manager.swaps == 1, 10, "the future log swapped in")
            await asyncio.sleep(0.05)
            stop.set()
            await producing
            assert leader.replica_manager.log_manager.log_dir_of(TP.topic, TP.partition) == target
            assert not (source / str(TP)).exists()
            assert not [p for p in os.listdir(target) if p.endswith("-future")]
            assert leader.values() == acked
            await wait_until(lambda: cluster[2].values() == acked, 5, "follower agrees")
            partition = leader.replica_manager.get_partition(TP)
            assert partition is not None and partition.is_leader and partition.leader_epoch == 2
            assert partition.high_watermark == len(acked)
            assert partition.last_stable_offset == len(acked)
            assert [e.epoch for e in partition.log.leader_epoch_cache.entries] == [1, 2]
            assert partition.log.dir == target / str(TP)
            # Appends after the move go to the new dir.
            assert (await produce(leader, b"after")).error_code == ErrorCode.NONE
            assert leader.values()[-1] == b"after"
            # Checkpoints name the partition in its new dir only.
            await wait_until(
                lambda: TP in _checkpoint(target / REPLICATION_OFFSET_CHECKPOINT), 5, "HW"
            )
            assert TP not in _checkpoint(source / REPLICATION_OFFSET_CHECKPOINT)
            assert TP in _checkpoint(target / RECOVERY_POINT_CHECKPOINT)
            assert TP not in _checkpoint(source / RECOVERY_POINT_CHECKPOINT)
        finally:
            await cluster.stop()
        # A clean restart finds the log in its new dir with everything.
        node = cluster[1]
        await node.start()
        try:
            manager_after = node.replica_manager.log_manager
            assert manager_after.log_dir_of(TP.topic, TP.partition) == target
            assert manager_after.future_logs == {}
        finally:
            await node.stop()

    run(scenario)


def test_idempotent_producer_state_survives_the_move(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1,))
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1], [1])
            node = cluster[1]
            from minikafka.proto.records import encode_batch

            def batch(sequence: int) -> bytes:
                return encode_batch(
                    [(0, None, b"s%d" % sequence, ())],
                    producer_id=7,
                    producer_epoch=0,
                    base_sequence=sequence,
                )

            rm = node.replica_manager
            for seq in range(3):
                results = await rm.append_records(harness.produce_request(batch(seq)))
                assert results[0].error_code == ErrorCode.NONE
            rm.alter_log_dirs.alter_replica_log_dirs({TP: str(_other_dir(node))})
            await wait_until(lambda: rm.alter_log_dirs.swaps == 1, 5)
            # A retry of the last batch is a duplicate, the next sequence is accepted.
            again = await rm.append_records(harness.produce_request(batch(2)))
            assert again[0].error_code == ErrorCode.NONE and again[0].base_offset == 2
            assert len(node.values()) == 3
            gap = await rm.append_records(harness.produce_request(batch(5)))
            assert gap[0].error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        finally:
            await cluster.stop()

    run(scenario)


def test_refusals(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1,))
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1], [1])
            node = cluster[1]
            rm = node.replica_manager
            manager = rm.alter_log_dirs
            other = _other_dir(node)
            assert manager.alter_replica_log_dirs({TP: str(tmp_path / "nowhere")}) == {
                TP: ErrorCode.LOG_DIR_NOT_FOUND
            }
            assert manager.alter_replica_log_dirs({TP: "relative/dir"}) == {
                TP: ErrorCode.LOG_DIR_NOT_FOUND
            }
            unhosted = TopicPartition("t", 9)
            assert manager.alter_replica_log_dirs({unhosted: str(other)}) == {
                unhosted: ErrorCode.REPLICA_NOT_AVAILABLE
            }
            # ... and the dir is remembered: the replica is created there.
            rm.log_manager.get_or_create_log(unhosted.topic, unhosted.partition)
            assert rm.log_manager.log_dir_of(unhosted.topic, unhosted.partition) == other
            # Where it already is: nothing to do.
            current = rm.log_manager.log_dir_of(TP.topic, TP.partition)
            assert manager.alter_replica_log_dirs({TP: str(current)}) == {TP: ErrorCode.NONE}
            assert rm.log_manager.future_logs == {}
            # An offline target dir.
            rm.log_manager.failure_channel.maybe_add_offline_log_dir(
                other, OSError(errno.EIO, "Input/output error")
            )
            assert manager.alter_replica_log_dirs({TP: str(other)}) == {
                TP: ErrorCode.KAFKA_STORAGE_ERROR
            }
            assert rm.log_manager.future_logs == {}
        finally:
            await cluster.stop()

    run(scenario)


def test_cluster_authorization(tmp_path: Path) -> None:
    from minikafka.broker.security.acl import ResourceType
    from minikafka.broker.security.principal import ANONYMOUS, Session
    from minikafka.broker.server.core.authorization import AuthHelper

    class DenyAll(AuthHelper):
        def allows(
            self, session: Session, api: str, resource_type: ResourceType, *a: Any, **k: Any
        ) -> bool:
            return False

    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1,))
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1], [1])
            node = cluster[1]
            api = LogDirApi(node.replica_manager, DenyAll())
            session = Session(ANONYMOUS, "")
            assert api.alter_replica_log_dirs({TP: str(_other_dir(node))}, session=session) == {
                TP: ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            }
            answer = api.describe_log_dirs(None, session=session)
            assert answer.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            assert answer.log_dirs == ()
            assert node.replica_manager.log_manager.future_logs == {}
        finally:
            await cluster.stop()

    run(scenario)


def test_describe_log_dirs_sizes_lags_future_and_offline(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1,))
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1], [1])
            node = cluster[1]
            rm = node.replica_manager
            for _ in range(5):
                await produce(node, b"x" * 100)
            a = _current_dir(node)
            b = _other_dir(node)
            # A future log that has copied nothing yet (made directly: no fetcher runs).
            rm.log_manager.create_future_log(TP, b)
            answer = LogDirApi(rm).describe_log_dirs(None)
            assert answer.error_code == ErrorCode.NONE
            by_dir = {Path(d.log_dir): d for d in answer.log_dirs}
            assert set(by_dir) == {a, b}
            (current,) = by_dir[a].partitions
            assert (current.topic, current.partition, current.is_future) == ("t", 0, False)
            assert current.size == rm.get_partition(TP).log.size > 0  # type: ignore[union-attr]
            assert current.offset_lag == 0
            (future,) = by_dir[b].partitions
            assert future.is_future and future.size == 0 and future.offset_lag == 5
            assert (
                by_dir[a].total_bytes > 0 and 0 <= by_dir[a].usable_bytes <= by_dir[a].total_bytes
            )
            # Partitions asked for: another partition leaves the topic listed, empty.
            only = LogDirApi(rm).describe_log_dirs([TopicPartition("t", 7)])
            assert all(d.partitions == () and d.topics == ("t",) for d in only.log_dirs)
            # An offline dir: KAFKA_STORAGE_ERROR and nothing else.
            rm.log_manager.failure_channel.maybe_add_offline_log_dir(
                b, OSError(errno.EIO, "Input/output error")
            )
            await rm.handle_log_dir_failure(b)
            offline = {Path(d.log_dir): d for d in LogDirApi(rm).describe_log_dirs(None).log_dirs}
            assert offline[b].error_code == ErrorCode.KAFKA_STORAGE_ERROR
            assert offline[b].partitions == ()
            assert offline[a].error_code == ErrorCode.NONE
            assert rm.log_manager.future_logs == {}
        finally:
            await cluster.stop()

    run(scenario)


def test_restart_mid_move_resumes_the_future_log(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1,))
        await cluster.start()
        node = cluster[1]
        try:
            await cluster.elect(1, 1, [1], [1])
            for i in range(20):
                await produce(node, b"r%d" % i)
            rm = node.replica_manager
            target = _other_dir(node)
            # The move got half way (the future log made and filled as its fetcher would).
            future_log = rm.log_manager.create_future_log(TP, target)
            assert future_log is not None
            future = Partition(future_log, 1)
            current = rm.get_partition(TP)
            assert current is not None
            half = current.log.read(0, 1 << 20, 10).records
            future.append_records_as_follower(bytes(half))  # type: ignore[arg-type]
            assert 0 < future_log.log_end_offset < 20
        finally:
            await node.stop()
        await node.start()
        try:
            manager = node.replica_manager.log_manager
            assert manager.future_log_dir_of(TP) == target
            assert manager.get_future_log(TP).log_end_offset == 10  # type: ignore[union-attr]
            await cluster.elect(1, 2, [1], [1])  # the LeaderAndIsr of the new start
            await wait_until(lambda: node.replica_manager.alter_log_dirs.swaps == 1, 5)
            assert manager.log_dir_of(TP.topic, TP.partition) == target
            assert node.values() == [b"r%d" % i for i in range(20)]
        finally:
            await node.stop()

    run(scenario)


def test_moving_back_cancels_the_move(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1,))
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1], [1])
            node = cluster[1]
            await produce(node, b"a")
            rm = node.replica_manager
            source = rm.log_manager.log_dir_of(TP.topic, TP.partition)
            target = _other_dir(node)
            rm.log_manager.create_future_log(TP, target)  # a move not copied yet
            rm.alter_log_dirs.maybe_start_moves([])  # (nothing resumed)
            assert rm.alter_log_dirs.alter_replica_log_dirs({TP: str(source)}) == {
                TP: ErrorCode.NONE
            }
            assert rm.log_manager.future_logs == {}
            assert not [p for p in os.listdir(target) if p.startswith("t-0")]
            assert rm.log_manager.log_dir_of(TP.topic, TP.partition) == source
        finally:
            await cluster.stop()

    run(scenario)


def test_crash_between_the_renames_promotes_the_future_log(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    manager = LogManager([a, b], LogConfig(), broker_id=1)
    log = manager.get_or_create_log("t", 0)
    source = manager.log_dir_of("t", 0)
    assert source is not None
    target = b if source == a else a
    log.append_as_leader(records(b"x", b"y"), 0)
    future = manager.create_future_log(TP, target)
    assert future is not None and future.dir.name.startswith("t-0.")
    assert future.dir.name.endswith("-future") and len(future.dir.name) == len("t-0.") + 32 + 7
    future.append_as_follower(bytes(log.read(0, 1 << 20).records))  # type: ignore[arg-type]
    future.flush()
    manager.close()
    # The swap's first rename happened, the second did not.
    os.rename(source / "t-0", source / "t-0.0123456789abcdef0123456789abcdef-delete")
    reopened = LogManager([a, b], LogConfig(), broker_id=1)
    try:
        assert reopened.log_dir_of("t", 0) == target
        assert reopened.future_logs == {}
        assert reopened.get_log("t", 0).log_end_offset == 2  # type: ignore[union-attr]
        assert os.listdir(source) == [n for n in os.listdir(source) if "t-0" not in n]
    finally:
        reopened.close()


def test_future_log_is_loaded_and_checkpointed_in_its_dir(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    manager = LogManager([a, b], LogConfig(), broker_id=1)
    log = manager.get_or_create_log("t", 0)
    source = manager.log_dir_of("t", 0)
    assert source is not None
    target = b if source == a else a
    log.append_as_leader(records(b"x"), 0)
    future = manager.create_future_log(TP, target)
    assert future is not None
    future.append_as_follower(bytes(log.read(0, 1 << 20).records))  # type: ignore[arg-type]
    manager.close()
    assert TP in _checkpoint(target / RECOVERY_POINT_CHECKPOINT)
    assert TP in _checkpoint(source / RECOVERY_POINT_CHECKPOINT)
    reopened = LogManager([a, b], LogConfig(), broker_id=1)
    try:
        assert reopened.future_log_dir_of(TP) == target
        assert reopened.get_future_log(TP).log_end_offset == 1  # type: ignore[union-attr]
        assert reopened.log_dir_of("t", 0) == source
        # The swap by hand: renamed, reopened, both dirs' checkpoints rewritten.
        swapped = reopened.replace_current_with_future(TP)
        assert swapped.dir == target / "t-0" and swapped.log_end_offset == 1
        assert reopened.log_dir_of("t", 0) == target and reopened.future_logs == {}
        assert TP not in _checkpoint(source / RECOVERY_POINT_CHECKPOINT)
        assert _checkpoint(target / RECOVERY_POINT_CHECKPOINT)[TP] == 1
        assert TP not in _checkpoint(source / LOG_START_OFFSET_CHECKPOINT)
        assert not (source / "t-0").exists()
    finally:
        reopened.close()


def test_deleting_the_replica_deletes_its_future_log(tmp_path: Path) -> None:
    from minikafka.broker.replication.requests import (
        StopReplicaPartitionState,
        StopReplicaRequest,
    )

    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1,))
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1], [1])
            node = cluster[1]
            await produce(node, b"a")
            rm = node.replica_manager
            target = _other_dir(node)
            rm.log_manager.create_future_log(TP, target)
            response = await rm.stop_replicas(
                StopReplicaRequest(
                    0, cluster.controller_epoch, node.broker_epoch,
                    [StopReplicaPartitionState(TP.topic, TP.partition, -2, True)],
                )
            )  # fmt: skip
            assert response.error_code == ErrorCode.NONE
            assert rm.log_manager.future_logs == {} and rm.log_manager.get_log("t", 0) is None
            for log_dir in _dirs(node):
                assert not [p for p in os.listdir(log_dir) if p.startswith("t-0")]
        finally:
            await cluster.stop()

    run(scenario)


def test_transactions_survive_the_move_lso_and_txnindex(tmp_path: Path) -> None:
    from minikafka.broker.replication.requests import TxnMarker
    from minikafka.broker.storage.txn_index import AbortedTxn
    from minikafka.proto.records import encode_batch

    def txn(pid: int, seq: int, value: bytes) -> bytes:
        return encode_batch(
            [(0, b"k", value, ())],
            is_transactional=True,
            producer_id=pid,
            producer_epoch=0,
            base_sequence=seq,
        )

    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1,))
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1], [1])
            rm = cluster[1].replica_manager
            for pid, seq, value in ((1, 0, b"a"), (2, 0, b"b")):
                (result,) = await rm.append_records(harness.produce_request(txn(pid, seq, value)))
                assert result.error_code == ErrorCode.NONE
            await rm.write_txn_markers(TxnMarker(2, 0, 0, False, [TP]), 5000)  # 2 aborts (2)
            await produce(cluster[1], b"plain")  # 3
            partition = rm.get_partition(TP)
            assert partition is not None
            assert (partition.high_watermark, partition.last_stable_offset) == (4, 0)
            rm.alter_log_dirs.alter_replica_log_dirs({TP: str(_other_dir(cluster[1]))})
            await wait_until(lambda: rm.alter_log_dirs.swaps == 1, 5)
            assert partition.log.dir.parent == _current_dir(cluster[1])
            assert (partition.high_watermark, partition.last_stable_offset) == (4, 0)
            assert partition.aborted_transactions(0, 4) == [AbortedTxn(2, 1, 2, 0)]
            # Producer 1's transaction is still open in the moved replica: its abort ends it.
            await rm.write_txn_markers(TxnMarker(1, 0, 0, False, [TP]), 5000)  # 4
            assert partition.last_stable_offset == 5
            assert partition.aborted_transactions(0, 5) == [
                AbortedTxn(2, 1, 2, 0),
                AbortedTxn(1, 0, 4, 5),
            ]
        finally:
            await cluster.stop()

    run(scenario)
