"""The requests a controller event sends: contents, epochs, recipients (no network)."""

from __future__ import annotations

from typing import Any

import pytest

from minikafka.controller.channels import inter_broker_endpoint
from minikafka.controller.config import ControllerConfig
from minikafka.controller.request_batch import RequestBatch
from minikafka.controller.state import ControllerContext, LiveBroker
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto.cluster_state import PartitionState, Versioned
from minikafka.proto.common import EndPoint, TopicPartition
from minikafka.zk.zk_data import BrokerRegistration

TP0 = TopicPartition("orders", 0)
TP1 = TopicPartition("orders", 1)


class RecordingChannels:
    def __init__(self) -> None:
        self.sent: list[tuple[int, Any]] = []

    def add_broker(self, broker_id: int, endpoint: EndPoint) -> None: ...

    def remove_broker(self, broker_id: int) -> None: ...

    def remove_all(self) -> None: ...

    def send(self, broker_id: int, request: Any, callback: Any = None) -> None:
        self.sent.append((broker_id, request))

    def close(self) -> None: ...

    def of(self, kind: type, broker_id: int) -> list[Any]:
        return [r for b, r in self.sent if b == broker_id and isinstance(r, kind)]


def broker(broker_id: int, epoch: int) -> LiveBroker:
    endpoints = (
        EndPoint("CLIENT", f"client-{broker_id}", 9000 + broker_id),
        EndPoint("PLAINTEXT", f"host-{broker_id}", 9090 + broker_id),
    )
    return LiveBroker(BrokerRegistration(broker_id, endpoints), epoch)


@pytest.fixture
def context() -> ControllerContext:
    ctx = ControllerContext(epoch=7, epoch_zk_version=6)
    ctx.live_brokers = {1: broker(1, 100), 2: broker(2, 200)}
    ctx.add_topic("orders", "topic-id-22-characters", {0: (1, 2, 3), 1: (2, 1, 3)})
    ctx.partition_states[TP0] = Versioned(PartitionState(1, 4, (1, 2), 6), zk_version=9)
    ctx.partition_states[TP1] = Versioned(PartitionState(2, 0, (2, 1), 7), zk_version=0)
    return ctx


def test_leader_and_isr_carries_epochs_state_and_live_leaders(context: ControllerContext) -> None:
    channels = RecordingChannels()
    batch = RequestBatch(context, controller_id=1, listener_name="PLAINTEXT")
    batch.add_leader_and_isr([1, 2, 3], TP0, is_new=True)  # 3 is not alive: skipped
    batch.add_leader_and_isr([2], TP1)
    batch.send(channels)
    assert channels.of(pb.LeaderAndIsrRequest, 3) == []
    [to_one] = channels.of(pb.LeaderAndIsrRequest, 1)
    assert (to_one.controller_id, to_one.controller_epoch, to_one.broker_epoch) == (1, 7, 100)
    [state] = to_one.partition_states
    assert (state.topic_name, state.partition_index, state.topic_id) == (
        "orders",
        0,
        "topic-id-22-characters",
    )
    assert (state.leader, state.leader_epoch, list(state.isr)) == (1, 4, [1, 2])
    assert (state.controller_epoch, state.partition_epoch, state.is_new) == (6, 9, True)
    assert list(state.replicas) == [1, 2, 3]
    assert [(x.broker_id, x.host_name, x.port) for x in to_one.live_leaders] == [
        (1, "host-1", 9091)
    ]
    [to_two] = channels.of(pb.LeaderAndIsrRequest, 2)
    assert to_two.broker_epoch == 200
    assert [s.partition_index for s in to_two.partition_states] == [0, 1]
    assert {x.broker_id for x in to_two.live_leaders} == {1, 2}


