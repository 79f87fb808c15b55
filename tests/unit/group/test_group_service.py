"""GroupService: FindCoordinator (creating __consumer_offsets) and the request/response mapping,
with a fake ZooKeeper and the in-memory offsets log."""

from __future__ import annotations

import asyncio
from typing import Any

from minikafka.broker.config import BrokerConfig
from minikafka.broker.group.coordinator import GroupConfig, GroupCoordinator, partition_for
from minikafka.broker.server.core.groups import GroupApi
from minikafka.broker.server.core.topic_creation import TopicCreator
from minikafka.broker.server.group_service import GroupService
from minikafka.broker.server.metadata_cache import MetadataCache
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto.cluster_state import Versioned
from minikafka.proto.errors import ErrorCode
from minikafka.zk.zk_data import BrokerRegistration, TopicAssignment
from tests.unit.group.test_coordinator import FakeOffsetsLog, FakeTimers, run


class FakeZk:
    def __init__(self) -> None:
        self.topics: dict[str, tuple[TopicAssignment, dict[str, str]]] = {}

    def get_topic(self, topic: str) -> Versioned[TopicAssignment] | None:
        found = self.topics.get(topic)
        return None if found is None else Versioned(found[0], 0)

    def get_all_topics(self) -> list[str]:
        return list(self.topics)

    def get_live_brokers(self) -> list[BrokerRegistration]:
        return [BrokerRegistration(b, ()) for b in (1, 2)]

    def create_topic(
        self, assignment: TopicAssignment, config: dict[str, str] | None = None
    ) -> None:
        self.topics[assignment.topic] = (assignment, dict(config or {}))


class FakeContext:
    def peer(self) -> str:
        return "ipv4:127.0.0.1:50000"


def _config(tmp: str) -> BrokerConfig:
    return BrokerConfig.load(
        overrides=[
            "broker.id=1",
            f"log.dirs={tmp}",
            "zookeeper.connect=127.0.0.1:2181",
            "offsets.topic.num.partitions=3",
        ],
        environ={},
    )


def test_group_config_from_broker_config(tmp_path: Any) -> None:
    config = GroupConfig.from_broker_config(_config(str(tmp_path)))
    assert config.offsets_topic_num_partitions == 3
    assert config.group_initial_rebalance_delay_ms == 3_000
    assert config.group_min_session_timeout_ms == 6_000
    assert config.offsets_commit_timeout_ms == 5_000


def _offsets_metadata(leader: int) -> pb.UpdateMetadataRequest:
    request = pb.UpdateMetadataRequest(controller_id=1, controller_epoch=1, broker_epoch=-1)
    for broker_id in (1, 2):
        request.live_brokers.add(id=broker_id, host="127.0.0.1", port=9090 + broker_id)
    for topic, partition in [("__consumer_offsets", p) for p in range(3)] + [("t", 0)]:
        request.partition_states.add(
            topic_name=topic,
            topic_id="AAAAAAAAAAAAAAAAAAAAAQ" if topic == "__consumer_offsets" else "",
            partition_index=partition,
            controller_epoch=1,
            leader=leader,
            leader_epoch=0,
            isr=[1, 2],
            partition_epoch=0,
            replicas=[1, 2],
        )
    return request


