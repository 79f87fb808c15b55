"""The group coordinator: Kafka's GroupCoordinator and GroupMetadataManager, in one broker.

A group belongs to partition ``abs(java_hash(group_id)) % N`` of ``__consumer_offsets``; the
leader of that partition is the group's coordinator. When this broker becomes its leader it
loads the partition (every record from the log start; the last record per key wins, a null
value deletes) and answers COORDINATOR_LOAD_IN_PROGRESS meanwhile; when it stops leading it
drops the partition's groups and answers NOT_COORDINATOR.

Membership follows Kafka's eager protocol (states in ``group_metadata.py``):

* JoinGroup without a member id gets MEMBER_ID_REQUIRED and a fresh id (KIP-394); the rejoin
  with that id adds the member and starts a rebalance. The first rebalance of an Empty group
  waits ``group.initial.rebalance.delay.ms`` (more while members keep arriving, never past the
  rebalance timeout); later rebalances end when every member has rejoined or after the longest
  rebalance timeout, removing members that did not rejoin. The leader's JoinGroup response
  carries every member's subscription.
* SyncGroup from the leader stores the assignment (a GroupMetadata record) and answers every
  waiting member; others wait for it. A member's session expires ``session.timeout.ms`` after
  its last heartbeat (or join / sync); expiry and LeaveGroup start a rebalance.
* Static members (KIP-345, ``group_instance_id``) join without MEMBER_ID_REQUIRED; one that
  comes back under a new member id takes its old self's place (``_rejoin_static_member``:
  no rebalance in a Stable group), and the old member id is FENCED_INSTANCE_ID from then on.
* OffsetCommit appends one record per partition with acks=all (``offsets.commit.timeout.ms``)
  and updates the cache only once the append is replicated, so a commit that was answered
  survives the coordinator's death.
* TxnOffsetCommit (KIP-98, with KIP-447's member and generation checks) appends the offsets
  as one transactional batch of the producer (its id and epoch, base sequence 0) and keeps
  them pending for that producer until the marker of its transaction is written to the
  partition (``complete_transactional_offsets``): COMMIT makes them the committed offsets
  unless a plain commit written later in the log superseded them, ABORT drops them. Loading
  does the same from the log's transactional batches and markers; offsets still pending at
  the end of the log stay pending (the transaction coordinator will write the marker). An
  OffsetFetch that requires stable offsets (KIP-447) answers UNSTABLE_OFFSET_COMMIT for a
  partition with a commit still pending.
* Every ``offsets.retention.check.interval.ms`` expired offsets are dropped (KIP-211: a group
  with members keeps them; ``offsets.retention.minutes`` after it became Empty, or after each
  commit for a group that only commits), tombstones appended; an Empty group left without
  offsets, committed or pending, is removed. The same happens to the offsets of deleted
  partitions (``on_partitions_deleted``) and to those OffsetDelete names (``delete_offsets``),
  which drop the partitions' pending transactional offsets too; DeleteGroups removes an Empty
  group whatever is pending (as Kafka does).

Not thread-safe: every method runs on the broker's event loop; timers are the loop's
``call_later`` (a fake in unit tests).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Coroutine, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeVar, overload

import structlog

from minikafka.broker.config import BrokerConfig
from minikafka.broker.group.group_metadata import (
    CONSUMER_PROTOCOL_TYPE,
    GroupMetadata,
    GroupState,
    JoinResult,
    MemberIdentity,
    MemberMetadata,
    PendingOffset,
    SyncResult,
)
from minikafka.broker.replication.scheduler import BackgroundTasks
from minikafka.proto.common import GROUP_METADATA_TOPIC, OffsetAndMetadata
from minikafka.proto.consumer_offsets import (
    OffsetKey,
    decode_group_metadata_value,
    decode_key,
    decode_offset_value,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_key,
    encode_offset_value,
)
from minikafka.proto.errors import ErrorCode
from minikafka.proto.records import (
    BatchHeader,
    ControlType,
    RecordInput,
    control_type_of,
    decode_batch,
    encode_batch,
    iter_batch_headers,
)

__all__ = [
    "GROUP_METADATA_TOPIC",
    "Cancellable",
    "GroupConfig",
    "GroupCoordinator",
    "OffsetsLog",
    "java_string_hashcode",
    "partition_for",
]

_log = structlog.get_logger(__name__)

_NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000

_TP = TypeVar("_TP", bound=tuple[str, int])  # (topic, partition) or a TopicPartition


def java_string_hashcode(value: str) -> int:
    """Java's String.hashCode (UTF-16 code units, int32 overflow), as Kafka hashes group ids."""
    h = 0
    data = value.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for(group_id: str, num_partitions: int) -> int:
    """Kafka's ``Utils.abs(groupId.hashCode) % groupMetadataTopicPartitionCount``."""
    h = java_string_hashcode(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions  # Utils.abs


class Cancellable(Protocol):
    def cancel(self) -> None: ...


class OffsetsLog(Protocol):
    """``__consumer_offsets`` as seen from this broker (the server adapts its ReplicaManager)."""

    def leader_epoch(self, partition: int) -> int | None:
        """This broker's leader epoch for the partition; None when it does not lead it."""
        ...

    async def append(
        self,
        partition: int,
        records: bytes,
        timeout_ms: int,
        *,
        transactional_id: str | None = None,
    ) -> tuple[int, int]:
        """Append the coordinator's own batches (Kafka's AppendOrigin.Coordinator) with
        acks=all: (error code, base offset). ``transactional_id``: the producer's, for the
        transactional batch of a TxnOffsetCommit."""
        ...

    def read(self, partition: int, start: int, max_bytes: int) -> tuple[bytes, int]:
        """Whole batches from ``start`` up to the log end: (batches, log end offset).
        ``start`` -1 = the log start offset."""
        ...


@dataclass(frozen=True)
class GroupConfig:
    """The broker keys the coordinator reads (Kafka's names and defaults)."""

    offsets_topic_num_partitions: int = 50
    group_initial_rebalance_delay_ms: int = 3_000
    group_min_session_timeout_ms: int = 6_000
    group_max_session_timeout_ms: int = 1_800_000
    offsets_commit_timeout_ms: int = 5_000
    offset_metadata_max_bytes: int = 4_096
    offsets_load_buffer_size: int = 5 * 1024 * 1024
    offsets_retention_minutes: int = 10_080
    offsets_retention_check_interval_ms: int = 600_000

    @classmethod
    def from_broker_config(cls, config: BrokerConfig) -> GroupConfig:
        """The broker's group and offsets keys."""
        return cls(
            offsets_topic_num_partitions=config.offsets_topic_num_partitions,
            group_initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms,
            group_min_session_timeout_ms=config.group_min_session_timeout_ms,
            group_max_session_timeout_ms=config.group_max_session_timeout_ms,
            offsets_commit_timeout_ms=config.offsets_commit_timeout_ms,
            offset_metadata_max_bytes=config.offset_metadata_max_bytes,
            offsets_load_buffer_size=config.offsets_load_buffer_size,
            offsets_retention_minutes=config.offsets_retention_minutes,
            offsets_retention_check_interval_ms=config.offsets_retention_check_interval_ms,
        )


@dataclass
class _Ownership:
    leader_epoch: int
    loaded: bool = False


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


# Append errors and what the committing client is told (Kafka's GroupMetadataManager mapping).
_APPEND_ERRORS: dict[int, ErrorCode] = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
}