def test_update_metadata_lists_live_brokers_and_offline_replicas(
    context: ControllerContext,
) -> None:
    channels = RecordingChannels()
    batch = RequestBatch(context, controller_id=1, listener_name="PLAINTEXT")
    batch.add_update_metadata([1, 2], [TP0])
    batch.send(channels)
    [request] = channels.of(pb.UpdateMetadataRequest, 2)
    assert request.broker_epoch == 200
    [state] = request.partition_states
    assert list(state.offline_replicas) == [3]
    assert state.leader == 1
    assert [b.id for b in request.live_brokers] == [1, 2]
    first = request.live_brokers[0]
    assert (first.host, first.port) == ("client-1", 9001)  # the first advertised listener
    assert [e.listener for e in first.endpoints] == ["CLIENT", "PLAINTEXT"]


def test_topic_being_deleted_shows_leader_minus_two_and_gets_no_leader_and_isr(
    context: ControllerContext,
) -> None:
    context.topics_to_delete.add("orders")
    channels = RecordingChannels()
    batch = RequestBatch(context, controller_id=1, listener_name="PLAINTEXT")
    batch.add_update_metadata([1], [TP0])
    batch.add_leader_and_isr([1], TP0)
    batch.add_stop_replica(1, TP0, delete=True, leader_epoch=-2)
    batch.send(channels)
    assert channels.of(pb.LeaderAndIsrRequest, 1) == []
    [update] = channels.of(pb.UpdateMetadataRequest, 1)
    assert update.partition_states[0].leader == -2
    [stop] = channels.of(pb.StopReplicaRequest, 1)
    assert stop.broker_epoch == 100
    [state] = stop.partition_states
    assert (state.topic_name, state.partition_index, state.leader_epoch) == ("orders", 0, -2)
    assert state.delete_partition


def test_a_sent_batch_is_empty(context: ControllerContext) -> None:
    batch = RequestBatch(context, controller_id=1, listener_name="PLAINTEXT")
    batch.add_update_metadata([1])
    assert not batch.empty
    batch.send(RecordingChannels())
    assert batch.empty


def test_inter_broker_endpoint_by_listener_name() -> None:
    registration = broker(1, 0).registration
    assert inter_broker_endpoint(registration, "PLAINTEXT").port == 9091
    assert inter_broker_endpoint(registration, "MISSING").listener_name == "CLIENT"


def test_live_leaders_name_the_kafka_replication_listener(context: ControllerContext) -> None:
    """Followers replicating over a Kafka listener get the leader's endpoint there (the batch's
    listener is inter.broker.listener.name), while requests go over the control plane."""
    for broker_id, live in context.live_brokers.items():
        replication = EndPoint("REPLICATION", f"kafka-{broker_id}", 19090 + broker_id)
        context.live_brokers[broker_id] = LiveBroker(
            BrokerRegistration(broker_id, (*live.registration.endpoints, replication)),
            live.broker_epoch,
        )
    channels = RecordingChannels()
    batch = RequestBatch(context, controller_id=1, listener_name="REPLICATION")
    batch.add_leader_and_isr([2], TP0)
    batch.send(channels)
    [request] = channels.of(pb.LeaderAndIsrRequest, 2)
    assert [(x.broker_id, x.host_name, x.port) for x in request.live_leaders] == [
        (1, "kafka-1", 19091)
    ]
    config = ControllerConfig(
        inter_broker_listener_name="REPLICATION", control_plane_listener_name="PLAINTEXT"
    )
    assert config.control_plane_listener == "PLAINTEXT"
    assert ControllerConfig().control_plane_listener == "PLAINTEXT"
    registration = context.live_brokers[2].registration
    assert inter_broker_endpoint(registration, config.control_plane_listener).port == 9092


def test_controller_config_from_broker_like_object() -> None:
    class BrokerLike:
        unclean_leader_election_enable = True
        num_partitions = 4
        zookeeper_connect = "ignored"

    config = ControllerConfig.from_attributes(BrokerLike(), request_timeout_ms=5)
    assert config.unclean_leader_election_enable and config.num_partitions == 4
    assert config.request_timeout_ms == 5
    with pytest.raises(ValueError):
        ControllerConfig(leader_imbalance_per_broker_percentage=101)
