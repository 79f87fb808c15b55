"""Partition reassignment (KIP-455) on real brokers: AlterPartitionReassignments and
ListPartitionReassignments from kafka-python's admin client, minikafka's AdminClient and the
``minikafka reassign-partitions`` tool; /admin/reassign_partitions the old way.

The move of the stories: a partition on brokers {0,1,2} goes to {1,2,3} of a 4-broker cluster
while an idempotent acks=all producer (confluent-kafka) writes to it and a consumer group reads
it. Nothing acknowledged is lost or duplicated, order is kept, the replicas agree at the end,
the removed replica's log is deleted, and the ISR never drops below min.insync.replicas. Then
the faults: the controller killed mid-move (the next controller resumes from ZooKeeper) and
the new replica's broker killed mid-move (the move waits, and completes when it returns; or is
cancelled). Bad input gets Kafka's error codes and changes nothing.

A move is held mid-way by pausing (SIGSTOP) the broker being added before it is asked: it
stays registered for a while, so the request is valid, but it cannot catch up.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import confluent_kafka
import kafka
import kafka.errors as kerrors
import pytest
from kafka.structs import TopicPartition as KafkaTopicPartition
from kazoo.exceptions import NoNodeError

from minikafka.cli import main as minikafka_main
from minikafka.client.admin import NewTopic
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode
from tests.integration.cluster import Cluster
from tests.integration.conftest import ClusterFactory
from tests.integration.kafka_protocol.raw import RawKafka

pytestmark = pytest.mark.integration

ALTER_REASSIGNMENTS, LIST_REASSIGNMENTS = 45, 46
OVERRIDES = {"min.insync.replicas": "2"}


@pytest.fixture
def cluster(cluster_factory: ClusterFactory) -> Cluster:
    return cluster_factory(n_brokers=4, overrides=OVERRIDES)


@pytest.fixture
def kp_admin(cluster: Cluster) -> Iterator[kafka.KafkaAdminClient]:
    admin = kafka.KafkaAdminClient(
        bootstrap_servers=cluster.kafka_bootstrap_servers,
        client_id="test-reassignment",
        request_timeout_ms=15_000,
    )
    yield admin
    admin.close()


def create(cluster: Cluster, topic: str, replicas: list[int]) -> None:
    with cluster.admin() as admin:
        assert (
            admin.create_topics([NewTopic(topic, replica_assignment={0: replicas})])[topic] is None
        )
    cluster.wait_for(lambda: cluster.leader(topic, 0) >= 0, 10, f"{topic}-0 has a leader")


def assignment(
    cluster: Cluster, topic: str
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(replicas, adding, removing) of partition 0 in /brokers/topics/<topic>."""
    read = cluster.zk.get_topic(topic)
    assert read is not None
    a = read.value
    return a.partitions[0], a.adding_replicas.get(0, ()), a.removing_replicas.get(0, ())


def wait_moved(cluster: Cluster, topic: str, target: tuple[int, ...], timeout_s: float) -> None:
    cluster.wait_for(
        lambda: assignment(cluster, topic) == (target, (), ()),
        timeout_s,
        f"{topic}-0 moved to {target}",
    )


def controller(cluster: Cluster) -> int:
    cluster.wait_for(lambda: cluster.controller_id() is not None, 20, "a controller")
    found = cluster.controller_id()
    assert found is not None
    return found


def log_dir_exists(cluster: Cluster, broker_id: int, topic: str) -> bool:
    return (cluster.brokers[broker_id].log_dir / f"{topic}-0").exists()


# --- the move under load --------------------------------------------------------------------


