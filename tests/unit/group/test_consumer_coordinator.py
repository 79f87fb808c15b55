"""The consumer's ConsumerCoordinator against an in-process broker side: the real GroupService
and GroupCoordinator on a grpc.aio server in a thread, over the in-memory offsets log."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

import grpc
import pytest

from minikafka.broker.config import BrokerConfig
from minikafka.broker.group.coordinator import GroupConfig, GroupCoordinator
from minikafka.broker.server.core.groups import GroupApi
from minikafka.broker.server.core.metadata import MetadataApi
from minikafka.broker.server.core.topic_creation import TopicCreator
from minikafka.broker.server.group_service import GroupService
from minikafka.broker.server.metadata_cache import MetadataCache
from minikafka.broker.server.metadata_service import MetadataService
from minikafka.client._channel import ChannelPool
from minikafka.client.consumer.coordinator import ConsumerCoordinator, GroupSettings
from minikafka.client.metadata import ClusterMetadata
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.common import OffsetAndMetadata, TopicPartition
from minikafka.proto.errors import InvalidConfigError
from tests.unit.group.test_coordinator import FakeOffsetsLog
from tests.unit.group.test_group_service import FakeZk

T = TypeVar("T")
TOPIC = "t"


class Broker:
    """One broker's Group and Metadata services on a loop of their own."""

    def __init__(self, tmp: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        config = BrokerConfig.load(
            overrides=["broker.id=1", f"log.dirs={tmp}", "zookeeper.connect=127.0.0.1:1"],
            environ={},
        )
        self.cache = MetadataCache(1, "cluster")
        self.coordinator = GroupCoordinator(
            1,
            GroupConfig(
                offsets_topic_num_partitions=1,
                group_initial_rebalance_delay_ms=0,
                group_min_session_timeout_ms=100,
            ),
            FakeOffsetsLog(),
            call_later=lambda delay, callback: self.loop.call_later(delay, callback),
        )
        self.port = self.call(self._start(config))

    async def _start(self, config: BrokerConfig) -> int:
        self.server = grpc.aio.server()
        creator = TopicCreator(config, FakeZk())
        pb_grpc.add_GroupServicer_to_server(
            GroupService(GroupApi(self.coordinator, self.cache, creator)), self.server
        )
        pb_grpc.add_MetadataServicer_to_server(
            MetadataService(MetadataApi(config, self.cache)), self.server
        )
        port = self.server.add_insecure_port("127.0.0.1:0")
        await self.server.start()
        request = pb.UpdateMetadataRequest(controller_id=1, controller_epoch=1, broker_epoch=-1)
        request.live_brokers.add(id=1, host="127.0.0.1", port=port)
        for topic, count in ((TOPIC, 4), ("__consumer_offsets", 1)):
            for partition in range(count):
                request.partition_states.add(
                    topic_name=topic,
                    topic_id="AAAAAAAAAAAAAAAAAAAAAQ",
                    partition_index=partition,
                    controller_epoch=1,
                    leader=1,
                    leader_epoch=0,
                    isr=[1],
                    partition_epoch=0,
                    replicas=[1],
                )
        self.cache.update(request)
        self.coordinator.on_elected(0)
        return port

    def call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(10)

    def run(self, func: Callable[[], T]) -> T:
        async def wrapper() -> T:
            return func()

        return self.call(wrapper())

    def close(self) -> None:
        self.call(self.server.stop(0))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)


class Hooks:
    def __init__(self) -> None:
        self.assigned: set[TopicPartition] = set()
        self.revocations = 0

    def subscribed_topics(self) -> set[str]:
        return {TOPIC}

    def on_revoke(self) -> None:
        self.revocations += 1
        self.assigned = set()

    def on_assign(self, partitions: set[TopicPartition]) -> None:
        self.assigned = set(partitions)


@pytest.fixture
def broker(tmp_path: Any) -> Iterator[Broker]:
    server = Broker(str(tmp_path))
    yield server
    server.close()


class Member:
    def __init__(self, broker: Broker, **settings: Any) -> None:
        self.pool = ChannelPool()
        metadata = ClusterMetadata(self.pool, [f"127.0.0.1:{broker.port}"])
        self.hooks = Hooks()
        defaults: dict[str, Any] = {
            "session_timeout_ms": 1000,
            "heartbeat_interval_ms": 50,
            "retry_backoff_ms": 20,
            "request_timeout_ms": 5000,
            "max_poll_interval_ms": 5000,
        }
        defaults.update(settings)
        self.group = ConsumerCoordinator(
            "g", metadata, self.pool, GroupSettings(**defaults), self.hooks
        )

    def poll(self) -> bool:
        return self.group.poll(time.monotonic() + 0.2)

    def close(self) -> None:
        self.group.close()
        self.pool.close()


