"""In-process brokers for the replication tests: each a ReplicaManager with its own LogManager
(tmp_path) behind a real grpc.aio Data server on 127.0.0.1:0, sharing a fake ZooKeeper; the
test plays the controller by sending hand-made LeaderAndIsr requests. With
``transport="kafka"`` each also serves a real Kafka listener (KafkaListeners, the handlers)
and its followers fetch over it (inter.broker.listener.name=KAFKA), as a cluster does when
replicating over the Kafka protocol.

Everything runs on the test's one event loop; tests drive it with ``asyncio.run``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import grpc

from minikafka.broker.config import BrokerConfig
from minikafka.broker.replication.isr_change import IsrChangePropagationConfig
from minikafka.broker.replication.producer_id_manager import ProducerIdManager
from minikafka.broker.replication.replica_manager import ReplicaManager
from minikafka.broker.replication.requests import (
    FetchedRecords,
    FetchPartition,
    FetchPartitionResult,
    FetchRequest,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    LiveLeader,
    ProducePartition,
    ProducePartitionResult,
    ProduceRequest,
)
from minikafka.broker.server import grpc_leader_endpoint
from minikafka.broker.server.core.fetch import FetchApi
from minikafka.broker.server.data_service import DataService
from minikafka.broker.server.kafka import leader_endpoint as kafka_leader_endpoint
from minikafka.broker.server.kafka.broker import KafkaBroker
from minikafka.broker.server.kafka.listener import KafkaListeners
from minikafka.broker.storage.log import Log
from minikafka.broker.storage.log_manager import LogManager
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.cluster_state import (
    BadZNodeVersionError,
    PartitionState,
    ProducerIdBlock,
    Versioned,
)
from minikafka.proto.common import EndPoint, TopicPartition
from minikafka.proto.records import decode_records, encode_batch
from minikafka.proto.topic_config import TopicConfig
from tests.unit.storage.helpers import memory_records

TOPIC = "t"
TP = TopicPartition(TOPIC, 0)
# How followers fetch unless a test says: "grpc" or "kafka" (MINIKAFKA_TEST_REPLICATION, as the
# integration tests read it, runs every replication test over the other).
DEFAULT_TRANSPORT = os.environ.get("MINIKAFKA_TEST_REPLICATION", "grpc")


class FakeZk:
    """The partition-state part of ZkStore, in memory (called from executor threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.states: dict[tuple[str, int], Versioned[PartitionState]] = {}
        self.notifications: list[frozenset[TopicPartition]] = []
        self.topic_configs: dict[str, dict[str, str]] = {}
        self.next_producer_id = 0

    def set_state(self, topic: str, partition: int, state: PartitionState) -> int:
        """The controller's write: returns the new znode version."""
        with self._lock:
            old = self.states.get((topic, partition))
            version = 0 if old is None else old.zk_version + 1
            self.states[(topic, partition)] = Versioned(state, version)
            return version

    def get_partition_state(self, topic: str, partition: int) -> Versioned[PartitionState] | None:
        with self._lock:
            return self.states.get((topic, partition))

    def update_partition_state(
        self,
        topic: str,
        partition: int,
        state: PartitionState,
        expected_zk_version: int,
        *,
        controller_epoch_zk_version: int | None = None,
    ) -> int:
        with self._lock:
            old = self.states.get((topic, partition))
            if old is None or old.zk_version != expected_zk_version:
                raise BadZNodeVersionError(f"/{topic}/{partition}", expected_zk_version)
            self.states[(topic, partition)] = Versioned(state, old.zk_version + 1)
            return old.zk_version + 1

    def get_partition_states(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, Versioned[PartitionState]]:
        with self._lock:
            return {tp: self.states[tp] for tp in partitions if tp in self.states}

    def update_partition_states(
        self,
        updates: Mapping[TopicPartition, tuple[PartitionState, int]],
        *,
        controller_epoch_zk_version: int | None = None,
    ) -> dict[TopicPartition, int | Exception]:
        answers: dict[TopicPartition, int | Exception] = {}
        for tp, (state, expected) in updates.items():
            try:
                answers[tp] = self.update_partition_state(*tp, state, expected)
            except BadZNodeVersionError as exc:
                answers[tp] = exc
        return answers

    def create_isr_change_notification(self, partitions: Iterable[TopicPartition]) -> str:
        with self._lock:
            self.notifications.append(frozenset(partitions))
            return f"isr_change_{len(self.notifications) - 1:010d}"

    def get_topic_config(self, topic: str) -> dict[str, str]:
        with self._lock:
            return dict(self.topic_configs.get(topic, {}))

    def allocate_producer_id_block(self, broker_id: int) -> ProducerIdBlock:
        with self._lock:
            start = self.next_producer_id
            self.next_producer_id += 10
            return ProducerIdBlock(broker_id, start, start + 9)


class FakeMetadata:
    """The replica manager's view of the metadata cache."""

    def __init__(self) -> None:
        self.partitions: set[tuple[str, int]] = set()
        self.endpoints: dict[int, tuple[str, int]] = {}
        self.dead: set[int] = set()  # every broker is alive unless listed here
        self.racks: dict[int, str] = {}  # broker.rack of the brokers that have one
        # Every other node's address on the inter-broker listener (set by the Cluster).
        self.nodes: Mapping[int, Node] = {}

    def contains_partition(self, topic: str, partition: int) -> bool:
        return (topic, partition) in self.partitions

    def is_alive(self, broker_id: int) -> bool:
        return broker_id not in self.dead

    def get_rack(self, broker_id: int) -> str | None:
        return None if broker_id in self.dead else self.racks.get(broker_id)

    def get_listener_endpoint(self, broker_id: int, listener_name: str) -> tuple[str, int] | None:
        if broker_id in self.dead:
            return None
        node = self.nodes.get(broker_id)
        if broker_id not in self.endpoints and node is not None and node.port:
            return "127.0.0.1", node.port
        return self.endpoints.get(broker_id)


def broker_config(broker_id: int, log_dir: Path, **overrides: Any) -> BrokerConfig:
    unknown = overrides.pop("unknown", {})
    values: dict[str, Any] = {
        "broker_id": broker_id,
        "zookeeper_connect": "127.0.0.1:1",
        "log_dirs": (log_dir,),
        "replica_lag_time_max_ms": 10_000,
        "replica_fetch_wait_max_ms": 200,
        "replica_high_watermark_checkpoint_interval_ms": 60_000,
    }
    values.update(overrides)
    # The broker's defaults of topic keys (min_insync_replicas, ...) are its TopicConfig's.
    topic_fields = {f.name for f in dataclasses.fields(TopicConfig)}
    topic_defaults = {k: values.pop(k) for k in list(values) if k in topic_fields}
    values["log"] = dataclasses.replace(values.get("log", TopicConfig()), **topic_defaults)
    return BrokerConfig(unknown={"replica.fetch.backoff.ms": "50", **unknown}, **values)


class Node:
    """One broker: LogManager + ReplicaManager + a grpc.aio Data server."""

    def __init__(
        self,
        broker_id: int,
        root: Path,
        zk: FakeZk,
        *,
        transport: str = DEFAULT_TRANSPORT,
        **config: Any,
    ) -> None:
        self.broker_id = broker_id
        self.log_dir = root / f"broker-{broker_id}"
        self.zk = zk
        self.metadata = FakeMetadata()
        self.transport = transport
        if transport == "kafka":
            config = {
                "kafka_listeners": (EndPoint("KAFKA", "127.0.0.1", 0),),
                "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT", "KAFKA": "PLAINTEXT"},
                "inter_broker_listener_name": "KAFKA",
                "control_plane_listener_name": "PLAINTEXT",
                **config,
            }
        self.config = broker_config(broker_id, self.log_dir, **config)
        self.broker_epoch = 100 + broker_id
        self.port = 0
        self.log_manager: LogManager | None = None
        self.rm: ReplicaManager | None = None
        self.server: grpc.aio.Server | None = None
        self.kafka: KafkaListeners | None = None

    @property
    def replica_manager(self) -> ReplicaManager:
        assert self.rm is not None
        return self.rm

    async def start(self) -> None:
        self.log_manager = LogManager(
            [self.log_dir], self.config.log, broker_id=self.broker_id, cluster_id="test-cluster"
        )
        self.rm = ReplicaManager(
            self.config,
            self.log_manager,
            self.zk,
            self.metadata,
            broker_epoch=lambda: self.broker_epoch,
            # Kafka's timings (seconds) scaled down, so that tests see notifications soon.
            isr_change_propagation=IsrChangePropagationConfig(
                check_interval_ms=20, linger_ms=50, max_delay_ms=1000
            ),
            leader_endpoint=(
                kafka_leader_endpoint.factory(
                    timeout_s=self.config.replica_socket_timeout_ms / 1000,
                    max_response_bytes=self.config.grpc_max_message_bytes,
                    client_id=f"broker-{self.broker_id}-fetcher",
                )
                if self.transport == "kafka"
                else grpc_leader_endpoint.factory(
                    timeout_s=self.config.replica_socket_timeout_ms / 1000,
                    max_message_bytes=self.config.grpc_max_message_bytes,
                )
            ),
        )
        self.server = grpc.aio.server()
        producer_ids = ProducerIdManager(self.broker_id, self.zk.allocate_producer_id_block)
        listener = self.config.inter_broker_listener_name
        fetches = FetchApi(self.rm, listener)
        pb_grpc.add_DataServicer_to_server(
            DataService(self.rm, fetches, producer_ids=producer_ids, listener=listener),
            self.server,
        )
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        await self.server.start()
        if self.transport == "kafka":
            # Only the fetch path is asked of this broker's Kafka door.
            unused: Any = None
            self.kafka = KafkaListeners(
                KafkaBroker(
                    self.config,
                    self.rm,
                    metadata_cache=unused,
                    metadata_api=unused,
                    groups=None,
                    admin=unused,
                    producer_ids=producer_ids,
                    fetches=fetches,
                )
            )
            (bound,) = await self.kafka.start()
            self.port = int(bound.rsplit(":", 1)[1])
        await self.rm.startup()

    async def stop(self) -> None:
        """A clean stop: HW checkpointed, logs flushed and closed."""
        if self.kafka is not None:
            await self.kafka.stop()
            self.kafka = None
        if self.server is not None:
            await self.server.stop(0)
            self.server = None
        if self.rm is not None:
            await self.rm.shutdown()
            self.rm = None
        if self.log_manager is not None:
            self.log_manager.close()
            self.log_manager = None

    @property
    def running(self) -> bool:
        return self.rm is not None

    def log(self, tp: TopicPartition = TP) -> Log:
        partition = self.replica_manager.get_partition(tp)
        assert partition is not None
        return partition.log

    def values(self, tp: TopicPartition = TP) -> list[bytes | None]:
        """Every record value in the replica's log, in offset order."""
        log = self.log(tp)
        data = memory_records(log.read(log.log_start_offset, 1 << 30, None).records)
        return [record.value for record in decode_records(data)]

    def high_watermark(self, tp: TopicPartition = TP) -> int:
        partition = self.replica_manager.get_partition(tp)
        assert partition is not None
        return partition.high_watermark

    def isr(self, tp: TopicPartition = TP) -> frozenset[int]:
        partition = self.replica_manager.get_partition(tp)
        assert partition is not None
        return partition.isr


