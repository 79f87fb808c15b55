"""The Group RPC family over gRPC: FindCoordinator, JoinGroup ... DeleteGroups, adapted to the
core's GroupApi (broker/server/core/groups.py) and the GroupCoordinator it holds.

Runs on the broker's event loop (grpc.aio).
"""

from __future__ import annotations

from typing import Any, Protocol

import grpc

from minikafka.broker.group.group_metadata import MemberIdentity
from minikafka.broker.replication.requests import by_topic
from minikafka.broker.security.principal import Session
from minikafka.broker.server.core.groups import GroupApi
from minikafka.broker.server.grpc_session import grpc_session
from minikafka.broker.server.transaction_service import TransactionCore
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.common import OffsetAndMetadata, TopicPartition
from minikafka.proto.errors import ErrorCode

__all__ = ["GroupService"]

_Context = grpc.aio.ServicerContext[Any, Any]


def _client_host(context: _Context) -> str:
    peer = context.peer() or ""  # "ipv4:127.0.0.1:5000" / "ipv6:[::1]:5000"
    _, _, address = peer.partition(":")
    host = address.rpartition(":")[0].strip("[]")
    return f"/{host}" if host else ""


class _WithInstanceId(Protocol):
    group_instance_id: str

    def HasField(self, field_name: str) -> bool: ...


def _instance_id(message: _WithInstanceId) -> str | None:
    """A static member's ``group_instance_id`` (KIP-345); None when the field is unset."""
    return message.group_instance_id if message.HasField("group_instance_id") else None


