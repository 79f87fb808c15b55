"""KafkaController against a real ZooKeeper and fake brokers.

Each fake broker is a small gRPC Control server on 127.0.0.1 that records the controller's
requests (answering STALE_CONTROLLER_EPOCH to an epoch older than one it has seen, as a broker
does) and registers /brokers/ids/<id> with a ZooKeeper session of its own: killing the broker
closes that session. Every broker also runs a KafkaController with its own session, as every
Kafka broker does.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
import pytest

from minikafka.controller.config import ControllerConfig
from minikafka.controller.controller import (
    ElectionType,
    KafkaController,
    NewPartitions,
    NewTopic,
)
from minikafka.controller.election import LeaderAndIsr
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.cluster_state import PartitionState
from minikafka.proto.common import EndPoint, TopicPartition
from minikafka.proto.errors import ErrorCode
from minikafka.zk.errors import ControllerMovedError
from minikafka.zk.zk_data import (
    BrokerRegistration,
    TopicAssignment,
    encode_partition_state,
    encode_topic,
)
from minikafka.zk.zk_store import ZkStore
from tests.integration.zookeeper import ZooKeeperServer, expire_session

pytestmark = pytest.mark.integration

SESSION_TIMEOUT_MS = 6000


def wait_for(predicate: Callable[[], Any], timeout_s: float = 10.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or predicate}")
        time.sleep(0.02)


def settle(controller: KafkaController) -> None:
    """Wait until the controller has handled every event queued so far."""
    done = threading.Event()
    controller._enqueue("Settle", done.set)
    assert done.wait(10), "the controller's event thread is stuck"


def replicas_to_delete(controller: KafkaController, topic: str) -> set[int]:
    """The brokers whose replica of ``topic`` the controller still waits to delete, read on
    its event thread (which owns the context)."""
    brokers: set[int] = set()
    done = threading.Event()

    def read() -> None:
        ctx = controller._ctx
        brokers.update(r.broker_id for r in ctx.replicas_to_delete if r.partition.topic == topic)
        done.set()

    controller._enqueue("ReadReplicasToDelete", read)
    assert done.wait(10), "the controller's event thread is stuck"
    return brokers


class FakeBroker(pb_grpc.ControlServicer):
    """Records Control requests; see the module docstring."""

    def __init__(self, broker_id: int, zk_connect: str) -> None:
        self.broker_id = broker_id
        self.zk_connect = zk_connect
        self.lock = threading.Lock()
        self.requests: list[tuple[str, Any]] = []
        self.stale: list[tuple[str, Any]] = []
        self.max_controller_epoch = 0
        self.server = grpc.server(ThreadPoolExecutor(max_workers=2))
        pb_grpc.add_ControlServicer_to_server(self, self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()
        self.zk: ZkStore | None = None
        self.down = True
        # Replicas in an offline log dir: LeaderAndIsr answers KAFKA_STORAGE_ERROR for them.
        self.offline: set[tuple[str, int]] = set()

    def register(self) -> None:
        self.down = False
        self.zk = ZkStore.connect(self.zk_connect, session_timeout_ms=SESSION_TIMEOUT_MS)
        self.zk.ensure_paths()
        endpoint = EndPoint("PLAINTEXT", "127.0.0.1", self.port)
        self.zk.register_broker(BrokerRegistration(self.broker_id, (endpoint,)))

    def unregister(self) -> None:
        self.down = True  # a dead broker answers nothing
        if self.zk is not None:
            self.zk.close()
            self.zk = None

    def stop(self) -> None:
        self.unregister()
        self.server.stop(grace=None)

    def _record(self, kind: str, request: Any, response: Any, context: Any) -> Any:
        if self.down:
            context.abort(grpc.StatusCode.UNAVAILABLE, "broker is down")
        with self.lock:
            if request.controller_epoch < self.max_controller_epoch:
                self.stale.append((kind, request))
                response.error_code = ErrorCode.STALE_CONTROLLER_EPOCH
                return response
            self.max_controller_epoch = request.controller_epoch
            self.requests.append((kind, request))
        return response

    def LeaderAndIsr(self, request: Any, context: Any) -> Any:
        response = pb.LeaderAndIsrResponse()
        for state in request.partition_states:
            offline = (state.topic_name, state.partition_index) in self.offline
            response.partition_errors.add(
                topic_name=state.topic_name,
                partition_index=state.partition_index,
                error_code=ErrorCode.KAFKA_STORAGE_ERROR if offline else ErrorCode.NONE,
            )
        return self._record("LeaderAndIsr", request, response, context)

    def UpdateMetadata(self, request: Any, context: Any) -> Any:
        return self._record("UpdateMetadata", request, pb.UpdateMetadataResponse(), context)

    def StopReplica(self, request: Any, context: Any) -> Any:
        return self._record("StopReplica", request, pb.StopReplicaResponse(), context)

    def received(self, kind: str) -> list[Any]:
        with self.lock:
            return [r for k, r in self.requests if k == kind]

    def clear(self) -> None:
        with self.lock:
            self.requests.clear()

    def last_leader_and_isr(self, topic: str, partition: int) -> Any | None:
        found = None
        for request in self.received("LeaderAndIsr"):
            for state in request.partition_states:
                if (state.topic_name, state.partition_index) == (topic, partition):
                    found = state
        return found

    def metadata_for(self, topic: str, partition: int) -> Any | None:
        found = None
        for request in self.received("UpdateMetadata"):
            for state in request.partition_states:
                if (state.topic_name, state.partition_index) == (topic, partition):
                    found = state
        return found

    def wait_leader_and_isr(
        self, topic: str, partition: int, predicate: Callable[[Any], bool] = lambda s: True
    ) -> Any:
        def check() -> Any:
            state = self.last_leader_and_isr(topic, partition)
            return state if state is not None and predicate(state) else None

        return wait_for(check, what=f"LeaderAndIsr for {topic}-{partition} at {self.broker_id}")

    def wait_metadata(
        self, topic: str, partition: int, predicate: Callable[[Any], bool] = lambda s: True
    ) -> Any:
        def check() -> Any:
            state = self.metadata_for(topic, partition)
            return state if state is not None and predicate(state) else None

        return wait_for(check, what=f"UpdateMetadata for {topic}-{partition} at {self.broker_id}")

    def ControlledShutdown(self, request: Any, context: Any) -> Any:
        return pb.ControlledShutdownResponse(error_code=ErrorCode.NOT_CONTROLLER)

    def WriteTxnMarkers(self, request: Any, context: Any) -> Any:
        return pb.WriteTxnMarkersResponse()  # a controller never sends one

    def stop_replicas(self) -> list[Any]:
        return [s for r in self.received("StopReplica") for s in r.partition_states]


class Cluster:
    def __init__(self, zk_connect: str, config: ControllerConfig, n_brokers: int = 3) -> None:
        self.zk_connect = zk_connect
        self.config = config
        self.admin = ZkStore.connect(zk_connect, session_timeout_ms=SESSION_TIMEOUT_MS)
        self.admin.ensure_paths()
        self.brokers: dict[int, FakeBroker] = {}
        self.controllers: dict[int, KafkaController] = {}
        self.controller_zks: dict[int, ZkStore] = {}
        for broker_id in range(1, n_brokers + 1):
            broker = FakeBroker(broker_id, zk_connect)
            broker.register()
            self.brokers[broker_id] = broker
        for broker_id in self.brokers:
            self.start_controller(broker_id)

    def start_controller(self, broker_id: int) -> KafkaController:
        zk = ZkStore.connect(self.zk_connect, session_timeout_ms=SESSION_TIMEOUT_MS)
        controller = KafkaController(zk, broker_id, self.config)
        self.controller_zks[broker_id] = zk
        self.controllers[broker_id] = controller
        controller.startup()
        return controller

    def stop_controller(self, broker_id: int) -> None:
        controller = self.controllers.pop(broker_id, None)
        if controller is not None:
            controller.shutdown()
        zk = self.controller_zks.pop(broker_id, None)
        if zk is not None:
            zk.close()

    def kill(self, broker_id: int) -> None:
        """The broker process dies: its registration goes, and its controller with it."""
        self.stop_controller(broker_id)
        self.brokers[broker_id].unregister()

    def restart(self, broker_id: int) -> None:
        self.brokers[broker_id].register()
        self.start_controller(broker_id)

    def active(self) -> KafkaController:
        return wait_for(self._single_active, what="a single active controller")  # type: ignore[no-any-return]

    def _single_active(self) -> KafkaController | None:
        active = [c for c in self.controllers.values() if c.is_active]
        return active[0] if len(active) == 1 else None

    def state(self, topic: str, partition: int) -> PartitionState:
        read = self.admin.get_partition_state(topic, partition)
        assert read is not None
        return read.value

    def wait_state(
        self, topic: str, partition: int, predicate: Callable[[PartitionState], bool]
    ) -> PartitionState:
        def check() -> PartitionState | None:
            read = self.admin.get_partition_state(topic, partition)
            return read.value if read is not None and predicate(read.value) else None

        return wait_for(check, what=f"state of {topic}-{partition}")  # type: ignore[no-any-return]

    def non_controllers(self) -> list[int]:
        active = self.active().broker_id
        return [b for b in sorted(self.controllers) if b != active]

    def close(self) -> None:
        for broker_id in list(self.controllers):
            self.stop_controller(broker_id)
        for broker in self.brokers.values():
            broker.stop()
        self.admin.close()


@pytest.fixture
def make_cluster(zk_connect: str) -> Iterator[Callable[..., Cluster]]:
    clusters: list[Cluster] = []

    def make(n_brokers: int = 3, **config: Any) -> Cluster:
        settings: dict[str, Any] = {"auto_leader_rebalance_enable": False, "retry_backoff_ms": 50}
        settings.update(config)
        cluster = Cluster(zk_connect, ControllerConfig(**settings), n_brokers)
        clusters.append(cluster)
        return cluster

    yield make
    for cluster in clusters:
        cluster.close()


def create_topic(cluster: Cluster, name: str, assignment: dict[int, list[int]]) -> None:
    results = cluster.active().create_topics([NewTopic(name, assignments=assignment)]).result(10)
    assert results[name].error == ErrorCode.NONE, results[name]


# --- election and failover -----------------------------------------------------------------------


def test_exactly_one_controller_and_failover_bumps_the_epoch(
    make_cluster: Callable[..., Cluster],
) -> None:
    cluster = make_cluster()
    first = cluster.active()
    epoch = first.epoch
    assert epoch >= 1
    assert cluster.admin.get_controller() is not None
    assert cluster.admin.get_controller().broker_id == first.broker_id  # type: ignore[union-attr]
    # every broker got UpdateMetadata from the new controller, with its own broker epoch
    for broker in cluster.brokers.values():
        updates = wait_for(functools.partial(broker.received, "UpdateMetadata"), what="UM")
        update = updates[-1]
        assert update.controller_id == first.broker_id
        assert update.controller_epoch == epoch
        found = cluster.admin.get_broker_and_epoch(broker.broker_id)
        assert found is not None and update.broker_epoch == found[1]
        assert sorted(b.id for b in update.live_brokers) == [1, 2, 3]

    cluster.kill(first.broker_id)
    second = cluster.active()
    assert second.broker_id != first.broker_id
    assert second.epoch == epoch + 1
    assert cluster.admin.get_controller_epoch().value == epoch + 1  # type: ignore[union-attr]
    survivor = cluster.brokers[second.broker_id]
    wait_for(
        lambda: any(r.controller_epoch == epoch + 1 for r in survivor.received("UpdateMetadata")),
        what="UpdateMetadata from the new controller",
    )


def test_controller_session_expiry_resigns_and_someone_is_reelected(
    make_cluster: Callable[..., Cluster], zookeeper_server: ZooKeeperServer
) -> None:
    cluster = make_cluster()
    first = cluster.active()
    epoch = first.epoch
    expire_session(cluster.controller_zks[first.broker_id].client, zookeeper_server.connect_string)
    wait_for(lambda: cluster.admin.get_controller_epoch().value > epoch, what="a new epoch")  # type: ignore[union-attr]
    new = cluster.active()
    assert new.epoch == epoch + 1
    if new is not first:
        assert not first.is_active and first.epoch == -1


def test_zookeeper_restart_keeps_the_controller_working(
    make_cluster: Callable[..., Cluster], zookeeper_server: ZooKeeperServer
) -> None:
    cluster = make_cluster()
    before = cluster.active()
    zookeeper_server.stop()
    time.sleep(0.5)
    zookeeper_server.start()
    after = cluster.active()
    create_topic(cluster, "after-restart", {0: [1, 2]})
    assert cluster.wait_state("after-restart", 0, lambda s: True).leader == 1
    if after is before:
        assert after.epoch == before.epoch  # the session survived: no new election


def test_a_zombie_controller_is_fenced(make_cluster: Callable[..., Cluster]) -> None:
    cluster = make_cluster()
    zombie = cluster.active()
    create_topic(cluster, "fenced", {0: [1, 2, 3]})
    old_state = cluster.state("fenced", 0)
    settle(zombie)

    # The zombie's event thread stalls (a long GC pause) while its session ends and another
    # broker becomes controller; then it carries on with a write.
    resume = threading.Event()
    outcome: dict[str, Any] = {}

    def stalled_write() -> None:
        resume.wait(20)
        tp = TopicPartition("fenced", 0)
        try:
            zombie._partitions.update(tp, lambda s: LeaderAndIsr(3, (3,)), "zombie write")
        except ControllerMovedError as exc:
            outcome["fenced"] = exc
            raise

    zombie._enqueue("Stall", stalled_write)
    zombie_zk = cluster.controller_zks[zombie.broker_id]
    # Without expiring the zombie's session (its LOST event would queue behind the stall
    # anyway), make another controller win the way it would after that expiry.
    cluster.admin.client.delete("/controller")
    new = wait_for(
        lambda: next(
            (c for c in cluster.controllers.values() if c is not zombie and c.is_active), None
        ),
        what="a second controller",
    )
    assert new.epoch == zombie.epoch + 1
    resume.set()
    wait_for(lambda: "fenced" in outcome, what="the zombie's write to fail")
    wait_for(lambda: not zombie.is_active, what="the zombie to resign")
    assert cluster.state("fenced", 0) == old_state
    assert zombie_zk.client.connected
    # Brokers that heard from the new controller refuse the old epoch.
    broker = cluster.brokers[new.broker_id]
    wait_for(lambda: broker.max_controller_epoch == new.epoch, what="broker to see new epoch")


def test_a_stale_controller_epoch_answer_makes_the_zombie_resign(
    make_cluster: Callable[..., Cluster],
) -> None:
    cluster = make_cluster()
    zombie = cluster.active()
    assert zombie._controller_watch is not None
    zombie._controller_watch.cancel()  # it will not hear that /controller changed hands
    settle(zombie)
    resume = threading.Event()

    def stalled_send() -> None:
        resume.wait(20)
        batch = zombie._new_batch()
        batch.add_update_metadata(zombie._ctx.live_brokers)
        batch.send(zombie._channels)

    zombie._enqueue("Stall", stalled_send)
    cluster.admin.client.delete("/controller")
    new = wait_for(
        lambda: next(
            (c for c in cluster.controllers.values() if c is not zombie and c.is_active), None
        ),
        what="a second controller",
    )
    for broker in cluster.brokers.values():
        wait_for(lambda b=broker: b.max_controller_epoch == new.epoch, what="the new epoch")  # type: ignore[misc]
    resume.set()
    wait_for(lambda: not zombie.is_active, what="the zombie to resign")
    assert any(b.stale for b in cluster.brokers.values())
    assert new.is_active


# --- topics --------------------------------------------------------------------------------------


def test_create_topic_writes_kafka_json_and_elects_first_replicas(
    make_cluster: Callable[..., Cluster],
) -> None:
    cluster = make_cluster()
    controller = cluster.active()
    results = controller.create_topics(
        [NewTopic("orders", 3, 2, configs={"retention.ms": "1000"})]
    ).result(10)
    result = results["orders"]
    assert result.error == ErrorCode.NONE
    assert (result.num_partitions, result.replication_factor) == (3, 2)
    assert len(result.topic_id) == 22

    data, _ = cluster.admin.client.get("/brokers/topics/orders")
    topic_json = json.loads(data)
    assert topic_json["version"] == 3
    assert topic_json["topic_id"] == result.topic_id
    assert topic_json["adding_replicas"] == {} and topic_json["removing_replicas"] == {}
    partitions = {int(p): r for p, r in topic_json["partitions"].items()}
    assert sorted(partitions) == [0, 1, 2]
    leaders = set()
    for partition, replicas in partitions.items():
        assert len(replicas) == 2 and len(set(replicas)) == 2
        data, stat = cluster.admin.client.get(
            f"/brokers/topics/orders/partitions/{partition}/state"
        )
        assert json.loads(data) == {
            "controller_epoch": controller.epoch,
            "leader": replicas[0],
            "version": 1,
            "leader_epoch": 0,
            "isr": replicas,
        }
        leaders.add(replicas[0])
        for replica in replicas:
            state = cluster.brokers[replica].wait_leader_and_isr("orders", partition)
            assert state.leader == replicas[0]
            assert state.is_new and state.leader_epoch == 0
            assert list(state.replicas) == replicas and list(state.isr) == replicas
            assert state.partition_epoch == stat.version
            assert state.topic_id == result.topic_id
    assert leaders == {1, 2, 3}  # (s + i) mod n spreads the leaders
    assert cluster.admin.get_topic_config("orders") == {"retention.ms": "1000"}
    for broker in cluster.brokers.values():
        broker.wait_metadata("orders", 2)


def test_create_topic_errors_and_validate_only(make_cluster: Callable[..., Cluster]) -> None:
    cluster = make_cluster()
    controller = cluster.active()
    create_topic(cluster, "exists", {0: [1]})
    results = controller.create_topics(
        [
            NewTopic("exists", 1, 1),
            NewTopic("bad name!", 1, 1),
            NewTopic("too-many-replicas", 1, 4),
            NewTopic("no-partitions", 0, 1),
            NewTopic("both", 1, 1, assignments={0: [1]}),
            NewTopic("gap", assignments={0: [1], 2: [2]}),
            NewTopic("unknown-broker", assignments={0: [1, 9]}),
            NewTopic("dup-replicas", assignments={0: [1, 1]}),
            NewTopic("defaults"),
        ]
    ).result(10)
    codes = {name: r.error for name, r in results.items()}
    assert codes == {
        "exists": ErrorCode.TOPIC_ALREADY_EXISTS,
        "bad name!": ErrorCode.INVALID_TOPIC_EXCEPTION,
        "too-many-replicas": ErrorCode.INVALID_REPLICATION_FACTOR,
        "no-partitions": ErrorCode.INVALID_PARTITIONS,
        "both": ErrorCode.INVALID_REQUEST,
        "gap": ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        "unknown-broker": ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        "dup-replicas": ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        "defaults": ErrorCode.NONE,
    }
    assert (results["defaults"].num_partitions, results["defaults"].replication_factor) == (1, 1)

    collide = controller.create_topics([NewTopic("a.b", 1, 1), NewTopic("a_b", 1, 1)]).result(10)
    assert collide["a.b"].error == ErrorCode.NONE
    assert collide["a_b"].error == ErrorCode.INVALID_TOPIC_EXCEPTION

    dry = controller.create_topics([NewTopic("dry", 2, 3)], validate_only=True).result(10)
    assert dry["dry"].error == ErrorCode.NONE and dry["dry"].num_partitions == 2
    assert cluster.admin.get_topic("dry") is None

    # a standby answers NOT_CONTROLLER
    standby = cluster.controllers[cluster.non_controllers()[0]]
    refused = standby.create_topics([NewTopic("x", 1, 1)]).result(10)
    assert refused["x"].error == ErrorCode.NOT_CONTROLLER


def test_topic_written_directly_to_zookeeper_gets_leaders(
    make_cluster: Callable[..., Cluster],
) -> None:
    cluster = make_cluster()
    cluster.active()
    cluster.admin.create_topic(TopicAssignment("direct", None, {0: (2, 3), 1: (3, 1)}))
    assert cluster.wait_state("direct", 0, lambda s: True) == PartitionState(
        2, 0, (2, 3), cluster.active().epoch
    )
    assert cluster.wait_state("direct", 1, lambda s: True).leader == 3
    state = cluster.brokers[1].wait_leader_and_isr("direct", 1)
    read = cluster.admin.get_topic("direct")
    assert read is not None and read.value.topic_id is not None  # the controller gave it an id
    assert state.topic_id == read.value.topic_id


def test_a_new_topic_with_states_left_over_goes_by_them(
    make_cluster: Callable[..., Cluster],
) -> None:
    """A topic that appears with states already (written by an earlier controller cut
    short): the one with a live leader is announced as it is, the one whose leader is gone
    gets a leader; neither is created again."""
    cluster = make_cluster()
    epoch = cluster.active().epoch
    gone, other = cluster.non_controllers()
    cluster.brokers[gone].unregister()
    zk = cluster.admin
    wait_for(lambda: gone not in zk.get_live_broker_ids(), what=f"broker {gone} gone")
    kept = PartitionState(other, 4, (other,), epoch)
    orphaned = PartitionState(gone, 6, (gone, other), epoch)
    assignment = TopicAssignment("leftover", None, {0: (other, gone), 1: (gone, other)})
    txn = zk.client.transaction()  # the topic appears with its states
    txn.create("/brokers/topics/leftover", encode_topic(assignment))
    txn.create("/brokers/topics/leftover/partitions")
    for partition, state in enumerate((kept, orphaned)):
        txn.create(f"/brokers/topics/leftover/partitions/{partition}")
        txn.create(
            f"/brokers/topics/leftover/partitions/{partition}/state", encode_partition_state(state)
        )
    assert not [r for r in txn.commit() if isinstance(r, Exception)]
    assert cluster.brokers[other].wait_leader_and_isr("leftover", 0).leader_epoch == 4
    assert cluster.wait_state("leftover", 1, lambda s: s.leader == other) == PartitionState(
        other, 7, (other,), epoch
    )
    assert cluster.state("leftover", 0) == kept


def test_create_partitions(make_cluster: Callable[..., Cluster]) -> None:
    cluster = make_cluster()
    controller = cluster.active()
    create_topic(cluster, "grow", {0: [2, 3], 1: [3, 1]})
    results = controller.create_partitions(
        {
            "grow": NewPartitions(4),
            "missing": NewPartitions(2),
        }
    ).result(10)
    assert results["grow"].error == ErrorCode.NONE
    assert results["missing"].error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    read = cluster.admin.get_topic("grow")
    assert read is not None
    # continuing (s + i + j) mod n from partition 0's first replica (s = index of broker 2)
    assert dict(read.value.partitions) == {0: (2, 3), 1: (3, 1), 2: (1, 2), 3: (2, 3)}
    assert cluster.wait_state("grow", 3, lambda s: True).leader == 2
    wait_for(lambda: cluster.brokers[1].last_leader_and_isr("grow", 2), what="LeaderAndIsr")

    again = controller.create_partitions({"grow": NewPartitions(4)}).result(10)
    assert again["grow"].error == ErrorCode.INVALID_PARTITIONS
    manual = controller.create_partitions({"grow": NewPartitions(5, [[3, 1]])}).result(10)
    assert manual["grow"].error == ErrorCode.NONE
    assert cluster.wait_state("grow", 4, lambda s: True).leader == 3


def test_topic_deletion_stops_replicas_and_removes_znodes(
    make_cluster: Callable[..., Cluster],
) -> None:
    cluster = make_cluster()
    controller = cluster.active()
    create_topic(cluster, "doomed", {0: [1, 2], 1: [2, 3]})
    cluster.admin.set_topic_config("doomed", {"retention.ms": "5"})
    results = controller.delete_topics(["doomed", "never-was"]).result(10)
    assert results["doomed"].error == ErrorCode.NONE
    assert results["never-was"].error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    wait_for(
        lambda: not cluster.admin.client.exists("/admin/delete_topics/doomed"),
        what="the deletion mark to go, last",
    )
    assert cluster.admin.get_topic("doomed") is None
    assert not cluster.admin.client.exists("/config/topics/doomed")
    for broker_id, partitions in {1: {0}, 2: {0, 1}, 3: {1}}.items():
        stops = cluster.brokers[broker_id].stop_replicas()
        assert {s.partition_index for s in stops if s.topic_name == "doomed"} == partitions
        assert all(s.delete_partition and s.leader_epoch == -2 for s in stops)
        gone = cluster.brokers[broker_id].metadata_for("doomed", min(partitions))
        assert gone is not None and gone.leader == -2
    # the name is free again
    create_topic(cluster, "doomed", {0: [3]})


def test_topic_deletion_waits_for_a_dead_replica(make_cluster: Callable[..., Cluster]) -> None:
    cluster = make_cluster()
    victim = cluster.non_controllers()[0]
    other = next(b for b in cluster.brokers if b != victim)
    create_topic(cluster, "later", {0: [victim, other]})
    cluster.kill(victim)
    cluster.wait_state("later", 0, lambda s: s.leader == other)
    cluster.active().delete_topics(["later"]).result(10)
    wait_for(
        lambda: any(s.topic_name == "later" for s in cluster.brokers[other].stop_replicas()),
        what="StopReplica to the live replica",
    )
    # The live replica's answer handled: had the controller not waited for the dead one, that
    # event would have deleted the topic.
    wait_for(
        lambda: replicas_to_delete(cluster.active(), "later") == {victim},
        what="the live replica's StopReplica answer",
    )
    assert cluster.admin.get_topic("later") is not None  # the dead replica is not deleted yet
    cluster.restart(victim)
    wait_for(lambda: cluster.admin.get_topic("later") is None, what="deletion to finish")
    assert any(s.topic_name == "later" for s in cluster.brokers[victim].stop_replicas())


def test_deletion_disabled(make_cluster: Callable[..., Cluster]) -> None:
    cluster = make_cluster(delete_topic_enable=False)
    create_topic(cluster, "kept", {0: [1]})
    results = cluster.active().delete_topics(["kept"]).result(10)
    assert results["kept"].error == ErrorCode.TOPIC_DELETION_DISABLED
    assert cluster.admin.get_topic("kept") is not None


# --- broker failure and return -------------------------------------------------------------------


def test_broker_loss_moves_leadership_in_ar_order_and_return_does_not_move_it_back(
    make_cluster: Callable[..., Cluster],
) -> None:
    cluster = make_cluster()
    controller_id = cluster.active().broker_id
    a, b = cluster.non_controllers()
    c = controller_id
    create_topic(cluster, "moves", {0: [a, b, c], 1: [b, a, c]})

    cluster.kill(a)
    led = cluster.wait_state("moves", 0, lambda s: s.leader != a)
    assert (led.leader, led.leader_epoch, led.isr) == (b, 1, (b, c))
    followed = cluster.wait_state("moves", 1, lambda s: a not in s.isr)
    assert (followed.leader, followed.leader_epoch, followed.isr) == (b, 1, (b, c))
    for broker_id in (b, c):
        state = cluster.brokers[broker_id].wait_leader_and_isr(
            "moves", 0, lambda s: s.leader_epoch == 1
        )
        assert state.leader == b and list(state.isr) == [b, c]
        um = cluster.brokers[broker_id].wait_metadata("moves", 0, lambda s: s.leader_epoch == 1)
        assert list(um.offline_replicas) == [a]

    cluster.brokers[a].clear()
    cluster.restart(a)
    state = wait_for(
        lambda: cluster.brokers[a].last_leader_and_isr("moves", 0), what="LeaderAndIsr to a"
    )
    assert state.leader == b and state.leader_epoch == 1
    settle(cluster.active())  # the rest of a's startup
    assert cluster.state("moves", 0).leader == b  # leadership does not move back by itself


def test_a_new_controller_handles_brokers_that_died_while_nobody_watched(
    make_cluster: Callable[..., Cluster],
) -> None:
    cluster = make_cluster()
    create_topic(cluster, "gap", {0: [2, 1, 3], 1: [1, 2, 3]})
    for broker_id in list(cluster.controllers):
        cluster.stop_controller(broker_id)
    cluster.brokers[2].unregister()
    cluster.start_controller(1)
    led = cluster.wait_state("gap", 0, lambda s: s.leader != 2)
    assert (led.leader, led.leader_epoch, led.isr) == (1, 1, (1, 3))
    followed = cluster.wait_state("gap", 1, lambda s: 2 not in s.isr)
    assert (followed.leader, followed.leader_epoch, followed.isr) == (1, 1, (1, 3))
    cluster.brokers[3].wait_leader_and_isr("gap", 0, lambda s: s.leader == 1)


def test_no_live_isr_member_leaves_the_partition_offline(
    make_cluster: Callable[..., Cluster],
) -> None:
    cluster = make_cluster()
    a, b = cluster.non_controllers()
    create_topic(cluster, "fragile", {0: [a, b]})
    cluster.kill(b)
    cluster.wait_state("fragile", 0, lambda s: s.isr == (a,))
    cluster.kill(a)
    state = cluster.wait_state("fragile", 0, lambda s: s.leader == -1)
    assert state.isr == (a,)  # Kafka keeps the last in-sync replica in the ISR
    assert state.leader_epoch == 2

    cluster.restart(b)  # not in the ISR: without unclean election it may not lead
    wait_for(lambda: cluster.brokers[b].last_leader_and_isr("fragile", 0), what="LeaderAndIsr")
    settle(cluster.active())  # the rest of b's startup, where a clean election would be
    assert cluster.state("fragile", 0).leader == -1
    results = cluster.active().elect_leaders(ElectionType.UNCLEAN, [TopicPartition("fragile", 0)])
    assert results.result(10)[TopicPartition("fragile", 0)].error == ErrorCode.NONE
    elected = cluster.wait_state("fragile", 0, lambda s: s.leader == b)
    assert elected.isr == (b,)


def test_unclean_leader_election_enabled_elects_an_out_of_sync_replica(
    make_cluster: Callable[..., Cluster],
) -> None:
    cluster = make_cluster(unclean_leader_election_enable=True)
    a, b = cluster.non_controllers()
    create_topic(cluster, "unclean", {0: [a, b]})
    cluster.kill(b)
    cluster.wait_state("unclean", 0, lambda s: s.isr == (a,))
    cluster.kill(a)
    cluster.wait_state("unclean", 0, lambda s: s.leader == -1)
    cluster.restart(b)
    state = cluster.wait_state("unclean", 0, lambda s: s.leader == b)
    assert state.isr == (b,)


def test_a_topic_override_enables_unclean_election(make_cluster: Callable[..., Cluster]) -> None:
    cluster = make_cluster()  # the broker default stays false
    a, b = cluster.non_controllers()
    create_topic(cluster, "lenient", {0: [a, b]})
    create_topic(cluster, "strict", {0: [a, b]})
    cluster.admin.set_topic_config("lenient", {"unclean.leader.election.enable": "true"})
    cluster.kill(b)
    cluster.wait_state("lenient", 0, lambda s: s.isr == (a,))
    cluster.wait_state("strict", 0, lambda s: s.isr == (a,))
    cluster.kill(a)
    cluster.wait_state("strict", 0, lambda s: s.leader == -1)
    cluster.restart(b)
    assert cluster.wait_state("lenient", 0, lambda s: s.leader == b).isr == (b,)
    settle(cluster.active())
    assert cluster.state("strict", 0).leader == -1


def test_the_last_isr_member_returning_leads_again(make_cluster: Callable[..., Cluster]) -> None:
    cluster = make_cluster()
    a, _ = cluster.non_controllers()
    create_topic(cluster, "single", {0: [a]})
    cluster.kill(a)
    cluster.wait_state("single", 0, lambda s: s.leader == -1)
    cluster.restart(a)
    state = cluster.wait_state("single", 0, lambda s: s.leader == a)
    assert state.isr == (a,) and state.leader_epoch == 2


# --- ISR changes and preferred elections ---------------------------------------------------------


def set_isr(cluster: Cluster, topic: str, partition: int, isr: tuple[int, ...]) -> None:
    """What a leader does when its ISR changes: state znode, then a notification."""
    read = cluster.admin.get_partition_state(topic, partition)
    assert read is not None
    state = read.value
    changed = PartitionState(state.leader, state.leader_epoch, isr, state.controller_epoch)
    cluster.admin.update_partition_state(topic, partition, changed, read.zk_version)
    cluster.admin.create_isr_change_notification([TopicPartition(topic, partition)])


def rejoin_isr(cluster: Cluster, topic: str, partition: int, replica: int) -> None:
    """What a leader does when a follower catches up: state znode, then a notification."""
    read = cluster.admin.get_partition_state(topic, partition)
    assert read is not None
    state = read.value
    grown = PartitionState(
        state.leader, state.leader_epoch, (*state.isr, replica), state.controller_epoch
    )
    cluster.admin.update_partition_state(topic, partition, grown, read.zk_version)
    cluster.admin.create_isr_change_notification([TopicPartition(topic, partition)])


def test_isr_change_notification_updates_metadata(make_cluster: Callable[..., Cluster]) -> None:
    cluster = make_cluster()
    a, b = cluster.non_controllers()
    create_topic(cluster, "isr", {0: [a, b]})
    cluster.kill(b)
    cluster.wait_state("isr", 0, lambda s: s.isr == (a,))
    cluster.restart(b)
    rejoin_isr(cluster, "isr", 0, b)
    for broker in cluster.brokers.values():
        broker.wait_metadata("isr", 0, lambda s: list(s.isr) == [a, b])
    wait_for(
        lambda: not cluster.admin.get_isr_change_notification_names(),
        what="notifications deleted",
    )


def test_preferred_election_manual_and_by_znode(make_cluster: Callable[..., Cluster]) -> None:
    cluster = make_cluster()
    a, b = cluster.non_controllers()
    create_topic(cluster, "pref", {0: [a, b], 1: [a, b]})
    cluster.kill(a)
    cluster.wait_state("pref", 0, lambda s: s.leader == b)
    cluster.wait_state("pref", 1, lambda s: s.leader == b)
    tp0, tp1 = TopicPartition("pref", 0), TopicPartition("pref", 1)
    not_available = cluster.active().elect_leaders(ElectionType.PREFERRED, [tp0]).result(10)
    assert not_available[tp0].error == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE

    cluster.restart(a)
    rejoin_isr(cluster, "pref", 0, a)
    rejoin_isr(cluster, "pref", 1, a)
    cluster.wait_state("pref", 1, lambda s: a in s.isr)
    results = cluster.active().elect_leaders(ElectionType.PREFERRED, [tp0]).result(10)
    assert results[tp0].error == ErrorCode.NONE
    state = cluster.wait_state("pref", 0, lambda s: s.leader == a)
    assert state.leader_epoch == 2 and set(state.isr) == {a, b}
    again = cluster.active().elect_leaders(ElectionType.PREFERRED, [tp0]).result(10)
    assert again[tp0].error == ErrorCode.ELECTION_NOT_NEEDED
    unknown = TopicPartition("pref", 7)
    missing = cluster.active().elect_leaders(ElectionType.PREFERRED, [unknown]).result(10)
    assert missing[unknown].error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    # kafka-preferred-replica-election writes the admin znode instead
    cluster.admin.create_preferred_replica_election([tp1])
    cluster.wait_state("pref", 1, lambda s: s.leader == a)
    wait_for(lambda: cluster.admin.get_preferred_replica_election() is None, what="znode deleted")


def test_auto_leader_rebalance(make_cluster: Callable[..., Cluster]) -> None:
    cluster = make_cluster(
        auto_leader_rebalance_enable=True,
        leader_imbalance_check_interval_seconds=0.3,
        leader_imbalance_per_broker_percentage=10,
    )
    a, b = cluster.non_controllers()
    create_topic(cluster, "auto", {0: [a, b]})
    cluster.kill(a)
    cluster.wait_state("auto", 0, lambda s: s.leader == b)
    cluster.brokers[a].clear()
    cluster.restart(a)
    wait_for(lambda: cluster.brokers[a].last_leader_and_isr("auto", 0), what="LeaderAndIsr to a")
    controller = cluster.active()
    settle(controller)
    # An imbalance check runs after a's startup (the timer rescheduled), and ends.
    scheduled = controller._next_rebalance
    wait_for(lambda: controller._next_rebalance != scheduled, what="an imbalance check")
    settle(controller)
    assert cluster.state("auto", 0).leader == b  # a is not in the ISR yet
    rejoin_isr(cluster, "auto", 0, a)
    state = cluster.wait_state("auto", 0, lambda s: s.leader == a)
    assert set(state.isr) == {a, b}


# --- controlled shutdown -------------------------------------------------------------------------


def test_controlled_shutdown_moves_leadership_and_stops_followers(
    make_cluster: Callable[..., Cluster],
) -> None:
    cluster = make_cluster()
    controller = cluster.active()
    a, b = cluster.non_controllers()
    c = controller.broker_id
    create_topic(cluster, "calm", {0: [a, b, c], 1: [b, a, c]})
    create_topic(cluster, "alone", {0: [a]})
    found = cluster.admin.get_broker_and_epoch(a)
    assert found is not None
    broker_epoch = found[1]

    create_topic(cluster, "stuck", {0: [a, b]})
    set_isr(cluster, "stuck", 0, (a,))  # b fell behind: it cannot take over
    settle(controller)

    stale = controller.controlled_shutdown(a, broker_epoch - 1).result(10)
    assert stale.error == ErrorCode.STALE_BROKER_EPOCH

    result = controller.controlled_shutdown(a, broker_epoch).result(10)
    assert result.error == ErrorCode.NONE
    # "stuck" has no other ISR member; "alone" has one replica, which does not count
    assert result.remaining == [TopicPartition("stuck", 0)]
    led = cluster.state("calm", 0)
    assert (led.leader, led.leader_epoch, led.isr) == (b, 1, (b, c))
    followed = cluster.state("calm", 1)
    assert (followed.leader, followed.leader_epoch, followed.isr) == (b, 1, (b, c))
    assert cluster.state("alone", 0).leader == a
    stops = wait_for(lambda: cluster.brokers[a].stop_replicas(), what="StopReplica")
    assert [(s.topic_name, s.partition_index, s.delete_partition) for s in stops] == [
        ("calm", 1, False)
    ]
    wait_for(
        lambda: (s := cluster.brokers[a].last_leader_and_isr("calm", 0)) and s.leader == b,
        what="the shutting-down broker to learn the new leader",
    )

    not_controller = cluster.controllers[b].controlled_shutdown(a, broker_epoch).result(10)
    assert not_controller.error == ErrorCode.NOT_CONTROLLER


def test_requests_carry_broker_epochs_of_reregistered_brokers(
    make_cluster: Callable[..., Cluster],
) -> None:
    cluster = make_cluster()
    a, _ = cluster.non_controllers()
    before = cluster.admin.get_broker_and_epoch(a)
    assert before is not None
    broker = cluster.brokers[a]
    broker.unregister()
    broker.clear()
    broker.register()  # a bounce: same id, new czxid
    after = cluster.admin.get_broker_and_epoch(a)
    assert after is not None and after[1] > before[1]
    wait_for(
        lambda: any(r.broker_epoch == after[1] for r in broker.received("UpdateMetadata")),
        what="UpdateMetadata with the new broker epoch",
    )


def test_a_log_dir_event_moves_leadership_off_the_offline_replicas(
    make_cluster: Callable[..., Cluster],
) -> None:
    """KIP-112: a broker that lost a log dir writes /log_dir_event_notification; the
    controller asks it (LeaderAndIsr) which replicas are offline, moves their leadership to
    another ISR member, shrinks the ISRs and deletes the notification. Its replicas on
    healthy dirs stay as they are."""
    cluster = make_cluster()
    a, b = cluster.non_controllers()
    c = cluster.active().broker_id
    create_topic(cluster, "dirs", {0: [a, b, c], 1: [b, a, c], 2: [a, b, c]})
    cluster.brokers[a].offline = {("dirs", 0), ("dirs", 1)}  # dirs-2 is on a healthy dir

    # Written as a Kafka broker writes it (LogDirEventNotificationSequenceZNode).
    cluster.admin.client.create(
        "/log_dir_event_notification/log_dir_event_",
        json.dumps({"version": 1, "broker": a, "event": 1}).encode(),
        sequence=True,
        makepath=True,
    )
    led = cluster.wait_state("dirs", 0, lambda s: s.leader != a)
    assert (led.leader, led.isr) == (b, (b, c))
    followed = cluster.wait_state("dirs", 1, lambda s: a not in s.isr)
    assert (followed.leader, followed.isr) == (b, (b, c))
    settle(cluster.active())  # the rest of the log dir event
    assert cluster.state("dirs", 2).leader == a and a in cluster.state("dirs", 2).isr
    for broker_id in (b, c):
        um = cluster.brokers[broker_id].wait_metadata("dirs", 0, lambda s: s.leader == b)
        assert list(um.offline_replicas) == [a]
    wait_for(
        lambda: not cluster.admin.get_log_dir_event_notification_names(),
        what="the log dir event deleted",
    )

    # Restarted (its dirs back), the broker's replicas count as online again.
    cluster.kill(a)
    cluster.brokers[a].offline = set()
    cluster.brokers[a].clear()
    cluster.restart(a)
    um = cluster.brokers[a].wait_metadata("dirs", 0)
    assert list(um.offline_replicas) == []