def _until(condition: Callable[[], bool], pollers: list[Member], timeout_s: float = 10) -> None:
    """Each member polls in its own thread, as a consumer would, until ``condition()``."""
    stop = threading.Event()

    def loop(member: Member) -> None:
        while not stop.is_set():
            member.poll()
            time.sleep(0.01)

    threads = [threading.Thread(target=loop, args=(m,), daemon=True) for m in pollers]
    for thread in threads:
        thread.start()
    try:
        deadline = time.monotonic() + timeout_s
        while not condition():
            assert time.monotonic() < deadline, "condition not reached"
            time.sleep(0.02)
    finally:
        stop.set()
        for thread in threads:
            thread.join()


def _split(members: list[Member], partitions: int = 4) -> bool:
    owned = [m.hooks.assigned for m in members]
    return (
        all(owned) and sum(map(len, owned)) == partitions and len(set().union(*owned)) == partitions
    )


def test_two_members_split_the_partitions_and_commit(broker: Broker) -> None:
    a, b = Member(broker), Member(broker, partition_assignment_strategy=("roundrobin", "range"))
    try:
        _until(lambda: _split([a, b]), [a, b])
        assert a.group.generation == b.group.generation >= 1
        assert a.group.protocol == "range"
        tp = TopicPartition(TOPIC, 0)
        owner = a if tp in a.hooks.assigned else b
        owner.group.commit_sync({tp: OffsetAndMetadata(7, "meta")}, timeout_s=5)
        assert a.group.fetch_committed([tp, TopicPartition(TOPIC, 1)]) == {
            tp: OffsetAndMetadata(7, "meta", -1),
            TopicPartition(TOPIC, 1): None,
        }
        b.close()  # LeaveGroup: a gets everything at its next poll
        _until(lambda: len(a.hooks.assigned) == 4, [a])
        assert a.hooks.revocations >= 1
    finally:
        a.close()


def test_a_member_removed_by_the_coordinator_rejoins_with_a_new_id(broker: Broker) -> None:
    a = Member(broker)
    try:
        _until(lambda: len(a.hooks.assigned) == 4, [a])
        old_id, old_generation = a.group.member_id, a.group.generation
        broker.run(lambda: broker.coordinator.leave_group("g", [old_id]))
        # the heartbeat thread hears UNKNOWN_MEMBER_ID and asks for a rejoin
        deadline = time.monotonic() + 5
        while not a.group.need_rejoin():
            assert time.monotonic() < deadline
            time.sleep(0.02)
        _until(lambda: not a.group.need_rejoin() and len(a.hooks.assigned) == 4, [a])
        assert a.group.member_id != old_id
        assert a.group.generation > old_generation
    finally:
        a.close()


def test_poll_interval_exceeded_leaves_the_group(broker: Broker) -> None:
    a = Member(broker, max_poll_interval_ms=300)
    b = Member(broker)
    try:
        _until(lambda: _split([a, b]), [a, b])
        # a stops polling; b keeps polling and ends up with every partition
        _until(lambda: len(b.hooks.assigned) == 4, [b])
        assert a.group.member_id == "" and a.group.generation == -1
        _until(lambda: _split([a, b]), [a, b])  # a polls again: it rejoins
    finally:
        a.close()
        b.close()


def test_leader_rebalances_when_a_topic_gains_partitions(broker: Broker) -> None:
    a, b = Member(broker), Member(broker)
    try:
        _until(lambda: _split([a, b]), [a, b])
        leader = a if a.group._assigned_counts else b  # only the leader keeps counts
        assert not (b if leader is a else a).group._assigned_counts
        assert leader.group._assigned_counts == {TOPIC: 4}
        broker.run(lambda: broker.cache.update(_partitions_update(broker.port, 6)))
        leader.group._metadata.update()
        assert leader.group.check_partition_counts()
        everything = {TopicPartition(TOPIC, p) for p in range(6)}
        _until(lambda: a.hooks.assigned | b.hooks.assigned == everything, [a, b])
        assert not a.hooks.assigned & b.hooks.assigned
    finally:
        a.close()
        b.close()


def _partitions_update(port: int, count: int) -> pb.UpdateMetadataRequest:
    request = pb.UpdateMetadataRequest(controller_id=1, controller_epoch=1, broker_epoch=-1)
    request.live_brokers.add(id=1, host="127.0.0.1", port=port)
    for partition in range(count):
        request.partition_states.add(
            topic_name=TOPIC,
            topic_id="AAAAAAAAAAAAAAAAAAAAAQ",
            partition_index=partition,
            controller_epoch=1,
            leader=1,
            leader_epoch=0,
            isr=[1],
            partition_epoch=0,
            replicas=[1],
        )
    return request


def test_settings_are_checked() -> None:
    with pytest.raises(InvalidConfigError):
        GroupSettings(partition_assignment_strategy=("sticky",))
    with pytest.raises(InvalidConfigError):
        GroupSettings(session_timeout_ms=1000, heartbeat_interval_ms=1000)
