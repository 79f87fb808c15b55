"""The Kafka door serves Kafka 3.9's versions (docs/architecture.md, "Kafka 3.9's versions"):
ApiVersions answers exactly that table, and each handler decodes and answers its newest
versions, tagged fields included, through kio's writer and reader as on the wire.

Fetch v13+ names topics by id (KIP-516): resolved in the broker's metadata cache, an unknown id
(a deleted topic's, or a re-created topic's old one) answers UNKNOWN_TOPIC_ID; v15 carries the
follower's id in ``replica_state``; v16 says where the leader went (KIP-951)."""

from __future__ import annotations

import asyncio
import io
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from minikafka.broker.config import BrokerConfig
from minikafka.broker.replication.fetch_session import FetchSessionResponse
from minikafka.broker.replication.requests import FetchPartitionResult, FetchRequest
from minikafka.broker.security.acl import AclOperation, Action, ResourceType
from minikafka.broker.security.principal import Session
from minikafka.broker.server.core.authorization import AuthHelper
from minikafka.broker.server.core.metadata import MetadataApi
from minikafka.broker.server.kafka import handlers  # noqa: F401  (fills the registry)
from minikafka.broker.server.kafka.handlers.api_versions import api_versions
from minikafka.broker.server.kafka.handlers.fetch import fetch
from minikafka.broker.server.kafka.handlers.groups import find_coordinator
from minikafka.broker.server.kafka.handlers.metadata import metadata
from minikafka.broker.server.kafka.handlers.topic_ids import from_uuid
from minikafka.broker.server.kafka.registry import HANDLERS, HandleFn, Request
from minikafka.broker.server.kafka.schema import (
    Entity,
    build,
    read_entity,
    request_class,
    response_class,
    write_entity,
)
from minikafka.broker.server.metadata_cache import MetadataCache
from minikafka.broker.server.quotas import ClientQuotaManager
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto.errors import ErrorCode

# Kafka 3.9's newest version of each API this broker serves, as a ZooKeeper-mode broker
# advertises it: clients/src/main/resources/common/message/*Request.json at 3.9.0, without the
# versions marked latestVersionUnstable (ListOffsets v9). The minimums are this broker's: record
# format v2 only (kio carries no older versions of Produce, Fetch, ...).
KAFKA_3_9 = {
    0: (3, 11),  # Produce
    1: (4, 17),  # Fetch
    2: (1, 8),  # ListOffsets
    3: (0, 12),  # Metadata
    8: (2, 9),  # OffsetCommit
    9: (1, 9),  # OffsetFetch
    10: (0, 6),  # FindCoordinator
    11: (0, 9),  # JoinGroup
    12: (0, 4),  # Heartbeat
    13: (0, 5),  # LeaveGroup
    14: (0, 5),  # SyncGroup
    15: (0, 5),  # DescribeGroups
    16: (0, 5),  # ListGroups
    17: (0, 1),  # SaslHandshake
    18: (0, 4),  # ApiVersions
    19: (2, 7),  # CreateTopics
    20: (1, 6),  # DeleteTopics
    21: (0, 2),  # DeleteRecords
    22: (0, 5),  # InitProducerId
    23: (2, 4),  # OffsetForLeaderEpoch
    24: (0, 4),  # AddPartitionsToTxn
    25: (0, 4),  # AddOffsetsToTxn
    26: (0, 4),  # EndTxn
    27: (1, 1),  # WriteTxnMarkers (3.9: 0-1; kio has no v0)
    28: (0, 4),  # TxnOffsetCommit
    29: (1, 3),  # DescribeAcls (3.9: 0-3; kio has no v0)
    30: (1, 3),  # CreateAcls
    31: (1, 3),  # DeleteAcls
    32: (1, 4),  # DescribeConfigs
    33: (0, 2),  # AlterConfigs
    36: (0, 2),  # SaslAuthenticate
    34: (1, 2),  # AlterReplicaLogDirs (3.9: 0-2; kio has no v0)
    35: (1, 4),  # DescribeLogDirs (3.9: 0-4; kio has no v0)
    37: (0, 3),  # CreatePartitions
    42: (0, 2),  # DeleteGroups
    43: (0, 2),  # ElectLeaders
    44: (0, 1),  # IncrementalAlterConfigs
    45: (0, 0),  # AlterPartitionReassignments
    46: (0, 0),  # ListPartitionReassignments
    47: (0, 0),  # OffsetDelete
    48: (0, 1),  # DescribeClientQuotas
    49: (0, 1),  # AlterClientQuotas
    50: (0, 0),  # DescribeUserScramCredentials
    51: (0, 0),  # AlterUserScramCredentials
    60: (0, 1),  # DescribeCluster
    61: (0, 0),  # DescribeProducers
    65: (0, 0),  # DescribeTransactions
    66: (0, 1),  # ListTransactions
}

