"""The core asks the authorizer before every API, with the operation core/authorization.py's
table names, and a refusal reaches nothing behind it: a fake authorizer that records every
Action and allows only what a test grants, in front of fakes that record what reached them."""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, cast

from minikafka.broker.config import BrokerConfig
from minikafka.broker.group.coordinator import GroupCoordinator
from minikafka.broker.group.group_metadata import JoinResult
from minikafka.broker.replication.delayed_produce import ProducePartitionStatus
from minikafka.broker.replication.fetch_session import (
    INITIAL_EPOCH,
    FetchContext,
    FetchManager,
    FetchSessionCache,
)
from minikafka.broker.replication.producer_id_manager import ProducerIdManager
from minikafka.broker.replication.replica_manager import ProduceStatuses, ReplicaManager
from minikafka.broker.replication.requests import (
    DeleteRecordsPartition,
    DeleteRecordsPartitionResult,
    EpochEndOffset,
    FetchPartition,
    FetchPartitionResult,
    FetchRequest,
    InitProducerIdRequest,
    InitProducerIdResult,
    ListOffsetsPartition,
    ListOffsetsPartitionResult,
    ListOffsetsRequest,
    OffsetForLeaderPartition,
    OffsetsForLeaderEpochRequest,
    ProducePartition,
    ProducePartitionResult,
    ProduceRequest,
)
from minikafka.broker.security.acl import (
    CLUSTER_NAME,
    AclOperation,
    Action,
    ResourceType,
)
from minikafka.broker.security.principal import KafkaPrincipal, Session
from minikafka.broker.server.core.admin import TopicAdmin
from minikafka.broker.server.core.authorization import (
    AUTHORIZED_OPERATIONS_OMITTED,
    REQUIRED,
    AuthHelper,
)
from minikafka.broker.server.core.configs import (
    AlterableConfig,
    AlterConfigsResource,
    ConfigResource,
)
from minikafka.broker.server.core.controller_fence import ControllerFence
from minikafka.broker.server.core.data import DataApi
from minikafka.broker.server.core.fetch import FetchApi
from minikafka.broker.server.core.groups import GroupApi
from minikafka.broker.server.core.metadata import MetadataApi
from minikafka.broker.server.core.topic_creation import TopicCreator
from minikafka.broker.server.metadata_cache import MetadataCache
from minikafka.controller.controller import CreateTopicResult, NewTopic
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto.errors import ErrorCode

ALICE = Session(KafkaPrincipal("User", "alice"), "10.0.0.1", "CLIENT")
Op, R = AclOperation, ResourceType


class FakeAuthorizer:
    """Allows exactly the (operation, resource type, name) triples granted; records every
    Action asked, and every authorize_by_resource_type."""

    def __init__(self, *granted: tuple[AclOperation, ResourceType, str]) -> None:
        self.granted = set(granted)
        self.by_type: set[tuple[AclOperation, ResourceType]] = set()
        self.asked: list[Action] = []
        self.asked_by_type: list[tuple[AclOperation, ResourceType]] = []

    def authorize(self, session: Session, actions: Sequence[Action]) -> list[bool]:
        assert session == ALICE
        self.asked.extend(actions)
        return [(a.operation, a.resource_type, a.name) in self.granted for a in actions]

    def authorize_by_resource_type(
        self, session: Session, operation: AclOperation, resource_type: ResourceType
    ) -> bool:
        self.asked_by_type.append((operation, resource_type))
        return (operation, resource_type) in self.by_type

    def asked_triples(self) -> list[tuple[AclOperation, ResourceType, str]]:
        return [(a.operation, a.resource_type, a.name) for a in self.asked]