class GroupService(pb_grpc.GroupServicer):
    """Consumer groups and committed offsets for gRPC clients on one listener."""

    def __init__(
        self,
        api: GroupApi,
        *,
        listener: str | None = None,
        transactions: TransactionCore | None = None,
    ) -> None:
        """``transactions``: the core's TransactionApi, for TxnOffsetCommit (UNIMPLEMENTED
        without one)."""
        self._api = api
        self._listener = listener  # coordinators are named by their endpoint on this listener
        self._transactions = transactions

    def _session(self, context: _Context) -> Session:
        return grpc_session(context, self._listener or "")

    async def FindCoordinator(
        self, request: pb.FindCoordinatorRequest, context: _Context
    ) -> pb.FindCoordinatorResponse:
        found = await self._api.find_coordinator(
            request.key, request.key_type, listener=self._listener, session=self._session(context)
        )
        return pb.FindCoordinatorResponse(
            error_code=found.error,
            error_message=found.error_message,
            node_id=found.node_id,
            host=found.host,
            port=found.port,
        )

    # --- membership ---------------------------------------------------------------------------

    async def JoinGroup(
        self, request: pb.JoinGroupRequest, context: _Context
    ) -> pb.JoinGroupResponse:
        result = await self._api.join_group(
            request.group_id,
            request.member_id,
            client_id=request.client_id,
            client_host=_client_host(context),
            session_timeout_ms=request.session_timeout_ms,
            rebalance_timeout_ms=request.rebalance_timeout_ms,
            protocol_type=request.protocol_type,
            protocols=[(p.name, p.metadata) for p in request.protocols],
            group_instance_id=_instance_id(request),
            session=self._session(context),
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
        result = await self._api.sync_group(
            request.group_id,
            request.generation_id,
            request.member_id,
            {a.member_id: a.assignment for a in request.assignments},
            protocol_type=request.protocol_type,
            protocol_name=request.protocol_name,
            group_instance_id=_instance_id(request),
            session=self._session(context),
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
        code = self._api.heartbeat(
            request.group_id,
            request.member_id,
            request.generation_id,
            _instance_id(request),
            session=self._session(context),
        )
        return pb.HeartbeatResponse(error_code=code)

    async def LeaveGroup(
        self, request: pb.LeaveGroupRequest, context: _Context
    ) -> pb.LeaveGroupResponse:
        code, results = self._api.leave_group(
            request.group_id,
            [MemberIdentity(m.member_id, _instance_id(m)) for m in request.members],
            session=self._session(context),
        )
        response = pb.LeaveGroupResponse(error_code=code)
        for leaving, (_, member_code) in zip(request.members, results, strict=False):
            answer = response.members.add(member_id=leaving.member_id, error_code=member_code)
            if leaving.HasField("group_instance_id"):
                answer.group_instance_id = leaving.group_instance_id
        return response

    # --- offsets ------------------------------------------------------------------------------

    async def OffsetCommit(
        self, request: pb.OffsetCommitRequest, context: _Context
    ) -> pb.OffsetCommitResponse:
        offsets = {
            (topic.name, p.partition_index): OffsetAndMetadata(
                p.committed_offset,
                p.committed_metadata if p.HasField("committed_metadata") else "",
                leader_epoch=p.committed_leader_epoch,
            )
            for topic in request.topics
            for p in topic.partitions
        }
        results = await self._api.commit_offsets(
            request.group_id,
            request.member_id,
            request.generation_id,
            offsets,
            _instance_id(request),
            session=self._session(context),
        )
        response = pb.OffsetCommitResponse()
        for name, tps in by_topic(map(TopicPartition._make, results)).items():
            entry = response.topics.add(name=name)
            for tp in tps:
                entry.partitions.add(partition_index=tp.partition, error_code=results[tp])
        return response

    async def OffsetFetch(
        self, request: pb.OffsetFetchRequest, context: _Context
    ) -> pb.OffsetFetchResponse:
        wanted = (
            None
            if request.all_topics
            else [(t.name, p) for t in request.topics for p in t.partition_indexes]
        )
        code, offsets, refused = self._api.fetch_offsets(
            request.group_id, wanted, session=self._session(context)
        )
        response = pb.OffsetFetchResponse(error_code=code)
        if code != ErrorCode.NONE:
            return response
        for name, tps in by_topic(map(TopicPartition._make, sorted(offsets))).items():
            entry = response.topics.add(name=name)
            for tp in tps:
                result = entry.partitions.add(
                    partition_index=tp.partition,
                    committed_offset=-1,
                    committed_leader_epoch=-1,
                    error_code=refused.get(tp, ErrorCode.NONE),
                )
                committed = offsets[tp]
                if committed is not None:
                    result.committed_offset = committed.offset
                    result.committed_leader_epoch = committed.leader_epoch
                    result.metadata = committed.metadata
                else:
                    result.metadata = ""
        return response

    async def TxnOffsetCommit(
        self, request: pb.TxnOffsetCommitRequest, context: _Context
    ) -> pb.TxnOffsetCommitResponse:
        if self._transactions is None:
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, "transactions are not served")
        assert self._transactions is not None
        offsets = {
            TopicPartition(topic.name, p.partition_index): OffsetAndMetadata(
                p.committed_offset,
                p.committed_metadata if p.HasField("committed_metadata") else "",
                leader_epoch=p.committed_leader_epoch,
            )
            for topic in request.topics
            for p in topic.partitions
        }
        results = await self._transactions.txn_offset_commit(
            request.transactional_id,
            request.group_id,
            request.producer_id,
            request.producer_epoch,
            offsets,
            member_id=request.member_id,
            generation_id=request.generation_id,
            group_instance_id=_instance_id(request),
            session=self._session(context),
        )
        response = pb.TxnOffsetCommitResponse()
        for name, tps in by_topic(results).items():
            entry = response.topics.add(name=name)
            for tp in tps:
                entry.partitions.add(partition_index=tp.partition, error_code=results[tp])
        return response

    # --- admin --------------------------------------------------------------------------------

    async def ListGroups(
        self, request: pb.ListGroupsRequest, context: _Context
    ) -> pb.ListGroupsResponse:
        code, groups = self._api.list_groups(request.states_filter, session=self._session(context))
        response = pb.ListGroupsResponse(error_code=code)
        for group_id, protocol_type, state in groups:
            response.groups.add(group_id=group_id, protocol_type=protocol_type, group_state=state)
        return response

    async def DescribeGroups(
        self, request: pb.DescribeGroupsRequest, context: _Context
    ) -> pb.DescribeGroupsResponse:
        response = pb.DescribeGroupsResponse()
        for group in self._api.describe_groups(request.groups, session=self._session(context)):
            described = response.groups.add(
                error_code=group.error,
                group_id=group.group_id,
                group_state=group.state,
                protocol_type=group.protocol_type,
                protocol_data=group.protocol_data,
            )
            for member in group.members:
                entry = described.members.add(
                    member_id=member.member_id,
                    client_id=member.client_id,
                    client_host=member.client_host,
                    member_metadata=member.metadata,
                    member_assignment=member.assignment,
                )
                if member.group_instance_id is not None:
                    entry.group_instance_id = member.group_instance_id
        return response

    async def DeleteGroups(
        self, request: pb.DeleteGroupsRequest, context: _Context
    ) -> pb.DeleteGroupsResponse:
        results = await self._api.delete_groups(
            request.groups_names, session=self._session(context)
        )
        response = pb.DeleteGroupsResponse()
        for group_id, code in results.items():
            response.results.add(group_id=group_id, error_code=code)
        return response
