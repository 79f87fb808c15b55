"""Topic admin pieces that need no ZooKeeper: topic config checks, and DeleteRecords through
the gRPC AdminService onto TopicAdmin."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

from minikafka.broker.config import BrokerConfig
from minikafka.broker.server.admin_service import AdminService
from minikafka.broker.server.core.admin import (
    TOPIC_CONFIG_KEYS,
    TopicAdmin,
    validate_topic_configs,
)
from minikafka.broker.server.core.topic_creation import OFFSETS_TOPIC_CONFIGS
from minikafka.broker.storage.checkpoints import TopicPartition
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto.errors import ErrorCode, InvalidConfigError


def test_topic_config_keys_are_kafkas() -> None:
    assert {"retention.ms", "cleanup.policy", "min.insync.replicas"} <= TOPIC_CONFIG_KEYS
    assert "unclean.leader.election.enable" in TOPIC_CONFIG_KEYS
    assert "log.retention.ms" not in TOPIC_CONFIG_KEYS  # a broker key, not a topic key


def test_valid_topic_configs_pass() -> None:
    validate_topic_configs(
        {
            "retention.ms": "-1",
            "cleanup.policy": "compact,delete",
            "min.insync.replicas": "2",
            "unclean.leader.election.enable": "TRUE",
            "segment.bytes": "1048576",
        }
    )


@pytest.mark.parametrize(
    "config",
    [
        {"retention.minutes": "1"},
        {"segment.bytes": "1"},
        {"segment.bytes": "big"},
        {"cleanup.policy": "archive"},
        {"min.insync.replicas": "0"},
        {"min.insync.replicas": "two"},
        {"unclean.leader.election.enable": "yes"},
    ],
)
def test_invalid_topic_configs(config: dict[str, str]) -> None:
    with pytest.raises(InvalidConfigError):
        validate_topic_configs(config)


def test_the_offsets_topic_configs_validate() -> None:
    # An alter of __consumer_offsets revalidates the configs it was created with.
    validate_topic_configs({**OFFSETS_TOPIC_CONFIGS, "retention.ms": "1000"})


def test_compression_type_other_than_producer_is_refused_not_ignored() -> None:
    with pytest.raises(InvalidConfigError, match="only 'producer' is supported"):
        validate_topic_configs({"compression.type": "gzip"})
    with pytest.raises(InvalidConfigError, match="String must be one of"):
        validate_topic_configs({"compression.type": "brotli"})


@dataclass
class FakeLog:
    log_start_offset: int = 0
    calls: list[tuple[int, int | None]] = field(default_factory=list)

    def maybe_increment_log_start_offset(self, offset: int, high_watermark: int | None) -> bool:
        self.calls.append((offset, high_watermark))
        self.log_start_offset = max(self.log_start_offset, offset)
        return True


@dataclass
class FakePartition:
    is_leader: bool
    high_watermark: int
    log: FakeLog = field(default_factory=FakeLog)


class FakeReplicaManager:
    def __init__(self, partitions: dict[TopicPartition, FakePartition]) -> None:
        self.partitions = partitions

    def get_partition(self, tp: TopicPartition) -> FakePartition | None:
        return self.partitions.get(tp)


def test_delete_records_on_the_leader() -> None:
    leader = FakePartition(is_leader=True, high_watermark=10)
    manager = FakeReplicaManager(
        {
            TopicPartition("t", 0): leader,
            TopicPartition("t", 1): FakePartition(is_leader=False, high_watermark=10),
            TopicPartition("t", 2): FakePartition(is_leader=True, high_watermark=3),
        }
    )
    service = AdminService(
        TopicAdmin(
            BrokerConfig(broker_id=1, zookeeper_connect="127.0.0.1:1"),
            controller=None,  # type: ignore[arg-type]
            zk=None,  # type: ignore[arg-type]
            replica_manager=manager,  # type: ignore[arg-type]
        )
    )
    P = pb.DeleteRecordsRequest.DeleteRecordsPartition
    request = pb.DeleteRecordsRequest(
        topics=[
            pb.DeleteRecordsRequest.DeleteRecordsTopic(
                name="t",
                partitions=[
                    P(partition_index=0, offset=4),
                    P(partition_index=1, offset=4),
                    P(partition_index=2, offset=4),
                    P(partition_index=9, offset=4),
                ],
            )
        ]
    )
    context: Any = None
    response = asyncio.run(service.DeleteRecords(request, context))
    results = {p.partition_index: p for p in response.topics[0].partitions}
    assert results[0].error_code == ErrorCode.NONE and results[0].low_watermark == 4
    assert leader.log.calls == [(4, 10)]
    assert results[1].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert results[2].error_code == ErrorCode.OFFSET_OUT_OF_RANGE  # beyond the high watermark
    assert results[9].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    to_hw = pb.DeleteRecordsRequest(
        topics=[pb.DeleteRecordsRequest.DeleteRecordsTopic(name="t", partitions=[P(offset=-1)])]
    )
    response = asyncio.run(service.DeleteRecords(to_hw, context))
    assert response.topics[0].partitions[0].low_watermark == 10
