"""One consumer group's membership state: Kafka's GroupMetadata and MemberMetadata.

States and the transitions allowed between them (Kafka's, names included)::

    Empty ──join──► PreparingRebalance ──all joined / timeout──► CompletingRebalance
      ▲                 ▲        │                                   │
      │                 │        └──no member left──► Empty          │ leader's SyncGroup
      │                 └──join, leave, expiry────── Stable ◄────────┘
      └── (any state) ──► Dead   (group deleted, or its partition unloaded)

* PreparingRebalance: members must send JoinGroup again; each waits (``awaiting_join``)
  until every known member has rejoined or the rebalance timeout passes.
* CompletingRebalance: the new generation exists; members send SyncGroup and wait
  (``awaiting_sync``) for the leader's assignment.
* Stable: every member has its assignment and heartbeats.

A static member (KIP-345, ``group_instance_id``) is known by its instance id across restarts:
when it comes back under a new member id it replaces its old self (``replace_static_member``),
and the old member id is fenced (FENCED_INSTANCE_ID).

Offsets (Kafka's names): ``offsets`` are the committed ones, each with the __consumer_offsets
offset of its record (``offset_positions``); ``pending_offset_commits`` counts plain commits
whose append is under way; ``pending_txn_offsets`` holds, per producer id, the offsets a
transaction committed (TxnOffsetCommit, KIP-98) until the COMMIT or ABORT marker of that
transaction: only then do they become committed offsets, or go. Whichever record was written
later in the log wins between a plain commit and a committed transactional one.

This module holds state and answers questions about it; the timers and the responses live in
``coordinator.py``. Not thread-safe: the broker's event loop owns every group.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import NamedTuple

from minikafka.proto.common import OffsetAndMetadata
from minikafka.proto.consumer_offsets import GroupMetadataValue, MemberRecord
from minikafka.proto.consumer_protocol import Subscription
from minikafka.proto.errors import ErrorCode, KafkaError

__all__ = [
    "CONSUMER_PROTOCOL_TYPE",
    "GroupMetadata",
    "GroupState",
    "JoinResult",
    "MemberIdentity",
    "MemberMetadata",
    "PendingOffset",
    "SyncResult",
]


class GroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


CONSUMER_PROTOCOL_TYPE = "consumer"

_VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.DEAD: frozenset(GroupState),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}
    ),
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
}


@dataclass(frozen=True)
class JoinResult:
    """What a JoinGroup waiter receives (``members`` only for the leader)."""

    error: int
    member_id: str
    generation_id: int = -1
    protocol_type: str = ""
    protocol_name: str = ""
    leader: str = ""
    members: tuple[tuple[str, str | None, bytes], ...] = ()


@dataclass(frozen=True)
class SyncResult:
    error: int
    assignment: bytes = b""
    protocol_type: str = ""
    protocol_name: str = ""


class PendingOffset(NamedTuple):
    """A transactional offset waiting for its transaction's marker (Kafka's
    CommitRecordMetadataAndOffset): the offset, and the __consumer_offsets offset of its record,
    -1 while the append is under way."""

    committed: OffsetAndMetadata
    position: int = -1


class MemberIdentity(NamedTuple):
    """A member as LeaveGroup v3+ names it: by member id, or a static one by instance id."""

    member_id: str
    group_instance_id: str | None = None


@dataclass(eq=False)
class MemberMetadata:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]  # (assignor name, subscription bytes), by preference
    assignment: bytes = b""
    awaiting_join: asyncio.Future[JoinResult] | None = None
    awaiting_sync: asyncio.Future[SyncResult] | None = None
    is_new: bool = False

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata(self, protocol: str) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        raise ValueError(f"member {self.member_id} does not support protocol {protocol}")

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return self.protocols == protocols

    def vote(self, candidates: set[str]) -> str:
        """Its most preferred protocol among ``candidates`` (Kafka's MemberMetadata.vote)."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")

    def complete_join(self, result: JoinResult) -> bool:
        future, self.awaiting_join = self.awaiting_join, None
        if future is not None and not future.done():
            future.set_result(result)
            return True
        return False

    def complete_sync(self, result: SyncResult) -> bool:
        future, self.awaiting_sync = self.awaiting_sync, None
        if future is not None and not future.done():
            future.set_result(result)
            return True
        return False


@dataclass(eq=False)
class GroupMetadata:
    """A group, its members and its committed offsets (see the module docstring)."""

    group_id: str
    state: GroupState = GroupState.EMPTY
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, MemberMetadata] = field(default_factory=dict)
    pending_members: set[str] = field(default_factory=set)  # KIP-394: id given, not joined
    offsets: dict[tuple[str, int], OffsetAndMetadata] = field(default_factory=dict)
    # The __consumer_offsets offset of the record behind each cached offset: a commit whose
    # append finishes late never replaces a newer one.
    offset_positions: dict[tuple[str, int], int] = field(default_factory=dict)
    pending_offset_commits: Counter[tuple[str, int]] = field(default_factory=Counter)
    pending_txn_offsets: dict[int, dict[tuple[str, int], PendingOffset]] = field(
        default_factory=dict
    )
    # Offsets whose transaction ended while their append was still under way: the record is in
    # the log before the marker, so the outcome applies once the append says where it landed.
    ended_txn_offsets: dict[tuple[int, tuple[str, int]], tuple[OffsetAndMetadata, bool]] = field(
        default_factory=dict
    )
    state_timestamp_ms: int = -1
    new_member_added: bool = False

    def is_(self, state: GroupState) -> bool:
        return self.state is state

    def can_rebalance(self) -> bool:
        return GroupState.PREPARING_REBALANCE in _VALID_NEXT.get(self.state, frozenset())

    def transition_to(self, state: GroupState, now_ms: int) -> None:
        if self.state not in _VALID_PREVIOUS[state]:
            raise RuntimeError(
                f"group {self.group_id} should be in one of "
                f"{sorted(s.value for s in _VALID_PREVIOUS[state])} before moving to "
                f"{state.value}, but is {self.state.value}"
            )
        self.state = state
        self.state_timestamp_ms = now_ms

    # --- members ------------------------------------------------------------------------------

    def add(self, member: MemberMetadata, future: asyncio.Future[JoinResult] | None) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        member.awaiting_join = future
        self.members[member.member_id] = member
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> MemberMetadata | None:
        member = self.members.pop(member_id, None)
        self.pending_members.discard(member_id)
        if member_id == self.leader_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def is_leader(self, member_id: str) -> bool:
        return member_id == self.leader_id

    # --- static members (KIP-345) -------------------------------------------------------------

    def static_member_id(self, group_instance_id: str) -> str | None:
        """The member id the static member ``group_instance_id`` has now, if it is here."""
        for member in self.members.values():
            if member.group_instance_id == group_instance_id:
                return member.member_id
        return None

    def is_static_member_fenced(self, group_instance_id: str | None, member_id: str) -> bool:
        """The instance id belongs to another member id: ``member_id`` is a restarted static
        member's old incarnation (Kafka's isStaticMemberFenced)."""
        if group_instance_id is None:
            return False
        current = self.static_member_id(group_instance_id)
        return current is not None and current != member_id

    def validate_member(self, member_id: str, group_instance_id: str | None) -> ErrorCode:
        """Kafka's validateMember for SyncGroup, Heartbeat and OffsetCommit: a static member is
        known by its instance id, and only under its current member id."""
        if group_instance_id is None:
            return ErrorCode.NONE if member_id in self.members else ErrorCode.UNKNOWN_MEMBER_ID
        current = self.static_member_id(group_instance_id)
        if current is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return ErrorCode.NONE if current == member_id else ErrorCode.FENCED_INSTANCE_ID

    def replace_static_member(self, old_member_id: str, new_member_id: str) -> MemberMetadata:
        """A static member that restarted takes its old place under a new member id, keeping
        its assignment (and leadership); a JoinGroup or SyncGroup still waiting under the old
        id is answered FENCED_INSTANCE_ID."""
        member = self.members.pop(old_member_id)
        member.complete_join(JoinResult(ErrorCode.FENCED_INSTANCE_ID, old_member_id))
        member.complete_sync(SyncResult(ErrorCode.FENCED_INSTANCE_ID))
        member.member_id = new_member_id
        self.members[new_member_id] = member
        if self.leader_id == old_member_id:
            self.leader_id = new_member_id
        return member

    def not_yet_rejoined(self) -> list[MemberMetadata]:
        return [m for m in self.members.values() if m.awaiting_join is None]

    def has_all_members_joined(self) -> bool:
        return not self.pending_members and all(
            m.awaiting_join is not None for m in self.members.values()
        )

    def rebalance_timeout_ms(self) -> int:
        """The longest rebalance timeout of its members: how long a rebalance may wait."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # --- protocols ----------------------------------------------------------------------------

    def candidate_protocols(self) -> set[str]:
        members = list(self.members.values())
        if not members:
            return set()
        common = set(members[0].protocol_names())
        for member in members[1:]:
            common &= set(member.protocol_names())
        return common

    def supports_protocols(self, protocol_type: str, protocols: list[str]) -> bool:
        """Kafka's supportsProtocols: the same type and one protocol every member has."""
        if not self.members:
            return bool(protocol_type) and bool(protocols)
        return protocol_type == self.protocol_type and bool(
            self.candidate_protocols() & set(protocols)
        )

    def select_protocol(self) -> str:
        """The candidate most members prefer (ties: the first one a member votes for)."""
        candidates = self.candidate_protocols()
        if not candidates:
            raise ValueError(f"group {self.group_id}: no protocol common to every member")
        votes = Counter(m.vote(candidates) for m in self.members.values())
        return max(votes, key=lambda name: votes[name])

    def init_next_generation(self, now_ms: int) -> None:
        """A new generation after a join phase: CompletingRebalance, or Empty with no members."""
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.transition_to(GroupState.EMPTY, now_ms)
        self.new_member_added = False

    def is_subscribed_to_topic(self, topic: str) -> bool:
        """Whether a member's subscription names ``topic`` (OffsetDelete refuses its offsets).
        Only a ``consumer`` group's subscriptions can be read; when they cannot, every topic
        counts as subscribed, as Kafka's GroupMetadata assumes."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE or self.protocol_name is None:
            return True
        try:
            return any(
                topic in Subscription.decode(m.metadata(self.protocol_name)).topics
                for m in self.members.values()
            )
        except (KafkaError, ValueError):
            return True

    def current_member_metadata(self) -> tuple[tuple[str, str | None, bytes], ...]:
        """The members' subscriptions in the chosen protocol, for the leader's JoinGroup."""
        assert self.protocol_name is not None
        return tuple(
            (m.member_id, m.group_instance_id, m.metadata(self.protocol_name))
            for m in self.members.values()
        )

    # --- offsets ------------------------------------------------------------------------------

    def has_offsets(self) -> bool:
        """Committed or pending offsets (Kafka's hasOffsets): a group with either is not removed
        as Empty."""
        return bool(
            self.offsets
            or +self.pending_offset_commits
            or self.pending_txn_offsets
            or self.ended_txn_offsets
        )

    def has_pending_offset_commits(self, tp: tuple[str, int]) -> bool:
        """A plain commit under way or a transaction's offset not yet completed for ``tp``: an
        OffsetFetch that requires stable offsets answers UNSTABLE_OFFSET_COMMIT (KIP-447)."""
        return (
            self.pending_offset_commits[tp] > 0
            or any(tp in pending for pending in self.pending_txn_offsets.values())
            or any(key[1] == tp for key in self.ended_txn_offsets)
        )

    def has_pending_txn_offsets_from(self, producer_id: int) -> bool:
        return producer_id in self.pending_txn_offsets

    def update_offset(
        self, tp: tuple[str, int], committed: OffsetAndMetadata, position: int
    ) -> bool:
        """Cache ``committed`` unless the cached offset's record came later in the log."""
        if self.offset_positions.get(tp, -1) >= position:
            return False
        self.offsets[tp] = committed
        self.offset_positions[tp] = position
        return True

    def prepare_txn_offset_commit(
        self, producer_id: int, offsets: Iterable[tuple[tuple[str, int], OffsetAndMetadata]]
    ) -> dict[tuple[str, int], PendingOffset]:
        """Before the append: the producer's offsets (partition, offset pairs) are pending,
        each replacing the one it committed before for the partition in this transaction.
        Returns those it replaced (the append failing puts them back)."""
        pending = self.pending_txn_offsets.setdefault(producer_id, {})
        replaced: dict[tuple[str, int], PendingOffset] = {}
        for tp, committed in offsets:
            if tp in pending:
                replaced[tp] = pending[tp]
            pending[tp] = PendingOffset(committed)
        return replaced

    def on_txn_offset_commit_append(
        self, producer_id: int, tp: tuple[str, int], committed: OffsetAndMetadata, position: int
    ) -> None:
        """The append landed at ``position``: remember it (unless a newer commit of the same
        producer replaced this one meanwhile), or apply the outcome of a transaction that ended
        while it was under way."""
        pending = self.pending_txn_offsets.get(producer_id, {})
        if pending.get(tp) == PendingOffset(committed):
            pending[tp] = PendingOffset(committed, position)
            return
        ended = self.ended_txn_offsets.get((producer_id, tp))
        if ended is not None and ended[0] == committed:
            del self.ended_txn_offsets[(producer_id, tp)]
            if ended[1]:
                self.update_offset(tp, committed, position)

    def fail_pending_txn_offset_commit(
        self,
        producer_id: int,
        tp: tuple[str, int],
        committed: OffsetAndMetadata,
        replaced: PendingOffset | None,
    ) -> None:
        """The append failed: the offset was never written, so the one it replaced (if any,
        already in the log) is pending again; otherwise the partition has none."""
        ended = self.ended_txn_offsets.get((producer_id, tp))
        if ended is not None and ended[0] == committed:
            del self.ended_txn_offsets[(producer_id, tp)]
        pending = self.pending_txn_offsets.get(producer_id)
        if pending is None:
            return
        current = pending.get(tp)
        if current is not None and current == PendingOffset(committed):
            if replaced is None:
                del pending[tp]
            else:
                pending[tp] = replaced
        if not pending:
            del self.pending_txn_offsets[producer_id]

    def complete_pending_txn_offset_commit(self, producer_id: int, committed: bool) -> int:
        """The producer's transaction ended (its marker is in the log): on commit its offsets
        become the committed ones unless a plain commit written later in the log superseded
        them; on abort they go. An offset whose append is still under way was written before
        the marker: the outcome waits for the append (``ended_txn_offsets``). Returns how many
        offsets were committed."""
        pending = self.pending_txn_offsets.pop(producer_id, None)
        if pending is None:
            return 0
        done = 0
        for tp, p in pending.items():
            if p.position < 0:
                self.ended_txn_offsets[(producer_id, tp)] = (p.committed, committed)
            elif committed:
                done += self.update_offset(tp, p.committed, p.position)
        return done

    def remove_offsets(self, partitions: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
        """Forget ``partitions``: their committed offsets and any transaction's pending ones
        (Kafka's removeOffsets). Returns the partitions that had a committed offset (those need
        a tombstone)."""
        removed = []
        for tp in partitions:
            for producer_id, pending in list(self.pending_txn_offsets.items()):
                pending.pop(tp, None)
                if not pending:
                    del self.pending_txn_offsets[producer_id]
            for key in [k for k in self.ended_txn_offsets if k[1] == tp]:
                del self.ended_txn_offsets[key]
            self.offset_positions.pop(tp, None)
            if self.offsets.pop(tp, None) is not None:
                removed.append(tp)
        return removed

    # --- records ------------------------------------------------------------------------------

    def to_record(self) -> GroupMetadataValue:
        protocol = self.protocol_name
        return GroupMetadataValue(
            protocol_type=self.protocol_type or "",
            generation=self.generation_id,
            protocol=protocol,
            leader=self.leader_id,
            current_state_timestamp=self.state_timestamp_ms,
            members=tuple(
                MemberRecord(
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.rebalance_timeout_ms,
                    m.session_timeout_ms,
                    m.metadata(protocol) if protocol is not None else b"",
                    m.assignment,
                )
                for m in self.members.values()
            ),
        )

    @classmethod
    def from_record(cls, group_id: str, value: GroupMetadataValue) -> GroupMetadata:
        """A group loaded from its last record: Stable with its members, or Empty."""
        group = cls(
            group_id,
            state=GroupState.STABLE if value.members else GroupState.EMPTY,
            generation_id=value.generation,
            protocol_type=value.protocol_type or None,
            protocol_name=value.protocol,
            leader_id=value.leader,
            state_timestamp_ms=value.current_state_timestamp,
        )
        for record in value.members:
            group.members[record.member_id] = MemberMetadata(
                member_id=record.member_id,
                group_instance_id=record.group_instance_id,
                client_id=record.client_id,
                client_host=record.client_host,
                rebalance_timeout_ms=record.rebalance_timeout_ms,
                session_timeout_ms=record.session_timeout_ms,
                protocol_type=value.protocol_type,
                protocols=[(value.protocol or "", record.subscription)],
                assignment=record.assignment,
            )
        return group


_VALID_NEXT: dict[GroupState, frozenset[GroupState]] = {
    state: frozenset(n for n, previous in _VALID_PREVIOUS.items() if state in previous)
    for state in GroupState
}
