"""AdminClient routing against in-process fake brokers (gRPC on 127.0.0.1, no ZooKeeper)."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest

from minikafka.client.admin import AdminClient, ElectionType, NewTopic
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode, KafkaError, RequestTimedOutError


class FakeBroker(pb_grpc.MetadataServicer, pb_grpc.AdminServicer):
    """Answers Metadata/DescribeCluster from shared state; Admin as the controller would."""

    def __init__(self, cluster: FakeCluster, broker_id: int) -> None:
        self.cluster = cluster
        self.broker_id = broker_id
        self.calls: list[str] = []

    def DescribeCluster(self, request: Any, context: Any) -> pb.DescribeClusterResponse:
        self.calls.append("DescribeCluster")
        return pb.DescribeClusterResponse(
            cluster_id="fake",
            controller_id=self.cluster.controller_id,
            brokers=[
                pb.DescribeClusterResponse.DescribeClusterBroker(
                    broker_id=b.broker_id, host="127.0.0.1", port=self.cluster.ports[b.broker_id]
                )
                for b in self.cluster.brokers
            ],
        )

    def Metadata(self, request: Any, context: Any) -> pb.MetadataResponse:
        self.calls.append("Metadata")
        response = pb.MetadataResponse(cluster_id="fake", controller_id=self.cluster.controller_id)
        names = [t.name for t in request.topics] or sorted(self.cluster.topics)
        for name in names:
            if name not in self.cluster.topics:
                response.topics.add(name=name, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                continue
            topic = response.topics.add(name=name, topic_id="id-" + name)
            for p, replicas in enumerate(self.cluster.topics[name]):
                topic.partitions.add(
                    partition_index=p,
                    leader_id=replicas[0],
                    leader_epoch=0,
                    replica_nodes=replicas,
                    isr_nodes=replicas,
                )
        return response

    def CreateTopics(self, request: Any, context: Any) -> pb.CreateTopicsResponse:
        self.calls.append("CreateTopics")
        self.cluster.create_timeouts.append((request.timeout_ms, context.time_remaining()))
        response = pb.CreateTopicsResponse()
        for t in request.topics:
            if self.broker_id != self.cluster.controller_id:
                response.topics.add(name=t.name, error_code=ErrorCode.NOT_CONTROLLER)
            elif t.name in self.cluster.topics:
                response.topics.add(
                    name=t.name,
                    error_code=ErrorCode.TOPIC_ALREADY_EXISTS,
                    error_message=f"Topic '{t.name}' already exists.",
                )
            elif t.name in self.cluster.leaders_late:
                # created, but the broker's metadata did not learn its leaders in time
                self.cluster.topics[t.name] = [[self.broker_id]] * max(t.num_partitions, 1)
                response.topics.add(
                    name=t.name,
                    error_code=ErrorCode.REQUEST_TIMED_OUT,
                    error_message=f"Topic '{t.name}' was created, but ...",
                    num_partitions=-1,
                    replication_factor=-1,
                )
            else:
                self.cluster.topics[t.name] = [[self.broker_id]] * max(t.num_partitions, 1)
                response.topics.add(name=t.name, topic_id="id-" + t.name)
            if self.cluster.move_controller_after_create is not None:
                self.cluster.controller_id = self.cluster.move_controller_after_create
                self.cluster.move_controller_after_create = None
        return response

    def ElectLeaders(self, request: Any, context: Any) -> pb.ElectLeadersResponse:
        self.calls.append("ElectLeaders")
        if self.broker_id != self.cluster.controller_id:
            return pb.ElectLeadersResponse(error_code=ErrorCode.NOT_CONTROLLER)
        response = pb.ElectLeadersResponse()
        for tp in request.topic_partitions:
            result = response.replica_election_results.add(topic=tp.topic)
            for p in tp.partitions:
                code = ErrorCode.ELECTION_NOT_NEEDED if p == 0 else ErrorCode.NONE
                result.partition_result.add(partition_id=p, error_code=code)
        return response


class FakeCluster:
    def __init__(self, n: int) -> None:
        self.controller_id = 1
        self.move_controller_after_create: int | None = None
        self.topics: dict[str, list[list[int]]] = {}
        self.leaders_late: set[str] = set()  # CreateTopics answers these REQUEST_TIMED_OUT
        # (the request's timeout_ms, the call's seconds left) of each CreateTopics
        self.create_timeouts: list[tuple[int, float]] = []
        self.brokers: list[FakeBroker] = []
        self.ports: dict[int, int] = {}
        self.servers: list[grpc.Server] = []
        for broker_id in range(n):
            broker = FakeBroker(self, broker_id)  # type: ignore[abstract]  # the rest: UNIMPLEMENTED
            server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
            pb_grpc.add_MetadataServicer_to_server(broker, server)
            pb_grpc.add_AdminServicer_to_server(broker, server)
            self.ports[broker_id] = server.add_insecure_port("127.0.0.1:0")
            server.start()
            self.brokers.append(broker)
            self.servers.append(server)

    def address(self, broker_id: int) -> str:
        return f"127.0.0.1:{self.ports[broker_id]}"

    def stop(self) -> None:
        for server in self.servers:
            server.stop(None)


@pytest.fixture
def cluster() -> Iterator[FakeCluster]:
    cluster = FakeCluster(3)
    yield cluster
    cluster.stop()


def test_controller_requests_go_to_the_controller(cluster: FakeCluster) -> None:
    with AdminClient(cluster.address(0)) as admin:
        assert admin.create_topics([NewTopic("orders", 2, 1)]) == {"orders": None}
        errors = admin.create_topics([NewTopic("orders", 2, 1)])
    assert isinstance(errors["orders"], KafkaError)
    assert errors["orders"].code == ErrorCode.TOPIC_ALREADY_EXISTS
    assert errors["orders"].message == "Topic 'orders' already exists."
    assert cluster.brokers[1].calls.count("CreateTopics") == 2
    assert "CreateTopics" not in cluster.brokers[0].calls


def test_create_topics_asks_for_an_answer_before_the_call_times_out(
    cluster: FakeCluster,
) -> None:
    """The broker waits up to the request's timeout_ms for its metadata to know the new leaders:
    that is a little less than the call's own deadline, so its answer comes before the call
    gives up (a retry would then find the topic already there)."""
    with AdminClient(cluster.address(0)) as admin:
        assert admin.create_topics([NewTopic("orders", 2, 1)], timeout_ms=5000) == {"orders": None}
    ((asked_ms, remaining_s),) = cluster.create_timeouts
    assert 4000 < asked_ms <= remaining_s * 1000 - 100


def test_a_topic_created_without_its_leaders_known_in_time_is_a_timeout_not_retried(
    cluster: FakeCluster,
) -> None:
    """As Kafka's AdminClient (the topic's future fails with TimeoutException): the topic exists,
    so asking again would only be told TOPIC_ALREADY_EXISTS."""
    cluster.leaders_late.add("slow")
    with AdminClient(cluster.address(0), retry_backoff_ms=10) as admin:
        errors = admin.create_topics([NewTopic("slow", 1, 1), NewTopic("fast", 1, 1)])
    assert errors["fast"] is None
    assert isinstance(errors["slow"], RequestTimedOutError)
    assert errors["slow"].message == "Topic 'slow' was created, but ..."
    assert cluster.brokers[1].calls.count("CreateTopics") == 1
    assert "slow" in cluster.topics


def test_not_controller_refreshes_and_retries(cluster: FakeCluster) -> None:
    with AdminClient(cluster.address(0), retry_backoff_ms=10) as admin:
        admin.describe_cluster()  # caches controller 1
        cluster.controller_id = 2
        assert admin.create_topics([NewTopic("t", 1, 1)]) == {"t": None}
    assert cluster.brokers[1].calls.count("CreateTopics") == 1  # answered NOT_CONTROLLER
    assert cluster.brokers[2].calls.count("CreateTopics") == 1
    assert cluster.topics["t"] == [[2]]


def test_whole_request_not_controller_is_retried(cluster: FakeCluster) -> None:
    with AdminClient(cluster.address(0), retry_backoff_ms=10) as admin:
        admin.describe_cluster()
        cluster.controller_id = 0
        results = admin.elect_leaders(
            ElectionType.PREFERRED, [TopicPartition("t", 0), TopicPartition("t", 1)]
        )
    assert results[TopicPartition("t", 1)] is None
    not_needed = results[TopicPartition("t", 0)]
    assert not_needed is not None and not_needed.code == ErrorCode.ELECTION_NOT_NEEDED


def test_unreachable_bootstrap_server_falls_back_to_the_next(cluster: FakeCluster) -> None:
    cluster.servers[0].stop(None)
    with AdminClient([cluster.address(0), cluster.address(1)], retry_backoff_ms=10) as admin:
        description = admin.describe_cluster()
    assert description.controller_id == 1
    assert [b.id for b in description.brokers] == [0, 1, 2]


def test_timeout_names_the_last_problem(cluster: FakeCluster) -> None:
    cluster.controller_id = 7  # a controller nobody can reach
    with (
        AdminClient(cluster.address(0), request_timeout_ms=300, retry_backoff_ms=20) as admin,
        pytest.raises(RequestTimedOutError, match="no controller is known"),
    ):
        admin.create_topics([NewTopic("t")])


def test_describe_topics(cluster: FakeCluster) -> None:
    cluster.topics["b"] = [[0, 1], [1, 0]]
    cluster.topics["a"] = [[2]]
    with AdminClient(cluster.address(2)) as admin:
        assert admin.list_topics() == ["a", "b"]
        described = admin.describe_topics()
        assert list(described) == ["a", "b"]
        assert described["b"].replication_factor == 2
        assert [p.leader for p in described["b"].partitions] == [0, 1]
        with pytest.raises(KafkaError) as exc:
            admin.describe_topics(["missing"])
    assert exc.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_bad_bootstrap_servers_are_refused() -> None:
    with pytest.raises(KafkaError, match="expected host:port"):
        AdminClient("localhost")
    with pytest.raises(KafkaError, match="empty"):
        AdminClient(" , ")