ORDERS_ID = "AAAAAAAAAAAAAAAAAAAAAQ"  # ZooKeeper's text form of the UUID 0...01
OLD_ID = uuid.UUID(int=7)


def wire(cls: type[Entity], entity: Entity) -> Entity:
    """``entity`` written by kio's writer and read back by its reader, as the wire carries it."""
    buffer = io.BytesIO()
    write_entity(cls, buffer, entity)
    decoded, size = read_entity(cls, buffer.getvalue(), 0)
    assert size == len(buffer.getvalue())
    return decoded


def request(api_key: int, version: int, values: dict[str, Any], listener: str = "KAFKA") -> Request:
    cls = request_class(api_key, version)
    return Request(
        api_key, version, 1, "c", "127.0.0.1", 5000, listener, wire(cls, build(cls, values))
    )


def answer(handle: HandleFn, req: Request, broker: Any) -> Entity:
    async def answer_of() -> Entity:
        return await handle(req, broker)

    response = asyncio.run(answer_of())
    return wire(response_class(req.api_key, req.api_version), response)


def cache_with_orders(leader: int = 1) -> MetadataCache:
    """Brokers 1 and 2 with a KAFKA listener; topic orders (id 0...01) with partitions 0 and 1
    led by ``leader`` at epoch 4."""
    cache = MetadataCache(1)
    update = pb.UpdateMetadataRequest(controller_id=1, controller_epoch=1, broker_epoch=5)
    for broker_id in (1, 2):
        broker = update.live_brokers.add(id=broker_id, host="127.0.0.1", port=9090 + broker_id)
        broker.endpoints.add(listener="KAFKA", host="127.0.0.1", port=19090 + broker_id)
        broker.rack = f"rack-{broker_id}"
    for partition in (0, 1):
        update.partition_states.add(
            topic_name="orders",
            topic_id=ORDERS_ID,
            partition_index=partition,
            leader=leader,
            leader_epoch=4,
            isr=[1, 2],
            replicas=[1, 2],
        )
    cache.update(update)
    return cache


@dataclass
class FakeFetches:
    """The core's FetchApi at its seam: records what it was asked, answers ``error`` (or
    records) for each partition asked."""

    error: int = ErrorCode.NONE
    asked: list[FetchRequest] = field(default_factory=list)

    async def fetch(
        self, req: FetchRequest, *, listener: str, session: Session | None = None
    ) -> FetchSessionResponse:
        self.asked.append(req)
        results = [
            FetchPartitionResult(
                p.topic,
                p.partition,
                self.error,
                high_watermark=10,
                last_stable_offset=10,
                log_start_offset=0,
                records=b"" if self.error else b"records",
            )
            for p in req.partitions
        ]
        return FetchSessionResponse(ErrorCode.NONE, 0, results)


