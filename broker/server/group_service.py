"""The Group RPC family: FindCoordinator, JoinGroup ... DeleteGroups, on the GroupCoordinator.

FindCoordinator creates ``__consumer_offsets`` on first use, as Kafka's broker does in
ZooKeeper mode (AdminZkClient): ``offsets.topic.num.partitions`` partitions,
``offsets.topic.replication.factor`` replicas capped by the live brokers, placed by the usual
assignment rule, with ``cleanup.policy=compact``; the controller sees the new znode and elects
leaders. Until a leader is known it answers COORDINATOR_NOT_AVAILABLE. The coordinator of a
group is the leader of partition ``abs(java_hash(group)) % partitions``.

Runs on the broker's event loop (grpc.aio); ZooKeeper calls go to the executor.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

import grpc
import structlog

from minikafka.broker.config import BrokerConfig
from minikafka.broker.group.coordinator import GROUP_METADATA_TOPIC, GroupCoordinator, partition_for
from minikafka.broker.group.group_metadata import GroupState
from minikafka.broker.server.metadata_cache import MetadataCache
from minikafka.controller.errors import TopicAlreadyExistsError
from minikafka.controller.topics import assign_replicas
from minikafka.controller.zk_data import TopicAssignment, Versioned, random_uuid_base64
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.consumer_offsets import OffsetAndMetadata
from minikafka.proto.errors import ErrorCode

__all__ = ["GroupService", "OffsetsTopicStore"]

_Context = grpc.aio.ServicerContext[Any, Any]

_log = structlog.get_logger(__name__)

# Kafka's fixed configs of the offsets topic (GroupMetadataManager.offsetsTopicConfigs).
OFFSETS_TOPIC_CONFIGS = {
    "cleanup.policy": "compact",
    "compression.type": "producer",
    "segment.bytes": "104857600",
}


class OffsetsTopicStore(Protocol):
    """The ZooKeeper calls FindCoordinator makes (ZkStore satisfies it)."""

    def get_topic(self, topic: str) -> Versioned[TopicAssignment] | None: ...

    def get_live_broker_ids(self) -> list[int]: ...

    def create_topic(
        self, assignment: TopicAssignment, config: dict[str, str] | None = None
    ) -> None: ...


def _client_host(context: _Context) -> str:
    peer = context.peer() or ""  # "ipv4:127.0.0.1:5000" / "ipv6:[::1]:5000"
    _, _, address = peer.partition(":")
    host = address.rpartition(":")[0].strip("[]")
    return f"/{host}" if host else ""


class GroupService(pb_grpc.GroupServicer):
    """Consumer groups and committed offsets."""

    def __init__(
        self,
        config: BrokerConfig,
        coordinator: GroupCoordinator,
        metadata_cache: MetadataCache,
        zk: OffsetsTopicStore,
        *,
        listener: str | None = None,
    ) -> None:
        self._listener = listener  # coordinators are named by their endpoint on this listener
        self._config = config
        self._coordinator = coordinator
        self._cache = metadata_cache
        self._zk = zk
        self._creating: asyncio.Task[None] | None = None

    # --- FindCoordinator ----------------------------------------------------------------------

    async def FindCoordinator(
        self, request: pb.FindCoordinatorRequest, context: _Context
    ) -> pb.FindCoordinatorResponse:
        def unavailable(message: str) -> pb.FindCoordinatorResponse:
            return pb.FindCoordinatorResponse(
                error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE,
                error_message=message,
                node_id=-1,
                port=-1,
            )

        if request.key_type != 0:
            return pb.FindCoordinatorResponse(
                error_code=ErrorCode.INVALID_REQUEST,
                error_message="transactions are not supported: only key_type 0 (group)",
                node_id=-1,
                port=-1,
            )
        if not request.key:
            return pb.FindCoordinatorResponse(
                error_code=ErrorCode.INVALID_GROUP_ID,
                error_message="the group id is empty",
                node_id=-1,
                port=-1,
            )
        partitions = self._cache.partitions_of(GROUP_METADATA_TOPIC)
        if not partitions:
            await self._ensure_offsets_topic()
            return unavailable(f"{GROUP_METADATA_TOPIC} is being created")
        index = partition_for(request.key, len(partitions))
        info = partitions[index]
        broker = self._cache.get_alive_broker(info.leader) if info.leader >= 0 else None
        if broker is None:
            return unavailable(f"{GROUP_METADATA_TOPIC}-{index} has no leader")
        host, port = broker.host, broker.port
        if self._listener is not None:
            found = self._cache.get_listener_endpoint(broker.broker_id, self._listener)
            if found is None:  # as Kafka: never send a client to another listener's port
                return unavailable(f"the coordinator has no {self._listener} listener")
            host, port = found
        return pb.FindCoordinatorResponse(
            error_code=ErrorCode.NONE, node_id=broker.broker_id, host=host, port=port
        )

    async def _ensure_offsets_topic(self) -> None:
        if self._creating is None or self._creating.done():
            self._creating = asyncio.get_running_loop().create_task(self._create_offsets_topic())
        try:
            await asyncio.shield(self._creating)
        except Exception as exc:  # the client retries FindCoordinator; so do we, then
            _log.warning("offsets_topic.create_failed", error=str(exc))

    async def _create_offsets_topic(self) -> None:
        def create() -> None:
            if self._zk.get_topic(GROUP_METADATA_TOPIC) is not None:
                return
            live = self._zk.get_live_broker_ids()
            if not live:
                raise RuntimeError("no live brokers")
            replication = min(self._config.offsets_topic_replication_factor, len(live))
            partitions = self._config.offsets_topic_num_partitions
            assignment = assign_replicas(partitions, replication, live)
            try:
                self._zk.create_topic(
                    TopicAssignment(GROUP_METADATA_TOPIC, random_uuid_base64(), assignment),
                    dict(OFFSETS_TOPIC_CONFIGS),
                )
            except TopicAlreadyExistsError:
                return
            _log.info(
                "offsets_topic.created",
                topic=GROUP_METADATA_TOPIC,
                partitions=partitions,
                replication_factor=replication,
            )

        await asyncio.to_thread(create)

    # --- membership ---------------------------------------------------------------------------

    async def JoinGroup(
        self, request: pb.JoinGroupRequest, context: _Context
    ) -> pb.JoinGroupResponse:
        result = await self._coordinator.join_group(
            request.group_id,
            request.member_id,
            client_id=request.client_id,
            client_host=_client_host(context),
            session_timeout_ms=request.session_timeout_ms,
            rebalance_timeout_ms=request.rebalance_timeout_ms,
            protocol_type=request.protocol_type,
            protocols=[(p.name, p.metadata) for p in request.protocols],
            group_instance_id=(
                request.group_instance_id if request.HasField("group_instance_id") else None
            ),
        )
        response = pb.JoinGroupResponse(
            error_code=result.error,
            generation_id=result.generation_id,
            protocol_type=result.protocol_type,
            protocol_name=result.protocol_name,
            leader=result.leader,
            member_id=result.member_id,
        )
        for member_id, instance_id, metadata in result.members:
            member = response.members.add(member_id=member_id, metadata=metadata)
            if instance_id is not None:
                member.group_instance_id = instance_id
        return response

    async def SyncGroup(
        self, request: pb.SyncGroupRequest, context: _Context
    ) -> pb.SyncGroupResponse:
        result = await self._coordinator.sync_group(
            request.group_id,
            request.generation_id,
            request.member_id,
            {a.member_id: a.assignment for a in request.assignments},
            protocol_type=request.protocol_type,
            protocol_name=request.protocol_name,
        )
        return pb.SyncGroupResponse(
            error_code=result.error,
            protocol_type=result.protocol_type,
            protocol_name=result.protocol_name,
            assignment=result.assignment,
        )

    async def Heartbeat(
        self, request: pb.HeartbeatRequest, context: _Context
    ) -> pb.HeartbeatResponse:
        code = self._coordinator.heartbeat(
            request.group_id, request.member_id, request.generation_id
        )
        return pb.HeartbeatResponse(error_code=code)

    async def LeaveGroup(
        self, request: pb.LeaveGroupRequest, context: _Context
    ) -> pb.LeaveGroupResponse:
        code, results = self._coordinator.leave_group(
            request.group_id, [m.member_id for m in request.members]
        )
        response = pb.LeaveGroupResponse(error_code=code)
        for member_id, member_code in results:
            response.members.add(member_id=member_id, error_code=member_code)
        return response

    # --- offsets ------------------------------------------------------------------------------

    async def OffsetCommit(
        self, request: pb.OffsetCommitRequest, context: _Context
    ) -> pb.OffsetCommitResponse:
        offsets = {
            (topic.name, p.partition_index): OffsetAndMetadata(
                p.committed_offset,
                p.committed_leader_epoch,
                p.committed_metadata if p.HasField("committed_metadata") else "",
            )
            for topic in request.topics
            for p in topic.partitions
        }
        results = await self._coordinator.commit_offsets(
            request.group_id, request.member_id, request.generation_id, offsets
        )
        response = pb.OffsetCommitResponse()
        by_topic: dict[str, pb.OffsetCommitResponse.OffsetCommitResponseTopic] = {}
        for (topic, partition), code in results.items():
            entry = by_topic.get(topic)
            if entry is None:
                entry = by_topic[topic] = response.topics.add(name=topic)
            entry.partitions.add(partition_index=partition, error_code=code)
        return response

    async def OffsetFetch(
        self, request: pb.OffsetFetchRequest, context: _Context
    ) -> pb.OffsetFetchResponse:
        wanted = (
            None
            if request.all_topics
            else [(t.name, p) for t in request.topics for p in t.partition_indexes]
        )
        code, offsets = self._coordinator.fetch_offsets(request.group_id, wanted)
        response = pb.OffsetFetchResponse(error_code=code)
        if code != ErrorCode.NONE:
            return response
        by_topic: dict[str, pb.OffsetFetchResponse.OffsetFetchResponseTopic] = {}
        for (topic, partition), committed in sorted(offsets.items()):
            entry = by_topic.get(topic)
            if entry is None:
                entry = by_topic[topic] = response.topics.add(name=topic)
            result = entry.partitions.add(
                partition_index=partition, committed_offset=-1, committed_leader_epoch=-1
            )
            if committed is not None:
                result.committed_offset = committed.offset
                result.committed_leader_epoch = committed.leader_epoch
                result.metadata = committed.metadata
            else:
                result.metadata = ""
        return response

    # --- admin --------------------------------------------------------------------------------

    async def ListGroups(
        self, request: pb.ListGroupsRequest, context: _Context
    ) -> pb.ListGroupsResponse:
        code, groups = self._coordinator.list_groups(request.states_filter)
        response = pb.ListGroupsResponse(error_code=code)
        for group_id, protocol_type, state in groups:
            response.groups.add(group_id=group_id, protocol_type=protocol_type, group_state=state)
        return response

    async def DescribeGroups(
        self, request: pb.DescribeGroupsRequest, context: _Context
    ) -> pb.DescribeGroupsResponse:
        response = pb.DescribeGroupsResponse()
        for group_id in request.groups:
            code, group = self._coordinator.describe_group(group_id)
            described = response.groups.add(error_code=code, group_id=group_id)
            if code != ErrorCode.NONE:
                continue
            if group is None:
                described.group_state = GroupState.DEAD.value
                continue
            described.group_state = group.state.value
            described.protocol_type = group.protocol_type or ""
            stable = group.is_(GroupState.STABLE)
            described.protocol_data = (group.protocol_name or "") if stable else ""
            for member in group.members.values():
                entry = described.members.add(
                    member_id=member.member_id,
                    client_id=member.client_id,
                    client_host=member.client_host,
                )
                if member.group_instance_id is not None:
                    entry.group_instance_id = member.group_instance_id
                if stable and group.protocol_name is not None:
                    entry.member_metadata = member.metadata(group.protocol_name)
                    entry.member_assignment = member.assignment
        return response

    async def DeleteGroups(
        self, request: pb.DeleteGroupsRequest, context: _Context
    ) -> pb.DeleteGroupsResponse:
        results = await self._coordinator.delete_groups(request.groups_names)
        response = pb.DeleteGroupsResponse()
        for group_id, code in results.items():
            response.results.add(group_id=group_id, error_code=code)
        return response
