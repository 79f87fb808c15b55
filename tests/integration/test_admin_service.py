"""AdminService over gRPC, backed by a real KafkaController on a real ZooKeeper.

The controller's requests to brokers go to a fake BrokerChannels that answers every request
at once with success, so deletions complete without broker processes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import grpc
import pytest

from minikafka.broker.config import BrokerConfig
from minikafka.broker.server.admin_service import AdminService
from minikafka.broker.server.core.admin import TopicAdmin
from minikafka.broker.server.core.configs import (
    AlterableConfig,
    AlterConfigsResource,
    ConfigOperation,
    ConfigResourceType,
)
from minikafka.controller.config import ControllerConfig
from minikafka.controller.controller import KafkaController, NewTopic
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.common import EndPoint
from minikafka.proto.errors import ErrorCode
from minikafka.zk.zk_data import BrokerRegistration
from minikafka.zk.zk_store import ZkStore

pytestmark = pytest.mark.integration

_RESPONSES = {
    pb.LeaderAndIsrRequest: pb.LeaderAndIsrResponse,
    pb.UpdateMetadataRequest: pb.UpdateMetadataResponse,
    pb.StopReplicaRequest: pb.StopReplicaResponse,
}


class AnsweringChannels:
    def __init__(self) -> None:
        self.sent: list[tuple[int, Any]] = []

    def add_broker(self, broker_id: int, endpoint: EndPoint) -> None: ...

    def remove_broker(self, broker_id: int) -> None: ...

    def remove_all(self) -> None: ...

    def send(self, broker_id: int, request: Any, callback: Any = None) -> None:
        self.sent.append((broker_id, request))
        if callback is not None:
            callback(broker_id, request, _RESPONSES[type(request)]())

    def close(self) -> None: ...


class Node:
    """A controller and its broker registration (one session each)."""

    def __init__(self, zk_connect: str, broker_id: int) -> None:
        self.registration = ZkStore.connect(zk_connect, session_timeout_ms=6000)
        self.registration.ensure_paths()
        self.registration.register_broker(
            BrokerRegistration(broker_id, (EndPoint("PLAINTEXT", "127.0.0.1", 1),))
        )
        self.zk = ZkStore.connect(zk_connect, session_timeout_ms=6000)
        self.controller = KafkaController(
            self.zk,
            broker_id,
            ControllerConfig(auto_leader_rebalance_enable=False, num_partitions=2),
            AnsweringChannels(),
        )
        self.config = BrokerConfig(
            broker_id=broker_id,
            zookeeper_connect=zk_connect,
            num_partitions=2,
            explicit=frozenset({"num.partitions"}),
        )

    def close(self) -> None:
        self.controller.shutdown()
        self.zk.close()
        self.registration.close()


@pytest.fixture
def nodes(zk_connect: str) -> Iterator[list[Node]]:
    created = [Node(zk_connect, broker_id) for broker_id in (1, 2)]
    created[0].controller.startup()
    deadline = time.monotonic() + 10
    while not created[0].controller.is_active:
        assert time.monotonic() < deadline, "controller not elected"
        time.sleep(0.02)
    created[1].controller.startup()
    yield created
    for node in created:
        node.close()


async def _serve(node: Node) -> AsyncIterator[pb_grpc.AdminAsyncStub]:
    server = grpc.aio.server()
    pb_grpc.add_AdminServicer_to_server(
        AdminService(TopicAdmin(node.config, node.controller, node.zk)), server
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield pb_grpc.AdminStub(channel)
    finally:
        await channel.close()
        await server.stop(None)


def run(node: Node, scenario: Any) -> None:
    async def main() -> None:
        async for stub in _serve(node):
            await scenario(stub)

    asyncio.run(main())


def configs_of(result: Any) -> dict[str, tuple[str, int]]:
    return {c.name: (c.value, c.config_source) for c in result.configs}


def test_create_topics_checks_configs_and_duplicates(nodes: list[Node]) -> None:
    async def scenario(stub: pb_grpc.AdminAsyncStub) -> None:
        Topic = pb.CreateTopicsRequest.CreatableTopic
        response = await stub.CreateTopics(
            pb.CreateTopicsRequest(
                topics=[
                    Topic(name="good", num_partitions=-1, replication_factor=2,
                          configs={"retention.ms": "1000", "cleanup.policy": "compact"}),
                    Topic(name="bad-key", num_partitions=1, replication_factor=1,
                          configs={"no.such.key": "1"}),
                    Topic(name="bad-value", num_partitions=1, replication_factor=1,
                          configs={"min.insync.replicas": "0"}),
                    Topic(name="twice", num_partitions=1, replication_factor=1),
                    Topic(name="twice", num_partitions=1, replication_factor=1),
                    Topic(name="manual", num_partitions=-1, replication_factor=-1,
                          assignments=[
                              pb.CreateTopicsRequest.CreatableReplicaAssignment(
                                  partition_index=0, broker_ids=[2, 1]
                              )
                          ]),
                ],
                timeout_ms=5000,
            )
        )  # fmt: skip
        results = {t.name: t for t in response.topics}
        assert [t.name for t in response.topics] == [
            "good",
            "bad-key",
            "bad-value",
            "twice",
            "manual",
        ]
        good = results["good"]
        assert good.error_code == ErrorCode.NONE
        assert (good.num_partitions, good.replication_factor) == (2, 2)
        assert len(good.topic_id) == 22
        configs = configs_of(good)
        source = pb.ConfigSource
        assert configs["retention.ms"] == ("1000", source.CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG)
        assert configs["segment.bytes"][1] == source.CONFIG_SOURCE_DEFAULT_CONFIG
        assert results["bad-key"].error_code == ErrorCode.INVALID_CONFIG
        assert results["bad-value"].error_code == ErrorCode.INVALID_CONFIG
        assert results["twice"].error_code == ErrorCode.INVALID_REQUEST
        assert results["manual"].error_code == ErrorCode.NONE
        assert results["manual"].replication_factor == 2

        again = await stub.CreateTopics(
            pb.CreateTopicsRequest(topics=[Topic(name="good", num_partitions=1)])
        )
        assert again.topics[0].error_code == ErrorCode.TOPIC_ALREADY_EXISTS

    run(nodes[0], scenario)
    assert nodes[0].zk.get_topic_config("good") == {
        "cleanup.policy": "compact",
        "retention.ms": "1000",
    }
    state = nodes[0].zk.get_partition_state("manual", 0)
    assert state is not None and state.value.leader == 2


def test_a_standby_answers_not_controller(nodes: list[Node]) -> None:
    async def scenario(stub: pb_grpc.AdminAsyncStub) -> None:
        created = await stub.CreateTopics(
            pb.CreateTopicsRequest(
                topics=[pb.CreateTopicsRequest.CreatableTopic(name="x", num_partitions=1)]
            )
        )
        assert created.topics[0].error_code == ErrorCode.NOT_CONTROLLER
        deleted = await stub.DeleteTopics(pb.DeleteTopicsRequest(topic_names=["x"]))
        assert deleted.responses[0].error_code == ErrorCode.NOT_CONTROLLER
        grown = await stub.CreatePartitions(
            pb.CreatePartitionsRequest(
                topics=[pb.CreatePartitionsRequest.CreatePartitionsTopic(name="x", count=3)]
            )
        )
        assert grown.results[0].error_code == ErrorCode.NOT_CONTROLLER
        elected = await stub.ElectLeaders(pb.ElectLeadersRequest())
        assert elected.error_code == ErrorCode.NOT_CONTROLLER

    run(nodes[1], scenario)


def test_partitions_elections_and_deletion(nodes: list[Node]) -> None:
    async def scenario(stub: pb_grpc.AdminAsyncStub) -> None:
        await stub.CreateTopics(
            pb.CreateTopicsRequest(
                topics=[
                    pb.CreateTopicsRequest.CreatableTopic(
                        name="t", num_partitions=1, replication_factor=2
                    )
                ]
            )
        )
        grown = await stub.CreatePartitions(
            pb.CreatePartitionsRequest(
                topics=[pb.CreatePartitionsRequest.CreatePartitionsTopic(name="t", count=3)]
            )
        )
        assert grown.results[0].error_code == ErrorCode.NONE
        shrink = await stub.CreatePartitions(
            pb.CreatePartitionsRequest(
                topics=[pb.CreatePartitionsRequest.CreatePartitionsTopic(name="t", count=2)]
            )
        )
        assert shrink.results[0].error_code == ErrorCode.INVALID_PARTITIONS

        elected = await stub.ElectLeaders(
            pb.ElectLeadersRequest(
                election_type=pb.ElectionType.ELECTION_TYPE_PREFERRED,
                topic_partitions=[
                    pb.ElectLeadersRequest.TopicPartitions(topic="t", partitions=[0, 1, 2, 9])
                ],
            )
        )
        assert elected.error_code == ErrorCode.NONE
        [topic] = elected.replica_election_results
        codes = {p.partition_id: p.error_code for p in topic.partition_result}
        assert codes == {
            0: ErrorCode.ELECTION_NOT_NEEDED,
            1: ErrorCode.ELECTION_NOT_NEEDED,
            2: ErrorCode.ELECTION_NOT_NEEDED,
            9: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        }
        every = await stub.ElectLeaders(pb.ElectLeadersRequest())
        assert {p.partition_id for p in every.replica_election_results[0].partition_result} == {
            0,
            1,
            2,
        }

        deleted = await stub.DeleteTopics(
            pb.DeleteTopicsRequest(topic_names=["t", "missing"], timeout_ms=5000)
        )
        results = {r.name: r for r in deleted.responses}
        assert results["t"].error_code == ErrorCode.NONE
        assert len(results["t"].topic_id) == 22
        assert results["missing"].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    run(nodes[0], scenario)
    assert nodes[0].zk.get_topic("t") is None


def test_describe_and_alter_topic_configs(nodes: list[Node]) -> None:
    Op = pb.ConfigOperation
    SET, DELETE, APPEND = (
        Op.CONFIG_OPERATION_SET,
        Op.CONFIG_OPERATION_DELETE,
        Op.CONFIG_OPERATION_APPEND,
    )
    Alter = pb.IncrementalAlterConfigsRequest

    async def alter(
        stub: pb_grpc.AdminAsyncStub, *configs: Any, topic: str = "c", validate_only: bool = False
    ) -> Any:
        response = await stub.IncrementalAlterConfigs(
            Alter(
                resources=[
                    Alter.AlterConfigsResource(
                        resource_type=pb.ConfigResourceType.CONFIG_RESOURCE_TYPE_TOPIC,
                        resource_name=topic,
                        configs=list(configs),
                    )
                ],
                validate_only=validate_only,
            )
        )
        return response.responses[0]

    async def describe(stub: pb_grpc.AdminAsyncStub, kind: Any, name: str, *keys: str) -> Any:
        response = await stub.DescribeConfigs(
            pb.DescribeConfigsRequest(
                resources=[
                    pb.DescribeConfigsRequest.DescribeConfigsResource(
                        resource_type=kind, resource_name=name, configuration_keys=list(keys)
                    )
                ]
            )
        )
        return response.results[0]

    async def scenario(stub: pb_grpc.AdminAsyncStub) -> None:
        topic_type = pb.ConfigResourceType.CONFIG_RESOURCE_TYPE_TOPIC
        broker_type = pb.ConfigResourceType.CONFIG_RESOURCE_TYPE_BROKER
        await stub.CreateTopics(
            pb.CreateTopicsRequest(
                topics=[
                    pb.CreateTopicsRequest.CreatableTopic(
                        name="c",
                        num_partitions=1,
                        replication_factor=1,
                        configs={"retention.ms": "60000"},
                    )
                ]
            )
        )
        result = await alter(
            stub,
            Alter.AlterableConfig(name="cleanup.policy", config_operation=SET, value="compact"),
            Alter.AlterableConfig(name="cleanup.policy", config_operation=APPEND, value="delete"),
        )
        assert result.error_code == ErrorCode.INVALID_REQUEST  # one key twice
        result = await alter(
            stub,
            Alter.AlterableConfig(name="cleanup.policy", config_operation=APPEND, value="compact"),
            Alter.AlterableConfig(name="retention.ms", config_operation=DELETE),
            Alter.AlterableConfig(name="min.insync.replicas", config_operation=SET, value="2"),
        )
        assert result.error_code == ErrorCode.NONE, result
        bad = await alter(
            stub,
            Alter.AlterableConfig(name="segment.bytes", config_operation=Op.CONFIG_OPERATION_SET,
                                  value="1"),
        )  # fmt: skip
        assert bad.error_code == ErrorCode.INVALID_CONFIG
        unknown = await alter(
            stub,
            Alter.AlterableConfig(name="nope", config_operation=Op.CONFIG_OPERATION_SET, value="1"),
        )
        assert unknown.error_code == ErrorCode.INVALID_CONFIG
        dry = await alter(
            stub,
            Alter.AlterableConfig(name="retention.ms", config_operation=Op.CONFIG_OPERATION_SET,
                                  value="5"),
            validate_only=True,
        )  # fmt: skip
        assert dry.error_code == ErrorCode.NONE
        missing = await alter(
            stub,
            Alter.AlterableConfig(name="retention.ms", config_operation=Op.CONFIG_OPERATION_SET,
                                  value="5"),
            topic="missing",
        )  # fmt: skip
        assert missing.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

        described = await describe(stub, topic_type, "c")
        assert described.error_code == ErrorCode.NONE
        configs = configs_of(described)
        source = pb.ConfigSource
        assert configs["cleanup.policy"] == (
            "delete,compact",
            source.CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG,
        )
        assert configs["min.insync.replicas"] == ("2", source.CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG)
        assert configs["retention.ms"] == (str(7 * 24 * 3600 * 1000),
                                           source.CONFIG_SOURCE_DEFAULT_CONFIG)  # fmt: skip
        only = await describe(stub, topic_type, "c", "min.insync.replicas")
        assert [c.name for c in only.configs] == ["min.insync.replicas"]
        nope = await describe(stub, topic_type, "missing")
        assert nope.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

        broker = await describe(stub, broker_type, "1", "num.partitions", "broker.id")
        assert broker.error_code == ErrorCode.NONE
        by_name = {c.name: c for c in broker.configs}
        assert by_name["num.partitions"].value == "2"
        assert by_name["num.partitions"].config_source == source.CONFIG_SOURCE_STATIC_BROKER_CONFIG
        other = await describe(stub, broker_type, "7")
        assert other.error_code == ErrorCode.INVALID_REQUEST

    run(nodes[0], scenario)
    assert nodes[0].zk.get_topic_config("c") == {
        "cleanup.policy": "delete,compact",
        "min.insync.replicas": "2",
    }


def test_names_no_topic_can_have_are_answered_without_a_lookup(nodes: list[Node]) -> None:
    # "" and ".." would name /brokers/topics itself or its parent in ZooKeeper.
    names = ["", "..", "a/b"]
    topic_type = pb.ConfigResourceType.CONFIG_RESOURCE_TYPE_TOPIC
    Alter = pb.IncrementalAlterConfigsRequest

    async def scenario(stub: pb_grpc.AdminAsyncStub) -> None:
        described = await stub.DescribeConfigs(
            pb.DescribeConfigsRequest(
                resources=[
                    pb.DescribeConfigsRequest.DescribeConfigsResource(
                        resource_type=topic_type, resource_name=name
                    )
                    for name in names
                ]
            )
        )
        assert [r.error_code for r in described.results] == [ErrorCode.INVALID_TOPIC_EXCEPTION] * 3
        altered = await stub.IncrementalAlterConfigs(
            Alter(
                resources=[
                    Alter.AlterConfigsResource(
                        resource_type=topic_type,
                        resource_name=name,
                        configs=[Alter.AlterableConfig(name="retention.ms", value="1")],
                    )
                    for name in names
                ]
            )
        )
        assert [r.error_code for r in altered.responses] == [ErrorCode.INVALID_TOPIC_EXCEPTION] * 3
        deleted = await stub.DeleteTopics(pb.DeleteTopicsRequest(topic_names=names))
        assert [r.error_code for r in deleted.responses] == [
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        ] * 3
        grown = await stub.CreatePartitions(
            pb.CreatePartitionsRequest(
                topics=[
                    pb.CreatePartitionsRequest.CreatePartitionsTopic(name=name, count=2)
                    for name in names
                ]
            )
        )
        assert [r.error_code for r in grown.results] == [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION] * 3

    run(nodes[0], scenario)
    assert nodes[0].zk.get_topics_marked_for_deletion() == []


def test_alter_configs_in_replace_mode_sets_the_whole_override_set(nodes: list[Node]) -> None:
    # The path of Kafka's older AlterConfigs (served on the Kafka listener only), on the core.
    admin = TopicAdmin(nodes[0].config, nodes[0].controller, nodes[0].zk)

    def resources(**configs: str) -> list[AlterConfigsResource]:
        return [
            AlterConfigsResource(
                ConfigResourceType.TOPIC,
                "r",
                [
                    AlterableConfig(k.replace("_", "."), ConfigOperation.SET, v)
                    for k, v in configs.items()
                ],
            )
        ]

    async def scenario() -> None:
        await admin.create_topics(
            [NewTopic("r", 1, 1, None, {"retention.ms": "60000", "segment.bytes": "1048576"})]
        )
        answer = await admin.alter_configs(resources(flush_messages="10"))
        assert answer[0].error_code == ErrorCode.NONE
        assert nodes[0].zk.get_topic_config("r") == {"flush.messages": "10"}
        answer = await admin.alter_configs(resources(segment_ms="x"))
        assert answer[0].error_code == ErrorCode.INVALID_CONFIG
        answer = await admin.alter_configs(resources(segment_ms="1000"), validate_only=True)
        assert answer[0].error_code == ErrorCode.NONE
        assert nodes[0].zk.get_topic_config("r") == {"flush.messages": "10"}
        answer = await admin.alter_configs(resources())
        assert answer[0].error_code == ErrorCode.NONE
        assert nodes[0].zk.get_topic_config("r") == {}

    asyncio.run(scenario())
