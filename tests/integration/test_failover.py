"""Failover with real broker processes: leader and controller loss, ISR, min.insync.replicas,
preferred election, a zombie leader, and acknowledged writes surviving random kills.

Each test builds its own cluster (cluster_factory); a broker is lost by SIGKILL, so the cluster
notices it when its ZooKeeper session expires (zookeeper.session.timeout.ms, short here).
"""

from __future__ import annotations

import random
import subprocess
import sys
import threading
import time

import pytest

from minikafka.client.admin import NewTopic, raise_first
from minikafka.proto.cluster_state import PartitionState
from minikafka.proto.errors import ErrorCode
from tests.integration.cluster import REPO_ROOT, Cluster, ProduceResult
from tests.integration.conftest import ClusterFactory

FAST = {"zookeeper.session.timeout.ms": "4000"}


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "minikafka", *argv],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def create_topic(
    cluster: Cluster,
    name: str,
    partitions: int = 1,
    replication_factor: int = 3,
    configs: dict[str, str] | None = None,
) -> None:
    with cluster.admin() as admin:
        raise_first(
            admin.create_topics([NewTopic(name, partitions, replication_factor, {}, configs or {})])
        )
    for partition in range(partitions):
        cluster.wait_for(lambda p=partition: cluster.leader(name, p) >= 0, what="a leader")  # type: ignore[misc]


def full_isr(cluster: Cluster, topic: str, partition: int = 0) -> bool:
    state = cluster.partition_state(topic, partition)
    return state is not None and len(state.isr) == len(cluster.brokers)


def values(cluster: Cluster, topic: str, partition: int = 0) -> list[bytes | None]:
    return [r.value for r in cluster.fetch_all(topic, partition)]


