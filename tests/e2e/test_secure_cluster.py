"""The secured compose variant (docker-compose.yml + docker-compose.secure.yml) from the host.

Its own project (``minikafka-e2e-secure``) on free host ports, with certificates made by
scripts/make-certs.sh into a temporary directory (MINIKAFKA_CERTS_DIR), taken down with
``down -v`` at the end, whether the tests passed or not. Checked:

- a client without TLS, or with TLS but no login or a wrong password, gets nothing, on both
  doors;
- the SCRAM users the ``scram-users`` service made log in over SASL_SSL (confluent-kafka, kcat,
  the minikafka client and CLI); alice may not manage ACLs; admin (a super user) grants her a
  topic and a group with ``minikafka acls``; she then produces and consumes there;
- a killed leader: the brokers, which replicate and take the controller's requests over mutual
  TLS only, fail over and every acknowledged record is still there.

The image is the one the first e2e test builds (``up --build`` reuses it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import confluent_kafka
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

import minikafka
from minikafka.proto.errors import ErrorCode, KafkaError
from tests.e2e.conftest import (
    _DOWN,
    BROKER_IDS,
    COMPOSE_FILE,
    REPO,
    ComposeCluster,
    HostPorts,
    _unavailable,
)
from tests.e2e.faults import wait_for

PROJECT = "minikafka-e2e-secure"
SECURE_FILE = REPO / "docker-compose.secure.yml"
SECURE_PORTS = HostPorts.free()
GRPC_BOOTSTRAP = ",".join(f"127.0.0.1:{SECURE_PORTS.grpc[b]}" for b in BROKER_IDS)
KAFKA_BOOTSTRAP = ",".join(f"127.0.0.1:{SECURE_PORTS.kafka[b]}" for b in BROKER_IDS)
SERVICES = ("zookeeper", "broker1", "broker2", "broker3")
TOPIC = "payments"
GROUP = "ledger"
RECORDS = 600
KafkaValue = str | int | float | bool  # a confluent-kafka config value


class SecureCluster:
    """The running secured project, and where its certificates are."""

    def __init__(self, compose: ComposeCluster, certs: Path) -> None:
        self.compose = compose
        self.certs = certs
        self.ca = str(certs / "truststore.pem")

    def kafka_login(self, user: str, password: str) -> dict[str, KafkaValue]:
        """confluent-kafka's (librdkafka's) keys for SASL_SSL + SCRAM."""
        return {
            "bootstrap.servers": KAFKA_BOOTSTRAP,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": user,
            "sasl.password": password,
            "ssl.ca.location": self.ca,
        }

    def grpc_login(self, user: str, password: str) -> dict[str, str]:
        """The minikafka client's keys (the same names) for the gRPC door."""
        return {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": user,
            "sasl.password": password,
            "ssl.ca.location": self.ca,
        }

    def command_config(self, tmp: Path, user: str, password: str) -> Path:
        path = tmp / f"{user}.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in self.grpc_login(user, password).items()))
        return path


def _one_shot_exit_code(compose: ComposeCluster, service: str) -> int | None:
    """The exit code of a one-shot service's container, None while it runs or has none."""
    found = compose.docker(
        "ps",
        "-a",
        "-q",
        "--filter",
        f"label=com.docker.compose.project={compose.project}",
        "--filter",
        f"label=com.docker.compose.service={service}",
    ).split()
    if not found:
        return None
    state = compose.docker(
        "inspect", "-f", "{{.State.Status}} {{.State.ExitCode}}", found[0]
    ).split()
    return int(state[1]) if state[0] == "exited" else None