def test_the_table_is_kafkas() -> None:
    """Spot checks against KafkaApis (3.9): the rows a mistake would open."""
    assert REQUIRED["Produce"] == {R.TOPIC: Op.WRITE, R.TRANSACTIONAL_ID: Op.WRITE}
    assert REQUIRED["Fetch"] == {R.TOPIC: Op.READ}
    assert REQUIRED["Fetch (follower)"] == {R.CLUSTER: Op.CLUSTER_ACTION}
    assert REQUIRED["OffsetCommit"] == {R.GROUP: Op.READ, R.TOPIC: Op.READ}
    assert REQUIRED["OffsetFetch"] == {R.GROUP: Op.DESCRIBE, R.TOPIC: Op.DESCRIBE}
    assert REQUIRED["OffsetDelete"] == {R.GROUP: Op.DELETE, R.TOPIC: Op.READ}
    assert REQUIRED["CreateTopics"] == {R.CLUSTER: Op.CREATE, R.TOPIC: Op.CREATE}
    assert REQUIRED["DeleteRecords"] == {R.TOPIC: Op.DELETE}
    assert REQUIRED["DescribeConfigs"][R.CLUSTER] == Op.DESCRIBE_CONFIGS
    assert REQUIRED["AlterConfigs"][R.TOPIC] == Op.ALTER_CONFIGS
    assert REQUIRED["ElectLeaders"] == {R.CLUSTER: Op.ALTER}
    assert REQUIRED["AlterPartitionReassignments"] == {R.CLUSTER: Op.ALTER}
    assert REQUIRED["ListPartitionReassignments"] == {R.CLUSTER: Op.DESCRIBE}
    for api in ("LeaderAndIsr", "UpdateMetadata", "StopReplica", "ControlledShutdown"):
        assert REQUIRED[api] == {R.CLUSTER: Op.CLUSTER_ACTION}
    for api in ("JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup"):
        assert REQUIRED[api] == {R.GROUP: Op.READ}


def test_authorized_operations_are_kafkas_bit_sets() -> None:
    # without an authorizer: every operation the type supports (Kafka's AclEntry)
    no_authorizer = AuthHelper()
    assert no_authorizer.authorized_operations(ALICE, R.GROUP, "g") == (1 << 3) | (1 << 6) | (
        1 << 8
    )
    assert no_authorizer.authorized_operations(ALICE, R.TOPIC, "t") == sum(
        1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11)
    )
    assert no_authorizer.authorized_operations(ALICE, R.CLUSTER) == sum(
        1 << op for op in (5, 7, 8, 9, 10, 11, 12)
    )
    # with one: the operations granted on that very resource, probed without a logged denial
    authorizer = FakeAuthorizer((Op.READ, R.GROUP, "g"), (Op.DESCRIBE, R.GROUP, "g"))
    auth = AuthHelper(authorizer)
    assert auth.authorized_operations(ALICE, R.GROUP, "g") == (1 << 3) | (1 << 8)
    assert auth.authorized_operations(ALICE, R.GROUP, "other") == 0
    assert all(not a.log_if_denied for a in authorizer.asked)


# --- the data path --------------------------------------------------------------------------


class _Appends:
    """The ReplicaManager's produce and ListOffsets, recording what reached them."""

    def __init__(self) -> None:
        self.appended: list[tuple[str, int]] = []
        self.listed: list[tuple[str, int]] = []

    def append_to_leaders(self, request: ProduceRequest) -> ProduceStatuses:
        self.appended += [(p.topic, p.partition) for p in request.partitions]
        return {
            (p.topic, p.partition): ProducePartitionStatus(ErrorCode.NONE, base_offset=7)
            for p in request.partitions
        }

    async def produce_response(
        self, request: ProduceRequest, statuses: ProduceStatuses
    ) -> list[ProducePartitionResult]:
        return [
            ProducePartitionResult(t, p, s.code, s.message, s.base_offset)
            for (t, p), s in statuses.items()
        ]

    async def list_offsets(self, request: ListOffsetsRequest) -> list[ListOffsetsPartitionResult]:
        self.listed += [(p.topic, p.partition) for p in request.partitions]
        return [
            ListOffsetsPartitionResult(p.topic, p.partition, ErrorCode.NONE, offset=3)
            for p in request.partitions
        ]


class _ProducerIds:
    def __init__(self) -> None:
        self.calls = 0

    async def init_producer_id(self, request: InitProducerIdRequest) -> InitProducerIdResult:
        self.calls += 1
        return InitProducerIdResult(ErrorCode.NONE, producer_id=1000, producer_epoch=0)


def _data(authorizer: FakeAuthorizer) -> tuple[DataApi, _Appends, _ProducerIds]:
    appends, ids = _Appends(), _ProducerIds()
    api = DataApi(
        cast(ReplicaManager, appends), cast(ProducerIdManager, ids), AuthHelper(authorizer)
    )
    return api, appends, ids