def test_leader_failover_isr_and_preferred_election(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(n_brokers=3, overrides=FAST)
    bootstrap = cluster.bootstrap_servers
    created = cli(
        "topics", "--bootstrap-server", bootstrap, "--create", "--topic", "orders",
        "--partitions", "1", "--replication-factor", "3",
    )  # fmt: skip
    assert (created.returncode, created.stdout, created.stderr) == (
        0,
        "Created topic orders.\n",
        "",
    )
    cluster.wait_for(lambda: full_isr(cluster, "orders"), what="a full ISR")

    described = cli("topics", "--bootstrap-server", bootstrap, "--describe", "--topic", "orders")
    assert described.returncode == 0, described.stderr
    header, line = described.stdout.splitlines()
    topic_id = cluster.zk.get_topic("orders").value.topic_id  # type: ignore[union-attr]
    assert header == (
        f"Topic: orders\tTopicId: {topic_id}\tPartitionCount: 1\tReplicationFactor: 3\tConfigs: "
    )
    assert_describe_line(cluster, line, "orders", 0)

    assert cluster.produce("orders", 0, [b"1", b"2"], acks=-1, retry_s=10).ok
    before = cluster.partition_state("orders", 0)
    assert before is not None
    replicas = cluster.zk.get_topic("orders").value.partitions[0]  # type: ignore[union-attr]
    preferred = replicas[0]
    assert before.leader == preferred

    cluster.kill(preferred)

    def moved() -> PartitionState | None:
        state = cluster.partition_state("orders", 0)
        return state if state is not None and state.leader != preferred else None

    after = cluster.wait_for(moved, 20, "a new leader")
    assert after.leader == replicas[1]  # the first live ISR member in assignment order
    assert after.leader_epoch == before.leader_epoch + 1
    assert preferred not in after.isr
    state_json = cluster.partition_state_json("orders", 0)
    assert list(state_json) == ["controller_epoch", "leader", "version", "leader_epoch", "isr"]
    assert state_json["version"] == 1 and state_json["leader"] == after.leader

    assert cluster.produce("orders", 0, [b"3"], acks=-1, retry_s=10).ok
    cluster.start(preferred)
    cluster.wait_until_serving()
    cluster.wait_for(lambda: full_isr(cluster, "orders"), 30, "the restarted broker in the ISR")
    assert cluster.leader("orders", 0) == after.leader  # leadership does not move back by itself

    elected = cli(
        "elect-leaders", "--bootstrap-server", bootstrap, "--election-type", "preferred",
        "--topic", "orders", "--partition", "0",
    )  # fmt: skip
    assert elected.returncode == 0, elected.stderr
    assert elected.stdout == (
        "Successfully completed leader election (PREFERRED) for partitions orders-0\n"
    )
    cluster.wait_for(lambda: cluster.leader("orders", 0) == preferred, what="preferred leader")
    again = cli(
        "elect-leaders", "--bootstrap-server", bootstrap, "--election-type", "preferred",
        "--all-topic-partitions",
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "Successfully completed" not in again.stdout

    assert cluster.produce("orders", 0, [b"4"], acks=-1, retry_s=10).ok
    assert values(cluster, "orders") == [b"1", b"2", b"3", b"4"]


def assert_describe_line(cluster: Cluster, line: str, topic: str, partition: int) -> None:
    state = cluster.partition_state(topic, partition)
    replicas = cluster.zk.get_topic(topic).value.partitions[partition]  # type: ignore[union-attr]
    assert state is not None
    assert line == (
        f"\tTopic: {topic}\tPartition: {partition}\tLeader: {state.leader}"
        f"\tReplicas: {','.join(map(str, replicas))}"
        f"\tIsr: {','.join(map(str, state.isr))}"
    )


def test_min_insync_replicas(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(n_brokers=3, overrides=FAST)
    create_topic(cluster, "strict", configs={"min.insync.replicas": "2"})
    cluster.wait_for(lambda: full_isr(cluster, "strict"), what="a full ISR")
    leader = cluster.leader("strict", 0)
    followers = [b for b in cluster.brokers if b != leader]

    cluster.kill(followers[0])
    cluster.wait_for(
        lambda: followers[0] not in cluster.isr("strict", 0),
        20,
        "the ISR to shrink",
    )
    cluster.wait_for(
        lambda: cluster.produce("strict", 0, [b"two in sync"], acks=-1, timeout_ms=2000).ok,
        20,
        "acks=all with two replicas in sync",
    )

    cluster.kill(followers[1])

    answers: list[ProduceResult] = []

    def refused() -> ProduceResult | None:
        answers.append(cluster.produce("strict", 0, [b"alone"], acks=-1, timeout_ms=1000))
        return answers[-1] if answers[-1].error == ErrorCode.NOT_ENOUGH_REPLICAS else None

    assert cluster.wait_for(refused, 20, "NOT_ENOUGH_REPLICAS").base_offset == -1
    # while the ISR still named the dead follower, acks=all timed out; it never succeeded
    assert not [a for a in answers if a.ok], answers
    assert cluster.produce("strict", 0, [b"acks=1"], acks=1).ok  # acks=1 does not need the ISR

    cluster.start(followers[0])
    cluster.wait_until_serving()
    cluster.wait_for(
        lambda: cluster.produce("strict", 0, [b"back"], acks=-1, timeout_ms=2000).ok,
        30,
        "acks=all to work again",
    )


def test_controller_failover(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(n_brokers=3, overrides=FAST)
    old_controller = cluster.controller_id()
    old_epoch = cluster.controller_epoch()
    assert old_controller is not None and old_epoch is not None

    cluster.kill(old_controller)
    new_controller = cluster.wait_for(
        lambda: (c := cluster.controller_id()) is not None and c != old_controller and c,
        20,
        "a new controller",
    )
    assert new_controller in cluster.brokers
    assert (cluster.controller_epoch() or 0) > old_epoch
    cluster.wait_for(
        lambda: old_controller not in cluster.zk.get_live_broker_ids(), 20, "the old one gone"
    )

    # The cluster still serves: the new controller creates a topic, its leader takes writes.
    create_topic(cluster, "after", replication_factor=2)
    assert cluster.produce("after", 0, [b"x"], acks=-1, retry_s=10).ok
    assert values(cluster, "after") == [b"x"]


def test_a_new_controller_is_not_refused_as_stale(cluster_factory: ClusterFactory) -> None:
    # A new controller sends every partition's state to its replicas. After a controlled
    # shutdown of the old controller the brokers already follow exactly those states: that is
    # no reason to refuse them (it used to be one STALE_CONTROLLER_EPOCH per partition and
    # replica, each logged as a controller_request_error warning).
    cluster = cluster_factory(n_brokers=3)
    create_topic(cluster, "quiet", partitions=6, replication_factor=3)
    old_controller = cluster.controller_id()
    assert old_controller is not None
    ignored_before = {
        b: len(cluster.brokers[b].log_events("leader_and_isr.ignored")) for b in cluster.brokers
    }

    assert cluster.stop(old_controller) == 0
    new_controller = cluster.wait_for(
        lambda: (c := cluster.controller_id()) is not None and c != old_controller and c,
        20,
        "a new controller",
    )
    survivors = [b for b in cluster.brokers if b != old_controller]
    # Each broker gets the new controller's LeaderAndIsr, then its UpdateMetadata, in that
    # order on one channel: once the metadata names the new controller, both were answered.
    cluster.wait_for(
        lambda: all(
            cluster.metadata(b, topics=()).controller_id == new_controller for b in survivors
        ),
        20,
        "the brokers to hear from the new controller",
    )

    errors = cluster.brokers[new_controller].log_events("controller_request_error")
    assert [e for e in errors if e["error"] == "STALE_CONTROLLER_EPOCH"] == []
    for broker_id in survivors:
        ignored = cluster.brokers[broker_id].log_events("leader_and_isr.ignored")
        assert ignored[ignored_before[broker_id] :] == []
    assert cluster.produce("quiet", 0, [b"x"], acks=-1, retry_s=10).ok


# The core of replication over both wires (the harness's default, Kafka, and gRPC).
@pytest.mark.parametrize("replication", ["kafka", "grpc"])
def test_acknowledged_writes_survive_random_kills(
    cluster_factory: ClusterFactory, replication: str
) -> None:
    cluster = cluster_factory(n_brokers=3, overrides=FAST, replication=replication)
    create_topic(cluster, "safe", configs={"min.insync.replicas": "2"})
    cluster.wait_for(lambda: full_isr(cluster, "safe"), what="a full ISR")

    sent: list[bytes] = []
    acked: list[bytes] = []
    stop = threading.Event()

    def produce() -> None:
        n = 0
        while not stop.is_set():
            value = b"v%06d" % n
            n += 1
            sent.append(value)
            result = cluster.produce("safe", 0, [value], acks=-1, timeout_ms=2000, retry_s=0)
            if result.ok:
                acked.append(value)
            else:
                time.sleep(0.05)

    producer = threading.Thread(target=produce, name="producer")
    producer.start()
    rng = random.Random(20240607)
    try:
        for _ in range(3):
            time.sleep(1.0)
            victim = rng.choice(sorted(cluster.brokers))
            if rng.random() < 0.5:
                cluster.kill(victim)
            else:
                assert cluster.stop(victim) == 0
            time.sleep(1.0)
            cluster.start(victim)
            cluster.wait_until_serving()
            cluster.wait_for(lambda: full_isr(cluster, "safe"), 30, "the ISR to fill up again")
        time.sleep(1.0)
    finally:
        stop.set()
        producer.join(30)
    assert len(acked) > 20, f"only {len(acked)} writes acknowledged"

    read = values(cluster, "safe")
    assert len(read) == len(set(read)), "a record was stored twice"
    missing = [v for v in acked if v not in set(read)]
    assert not missing, f"acknowledged but lost: {missing[:10]}"
    order = {v: i for i, v in enumerate(sent)}
    positions = [order[v] for v in read if v is not None]
    assert positions == sorted(positions), "records out of order"

    # Every replica holds the same bytes below the high watermark.
    leader = cluster.leader("safe", 0)
    hw = cluster.fetch(leader, "safe", 0, 0).high_watermark
    cluster.wait_for(
        lambda: all(
            cluster.replica_state(b, "safe", 0).log_end_offset >= hw for b in cluster.brokers
        ),
        20,
        "followers to catch up",
    )
    images = {b: cluster.replica_state(b, "safe", 0).bytes_below(hw) for b in cluster.brokers}
    assert len(set(images.values())) == 1, {b: len(i) for b, i in images.items()}


@pytest.mark.parametrize("replication", ["kafka", "grpc"])
def test_zombie_leader_cannot_acknowledge(
    cluster_factory: ClusterFactory, replication: str
) -> None:
    cluster = cluster_factory(n_brokers=3, overrides=FAST, replication=replication)
    create_topic(cluster, "zombie", configs={"min.insync.replicas": "2"})
    cluster.wait_for(lambda: full_isr(cluster, "zombie"), what="a full ISR")
    assert cluster.produce("zombie", 0, [b"before"], acks=-1, retry_s=10).ok
    zombie = cluster.leader("zombie", 0)

    cluster.pause(zombie)  # past its session timeout: the controller elects another leader
    new_leader = cluster.wait_for(
        lambda: (leader := cluster.leader("zombie", 0)) != zombie and leader >= 0 and leader,
        20,
        "a new leader",
    )
    outcome: list[ProduceResult] = []
    writer = threading.Thread(
        target=lambda: outcome.append(
            cluster.produce("zombie", 0, [b"fenced"], acks=-1, timeout_ms=3000, to=zombie)
        )
    )
    writer.start()  # the request waits in the paused process's socket
    time.sleep(0.5)
    cluster.resume(zombie)
    writer.join(30)
    assert outcome and not outcome[0].ok, outcome

    assert cluster.produce("zombie", 0, [b"after"], acks=-1, retry_s=10).ok
    assert cluster.leader("zombie", 0) == new_leader
    assert values(cluster, "zombie") == [b"before", b"after"]
    # the zombie rejoins as a follower and drops what it appended while fenced
    cluster.wait_for(lambda: full_isr(cluster, "zombie"), 30, "the zombie back in the ISR")
    cluster.wait_for(
        lambda: (
            cluster.replica_state(zombie, "zombie", 0).bytes_below(2)
            == cluster.replica_state(new_leader, "zombie", 0).bytes_below(2)
        ),
        20,
        "the zombie's log to match the leader's",
    )


def test_controller_failover_over_many_partitions_loses_no_acked_record(
    cluster_factory: ClusterFactory,
) -> None:
    # The new controller reads every partition state and elects for the dead broker's
    # partitions in pipelined ZooKeeper round trips (zk_store's bulk calls): every partition
    # must still get a live leader from its ISR, and nothing acknowledged may go.
    cluster = cluster_factory(n_brokers=3, overrides=FAST)
    partitions = 200
    create_topic(cluster, "many", partitions=partitions, configs={"min.insync.replicas": "2"})
    cluster.wait_for(
        lambda: all(full_isr(cluster, "many", p) for p in range(partitions)), 60, "full ISRs"
    )
    acked: dict[int, list[bytes]] = {}
    for partition in range(partitions):
        value = b"before-%d" % partition
        assert cluster.produce("many", partition, [value], acks=-1, retry_s=10).ok
        acked[partition] = [value]
    old_controller = cluster.controller_id()
    assert old_controller is not None
    led_by_old = {p for p in range(partitions) if cluster.leader("many", p) == old_controller}
    assert led_by_old  # the assignment spreads the leaders over the brokers

    cluster.kill(old_controller)
    cluster.wait_for(
        lambda: (c := cluster.controller_id()) is not None and c != old_controller,
        20,
        "a new controller",
    )
    survivors = {b for b in cluster.brokers if b != old_controller}
    cluster.wait_for(
        lambda: all(cluster.leader("many", p) in survivors for p in range(partitions)),
        30,
        "a live leader for every partition",
    )
    for partition in range(partitions):
        state = cluster.partition_state("many", partition)
        assert state is not None and old_controller not in state.isr
        if partition in led_by_old:
            assert state.leader_epoch == 1
        value = b"after-%d" % partition
        assert cluster.produce("many", partition, [value], acks=-1, retry_s=10).ok
        acked[partition].append(value)
    for partition in range(partitions):
        read = values(cluster, "many", partition)
        # Every acked record is there, in order; a produce the harness retried after a
        # timeout (the client here is not idempotent) may have been stored twice.
        assert [v for v in read if v is not None and v in acked[partition]] == read
        assert sorted(set(read), key=read.index) == acked[partition]
