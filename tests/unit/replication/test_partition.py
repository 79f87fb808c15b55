"""Partition state without any network: HW, caught-up time, ISR proposals, fencing."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.broker.replication.partition import Partition, PartitionRegistration
from minikafka.broker.storage.config import LogConfig
from minikafka.broker.storage.log import Log
from minikafka.proto.errors import (
    ErrorCode,
    FencedLeaderEpochError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    OffsetOutOfRangeError,
    UnknownLeaderEpochError,
)
from minikafka.proto.records import encode_batch
from tests.unit.replication.harness import records


def _partition(tmp_path: Path, min_insync_replicas: int = 1) -> Partition:
    log = Log(tmp_path / "t-0", LogConfig())
    return Partition(log, 1, min_insync_replicas=min_insync_replicas)


def _registration(
    leader: int = 1, epoch: int = 1, isr: tuple[int, ...] = (1, 2, 3)
) -> PartitionRegistration:
    return PartitionRegistration(
        leader=leader,
        leader_epoch=epoch,
        isr=isr,
        replicas=(1, 2, 3),
        partition_epoch=0,
        controller_epoch=1,
    )


def test_leader_hw_is_the_smallest_isr_leo_and_only_moves_forward(tmp_path: Path) -> None:
    partition = _partition(tmp_path)
    partition.make_leader(_registration(), now_ms=0)
    partition.append_records_to_leader(records(b"a", b"b", b"c"), 1)
    assert not partition.maybe_increment_high_watermark()  # remote LEOs unknown
    partition.update_follower_fetch_state(2, 3, 0, 10, 3)
    assert not partition.maybe_increment_high_watermark()
    partition.update_follower_fetch_state(3, 2, 0, 10, 3)
    assert partition.maybe_increment_high_watermark() and partition.high_watermark == 2
    partition.update_follower_fetch_state(3, 1, 0, 20, 3)  # a follower going back: HW stays
    assert not partition.maybe_increment_high_watermark() and partition.high_watermark == 2


def test_last_caught_up_time_follows_kafka(tmp_path: Path) -> None:
    partition = _partition(tmp_path)
    partition.make_leader(_registration(), now_ms=0)
    partition.append_records_to_leader(records(b"a"), 1)  # LEO 1
    partition.update_follower_fetch_state(2, 0, 0, 100, 1)  # behind: not caught up
    assert partition.remote_replicas[2].last_caught_up_time_ms == 0
    partition.append_records_to_leader(records(b"b"), 1)  # LEO 2
    # fetching at 1 reaches the leader's LEO at the previous fetch: caught up as of then
    partition.update_follower_fetch_state(2, 1, 0, 200, 2)
    assert partition.remote_replicas[2].last_caught_up_time_ms == 100
    partition.update_follower_fetch_state(2, 2, 0, 300, 2)
    assert partition.remote_replicas[2].last_caught_up_time_ms == 300
    assert partition.out_of_sync_replicas(now_ms=350, max_lag_ms=100) == {3}
    # ISR members start as caught up when the leadership starts
    assert partition.out_of_sync_replicas(now_ms=50, max_lag_ms=100) == frozenset()


def test_isr_expansion_needs_the_hw_and_the_epoch_start(tmp_path: Path) -> None:
    partition = _partition(tmp_path)
    partition.make_leader(_registration(isr=(1, 2)), now_ms=0)
    partition.append_records_to_leader(records(b"a", b"b"), 1)
    partition.update_follower_fetch_state(2, 2, 0, 0, 2)
    partition.maybe_increment_high_watermark()
    assert partition.high_watermark == 2
    partition.update_follower_fetch_state(3, 1, 0, 0, 2)
    assert partition.isr_to_expand(3) is None
    partition.update_follower_fetch_state(3, 2, 0, 0, 2)
    assert partition.isr_to_expand(3) == frozenset({1, 2, 3})
    partition.pending_isr = frozenset({1, 2, 3})
    assert partition.isr_to_expand(3) is None  # one ISR write at a time
    partition.apply_isr(frozenset({1, 2, 3}), 1)
    assert partition.isr == {1, 2, 3} and partition.state.partition_epoch == 1  # type: ignore[union-attr]


def test_min_isr_and_roles(tmp_path: Path) -> None:
    partition = _partition(tmp_path, min_insync_replicas=2)
    with pytest.raises(NotLeaderOrFollowerError):
        partition.append_records_to_leader(records(b"a"), 1)
    partition.make_leader(_registration(isr=(1,)), now_ms=0)
    with pytest.raises(NotEnoughReplicasError):
        partition.append_records_to_leader(records(b"a"), -1)
    assert partition.log_end_offset == 0
    partition.append_records_to_leader(records(b"a"), 1)
    partition.make_follower(_registration(leader=2, epoch=2))
    assert not partition.is_leader and partition.leader_id == 2
    with pytest.raises(NotLeaderOrFollowerError):
        partition.append_records_to_leader(records(b"b"), 1)


def test_epoch_fencing(tmp_path: Path) -> None:
    partition = _partition(tmp_path)
    partition.make_leader(_registration(epoch=5), now_ms=0)
    partition.check_leader_epoch(5, require_leader=True)
    partition.check_leader_epoch(-1, require_leader=True)
    with pytest.raises(FencedLeaderEpochError):
        partition.check_leader_epoch(4, require_leader=True)
    with pytest.raises(UnknownLeaderEpochError):
        partition.check_leader_epoch(6, require_leader=True)


def test_new_leader_records_its_epoch_at_the_log_end(tmp_path: Path) -> None:
    partition = _partition(tmp_path)
    partition.make_follower(_registration(leader=2, epoch=1))
    partition.log.append_as_follower(encode_batch([(0, None, b"a", ())], partition_leader_epoch=1))
    partition.make_leader(_registration(epoch=3), now_ms=0)
    assert [tuple(e) for e in partition.log.leader_epoch_cache.entries] == [(1, 0), (3, 1)]
    assert partition.state.epoch_start_offset == 1  # type: ignore[union-attr]


def test_a_new_epoch_of_the_same_leader_keeps_the_followers_log_end_offsets(
    tmp_path: Path,
) -> None:
    """Kafka's makeLeader with isNewLeader false (the controller took a follower out of the
    ISR, a reassignment): the HW may move at once on what the followers already reported."""
    partition = _partition(tmp_path)
    partition.make_leader(_registration(epoch=1), now_ms=0)
    partition.append_records_to_leader(records(b"a", b"b", b"c", b"d", b"e"), 1)  # LEO 5
    partition.update_follower_fetch_state(2, 5, 0, 100, 5)
    partition.update_follower_fetch_state(3, 2, 0, 100, 5)
    partition.maybe_increment_high_watermark()
    assert partition.high_watermark == 2  # broker 3 holds it back

    partition.make_leader(_registration(epoch=2, isr=(1, 2)), now_ms=500)
    assert partition.maybe_increment_high_watermark() and partition.high_watermark == 5
    kept = partition.remote_replicas[2]
    assert (kept.log_end_offset, kept.log_start_offset) == (5, 0)
    assert (kept.last_caught_up_time_ms, kept.last_fetch_time_ms) == (500, 500)
    assert kept.last_fetch_leader_log_end_offset == 5  # the new epoch's start
    dropped = partition.remote_replicas[3]  # out of the ISR: never caught up, never fetched
    assert (dropped.log_end_offset, dropped.last_caught_up_time_ms) == (2, 0)
    assert dropped.last_fetch_time_ms == 0


def test_with_high_watermark_truncation_a_new_epoch_forgets_the_followers_offsets(
    tmp_path: Path,
) -> None:
    """The pre-KIP-101 mode: a follower truncates to its HW on every epoch change, so a LEO it
    reported before may be above its log now; the leader waits for its next fetch."""
    partition = _partition(tmp_path)
    partition.make_leader(_registration(epoch=1), now_ms=0)
    partition.append_records_to_leader(records(b"a", b"b", b"c"), 1)
    partition.update_follower_fetch_state(2, 3, 0, 100, 3)
    partition.make_leader(_registration(epoch=2, isr=(1, 2)), 500, keep_follower_offsets=False)
    assert partition.remote_replicas[2].log_end_offset == -1
    assert not partition.maybe_increment_high_watermark()


def test_a_new_leader_forgets_what_it_knew_of_the_followers(tmp_path: Path) -> None:
    partition = _partition(tmp_path)
    partition.make_leader(_registration(epoch=1), now_ms=0)
    partition.append_records_to_leader(records(b"a", b"b"), 1)
    partition.update_follower_fetch_state(2, 2, 0, 100, 2)
    partition.update_follower_fetch_state(3, 2, 0, 100, 2)
    partition.make_follower(_registration(leader=2, epoch=2))
    partition.make_leader(_registration(epoch=3), now_ms=500)
    assert {r: s.log_end_offset for r, s in partition.remote_replicas.items()} == {2: -1, 3: -1}
    assert partition.remote_replicas[2].last_caught_up_time_ms == 500  # in the ISR


def test_a_replica_newly_assigned_to_the_same_leader_starts_unknown(tmp_path: Path) -> None:
    partition = _partition(tmp_path)
    partition.make_leader(_registration(epoch=1), now_ms=0)
    partition.update_follower_fetch_state(2, 0, 0, 100, 0)
    partition.update_follower_fetch_state(3, 0, 0, 100, 0)
    moved = PartitionRegistration(
        leader=1,
        leader_epoch=2,
        isr=(1, 2),
        replicas=(1, 2, 4),
        partition_epoch=1,
        controller_epoch=1,
    )
    partition.make_leader(moved, now_ms=500)
    assert sorted(partition.remote_replicas) == [2, 4]
    assert partition.remote_replicas[2].log_end_offset == 0
    assert partition.remote_replicas[4].log_end_offset == -1


def test_enough_replicas_after_append_counts_the_isr_with_an_expansion_being_written(
    tmp_path: Path,
) -> None:
    """Kafka's checkEnoughReplicasReachOffset compares min.insync.replicas with the maximal ISR
    at the time of the check: a follower whose ISR expansion is in flight has the records
    (the HW waited for it), so the produce succeeds."""
    partition = _partition(tmp_path, min_insync_replicas=2)
    partition.make_leader(_registration(epoch=1, isr=(1, 2)), now_ms=0)
    info = partition.append_records_to_leader(records(b"a"), -1)
    required = info.last_offset + 1
    partition.apply_isr(frozenset({1}), 1)  # 2 fell out while the produce waited
    partition.update_follower_fetch_state(3, required, 0, 100, required)
    expanded = partition.isr_to_expand(3)
    assert expanded == frozenset({1, 3})
    partition.pending_isr = expanded  # the ZooKeeper write is under way
    assert partition.maybe_increment_high_watermark() and partition.high_watermark == required
    assert partition.check_enough_replicas_reach_offset(required, 1) == ErrorCode.NONE
    partition.pending_isr = None  # the write failed: the ISR is {1}
    assert (
        partition.check_enough_replicas_reach_offset(required, 1)
        == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    )


def test_delete_records_on_leader_moves_the_log_start_offset_up_to_the_hw(tmp_path: Path) -> None:
    partition = _partition(tmp_path)
    partition.make_leader(_registration(isr=(1,)), now_ms=0)
    partition.append_records_to_leader(records(b"a", b"b", b"c", b"d"), 1)
    partition.maybe_increment_high_watermark()
    assert partition.high_watermark == 4
    assert partition.delete_records_on_leader(2) == (2, 2)
    assert partition.log.log_start_offset == 2
    with pytest.raises(OffsetOutOfRangeError, match="the high watermark is 4"):
        partition.delete_records_on_leader(5)
    assert partition.delete_records_on_leader(-1) == (4, 4)  # -1: the high watermark
    partition.make_follower(_registration(leader=2, epoch=2))
    with pytest.raises(NotLeaderOrFollowerError):
        partition.delete_records_on_leader(4)
