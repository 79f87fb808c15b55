"""Controller requests from anyone but the controller are refused: a forged LeaderAndIsr with a
made-up newer controller epoch (and the target's real broker epoch, read from ZooKeeper, or -1),
or with the real controller's id and epoch but a broker epoch other than the target's current
one, changes nothing, and the refusal names neither the controller nor its epoch, while a real
controller failover still moves leadership; with an inter-broker listener configured, the
Control service and replica fetches are not served on the client listener. Real broker
processes and ZooKeeper."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from minikafka.client.admin import NewTopic
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.errors import ErrorCode
from minikafka.proto.records import encode_batch
from tests.integration.cluster import Cluster
from tests.integration.conftest import ClusterFactory
from tests.integration.kafka_protocol.raw import RawKafka
from tests.integration.zookeeper import free_port

pytestmark = pytest.mark.integration

TOPIC = "orders"


def _topic_led_by(cluster: Cluster, leader: int, follower: int) -> None:
    with cluster.admin() as admin:
        created = admin.create_topics([NewTopic(TOPIC, replica_assignment={0: [leader, follower]})])
    assert created[TOPIC] is None
    cluster.wait_for(
        lambda: cluster.leader(TOPIC, 0) == leader and len(cluster.isr(TOPIC, 0)) == 2,
        timeout_s=30,
        what=f"{TOPIC}-0 led by {leader} with both replicas in sync",
    )
    first = cluster.produce(TOPIC, 0, [b"first"], to=leader, retry_s=20)  # leading by now
    assert first.ok, first


def _take_over(
    controller_id: int, controller_epoch: int, broker_epoch: int, new_leader: int, follower: int
) -> pb.LeaderAndIsrRequest:
    """What a client would send to make ``new_leader`` the leader of TOPIC-0."""
    request = pb.LeaderAndIsrRequest(
        controller_id=controller_id, controller_epoch=controller_epoch, broker_epoch=broker_epoch
    )
    request.partition_states.add(
        topic_name=TOPIC,
        partition_index=0,
        controller_epoch=controller_epoch,
        leader=new_leader,
        leader_epoch=1000,
        isr=[new_leader],
        partition_epoch=1000,
        replicas=[follower, new_leader],
    )
    return request


def _assert_follows(cluster: Cluster, broker_id: int, leader: int) -> None:
    produced = cluster.produce(TOPIC, 0, [b"to the follower"], to=broker_id)
    assert produced.error == ErrorCode.NOT_LEADER_OR_FOLLOWER, produced
    assert cluster.leader(TOPIC, 0) == leader
    assert cluster.produce(TOPIC, 0, [b"to the leader"], retry_s=10).ok


def test_a_forged_leader_and_isr_is_refused_and_failover_still_works(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(n_brokers=2)
    controller = cluster.controller_id()
    assert controller is not None
    other = 1 - controller
    _topic_led_by(cluster, leader=controller, follower=other)
    epoch = cluster.controller_epoch()
    assert epoch is not None
    control = pb_grpc.ControlStub(cluster.channel(other))
    broker_epoch = cluster.zk.get_broker_epoch(other)
    assert broker_epoch is not None

    # a newer epoch that ZooKeeper never gave anyone, with the real broker epoch
    for sender in (other, controller):
        answer = control.LeaderAndIsr(
            _take_over(sender, epoch + 1, broker_epoch, other, controller), timeout=10
        )
        # what was wrong with the request; not who the controller is, nor its epoch
        assert (answer.error_code, answer.error_message) == (
            ErrorCode.STALE_CONTROLLER_EPOCH,
            "stale controller epoch",
        )
        assert not answer.partition_errors  # nothing was applied
    # the current epoch, claimed by a broker that is not the controller
    answer = control.LeaderAndIsr(
        _take_over(other, epoch, broker_epoch, other, controller), timeout=10
    )
    assert (answer.error_code, answer.error_message) == (
        ErrorCode.STALE_CONTROLLER_EPOCH,
        "stale controller epoch",
    )
    # an older epoch: stale, without the current one
    answer = control.LeaderAndIsr(
        _take_over(controller, epoch - 1, broker_epoch, other, controller), timeout=10
    )
    assert (answer.error_code, answer.error_message) == (
        ErrorCode.STALE_CONTROLLER_EPOCH,
        "stale controller epoch",
    )
    # no broker epoch at all, an older one, or a larger one than the broker's registration
    for wrong, message in (
        (-1, "unknown broker epoch"),
        (broker_epoch - 1, "stale broker epoch"),
        (broker_epoch + 1, "unknown broker epoch"),
    ):
        answer = control.LeaderAndIsr(
            _take_over(controller, epoch, wrong, other, controller), timeout=10
        )
        assert (answer.error_code, answer.error_message) == (
            ErrorCode.STALE_BROKER_EPOCH,
            message,
        )
        assert not answer.partition_errors
    # nor may the other Control requests take anything over
    stop = pb.StopReplicaRequest(
        controller_id=other, controller_epoch=epoch + 1, broker_epoch=broker_epoch
    )
    stop.partition_states.add(topic_name=TOPIC, partition_index=0, leader_epoch=-1)
    assert control.StopReplica(stop, timeout=10).error_code == ErrorCode.STALE_CONTROLLER_EPOCH
    update = pb.UpdateMetadataRequest(
        controller_id=other, controller_epoch=epoch + 1, broker_epoch=broker_epoch
    )
    assert control.UpdateMetadata(update, timeout=10).error_code == (
        ErrorCode.STALE_CONTROLLER_EPOCH
    )

    _assert_follows(cluster, other, leader=controller)
    assert set(cluster.isr(TOPIC, 0)) == {0, 1}

    # A real new controller (the next epoch) is obeyed: the survivor takes over both roles.
    cluster.kill(controller)
    cluster.wait_for(
        lambda: cluster.controller_id() == other and cluster.leader(TOPIC, 0) == other,
        timeout_s=30,
        what=f"broker {other} as controller and leader",
    )
    assert cluster.controller_epoch() == epoch + 1
    produced = cluster.produce(TOPIC, 0, [b"after failover"], to=other, retry_s=20)
    assert produced.ok, produced
    values = [r.value for r in cluster.fetch_all(TOPIC, 0)]
    assert values == [b"first", b"to the leader", b"after failover"]


def test_control_requests_and_replica_fetches_only_on_the_inter_broker_listener(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(n_brokers=2, start=False, replication="grpc")
    client_ports = {broker_id: free_port() for broker_id in cluster.brokers}
    for broker_id, broker in cluster.brokers.items():
        cluster.start(
            broker_id,
            extra={
                "listeners": (
                    f"REPLICATION://127.0.0.1:{broker.port},"
                    f"CLIENT://127.0.0.1:{client_ports[broker_id]}"
                ),
                "listener.security.protocol.map": (
                    "REPLICATION:PLAINTEXT,CLIENT:PLAINTEXT,KAFKA:PLAINTEXT"
                ),
                "inter.broker.listener.name": "REPLICATION",
            },
        )
    cluster.wait_until_serving()
    controller = cluster.controller_id()
    assert controller is not None
    other = 1 - controller
    _topic_led_by(cluster, leader=controller, follower=other)  # replication works
    epoch = cluster.controller_epoch()
    broker_epoch = cluster.zk.get_broker_epoch(other)
    assert epoch is not None and broker_epoch is not None

    with grpc.insecure_channel(f"127.0.0.1:{client_ports[other]}") as channel:
        control = pb_grpc.ControlStub(channel)
        # even a copy of the real controller's current request is not served here
        with pytest.raises(grpc.RpcError) as refused:
            control.LeaderAndIsr(
                _take_over(controller, epoch, broker_epoch, other, controller), timeout=10
            )
        assert refused.value.code() == grpc.StatusCode.UNIMPLEMENTED
        with pytest.raises(grpc.RpcError) as refused:
            control.UpdateMetadata(
                pb.UpdateMetadataRequest(
                    controller_id=controller, controller_epoch=epoch, broker_epoch=broker_epoch
                ),
                timeout=10,
            )
        assert refused.value.code() == grpc.StatusCode.UNIMPLEMENTED

    with grpc.insecure_channel(f"127.0.0.1:{client_ports[controller]}") as channel:
        data = pb_grpc.DataStub(channel)
        produce = pb.ProduceRequest(acks=-1, timeout_ms=5000)
        produce.topic_data.add(name=TOPIC).partition_data.add(
            index=0, records=_batch(b"through the client listener")
        )
        answer = data.Produce(produce, timeout=10).responses[0].partition_responses[0]
        assert answer.error_code == ErrorCode.NONE
        # a client posing as the follower, which would report its LEO and move the HW
        fetch = pb.FetchRequest(replica_id=other, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20)
        fetch.topics.add(topic=TOPIC).partitions.add(
            partition=0, fetch_offset=1, current_leader_epoch=-1, partition_max_bytes=1 << 20
        )
        posed = data.Fetch(fetch, timeout=10).responses[0].partitions[0]
        assert posed.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        assert "inter-broker listener" in posed.error_message
        # a consumer's fetch is served
        fetch.replica_id = -1
        fetch.topics[0].partitions[0].fetch_offset = 0
        consumed = data.Fetch(fetch, timeout=10).responses[0].partitions[0]
        assert consumed.error_code == ErrorCode.NONE and consumed.high_watermark == 2

    assert set(cluster.isr(TOPIC, 0)) == {0, 1}
    # controlled shutdown (broker -> controller) goes over the inter-broker listener too
    assert cluster.stop(other) == 0


def _batch(value: bytes) -> bytes:
    return encode_batch([(0, None, value, ())])


def _replica_fetch(raw: RawKafka, replica_id: int, fetch_offset: int) -> Any:
    answer = raw.call(
        1,
        12,
        {
            "replica_id": replica_id,
            "max_wait": 0,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "topics": [
                {
                    "topic": TOPIC,
                    "partitions": [
                        {
                            "partition": 0,
                            "fetch_offset": fetch_offset,
                            "partition_max_bytes": 1 << 20,
                        }
                    ],
                }
            ],
        },
    )
    return answer.responses[0].partitions[0]


def test_followers_replicate_over_a_kafka_listener_that_alone_serves_replica_fetches(
    cluster_factory: ClusterFactory,
) -> None:
    """inter.broker.listener.name=REPLICATION (a Kafka listener) beside a Kafka CLIENT listener
    and the gRPC control plane: followers replicate over REPLICATION (the gRPC listener refuses
    replica fetches), and a client posing as a follower on CLIENT is refused."""
    cluster = cluster_factory(n_brokers=2, start=False, replication="grpc")
    client_ports = {broker_id: free_port() for broker_id in cluster.brokers}
    for broker_id, broker in cluster.brokers.items():
        cluster.start(
            broker_id,
            extra={
                "kafka.listeners": (
                    f"REPLICATION://127.0.0.1:{broker.kafka_port},"
                    f"CLIENT://127.0.0.1:{client_ports[broker_id]}"
                ),
                "listener.security.protocol.map": (
                    "PLAINTEXT:PLAINTEXT,REPLICATION:PLAINTEXT,CLIENT:PLAINTEXT"
                ),
                "inter.broker.listener.name": "REPLICATION",
                "control.plane.listener.name": "PLAINTEXT",
            },
        )
    cluster.wait_until_serving()
    controller = cluster.controller_id()
    assert controller is not None
    other = 1 - controller
    _topic_led_by(cluster, leader=controller, follower=other)  # replication works
    assert cluster.produce(TOPIC, 0, [b"second"], acks=-1, to=controller, retry_s=20).ok

    with RawKafka(f"127.0.0.1:{client_ports[controller]}") as raw:
        posed = _replica_fetch(raw, other, fetch_offset=2)
        assert posed.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        assert posed.records is None or not posed.records
        consumed = _replica_fetch(raw, -1, fetch_offset=0)  # a consumer's fetch is served
        assert consumed.error_code == ErrorCode.NONE and consumed.high_watermark == 2
    with RawKafka(cluster.brokers[controller].kafka_address) as raw:
        served = _replica_fetch(raw, other, fetch_offset=2)  # the follower's own LEO
        assert served.error_code == ErrorCode.NONE and served.high_watermark == 2

    assert set(cluster.isr(TOPIC, 0)) == {0, 1}
    # controlled shutdown (broker -> controller) goes over the gRPC control plane listener
    assert cluster.stop(other) == 0
