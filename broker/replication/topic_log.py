"""An internal topic's partitions through the ReplicaManager, as a coordinator sees them
(``__consumer_offsets`` for the group coordinator, ``__transaction_state`` for the
transaction coordinator).

Appends are the coordinator's own (AppendOrigin.COORDINATOR, as Kafka's coordinators append:
the transactional batch of a TxnOffsetCommit carries base sequence 0 each time, so the leader
checks its producer epoch but not its sequence) through the normal produce path with acks=all,
so a change is answered only once the ISR has it; reads come straight from the local leader's
log, for loading a partition when this broker becomes its leader.

Not thread-safe: the broker's event loop.
"""

from __future__ import annotations

from minikafka.broker.replication.producer_state import AppendOrigin
from minikafka.broker.replication.replica_manager import ReplicaManager
from minikafka.broker.replication.requests import ProducePartition, ProduceRequest
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode

__all__ = ["ReplicaManagerTopicLog"]


class ReplicaManagerTopicLog:
    def __init__(self, replica_manager: ReplicaManager, topic: str) -> None:
        self._replica_manager = replica_manager
        self._topic = topic

    def leader_epoch(self, partition: int) -> int | None:
        """This broker's leader epoch of the partition; None when it does not lead it."""
        hosted = self._replica_manager.get_partition(TopicPartition(self._topic, partition))
        if hosted is None or not hosted.is_leader:
            return None
        return hosted.leader_epoch

    async def append(
        self,
        partition: int,
        records: bytes,
        timeout_ms: int,
        *,
        transactional_id: str | None = None,
    ) -> tuple[int, int]:
        """(error code, base offset) once the ISR has ``records`` (acks=all);
        ``transactional_id``: the producer's, for a transactional batch."""
        request = ProduceRequest(
            -1,
            timeout_ms,
            [ProducePartition(self._topic, partition, records)],
            transactional_id=transactional_id,
            origin=AppendOrigin.COORDINATOR,
        )
        for result in await self._replica_manager.append_records(request):
            return result.error_code, result.base_offset
        return ErrorCode.UNKNOWN_SERVER_ERROR, -1

    def read(self, partition: int, start: int, max_bytes: int) -> tuple[bytes, int]:
        """Whole batches from ``start`` (-1: the log start) and the log end offset."""
        hosted = self._replica_manager.get_partition(TopicPartition(self._topic, partition))
        if hosted is None:
            return b"", 0
        log = hosted.log
        offset = log.log_start_offset if start < 0 else max(start, log.log_start_offset)
        end = log.log_end_offset
        if offset >= end:
            return b"", end
        records = log.read(offset, max_bytes, None, True).records
        assert isinstance(records, bytes)  # read out: file_records was not asked for
        return records, end