def fetch_values(version: int, topic_ref: dict[str, Any], replica_id: int = -1) -> dict[str, Any]:
    values: dict[str, Any] = {
        "max_wait": 0,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                **topic_ref,
                "partitions": [
                    {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20},
                ],
            }
        ],
    }
    if version >= 15:
        values["replica_state"] = {"replica_id": replica_id, "replica_epoch": -1}
    else:
        values["replica_id"] = replica_id
    return values


# --- ApiVersions -----------------------------------------------------------------------------


def test_the_registry_serves_exactly_kafka_3_9s_table() -> None:
    served = {h.api_key: (h.min_version, h.max_version) for h in HANDLERS.values()}
    assert served == KAFKA_3_9


@pytest.mark.parametrize("version", range(5))
def test_api_versions_answers_the_table_in_every_version(version: int) -> None:
    response = answer(api_versions, request(18, version, {}), SimpleNamespace())

    assert int(response.error_code) == ErrorCode.NONE
    assert {k.api_key: (k.min_version, k.max_version) for k in response.api_keys} == KAFKA_3_9


def test_every_served_version_has_kios_request_and_response() -> None:
    for api_key, (low, high) in KAFKA_3_9.items():
        for version in range(low, high + 1):
            request_class(api_key, version)
            response_class(api_key, version)


# --- Fetch v13+: topic ids -------------------------------------------------------------------


@pytest.mark.parametrize("version", range(13, 18))
def test_fetch_by_topic_id_reads_the_named_topic_and_answers_by_id(version: int) -> None:
    fetches = FakeFetches()
    broker = SimpleNamespace(
        metadata_cache=cache_with_orders(), quotas=ClientQuotaManager(), fetches=fetches
    )
    topic_id = uuid.UUID(int=1)

    response = answer(
        fetch, request(1, version, fetch_values(version, {"topic_id": topic_id})), broker
    )

    (asked,) = fetches.asked
    assert [(p.topic, p.partition) for p in asked.partitions] == [("orders", 0)]
    assert asked.replica_id == -1
    (topic,) = response.responses
    assert topic.topic_id == topic_id
    (partition,) = topic.partitions
    assert int(partition.error_code) == ErrorCode.NONE
    assert (partition.high_watermark, bytes(partition.records)) == (10, b"records")


@pytest.mark.parametrize("version", range(13, 18))
def test_fetch_by_an_unknown_topic_id_answers_unknown_topic_id(version: int) -> None:
    fetches = FakeFetches()
    broker = SimpleNamespace(
        metadata_cache=cache_with_orders(), quotas=ClientQuotaManager(), fetches=fetches
    )

    response = answer(
        fetch, request(1, version, fetch_values(version, {"topic_id": OLD_ID})), broker
    )

    assert fetches.asked[0].partitions == []  # nothing read for it
    (topic,) = response.responses
    assert topic.topic_id == OLD_ID
    (partition,) = topic.partitions
    assert int(partition.error_code) == ErrorCode.UNKNOWN_TOPIC_ID
    assert (partition.partition_index, partition.high_watermark) == (0, -1)


def test_a_recreated_topics_old_id_is_unknown_and_its_new_id_reads() -> None:
    cache = cache_with_orders()
    old = uuid.UUID(int=1)
    deleted = pb.UpdateMetadataRequest(controller_id=1, controller_epoch=1, broker_epoch=5)
    recreated = pb.UpdateMetadataRequest(controller_id=1, controller_epoch=1, broker_epoch=5)
    for partition in (0, 1):
        deleted.partition_states.add(topic_name="orders", partition_index=partition, leader=-2)
        recreated.partition_states.add(
            topic_name="orders",
            topic_id=from_uuid(uuid.UUID(int=2)),
            partition_index=partition,
            leader=1,
            leader_epoch=0,
        )
    cache.update(deleted)
    cache.update(recreated)
    broker = SimpleNamespace(
        metadata_cache=cache, quotas=ClientQuotaManager(), fetches=FakeFetches()
    )

    by_old = answer(fetch, request(1, 16, fetch_values(16, {"topic_id": old})), broker)
    by_new = answer(fetch, request(1, 16, fetch_values(16, {"topic_id": uuid.UUID(int=2)})), broker)

    assert int(by_old.responses[0].partitions[0].error_code) == ErrorCode.UNKNOWN_TOPIC_ID
    assert by_new.responses[0].topic_id == uuid.UUID(int=2)
    assert int(by_new.responses[0].partitions[0].error_code) == ErrorCode.NONE


