"""The Data (and RawData), Metadata and Control services over a real grpc.aio server on
127.0.0.1, with the MetadataCache and a ReplicaManager behind them (ZooKeeper faked)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import grpc

from minikafka.broker.replication.producer_id_manager import ProducerIdManager
from minikafka.broker.replication.replica_manager import ReplicaManager
from minikafka.broker.server import grpc_leader_endpoint
from minikafka.broker.server.control_service import ControlService
from minikafka.broker.server.core.controller_fence import ControllerFence
from minikafka.broker.server.core.fetch import FetchApi
from minikafka.broker.server.core.metadata import MetadataApi
from minikafka.broker.server.data_service import DataService, raw_data_handler
from minikafka.broker.server.metadata_cache import MetadataCache
from minikafka.broker.server.metadata_service import MetadataService
from minikafka.broker.storage.log_manager import LogManager
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto import transport
from minikafka.proto.cluster_state import Versioned
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode
from minikafka.zk.zk_data import ControllerRegistration
from tests.unit.replication.harness import FakeZk, broker_config, records, values_of


class Remaining(NamedTuple):
    topic: str
    partition: int


class Outcome(NamedTuple):
    error: ErrorCode
    remaining: list[Remaining]


class FakeController:
    """Answers ControlledShutdown from another thread, as KafkaController's event thread does."""

    def __init__(self, outcome: Outcome) -> None:
        self.outcome = outcome
        self.calls: list[tuple[int, int]] = []

    def controlled_shutdown(
        self, broker_id: int, broker_epoch: int
    ) -> concurrent.futures.Future[Any]:
        self.calls.append((broker_id, broker_epoch))
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        threading.Timer(0.01, future.set_result, [self.outcome]).start()
        return future


class FakeControllerZnodes:
    """/controller, /controller_epoch and this broker's registration, as the test sets them."""

    def __init__(self, controller_id: int, epoch: int) -> None:
        self.controller_id, self.epoch = controller_id, epoch
        self.broker_epoch = 10

    def get_controller(self) -> ControllerRegistration | None:
        return ControllerRegistration(self.controller_id)

    def get_controller_epoch(self) -> Versioned[int] | None:
        return Versioned(self.epoch, self.epoch)

    def get_broker_epoch(self, broker_id: int) -> int | None:
        return self.broker_epoch


@dataclass
class Stubs:
    data: pb_grpc.DataAsyncStub
    metadata: pb_grpc.MetadataAsyncStub
    control: pb_grpc.ControlAsyncStub
    cache: MetadataCache
    rm: ReplicaManager
    port: int
    znodes: FakeControllerZnodes
    extra: dict[str, Any] = field(default_factory=dict)