def test_find_coordinator_creates_the_offsets_topic_then_answers_its_leader(tmp_path: Any) -> None:
    async def scenario() -> None:
        config = _config(str(tmp_path))
        cache = MetadataCache(1)
        zk = FakeZk()
        timers = FakeTimers()
        log = FakeOffsetsLog()
        log.epochs = {0: 0, 1: 0, 2: 0}
        coordinator = GroupCoordinator(
            1,
            GroupConfig(offsets_topic_num_partitions=3, group_initial_rebalance_delay_ms=0),
            log,
            call_later=timers.call_later,
            time_ms=lambda: timers.now_ms,
        )
        service = GroupService(GroupApi(coordinator, cache, TopicCreator(config, zk)))
        context: Any = FakeContext()
        request = pb.FindCoordinatorRequest(key="billing")
        response = await service.FindCoordinator(request, context)
        assert response.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
        assignment, topic_config = zk.topics["__consumer_offsets"]
        assert len(assignment.partitions) == 3
        assert all(len(r) == 2 for r in assignment.partitions.values())  # 3 capped by 2 brokers
        assert topic_config["cleanup.policy"] == "compact"

        cache.update(_offsets_metadata(leader=2))
        response = await service.FindCoordinator(request, context)
        assert (response.error_code, response.node_id, response.port) == (0, 2, 9092)
        transactional = pb.FindCoordinatorRequest(key="t", key_type=1)
        assert (await service.FindCoordinator(transactional, context)).error_code == (
            ErrorCode.INVALID_REQUEST
        )

        # this broker leads every partition: join, sync, commit, fetch, describe
        for partition in range(3):
            coordinator.on_elected(partition)
        await asyncio.sleep(0)
        assert partition_for("billing", 3) in range(3)
        protocols = [pb.JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"s")]
        join = pb.JoinGroupRequest(
            group_id="billing",
            session_timeout_ms=10_000,
            rebalance_timeout_ms=10_000,
            protocol_type="consumer",
            protocols=protocols,
            client_id="c",
        )
        first = await service.JoinGroup(join, context)
        assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
        join.member_id = first.member_id
        task = asyncio.ensure_future(service.JoinGroup(join, context))
        await timers.advance(0)
        joined = await task
        assert joined.error_code == 0 and joined.leader == first.member_id
        assert [m.metadata for m in joined.members] == [b"s"]
        sync = pb.SyncGroupRequest(
            group_id="billing",
            generation_id=joined.generation_id,
            member_id=joined.member_id,
            assignments=[
                pb.SyncGroupRequest.SyncGroupRequestAssignment(
                    member_id=joined.member_id, assignment=b"A"
                )
            ],
        )
        assert (await service.SyncGroup(sync, context)).assignment == b"A"
        commit = pb.OffsetCommitRequest(
            group_id="billing",
            generation_id=joined.generation_id,
            member_id=joined.member_id,
            topics=[
                pb.OffsetCommitRequest.OffsetCommitRequestTopic(
                    name="t",
                    partitions=[
                        pb.OffsetCommitRequest.OffsetCommitRequestPartition(
                            partition_index=0, committed_offset=17, committed_leader_epoch=-1
                        )
                    ],
                )
            ],
        )
        committed = await service.OffsetCommit(commit, context)
        assert committed.topics[0].partitions[0].error_code == 0
        # A partition the metadata does not know is refused, as Kafka does; the rest is stored.
        commit.topics[0].partitions.add(partition_index=1, committed_offset=9)
        commit.topics.add(name="gone").partitions.add(partition_index=0, committed_offset=9)
        committed = await service.OffsetCommit(commit, context)
        assert {
            (t.name, p.partition_index): p.error_code
            for t in committed.topics
            for p in t.partitions
        } == {
            ("t", 0): ErrorCode.NONE,
            ("t", 1): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ("gone", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        }
        assert list(coordinator.fetch_offsets("billing", None)[1]) == [("t", 0)]
        fetched = await service.OffsetFetch(
            pb.OffsetFetchRequest(
                group_id="billing",
                topics=[
                    pb.OffsetFetchRequest.OffsetFetchRequestTopic(
                        name="t", partition_indexes=[0, 1]
                    )
                ],
            ),
            context,
        )
        assert [(p.partition_index, p.committed_offset) for p in fetched.topics[0].partitions] == [
            (0, 17),
            (1, -1),
        ]
        described = await service.DescribeGroups(
            pb.DescribeGroupsRequest(groups=["billing", "unknown"]), context
        )
        billing, unknown = described.groups
        assert (billing.group_state, billing.protocol_data) == ("Stable", "range")
        assert billing.members[0].client_host == "/127.0.0.1"
        assert billing.members[0].member_assignment == b"A"
        assert unknown.group_state == "Dead"
        listed = await service.ListGroups(pb.ListGroupsRequest(), context)
        assert [(g.group_id, g.group_state) for g in listed.groups] == [("billing", "Stable")]
        left = await service.LeaveGroup(
            pb.LeaveGroupRequest(
                group_id="billing",
                members=[pb.LeaveGroupRequest.MemberIdentity(member_id=joined.member_id)],
            ),
            context,
        )
        assert left.members[0].error_code == 0
        deleted = await service.DeleteGroups(
            pb.DeleteGroupsRequest(groups_names=["billing"]), context
        )
        assert deleted.results[0].error_code == 0

    run(scenario)