class Cluster:
    """Nodes plus a hand-driven controller."""

    def __init__(
        self,
        root: Path,
        broker_ids: Iterable[int] = (1, 2, 3),
        *,
        transport: str = DEFAULT_TRANSPORT,
        **config: Any,
    ) -> None:
        self.zk = FakeZk()
        self.root = root
        self.nodes = {b: Node(b, root, self.zk, transport=transport, **config) for b in broker_ids}
        for node in self.nodes.values():
            node.metadata.nodes = self.nodes
        self.controller_epoch = 1

    def __getitem__(self, broker_id: int) -> Node:
        return self.nodes[broker_id]

    async def start(self) -> None:
        for node in self.nodes.values():
            await node.start()

    async def stop(self) -> None:
        for node in self.nodes.values():
            await node.stop()

    async def restart(self, broker_id: int) -> Node:
        node = self.nodes[broker_id]
        await node.stop()
        await node.start()
        return node

    def leader_and_isr(
        self,
        leader: int,
        leader_epoch: int,
        isr: Iterable[int],
        replicas: Iterable[int],
        *,
        topic: str = TOPIC,
        partition: int = 0,
        partition_epoch: int = 0,
        broker_epoch: int = -1,
    ) -> LeaderAndIsrRequest:
        state = LeaderAndIsrPartitionState(
            topic=topic,
            partition=partition,
            controller_epoch=self.controller_epoch,
            leader=leader,
            leader_epoch=leader_epoch,
            isr=tuple(isr),
            partition_epoch=partition_epoch,
            replicas=tuple(replicas),
        )
        # The last endpoint the leader had: the controller may not have noticed its death yet.
        live_leaders = []
        if leader in self.nodes and self.nodes[leader].port:
            live_leaders.append(LiveLeader(leader, "127.0.0.1", self.nodes[leader].port))
        return LeaderAndIsrRequest(
            controller_id=leader,
            controller_epoch=self.controller_epoch,
            broker_epoch=broker_epoch,
            partition_states=[state],
            live_leaders=live_leaders,
        )

    async def elect(
        self,
        leader: int,
        leader_epoch: int,
        isr: Iterable[int],
        replicas: Iterable[int] = (1, 2, 3),
        *,
        to: Iterable[int] | None = None,
        topic: str = TOPIC,
        partition: int = 0,
    ) -> dict[int, LeaderAndIsrResponse]:
        """Write the state znode as the controller would and send LeaderAndIsr to the live
        replicas (or to ``to``)."""
        isr = list(isr)
        replicas = list(replicas)
        version = self.zk.set_state(
            topic,
            partition,
            PartitionState(leader, leader_epoch, tuple(isr), self.controller_epoch),
        )
        request = self.leader_and_isr(
            leader,
            leader_epoch,
            isr,
            replicas,
            topic=topic,
            partition=partition,
            partition_epoch=version,
        )
        targets = [b for b in (replicas if to is None else to) if self.nodes[b].running]
        for node in self.nodes.values():
            node.metadata.partitions.add((topic, partition))
        responses = {}
        for broker_id in targets:
            responses[broker_id] = await self.nodes[
                broker_id
            ].replica_manager.become_leader_or_follower(request)
        return responses


