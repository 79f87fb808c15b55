"""DeleteRecords on plain values (one part of TopicAdmin, broker/server/core/admin.py).

``delete_records`` moves the log start offset of partitions this broker leads, then waits until
the followers, which learn it from fetch responses, report theirs (Kafka's DelayedDeleteRecords,
in the ReplicaManager); REQUEST_TIMED_OUT after ``timeout_ms``. Answers come one per partition,
in request order. Runs on the broker's event loop.
"""

from __future__ import annotations

from collections.abc import Sequence

from minikafka.broker.replication.requests import (
    DeleteRecordsPartition,
    DeleteRecordsPartitionResult,
)
from minikafka.broker.server.core._admin_base import AdminBase
from minikafka.proto.errors import ErrorCode

__all__ = ["RecordsAdmin"]


class RecordsAdmin(AdminBase):
    """See the module docstring. Lives on the broker's event loop."""

    async def delete_records(
        self, partitions: Sequence[DeleteRecordsPartition], timeout_ms: int
    ) -> list[DeleteRecordsPartitionResult]:
        """One result per partition, in request order, once every replica's log start offset
        reached the target or ``timeout_ms`` passed (ReplicaManager.delete_records)."""
        if self._replica_manager is None:
            return [
                DeleteRecordsPartitionResult(
                    p.topic, p.partition, -1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                )
                for p in partitions
            ]
        return await self._replica_manager.delete_records(partitions, timeout_ms)