def _append_error(code: int) -> ErrorCode:
    if code == ErrorCode.NONE:
        return ErrorCode.NONE
    return _APPEND_ERRORS.get(code, ErrorCode.UNKNOWN_SERVER_ERROR)


# What the log answers a transactional append of a producer that is not (or no longer) the
# current one: the client is told as it is (Kafka passes append errors it does not map on).
_TXN_APPEND_ERRORS_AS_THEY_ARE = frozenset(
    {
        ErrorCode.INVALID_PRODUCER_EPOCH,
        ErrorCode.PRODUCER_FENCED,
        ErrorCode.INVALID_TXN_STATE,
        ErrorCode.INVALID_PRODUCER_ID_MAPPING,
        ErrorCode.UNKNOWN_PRODUCER_ID,
        ErrorCode.TRANSACTION_COORDINATOR_FENCED,
    }
)


def _txn_append_error(code: int) -> ErrorCode:
    if code in _TXN_APPEND_ERRORS_AS_THEY_ARE:
        return ErrorCode(code)
    return _append_error(code)


def _offset_records(
    group_id: str, offsets: Mapping[_TP, OffsetAndMetadata], now: int
) -> list[RecordInput]:
    """One OffsetCommit record per partition (plain and transactional commits alike)."""
    return [
        (now, encode_offset_key(group_id, topic, partition), encode_offset_value(committed), ())
        for (topic, partition), committed in offsets.items()
    ]


