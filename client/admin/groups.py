"""Consumer groups, each at its coordinator: list, describe, delete, their committed offsets.

    admin.list_groups()                                      # [ConsumerGroupListing(...)]
    admin.describe_groups(["g"])["g"].members                # who holds which partitions
    admin.alter_consumer_group_offsets("g", {TopicPartition("orders", 0): 42})

FindCoordinator goes to any broker and is retried while COORDINATOR_NOT_AVAILABLE (e.g. before
``__consumer_offsets`` has leaders); a request the coordinator answers NOT_COORDINATOR,
COORDINATOR_NOT_AVAILABLE or COORDINATOR_LOAD_IN_PROGRESS looks it up again
(``_to_coordinator``), with the client's one RetryPolicy.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import grpc

from minikafka.client._channel import RETRIABLE_STATUS
from minikafka.client._retry import RetryLater, retry_or_raise
from minikafka.client.admin._routing import AdminBase, _error, _rpc_error, _rpc_problem, _timed_out
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.common import Node, OffsetAndMetadata, TopicPartition
from minikafka.proto.errors import ErrorCode, KafkaError, error_for_code

R = TypeVar("R")

# Answers after which the group's coordinator is looked up again.
_COORDINATOR_MOVED = frozenset(
    {
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    }
)


@dataclass(frozen=True)
class ConsumerGroupListing:
    group_id: str
    is_simple_consumer_group: bool  # no protocol type: offsets committed by admin or assign()
    state: str  # Kafka's names: Empty, PreparingRebalance, CompletingRebalance, Stable, Dead


@dataclass(frozen=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class ConsumerGroupDescription:
    group_id: str
    is_simple_consumer_group: bool
    members: tuple[MemberDescription, ...]
    partition_assignor: str  # "" unless Stable / CompletingRebalance
    state: str
    coordinator: Node


class GroupAdmin(AdminBase):
    """Consumer groups at their coordinators (see the module docstring)."""

    def find_coordinator(self, group_id: str, *, timeout_ms: int | None = None) -> Node:
        """The broker coordinating ``group_id`` (FindCoordinator at any broker, retried while
        COORDINATOR_NOT_AVAILABLE, e.g. before ``__consumer_offsets`` has leaders)."""
        timeout_ms = self._timeout(timeout_ms)
        deadline = time.monotonic() + timeout_ms / 1000
        request = pb.FindCoordinatorRequest(key=group_id, key_type=0)

        def send(address: str, timeout_s: float) -> pb.FindCoordinatorResponse:
            stub = pb_grpc.GroupStub(self._pool.get(address))
            return stub.FindCoordinator(request, timeout=timeout_s)

        def attempt() -> Node:
            remaining_ms = max(int((deadline - time.monotonic()) * 1000), 1)
            response = self._to_any_broker("findCoordinator", send, remaining_ms)
            if response.error_code == ErrorCode.NONE:
                return Node(response.node_id, response.host, response.port)
            raise retry_or_raise(error_for_code(response.error_code, response.error_message))

        return self._retry.call(attempt, deadline=deadline)

    def list_groups(
        self, *, states: Sequence[str] = (), timeout_ms: int | None = None
    ) -> list[ConsumerGroupListing]:
        """Every group of the cluster (ListGroups at every broker: each knows its own groups),
        by group id; ``states`` filters by Kafka's state names (Stable, Empty, ...)."""
        timeout_ms = self._timeout(timeout_ms)
        deadline = time.monotonic() + timeout_ms / 1000
        request = pb.ListGroupsRequest(states_filter=list(states))
        listings: dict[str, ConsumerGroupListing] = {}
        brokers = self._describe_cluster(timeout_ms).brokers
        for node in sorted(brokers.values(), key=lambda n: n.id):

            def attempt(node: Node = node) -> pb.ListGroupsResponse:
                stub = pb_grpc.GroupStub(self._pool.get(node.address))
                remaining = max(deadline - time.monotonic(), 0.001)
                try:
                    response = stub.ListGroups(request, timeout=remaining)
                except grpc.RpcError as exc:
                    if exc.code() not in RETRIABLE_STATUS:
                        raise _rpc_error(exc) from None
                    raise RetryLater(
                        error_for_code(
                            ErrorCode.NETWORK_EXCEPTION,
                            f"broker {node.id} ({node.address}): {exc.code().name}",
                        )
                    ) from None
                if response.error_code == ErrorCode.NONE:
                    return response
                error = error_for_code(response.error_code, response.error_message)
                raise retry_or_raise(error)

            for g in self._retry.call(attempt, deadline=deadline).groups:
                listings[g.group_id] = ConsumerGroupListing(
                    g.group_id, g.protocol_type == "", g.group_state
                )
        return [listings[g] for g in sorted(listings)]

    def describe_groups(
        self, group_ids: Iterable[str], *, timeout_ms: int | None = None
    ) -> dict[str, ConsumerGroupDescription]:
        """State, assignor and members (with their assigned partitions) of each group.

        A group the coordinator does not know comes back in state ``Dead`` with no members, as
        Kafka's DescribeGroups answers; other errors (e.g. INVALID_GROUP_ID) are raised.
        """
        from minikafka.client.consumer.assignors import Assignment

        described: dict[str, ConsumerGroupDescription] = {}
        for group_id in group_ids:

            def send(
                stub: pb_grpc.GroupStub, timeout_s: float, group_id: str = group_id
            ) -> pb.DescribeGroupsResponse:
                request = pb.DescribeGroupsRequest(groups=[group_id])
                return stub.DescribeGroups(request, timeout=timeout_s)

            def code_of(response: pb.DescribeGroupsResponse) -> int:
                return response.groups[0].error_code if response.groups else ErrorCode.NONE

            response, coordinator = self._to_coordinator(
                "describeGroups", group_id, send, code_of, timeout_ms
            )
            for g in response.groups:
                error = _error(g.error_code, g.error_message)
                if error is not None:
                    raise error
                members = []
                for m in g.members:
                    try:
                        assignment = Assignment.decode(m.member_assignment)
                    except KafkaError:
                        assignment = Assignment()  # not a consumer's assignment: show none
                    members.append(
                        MemberDescription(
                            member_id=m.member_id,
                            group_instance_id=m.group_instance_id
                            if m.HasField("group_instance_id")
                            else None,
                            client_id=m.client_id,
                            host=m.client_host,
                            assignment=tuple(
                                TopicPartition(t, p) for t, p in assignment.topic_partitions()
                            ),
                        )
                    )
                described[g.group_id] = ConsumerGroupDescription(
                    group_id=g.group_id,
                    is_simple_consumer_group=g.protocol_type == "",
                    members=tuple(members),
                    partition_assignor=g.protocol_data,
                    state=g.group_state,
                    coordinator=coordinator,
                )
        return described

    def list_consumer_group_offsets(
        self,
        group_id: str,
        partitions: Iterable[TopicPartition] | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """The group's committed offsets (OffsetFetch); None = every partition it committed.

        Partitions without a committed offset are left out.
        """
        by_topic: dict[str, list[int]] = {}
        for tp in partitions or ():
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        request = pb.OffsetFetchRequest(
            group_id=group_id,
            topics=[
                pb.OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=sorted(ps))
                for t, ps in sorted(by_topic.items())
            ],
            all_topics=partitions is None,
        )

        def send(stub: pb_grpc.GroupStub, timeout_s: float) -> pb.OffsetFetchResponse:
            return stub.OffsetFetch(request, timeout=timeout_s)

        response, _ = self._to_coordinator(
            "listConsumerGroupOffsets", group_id, send, lambda r: r.error_code, timeout_ms
        )
        error = _error(response.error_code, response.error_message)
        if error is not None:
            raise error
        offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        for topic in response.topics:
            for p in topic.partitions:
                error = _error(p.error_code, p.error_message)
                if error is not None:
                    raise error
                if p.committed_offset >= 0:
                    offsets[TopicPartition(topic.name, p.partition_index)] = OffsetAndMetadata(
                        p.committed_offset,
                        p.metadata if p.HasField("metadata") else "",
                        max(p.committed_leader_epoch, -1),  # -1: unknown
                    )
        return dict(sorted(offsets.items()))

    def alter_consumer_group_offsets(
        self,
        group_id: str,
        offsets: Mapping[TopicPartition, int | OffsetAndMetadata],
        *,
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, KafkaError | None]:
        """Commit offsets for the group from outside it (generation -1, no member id), as
        Kafka's Admin does; the coordinator refuses while the group has members."""
        by_topic: dict[str, list[pb.OffsetCommitRequest.OffsetCommitRequestPartition]] = {}
        for tp, value in offsets.items():
            om = value if isinstance(value, OffsetAndMetadata) else OffsetAndMetadata(value)
            part = pb.OffsetCommitRequest.OffsetCommitRequestPartition(
                partition_index=tp.partition,
                committed_offset=om.offset,
                committed_leader_epoch=om.leader_epoch,
                committed_metadata=om.metadata,
            )
            by_topic.setdefault(tp.topic, []).append(part)
        if not by_topic:
            return {}
        request = pb.OffsetCommitRequest(
            group_id=group_id,
            generation_id=-1,
            member_id="",
            topics=[
                pb.OffsetCommitRequest.OffsetCommitRequestTopic(name=t, partitions=ps)
                for t, ps in sorted(by_topic.items())
            ],
        )

        def send(stub: pb_grpc.GroupStub, timeout_s: float) -> pb.OffsetCommitResponse:
            return stub.OffsetCommit(request, timeout=timeout_s)

        def code_of(response: pb.OffsetCommitResponse) -> int:
            # a coordinator move answers every partition with the same code
            codes = {p.error_code for t in response.topics for p in t.partitions}
            return codes.pop() if len(codes) == 1 else ErrorCode.NONE

        response, _ = self._to_coordinator(
            "alterConsumerGroupOffsets", group_id, send, code_of, timeout_ms
        )
        results: dict[TopicPartition, KafkaError | None] = {}
        for topic in response.topics:
            for p in topic.partitions:
                tp = TopicPartition(topic.name, p.partition_index)
                results[tp] = _error(p.error_code, p.error_message)
        return dict(sorted(results.items()))

    def delete_groups(
        self, group_ids: Iterable[str], *, timeout_ms: int | None = None
    ) -> dict[str, KafkaError | None]:
        """Delete groups (each at its coordinator); NON_EMPTY_GROUP while one has members,
        GROUP_ID_NOT_FOUND for a group that does not exist."""
        results: dict[str, KafkaError | None] = {}
        for group_id in group_ids:

            def send(
                stub: pb_grpc.GroupStub, timeout_s: float, group_id: str = group_id
            ) -> pb.DeleteGroupsResponse:
                request = pb.DeleteGroupsRequest(groups_names=[group_id])
                return stub.DeleteGroups(request, timeout=timeout_s)

            def code_of(response: pb.DeleteGroupsResponse) -> int:
                return response.results[0].error_code if response.results else ErrorCode.NONE

            response, _ = self._to_coordinator("deleteGroups", group_id, send, code_of, timeout_ms)
            for r in response.results:
                results[r.group_id] = _error(r.error_code, r.error_message)
        return results

    def _to_coordinator(
        self,
        what: str,
        group_id: str,
        send: Callable[[pb_grpc.GroupStub, float], R],
        code_of: Callable[[R], int],
        timeout_ms: int | None,
    ) -> tuple[R, Node]:
        """Send to the group's coordinator; look it up again while the answer says it moved
        (NOT_COORDINATOR), is not there yet or is still loading the group."""
        timeout_ms = self._timeout(timeout_ms)
        deadline = time.monotonic() + timeout_ms / 1000

        def attempt() -> tuple[R, Node]:
            remaining_ms = max(int((deadline - time.monotonic()) * 1000), 1)
            node = self.find_coordinator(group_id, timeout_ms=remaining_ms)
            stub = pb_grpc.GroupStub(self._pool.get(node.address))
            try:
                response = send(stub, max(deadline - time.monotonic(), 0.001))
            except grpc.RpcError as exc:
                raise RetryLater(f"coordinator {node.id}: {_rpc_problem(exc)}") from None
            code = code_of(response)
            if code in _COORDINATOR_MOVED:
                raise RetryLater(f"coordinator {node.id}: {ErrorCode(code).name}")
            return response, node

        return self._retry.call(attempt, deadline=deadline, timed_out=_timed_out(what, timeout_ms))
