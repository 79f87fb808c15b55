"""AdminClient's group, offset and record calls against in-process fake brokers (gRPC)."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest

from minikafka.client.admin import EARLIEST, LATEST, AdminClient, ListOffsetsResultInfo
from minikafka.client.consumer.assignors import Assignment
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.common import OffsetAndMetadata, TopicPartition
from minikafka.proto.errors import ErrorCode, KafkaError

TOPIC_LEADERS = {"t": [0, 1]}  # partition -> leader


class FakeBroker(pb_grpc.MetadataServicer, pb_grpc.GroupServicer, pb_grpc.DataServicer,
                 pb_grpc.AdminServicer):  # fmt: skip
    def __init__(self, cluster: FakeCluster, broker_id: int) -> None:
        self.cluster = cluster
        self.broker_id = broker_id
        self.requests: list[Any] = []

    def DescribeCluster(self, request: Any, context: Any) -> pb.DescribeClusterResponse:
        return pb.DescribeClusterResponse(
            cluster_id="fake",
            controller_id=0,
            brokers=[
                pb.DescribeClusterResponse.DescribeClusterBroker(
                    broker_id=b, host="127.0.0.1", port=port
                )
                for b, port in self.cluster.ports.items()
            ],
        )

    def Metadata(self, request: Any, context: Any) -> pb.MetadataResponse:
        response = pb.MetadataResponse(cluster_id="fake", controller_id=0)
        for b, port in self.cluster.ports.items():
            response.brokers.add(node_id=b, host="127.0.0.1", port=port)
        for t in request.topics:
            if t.name not in TOPIC_LEADERS:
                response.topics.add(name=t.name, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                continue
            topic = response.topics.add(name=t.name)
            for p, leader in enumerate(self.cluster.leaders):
                topic.partitions.add(partition_index=p, leader_id=leader)
        return response

    def FindCoordinator(self, request: Any, context: Any) -> pb.FindCoordinatorResponse:
        if self.cluster.coordinator_unavailable > 0:
            self.cluster.coordinator_unavailable -= 1
            return pb.FindCoordinatorResponse(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
        c = self.cluster.coordinator
        return pb.FindCoordinatorResponse(node_id=c, host="127.0.0.1", port=self.cluster.ports[c])

    def _not_coordinator(self) -> bool:
        if self.broker_id != self.cluster.coordinator:
            return True
        if self.cluster.moves:  # answer NOT_COORDINATOR once and move the group
            self.cluster.moves -= 1
            self.cluster.coordinator = (self.cluster.coordinator + 1) % 3
            return True
        return False

    def DescribeGroups(self, request: Any, context: Any) -> pb.DescribeGroupsResponse:
        self.requests.append(request)
        response = pb.DescribeGroupsResponse()
        for g in request.groups:
            if self._not_coordinator():
                response.groups.add(group_id=g, error_code=ErrorCode.NOT_COORDINATOR)
                continue
            group = response.groups.add(
                group_id=g,
                group_state="Stable",
                protocol_type="consumer",
                protocol_data="range",
            )
            group.members.add(
                member_id="m-1",
                client_id="c-1",
                client_host="/127.0.0.1",
                member_assignment=Assignment({"t": [1, 0]}).encode(),
            )
            group.members.add(member_id="m-2", client_id="c-2", client_host="/127.0.0.1")
        return response

    def ListGroups(self, request: Any, context: Any) -> pb.ListGroupsResponse:
        response = pb.ListGroupsResponse()
        response.groups.add(group_id=f"g{self.broker_id}", protocol_type="consumer",
                            group_state="Stable")  # fmt: skip
        if self.broker_id == 2:
            response.groups.add(group_id="admin-only", protocol_type="", group_state="Empty")
        return response

    def OffsetFetch(self, request: Any, context: Any) -> pb.OffsetFetchResponse:
        self.requests.append(request)
        if self._not_coordinator():
            return pb.OffsetFetchResponse(error_code=ErrorCode.NOT_COORDINATOR)
        response = pb.OffsetFetchResponse()
        topic = response.topics.add(name="t")
        topic.partitions.add(partition_index=0, committed_offset=5, committed_leader_epoch=2,
                             metadata="m")  # fmt: skip
        topic.partitions.add(partition_index=1, committed_offset=-1, committed_leader_epoch=-1)
        return response

    def OffsetCommit(self, request: Any, context: Any) -> pb.OffsetCommitResponse:
        self.requests.append(request)
        response = pb.OffsetCommitResponse()
        code = ErrorCode.NOT_COORDINATOR if self._not_coordinator() else ErrorCode.NONE
        for t in request.topics:
            topic = response.topics.add(name=t.name)
            for p in t.partitions:
                topic.partitions.add(partition_index=p.partition_index, error_code=code)
        return response

    def DeleteGroups(self, request: Any, context: Any) -> pb.DeleteGroupsResponse:
        response = pb.DeleteGroupsResponse()
        for g in request.groups_names:
            code = ErrorCode.NON_EMPTY_GROUP if g == "busy" else ErrorCode.NONE
            response.results.add(group_id=g, error_code=code)
        return response

    def ListOffsets(self, request: Any, context: Any) -> pb.ListOffsetsResponse:
        self.requests.append(request)
        response = pb.ListOffsetsResponse()
        for t in request.topics:
            topic = response.topics.add(name=t.name)
            for p in t.partitions:
                if self.cluster.leaders[p.partition_index] != self.broker_id:
                    topic.partitions.add(partition_index=p.partition_index,
                                         error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER)  # fmt: skip
                    continue
                offset = {EARLIEST: 0, LATEST: 100}.get(p.timestamp, 40)
                topic.partitions.add(partition_index=p.partition_index, offset=offset,
                                     timestamp=-1, leader_epoch=3)  # fmt: skip
        return response

    def DeleteRecords(self, request: Any, context: Any) -> pb.DeleteRecordsResponse:
        response = pb.DeleteRecordsResponse()
        for t in request.topics:
            topic = response.topics.add(name=t.name)
            for p in t.partitions:
                code = ErrorCode.OFFSET_OUT_OF_RANGE if p.offset > 100 else ErrorCode.NONE
                topic.partitions.add(partition_index=p.partition_index, error_code=code,
                                     low_watermark=p.offset)  # fmt: skip
        return response

    def IncrementalAlterConfigs(
        self, request: Any, context: Any
    ) -> pb.IncrementalAlterConfigsResponse:
        self.requests.append(request)
        response = pb.IncrementalAlterConfigsResponse()
        for r in request.resources:
            bad = any(c.name == "retention.ms" and c.value == "soon" for c in r.configs)
            response.responses.add(
                resource_type=r.resource_type,
                resource_name=r.resource_name,
                error_code=ErrorCode.INVALID_CONFIG if bad else ErrorCode.NONE,
                error_message="Invalid value soon for configuration retention.ms" if bad else "",
            )
        return response


class FakeCluster:
    def __init__(self, groups: bool = True) -> None:
        self.coordinator = 1
        self.coordinator_unavailable = 0
        self.moves = 0
        self.leaders = list(TOPIC_LEADERS["t"])
        self.ports: dict[int, int] = {}
        self.brokers: list[FakeBroker] = []
        self.servers: list[grpc.Server] = []
        for broker_id in range(3):
            broker = FakeBroker(self, broker_id)  # type: ignore[abstract]  # rest: UNIMPLEMENTED
            server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
            pb_grpc.add_MetadataServicer_to_server(broker, server)
            if groups:
                pb_grpc.add_GroupServicer_to_server(broker, server)
            pb_grpc.add_DataServicer_to_server(broker, server)
            pb_grpc.add_AdminServicer_to_server(broker, server)
            self.ports[broker_id] = server.add_insecure_port("127.0.0.1:0")
            server.start()
            self.brokers.append(broker)
            self.servers.append(server)

    def admin(self) -> AdminClient:
        return AdminClient(f"127.0.0.1:{self.ports[0]}", request_timeout_ms=3000,
                           retry_backoff_ms=10)  # fmt: skip

    def stop(self) -> None:
        for server in self.servers:
            server.stop(None)


@pytest.fixture
def cluster() -> Iterator[FakeCluster]:
    cluster = FakeCluster()
    yield cluster
    cluster.stop()


def test_find_coordinator_waits_while_it_is_not_available(cluster: FakeCluster) -> None:
    cluster.coordinator_unavailable = 2
    with cluster.admin() as admin:
        node = admin.find_coordinator("g")
    assert (node.id, node.port) == (1, cluster.ports[1])


def test_describe_groups_follows_the_coordinator_and_decodes_assignments(
    cluster: FakeCluster,
) -> None:
    cluster.moves = 1
    with cluster.admin() as admin:
        described = admin.describe_groups(["g"])["g"]
    assert described.coordinator.id == 2
    assert (described.state, described.partition_assignor) == ("Stable", "range")
    assert not described.is_simple_consumer_group
    m1, m2 = described.members
    assert (m1.member_id, m1.client_id, m1.host) == ("m-1", "c-1", "/127.0.0.1")
    assert m1.assignment == (TopicPartition("t", 1), TopicPartition("t", 0))
    assert m2.assignment == ()


def test_list_groups_asks_every_broker(cluster: FakeCluster) -> None:
    with cluster.admin() as admin:
        listed = admin.list_groups()
    assert [(g.group_id, g.state, g.is_simple_consumer_group) for g in listed] == [
        ("admin-only", "Empty", True),
        ("g0", "Stable", False),
        ("g1", "Stable", False),
        ("g2", "Stable", False),
    ]


def test_committed_offsets_leave_out_partitions_without_one(cluster: FakeCluster) -> None:
    with cluster.admin() as admin:
        offsets = admin.list_consumer_group_offsets("g")
        admin.list_consumer_group_offsets("g", [TopicPartition("t", 1)])
    assert offsets == {TopicPartition("t", 0): OffsetAndMetadata(5, "m", 2)}
    everything, some = cluster.brokers[1].requests
    assert everything.all_topics and not everything.topics
    assert not some.all_topics
    assert [(t.name, list(t.partition_indexes)) for t in some.topics] == [("t", [1])]


def test_alter_offsets_commits_from_outside_the_group(cluster: FakeCluster) -> None:
    cluster.moves = 1
    with cluster.admin() as admin:
        results = admin.alter_consumer_group_offsets(
            "g", {TopicPartition("t", 0): 7, TopicPartition("t", 1): OffsetAndMetadata(9, "x", 4)}
        )
    assert results == {TopicPartition("t", 0): None, TopicPartition("t", 1): None}
    request = cluster.brokers[2].requests[-1]
    assert (request.generation_id, request.member_id) == (-1, "")
    parts = {p.partition_index: p for p in request.topics[0].partitions}
    assert (parts[0].committed_offset, parts[0].committed_leader_epoch) == (7, -1)
    assert (parts[1].committed_offset, parts[1].committed_metadata) == (9, "x")
    assert parts[1].committed_leader_epoch == 4


def test_delete_groups_per_group_errors(cluster: FakeCluster) -> None:
    with cluster.admin() as admin:
        results = admin.delete_groups(["idle", "busy"])
    assert results["idle"] is None
    error = results["busy"]
    assert isinstance(error, KafkaError) and error.code == ErrorCode.NON_EMPTY_GROUP


def test_list_offsets_goes_to_each_leader_and_follows_a_move(cluster: FakeCluster) -> None:
    with cluster.admin() as admin:
        specs = {TopicPartition("t", 0): LATEST, TopicPartition("t", 1): EARLIEST}
        assert admin.list_offsets(specs) == {
            TopicPartition("t", 0): ListOffsetsResultInfo(100, -1, 3),
            TopicPartition("t", 1): ListOffsetsResultInfo(0, -1, 3),
        }
        assert len(cluster.brokers[0].requests) == 1 and len(cluster.brokers[1].requests) == 1
        # metadata says broker 0 still leads partition 1, which has moved: asked again
        cluster.leaders = [0, 0]
        assert admin.list_offsets({TopicPartition("t", 1): 1234})[TopicPartition("t", 1)] == (
            ListOffsetsResultInfo(40, -1, 3)
        )
        with pytest.raises(KafkaError) as unknown:
            admin.list_offsets({TopicPartition("nope", 0): LATEST})
        assert unknown.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        with pytest.raises(KafkaError) as no_partition:
            admin.list_offsets({TopicPartition("t", 7): LATEST})
        assert no_partition.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_delete_records_returns_low_watermarks_or_raises(cluster: FakeCluster) -> None:
    with cluster.admin() as admin:
        assert admin.delete_records({TopicPartition("t", 0): 10, TopicPartition("t", 1): -1}) == {
            TopicPartition("t", 0): 10,
            TopicPartition("t", 1): -1,
        }
        with pytest.raises(KafkaError) as error:
            admin.delete_records({TopicPartition("t", 0): 1000})
        assert error.value.code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_brokers_without_the_group_service_give_a_clear_error() -> None:
    cluster = FakeCluster(groups=False)
    try:
        with cluster.admin() as admin, pytest.raises(KafkaError) as error:
            admin.describe_groups(["g"])
        assert error.value.code == ErrorCode.UNSUPPORTED_VERSION
    finally:
        cluster.stop()


def test_incremental_alter_configs_sets_and_deletes(cluster: FakeCluster) -> None:
    with cluster.admin() as admin:
        admin.incremental_alter_configs("t", {"retention.ms": "1000", "cleanup.policy": None})
        with pytest.raises(KafkaError) as error:
            admin.incremental_alter_configs("t", {"retention.ms": "soon"})
    assert error.value.code == ErrorCode.INVALID_CONFIG
    request = next(
        r for b in cluster.brokers for r in b.requests
        if isinstance(r, pb.IncrementalAlterConfigsRequest)
    )  # fmt: skip
    (resource,) = request.resources
    assert (resource.resource_type, resource.resource_name) == (pb.CONFIG_RESOURCE_TYPE_TOPIC, "t")
    ops = {c.name: (c.config_operation, c.value if c.HasField("value") else None)
           for c in resource.configs}  # fmt: skip
    assert ops == {
        "retention.ms": (pb.CONFIG_OPERATION_SET, "1000"),
        "cleanup.policy": (pb.CONFIG_OPERATION_DELETE, None),
    }