class GroupCoordinator:
    """Groups whose ``__consumer_offsets`` partition this broker leads (module docstring)."""

    def __init__(
        self,
        broker_id: int,
        config: GroupConfig,
        log: OffsetsLog,
        *,
        call_later: Callable[[float, Callable[[], None]], Cancellable],
        time_ms: Callable[[], int] = _wall_clock_ms,
        partition_count: Callable[[], int] | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.config = config
        self._log = log
        self._call_later = call_later
        self._time_ms = time_ms
        self._partition_count = partition_count or (lambda: config.offsets_topic_num_partitions)
        self._groups: dict[str, GroupMetadata] = {}
        self._partitions: dict[int, _Ownership] = {}
        self._join_timers: dict[str, Cancellable] = {}
        self._initial_joins: set[str] = set()
        self._heartbeat_timers: dict[tuple[str, str], Cancellable] = {}
        self._tasks = BackgroundTasks("group_coordinator.task_failed")
        self._active = True
        self._cleanup_timer: Cancellable | None = None
        # Kafka's openGroupsForProducer: the groups with offsets pending for a producer id.
        self._producer_groups: dict[int, set[str]] = {}

    # --- ownership ----------------------------------------------------------------------------

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self._partition_count())

    def _check(self, group_id: str) -> ErrorCode:
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        if not self._active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        owned = self._partitions.get(self.partition_for(group_id))
        if owned is None:
            return ErrorCode.NOT_COORDINATOR
        if not owned.loaded:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NONE

    def on_leadership_change(
        self, leaders: Sequence[tuple[str, int]], followers: Sequence[tuple[str, int]]
    ) -> None:
        """The ReplicaManager's listener: load partitions it leads, unload the others."""
        for topic, partition in leaders:
            if topic == GROUP_METADATA_TOPIC:
                self.on_elected(partition)
        for topic, partition in followers:
            if topic == GROUP_METADATA_TOPIC:
                self.on_resigned(partition)

    def on_elected(self, partition: int) -> None:
        epoch = self._log.leader_epoch(partition)
        if epoch is None:
            return
        if self._cleanup_timer is None and self._active:
            self._schedule_cleanup()
        owned = self._partitions.get(partition)
        if owned is not None:
            # Still its leader under a newer epoch: what is cached is what it wrote itself.
            owned.leader_epoch = epoch
            return
        ownership = self._partitions[partition] = _Ownership(epoch)
        _log.info("group_partition.loading", partition=partition, leader_epoch=epoch)
        self._tasks.spawn(self._load(partition, ownership), task="load", partition=partition)

    def on_resigned(self, partition: int) -> None:
        owned = self._partitions.pop(partition, None)
        if owned is None:
            return
        dropped = [g for g in self._groups.values() if self.partition_for(g.group_id) == partition]
        for group in dropped:
            self._drop_group(group, ErrorCode.NOT_COORDINATOR)
        gone = {g.group_id for g in dropped}
        for producer_id, group_ids in list(self._producer_groups.items()):
            group_ids -= gone
            if not group_ids:
                del self._producer_groups[producer_id]
        _log.info(
            "group_partition.unloaded",
            partition=partition,
            leader_epoch=owned.leader_epoch,
            groups=len(dropped),
        )

    def _drop_group(self, group: GroupMetadata, error: ErrorCode) -> None:
        for member in list(group.members.values()):
            member.complete_join(JoinResult(error, member.member_id))
            member.complete_sync(SyncResult(error))
            self._cancel_heartbeat(group, member.member_id)
        for member_id in group.pending_members:
            self._cancel_heartbeat(group, member_id)
        timer = self._join_timers.pop(group.group_id, None)
        if timer is not None:
            timer.cancel()
        self._initial_joins.discard(group.group_id)
        group.state = GroupState.DEAD
        self._groups.pop(group.group_id, None)

    async def _load(self, partition: int, ownership: _Ownership) -> None:
        epoch = ownership.leader_epoch
        started = self._time_ms()
        load = _PartitionLoad()
        try:
            position = -1
            while True:
                data, end = self._log.read(
                    partition, position, self.config.offsets_load_buffer_size
                )
                if not data:
                    break
                for pos, header in iter_batch_headers(data):
                    # A compacted partition has batches the cleaner emptied: move past them too.
                    position = header.next_offset
                    load.read_batch(data, pos, header)
                if position >= end:
                    break
                await asyncio.sleep(0)  # let other requests in between chunks
        except Exception:
            _log.exception("group_partition.load_failed", partition=partition, leader_epoch=epoch)
            if self._partitions.get(partition) is ownership:
                self._partitions.pop(partition, None)
            return
        if self._partitions.get(partition) is not ownership:
            return  # unloaded (and maybe loading again) meanwhile
        loaded = load.groups_loaded()
        for group_id, group in loaded.items():
            self._groups[group_id] = group
            for producer_id in group.pending_txn_offsets:
                self._producer_groups.setdefault(producer_id, set()).add(group_id)
            for member in group.members.values():
                self._schedule_heartbeat(group, member)
        ownership.loaded = True
        _log.info(
            "group_partition.loaded",
            partition=partition,
            leader_epoch=epoch,
            groups=len(loaded),
            offsets=len(load.offsets),
            pending_transactions=len(load.pending),
            duration_ms=self._time_ms() - started,
        )

    def committed_offsets(self) -> dict[str, dict[tuple[str, int], int]]:
        """Every loaded group's committed offsets: group id -> (topic, partition) -> offset
        (for the consumer-lag metrics)."""
        return {
            group.group_id: {tp: committed.offset for tp, committed in group.offsets.items()}
            for group in self._groups.values()
        }

    def shutdown(self) -> None:
        self._active = False
        if self._cleanup_timer is not None:
            self._cleanup_timer.cancel()
        for partition in list(self._partitions):
            self.on_resigned(partition)
        self._tasks.cancel_all()

    # --- timers -------------------------------------------------------------------------------

    def _schedule_heartbeat(self, group: GroupMetadata, member: MemberMetadata) -> None:
        key = (group.group_id, member.member_id)
        old = self._heartbeat_timers.pop(key, None)
        if old is not None:
            old.cancel()
        timeout = _NEW_MEMBER_JOIN_TIMEOUT_MS if member.is_new else member.session_timeout_ms
        self._heartbeat_timers[key] = self._call_later(
            timeout / 1000, lambda: self._on_heartbeat_expired(group, member.member_id)
        )

    def _schedule_pending(self, group: GroupMetadata, member_id: str, timeout_ms: int) -> None:
        key = (group.group_id, member_id)
        self._heartbeat_timers[key] = self._call_later(
            timeout_ms / 1000, lambda: self._on_heartbeat_expired(group, member_id)
        )

    def _cancel_heartbeat(self, group: GroupMetadata, member_id: str) -> None:
        timer = self._heartbeat_timers.pop((group.group_id, member_id), None)
        if timer is not None:
            timer.cancel()

    def _on_heartbeat_expired(self, group: GroupMetadata, member_id: str) -> None:
        self._heartbeat_timers.pop((group.group_id, member_id), None)
        if self._groups.get(group.group_id) is not group:
            return
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            _log.info("group.pending_member_expired", group_id=group.group_id, member_id=member_id)
            if group.is_(GroupState.PREPARING_REBALANCE):
                self._try_complete_join(group)
            return
        member = group.members.get(member_id)
        if member is None:
            return
        if (member.awaiting_join is not None and not member.is_new) or (
            member.awaiting_sync is not None
        ):
            self._schedule_heartbeat(group, member)  # Kafka's shouldKeepAlive
            return
        _log.info(
            "group.member_expired",
            group_id=group.group_id,
            member_id=member_id,
            generation_id=group.generation_id,
            session_timeout_ms=member.session_timeout_ms,
        )
        self._remove_member_and_update_group(group, member, "session timeout")

    # --- rebalance ----------------------------------------------------------------------------

    def _maybe_prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.is_(GroupState.COMPLETING_REBALANCE):
            for member in group.members.values():
                member.assignment = b""
                member.complete_sync(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        was_empty = group.is_(GroupState.EMPTY)
        group.transition_to(GroupState.PREPARING_REBALANCE, self._time_ms())
        _log.info(
            "group.preparing_rebalance",
            group_id=group.group_id,
            generation_id=group.generation_id,
            members=len(group.members),
            reason=reason,
        )
        old = self._join_timers.pop(group.group_id, None)
        if old is not None:
            old.cancel()
        self._initial_joins.discard(group.group_id)
        if was_empty:
            delay = self.config.group_initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self._schedule_initial_join(group, delay, remaining)
        else:
            self._join_timers[group.group_id] = self._call_later(
                group.rebalance_timeout_ms() / 1000, lambda: self._complete_join(group)
            )
            self._try_complete_join(group)

    def _schedule_initial_join(self, group: GroupMetadata, delay_ms: int, remaining: int) -> None:
        """Kafka's InitialDelayedJoin: wait while new members keep arriving."""

        def fire() -> None:
            self._join_timers.pop(group.group_id, None)
            self._initial_joins.discard(group.group_id)
            if group.new_member_added and remaining > 0:
                group.new_member_added = False
                delay = min(self.config.group_initial_rebalance_delay_ms, remaining)
                self._schedule_initial_join(group, delay, remaining - delay)
            else:
                self._complete_join(group)

        group.new_member_added = False
        self._initial_joins.add(group.group_id)
        self._join_timers[group.group_id] = self._call_later(delay_ms / 1000, fire)

    def _try_complete_join(self, group: GroupMetadata) -> None:
        if not group.is_(GroupState.PREPARING_REBALANCE) or not group.has_all_members_joined():
            return
        if group.group_id in self._initial_joins:
            return  # the initial delay runs its course (Kafka's InitialDelayedJoin)
        timer = self._join_timers.pop(group.group_id, None)
        if timer is not None:
            timer.cancel()
        self._complete_join(group)

    def _complete_join(self, group: GroupMetadata) -> None:
        self._join_timers.pop(group.group_id, None)
        self._initial_joins.discard(group.group_id)
        if self._groups.get(group.group_id) is not group or not group.is_(
            GroupState.PREPARING_REBALANCE
        ):
            return
        for member in group.not_yet_rejoined():
            _log.info(
                "group.member_not_rejoined",
                group_id=group.group_id,
                member_id=member.member_id,
                generation_id=group.generation_id,
            )
            self._cancel_heartbeat(group, member.member_id)
            member.complete_sync(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
            group.remove(member.member_id)
        # Pending members (given an id, not joined yet) stay: their join starts the next
        # rebalance, or their session timer forgets them.
        now = self._time_ms()
        group.init_next_generation(now)
        _log.info(
            "group.rebalance_completed",
            group_id=group.group_id,
            generation_id=group.generation_id,
            state=group.state.value,
            protocol=group.protocol_name,
            leader=group.leader_id,
            members=sorted(group.members),
        )
        if group.is_(GroupState.EMPTY):
            self._spawn(self._store_group(group, {}), "store_empty_group")
            return
        members = group.current_member_metadata()
        for member in group.members.values():
            member.is_new = False
            member.complete_join(
                JoinResult(
                    ErrorCode.NONE,
                    member.member_id,
                    group.generation_id,
                    group.protocol_type or "",
                    group.protocol_name or "",
                    group.leader_id or "",
                    members if group.is_leader(member.member_id) else (),
                )
            )
            self._schedule_heartbeat(group, member)

    def _remove_member_and_update_group(
        self, group: GroupMetadata, member: MemberMetadata, reason: str
    ) -> None:
        member.complete_join(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member.member_id))
        member.complete_sync(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        self._cancel_heartbeat(group, member.member_id)
        group.remove(member.member_id)
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, f"removing member {member.member_id}: {reason}")
        elif group.is_(GroupState.PREPARING_REBALANCE):
            self._try_complete_join(group)

    def _spawn(self, coroutine: Coroutine[Any, Any, object], name: str) -> None:
        self._tasks.spawn(coroutine, task=name)

    async def _store_group(
        self, group: GroupMetadata, assignments: Mapping[str, bytes]
    ) -> ErrorCode:
        value = group.to_record()
        if assignments:
            value = replace(
                value,
                members=tuple(
                    replace(m, assignment=assignments.get(m.member_id, b"")) for m in value.members
                ),
            )
        batch = encode_batch(
            [
                (
                    self._time_ms(),
                    encode_group_metadata_key(group.group_id),
                    encode_group_metadata_value(value),
                    (),
                )
            ]
        )
        code, _ = await self._log.append(
            self.partition_for(group.group_id), batch, self.config.offsets_commit_timeout_ms
        )
        error = _append_error(code)
        if error != ErrorCode.NONE:
            _log.warning(
                "group.store_failed",
                group_id=group.group_id,
                generation_id=group.generation_id,
                error=ErrorCode(code).name,
            )
        return error

    # --- offsets retention --------------------------------------------------------------------

    def _schedule_cleanup(self) -> None:
        def fire() -> None:
            self._cleanup_timer = None
            if not self._active:
                return
            self._spawn(self.cleanup_expired_offsets(), "offsets_cleanup")
            self._schedule_cleanup()

        self._cleanup_timer = self._call_later(
            self.config.offsets_retention_check_interval_ms / 1000, fire
        )

    def _expired_offsets(self, group: GroupMetadata, now: int) -> list[tuple[str, int]]:
        """Kafka's KIP-211 rule: a group using group management keeps its offsets while it
        has members, then ``offsets.retention.minutes`` from the moment it became Empty; a
        group that only commits keeps each offset that long after its commit."""
        retention = self.config.offsets_retention_minutes * 60_000
        if group.protocol_type:
            if not group.is_(GroupState.EMPTY) or group.state_timestamp_ms < 0:
                return []
            if group.state_timestamp_ms + retention > now:
                return []
            expired = list(group.offsets)
        else:
            expired = [
                tp for tp, o in group.offsets.items() if o.commit_timestamp + retention <= now
            ]
        # A plain commit being appended will replace it: not expired (Kafka's rule too).
        return [tp for tp in expired if not group.pending_offset_commits[tp]]

    async def cleanup_expired_offsets(self) -> int:
        """Drop expired offsets (tombstones in the log), and Empty groups left with none."""
        now = self._time_ms()
        removed = 0
        for group in list(self._groups.values()):
            if self._check(group.group_id) != ErrorCode.NONE:
                continue
            expired = self._expired_offsets(group, now)
            if not expired and not (group.is_(GroupState.EMPTY) and not group.has_offsets()):
                continue
            tombstones, dead = self._remove_offsets(group, expired, now)
            removed += len(expired)
            _log.info(
                "group.offsets_expired",
                group_id=group.group_id,
                offsets=len(expired),
                group_removed=dead,
            )
            await self._append_tombstones(group.group_id, tombstones)
        return removed

    def on_partitions_deleted(self, partitions: Iterable[tuple[str, int]]) -> int:
        """Forget the committed offsets of deleted partitions in every group here (tombstones
        appended in the background), as Kafka's GroupCoordinator.onPartitionsDeleted does, so a
        topic created again under the name starts without them and describing a group does not
        trip over a topic that is gone. Returns how many offsets were removed."""
        deleted = set(partitions)
        now = self._time_ms()
        removed = 0
        for group in list(self._groups.values()):
            if self._check(group.group_id) != ErrorCode.NONE:
                continue
            gone = [
                tp for tp in deleted if tp in group.offsets or group.has_pending_offset_commits(tp)
            ]
            if not gone:
                continue
            committed = sum(tp in group.offsets for tp in gone)
            tombstones, dead = self._remove_offsets(group, gone, now)
            removed += committed
            _log.info(
                "group.offsets_of_deleted_partitions_removed",
                group_id=group.group_id,
                offsets=committed,
                group_removed=dead,
            )
            self._spawn(
                self._append_tombstones(group.group_id, tombstones), "deleted_partition_offsets"
            )
        return removed

    def _remove_offsets(
        self, group: GroupMetadata, partitions: Sequence[tuple[str, int]], now: int
    ) -> tuple[list[RecordInput], bool]:
        """Drop ``partitions``' offsets from the cache, pending transactional ones included; an
        Empty group left without offsets goes too (Kafka's cleanupGroupMetadata). Returns the
        tombstones for the log and whether the group went."""
        tombstones: list[RecordInput] = [
            (now, encode_offset_key(group.group_id, topic, partition), None, ())
            for topic, partition in group.remove_offsets(partitions)
        ]
        dead = group.is_(GroupState.EMPTY) and not group.has_offsets()
        if dead:
            tombstones.append((now, encode_group_metadata_key(group.group_id), None, ()))
            self._drop_group(group, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return tombstones, dead

    async def _append_tombstones(self, group_id: str, tombstones: Sequence[RecordInput]) -> None:
        if not tombstones:
            return  # only pending offsets went: nothing of theirs is committed in the log
        code, _ = await self._log.append(
            self.partition_for(group_id),
            encode_batch(tombstones),
            self.config.offsets_commit_timeout_ms,
        )
        if code != ErrorCode.NONE:
            _log.warning("group.tombstones_append_failed", group_id=group_id, error=code)

    # --- JoinGroup ----------------------------------------------------------------------------

    async def join_group(
        self,
        group_id: str,
        member_id: str,
        *,
        client_id: str,
        client_host: str,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        group_instance_id: str | None = None,
    ) -> JoinResult:
        code = self._check(group_id)
        if code != ErrorCode.NONE:
            return JoinResult(code, member_id)
        config = self.config
        if not (
            config.group_min_session_timeout_ms
            <= session_timeout_ms
            <= config.group_max_session_timeout_ms
        ):
            return JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, member_id)
        if rebalance_timeout_ms <= 0:
            rebalance_timeout_ms = session_timeout_ms
        group = self._groups.get(group_id)
        if group is None:
            if member_id:
                return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id)
            group = self._groups[group_id] = GroupMetadata(group_id)
        if group.is_(GroupState.DEAD):
            return JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id)
        names = [name for name, _ in protocols]
        if not group.supports_protocols(protocol_type, names):
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id)
        if not member_id:
            new_id = f"{group_instance_id or client_id}-{uuid.uuid4()}"
            if group_instance_id is not None:
                old_id = group.static_member_id(group_instance_id)
                if old_id is not None:
                    return await self._rejoin_static_member(
                        group,
                        old_id,
                        new_id,
                        protocols=protocols,
                        rebalance_timeout_ms=rebalance_timeout_ms,
                        session_timeout_ms=session_timeout_ms,
                    )
            group.pending_members.add(new_id)
            self._schedule_pending(group, new_id, session_timeout_ms)
            if group_instance_id is None:
                # KIP-394: a dynamic member joins again with the id; a static one is known by
                # its instance id and joins at once.
                _log.info("group.member_id_required", group_id=group_id, member_id=new_id)
                return JoinResult(ErrorCode.MEMBER_ID_REQUIRED, new_id)
            member_id = new_id
        elif group.is_static_member_fenced(group_instance_id, member_id):
            return JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id)

        future: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()
        if member_id in group.pending_members:
            self._cancel_heartbeat(group, member_id)
            member = MemberMetadata(
                member_id=member_id,
                group_instance_id=group_instance_id,
                client_id=client_id,
                client_host=client_host,
                rebalance_timeout_ms=rebalance_timeout_ms,
                session_timeout_ms=session_timeout_ms,
                protocol_type=protocol_type,
                protocols=list(protocols),
                is_new=True,
            )
            group.add(member, future)
            group.new_member_added = True
            self._schedule_heartbeat(group, member)
            _log.info(
                "group.member_joined",
                group_id=group_id,
                member_id=member_id,
                client_id=client_id,
                generation_id=group.generation_id,
                state=group.state.value,
            )
            if group.is_(GroupState.PREPARING_REBALANCE):
                self._try_complete_join(group)
            else:
                self._maybe_prepare_rebalance(group, f"adding new member {member_id}")
            return await future

        existing = group.members.get(member_id)
        if existing is None:
            return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id)
        member = existing
        if group.is_(GroupState.EMPTY) or group.is_(GroupState.DEAD):
            return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id)
        if group.is_(GroupState.COMPLETING_REBALANCE) and member.matches(protocols):
            # Its JoinGroup response was lost: answer it again.
            self._schedule_heartbeat(group, member)
            return self._current_join_result(group, member)
        if (
            group.is_(GroupState.STABLE)
            and not group.is_leader(member_id)
            and member.matches(protocols)
        ):
            self._schedule_heartbeat(group, member)
            return self._current_join_result(group, member)
        # PreparingRebalance, a changed subscription, or the leader rejoining a Stable group.
        member.protocols = list(protocols)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        if member.awaiting_join is not None:
            member.complete_join(JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member_id))
        member.awaiting_join = future
        self._schedule_heartbeat(group, member)
        if group.is_(GroupState.PREPARING_REBALANCE):
            self._try_complete_join(group)
        else:
            self._prepare_rebalance(group, f"member {member_id} rejoined")
        return await future

    async def _rejoin_static_member(
        self,
        group: GroupMetadata,
        old_id: str,
        new_id: str,
        *,
        protocols: list[tuple[str, bytes]],
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
    ) -> JoinResult:
        """A static member back under a new member id (it restarted) takes its old self's
        place. In a Stable group whose protocol it leaves as it is, nothing else changes: the
        group is stored with the new id and the member gets the current generation, then its
        old assignment from SyncGroup, while the others go on without a rebalance. The answer
        names the leader as it was, so that a restarted leader does not assign again in a
        Stable group (Kafka's updateStaticMemberAndRebalance). Otherwise it joins the
        rebalance under way, or starts one."""
        current_leader = group.leader_id or ""
        member = group.members[old_id]
        previous = (member.protocols, member.rebalance_timeout_ms, member.session_timeout_ms)
        self._cancel_heartbeat(group, old_id)
        group.replace_static_member(old_id, new_id)
        member.protocols = list(protocols)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        self._schedule_heartbeat(group, member)
        _log.info(
            "group.static_member_replaced",
            group_id=group.group_id,
            group_instance_id=member.group_instance_id,
            old_member_id=old_id,
            member_id=new_id,
            state=group.state.value,
        )
        if group.is_(GroupState.STABLE) and group.select_protocol() == group.protocol_name:
            error = await self._store_group(
                group, {m.member_id: m.assignment for m in group.members.values()}
            )
            if error != ErrorCode.NONE:
                if group.members.get(new_id) is member:
                    # Not stored: the old member id stays the valid one.
                    self._cancel_heartbeat(group, new_id)
                    group.replace_static_member(new_id, old_id)
                    (
                        member.protocols,
                        member.rebalance_timeout_ms,
                        member.session_timeout_ms,
                    ) = previous
                    self._schedule_heartbeat(group, member)
                return JoinResult(error, new_id)
            return JoinResult(
                ErrorCode.NONE,
                new_id,
                group.generation_id,
                group.protocol_type or "",
                group.protocol_name or "",
                current_leader,
            )
        future: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()
        member.awaiting_join = future
        if group.is_(GroupState.PREPARING_REBALANCE):
            self._try_complete_join(group)
        else:
            self._prepare_rebalance(group, f"static member {new_id} rejoined")
        return await future

    def _current_join_result(self, group: GroupMetadata, member: MemberMetadata) -> JoinResult:
        return JoinResult(
            ErrorCode.NONE,
            member.member_id,
            group.generation_id,
            group.protocol_type or "",
            group.protocol_name or "",
            group.leader_id or "",
            group.current_member_metadata() if group.is_leader(member.member_id) else (),
        )

    # --- SyncGroup ----------------------------------------------------------------------------

    async def sync_group(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        assignments: Mapping[str, bytes],
        *,
        protocol_type: str = "",
        protocol_name: str = "",
        group_instance_id: str | None = None,
    ) -> SyncResult:
        code = self._check(group_id)
        if code != ErrorCode.NONE:
            return SyncResult(code)
        group = self._groups.get(group_id)
        if group is None:
            return SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.is_(GroupState.DEAD):
            return SyncResult(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        code = group.validate_member(member_id, group_instance_id)
        if code != ErrorCode.NONE:
            return SyncResult(code)
        member = group.members[member_id]
        if generation_id != group.generation_id:
            return SyncResult(ErrorCode.ILLEGAL_GENERATION)
        if (protocol_type and protocol_type != group.protocol_type) or (
            protocol_name and protocol_name != group.protocol_name
        ):
            return SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if group.is_(GroupState.EMPTY):
            return SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.is_(GroupState.PREPARING_REBALANCE):
            return SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)
        self._schedule_heartbeat(group, member)
        if group.is_(GroupState.STABLE):
            return SyncResult(
                ErrorCode.NONE,
                member.assignment,
                group.protocol_type or "",
                group.protocol_name or "",
            )
        # CompletingRebalance
        future: asyncio.Future[SyncResult] = asyncio.get_running_loop().create_future()
        member.complete_sync(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        member.awaiting_sync = future
        if group.is_leader(member_id):
            full = {m: assignments.get(m, b"") for m in group.members}
            generation = group.generation_id
            self._spawn(self._complete_sync(group, generation, full), "store_group")
        return await future

    async def _complete_sync(
        self, group: GroupMetadata, generation: int, assignments: dict[str, bytes]
    ) -> None:
        error = await self._store_group(group, assignments)
        if (
            self._groups.get(group.group_id) is not group
            or not group.is_(GroupState.COMPLETING_REBALANCE)
            or group.generation_id != generation
        ):
            return
        if error != ErrorCode.NONE:
            for member in group.members.values():
                member.assignment = b""
                member.complete_sync(SyncResult(error))
            self._maybe_prepare_rebalance(group, f"storing the assignment failed: {error.name}")
            return
        for member_id, assignment in assignments.items():
            if member_id in group.members:
                group.members[member_id].assignment = assignment
        group.transition_to(GroupState.STABLE, self._time_ms())
        _log.info(
            "group.stable",
            group_id=group.group_id,
            generation_id=generation,
            protocol=group.protocol_name,
            members=sorted(group.members),
        )
        for member in group.members.values():
            member.complete_sync(
                SyncResult(
                    ErrorCode.NONE,
                    member.assignment,
                    group.protocol_type or "",
                    group.protocol_name or "",
                )
            )

    # --- Heartbeat and LeaveGroup -------------------------------------------------------------

    def heartbeat(
        self,
        group_id: str,
        member_id: str,
        generation_id: int,
        group_instance_id: str | None = None,
    ) -> ErrorCode:
        code = self._check(group_id)
        if code != ErrorCode.NONE:
            return code
        group = self._groups.get(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if group.is_(GroupState.EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        code = group.validate_member(member_id, group_instance_id)
        if code != ErrorCode.NONE:
            return code
        member = group.members[member_id]
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        self._schedule_heartbeat(group, member)
        if group.is_(GroupState.PREPARING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def leave_group(
        self, group_id: str, members: Iterable[str | MemberIdentity]
    ) -> tuple[ErrorCode, list[tuple[str, ErrorCode]]]:
        """Each leaving member's (member id, error), in the order given. A member is a member
        id, or a MemberIdentity: a static member may leave by its instance id alone (member id
        ""), and one that names both must name its current member id (FENCED_INSTANCE_ID)."""
        code = self._check(group_id)
        if code != ErrorCode.NONE:
            return code, []
        group = self._groups.get(group_id)
        results: list[tuple[str, ErrorCode]] = []
        for leaving in members:
            member_id, instance_id = (leaving, None) if isinstance(leaving, str) else leaving
            if group is None or group.is_(GroupState.DEAD):
                results.append((member_id, ErrorCode.UNKNOWN_MEMBER_ID))
                continue
            if instance_id is not None:
                if member_id and group.is_static_member_fenced(instance_id, member_id):
                    results.append((member_id, ErrorCode.FENCED_INSTANCE_ID))
                    continue
                member_id = group.static_member_id(instance_id) or member_id
            if member_id in group.pending_members:
                group.pending_members.discard(member_id)
                self._cancel_heartbeat(group, member_id)
                results.append((member_id, ErrorCode.NONE))
                if group.is_(GroupState.PREPARING_REBALANCE):
                    self._try_complete_join(group)
                continue
            member = group.members.get(member_id)
            if member is None:
                results.append((member_id, ErrorCode.UNKNOWN_MEMBER_ID))
                continue
            _log.info(
                "group.member_left",
                group_id=group_id,
                member_id=member_id,
                generation_id=group.generation_id,
            )
            self._remove_member_and_update_group(group, member, "the consumer left the group")
            results.append((member_id, ErrorCode.NONE))
        return ErrorCode.NONE, results

    # --- offsets ------------------------------------------------------------------------------

    async def commit_offsets(
        self,
        group_id: str,
        member_id: str,
        generation_id: int,
        offsets: Mapping[tuple[str, int], OffsetAndMetadata],
        group_instance_id: str | None = None,
    ) -> dict[tuple[str, int], ErrorCode]:
        def everywhere(code: ErrorCode) -> dict[tuple[str, int], ErrorCode]:
            return dict.fromkeys(offsets, code)

        code = self._check(group_id)
        if code != ErrorCode.NONE:
            return everywhere(code)
        group = self._groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                return everywhere(ErrorCode.ILLEGAL_GENERATION)
            group = self._groups[group_id] = GroupMetadata(group_id)
        if group.is_(GroupState.DEAD):
            return everywhere(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if not (generation_id < 0 and group.is_(GroupState.EMPTY)):
            if group.is_(GroupState.COMPLETING_REBALANCE):
                return everywhere(ErrorCode.REBALANCE_IN_PROGRESS)
            code = group.validate_member(member_id, group_instance_id)
            if code != ErrorCode.NONE:
                return everywhere(code)
            member = group.members[member_id]
            if generation_id != group.generation_id:
                return everywhere(ErrorCode.ILLEGAL_GENERATION)
            self._schedule_heartbeat(group, member)

        results: dict[tuple[str, int], ErrorCode] = {}
        now = self._time_ms()
        valid: dict[tuple[str, int], OffsetAndMetadata] = {}
        for key, committed in offsets.items():
            if len(committed.metadata.encode()) > self.config.offset_metadata_max_bytes:
                results[key] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                valid[key] = replace(committed, commit_timestamp=now)
        if not valid:
            return results
        group.pending_offset_commits.update(list(valid))
        try:
            append_code, base_offset = await self._log.append(
                self.partition_for(group_id),
                encode_batch(_offset_records(group_id, valid, now)),
                self.config.offsets_commit_timeout_ms,
            )
        finally:
            group.pending_offset_commits.subtract(list(valid))
            group.pending_offset_commits = +group.pending_offset_commits
        error = _append_error(append_code)
        if error == ErrorCode.NONE and self._groups.get(group_id) is group:
            for i, (key, committed) in enumerate(valid.items()):
                group.update_offset(key, committed, base_offset + i)
            _log.debug(
                "group.offsets_committed",
                group_id=group_id,
                generation_id=generation_id,
                offsets={f"{t}-{p}": v.offset for (t, p), v in valid.items()},
            )
        elif error != ErrorCode.NONE:
            _log.info(
                "group.offset_commit_failed",
                group_id=group_id,
                error=error.name,
                append_error=append_code,
            )
        results.update(dict.fromkeys(valid, error))
        return results

    async def txn_offset_commit(
        self,
        group_id: str,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        offsets: Mapping[_TP, OffsetAndMetadata],
        member_id: str = "",
        generation_id: int = -1,
        group_instance_id: str | None = None,
    ) -> dict[_TP, ErrorCode]:
        """TxnOffsetCommit: each partition's answer. The offsets are appended as one
        transactional batch of the producer and stay pending for it until the marker of its
        transaction (``complete_transactional_offsets``). An unknown group is created Empty.
        Member checks only when the request names a member, a generation or an instance id
        (KIP-447; older clients send none): UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID,
        ILLEGAL_GENERATION, as Kafka's validateOffsetCommit; unlike a plain commit, a group
        in CompletingRebalance takes them and no session is extended."""

        def everywhere(code: ErrorCode) -> dict[_TP, ErrorCode]:
            return dict.fromkeys(offsets, code)

        code = self._check(group_id)
        if code != ErrorCode.NONE:
            return everywhere(code)
        group = self._groups.get(group_id)
        if group is None:
            group = GroupMetadata(group_id)  # kept only if the commit goes ahead
        if group.is_(GroupState.DEAD):
            return everywhere(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if not (generation_id < 0 and group.is_(GroupState.EMPTY)) and (
            generation_id >= 0 or member_id or group_instance_id is not None
        ):
            code = group.validate_member(member_id, group_instance_id)
            if code != ErrorCode.NONE:
                return everywhere(code)
            if generation_id != group.generation_id:
                return everywhere(ErrorCode.ILLEGAL_GENERATION)

        results: dict[_TP, ErrorCode] = {}
        now = self._time_ms()
        valid: dict[_TP, OffsetAndMetadata] = {}
        for key, committed in offsets.items():
            if len(committed.metadata.encode()) > self.config.offset_metadata_max_bytes:
                results[key] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                valid[key] = replace(committed, commit_timestamp=now)
        if not valid:
            return results
        self._groups.setdefault(group_id, group)
        replaced = group.prepare_txn_offset_commit(producer_id, valid.items())
        self._producer_groups.setdefault(producer_id, set()).add(group_id)
        batch = encode_batch(
            _offset_records(group_id, valid, now),
            is_transactional=True,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=0,
        )
        append_code, base_offset = await self._log.append(
            self.partition_for(group_id),
            batch,
            self.config.offsets_commit_timeout_ms,
            transactional_id=transactional_id,
        )
        error = _txn_append_error(append_code)
        if self._groups.get(group_id) is group:
            for i, (key, committed) in enumerate(valid.items()):
                if error == ErrorCode.NONE:
                    group.on_txn_offset_commit_append(producer_id, key, committed, base_offset + i)
                else:
                    group.fail_pending_txn_offset_commit(
                        producer_id, key, committed, replaced.get(key)
                    )
            if not group.has_pending_txn_offsets_from(producer_id):
                self._forget_producer_group(producer_id, group_id)
        if error != ErrorCode.NONE:
            _log.info(
                "group.txn_offset_commit_failed",
                group_id=group_id,
                transactional_id=transactional_id,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                error=error.name,
                append_error=append_code,
            )
        results.update(dict.fromkeys(valid, error))
        return results

    def complete_transactional_offsets(
        self, partition: int, producer_id: int, committed: bool
    ) -> None:
        """A COMMIT (``committed``) or ABORT marker of ``producer_id`` was appended to
        __consumer_offsets-``partition``: the producer's pending offsets in the groups of that
        partition become committed offsets (where no plain commit written later superseded
        them) or go (Kafka's handleTxnCompletion). A partition still loading reads the marker
        from the log itself; one not led here has nothing cached."""
        owned = self._partitions.get(partition)
        if owned is None or not owned.loaded:
            return
        for group_id in list(self._producer_groups.get(producer_id, ())):
            if self.partition_for(group_id) != partition:
                continue
            group = self._groups.get(group_id)
            if group is not None and not group.is_(GroupState.DEAD):
                done = group.complete_pending_txn_offset_commit(producer_id, committed)
                _log.debug(
                    "group.txn_offsets_completed",
                    group_id=group_id,
                    producer_id=producer_id,
                    committed=committed,
                    offsets=done,
                )
            if group is None or not group.has_pending_txn_offsets_from(producer_id):
                self._forget_producer_group(producer_id, group_id)

    def _forget_producer_group(self, producer_id: int, group_id: str) -> None:
        group_ids = self._producer_groups.get(producer_id)
        if group_ids is not None:
            group_ids.discard(group_id)
            if not group_ids:
                del self._producer_groups[producer_id]

    async def delete_offsets(
        self, group_id: str, partitions: Iterable[tuple[str, int]]
    ) -> tuple[ErrorCode, dict[tuple[str, int], ErrorCode]]:
        """OffsetDelete (KIP-496): forget the group's committed offsets of ``partitions``. An
        Empty group loses any of them; a consumer group with members only those of topics no
        member subscribes to (the others: GROUP_SUBSCRIBED_TO_TOPIC); any other group with
        members none (NON_EMPTY_GROUP). An Empty group left without offsets goes, as on
        expiry. Returns (group error, each partition's error)."""
        code = self._check(group_id)
        if code != ErrorCode.NONE:
            return code, {}
        group = self._groups.get(group_id)
        if group is None or group.is_(GroupState.DEAD):
            return ErrorCode.GROUP_ID_NOT_FOUND, {}
        wanted = list(dict.fromkeys(partitions))
        if not group.is_(GroupState.EMPTY) and group.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return ErrorCode.NON_EMPTY_GROUP, {}
        results = {
            tp: ErrorCode.NONE
            if group.is_(GroupState.EMPTY) or not group.is_subscribed_to_topic(tp[0])
            else ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
            for tp in wanted
        }
        removable = [
            tp
            for tp, c in results.items()
            if c == ErrorCode.NONE and (tp in group.offsets or group.has_pending_offset_commits(tp))
        ]
        if removable:
            tombstones, dead = self._remove_offsets(group, removable, self._time_ms())
            _log.info(
                "group.offsets_deleted",
                group_id=group_id,
                offsets=len(removable),
                group_removed=dead,
            )
            await self._append_tombstones(group_id, tombstones)
        return ErrorCode.NONE, results

    @overload
    def fetch_offsets(
        self, group_id: str, partitions: Iterable[tuple[str, int]] | None
    ) -> tuple[ErrorCode, dict[tuple[str, int], OffsetAndMetadata | None]]: ...

    @overload
    def fetch_offsets(
        self,
        group_id: str,
        partitions: Iterable[tuple[str, int]] | None,
        *,
        require_stable: bool,
    ) -> tuple[
        ErrorCode,
        dict[tuple[str, int], OffsetAndMetadata | None],
        dict[tuple[str, int], ErrorCode],
    ]: ...

    def fetch_offsets(
        self,
        group_id: str,
        partitions: Iterable[tuple[str, int]] | None,
        *,
        require_stable: bool | None = None,
    ) -> (
        tuple[ErrorCode, dict[tuple[str, int], OffsetAndMetadata | None]]
        | tuple[
            ErrorCode,
            dict[tuple[str, int], OffsetAndMetadata | None],
            dict[tuple[str, int], ErrorCode],
        ]
    ):
        """Committed offsets of ``partitions`` (None = every partition the group committed).

        Given ``require_stable`` (OffsetFetch v7+), the answer has a third part, each
        partition's error: with it True, a partition with a commit still pending (a
        transaction's, or a plain one being appended) is UNSTABLE_OFFSET_COMMIT and None among
        the offsets (KIP-447; Kafka answers it per partition, with offset -1)."""
        code = self._check(group_id)
        if code != ErrorCode.NONE:
            return (code, {}) if require_stable is None else (code, {}, {})
        group = self._groups.get(group_id)
        known = {} if group is None else group.offsets
        wanted = list(known) if partitions is None else list(partitions)
        offsets = {key: known.get(key) for key in wanted}
        if require_stable is None:
            return ErrorCode.NONE, offsets
        errors: dict[tuple[str, int], ErrorCode] = {}
        if require_stable and group is not None:
            for key in wanted:
                if group.has_pending_offset_commits(key):
                    errors[key] = ErrorCode.UNSTABLE_OFFSET_COMMIT
                    offsets[key] = None
        return ErrorCode.NONE, offsets, errors

    # --- admin --------------------------------------------------------------------------------

    def list_groups(
        self, states: Iterable[str] = ()
    ) -> tuple[ErrorCode, list[tuple[str, str, str]]]:
        """(group id, protocol type, state) of every group here; loading partitions = error."""
        if any(not owned.loaded for owned in self._partitions.values()):
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, []
        wanted = {s.lower() for s in states}
        return ErrorCode.NONE, [
            (g.group_id, g.protocol_type or "", g.state.value)
            for g in sorted(self._groups.values(), key=lambda g: g.group_id)
            if not g.is_(GroupState.DEAD) and (not wanted or g.state.value.lower() in wanted)
        ]

    def describe_group(self, group_id: str) -> tuple[ErrorCode, GroupMetadata | None]:
        code = self._check(group_id)
        if code != ErrorCode.NONE:
            return code, None
        return ErrorCode.NONE, self._groups.get(group_id)

    async def delete_groups(self, group_ids: Iterable[str]) -> dict[str, ErrorCode]:
        results: dict[str, ErrorCode] = {}
        for group_id in group_ids:
            code = self._check(group_id)
            if code != ErrorCode.NONE:
                results[group_id] = code
                continue
            group = self._groups.get(group_id)
            if group is None or group.is_(GroupState.DEAD):
                results[group_id] = ErrorCode.GROUP_ID_NOT_FOUND
                continue
            if not group.is_(GroupState.EMPTY):
                results[group_id] = ErrorCode.NON_EMPTY_GROUP
                continue
            now = self._time_ms()
            tombstones = [(now, encode_group_metadata_key(group_id), None, ())]
            tombstones += [
                (now, encode_offset_key(group_id, topic, partition), None, ())
                for topic, partition in group.offsets
            ]
            self._drop_group(group, ErrorCode.COORDINATOR_NOT_AVAILABLE)
            append_code, _ = await self._log.append(
                self.partition_for(group_id),
                encode_batch(tombstones),
                self.config.offsets_commit_timeout_ms,
            )
            results[group_id] = _append_error(append_code)
            _log.info("group.deleted", group_id=group_id, offsets=len(tombstones) - 1)
        return results

    def groups(self) -> Iterator[GroupMetadata]:
        return iter(list(self._groups.values()))


class _PartitionLoad:
    """What loading a __consumer_offsets partition has read so far (Kafka's
    doLoadGroupsAndOffsets): the last offset record per key with its log offset, the offsets of
    transactional batches pending per producer id until a marker of that producer (COMMIT: they
    replace older committed ones; ABORT: they go), and the last group record per group."""

    def __init__(self) -> None:
        self.offsets: dict[OffsetKey, PendingOffset] = {}
        self.pending: dict[int, dict[OffsetKey, PendingOffset]] = {}
        self.groups: dict[str, bytes] = {}

    def read_batch(self, data: bytes, pos: int, header: BatchHeader) -> None:
        _, records = decode_batch(data, pos)
        if header.is_control:
            pending = self.pending.pop(header.producer_id, {})
            if records and control_type_of(records[0].key) == ControlType.COMMIT:
                for key, offset in pending.items():
                    current = self.offsets.get(key)
                    if current is None or current.position < offset.position:
                        self.offsets[key] = offset
            return
        for record in records:
            if record.key is None:
                continue
            decoded = decode_key(record.key)
            if isinstance(decoded, OffsetKey):
                into = (
                    self.pending.setdefault(header.producer_id, {})
                    if header.is_transactional
                    else self.offsets
                )
                if record.value is None:
                    into.pop(decoded, None)
                else:
                    into[decoded] = PendingOffset(decode_offset_value(record.value), record.offset)
            elif record.value is None:
                self.groups.pop(decoded.group, None)
            else:
                self.groups[decoded.group] = record.value

    def groups_loaded(self) -> dict[str, GroupMetadata]:
        """Every group read: those with a group record, and Empty ones for offsets alone."""
        loaded = {
            group_id: GroupMetadata.from_record(group_id, decode_group_metadata_value(value))
            for group_id, value in self.groups.items()
        }

        def group(group_id: str) -> GroupMetadata:
            if group_id not in loaded:
                loaded[group_id] = GroupMetadata(group_id)
            return loaded[group_id]

        for key, offset in self.offsets.items():
            group(key.group).update_offset((key.topic, key.partition), *offset)
        for producer_id, offsets in self.pending.items():
            for key, offset in offsets.items():
                pending = group(key.group).pending_txn_offsets.setdefault(producer_id, {})
                pending[(key.topic, key.partition)] = offset
        return loaded
