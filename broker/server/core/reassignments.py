"""Partition reassignment on plain values: AlterPartitionReassignments and
ListPartitionReassignments (KIP-455), one part of TopicAdmin (broker/server/core/admin.py).

Both go to ``controller`` (this broker's KafkaController, controller/reassignment.py holds the
mechanism); a broker that is not controller answers the whole request NOT_CONTROLLER, and the
client looks the controller up again in Metadata. Alter needs Alter on the cluster, List
Describe on the cluster (CLUSTER_AUTHORIZATION_FAILED for the whole request, as Kafka's
KafkaApis). A target of None cancels a partition's reassignment::

    answer = await admin.alter_partition_reassignments({TopicPartition("t", 0): [1, 2, 3]})
    answer.partitions[0].error_code                       # NONE: started
    listed = await admin.list_partition_reassignments(None)
    listed.reassignments[0].adding_replicas               # (3,)

Runs on the broker's event loop; the controller's futures are awaited with
``asyncio.wrap_future``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from minikafka.broker.security.acl import ResourceType
from minikafka.broker.security.principal import Session
from minikafka.broker.server.core._admin_base import NO_SESSION, AdminBase
from minikafka.broker.server.core.topics import PartitionResult
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode

__all__ = [
    "AlterReassignmentsResult",
    "ListReassignmentsResult",
    "OngoingReassignment",
    "ReassignmentsAdmin",
]

_DENIED = "Authorization failed."


@dataclass(frozen=True, slots=True)
class AlterReassignmentsResult:
    """A whole-request error (NOT_CONTROLLER, CLUSTER_AUTHORIZATION_FAILED) without partitions,
    or one result per partition, sorted by topic and partition."""

    error_code: ErrorCode = ErrorCode.NONE
    error_message: str = ""
    partitions: Sequence[PartitionResult] = ()


@dataclass(frozen=True, slots=True)
class OngoingReassignment:
    """One partition being reassigned: all its replicas (TRS then ORS), those being added and
    those being removed."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ListReassignmentsResult:
    error_code: ErrorCode = ErrorCode.NONE
    error_message: str = ""
    reassignments: Sequence[OngoingReassignment] = ()


class ReassignmentsAdmin(AdminBase):
    """See the module docstring. Lives on the broker's event loop."""

    async def alter_partition_reassignments(
        self,
        requests: Mapping[TopicPartition, Sequence[int] | None],
        *,
        session: Session = NO_SESSION,
    ) -> AlterReassignmentsResult:
        if not self._auth.allows(session, "AlterPartitionReassignments", ResourceType.CLUSTER):
            return AlterReassignmentsResult(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, _DENIED)
        if not self._controller.is_active:
            return _not_controller(AlterReassignmentsResult, self._config.broker_id)
        results = await asyncio.wrap_future(
            self._controller.alter_partition_reassignments(requests)
        )
        if any(r.error == ErrorCode.NOT_CONTROLLER for r in results.values()):
            return _not_controller(AlterReassignmentsResult, self._config.broker_id)
        return AlterReassignmentsResult(
            partitions=[
                PartitionResult(tp.topic, tp.partition, results[tp].error, results[tp].message)
                for tp in sorted(results)
            ]
        )

    async def list_partition_reassignments(
        self,
        partitions: Iterable[TopicPartition] | None,
        *,
        session: Session = NO_SESSION,
    ) -> ListReassignmentsResult:
        """``partitions`` None lists every reassignment; named partitions that are not being
        reassigned (or do not exist) are left out, as Kafka does."""
        if not self._auth.allows(session, "ListPartitionReassignments", ResourceType.CLUSTER):
            return ListReassignmentsResult(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, _DENIED)
        if not self._controller.is_active:
            return _not_controller(ListReassignmentsResult, self._config.broker_id)
        wanted = None if partitions is None else list(partitions)
        answer = await asyncio.wrap_future(self._controller.list_partition_reassignments(wanted))
        if answer.error != ErrorCode.NONE:
            return ListReassignmentsResult(answer.error, answer.message)
        return ListReassignmentsResult(
            reassignments=[
                OngoingReassignment(
                    tp.topic,
                    tp.partition,
                    a.replicas,
                    a.adding_replicas,
                    a.removing_replicas,
                )
                for tp, a in sorted(answer.reassignments.items())
            ]
        )


_R = TypeVar("_R", AlterReassignmentsResult, ListReassignmentsResult)


def _not_controller(kind: type[_R], broker_id: int) -> _R:
    return kind(ErrorCode.NOT_CONTROLLER, f"Broker {broker_id} is not the controller.")