def test_fetch_v12_still_names_topics() -> None:
    fetches = FakeFetches()
    broker = SimpleNamespace(
        metadata_cache=cache_with_orders(), quotas=ClientQuotaManager(), fetches=fetches
    )

    response = answer(fetch, request(1, 12, fetch_values(12, {"topic": "orders"})), broker)

    assert response.responses[0].topic == "orders"
    assert [p.topic for p in fetches.asked[0].partitions] == ["orders"]


def test_fetch_v13_forgets_partitions_by_topic_id() -> None:
    fetches = FakeFetches()
    broker = SimpleNamespace(
        metadata_cache=cache_with_orders(), quotas=ClientQuotaManager(), fetches=fetches
    )
    values = fetch_values(13, {"topic_id": uuid.UUID(int=1)})
    values["forgotten_topics_data"] = [
        {"topic_id": uuid.UUID(int=1), "partitions": [1]},
        {"topic_id": OLD_ID, "partitions": [0]},  # an id nobody knows: nothing to forget
    ]

    answer(fetch, request(1, 13, values), broker)

    assert [(tp.topic, tp.partition) for tp in fetches.asked[0].forgotten] == [("orders", 1)]


def test_fetch_v15_takes_the_followers_id_from_replica_state() -> None:
    fetches = FakeFetches()
    broker = SimpleNamespace(
        metadata_cache=cache_with_orders(), quotas=ClientQuotaManager(), fetches=fetches
    )

    answer(fetch, request(1, 15, fetch_values(15, {"topic_id": uuid.UUID(int=1)}, 2)), broker)

    assert fetches.asked[0].replica_id == 2


@pytest.mark.parametrize("error", [ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH])
def test_fetch_v16_says_where_the_leader_went(error: ErrorCode) -> None:
    broker = SimpleNamespace(
        metadata_cache=cache_with_orders(leader=2),
        quotas=ClientQuotaManager(),
        fetches=FakeFetches(error),
    )

    response = answer(
        fetch, request(1, 16, fetch_values(16, {"topic_id": uuid.UUID(int=1)})), broker
    )

    (partition,) = response.responses[0].partitions
    assert (partition.current_leader.leader_id, partition.current_leader.leader_epoch) == (2, 4)
    (node,) = response.node_endpoints
    assert (node.node_id, node.host, node.port, node.rack) == (2, "127.0.0.1", 19092, "rack-2")


def test_fetch_v15_and_other_errors_send_no_leader() -> None:
    for version, error in ((15, ErrorCode.NOT_LEADER_OR_FOLLOWER), (16, ErrorCode.NONE)):
        broker = SimpleNamespace(
            metadata_cache=cache_with_orders(2),
            quotas=ClientQuotaManager(),
            fetches=FakeFetches(error),
        )

        response = answer(
            fetch,
            request(1, version, fetch_values(version, {"topic_id": uuid.UUID(int=1)})),
            broker,
        )

        assert response.responses[0].partitions[0].current_leader.leader_id == -1
        assert list(getattr(response, "node_endpoints", ())) == []


# --- Metadata v12 by topic id -----------------------------------------------------------------


