"""Partition reassignment (KIP-455), sent to the controller: move partitions to other replicas,
cancel moves, list the moves under way.

    errors = admin.alter_partition_reassignments({TopicPartition("orders", 0): [1, 2, 3]})
    admin.list_partition_reassignments()   # {tp: PartitionReassignment((1, 2, 3, 0), (3,), (0,))}
    admin.alter_partition_reassignments({TopicPartition("orders", 0): None})    # cancel

Per-partition outcomes come back as ``{tp: None | KafkaError}`` (INVALID_REPLICA_ASSIGNMENT,
UNKNOWN_TOPIC_OR_PARTITION, NO_REASSIGNMENT_IN_PROGRESS, ...); a whole-request error raises.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from minikafka.client.admin._routing import AdminBase, _error, _NotController
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode, KafkaError

__all__ = ["PartitionReassignment", "ReassignmentAdmin"]


@dataclass(frozen=True)
class PartitionReassignment:
    """A partition being moved: every replica it has now (the target ones first), those being
    added and those being removed (Kafka's PartitionReassignment)."""

    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]

    @property
    def target_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.removing_replicas)


class ReassignmentAdmin(AdminBase):
    """AlterPartitionReassignments and ListPartitionReassignments, at the controller."""

    def alter_partition_reassignments(
        self,
        reassignments: Mapping[TopicPartition, Sequence[int] | None],
        *,
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, KafkaError | None]:
        """Target replicas per partition (the first the preferred leader), None to cancel
        that partition's reassignment. Answers once the controller started (or refused)
        each: the moves themselves go on (``list_partition_reassignments``)."""
        timeout_ms = self._timeout(timeout_ms)
        by_topic: dict[str, list[pb.AlterPartitionReassignmentsRequest.ReassignablePartition]] = {}
        for tp, replicas in sorted(reassignments.items()):
            by_topic.setdefault(tp.topic, []).append(
                pb.AlterPartitionReassignmentsRequest.ReassignablePartition(
                    partition_index=tp.partition,
                    replicas=list(replicas or ()),
                    cancel=replicas is None,
                )
            )
        if not by_topic:
            return {}
        request = pb.AlterPartitionReassignmentsRequest(
            topics=[
                pb.AlterPartitionReassignmentsRequest.ReassignableTopic(name=t, partitions=ps)
                for t, ps in by_topic.items()
            ],
            timeout_ms=timeout_ms,
        )

        def send(
            stub: pb_grpc.AdminStub, timeout_s: float
        ) -> pb.AlterPartitionReassignmentsResponse:
            response = stub.AlterPartitionReassignments(request, timeout=timeout_s)
            if response.error_code == ErrorCode.NOT_CONTROLLER:
                raise _NotController()
            error = _error(response.error_code, response.error_message)
            if error is not None:
                raise error
            return response

        response = self._to_controller("alterPartitionReassignments", send, timeout_ms)
        results: dict[TopicPartition, KafkaError | None] = {}
        for topic in response.responses:
            for p in topic.partitions:
                tp = TopicPartition(topic.name, p.partition_index)
                results[tp] = _error(p.error_code, p.error_message)
        return dict(sorted(results.items()))

    def list_partition_reassignments(
        self,
        partitions: Iterable[TopicPartition] | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, PartitionReassignment]:
        """The moves under way, of ``partitions`` (those not moving are left out) or all."""
        timeout_ms = self._timeout(timeout_ms)
        by_topic: dict[str, list[int]] = {}
        for tp in partitions or ():
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        if partitions is not None and not by_topic:
            return {}
        request = pb.ListPartitionReassignmentsRequest(
            topics=[
                pb.ListPartitionReassignmentsRequest.ListPartitionReassignmentsTopics(
                    name=t, partition_indexes=sorted(ps)
                )
                for t, ps in sorted(by_topic.items())
            ],
            timeout_ms=timeout_ms,
        )

        def send(
            stub: pb_grpc.AdminStub, timeout_s: float
        ) -> pb.ListPartitionReassignmentsResponse:
            response = stub.ListPartitionReassignments(request, timeout=timeout_s)
            if response.error_code == ErrorCode.NOT_CONTROLLER:
                raise _NotController()
            error = _error(response.error_code, response.error_message)
            if error is not None:
                raise error
            return response

        response = self._to_controller("listPartitionReassignments", send, timeout_ms)
        return {
            TopicPartition(topic.name, p.partition_index): PartitionReassignment(
                tuple(p.replicas), tuple(p.adding_replicas), tuple(p.removing_replicas)
            )
            for topic in response.topics
            for p in topic.partitions
        }
