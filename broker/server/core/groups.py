"""Consumer groups on plain values: what both front doors call besides the GroupCoordinator.

The GroupCoordinator (broker/group/coordinator.py) already takes and returns plain values for
JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetFetch, ListGroups and DeleteGroups; the
front doors call it directly (``GroupApi.coordinator``). Three requests need more than the
coordinator knows, and live here:

* FindCoordinator: the coordinator of a group is the leader of partition
  ``abs(java_hash(group)) % partitions`` of ``__consumer_offsets``, named by its endpoint on the
  listener the client came in on. ``partitions`` is the coordinator's own count
  (``GroupCoordinator.partition_for``), which the broker builds with
  ``offsets_partition_count``: the topic's partition count as it exists, else
  ``offsets.topic.num.partitions`` (Kafka's GroupMetadataManager reads the count from
  ZooKeeper the same way), so FindCoordinator and JoinGroup never disagree. The first
  FindCoordinator creates the topic, as Kafka's broker does in ZooKeeper mode
  (core/topic_creation.py); until a leader is known the answer is COORDINATOR_NOT_AVAILABLE.
  Key type 1 (a transactional id) is core/transactions.py's, the same way over
  ``__transaction_state``.
* OffsetCommit: a partition this broker's metadata does not know answers
  UNKNOWN_TOPIC_OR_PARTITION and is not stored, as Kafka's KafkaApis checks before handing the
  rest to the coordinator; the other partitions of the request are committed.
* DescribeGroups: a group's state, protocol and members; a group the coordinator does not know
  is Dead, and member metadata and assignments are shown only while the group is Stable.

Every group API of both doors comes through here, so each asks the authorizer first
(core/authorization.py's table): a group the principal may not use is
GROUP_AUTHORIZATION_FAILED and the coordinator never sees the request (nobody joins, nothing
is committed or deleted); OffsetCommit and OffsetDelete then need Read on each topic and
OffsetFetch Describe (TOPIC_AUTHORIZATION_FAILED per partition; an all-partitions OffsetFetch
leaves those topics out); ListGroups lists every group to a principal with Describe on the
cluster, else only the groups it may Describe.

Runs on the broker's event loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from minikafka.broker.group.coordinator import GROUP_METADATA_TOPIC, GroupCoordinator
from minikafka.broker.group.group_metadata import (
    GroupState,
    JoinResult,
    MemberIdentity,
    SyncResult,
)
from minikafka.broker.security.acl import ResourceType
from minikafka.broker.security.principal import ANONYMOUS, Session
from minikafka.broker.server.core.authorization import (
    AUTHORIZED_OPERATIONS_OMITTED,
    AuthHelper,
)
from minikafka.broker.server.core.topic_creation import TopicCreator
from minikafka.broker.server.metadata_cache import MetadataCache
from minikafka.proto.common import OffsetAndMetadata
from minikafka.proto.errors import ErrorCode

__all__ = [
    "FoundCoordinator",
    "GroupApi",
    "GroupDescription",
    "MemberDescription",
    "find_partition_leader",
    "offsets_partition_count",
]

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1

_NO_SESSION = Session(ANONYMOUS, "")
_GROUP = ResourceType.GROUP
_TOPIC = ResourceType.TOPIC


@dataclass(frozen=True)
class FoundCoordinator:
    error: ErrorCode
    error_message: str = ""
    node_id: int = -1
    host: str = ""
    port: int = -1


@dataclass(frozen=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes = b""  # of the group's chosen protocol; only while Stable
    assignment: bytes = b""  # only while Stable


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    error: ErrorCode
    state: str = ""
    protocol_type: str = ""
    protocol_data: str = ""  # the chosen protocol's name while Stable, else ""
    members: tuple[MemberDescription, ...] = ()
    authorized_operations: int = AUTHORIZED_OPERATIONS_OMITTED  # a bit set, when asked for


def offsets_partition_count(cache: MetadataCache, configured: int) -> Callable[[], int]:
    """The partition count groups hash over: ``__consumer_offsets``' own as this broker's
    metadata shows it, ``configured`` (offsets.topic.num.partitions) before the topic exists."""

    def count() -> int:
        return len(cache.partitions_of(GROUP_METADATA_TOPIC)) or configured

    return count


def _unavailable(message: str) -> FoundCoordinator:
    return FoundCoordinator(ErrorCode.COORDINATOR_NOT_AVAILABLE, message)


class TransactionCoordinatorFinder(Protocol):
    """FindCoordinator of key type 1 (core/transactions.py's TransactionApi)."""

    async def find_coordinator(
        self, transactional_id: str, *, listener: str | None = None, session: Session = ...
    ) -> FoundCoordinator: ...


async def find_partition_leader(
    cache: MetadataCache,
    creator: TopicCreator,
    topic: str,
    index: int,
    listener: str | None,
) -> FoundCoordinator:
    """The coordinator that partition ``index`` of the internal ``topic`` makes its leader,
    named by its endpoint on ``listener`` (None: its first); the topic is created on first
    use, and COORDINATOR_NOT_AVAILABLE answers until a leader is known."""
    partitions = cache.partitions_of(topic)
    if not partitions:
        await creator.create(topic)
        return _unavailable(f"{topic} is being created")
    if index >= len(partitions):  # a coordinator built without the topic's partition count
        return _unavailable(f"{topic}-{index} does not exist")
    info = partitions[index]
    broker = cache.get_alive_broker(info.leader) if info.leader >= 0 else None
    if broker is None:
        return _unavailable(f"{topic}-{index} has no leader")
    host, port = broker.host, broker.port
    if listener is not None:
        found = cache.get_listener_endpoint(broker.broker_id, listener)
        if found is None:  # as Kafka: never send a client to another listener's port
            return _unavailable(f"the coordinator has no {listener} listener")
        host, port = found
    return FoundCoordinator(ErrorCode.NONE, "", broker.broker_id, host, port)


class GroupApi:
    """FindCoordinator and DescribeGroups, and the coordinator itself (module docstring)."""

    def __init__(
        self,
        coordinator: GroupCoordinator,
        metadata_cache: MetadataCache,
        topic_creator: TopicCreator,
        auth: AuthHelper | None = None,
    ) -> None:
        self.coordinator = coordinator
        self._cache = metadata_cache
        self._creator = topic_creator
        self._auth = auth or AuthHelper()
        # Key type 1: the broker sets it once its transaction coordinator exists.
        self.transactions: TransactionCoordinatorFinder | None = None

    def _may(self, session: Session, api: str, group_id: str) -> bool:
        return self._auth.allows(session, api, _GROUP, group_id)

    async def find_coordinator(
        self,
        key: str,
        key_type: int = GROUP_KEY_TYPE,
        *,
        listener: str | None = None,
        session: Session = _NO_SESSION,
    ) -> FoundCoordinator:
        """``listener`` None: the broker's first endpoint."""
        if key_type == TRANSACTION_KEY_TYPE and not self._auth.allows(
            session, "FindCoordinator", ResourceType.TRANSACTIONAL_ID, key
        ):
            return FoundCoordinator(
                ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                "Transactional Id authorization failed.",
            )
        if key_type == GROUP_KEY_TYPE and not self._may(session, "FindCoordinator", key):
            return FoundCoordinator(
                ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed."
            )
        if key_type == TRANSACTION_KEY_TYPE and self.transactions is not None:
            return await self.transactions.find_coordinator(key, listener=listener, session=session)
        if key_type != GROUP_KEY_TYPE:
            return FoundCoordinator(
                ErrorCode.INVALID_REQUEST,
                f"key_type {key_type} names no coordinator of this broker",
            )
        if not key:
            return FoundCoordinator(ErrorCode.INVALID_GROUP_ID, "the group id is empty")
        return await find_partition_leader(
            self._cache,
            self._creator,
            GROUP_METADATA_TOPIC,
            self.coordinator.partition_for(key),
            listener,
        )

    # --- membership ---------------------------------------------------------------------------

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
        session: Session = _NO_SESSION,
    ) -> JoinResult:
        if not self._may(session, "JoinGroup", group_id):
            return JoinResult(ErrorCode.GROUP_AUTHORIZATION_FAILED, member_id)
        return await self.coordinator.join_group(
            group_id,
            member_id,
            client_id=client_id,
            client_host=client_host,
            session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout_ms,
            protocol_type=protocol_type,
            protocols=protocols,
            group_instance_id=group_instance_id,
        )

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
        session: Session = _NO_SESSION,
    ) -> SyncResult:
        if not self._may(session, "SyncGroup", group_id):
            return SyncResult(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        return await self.coordinator.sync_group(
            group_id,
            generation_id,
            member_id,
            assignments,
            protocol_type=protocol_type,
            protocol_name=protocol_name,
            group_instance_id=group_instance_id,
        )

    def heartbeat(
        self,
        group_id: str,
        member_id: str,
        generation_id: int,
        group_instance_id: str | None = None,
        *,
        session: Session = _NO_SESSION,
    ) -> ErrorCode:
        if not self._may(session, "Heartbeat", group_id):
            return ErrorCode.GROUP_AUTHORIZATION_FAILED
        return self.coordinator.heartbeat(group_id, member_id, generation_id, group_instance_id)

    def leave_group(
        self,
        group_id: str,
        members: Sequence[MemberIdentity],
        *,
        session: Session = _NO_SESSION,
    ) -> tuple[ErrorCode, list[tuple[str, ErrorCode]]]:
        if not self._may(session, "LeaveGroup", group_id):
            return ErrorCode.GROUP_AUTHORIZATION_FAILED, []
        return self.coordinator.leave_group(group_id, members)

    # --- offsets ------------------------------------------------------------------------------

    async def commit_offsets(
        self,
        group_id: str,
        member_id: str,
        generation_id: int,
        offsets: Mapping[tuple[str, int], OffsetAndMetadata],
        group_instance_id: str | None = None,
        *,
        session: Session = _NO_SESSION,
    ) -> dict[tuple[str, int], ErrorCode]:
        """Each partition's answer; offsets of partitions the metadata lacks, or of topics the
        principal may not Read, are not stored."""
        if not self._may(session, "OffsetCommit", group_id):
            return dict.fromkeys(offsets, ErrorCode.GROUP_AUTHORIZATION_FAILED)
        readable = self._auth.allowed_names(
            session, "OffsetCommit", _TOPIC, (topic for topic, _ in offsets)
        )
        results: dict[tuple[str, int], ErrorCode] = {}
        known: dict[tuple[str, int], OffsetAndMetadata] = {}
        for key, committed in offsets.items():
            if key[0] not in readable:
                results[key] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif self._cache.contains_partition(*key):
                known[key] = committed
            else:
                results[key] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if known:
            results.update(
                await self.coordinator.commit_offsets(
                    group_id, member_id, generation_id, known, group_instance_id
                )
            )
        return results

    def fetch_offsets(
        self,
        group_id: str,
        partitions: Iterable[tuple[str, int]] | None,
        *,
        session: Session = _NO_SESSION,
        require_stable: bool = False,
    ) -> tuple[
        ErrorCode,
        dict[tuple[str, int], OffsetAndMetadata | None],
        dict[tuple[str, int], ErrorCode],
    ]:
        """(group error, committed offsets, each refused partition's error): the partitions
        named of topics the principal may not Describe are TOPIC_AUTHORIZATION_FAILED (and
        None among the offsets, in place); with ``partitions`` None such topics are left
        out. With ``require_stable`` (KIP-447) a partition whose offset a transaction may
        still commit is UNSTABLE_OFFSET_COMMIT."""
        if not self._may(session, "OffsetFetch", group_id):
            return ErrorCode.GROUP_AUTHORIZATION_FAILED, {}, {}
        wanted = None if partitions is None else list(partitions)
        code, offsets, unstable = self.coordinator.fetch_offsets(
            group_id, wanted, require_stable=require_stable
        )
        if code != ErrorCode.NONE or not self._auth.enabled:
            return code, offsets, dict(unstable)
        describable = self._auth.allowed_names(
            session,
            "OffsetFetch",
            _TOPIC,
            (topic for topic, _ in offsets),
            log_if_denied=wanted is not None,
        )
        if wanted is None:
            return code, {k: v for k, v in offsets.items() if k[0] in describable}, {}
        errors = {
            key: ErrorCode.TOPIC_AUTHORIZATION_FAILED
            for key in offsets
            if key[0] not in describable
        }
        errors.update({k: v for k, v in unstable.items() if k not in errors})
        return code, {k: (None if k in errors else v) for k, v in offsets.items()}, errors

    async def delete_offsets(
        self,
        group_id: str,
        partitions: Iterable[tuple[str, int]],
        *,
        session: Session = _NO_SESSION,
    ) -> tuple[ErrorCode, dict[tuple[str, int], ErrorCode]]:
        """OffsetDelete: Delete on the group, then Read on each topic; a partition of a topic
        this broker does not know is UNKNOWN_TOPIC_OR_PARTITION, as Kafka's KafkaApis."""
        if not self._may(session, "OffsetDelete", group_id):
            return ErrorCode.GROUP_AUTHORIZATION_FAILED, {}
        wanted = list(dict.fromkeys(partitions))
        readable = self._auth.allowed_names(
            session, "OffsetDelete", _TOPIC, (topic for topic, _ in wanted)
        )
        refused: dict[tuple[str, int], ErrorCode] = {}
        for key in wanted:
            if key[0] not in readable:
                refused[key] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif not self._cache.contains_partition(*key):
                refused[key] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        code, results = await self.coordinator.delete_offsets(
            group_id, [key for key in wanted if key not in refused]
        )
        if code != ErrorCode.NONE:
            return code, {}
        return code, {key: refused.get(key) or results[key] for key in wanted}

    # --- admin --------------------------------------------------------------------------------

    def list_groups(
        self, states: Iterable[str] = (), *, session: Session = _NO_SESSION
    ) -> tuple[ErrorCode, list[tuple[str, str, str]]]:
        code, groups = self.coordinator.list_groups(states)
        auth = self._auth
        if code != ErrorCode.NONE or auth.allows(
            session, "ListGroups", ResourceType.CLUSTER, log_if_denied=False
        ):
            return code, groups
        describable = auth.allowed_names(
            session, "ListGroups", _GROUP, (g[0] for g in groups), log_if_denied=False
        )
        return code, [g for g in groups if g[0] in describable]

    async def delete_groups(
        self, group_ids: Iterable[str], *, session: Session = _NO_SESSION
    ) -> dict[str, ErrorCode]:
        ids = list(dict.fromkeys(group_ids))
        deletable = self._auth.allowed_names(session, "DeleteGroups", _GROUP, ids)
        deleted = await self.coordinator.delete_groups([g for g in ids if g in deletable])
        return {g: deleted.get(g, ErrorCode.GROUP_AUTHORIZATION_FAILED) for g in ids}

    def describe_groups(
        self,
        group_ids: Iterable[str],
        *,
        session: Session = _NO_SESSION,
        include_authorized_operations: bool = False,
    ) -> list[GroupDescription]:
        ids = list(group_ids)
        auth = self._auth
        describable = auth.allowed_names(session, "DescribeGroups", _GROUP, ids)
        answers = []
        for group_id in ids:
            if group_id not in describable:
                answers.append(GroupDescription(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED))
                continue
            described = self._describe(group_id)
            if include_authorized_operations and described.error == ErrorCode.NONE:
                described = replace(
                    described,
                    authorized_operations=auth.authorized_operations(session, _GROUP, group_id),
                )
            answers.append(described)
        return answers

    def _describe(self, group_id: str) -> GroupDescription:
        code, group = self.coordinator.describe_group(group_id)
        if code != ErrorCode.NONE:
            return GroupDescription(group_id, code)
        if group is None:
            return GroupDescription(group_id, code, GroupState.DEAD.value)
        stable = group.is_(GroupState.STABLE) and group.protocol_name is not None
        members = tuple(
            MemberDescription(
                member.member_id,
                member.group_instance_id,
                member.client_id,
                member.client_host,
                member.metadata(group.protocol_name) if stable and group.protocol_name else b"",
                member.assignment if stable else b"",
            )
            for member in group.members.values()
        )
        return GroupDescription(
            group_id,
            code,
            group.state.value,
            group.protocol_type or "",
            (group.protocol_name or "") if group.is_(GroupState.STABLE) else "",
            members,
        )