def test_produce_appends_only_to_topics_the_principal_may_write() -> None:
    authorizer = FakeAuthorizer((Op.WRITE, R.TOPIC, "orders"))
    api, appends, _ = _data(authorizer)
    request = ProduceRequest(
        1,
        1000,
        [
            ProducePartition("secret", 0, b"x"),
            ProducePartition("orders", 0, b"x"),
            ProducePartition("orders", 1, b"x"),
        ],
    )
    results = asyncio.run(api.produce(request, ALICE))
    assert [(r.topic, r.partition, r.error_code, r.base_offset) for r in results] == [
        ("secret", 0, ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1),
        ("orders", 0, ErrorCode.NONE, 7),
        ("orders", 1, ErrorCode.NONE, 7),
    ]
    assert appends.appended == [("orders", 0), ("orders", 1)]
    # one question per topic, the table's operation
    assert authorizer.asked_triples() == [
        (Op.WRITE, R.TOPIC, "secret"),
        (Op.WRITE, R.TOPIC, "orders"),
    ]


def test_list_offsets_needs_describe_and_keeps_the_request_order() -> None:
    api, appends, _ = _data(FakeAuthorizer((Op.DESCRIBE, R.TOPIC, "b")))
    request = ListOffsetsRequest(
        -1, [ListOffsetsPartition("a", 0, -1), ListOffsetsPartition("b", 0, -1)]
    )
    results = asyncio.run(api.list_offsets(request, ALICE))
    assert [(r.topic, r.error_code, r.offset) for r in results] == [
        ("a", ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1),
        ("b", ErrorCode.NONE, 3),
    ]
    assert appends.listed == [("b", 0)]


def test_init_producer_id_kip_679() -> None:
    idempotent = InitProducerIdRequest()
    # no IdempotentWrite, no Write anywhere: refused, no id spent
    api, _, ids = _data(FakeAuthorizer())
    refused = asyncio.run(api.init_producer_id(idempotent, ALICE))
    assert (refused.error_code, ids.calls) == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, 0)
    # Write on some topic is enough
    authorizer = FakeAuthorizer()
    authorizer.by_type.add((Op.WRITE, R.TOPIC))
    api, _, ids = _data(authorizer)
    assert asyncio.run(api.init_producer_id(idempotent, ALICE)).error_code == ErrorCode.NONE
    # IdempotentWrite on the cluster too
    api, _, ids = _data(FakeAuthorizer((Op.IDEMPOTENT_WRITE, R.CLUSTER, CLUSTER_NAME)))
    assert asyncio.run(api.init_producer_id(idempotent, ALICE)).error_code == ErrorCode.NONE
    # a transactional id needs Write on it
    api, _, ids = _data(FakeAuthorizer((Op.IDEMPOTENT_WRITE, R.CLUSTER, CLUSTER_NAME)))
    answer = asyncio.run(api.init_producer_id(InitProducerIdRequest("tx"), ALICE))
    assert (answer.error_code, ids.calls) == (ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, 0)


class _FetchSource:
    def __init__(self) -> None:
        self.fetch_sessions = FetchManager(
            FetchSessionCache(10, 120_000), lambda: int(time.time() * 1000)
        )
        self.read: list[list[tuple[str, int]]] = []

    async def fetch_messages(
        self, request: FetchRequest, context: FetchContext | None = None
    ) -> Sequence[FetchPartitionResult]:
        self.read.append([(p.topic, p.partition) for p in request.partitions])
        return [
            FetchPartitionResult(p.topic, p.partition, ErrorCode.NONE, "", 5, 5, 0, b"records")
            for p in request.partitions
        ]


def _fetch(replica_id: int, **session: Any) -> FetchRequest:
    partitions = [FetchPartition("secret", 0, 0), FetchPartition("orders", 0, 0)]
    return FetchRequest(replica_id, 0, 1, 1 << 20, partitions, **session)


