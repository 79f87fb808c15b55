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
  Only key type 0 (group) is served: transactions are not supported.
* OffsetCommit: a partition this broker's metadata does not know answers
  UNKNOWN_TOPIC_OR_PARTITION and is not stored, as Kafka's KafkaApis checks before handing the
  rest to the coordinator; the other partitions of the request are committed.
* DescribeGroups: a group's state, protocol and members; a group the coordinator does not know
  is Dead, and member metadata and assignments are shown only while the group is Stable.

Runs on the broker's event loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from minikafka.broker.group.coordinator import GROUP_METADATA_TOPIC, GroupCoordinator
from minikafka.broker.group.group_metadata import GroupState
from minikafka.broker.server.core.topic_creation import TopicCreator
from minikafka.broker.server.metadata_cache import MetadataCache
from minikafka.proto.common import OffsetAndMetadata
from minikafka.proto.errors import ErrorCode

__all__ = [
    "FoundCoordinator",
    "GroupApi",
    "GroupDescription",
    "MemberDescription",
    "offsets_partition_count",
]

GROUP_KEY_TYPE = 0


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


def offsets_partition_count(cache: MetadataCache, configured: int) -> Callable[[], int]:
    """The partition count groups hash over: ``__consumer_offsets``' own as this broker's
    metadata shows it, ``configured`` (offsets.topic.num.partitions) before the topic exists."""

    def count() -> int:
        return len(cache.partitions_of(GROUP_METADATA_TOPIC)) or configured

    return count


def _unavailable(message: str) -> FoundCoordinator:
    return FoundCoordinator(ErrorCode.COORDINATOR_NOT_AVAILABLE, message)


class GroupApi:
    """FindCoordinator and DescribeGroups, and the coordinator itself (module docstring)."""

    def __init__(
        self,
        coordinator: GroupCoordinator,
        metadata_cache: MetadataCache,
        topic_creator: TopicCreator,
    ) -> None:
        self.coordinator = coordinator
        self._cache = metadata_cache
        self._creator = topic_creator

    async def find_coordinator(
        self, key: str, key_type: int = GROUP_KEY_TYPE, *, listener: str | None = None
    ) -> FoundCoordinator:
        """``listener`` None: the broker's first endpoint."""
        if key_type != GROUP_KEY_TYPE:
            return FoundCoordinator(
                ErrorCode.INVALID_REQUEST,
                "transactions are not supported: only key_type 0 (group)",
            )
        if not key:
            return FoundCoordinator(ErrorCode.INVALID_GROUP_ID, "the group id is empty")
        partitions = self._cache.partitions_of(GROUP_METADATA_TOPIC)
        if not partitions:
            await self._creator.create(GROUP_METADATA_TOPIC)
            return _unavailable(f"{GROUP_METADATA_TOPIC} is being created")
        index = self.coordinator.partition_for(key)
        if index >= len(partitions):  # a coordinator built without offsets_partition_count
            return _unavailable(f"{GROUP_METADATA_TOPIC}-{index} does not exist")
        info = partitions[index]
        broker = self._cache.get_alive_broker(info.leader) if info.leader >= 0 else None
        if broker is None:
            return _unavailable(f"{GROUP_METADATA_TOPIC}-{index} has no leader")
        host, port = broker.host, broker.port
        if listener is not None:
            found = self._cache.get_listener_endpoint(broker.broker_id, listener)
            if found is None:  # as Kafka: never send a client to another listener's port
                return _unavailable(f"the coordinator has no {listener} listener")
            host, port = found
        return FoundCoordinator(ErrorCode.NONE, "", broker.broker_id, host, port)

    async def commit_offsets(
        self,
        group_id: str,
        member_id: str,
        generation_id: int,
        offsets: Mapping[tuple[str, int], OffsetAndMetadata],
        group_instance_id: str | None = None,
    ) -> dict[tuple[str, int], ErrorCode]:
        """Each partition's answer; offsets of partitions the metadata lacks are not stored."""
        results: dict[tuple[str, int], ErrorCode] = {}
        known: dict[tuple[str, int], OffsetAndMetadata] = {}
        for key, committed in offsets.items():
            if self._cache.contains_partition(*key):
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

    def describe_groups(self, group_ids: Iterable[str]) -> list[GroupDescription]:
        return [self._describe(group_id) for group_id in group_ids]

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
