"""Replication throttles (KIP-73) on real brokers: ``minikafka reassign-partitions --execute
--throttle`` slows a move to the rate it names while produce to other partitions goes on, and
``--verify`` clears the keys once the move is done.

Two partitions of about 4.5 MB each go from brokers {0,1,2} to {1,2,3}: one without a
throttle, one with 200 KB/s. The throttled move cannot be faster than the throttle allows.
Kafka's rate over ``n`` windows of ``w`` seconds (replication.quota.window.num=11 of 1 s)
measures at least ``n - 1`` windows and keeps the bytes of the last ``n - 1`` windows at
least, so it lets at most ``q * n * w`` bytes, plus the one fetch that crosses the quota,
through in any ``(n - 1) * w`` seconds (a new replica gets its first ten seconds' worth at
once). That gives a lower bound on the move's time, not a timing target; the unthrottled move
must beat it.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from pathlib import Path

import confluent_kafka
import pytest

from minikafka.cli import main as minikafka_main
from minikafka.client.admin import NewTopic
from tests.integration.cluster import Cluster
from tests.integration.conftest import ClusterFactory

pytestmark = pytest.mark.integration

RATE = 200_000  # bytes/s
FETCH_MAX_BYTES = 65_536  # replica.fetch.max.bytes: the most one fetch overshoots the quota
RECORDS, RECORD_BYTES = 4_500, 1_000
WINDOWS, WINDOW_S = 11, 1
OVERRIDES = {
    "min.insync.replicas": "2",
    "replication.quota.window.num": str(WINDOWS),
    "replication.quota.window.size.seconds": str(WINDOW_S),
    "replica.fetch.max.bytes": str(FETCH_MAX_BYTES),
    "replica.fetch.backoff.ms": "100",
}
THROTTLE_KEYS = (
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
)
RATE_KEYS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")


@pytest.fixture
def cluster(cluster_factory: ClusterFactory) -> Cluster:
    return cluster_factory(n_brokers=4, overrides=OVERRIDES)


def create(cluster: Cluster, topic: str) -> None:
    with cluster.admin() as admin:
        assert (
            admin.create_topics([NewTopic(topic, replica_assignment={0: [0, 1, 2]})])[topic] is None
        )
    cluster.wait_for(lambda: cluster.leader(topic, 0) >= 0, 10, f"{topic}-0 has a leader")


def fill(cluster: Cluster, topic: str) -> None:
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": cluster.kafka_bootstrap_servers,
            "acks": "all",
            "linger.ms": 20,
            # Batches below replica.fetch.max.bytes: a fetch returns at least one whole batch.
            "batch.size": FETCH_MAX_BYTES // 4,
        }
    )
    for _ in range(RECORDS):
        producer.produce(topic, os.urandom(RECORD_BYTES), partition=0)
        producer.poll(0)
    assert producer.flush(60) == 0


def log_bytes(cluster: Cluster, broker_id: int, topic: str) -> int:
    directory = cluster.brokers[broker_id].log_dir / f"{topic}-0"
    return sum(p.stat().st_size for p in directory.glob("*.log"))


def moved(cluster: Cluster, topic: str) -> bool:
    read = cluster.zk.get_topic(topic)
    assert read is not None
    a = read.value
    return (a.partitions[0], a.adding_replicas.get(0, ()), a.removing_replicas.get(0, ())) == (
        (1, 2, 3),
        (),
        (),
    )


def tool(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = minikafka_main(["reassign-partitions", *args])
    out, err = capsys.readouterr()
    return code, out, err


def move(cluster: Cluster, capsys: pytest.CaptureFixture[str], plan: Path, *throttle: str) -> float:
    """Seconds from --execute until the topic's replicas are {1,2,3}."""
    started = time.monotonic()
    code, _, err = tool(
        capsys, "--bootstrap-server", cluster.bootstrap_servers, "--execute",
        "--reassignment-json-file", str(plan), *throttle,
    )  # fmt: skip
    assert code == 0, err
    assert "Warning: the throttle was not applied" not in err
    topic = json.loads(plan.read_text())["partitions"][0]["topic"]
    cluster.wait_for(lambda: moved(cluster, topic), 120, f"{topic}-0 moved", interval_s=0.05)
    return time.monotonic() - started


class Producing:
    """acks=all produce to another topic, in a thread, timed by the second."""

    def __init__(self, cluster: Cluster, topic: str) -> None:
        self.acked: list[float] = []
        self.failed: list[str] = []
        self._stop = threading.Event()
        self._servers = cluster.kafka_bootstrap_servers
        self._topic = topic
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        producer = confluent_kafka.Producer(
            {"bootstrap.servers": self._servers, "acks": "all", "linger.ms": 5}
        )

        def delivered(error: confluent_kafka.KafkaError | None, _: object) -> None:
            (self.failed.append(str(error)) if error else self.acked.append(time.monotonic()))

        while not self._stop.is_set():
            producer.produce(self._topic, b"x" * 100, partition=0, on_delivery=delivered)
            producer.poll(0.01)
        assert producer.flush(30) == 0

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(40)

    def between(self, start: float, end: float) -> int:
        return sum(1 for t in self.acked if start <= t <= end)