def records(*values: bytes) -> bytes:
    return encode_batch([(int(time.time() * 1000), None, value, ()) for value in values])


def produce_request(
    data: bytes, *, acks: int = -1, timeout_ms: int = 5_000, topic: str = TOPIC, partition: int = 0
) -> ProduceRequest:
    return ProduceRequest(acks, timeout_ms, [ProducePartition(topic, partition, data)])


async def produce(
    node: Node, *values: bytes, acks: int = -1, timeout_ms: int = 5_000
) -> ProducePartitionResult:
    results = await node.replica_manager.append_records(
        produce_request(records(*values), acks=acks, timeout_ms=timeout_ms)
    )
    return results[0]


def fetch_request(
    offset: int,
    *,
    replica_id: int = -1,
    max_wait_ms: int = 0,
    min_bytes: int = 1,
    max_bytes: int = 1 << 20,
    current_leader_epoch: int = -1,
    last_fetched_epoch: int = -1,
    partition_max_bytes: int = 1 << 20,
    topic: str = TOPIC,
    partition: int = 0,
) -> FetchRequest:
    return FetchRequest(
        replica_id,
        max_wait_ms,
        min_bytes,
        max_bytes,
        [
            FetchPartition(
                topic,
                partition,
                offset,
                current_leader_epoch=current_leader_epoch,
                last_fetched_epoch=last_fetched_epoch,
                log_start_offset=-1,
                partition_max_bytes=partition_max_bytes,
            )
        ],
    )


async def consume(node: Node, offset: int = 0, **kwargs: Any) -> FetchPartitionResult:
    results = await node.replica_manager.fetch_messages(fetch_request(offset, **kwargs))
    return results[0]


def values_of(data: FetchedRecords) -> list[bytes | None]:
    return [record.value for record in decode_records(memory_records(data))]


async def wait_until(
    condition: Callable[[], bool], timeout_s: float = 5.0, message: str = ""
) -> None:
    """Poll a condition the test cannot await directly (state on another replica)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout_s}s: {message}")
        await asyncio.sleep(0.01)


def run(coro_fn: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(_with_timeout(coro_fn))


async def _with_timeout(coro_fn: Callable[[], Awaitable[None]]) -> None:
    await asyncio.wait_for(coro_fn(), 30)