@pytest.fixture(scope="module")
def secure(
    base_images: None,
    readme_ports: list[int],
    docker_compose_command: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[SecureCluster]:
    certs = tmp_path_factory.mktemp("secure-certs")
    made = subprocess.run(
        [str(REPO / "scripts" / "make-certs.sh"), str(certs)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert made.returncode == 0, made.stderr[-2000:]
    compose = ComposeCluster(
        docker_compose_command,
        [str(COMPOSE_FILE), str(SECURE_FILE)],
        PROJECT,
        SECURE_PORTS,
        env={"MINIKAFKA_CERTS_DIR": str(certs)},
    )
    try:
        compose.up([_DOWN, "up -d --build"])
        compose.wait_healthy(SERVICES)
        deadline = time.monotonic() + 120
        while (code := _one_shot_exit_code(compose, "scram-users")) is None:
            assert time.monotonic() < deadline, compose.logs("scram-users")
            time.sleep(1.0)
        assert code == 0, compose.logs("scram-users")
        yield SecureCluster(compose, certs)
    finally:
        if os.environ.get("MINIKAFKA_E2E_KEEP") != "1":
            compose.compose(*_DOWN.split())


def _kafka_errors(config: Mapping[str, KafkaValue], seconds: float) -> tuple[list[str], int]:
    """Ask for metadata with librdkafka for ``seconds``: the error codes it reported (by name)
    and how many topics it saw (0 when it got no answer)."""
    errors: list[str] = []
    # confluent-kafka's stubs type a config's values as plain values, callbacks left out.
    admin = AdminClient({**config, "error_cb": lambda e: errors.append(e.name())})  # type: ignore[dict-item]
    try:
        seen = len(admin.list_topics(timeout=seconds).topics)
    except confluent_kafka.KafkaException as exc:
        errors.append(exc.args[0].name())
        seen = 0
    admin.poll(1.0)  # error_cb runs in poll
    return errors, seen


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "minikafka", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=REPO,
    )


def test_clients_without_tls_or_a_good_login_get_nothing(secure: SecureCluster) -> None:
    # PLAINTEXT bytes on a SASL_SSL listener: the TLS handshake fails, nothing is served.
    errors, seen = _kafka_errors({"bootstrap.servers": KAFKA_BOOTSTRAP}, 5)
    assert seen == 0 and errors, errors
    # TLS, then a wrong password: SASL authentication fails.
    errors, seen = _kafka_errors(secure.kafka_login("alice", "wrong-secret"), 5)
    assert seen == 0 and "_AUTHENTICATION" in errors, errors
    # The same on the gRPC door with the minikafka client.
    wrong = secure.grpc_login("alice", "wrong-secret")
    with (
        pytest.raises(KafkaError) as refused,
        minikafka.AdminClient(GRPC_BOOTSTRAP, security=wrong) as admin,
    ):
        admin.list_topics()
    assert refused.value.code == ErrorCode.SASL_AUTHENTICATION_FAILED
    # No TLS at all: no answer within the deadline.
    with (
        pytest.raises(KafkaError),
        minikafka.Producer(GRPC_BOOTSTRAP, max_block_ms=5_000) as producer,
    ):
        producer.send(TOPIC, b"never").result(timeout=10)


def test_alice_needs_acls_from_admin_then_produces_and_consumes(
    secure: SecureCluster, tmp_path: Path
) -> None:
    admin_login = secure.kafka_login("admin", "admin-secret")
    alice_login = secure.kafka_login("alice", "alice-secret")
    admin = AdminClient(admin_login)
    admin.create_topics(
        [NewTopic(TOPIC, 3, 3, config={"min.insync.replicas": "2"})], operation_timeout=30
    )[TOPIC].result(30)

    # alice logs in (SCRAM over TLS) but may not manage ACLs: only admin, a super user, may.
    alice_props = secure.command_config(tmp_path, "alice", "alice-secret")
    admin_props = secure.command_config(tmp_path, "admin", "admin-secret")
    grant = ["acls", "--bootstrap-server", GRPC_BOOTSTRAP, "--add", "--allow-principal"]
    grant += ["User:alice", "--producer", "--consumer", "--topic", TOPIC, "--group", GROUP]
    refused = _cli(*grant[:2], *grant[2:], "--command-config", str(alice_props))
    assert refused.returncode != 0
    assert "Traceback" not in refused.stderr
    assert "authoriz" in (refused.stdout + refused.stderr).lower(), refused.stderr
    granted = _cli(*grant, "--command-config", str(admin_props))
    assert granted.returncode == 0, granted.stderr
    listed = _cli(
        "acls", "--bootstrap-server", GRPC_BOOTSTRAP, "--command-config", str(admin_props),
        "--list", "--topic", TOPIC,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert "principal=User:alice" in listed.stdout and "operation=WRITE" in listed.stdout

    # alice produces with confluent-kafka (acks=all, idempotent) and consumes with kcat.
    producer = confluent_kafka.Producer({**alice_login, "enable.idempotence": True})
    failed: list[str] = []
    for i in range(10):
        producer.produce(
            TOPIC, key=b"k%d" % i, value=b"alice-%d" % i,
            on_delivery=lambda err, _msg: failed.append(str(err)) if err else None,
        )  # fmt: skip
    assert producer.flush(60) == 0 and not failed, failed
    if shutil.which("kcat") is None:
        _unavailable("no `kcat` (Debian's kcat package; scripts/test.sh installs it)")
    kcat_login = [
        "-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=SCRAM-SHA-256",
        "-X", "sasl.username=alice", "-X", "sasl.password=alice-secret",
        "-X", f"ssl.ca.location={secure.ca}",
    ]  # fmt: skip
    produced = subprocess.run(
        ["kcat", "-b", KAFKA_BOOTSTRAP, *kcat_login, "-t", TOPIC, "-P", "-K:"],
        input="kcat-key:from-kcat\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert produced.returncode == 0, produced.stderr
    # A new group starts at the end unless told otherwise (librdkafka's default is latest).
    kcat_group = [*kcat_login, "-X", "auto.offset.reset=earliest", "-G", GROUP, TOPIC]
    consumed = subprocess.run(
        ["kcat", "-b", KAFKA_BOOTSTRAP, *kcat_group, "-e", "-f", "%s\n"],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert consumed.returncode == 0, consumed.stderr
    assert sorted(consumed.stdout.split()) == sorted(
        [f"alice-{i}" for i in range(10)] + ["from-kcat"]
    )

    # bob has no ACL: test_acls_enforced_on_data_apis.


def test_acls_enforced_on_data_apis(secure: SecureCluster) -> None:
    """bob, logged in but granted nothing, may neither write nor read alice's topic."""
    bob = secure.kafka_login("bob", "bob-secret")
    errors: list[str] = []
    producer = confluent_kafka.Producer({**bob, "message.timeout.ms": 15_000})
    producer.produce(
        TOPIC, value=b"bob", on_delivery=lambda err, _m: errors.append(err.name()) if err else None
    )
    producer.flush(30)
    assert errors == ["TOPIC_AUTHORIZATION_FAILED"], errors
    with (
        pytest.raises(KafkaError) as refused,
        minikafka.Producer(
            GRPC_BOOTSTRAP, max_block_ms=10_000, security=secure.grpc_login("bob", "bob-secret")
        ) as grpc_producer,
    ):
        grpc_producer.send(TOPIC, b"bob").result(timeout=30)
    assert refused.value.code == ErrorCode.TOPIC_AUTHORIZATION_FAILED


def test_minikafka_client_and_cli_over_grpc_sasl_ssl(secure: SecureCluster, tmp_path: Path) -> None:
    alice = secure.grpc_login("alice", "alice-secret")
    with minikafka.Producer(GRPC_BOOTSTRAP, acks="all", security=alice) as producer:
        sent = [producer.send(TOPIC, b"grpc-%d" % i, partition=0) for i in range(5)]
        offsets = [f.result(timeout=60).offset for f in sent]
    assert offsets == sorted(offsets)
    consumer = minikafka.Consumer(
        TOPIC,
        bootstrap_servers=GRPC_BOOTSTRAP,
        group_id=GROUP,
        auto_offset_reset="earliest",
        consumer_timeout_ms=15_000,
        security=alice,
    )
    with consumer:
        values = {r.value for r in consumer if r.partition == 0}
    assert {b"grpc-%d" % i for i in range(5)} <= values
    # The CLI reads its login from --command-config. alice may Describe the topic (implied by
    # her Read and Write), so she lists it; `--describe` would also ask DescribeConfigs, which
    # she was not granted, and fails as Kafka's kafka-topics.sh does.
    props = secure.command_config(tmp_path, "alice", "alice-secret")
    listed = _cli(
        "topics", "--bootstrap-server", GRPC_BOOTSTRAP, "--command-config", str(props), "--list",
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert TOPIC in listed.stdout.split()
    described = _cli(
        "topics", "--bootstrap-server", GRPC_BOOTSTRAP, "--command-config", str(props),
        "--describe", "--topic", TOPIC,
    )  # fmt: skip
    assert described.returncode == 1
    assert described.stderr.strip() == (
        "Error while executing topic command : Topic authorization failed."
    )


def test_leader_killed_fails_over_over_mutual_tls_and_loses_nothing(
    secure: SecureCluster, tmp_path: Path
) -> None:
    topic = "payments-failover"
    alice = secure.kafka_login("alice", "alice-secret")
    admin = AdminClient(secure.kafka_login("admin", "admin-secret"))
    admin.create_topics(
        [NewTopic(topic, 1, 3, config={"min.insync.replicas": "2"})], operation_timeout=30
    )[topic].result(30)
    granted = _cli(
        "acls", "--bootstrap-server", GRPC_BOOTSTRAP, "--command-config",
        str(secure.command_config(tmp_path, "admin", "admin-secret")),
        "--add", "--allow-principal", "User:alice", "--producer", "--idempotent",
        "--consumer", "--topic", topic, "--group", "failover",
    )  # fmt: skip
    assert granted.returncode == 0, granted.stderr

    def led() -> bool:
        partition = admin.list_topics(topic, timeout=5).topics[topic].partitions.get(0)
        return partition is not None and partition.leader > 0 and len(partition.isrs) == 3

    wait_for(led, 60, f"a leader and a full ISR for {topic}")
    victim = admin.list_topics(topic, timeout=10).topics[topic].partitions[0].leader

    delivered: list[bytes] = []
    failed: list[str] = []

    def on_delivery(err: confluent_kafka.KafkaError | None, msg: confluent_kafka.Message) -> None:
        if err is not None:
            failed.append(str(err))
        else:
            value = msg.value()
            assert value is not None
            delivered.append(value)

    producer = confluent_kafka.Producer(
        {**alice, "enable.idempotence": True, "acks": "all", "message.timeout.ms": 120_000}
    )
    for i in range(RECORDS):
        producer.produce(topic, value=b"v%05d" % i, on_delivery=on_delivery)
        producer.poll(0)
        if i == RECORDS // 3:
            producer.flush(60)
            secure.compose.kill(f"broker{victim}")
    assert producer.flush(150) == 0
    assert not failed, failed[:5]
    assert len(delivered) == RECORDS

    def new_leader() -> bool:
        partition = admin.list_topics(topic, timeout=5).topics[topic].partitions[0]
        return partition.leader not in (-1, victim)

    wait_for(new_leader, 60, f"a new leader for {topic}")

    consumer = confluent_kafka.Consumer(
        {**alice, "group.id": "failover", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    read: list[bytes] = []
    deadline = time.monotonic() + 90
    while len(read) < RECORDS and time.monotonic() < deadline:
        message = consumer.poll(1.0)
        if message is None:
            continue
        assert message.error() is None, message.error()
        value = message.value()
        assert value is not None
        read.append(value)
    consumer.close()
    # Every acknowledged record, once and in order (one partition, an idempotent producer).
    assert read == delivered