@asynccontextmanager
async def broker(tmp_path: Path, controller: FakeController | None = None) -> AsyncIterator[Stubs]:
    config = broker_config(1, tmp_path / "logs")
    log_manager = LogManager(config.log_dirs, config.log, broker_id=1)
    cache = MetadataCache(1, cluster_id="cluster-xyz")
    zk = FakeZk()
    rm = ReplicaManager(
        config,
        log_manager,
        zk,
        cache,
        broker_epoch=lambda: 10,
        leader_endpoint=grpc_leader_endpoint.factory(timeout_s=5, max_message_bytes=1 << 20),
    )
    server = transport.aio_server(1 << 20)  # with RequestDecodingInterceptor, as a broker's
    producer_ids = ProducerIdManager(1, zk.allocate_producer_id_block)
    listener = config.inter_broker_listener_name
    data = DataService(rm, FetchApi(rm, listener), producer_ids=producer_ids, listener=listener)
    pb_grpc.add_DataServicer_to_server(data, server)
    server.add_generic_rpc_handlers((raw_data_handler(data),))
    pb_grpc.add_MetadataServicer_to_server(MetadataService(MetadataApi(config, cache)), server)
    znodes = FakeControllerZnodes(2, 1)
    pb_grpc.add_ControlServicer_to_server(
        ControlService(
            rm,
            cache,
            controller,
            fence=ControllerFence(znodes, broker_id=1, broker_epoch=lambda: 10),
        ),
        server,
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    await rm.startup()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield Stubs(
            pb_grpc.DataStub(channel),
            pb_grpc.MetadataStub(channel),
            pb_grpc.ControlStub(channel),
            cache,
            rm,
            port,
            znodes,
            {"channel": channel},
        )
    finally:
        await channel.close()
        await server.stop(0)
        await rm.shutdown()
        log_manager.close()


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    async def bounded() -> None:
        await asyncio.wait_for(scenario(), 20)

    asyncio.run(bounded())


def update_metadata(controller_epoch: int = 1) -> pb.UpdateMetadataRequest:
    request = pb.UpdateMetadataRequest(
        controller_id=2, controller_epoch=controller_epoch, broker_epoch=10
    )
    for broker_id in (1, 2):
        broker = request.live_brokers.add(id=broker_id, host="127.0.0.1", port=9090 + broker_id)
        broker.endpoints.add(port=9090 + broker_id, host="127.0.0.1", listener="PLAINTEXT")
    request.live_brokers[1].rack = "r2"
    for partition, leader in ((0, 1), (1, 3)):
        request.partition_states.add(
            topic_name="t",
            topic_id="AAAAAAAAAAAAAAAAAAAAAQ",
            partition_index=partition,
            controller_epoch=controller_epoch,
            leader=leader,
            leader_epoch=4,
            isr=[leader, 2],
            partition_epoch=6,
            replicas=[leader, 2],
            offline_replicas=[3] if leader == 3 else [],
        )
    return request


def test_update_metadata_then_metadata_and_describe_cluster(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with broker(tmp_path) as stubs:
            assert (await stubs.control.UpdateMetadata(update_metadata())).error_code == 0
            response = await stubs.metadata.Metadata(pb.MetadataRequest())
            assert response.cluster_id == "cluster-xyz" and response.controller_id == 2
            assert [(b.node_id, b.port) for b in response.brokers] == [(1, 9091), (2, 9092)]
            assert response.brokers[1].rack == "r2" and not response.brokers[0].HasField("rack")
            (topic,) = response.topics
            assert topic.name == "t" and topic.error_code == 0 and not topic.is_internal
            assert topic.topic_id == "AAAAAAAAAAAAAAAAAAAAAQ"
            p0, p1 = topic.partitions
            assert (p0.error_code, p0.leader_id, p0.leader_epoch) == (0, 1, 4)
            assert list(p0.replica_nodes) == [1, 2] and list(p0.isr_nodes) == [1, 2]
            # broker 3 is not alive: no leader
            assert (p1.error_code, p1.leader_id) == (ErrorCode.LEADER_NOT_AVAILABLE, -1)
            assert list(p1.offline_replicas) == [3]

            unknown = await stubs.metadata.Metadata(
                pb.MetadataRequest(topics=[pb.MetadataRequest.MetadataRequestTopic(name="nope")])
            )
            assert unknown.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            illegal = await stubs.metadata.Metadata(
                pb.MetadataRequest(topics=[pb.MetadataRequest.MetadataRequestTopic(name="a/b")])
            )
            assert illegal.topics[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION

            cluster = await stubs.metadata.DescribeCluster(pb.DescribeClusterRequest())
            assert cluster.cluster_id == "cluster-xyz" and cluster.controller_id == 2
            assert [b.broker_id for b in cluster.brokers] == [1, 2]
            assert stubs.cache.get_alive_broker_endpoint(2, "PLAINTEXT") == ("127.0.0.1", 9092)
            assert stubs.cache.get_alive_broker_endpoint(3, "PLAINTEXT") is None

    run(scenario)


def test_update_metadata_fencing_and_deletion(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with broker(tmp_path) as stubs:
            stubs.znodes.epoch = 3
            assert (await stubs.control.UpdateMetadata(update_metadata(3))).error_code == 0
            stale = await stubs.control.UpdateMetadata(update_metadata(controller_epoch=2))
            assert stale.error_code == ErrorCode.STALE_CONTROLLER_EPOCH
            # what was wrong with the request, not the epoch it lost to
            assert stale.error_message == "stale controller epoch"
            request = update_metadata(controller_epoch=3)
            request.broker_epoch = 9  # this broker's epoch is 10
            stale_broker = await stubs.control.UpdateMetadata(request)
            assert stale_broker.error_code == ErrorCode.STALE_BROKER_EPOCH
            assert stale_broker.error_message == "stale broker epoch"
            request.partition_states[1].leader = -2  # would delete t-1, if obeyed
            for unknown in (-1, 11, 1 << 40):  # none of them this broker's registration
                request.broker_epoch = unknown
                unknown_broker = await stubs.control.UpdateMetadata(request)
                assert unknown_broker.error_code == ErrorCode.STALE_BROKER_EPOCH
                assert unknown_broker.error_message == "unknown broker epoch"
            assert stubs.cache.contains_partition("t", 1)
            # the registration this broker is still making, which the controller saw first
            stubs.znodes.broker_epoch = request.broker_epoch = 11
            assert (await stubs.control.UpdateMetadata(request)).error_code == 0
            assert not stubs.cache.contains_partition("t", 1)

            delete = pb.UpdateMetadataRequest(controller_id=2, controller_epoch=3, broker_epoch=10)
            delete.partition_states.add(topic_name="t", partition_index=1, leader=-2)
            assert (await stubs.control.UpdateMetadata(delete)).error_code == 0
            assert stubs.cache.contains_partition("t", 0)
            assert not stubs.cache.contains_partition("t", 1)
            assert stubs.cache.alive_brokers() == []  # live brokers are always the full set

    run(scenario)


def test_leader_and_isr_produce_and_fetch_over_grpc(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with broker(tmp_path) as stubs:
            stubs.znodes.controller_id = 1
            request = pb.LeaderAndIsrRequest(controller_id=1, controller_epoch=1, broker_epoch=10)
            request.partition_states.add(
                topic_name="t",
                partition_index=0,
                controller_epoch=1,
                leader=1,
                leader_epoch=1,
                isr=[1],
                partition_epoch=0,
                replicas=[1],
            )
            response = await stubs.control.LeaderAndIsr(request)
            assert response.error_code == 0 and response.partition_errors[0].error_code == 0

            produce = pb.ProduceRequest(acks=-1, timeout_ms=1000)
            produce.topic_data.add(name="t").partition_data.add(index=0, records=records(b"hi"))
            produced = await stubs.data.Produce(produce)
            result = produced.responses[0].partition_responses[0]
            assert (result.error_code, result.base_offset, result.log_append_time_ms) == (0, 0, -1)

            fetch = pb.FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20)
            fetch.topics.add(topic="t").partitions.add(
                partition=0, fetch_offset=0, current_leader_epoch=1, partition_max_bytes=1 << 20
            )
            fetched = await stubs.data.Fetch(fetch)
            data = fetched.responses[0].partitions[0]
            assert values_of(data.records) == [b"hi"] and data.high_watermark == 1

            offsets = pb.ListOffsetsRequest(replica_id=-1)
            offsets.topics.add(name="t").partitions.add(
                partition_index=0, current_leader_epoch=-1, timestamp=-1
            )
            listed = await stubs.data.ListOffsets(offsets)
            assert listed.topics[0].partitions[0].offset == 1

            epochs = pb.OffsetsForLeaderEpochRequest(replica_id=-1)
            epochs.topics.add(topic="t").partitions.add(
                partition=0, current_leader_epoch=1, leader_epoch=1
            )
            answered = await stubs.data.OffsetsForLeaderEpoch(epochs)
            assert answered.topics[0].partitions[0].end_offset == 1

            stop = pb.StopReplicaRequest(controller_id=1, controller_epoch=1, broker_epoch=10)
            stop.partition_states.add(
                topic_name="t", partition_index=0, leader_epoch=1, delete_partition=True
            )
            stopped = await stubs.control.StopReplica(stop)
            assert stopped.partition_errors[0].error_code == 0
            assert stubs.rm.get_partition(TopicPartition("t", 0)) is None

    run(scenario)


def test_controlled_shutdown_without_and_with_a_controller(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with broker(tmp_path) as stubs:
            response = await stubs.control.ControlledShutdown(
                pb.ControlledShutdownRequest(broker_id=3, broker_epoch=5)
            )
            assert response.error_code == ErrorCode.NOT_CONTROLLER

        controller = FakeController(Outcome(ErrorCode.NONE, [Remaining("t", 2)]))
        async with broker(tmp_path, controller) as stubs:
            response = await stubs.control.ControlledShutdown(
                pb.ControlledShutdownRequest(broker_id=3, broker_epoch=5)
            )
            assert response.error_code == 0
            assert [(r.topic_name, r.partition_index) for r in response.remaining_partitions] == [
                ("t", 2)
            ]
            assert controller.calls == [(3, 5)]

    run(scenario)