class Load:
    """An idempotent acks=all producer and a consumer group on ``topic``-0, in threads."""

    def __init__(self, cluster: Cluster, topic: str) -> None:
        self.topic = topic
        self.acked: list[tuple[int, bytes]] = []  # (offset, value) as acknowledged
        self.failed: list[str] = []
        self.consumed: list[tuple[int, bytes]] = []
        self._stop = threading.Event()
        self._producing = threading.Event()
        self._servers = cluster.kafka_bootstrap_servers
        self._threads = [
            threading.Thread(target=self._produce, daemon=True),
            threading.Thread(target=self._consume, daemon=True),
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop_producing(self) -> None:
        self._producing.set()
        self._threads[0].join(30)

    def stop(self) -> None:
        self.stop_producing()
        self._stop.set()
        self._threads[1].join(30)

    def _produce(self) -> None:
        producer = confluent_kafka.Producer(
            {
                "bootstrap.servers": self._servers,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "message.timeout.ms": 60_000,
            }
        )

        def delivered(
            error: confluent_kafka.KafkaError | None, message: confluent_kafka.Message
        ) -> None:
            if error is not None:
                self.failed.append(str(error))
            else:
                self.acked.append((message.offset() or 0, message.value() or b""))

        sequence = 0
        while not self._producing.is_set():
            producer.produce(self.topic, b"%08d" % sequence, partition=0, on_delivery=delivered)
            sequence += 1
            producer.poll(0.005)
        assert producer.flush(60) == 0

    def _consume(self) -> None:
        consumer = confluent_kafka.Consumer(
            {
                "bootstrap.servers": self._servers,
                "group.id": f"{self.topic}-readers",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": True,
                "auto.commit.interval.ms": 500,
            }
        )
        consumer.subscribe([self.topic])
        idle_since: float | None = None
        while True:
            message = consumer.poll(0.2)
            if message is None or message.error():
                if self._stop.is_set():
                    idle_since = idle_since or time.monotonic()
                    if time.monotonic() - idle_since > 3:
                        break
                continue
            idle_since = None
            self.consumed.append((message.offset() or 0, message.value() or b""))
        consumer.close()


def test_move_under_load_loses_nothing(cluster: Cluster, kp_admin: kafka.KafkaAdminClient) -> None:
    topic = "moving"
    create(cluster, topic, [0, 1, 2])
    load = Load(cluster, topic)
    load.start()
    cluster.wait_for(lambda: len(load.acked) > 200, 20, "records acknowledged before the move")
    smallest_isr: list[int] = []
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.is_set():
            state = cluster.partition_state(topic, 0)
            if state is not None:
                smallest_isr.append(len(state.isr))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    epoch_before = cluster.partition_state(topic, 0).leader_epoch  # type: ignore[union-attr]
    tp = KafkaTopicPartition(topic, 0)
    assert kp_admin.alter_partition_reassignments({tp: [1, 2, 3]}) == {tp: None}
    wait_moved(cluster, topic, (1, 2, 3), 30)
    cluster.wait_for(lambda: not kp_admin.list_partition_reassignments(), 10, "list empty")
    sampling.set()
    sampler.join(5)
    acked_at_move = len(load.acked)
    cluster.wait_for(lambda: len(load.acked) > acked_at_move + 200, 20, "records after the move")
    load.stop()

    assert not load.failed
    state = cluster.partition_state(topic, 0)
    assert state is not None
    assert state.leader in (1, 2, 3) and set(state.isr) == {1, 2, 3}
    assert state.leader_epoch > epoch_before
    assert min(smallest_isr) >= 2, smallest_isr
    # Every acknowledged record once, in order; the group read the same.
    offsets = [o for o, _ in load.acked]
    assert offsets == sorted(set(offsets))
    values = [v for _, v in load.acked]
    assert values == sorted(values) and len(set(values)) == len(values)
    assert [v for _, v in load.consumed] == values
    assert [r.value for r in cluster.fetch_all(topic, 0)] == values

    # The replicas agree, and the removed one is gone from broker 0's disk.
    def agree() -> bool:
        states = [cluster.replica_state(b, topic, 0) for b in (1, 2, 3)]
        same = all(s.batches == states[0].batches for s in states)
        return same and states[0].log_end_offset == len(values)

    cluster.wait_for(agree, 15, "replicas 1, 2, 3 identical")
    cluster.wait_for(lambda: not log_dir_exists(cluster, 0, topic), 10, "broker 0's log deleted")


# --- the tool -------------------------------------------------------------------------------


def tool(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = minikafka_main(["reassign-partitions", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_generate_execute_verify_list_cancel(
    cluster_factory: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Broker 3 is paused below while a move to it is listed and cancelled: a session timeout
    # longer than those steps take on a busy machine keeps it registered (alive) meanwhile.
    cluster = cluster_factory(
        n_brokers=4, overrides={**OVERRIDES, "zookeeper.session.timeout.ms": "60000"}
    )
    create(cluster, "tool", [0, 1, 2])
    create(cluster, "stuck", [0, 1, 2])
    server = cluster.bootstrap_servers
    topics_file = tmp_path / "topics.json"
    topics_file.write_text('{"version":1,"topics":[{"topic":"tool"}]}')
    code, out, err = tool(
        capsys, "--bootstrap-server", server, "--generate",
        "--topics-to-move-json-file", str(topics_file), "--broker-list", "1,2,3",
    )  # fmt: skip
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "Current partition replica assignment"
    assert json.loads(lines[1]) == {
        "version": 1,
        "partitions": [
            {"topic": "tool", "partition": 0, "replicas": [0, 1, 2], "log_dirs": ["any"] * 3}
        ],
    }
    assert lines[3] == "Proposed partition reassignment configuration"
    proposed = json.loads(lines[4])["partitions"][0]
    assert sorted(proposed["replicas"]) == [1, 2, 3]
    assert assignment(cluster, "tool") == ((0, 1, 2), (), ())  # --generate changes nothing

    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [proposed]}))
    code, out, err = tool(
        capsys, "--bootstrap-server", server, "--execute",
        "--reassignment-json-file", str(plan), "--throttle", "10000000",
    )  # fmt: skip
    assert code == 0, err
    assert "Save this to use as the --reassignment-json-file option during rollback" in out
    assert "Warning: You must run --verify periodically" in out
    assert out.rstrip().endswith("Successfully started partition reassignment for tool-0")
    wait_moved(cluster, "tool", tuple(proposed["replicas"]), 30)
    code, out, err = tool(
        capsys, "--bootstrap-server", server, "--verify", "--reassignment-json-file", str(plan)
    )
    assert code == 0, err
    assert "Reassignment of partition tool-0 is completed." in out
    assert "Clearing broker-level throttles on brokers 0,1,2,3" in out
    assert tool(capsys, "--bootstrap-server", server, "--list")[1] == (
        "No partition reassignments found.\n"
    )

    # A move held mid-way, listed, then cancelled: back to the original replicas.
    stuck = tmp_path / "stuck.json"
    stuck.write_text(
        '{"version":1,"partitions":[{"topic":"stuck","partition":0,"replicas":[3,1,2]}]}'
    )
    # Broker 3 paused: the tool bootstraps from the others. --list and --cancel are the
    # controller's to answer, as in Kafka: if broker 3 won the election, another one takes over
    # first (a paused controller answered nothing, and --list timed out in a CI run).
    for _ in range(20):
        if cluster.wait_for(cluster.controller_id, 30, "a controller") != 3:
            break
        with contextlib.suppress(NoNodeError):
            cluster.zk.client.delete("/controller")
        time.sleep(0.5)
    assert cluster.controller_id() != 3
    server = ",".join(cluster.brokers[b].address for b in (0, 1, 2))
    cluster.pause(3)
    try:
        code, out, err = tool(
            capsys,
            "--bootstrap-server",
            server,
            "--execute",
            "--reassignment-json-file",
            str(stuck),
        )
        assert code == 0, err
        code, out, err = tool(capsys, "--bootstrap-server", server, "--list")
        assert out == (
            "Current partition reassignments:\n"
            "stuck-0: replicas: 3,1,2,0. adding: 3. removing: 0.\n"
        )
        code, out, err = tool(
            capsys, "--bootstrap-server", server, "--execute", "--reassignment-json-file", str(plan)
        )
        assert code == 1 and err.startswith("Cannot execute because there is an existing")
        code, out, err = tool(
            capsys, "--bootstrap-server", server, "--cancel", "--reassignment-json-file", str(stuck)
        )
        assert code == 0, err
        assert out.rstrip().endswith("Successfully cancelled partition reassignment for: stuck-0")
        # Back on the original replicas; their order is not kept where the target overlapped
        # it (Kafka's caveat: RS was [3, 1, 2, 0], so ORS reads [1, 2, 0]).
        assert assignment(cluster, "stuck") == ((1, 2, 0), (), ())
    finally:
        cluster.resume(3)
    code, out, err = tool(
        capsys, "--bootstrap-server", server, "--cancel", "--reassignment-json-file", str(stuck)
    )
    assert code == 0
    assert out.endswith("\nNone of the specified partition reassignments are active.\n")

    # Bad input: one line, exit status 1, nothing changed.
    bad_files = {
        "{not json": "Unable to parse the reassignment json file",
        '{"version":1,"partitions":[]}': "Partition reassignment list cannot be empty",
        '{"version":1,"partitions":[{"topic":"stuck","partition":0,"replicas":[1,1,2]}]}': (
            "Partition replica lists may not contain duplicate entries: stuck-0 contains "
            "multiple entries for 1"
        ),
        '{"version":1,"partitions":[{"topic":"stuck","partition":0,"replicas":[1,2,9]}]}': (
            "Unknown broker id 9"
        ),
        '{"version":1,"partitions":[{"topic":"stuck","partition":7,"replicas":[1,2,3]}]}': (
            "Unable to find partition: stuck-7"
        ),
        '{"version":1,"partitions":[{"topic":"nope","partition":0,"replicas":[1,2,3]}]}': (
            "Unable to find partition: nope-0"
        ),
    }
    bad = tmp_path / "bad.json"
    for text, message in bad_files.items():
        bad.write_text(text)
        code, out, err = tool(
            capsys, "--bootstrap-server", server, "--execute", "--reassignment-json-file", str(bad)
        )
        assert code == 1 and err.startswith(message) and err.count("\n") == 1, (text, err)
        assert "Traceback" not in err
    code, _, err = tool(capsys, "--bootstrap-server", server, "--execute", "--list")
    assert code == 1 and "exactly one action" in err
    assert assignment(cluster, "stuck") == ((1, 2, 0), (), ())


# --- faults ---------------------------------------------------------------------------------


def test_controller_killed_mid_move_resumes(cluster: Cluster) -> None:
    """The controller dies while the added replica cannot catch up; the next controller reads
    the move from ZooKeeper and completes it once the replica is back."""
    c = controller(cluster)
    added = next(b for b in sorted(cluster.brokers) if b != c)
    origin = [b for b in sorted(cluster.brokers) if b != added]  # holds the controller
    target = (added, *[b for b in origin if b != c])
    create(cluster, "failover", origin)
    assert cluster.produce("failover", 0, [b"before"], retry_s=10).ok
    cluster.pause(added)
    try:
        with cluster.admin() as admin:
            tp = TopicPartition("failover", 0)
            assert admin.alter_partition_reassignments({tp: list(target)}) == {tp: None}
            listed = admin.list_partition_reassignments()
            assert listed[tp].adding_replicas == (added,)
            assert listed[tp].removing_replicas == (c,)
        cluster.kill(c)
    finally:
        cluster.resume(added)
    cluster.wait_for(lambda: cluster.controller_id() not in (None, c), 20, "a new controller")
    wait_moved(cluster, "failover", target, 30)
    state = cluster.partition_state("failover", 0)
    assert state is not None and state.leader in target and set(state.isr) == set(target)
    assert cluster.produce("failover", 0, [b"after"], retry_s=10).ok
    assert [r.value for r in cluster.fetch_all("failover", 0)] == [b"before", b"after"]


def test_added_broker_killed_mid_move_completes_when_back(cluster: Cluster) -> None:
    c = controller(cluster)
    added = next(b for b in sorted(cluster.brokers, reverse=True) if b != c)
    origin = [b for b in sorted(cluster.brokers) if b != added][:3]
    removed = next(b for b in origin if b != c)
    target = (added, *[b for b in origin if b != removed])
    create(cluster, "bounce", origin)
    assert cluster.produce("bounce", 0, [b"a", b"b"], retry_s=10).ok
    cluster.pause(added)
    with cluster.admin() as admin:
        tp = TopicPartition("bounce", 0)
        assert admin.alter_partition_reassignments({tp: list(target)}) == {tp: None}
    cluster.kill(added)
    time.sleep(1)
    assert assignment(cluster, "bounce")[1] == (added,)  # waits for the dead replica
    assert cluster.produce("bounce", 0, [b"c"], retry_s=10).ok  # the partition still serves
    cluster.start(added, wait_for_expiry=False)
    wait_moved(cluster, "bounce", target, 40)
    assert [r.value for r in cluster.fetch_all("bounce", 0)] == [b"a", b"b", b"c"]
    cluster.wait_for(
        lambda: not log_dir_exists(cluster, removed, "bounce"), 10, "removed replica deleted"
    )


def test_legacy_znode_reassignment(cluster: Cluster) -> None:
    create(cluster, "legacy", [0, 1, 2])
    cluster.zk.create_partition_reassignment({TopicPartition("legacy", 0): (3, 2, 1)})
    wait_moved(cluster, "legacy", (3, 2, 1), 30)
    cluster.wait_for(lambda: cluster.zk.get_partition_reassignment() is None, 10, "znode removed")


# --- bad input ------------------------------------------------------------------------------


def raw(address: str, api_key: int, values: dict[str, object]) -> object:
    with RawKafka(address, timeout_s=15) as connection:
        return connection.call(api_key, 0, values)


def test_bad_input_gets_kafkas_errors(cluster: Cluster, kp_admin: kafka.KafkaAdminClient) -> None:
    create(cluster, "fixed", [0, 1, 2])
    tp = KafkaTopicPartition("fixed", 0)
    unknown = KafkaTopicPartition("fixed", 5)
    results = kp_admin.alter_partition_reassignments(
        {tp: [1, 1, 2], unknown: [1, 2, 3], KafkaTopicPartition("nope", 0): [1, 2, 3]}
    )
    assert results == {
        tp: kerrors.InvalidReplicationAssignmentError,
        unknown: kerrors.UnknownTopicOrPartitionError,
        KafkaTopicPartition("nope", 0): kerrors.UnknownTopicOrPartitionError,
    }
    assert kp_admin.alter_partition_reassignments({tp: [1, 2, 9]}) == {
        tp: kerrors.InvalidReplicationAssignmentError
    }
    assert kp_admin.alter_partition_reassignments({tp: [1, -2, 3]}) == {
        tp: kerrors.InvalidReplicationAssignmentError
    }
    assert kp_admin.alter_partition_reassignments({tp: None}) == {
        tp: kerrors.NoReassignmentInProgressError
    }
    c = controller(cluster)
    at_controller = cluster.brokers[c].kafka_address
    empty = raw(
        at_controller,
        ALTER_REASSIGNMENTS,
        {"topics": [{"name": "fixed", "partitions": [{"partition_index": 0, "replicas": []}]}]},
    )
    partition = empty.responses[0].partitions[0]  # type: ignore[attr-defined]
    assert partition.error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert partition.error_message == "Empty replica list specified in partition reassignment."
    other = cluster.brokers[next(b for b in cluster.brokers if b != c)].kafka_address
    refused = raw(other, ALTER_REASSIGNMENTS, {"topics": []})
    assert refused.error_code == ErrorCode.NOT_CONTROLLER  # type: ignore[attr-defined]
    listed = raw(other, LIST_REASSIGNMENTS, {"topics": None})
    assert listed.error_code == ErrorCode.NOT_CONTROLLER  # type: ignore[attr-defined]
    assert assignment(cluster, "fixed") == ((0, 1, 2), (), ())

    # A topic being deleted: its deletion waits for a dead replica; no move is started.
    cluster.kill(2)
    assert cluster.zk.mark_topic_for_deletion("fixed")
    time.sleep(1)  # the controller queues the deletion (it waits for broker 2's replica)
    results = kp_admin.alter_partition_reassignments({tp: [1, 3, 0]})
    assert results == {tp: kerrors.UnknownTopicOrPartitionError}