def test_a_follower_needs_cluster_action_and_a_consumer_read() -> None:
    source = _FetchSource()
    authorizer = FakeAuthorizer((Op.READ, R.TOPIC, "orders"))
    api = FetchApi(source, "INTERNAL", AuthHelper(authorizer))

    async def fetches() -> list[Any]:
        return [
            await api.fetch(_fetch(2), listener="INTERNAL", session=ALICE),
            await api.fetch(_fetch(-1), listener="CLIENT", session=ALICE),
            await api.fetch(_fetch(-1, session_epoch=INITIAL_EPOCH), listener="C", session=ALICE),
        ]

    follower, consumer, in_session = asyncio.run(fetches())
    assert [(p.topic, p.error_code) for p in follower.partitions] == [
        ("secret", ErrorCode.TOPIC_AUTHORIZATION_FAILED),
        ("orders", ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    ]
    for answer in (consumer, in_session):
        assert sorted((p.topic, p.error_code, p.records) for p in answer.partitions) == [
            ("orders", ErrorCode.NONE, b"records"),
            ("secret", ErrorCode.TOPIC_AUTHORIZATION_FAILED, b""),
        ]
    # the follower read nothing; the consumers read only what they may
    assert source.read == [[("orders", 0)], [("orders", 0)]]
    assert (Op.CLUSTER_ACTION, R.CLUSTER, CLUSTER_NAME) in authorizer.asked_triples()


# --- metadata -------------------------------------------------------------------------------


def _cache(*topics: str) -> MetadataCache:
    cache = MetadataCache(1, "cluster")
    request = pb.UpdateMetadataRequest(controller_id=1, controller_epoch=1, broker_epoch=5)
    request.live_brokers.add(id=1, host="127.0.0.1", port=9091)
    for topic in topics:
        request.partition_states.add(
            topic_name=topic,
            topic_id="AAAAAAAAAAAAAAAAAAAAAQ",
            partition_index=0,
            leader=1,
            isr=[1],
            replicas=[1],
        )
    cache.update(request)
    return cache


class _Creator:
    def __init__(self) -> None:
        self.created: list[str] = []

    async def create(self, topic: str) -> None:
        self.created.append(topic)


def _config(**props: str) -> BrokerConfig:
    return BrokerConfig.from_properties({"broker.id": "1", "zookeeper.connect": "zk", **props})


def test_metadata_hides_what_the_principal_may_not_describe() -> None:
    authorizer = FakeAuthorizer(
        (Op.DESCRIBE, R.TOPIC, "orders"),
        (Op.DESCRIBE, R.TOPIC, "new"),
        (Op.READ, R.TOPIC, "orders"),
    )
    creator = _Creator()
    api = MetadataApi(
        _config(),
        _cache("orders", "secret"),
        topic_creator=cast(TopicCreator, creator),
        auth=AuthHelper(authorizer),
    )

    async def ask() -> list[Any]:
        return [
            await api.metadata(None, session=ALICE, include_topic_authorized_operations=True),
            await api.metadata(
                ["secret", "orders", "new"], session=ALICE, allow_auto_topic_creation=True
            ),
            await api.metadata([], session=ALICE, include_cluster_authorized_operations=True),
        ]

    every, named, cluster = asyncio.run(ask())
    # all topics: the secret one is left out, silently
    assert [(t.name, t.error, t.authorized_operations) for t in every.topics] == [
        ("orders", ErrorCode.NONE, (1 << Op.READ) | (1 << Op.DESCRIBE))
    ]
    # named: refused without a lookup (exists or not, the same answer); no Create, no topic
    assert [(t.name, t.error, t.partitions) for t in named.topics] == [
        ("secret", ErrorCode.TOPIC_AUTHORIZATION_FAILED, ()),
        ("orders", ErrorCode.NONE, named.topics[1].partitions),
        ("new", ErrorCode.TOPIC_AUTHORIZATION_FAILED, ()),
    ]
    assert named.topics[0].authorized_operations == AUTHORIZED_OPERATIONS_OMITTED
    assert creator.created == []
    # no Describe on the cluster: its authorized operations are 0, as Kafka answers
    assert cluster.cluster_authorized_operations == 0
    probes = [a for a in authorizer.asked if a.name == "secret" and not a.log_if_denied]
    assert probes  # the all-topics filter is a probe, not a logged refusal


def test_auto_creation_needs_create_on_the_cluster_or_the_topic() -> None:
    authorizer = FakeAuthorizer((Op.DESCRIBE, R.TOPIC, "new"), (Op.CREATE, R.TOPIC, "new"))
    creator = _Creator()
    api = MetadataApi(
        _config(), _cache(), topic_creator=cast(TopicCreator, creator), auth=AuthHelper(authorizer)
    )
    answer = asyncio.run(api.metadata(["new"], session=ALICE, allow_auto_topic_creation=True))
    assert [(t.name, t.error) for t in answer.topics] == [("new", ErrorCode.LEADER_NOT_AVAILABLE)]
    assert creator.created == ["new"]


# --- groups ---------------------------------------------------------------------------------


class _Coordinator:
    """Records every call that reaches it."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def join_group(self, group_id: str, member_id: str, **_: Any) -> JoinResult:
        self.calls.append(f"join {group_id}")
        return JoinResult(ErrorCode.NONE, "m-1", generation_id=1)

    async def commit_offsets(
        self, group_id: str, member_id: str, generation_id: int, offsets: Any, instance: Any
    ) -> dict[tuple[str, int], ErrorCode]:
        self.calls.append(f"commit {group_id} {sorted(offsets)}")
        return dict.fromkeys(offsets, ErrorCode.NONE)

    def fetch_offsets(
        self,
        group_id: str,
        partitions: Iterable[tuple[str, int]] | None,
        *,
        require_stable: bool = False,
    ) -> tuple[ErrorCode, dict[tuple[str, int], Any], dict[tuple[str, int], ErrorCode]]:
        self.calls.append(f"fetch {group_id}")
        return ErrorCode.NONE, {("orders", 0): None, ("secret", 0): None}, {}

    def list_groups(self, states: Iterable[str] = ()) -> tuple[ErrorCode, list[Any]]:
        return ErrorCode.NONE, [("g", "consumer", "Stable"), ("hidden", "consumer", "Empty")]

    async def delete_groups(self, group_ids: Iterable[str]) -> dict[str, ErrorCode]:
        ids = list(group_ids)
        self.calls.append(f"delete {ids}")
        return dict.fromkeys(ids, ErrorCode.NONE)


def _groups(authorizer: FakeAuthorizer) -> tuple[GroupApi, _Coordinator]:
    coordinator = _Coordinator()
    api = GroupApi(
        cast(GroupCoordinator, coordinator),
        _cache("orders", "secret"),
        cast(TopicCreator, _Creator()),
        AuthHelper(authorizer),
    )
    return api, coordinator


def test_a_refused_group_request_reaches_no_coordinator() -> None:
    api, coordinator = _groups(FakeAuthorizer())

    async def requests() -> list[Any]:
        join = await api.join_group(
            "g",
            "",
            client_id="c",
            client_host="/h",
            session_timeout_ms=10_000,
            rebalance_timeout_ms=10_000,
            protocol_type="consumer",
            protocols=[],
            session=ALICE,
        )
        offsets: Any = {("orders", 0): None}
        commit = await api.commit_offsets("g", "m", 1, offsets, session=ALICE)
        found = await api.find_coordinator("g", session=ALICE)
        return [join, commit, found, api.fetch_offsets("g", None, session=ALICE)]

    join, commit, found, fetched = asyncio.run(requests())
    assert join.error == ErrorCode.GROUP_AUTHORIZATION_FAILED
    assert commit == {("orders", 0): ErrorCode.GROUP_AUTHORIZATION_FAILED}
    assert found.error == ErrorCode.GROUP_AUTHORIZATION_FAILED
    assert fetched[0] == ErrorCode.GROUP_AUTHORIZATION_FAILED
    assert coordinator.calls == []
    assert api.heartbeat("g", "m", 1, session=ALICE) == ErrorCode.GROUP_AUTHORIZATION_FAILED


def test_offsets_need_the_group_then_each_topic() -> None:
    authorizer = FakeAuthorizer(
        (Op.READ, R.GROUP, "g"),
        (Op.DESCRIBE, R.GROUP, "g"),
        (Op.READ, R.TOPIC, "orders"),
        (Op.DESCRIBE, R.TOPIC, "orders"),
    )
    api, coordinator = _groups(authorizer)
    offsets: Any = {("orders", 0): None, ("secret", 0): None}
    committed = asyncio.run(api.commit_offsets("g", "m", 1, offsets, session=ALICE))
    assert committed == {
        ("secret", 0): ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        ("orders", 0): ErrorCode.NONE,
    }
    assert coordinator.calls == ["commit g [('orders', 0)]"]  # the secret offset is not stored
    # all partitions: the topic it may not Describe is left out; named: refused in place
    code, every, refused = api.fetch_offsets("g", None, session=ALICE)
    assert (code, list(every), refused) == (ErrorCode.NONE, [("orders", 0)], {})
    code, named, refused = api.fetch_offsets("g", [("orders", 0), ("secret", 0)], session=ALICE)
    assert refused == {("secret", 0): ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    assert named == {("orders", 0): None, ("secret", 0): None}  # nothing of the secret one


def test_list_and_delete_groups() -> None:
    authorizer = FakeAuthorizer((Op.DESCRIBE, R.GROUP, "g"), (Op.DELETE, R.GROUP, "g"))
    api, coordinator = _groups(authorizer)
    assert api.list_groups(session=ALICE) == (ErrorCode.NONE, [("g", "consumer", "Stable")])
    authorizer.granted.add((Op.DESCRIBE, R.CLUSTER, CLUSTER_NAME))
    assert len(api.list_groups(session=ALICE)[1]) == 2  # Describe on the cluster lists all
    deleted = asyncio.run(api.delete_groups(["hidden", "g"], session=ALICE))
    assert deleted == {"hidden": ErrorCode.GROUP_AUTHORIZATION_FAILED, "g": ErrorCode.NONE}
    assert coordinator.calls == ["delete ['g']"]


# --- admin and the controller's requests ----------------------------------------------------


class _Controller:
    is_active = True

    def __init__(self) -> None:
        self.created: list[str] = []

    def create_topics(
        self, topics: Sequence[NewTopic], *, validate_only: bool = False
    ) -> concurrent.futures.Future[Any]:
        self.created += [t.name for t in topics]
        done: concurrent.futures.Future[Any] = concurrent.futures.Future()
        done.set_exception(AssertionError("not reached in these tests"))
        return done


class _NoZooKeeper:
    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"ZooKeeper read {name} for a refused request")


def test_refused_admin_requests_reach_neither_controller_nor_zookeeper(tmp_path: Path) -> None:
    controller = _Controller()
    admin = TopicAdmin(
        _config(),
        cast(Any, controller),
        cast(Any, _NoZooKeeper()),
        auth=AuthHelper(FakeAuthorizer()),
    )

    async def requests() -> list[Any]:
        return [
            await admin.create_topics([NewTopic("t", 1, 1)], session=ALICE),
            await admin.delete_topics(["t"], session=ALICE),
            await admin.describe_configs(
                [ConfigResource(2, "t"), ConfigResource(4, "1")], session=ALICE
            ),
            await admin.incremental_alter_configs(
                [AlterConfigsResource(2, "t", [AlterableConfig("retention.ms", 0, "1")])],
                session=ALICE,
            ),
            await admin.elect_leaders(0, None, session=ALICE),
        ]

    created, deleted, described, altered, elected = asyncio.run(requests())
    assert [r.error_code for r in created] == [ErrorCode.TOPIC_AUTHORIZATION_FAILED]
    assert [r.error_code for r in deleted] == [ErrorCode.TOPIC_AUTHORIZATION_FAILED]
    assert [r.error_code for r in described] == [
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    ]
    assert [r.error_code for r in altered] == [ErrorCode.TOPIC_AUTHORIZATION_FAILED]
    assert elected.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert controller.created == []


def test_controller_requests_need_cluster_action() -> None:
    fence = ControllerFence(
        cast(Any, _NoZooKeeper()),
        broker_id=1,
        broker_epoch=lambda: 5,
        auth=AuthHelper(FakeAuthorizer()),
    )
    refusal = fence.authorize(ALICE, "LeaderAndIsr")
    assert refusal is not None and refusal.error == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    allowed = ControllerFence(
        cast(Any, _NoZooKeeper()),
        broker_id=1,
        broker_epoch=lambda: 5,
        auth=AuthHelper(FakeAuthorizer((Op.CLUSTER_ACTION, R.CLUSTER, CLUSTER_NAME))),
    )
    assert allowed.authorize(ALICE, "LeaderAndIsr") is None


class _Epochs:
    def __init__(self) -> None:
        self.asked: list[str] = []

    async def offsets_for_leader_epoch(
        self, request: OffsetsForLeaderEpochRequest
    ) -> list[EpochEndOffset]:
        self.asked += [p.topic for p in request.partitions]
        return [
            EpochEndOffset(p.topic, p.partition, ErrorCode.NONE, leader_epoch=1, end_offset=9)
            for p in request.partitions
        ]


def test_offsets_for_leader_epoch_takes_cluster_action_or_describe() -> None:
    request = OffsetsForLeaderEpochRequest(
        -1, [OffsetForLeaderPartition("a", 0, 1), OffsetForLeaderPartition("b", 0, 1)]
    )
    for granted, answered in (
        ((Op.DESCRIBE, R.TOPIC, "b"), ["b"]),
        ((Op.CLUSTER_ACTION, R.CLUSTER, CLUSTER_NAME), ["a", "b"]),
    ):
        epochs = _Epochs()
        api = DataApi(
            cast(ReplicaManager, epochs),
            cast(ProducerIdManager, None),
            AuthHelper(FakeAuthorizer(granted)),
        )
        results = asyncio.run(api.offsets_for_leader_epoch(request, ALICE))
        assert epochs.asked == answered
        assert [r.error_code for r in results] == [
            ErrorCode.NONE if t in answered else ErrorCode.TOPIC_AUTHORIZATION_FAILED
            for t in ("a", "b")
        ]


class _Records:
    def __init__(self) -> None:
        self.deleted: list[str] = []

    async def delete_records(
        self, partitions: Sequence[DeleteRecordsPartition], timeout_ms: int
    ) -> list[DeleteRecordsPartitionResult]:
        self.deleted += [p.topic for p in partitions]
        return [DeleteRecordsPartitionResult(p.topic, p.partition, 5, 0) for p in partitions]


class _CreatingController(_Controller):
    def create_topics(
        self, topics: Sequence[NewTopic], *, validate_only: bool = False
    ) -> concurrent.futures.Future[Any]:
        self.created += [t.name for t in topics]
        done: concurrent.futures.Future[Any] = concurrent.futures.Future()
        done.set_result({t.name: CreateTopicResult(ErrorCode.NONE, "", "id", 1, 1) for t in topics})
        return done


def test_delete_records_and_create_topics_per_topic() -> None:
    records, controller = _Records(), _CreatingController()
    authorizer = FakeAuthorizer(
        (Op.DELETE, R.TOPIC, "b"),
        (Op.CREATE, R.TOPIC, "shown"),
        (Op.CREATE, R.TOPIC, "hidden"),
        (Op.DESCRIBE_CONFIGS, R.TOPIC, "shown"),
    )
    admin = TopicAdmin(
        _config(),
        cast(Any, controller),
        cast(Any, _NoZooKeeper()),
        cast(ReplicaManager, records),
        auth=AuthHelper(authorizer),
    )

    async def requests() -> list[Any]:
        return [
            await admin.delete_records(
                [DeleteRecordsPartition("a", 0, 1), DeleteRecordsPartition("b", 0, 1)],
                1000,
                session=ALICE,
            ),
            await admin.create_topics(
                [NewTopic("shown", 1, 1), NewTopic("hidden", 1, 1), NewTopic("refused", 1, 1)],
                session=ALICE,
            ),
        ]

    deleted, created = asyncio.run(requests())
    assert [(r.topic, r.error_code) for r in deleted] == [
        ("a", ErrorCode.TOPIC_AUTHORIZATION_FAILED),
        ("b", ErrorCode.NONE),
    ]
    assert records.deleted == ["b"]
    assert controller.created == ["shown", "hidden"]
    by_name = {r.name: r for r in created}
    assert by_name["refused"].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    # created, but its configs are shown only with DescribeConfigs on it
    assert by_name["shown"].configs and by_name["shown"].configs_authorized
    assert by_name["hidden"].error_code == ErrorCode.NONE
    assert not by_name["hidden"].configs and not by_name["hidden"].configs_authorized


def test_describe_groups_answers_each_groups_operations() -> None:
    authorizer = FakeAuthorizer((Op.DESCRIBE, R.GROUP, "g"), (Op.READ, R.GROUP, "g"))
    api, _ = _groups(authorizer)
    coordinator = cast(Any, api.coordinator)
    coordinator.describe_group = lambda group_id: (ErrorCode.NONE, None)
    described = api.describe_groups(["g", "h"], session=ALICE, include_authorized_operations=True)
    assert [(d.group_id, d.error, d.authorized_operations) for d in described] == [
        ("g", ErrorCode.NONE, (1 << Op.READ) | (1 << Op.DESCRIBE)),
        ("h", ErrorCode.GROUP_AUTHORIZATION_FAILED, AUTHORIZED_OPERATIONS_OMITTED),
    ]
