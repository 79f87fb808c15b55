"""DeleteRecords on plain values (one part of TopicAdmin, broker/server/core/admin.py).

``delete_records`` moves the log start offset of partitions this broker leads, then waits until
the followers, which learn it from fetch responses, report theirs (Kafka's DelayedDeleteRecords,
in the ReplicaManager); REQUEST_TIMED_OUT after ``timeout_ms``. Answers come one per partition,
in request order. A partition of a topic the principal may not Delete is
TOPIC_AUTHORIZATION_FAILED and keeps its records. Runs on the broker's event loop.
"""

from __future__ import annotations

from collections.abc import Sequence

from minikafka.broker.replication.requests import (
    DeleteRecordsPartition,
    DeleteRecordsPartitionResult,
)
from minikafka.broker.security.acl import ResourceType
from minikafka.broker.security.principal import Session
from minikafka.broker.server.core._admin_base import NO_SESSION, AdminBase
from minikafka.proto.errors import ErrorCode

__all__ = ["RecordsAdmin"]


class RecordsAdmin(AdminBase):
    """See the module docstring. Lives on the broker's event loop."""

    async def delete_records(
        self,
        partitions: Sequence[DeleteRecordsPartition],
        timeout_ms: int,
        *,
        session: Session = NO_SESSION,
    ) -> list[DeleteRecordsPartitionResult]:
        """One result per partition, in request order, once every replica's log start offset
        reached the target or ``timeout_ms`` passed (ReplicaManager.delete_records)."""
        allowed = self._auth.allowed_names(
            session, "DeleteRecords", ResourceType.TOPIC, (p.topic for p in partitions)
        )
        if len(allowed) == len({p.topic for p in partitions}):
            return await self._delete(partitions, timeout_ms)
        asked = [p for p in partitions if p.topic in allowed]
        answers = iter(await self._delete(asked, timeout_ms) if asked else ())
        return [
            next(answers)
            if p.topic in allowed
            else DeleteRecordsPartitionResult(
                p.topic,
                p.partition,
                -1,
                ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                f"Not authorized to access topics: [{p.topic}]",
            )
            for p in partitions
        ]

    async def _delete(
        self, partitions: Sequence[DeleteRecordsPartition], timeout_ms: int
    ) -> list[DeleteRecordsPartitionResult]:
        if self._replica_manager is None:
            return [
                DeleteRecordsPartitionResult(
                    p.topic, p.partition, -1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                )
                for p in partitions
            ]
        return await self._replica_manager.delete_records(partitions, timeout_ms)
