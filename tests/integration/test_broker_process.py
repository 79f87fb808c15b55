"""`minikafka broker` as a real process: start and stop, duplicate ids, a restart within the
session timeout, controlled shutdown (of the last broker, of all at once, without ZooKeeper),
recovery after a restart, re-registration after a ZooKeeper session loss."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from minikafka.broker.storage.log_manager import CLEAN_SHUTDOWN_FILE
from minikafka.client.admin import NewTopic, raise_first
from tests.integration.cluster import REPO_ROOT, Cluster
from tests.integration.conftest import ClusterFactory
from tests.integration.zookeeper import ZooKeeperServer

TOPIC = "events"


def create_topic(cluster: Cluster, name: str, partitions: int, replication_factor: int) -> None:
    with cluster.admin() as admin:
        raise_first(admin.create_topics([NewTopic(name, partitions, replication_factor)]))
    for partition in range(partitions):
        cluster.wait_for(lambda p=partition: cluster.leader(name, p) >= 0, what="a leader")  # type: ignore[misc]


def test_start_register_and_stop(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(n_brokers=1)
    broker = cluster.brokers[0]

    registration = json.loads(cluster.zk.client.get("/brokers/ids/0")[0])
    # The gRPC listener first (its host and port are the znode's), then the Kafka-protocol one.
    assert registration["endpoints"] == [
        f"PLAINTEXT://127.0.0.1:{broker.port}",
        f"KAFKA://127.0.0.1:{broker.kafka_port}",
    ]
    assert registration["listener_security_protocol_map"] == {
        "PLAINTEXT": "PLAINTEXT",
        "KAFKA": "PLAINTEXT",
    }
    assert (registration["host"], registration["port"]) == ("127.0.0.1", broker.port)
    assert registration["version"] == 5
    (started,) = broker.log_events("broker_started")
    assert started["broker_id"] == 0
    assert started["listeners"] == [f"PLAINTEXT://127.0.0.1:{broker.port}"]
    assert started["broker_epoch"] == cluster.zk.get_broker_epoch(0)
    assert started["event_loop"] == "uvloop"  # MINIKAFKA_EVENT_LOOP unset
    assert cluster.controller_id() == 0

    assert cluster.stop(0) == 0
    assert cluster.zk.get_live_broker_ids() == []
    assert (broker.log_dir / CLEAN_SHUTDOWN_FILE).exists()
    meta = (broker.log_dir / "meta.properties").read_text()
    assert "broker.id=0" in meta and "cluster.id=" in meta


def test_duplicate_broker_id_exits_with_a_clear_message(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(n_brokers=1)
    live = cluster.brokers[0]
    owner = cluster.zk.client.exists("/brokers/ids/0").ephemeralOwner
    twin = Cluster(cluster.zk_connect, cluster.tmp_path / "twin", n_brokers=1)
    try:
        config = twin.write_config(0)
        result = subprocess.run(
            [sys.executable, "-m", "minikafka", "broker", "--config", str(config)],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            env={"KAFKA_LOG_FORMAT": "json", "PATH": "/usr/bin:/bin"},
        )
    finally:
        twin.close()
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if not line.startswith("{")]
    # It waited for the session timeout (6 s) and ZooKeeper's expiry tick (2 s) in case the
    # registration was its own from before a crash, then names the live holder.
    assert lines == [
        "error: broker.id 0 is already registered in ZooKeeper: /brokers/ids/0 is held by "
        f"another live broker (PLAINTEXT://{live.address}, KAFKA://{live.kafka_address}, "
        f"session 0x{owner:x}), still there 8 s later"
    ]
    assert cluster.brokers[0].running
    assert cluster.zk.get_live_broker_ids() == [0]


def test_restart_within_the_session_timeout_waits_for_the_old_registration(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(n_brokers=2)
    create_topic(cluster, TOPIC, partitions=2, replication_factor=2)
    victim = cluster.brokers[1]
    registration = cluster.zk.client.exists("/brokers/ids/1")
    cluster.kill(1)
    assert cluster.zk.get_broker_epoch(1) == registration.czxid  # held by the dead session

    started = time.monotonic()
    cluster.start(1, wait_for_expiry=False)  # at once, as `docker compose restart` does
    epoch = cluster.wait_for(
        lambda: (e := cluster.zk.get_broker_epoch(1)) not in (None, registration.czxid) and e,
        30,
        "broker 1 to register again",
    )
    elapsed = time.monotonic() - started
    cluster.wait_until_serving()

    assert victim.running and epoch > registration.czxid
    # the session timeout (6 s) and ZooKeeper's expiry tick at most, plus the process's start
    assert elapsed < 6 + 2 + 10
    (held,) = victim.log_events("broker_registration_held")
    assert held["owner_session"] == f"0x{registration.ephemeralOwner:x}"
    assert held["endpoints"] == [
        f"PLAINTEXT://{victim.address}",
        f"KAFKA://{victim.kafka_address}",
    ]
    assert len(victim.log_events("broker_started")) == 2
    for partition in range(2):
        cluster.wait_for(
            lambda p=partition: 1 in cluster.isr(TOPIC, p),  # type: ignore[misc]
            what=f"broker 1 back in the ISR of {TOPIC}-{partition}",
        )


def _shutdown_warnings(cluster: Cluster, broker_id: int) -> list[dict[str, object]]:
    """Warning and error events the broker logged from its SIGTERM on."""
    events = cluster.brokers[broker_id].log_events()
    requested = max(i for i, e in enumerate(events) if e["event"] == "shutdown_requested")
    return [e for e in events[requested:] if e.get("level") in ("warning", "error")]


def test_the_last_broker_stops_at_once_and_quietly(cluster_factory: ClusterFactory) -> None:
    # A long backoff between controlled shutdown attempts (Kafka's default is 5 s): a useless
    # retry of the last broker would cost 20 s, far above the bound below, which leaves room
    # for a loaded machine.
    cluster = cluster_factory(
        n_brokers=2, overrides={"controlled.shutdown.retry.backoff.ms": "20000"}
    )
    create_topic(cluster, TOPIC, partitions=2, replication_factor=2)
    first = cluster.leader(TOPIC, 0)
    last = 1 - first
    assert cluster.stop(first) == 0
    cluster.wait_for(lambda: cluster.zk.get_live_broker_ids() == [last], what="one broker left")

    started = time.monotonic()
    assert cluster.stop(last) == 0
    assert time.monotonic() - started < 10
    assert _shutdown_warnings(cluster, last) == []
    assert (cluster.brokers[last].log_dir / CLEAN_SHUTDOWN_FILE).exists()


def test_every_broker_stopped_at_once_stops_quickly(cluster_factory: ClusterFactory) -> None:
    # `docker compose stop`: SIGTERM to every broker together. Once every other replica is
    # shutting down too, leadership has nowhere to go and nobody retries for it.
    cluster = cluster_factory(
        n_brokers=3, overrides={"controlled.shutdown.retry.backoff.ms": "20000"}
    )
    create_topic(cluster, TOPIC, partitions=6, replication_factor=3)
    started = time.monotonic()
    for broker in cluster.brokers.values():
        assert broker.process is not None
        broker.process.send_signal(signal.SIGTERM)
    for broker in cluster.brokers.values():
        assert broker.process is not None and broker.process.wait(60) == 0
    assert time.monotonic() - started < 10  # a useless retry would cost 20 s
    for broker_id in cluster.brokers:
        events = [e["event"] for e in cluster.brokers[broker_id].log_events()]
        assert "controlled_shutdown_failed" not in events


def test_shutdown_without_zookeeper_does_not_hang(
    zookeeper_server: ZooKeeperServer, cluster_factory: ClusterFactory
) -> None:
    cluster = cluster_factory(n_brokers=2)
    create_topic(cluster, TOPIC, partitions=2, replication_factor=2)
    for partition in range(2):  # both brokers lead or follow (LeaderAndIsr handled)
        assert cluster.produce(TOPIC, partition, [b"a"], acks=-1, retry_s=10).ok
    zookeeper_server.stop()
    try:
        started = time.monotonic()
        for broker in cluster.brokers.values():
            assert broker.process is not None
            broker.process.send_signal(signal.SIGTERM)
        for broker in cluster.brokers.values():
            assert broker.process is not None and broker.process.wait(60) == 0
        assert time.monotonic() - started < 5
    finally:
        zookeeper_server.start()
    for broker_id in cluster.brokers:
        skipped = cluster.brokers[broker_id].log_events("controlled_shutdown_skipped")
        assert [e["reason"] for e in skipped] == [
            "ZooKeeper is unreachable: no controller can move leadership; "
            "the partitions this broker leads fail over when its session expires"
        ]


def test_invalid_config_exits_1() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "minikafka", "broker", "--override", "broker.id=1"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 1
    assert "missing required configuration zookeeper.connect" in result.stderr


def test_sigterm_moves_leadership_first_and_restart_recovers(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(n_brokers=3)
    create_topic(cluster, TOPIC, partitions=3, replication_factor=3)
    for partition in range(3):
        result = cluster.produce(TOPIC, partition, [b"a", b"b", b"c"], acks=-1, retry_s=10)
        assert result.ok, result

    leader = cluster.leader(TOPIC, 0)
    led_before = [p for p in range(3) if cluster.leader(TOPIC, p) == leader]
    assert cluster.stop(leader) == 0

    broker = cluster.brokers[leader]
    events = [e["event"] for e in broker.log_events()]
    # leadership moved while the broker still served, then it stopped serving
    assert events.index("controlled_shutdown_succeeded") < events.index("grpc_server_stopped")
    assert (broker.log_dir / CLEAN_SHUTDOWN_FILE).exists()
    for partition in led_before:
        state = cluster.partition_state(TOPIC, partition)
        assert state is not None and state.leader not in (leader, -1)
        assert leader not in state.isr
    # the data stays readable from the new leaders (a new leader's high watermark catches up
    # once the remaining follower has fetched from it, as in Kafka: wait for that)
    for partition in range(3):
        cluster.wait_for(
            lambda p=partition: (
                [r.value for r in cluster.fetch_all(TOPIC, p)]  # type: ignore[misc]
                == [b"a", b"b", b"c"]
            ),
            what=f"{TOPIC}-{partition} readable from its new leader",
        )

    cluster.start(leader)
    cluster.wait_until_serving()
    # back in every ISR, with its log (recovered without loss) caught up
    for partition in range(3):
        cluster.wait_for(
            lambda p=partition: leader in cluster.isr(TOPIC, p),  # type: ignore[misc]
            what=f"broker {leader} back in the ISR of {TOPIC}-{partition}",
        )
    assert len(broker.log_events("broker_started")) == 2
    assert cluster.stop(leader) == 0
    for partition in range(3):
        assert cluster.replica_state(leader, TOPIC, partition).log_end_offset == 3


def test_session_loss_registers_again(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(n_brokers=2)
    victim = 1 if cluster.controller_id() == 0 else 0
    epoch = cluster.zk.get_broker_epoch(victim)
    assert epoch is not None

    cluster.pause(victim)  # longer than zookeeper.session.timeout.ms: the session expires
    cluster.wait_for(
        lambda: victim not in cluster.zk.get_live_broker_ids(), 20, "the session to expire"
    )
    cluster.resume(victim)
    new_epoch = cluster.wait_for(
        lambda: cluster.zk.get_broker_epoch(victim), 20, "the broker to register again"
    )
    assert new_epoch > epoch
    cluster.wait_until_serving()
    assert cluster.brokers[victim].log_events("zookeeper_new_session")


def test_listener_port_in_use_exits_with_a_clear_message(zk_connect: str, tmp_path: Path) -> None:
    cluster = Cluster(zk_connect, tmp_path, n_brokers=1)
    try:
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", cluster.brokers[0].port))
            taken.listen()
            result = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "minikafka",
                    "broker",
                    "--config",
                    str(cluster.write_config(0)),
                ],
                cwd=REPO_ROOT,
                capture_output=True,
                text=True,
                timeout=60,
                env={"KAFKA_LOG_FORMAT": "json", "PATH": "/usr/bin:/bin"},
            )
    finally:
        cluster.close()
    assert result.returncode == 1
    # gRPC's own logging may print a line before ours; ours is the last word
    last = [line for line in result.stderr.splitlines() if not line.startswith("{")][-1]
    assert last.startswith(f"error: cannot listen on 127.0.0.1:{cluster.brokers[0].port}")
