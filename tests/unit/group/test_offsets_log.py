"""ReplicaManagerOffsetsLog: the coordinator's appends go through the produce path as its own."""

from __future__ import annotations

import asyncio
from typing import cast

from minikafka.broker.group.offsets_log import ReplicaManagerOffsetsLog
from minikafka.broker.replication.producer_state import AppendOrigin
from minikafka.broker.replication.replica_manager import ReplicaManager
from minikafka.broker.replication.requests import ProducePartitionResult, ProduceRequest
from minikafka.proto.common import GROUP_METADATA_TOPIC


class CapturingReplicaManager:
    def __init__(self) -> None:
        self.requests: list[ProduceRequest] = []

    async def append_records(self, request: ProduceRequest) -> list[ProducePartitionResult]:
        self.requests.append(request)
        return [ProducePartitionResult(GROUP_METADATA_TOPIC, 3, 0, base_offset=42)]


def test_every_append_is_the_coordinators_own_with_acks_all() -> None:
    fake = CapturingReplicaManager()
    log = ReplicaManagerOffsetsLog(cast(ReplicaManager, fake))
    assert asyncio.run(log.append(3, b"plain", 5000)) == (0, 42)
    assert asyncio.run(log.append(3, b"txn", 5000, transactional_id="t-1")) == (0, 42)
    plain, txn = fake.requests
    for request in (plain, txn):
        assert request.origin is AppendOrigin.COORDINATOR
        assert (request.acks, request.timeout_ms) == (-1, 5000)
        [partition] = request.partitions
        assert (partition.topic, partition.partition) == (GROUP_METADATA_TOPIC, 3)
    assert (plain.transactional_id, txn.transactional_id) == (None, "t-1")
    assert txn.partitions[0].records == b"txn"
