"""SASL on the gRPC door, on a real 3-broker cluster whose only gRPC listener is SASL_PLAINTEXT
(clients, the controller's requests and the followers' fetches all go over it):

- the minikafka Producer, Consumer and AdminClient log in with PLAIN, SCRAM-SHA-256 and
  SCRAM-SHA-512 and produce and consume;
- a wrong password, an unknown user and a call without a token are refused, and the brokers'
  logs say so without the password;
- the controller and the followers log in with the brokers' own login: topics are created,
  RF3 acks=all works, after the leader is killed nothing acknowledged is lost and the replicas
  agree, and a controlled shutdown reaches the controller;
- ``minikafka configs --entity-type users`` creates a SCRAM user that can then log in on every
  broker, and ``--describe`` shows it.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import grpc
import pytest

from minikafka.client.admin import AdminClient, NewTopic
from minikafka.client.consumer.consumer import Consumer
from minikafka.client.producer.producer import Producer
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto import transport
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode, KafkaError
from minikafka.proto.sasl_channel import SaslCredentials, sasl_channel
from tests.integration.cluster import REPO_ROOT, Cluster
from tests.integration.conftest import ClusterFactory

_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" '
    'user_admin="admin-secret" user_alice="alice-secret";'
)
SASL_OVERRIDES = {
    "listener.security.protocol.map": "SASL:SASL_PLAINTEXT,KAFKA:PLAINTEXT",
    "inter.broker.listener.name": "SASL",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
    "sasl.mechanism.inter.broker.protocol": "PLAIN",
    "listener.name.sasl.plain.sasl.jaas.config": _JAAS,
    "min.insync.replicas": "2",
}
ADMIN = SaslCredentials("PLAIN", "admin", "admin-secret")
SECRETS = ("admin-secret", "alice-secret", "carol-secret", "wrong-secret")


def sasl_cluster(cluster_factory: ClusterFactory) -> Cluster:
    return cluster_factory(
        n_brokers=3,
        overrides=SASL_OVERRIDES,
        replication="grpc",
        grpc_listener="SASL",
        sasl=ADMIN,
    )


def security(mechanism: str, user: str, password: str) -> dict[str, str]:
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }


def configs_cli(cluster: Cluster, tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """``minikafka configs`` logged in as the admin through --command-config."""
    properties = tmp_path / "admin.properties"
    properties.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.username=admin\nsasl.password=admin-secret\n"
    )
    command = [sys.executable, "-m", "minikafka", "configs"]
    command += ["--bootstrap-server", cluster.bootstrap_servers]
    command += ["--command-config", str(properties), *argv]
    return subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)


def create_topic(cluster: Cluster, name: str) -> None:
    with cluster.admin() as admin:
        errors = admin.create_topics([NewTopic(name, 1, 3)])
    assert errors[name] is None, errors
    cluster.wait_for(lambda: len(cluster.isr(name, 0)) == 3, 30, f"{name}'s ISR to fill")


def produce_and_consume(cluster: Cluster, topic: str, login: dict[str, str], n: int) -> None:
    values = [f"{login['sasl.mechanism']}-{i}".encode() for i in range(n)]
    with Producer(cluster.bootstrap_servers, acks="all", security=login) as producer:
        futures = [producer.send(topic, v, partition=0) for v in values]
        offsets = [f.result(timeout=30).offset for f in futures]
    assert offsets == sorted(offsets)
    with Consumer(
        bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset="earliest", security=login
    ) as consumer:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, offsets[0])
        read: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(read) < n and time.monotonic() < deadline:
            read += [r.value for r in consumer.poll(timeout_ms=500).get(tp, []) if r.value]
    assert read[:n] == values


def who_am_i_on(cluster: Cluster, broker_id: int, credentials: SaslCredentials) -> str:
    address = cluster.brokers[broker_id].address
    channel = sasl_channel(transport.channel(address, 1 << 20), credentials, address)
    try:
        answer = pb_grpc.MetadataStub(channel).DescribeCluster(
            pb.DescribeClusterRequest(), timeout=10
        )
        return str(answer.cluster_id)
    finally:
        channel.close()


def broker_logs(cluster: Cluster) -> str:
    return "".join(b.output_file.read_text(errors="replace") for b in cluster.brokers.values())


def test_clients_log_in_with_each_mechanism_and_users_come_from_the_cli(
    cluster_factory: ClusterFactory, tmp_path: Path
) -> None:
    cluster = sasl_cluster(cluster_factory)  # the controller reached every broker: it logged in
    create_topic(cluster, "secured")

    created = configs_cli(
        cluster, tmp_path, "--entity-type", "users", "--entity-name", "carol", "--alter",
        "--add-config",
        "SCRAM-SHA-256=[iterations=8192,password=carol-secret],SCRAM-SHA-512=[password=carol-secret]",
    )  # fmt: skip
    assert (created.returncode, created.stdout, created.stderr) == (
        0,
        "Completed updating config for user carol.\n",
        "",
    )
    described = configs_cli(cluster, tmp_path, "--entity-type", "users", "--describe")
    assert described.returncode == 0, described.stderr
    assert described.stdout == (
        "SCRAM credential configs for user-principal 'carol' are "
        "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096\n"
    )
    # Every broker's credential cache learns of carol through /config/changes.
    for broker_id in cluster.brokers:
        for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            carol = SaslCredentials(mechanism, "carol", "carol-secret")
            cluster.wait_for(
                lambda b=broker_id, c=carol: _logs_in(cluster, b, c),  # type: ignore[misc]
                20,
                f"carol to log in on broker {broker_id} with {mechanism}",
            )
            assert who_am_i_on(cluster, broker_id, carol) == cluster.zk.get_or_create_cluster_id()

    produce_and_consume(cluster, "secured", security("PLAIN", "alice", "alice-secret"), 20)
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        produce_and_consume(cluster, "secured", security(mechanism, "carol", "carol-secret"), 20)

    removed = configs_cli(
        cluster, tmp_path, "--entity-type", "users", "--entity-name", "carol", "--alter",
        "--delete-config", "SCRAM-SHA-512",
    )  # fmt: skip
    assert removed.returncode == 0, removed.stderr
    described = configs_cli(cluster, tmp_path, "--entity-type", "users", "--describe")
    assert described.stdout == (
        "SCRAM credential configs for user-principal 'carol' are SCRAM-SHA-256=iterations=8192\n"
    )
    bad = configs_cli(
        cluster, tmp_path, "--entity-type", "users", "--entity-name", "carol", "--alter",
        "--add-config", "SCRAM-SHA-256=[iterations=100,password=carol-secret]",
    )  # fmt: skip
    assert bad.returncode == 1 and bad.stdout == ""
    assert bad.stderr.startswith("Error while executing config command : ")
    assert "Too few iterations" in bad.stderr and bad.stderr.count("\n") == 1
    assert not any(secret in broker_logs(cluster) for secret in SECRETS)


def _logs_in(cluster: Cluster, broker_id: int, credentials: SaslCredentials) -> bool:
    try:
        who_am_i_on(cluster, broker_id, credentials)
    except KafkaError:
        return False
    return True


def test_bad_logins_and_calls_without_a_token_are_refused_and_logged_without_secrets(
    cluster_factory: ClusterFactory, tmp_path: Path
) -> None:
    cluster = sasl_cluster(cluster_factory)
    create_topic(cluster, "guarded")
    for mechanism, user, password in [
        ("PLAIN", "alice", "wrong-secret"),
        ("PLAIN", "nobody", "alice-secret"),
        ("SCRAM-SHA-512", "nobody", "wrong-secret"),
    ]:
        login = security(mechanism, user, password)
        with (
            pytest.raises(KafkaError) as refused,
            Producer(cluster.bootstrap_servers, max_block_ms=10_000, security=login) as producer,
        ):
            producer.send("guarded", b"never", partition=0).result(timeout=20)
        assert refused.value.code == ErrorCode.SASL_AUTHENTICATION_FAILED, refused.value
        with (
            pytest.raises(KafkaError) as refused,
            AdminClient(cluster.bootstrap_servers, security=login) as admin,
        ):
            admin.list_topics()
        assert refused.value.code == ErrorCode.SASL_AUTHENTICATION_FAILED

    # The CLI: one line, exit 1, no traceback.
    properties = tmp_path / "wrong.properties"
    properties.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
        "sasl.username=alice\nsasl.password=wrong-secret\n"
    )
    listed = subprocess.run(
        [
            sys.executable, "-m", "minikafka", "topics", "--bootstrap-server",
            cluster.bootstrap_servers, "--command-config", str(properties), "--list",
        ],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert listed.returncode != 0 and listed.stdout == ""
    assert listed.stderr.count("\n") == 1 and "Traceback" not in listed.stderr
    assert "Authentication failed" in listed.stderr

    # A call without a token, and one with a made-up token.
    raw = grpc.insecure_channel(cluster.brokers[0].address)
    for metadata in [(), (("minikafka-session-token", "made-up-token"),)]:
        with pytest.raises(grpc.RpcError) as unauthenticated:
            pb_grpc.MetadataStub(raw).Metadata(pb.MetadataRequest(), timeout=10, metadata=metadata)
        assert unauthenticated.value.code() == grpc.StatusCode.UNAUTHENTICATED
    raw.close()

    def logged(event: str) -> list[dict[str, Any]]:
        return [e for b in cluster.brokers.values() for e in b.log_events(event)]

    cluster.wait_for(lambda: len(logged("grpc.sasl_call_refused")) >= 2, 10, "refusals logged")
    assert {e["reason"] for e in logged("grpc.sasl_call_refused")} >= {
        "the call carries no session token",
        "the session token is unknown or expired (log in again)",
    }
    failed = logged("sasl.authentication_failed")
    assert {e["mechanism"] for e in failed} >= {"PLAIN", "SCRAM-SHA-512", "SCRAM-SHA-256"}
    assert all(e["client_host"] == "127.0.0.1" for e in failed)
    logs = broker_logs(cluster)
    assert "made-up-token" not in logs
    assert not any(secret in logs for secret in SECRETS)


def test_controller_and_followers_work_over_the_sasl_inter_broker_listener(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = sasl_cluster(cluster_factory)
    create_topic(cluster, "safe")
    login = security("PLAIN", "alice", "alice-secret")
    acked: list[bytes] = []
    with Producer(cluster.bootstrap_servers, acks="all", security=login) as producer:
        for i in range(50):
            value = f"before-{i}".encode()
            producer.send("safe", value, partition=0).result(timeout=30)
            acked.append(value)
        leader = cluster.leader("safe", 0)
        cluster.kill(leader)
        cluster.wait_for(lambda: cluster.leader("safe", 0) not in (leader, -1), 30, "a new leader")
        for i in range(50):
            value = f"after-{i}".encode()
            producer.send("safe", value, partition=0).result(timeout=30)
            acked.append(value)
    cluster.start(leader)
    cluster.wait_until_serving()
    cluster.wait_for(lambda: len(cluster.isr("safe", 0)) == 3, 30, "the old leader back in ISR")

    read = [r.value for r in cluster.fetch_all("safe", 0)]
    assert read == acked  # every acknowledged record, once, in order
    hw = len(acked)
    cluster.wait_for(
        lambda: all(
            cluster.replica_state(b, "safe", 0).log_end_offset >= hw for b in cluster.brokers
        ),
        20,
        "followers to catch up",
    )
    images = {b: cluster.replica_state(b, "safe", 0).bytes_below(hw) for b in cluster.brokers}
    assert len(set(images.values())) == 1
    # Controlled shutdown: a broker that is not the controller asks the controller over the
    # SASL control plane listener, logged in.
    follower = next(b for b in cluster.brokers if b != cluster.controller_id())
    assert cluster.stop(follower) == 0
    events = [e["event"] for e in cluster.brokers[follower].log_events()]
    assert "controlled_shutdown_succeeded" in events, events[-20:]
    # The followers' fetches, the controller's requests and the controlled shutdown were
    # logged-in calls, never refused (the restarted broker forgot every token: the harness's
    # own Metadata calls met that once).
    refused = [
        e["method"]
        for b in cluster.brokers.values()
        for e in b.log_events("grpc.sasl_call_refused")
        if not str(e["method"]).startswith("/minikafka.v1.Metadata/")
    ]
    assert refused == []
