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

This module holds state and answers questions about it; the timers and the responses live in
``coordinator.py``. Not thread-safe: the broker's event loop owns every group.
"""

from __future__ import annotations

import asyncio
from collections import Counter
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