def test_a_throttled_move_takes_as_long_as_its_rate_and_verify_clears_it(
    cluster: Cluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for topic in ("fast", "slow", "other"):
        create(cluster, topic)
    fill(cluster, "fast")
    fill(cluster, "slow")
    size = log_bytes(cluster, 0, "slow")
    assert size >= RECORDS * RECORD_BYTES
    plans = {}
    for topic in ("fast", "slow"):
        plans[topic] = tmp_path / f"{topic}.json"
        plans[topic].write_text(
            json.dumps(
                {
                    "version": 1,
                    "partitions": [{"topic": topic, "partition": 0, "replicas": [1, 2, 3]}],
                }
            )
        )

    unthrottled_s = move(cluster, capsys, plans["fast"])

    producing = Producing(cluster, "other")
    cluster.wait_for(lambda: len(producing.acked) > 20, 20, "produce to 'other' under way")
    started = time.monotonic()
    throttled_s = move(cluster, capsys, plans["slow"], "--throttle", str(RATE))
    ended = time.monotonic()
    producing.stop()

    # What the throttle implies (the module docstring): each span of (n - 1) windows but
    # the last moves at most q * n * w bytes and a fetch.
    per_span = RATE * WINDOWS * WINDOW_S + FETCH_MAX_BYTES
    lower_bound_s = (WINDOWS - 1) * WINDOW_S * (math.ceil(size / per_span) - 1)
    assert lower_bound_s >= 10
    with capsys.disabled():  # for the record, with -s
        print(f"moves: {unthrottled_s:.1f} s, {throttled_s:.1f} s throttled (>= {lower_bound_s})")
    assert throttled_s >= lower_bound_s, (throttled_s, lower_bound_s, size)
    assert unthrottled_s < lower_bound_s, (unthrottled_s, lower_bound_s)
    # Produce elsewhere went on: acks=all answered every second of the move.
    assert not producing.failed, producing.failed[:3]
    for second in range(int(ended - started)):
        assert producing.between(started + second, started + second + 1) > 0, second

    # The keys were in ZooKeeper during the move, and --verify clears them.
    topic_config = cluster.zk.get_topic_config("slow")
    assert topic_config["leader.replication.throttled.replicas"] == "0:0,0:1,0:2"
    assert topic_config["follower.replication.throttled.replicas"] == "0:3"
    for broker in range(4):
        assert {
            k: cluster.zk.get_broker_config(str(broker)).get(k) for k in RATE_KEYS
        } == dict.fromkeys(RATE_KEYS, str(RATE))
    code, out, err = tool(
        capsys, "--bootstrap-server", cluster.bootstrap_servers, "--verify",
        "--reassignment-json-file", str(plans["slow"]),
    )  # fmt: skip
    assert code == 0, err
    assert "Reassignment of partition slow-0 is completed." in out
    assert not set(THROTTLE_KEYS) & cluster.zk.get_topic_config("slow").keys()
    for broker in range(4):
        assert not set(RATE_KEYS) & cluster.zk.get_broker_config(str(broker)).keys()

    # The moved replica holds every byte, as its leader does.
    def agree() -> bool:
        states = [cluster.replica_state(b, "slow", 0) for b in (1, 2, 3)]
        return (
            all(s.batches == states[0].batches for s in states)
            and states[0].log_end_offset == RECORDS
        )

    cluster.wait_for(agree, 15, "replicas 1, 2, 3 of slow-0 identical")


def test_the_throttle_keys_through_kafkas_admin_client(cluster: Cluster) -> None:
    """IncrementalAlterConfigs and DescribeConfigs on the Kafka door (confluent-kafka) take the
    rates as dynamic broker configs and the replicas as topic configs; a bad list is refused."""
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ConfigSource,
        ResourceType,
    )

    create(cluster, "keys")
    admin = AdminClient({"bootstrap.servers": cluster.kafka_bootstrap_servers})
    broker = ConfigResource(
        ResourceType.BROKER,
        "1",
        incremental_configs=[
            ConfigEntry(
                "follower.replication.throttled.rate",
                "5000",
                incremental_operation=AlterConfigOpType.SET,
            )
        ],
    )
    topic = ConfigResource(
        ResourceType.TOPIC,
        "keys",
        incremental_configs=[
            ConfigEntry(
                "leader.replication.throttled.replicas",
                "*",
                incremental_operation=AlterConfigOpType.SET,
            )
        ],
    )
    for future in admin.incremental_alter_configs([broker, topic]).values():
        future.result(timeout=20)

    def described() -> tuple[str, int]:  # applied once broker 1 reads the change notification
        (future,) = admin.describe_configs([ConfigResource(ResourceType.BROKER, "1")]).values()
        entry = future.result(timeout=20)["follower.replication.throttled.rate"]
        return entry.value, entry.source

    cluster.wait_for(
        lambda: described() == ("5000", ConfigSource.DYNAMIC_BROKER_CONFIG.value),
        10,
        "the rate described as broker 1's dynamic config",
    )
    assert cluster.zk.get_topic_config("keys") == {"leader.replication.throttled.replicas": "*"}

    bad = ConfigResource(
        ResourceType.TOPIC,
        "keys",
        incremental_configs=[
            ConfigEntry(
                "follower.replication.throttled.replicas",
                "0:a",
                incremental_operation=AlterConfigOpType.SET,
            )
        ],
    )
    with pytest.raises(confluent_kafka.KafkaException) as refused:
        admin.incremental_alter_configs([bad])[bad].result(timeout=20)
    assert refused.value.args[0].code() == confluent_kafka.KafkaError.INVALID_CONFIG
    assert cluster.zk.get_topic_config("keys") == {"leader.replication.throttled.replicas": "*"}