def test_metadata_v12_answers_topics_asked_by_id() -> None:
    cache = cache_with_orders()
    api = MetadataApi(BrokerConfig(broker_id=1, zookeeper_connect="127.0.0.1:1"), cache)
    broker = SimpleNamespace(metadata_cache=cache, metadata_api=api)
    asked = {"topics": [{"topic_id": uuid.UUID(int=1)}, {"topic_id": OLD_ID}]}

    response = answer(metadata, request(3, 12, asked), broker)

    known, unknown = response.topics
    assert (known.name, known.topic_id, int(known.error_code)) == ("orders", uuid.UUID(int=1), 0)
    assert len(known.partitions) == 2
    assert (unknown.name, unknown.topic_id) == (None, OLD_ID)
    assert int(unknown.error_code) == ErrorCode.UNKNOWN_TOPIC_ID


def test_metadata_v10_answers_each_topics_id() -> None:
    cache = cache_with_orders()
    api = MetadataApi(BrokerConfig(broker_id=1, zookeeper_connect="127.0.0.1:1"), cache)
    broker = SimpleNamespace(metadata_cache=cache, metadata_api=api)

    response = answer(metadata, request(3, 10, {"topics": [{"name": "orders"}]}), broker)

    (topic,) = response.topics
    assert (topic.name, topic.topic_id) == ("orders", uuid.UUID(int=1))


# --- FindCoordinator v5-6 --------------------------------------------------------------------


@dataclass
class FakeGroups:
    """The core's GroupApi at its seam: every group key's coordinator is broker 1."""

    async def find_coordinator(
        self, key: str, key_type: int, *, listener: str, session: Session | None = None
    ) -> Any:
        from minikafka.broker.server.core.groups import FoundCoordinator

        if key_type != 0:
            return FoundCoordinator(ErrorCode.INVALID_REQUEST, "only groups")
        return FoundCoordinator(ErrorCode.NONE, "", 1, "127.0.0.1", 19091)


@pytest.mark.parametrize("version", [5, 6])
def test_find_coordinator_v5_and_v6_find_a_groups_coordinator(version: int) -> None:
    response = answer(
        find_coordinator,
        request(10, version, {"key_type": 0, "coordinator_keys": ["g"]}),
        SimpleNamespace(groups=FakeGroups()),
    )

    (found,) = response.coordinators
    assert (found.key, found.node_id, found.port, int(found.error_code)) == ("g", 1, 19091, 0)


@pytest.mark.parametrize(
    ("version", "error"),
    [(5, ErrorCode.INVALID_REQUEST), (6, ErrorCode.COORDINATOR_NOT_AVAILABLE)],
)
def test_a_share_groups_coordinator_is_not_available_from_v6(version: int, error: int) -> None:
    response = answer(
        find_coordinator,
        request(10, version, {"key_type": 2, "coordinator_keys": ["s"]}),
        SimpleNamespace(groups=FakeGroups()),
    )

    (found,) = response.coordinators
    assert (int(found.error_code), found.node_id) == (error, -1)


class _DeniesEverything:
    """An authorizer that allows nothing (the principal may not Describe any topic)."""

    def authorize(self, session: Session, actions: Sequence[Action]) -> list[bool]:
        return [False] * len(actions)

    def authorize_by_resource_type(
        self, session: Session, operation: AclOperation, resource_type: ResourceType
    ) -> bool:
        return False


def test_metadata_v12_by_id_hides_the_name_of_a_topic_the_principal_may_not_describe() -> None:
    cache = cache_with_orders()
    api = MetadataApi(
        BrokerConfig(broker_id=1, zookeeper_connect="127.0.0.1:1"),
        cache,
        auth=AuthHelper(_DeniesEverything()),
    )
    broker = SimpleNamespace(metadata_cache=cache, metadata_api=api)
    asked = {"topics": [{"topic_id": uuid.UUID(int=1)}]}

    (refused,) = answer(metadata, request(3, 12, asked), broker).topics

    assert int(refused.error_code) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert (refused.name, refused.topic_id) == (None, uuid.UUID(int=1))
    assert not refused.partitions
