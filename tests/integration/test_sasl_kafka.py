"""SASL on the Kafka door with real brokers and real clients: PLAIN and SCRAM-SHA-256/512 from
confluent-kafka and kafka-python, credentials made by AlterUserScramCredentials reaching every
broker, credentials written to ZooKeeper before the brokers start, replication over a
SASL_PLAINTEXT inter-broker listener, and what a broken client gets."""

from __future__ import annotations

import functools
import socket
import struct
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    NewTopic,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kafka import KafkaConsumer, KafkaProducer

from minikafka.broker.security.sasl.scram import (
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    ScramSaslClient,
    credential_from_password,
)
from minikafka.broker.server.kafka.schema import read_entity, response_class
from tests.integration.cluster import Cluster
from tests.integration.kafka_protocol.raw import RawKafka, encode_request, read_frame

pytestmark = pytest.mark.integration

ClusterFactory = Callable[..., Cluster]

ADMIN_PASSWORD = "admin-secret-7f3a"
ALICE_PASSWORD = "alice-secret-91b2"
JAAS_PLAIN = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    f'username="admin" password="{ADMIN_PASSWORD}" '
    f'user_admin="{ADMIN_PASSWORD}" user_alice="{ALICE_PASSWORD}";'
)
JAAS_SCRAM = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required "
    f'username="admin" password="{ADMIN_PASSWORD}";'
)
MECHANISMS = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"


def sasl_overrides(inter_broker: str = "PLAIN") -> dict[str, str]:
    """The KAFKA listener (replication's, clients') as SASL_PLAINTEXT."""
    return {
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,KAFKA:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": MECHANISMS,
        "sasl.mechanism.inter.broker.protocol": inter_broker,
        "listener.name.kafka.plain.sasl.jaas.config": JAAS_PLAIN,
        "listener.name.kafka.scram-sha-256.sasl.jaas.config": JAAS_SCRAM,
        "listener.name.kafka.scram-sha-512.sasl.jaas.config": JAAS_SCRAM,
    }


def confluent_conf(
    bootstrap: str, mechanism: str, user: str, password: str, **extra: Any
) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
        **extra,
    }


def python_conf(bootstrap: str, mechanism: str, user: str, password: str) -> dict[str, Any]:
    return {
        "bootstrap_servers": bootstrap.split(","),
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": mechanism,
        "sasl_plain_username": user,
        "sasl_plain_password": password,
    }


@pytest.fixture
def sasl_cluster(cluster_factory: ClusterFactory) -> Cluster:
    return cluster_factory(3, sasl_overrides(), replication="kafka")


def admin_client(cluster: Cluster) -> AdminClient:
    return AdminClient(
        confluent_conf(cluster.kafka_bootstrap_servers, "PLAIN", "admin", ADMIN_PASSWORD)
    )


def create_topic(admin: AdminClient, topic: str, rf: int = 3, partitions: int = 1) -> None:
    futures = admin.create_topics([NewTopic(topic, partitions, rf)], operation_timeout=20)
    futures[topic].result(timeout=30)


def confluent_round_trip(bootstrap: str, mechanism: str, user: str, password: str) -> None:
    topic = f"t-{mechanism.lower()}-{uuid.uuid4().hex[:6]}"
    producer = Producer(
        confluent_conf(bootstrap, mechanism, user, password, **{"acks": "all", "linger.ms": 0})
    )
    # The last one large enough to leave by sendfile (SASL_PLAINTEXT is not encrypted)
    values = [f"{mechanism}-{i}".encode() for i in range(20)] + [bytes(range(256)) * 400]
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(30) == 0
    consumer = Consumer(
        confluent_conf(
            bootstrap,
            mechanism,
            user,
            password,
            **{"group.id": f"g-{topic}", "auto.offset.reset": "earliest"},
        )
    )
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(got) < len(values) and time.monotonic() < deadline:
        message = consumer.poll(1.0)
        if message is None:
            continue
        assert message.error() is None, message.error()
        got.append(message.value() or b"")
    consumer.commit(asynchronous=False)
    consumer.close()
    assert got == values


def kafka_python_round_trip(bootstrap: str, mechanism: str, user: str, password: str) -> None:
    topic = f"kp-{mechanism.lower()}-{uuid.uuid4().hex[:6]}"
    conf = python_conf(bootstrap, mechanism, user, password)
    producer = KafkaProducer(acks="all", **conf)
    values = [f"kp-{mechanism}-{i}".encode() for i in range(20)]
    for value in values:
        producer.send(topic, value).get(timeout=30)
    producer.close()
    consumer = KafkaConsumer(
        topic,
        group_id=f"g-{topic}",
        auto_offset_reset="earliest",
        consumer_timeout_ms=20_000,
        **conf,
    )
    got = []
    for message in consumer:
        got.append(message.value)
        if len(got) == len(values):
            break
    consumer.commit()
    consumer.close()
    assert got == values


def alter_scram(admin: AdminClient, changes: list[Any]) -> None:
    for future in admin.alter_user_scram_credentials(changes).values():
        future.result(timeout=30)


def test_clients_with_every_mechanism_and_credentials_reaching_every_broker(
    sasl_cluster: Cluster,
) -> None:
    cluster = sasl_cluster
    admin = admin_client(cluster)
    alter_scram(
        admin,
        [
            UserScramCredentialUpsertion(
                "alice",
                ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096),
                ALICE_PASSWORD.encode(),
            ),
            UserScramCredentialUpsertion(
                "alice",
                ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192),
                ALICE_PASSWORD.encode(),
            ),
        ],
    )
    # Every broker takes a SCRAM login within a second of the answer.
    deadline = time.monotonic() + 1.0
    for broker in cluster.brokers.values():
        for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            wait_for_login(broker.kafka_address, mechanism, "alice", ALICE_PASSWORD, deadline)

    described = admin.describe_user_scram_credentials(["alice"])
    assert isinstance(described, dict)
    infos = described["alice"].result(timeout=30).scram_credential_infos
    assert sorted((i.mechanism, i.iterations) for i in infos) == [
        (ScramMechanism.SCRAM_SHA_256, 4096),
        (ScramMechanism.SCRAM_SHA_512, 8192),
    ]
    every = admin.describe_user_scram_credentials()  # no user named: every user with one
    assert not isinstance(every, dict)
    assert list(every.result(timeout=30)) == ["alice"]
    stored = cluster.zk.get_user_config("alice")
    assert set(stored) == {"SCRAM-SHA-256", "SCRAM-SHA-512"}
    assert stored["SCRAM-SHA-512"].endswith(",iterations=8192")
    assert stored["SCRAM-SHA-256"].startswith("salt=")

    bootstrap = cluster.kafka_bootstrap_servers
    for mechanism, user, password in [
        ("PLAIN", "alice", ALICE_PASSWORD),
        ("SCRAM-SHA-256", "alice", ALICE_PASSWORD),
        ("SCRAM-SHA-512", "alice", ALICE_PASSWORD),
    ]:
        confluent_round_trip(bootstrap, mechanism, user, password)
        kafka_python_round_trip(bootstrap, mechanism, user, password)
    sendfile = sum(
        cluster.metric(b, "minikafka_kafka_fetch_records_bytes_total", path="sendfile") or 0
        for b in cluster.brokers
    )
    # the large records left by sendfile (to the consumers and the followers, which fetch on
    # this SASL_PLAINTEXT listener too)
    assert sendfile >= 3 * 400 * 256

    # A deleted credential stops working on every broker.
    alter_scram(admin, [UserScramCredentialDeletion("alice", ScramMechanism.SCRAM_SHA_256)])
    for broker in cluster.brokers.values():
        wait_for_refusal(broker.kafka_address, "SCRAM-SHA-256", "alice", ALICE_PASSWORD)
        assert raw_login(broker.kafka_address, "SCRAM-SHA-512", "alice", ALICE_PASSWORD) == 0
    nobody = admin.describe_user_scram_credentials(["nobody"])
    assert isinstance(nobody, dict)
    with pytest.raises(KafkaException, match=r"RESOURCE_NOT_FOUND|does not exist"):
        nobody["nobody"].result(timeout=30)


def raw_login(address: str, mechanism: str, user: str, password: str) -> int:
    """Log in on a raw connection: 0, or the error code of the handshake or authenticate."""
    with RawKafka(address, timeout_s=10) as raw:
        handshake = raw.call(17, 1, {"mechanism": mechanism})
        if handshake.error_code != 0:
            return int(handshake.error_code)
        if mechanism == "PLAIN":
            tokens = [f"\0{user}\0{password}".encode()]
            answer = raw.call(36, 2, {"auth_bytes": tokens[0]})
            return int(answer.error_code)
        client = ScramSaslClient(
            SCRAM_SHA_256 if mechanism == "SCRAM-SHA-256" else SCRAM_SHA_512, user, password
        )
        first = raw.call(36, 2, {"auth_bytes": client.first()})
        if first.error_code != 0:
            return int(first.error_code)
        final = raw.call(36, 2, {"auth_bytes": client.final(first.auth_bytes)})
        if final.error_code != 0:
            return int(final.error_code)
        client.verify(final.auth_bytes)
        # Logged in: requests are served now.
        assert raw.call(3, 1, {"topics": []}).brokers
        return 0


def wait_for_login(address: str, mechanism: str, user: str, password: str, deadline: float) -> None:
    while True:
        code = raw_login(address, mechanism, user, password)
        if code == 0:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{user} cannot log in with {mechanism} on {address}: {code}")
        time.sleep(0.05)


def wait_for_refusal(address: str, mechanism: str, user: str, password: str) -> None:
    deadline = time.monotonic() + 5.0
    while raw_login(address, mechanism, user, password) != 58:
        assert time.monotonic() < deadline, f"{user} can still log in with {mechanism}"
        time.sleep(0.05)


def test_credentials_in_zookeeper_before_start_and_replication_over_scram(
    cluster_factory: ClusterFactory,
) -> None:
    """kafka-configs --zookeeper style: the credentials are in ZooKeeper before any broker
    runs; the brokers replicate with SCRAM-SHA-512 as admin; RF 3, acks=all, the leader
    killed: nothing acknowledged is lost and the replicas agree."""
    cluster = cluster_factory(3, sasl_overrides("SCRAM-SHA-512"), start=False, replication="kafka")
    admin_512 = credential_from_password(SCRAM_SHA_512, ADMIN_PASSWORD, 4096).to_string()
    bob_256 = credential_from_password(SCRAM_SHA_256, "bob-secret", 4096).to_string()
    cluster.zk.update_user_configs(
        {
            "admin": lambda c: {**c, "SCRAM-SHA-512": admin_512},
            "bob": lambda c: {**c, "SCRAM-SHA-256": bob_256, "producer_byte_rate": "1048576"},
        }
    )
    cluster.start_all()
    cluster.wait_until_serving()
    for broker in cluster.brokers.values():
        assert raw_login(broker.kafka_address, "SCRAM-SHA-256", "bob", "bob-secret") == 0
        assert raw_login(broker.kafka_address, "SCRAM-SHA-256", "bob", "wrong") == 58

    admin = AdminClient(
        confluent_conf(cluster.kafka_bootstrap_servers, "SCRAM-SHA-256", "bob", "bob-secret")
    )
    topic = "replicated"
    create_topic(admin, topic, rf=3)
    cluster.wait_for(lambda: len(cluster.isr(topic, 0)) == 3, 30, "the ISR to fill")
    producer = Producer(
        confluent_conf(
            cluster.kafka_bootstrap_servers,
            "SCRAM-SHA-256",
            "bob",
            "bob-secret",
            **{
                "acks": "all",
                "linger.ms": 0,
                "message.send.max.retries": 20,
                "retry.backoff.ms": 200,
            },
        )
    )
    acknowledged: list[bytes] = []
    lock = threading.Lock()

    def delivered(err: Any, message: Any) -> None:
        if err is None:
            with lock:
                acknowledged.append(message.value())

    for i in range(200):
        producer.produce(topic, f"before-{i}".encode(), on_delivery=delivered)
    assert producer.flush(30) == 0
    leader = cluster.leader(topic, 0)
    cluster.kill(leader)
    for i in range(200):
        producer.produce(topic, f"after-{i}".encode(), on_delivery=delivered)
    assert producer.flush(60) == 0
    assert len(acknowledged) == 400
    cluster.start(leader)
    cluster.wait_for(lambda: len(cluster.isr(topic, 0)) == 3, 60, "the old leader to catch up")
    values = [r.value for r in cluster.fetch_all(topic, 0)]
    assert set(acknowledged) <= set(values)
    states = [cluster.replica_state(b, topic, 0) for b in cluster.brokers]
    cluster.wait_for(
        lambda: (
            len({cluster.replica_state(b, topic, 0).log_end_offset for b in cluster.brokers}) == 1
        ),
        30,
        "the replicas to agree",
    )
    states = [cluster.replica_state(b, topic, 0) for b in cluster.brokers]
    end = states[0].log_end_offset
    assert len({s.bytes_below(end) for s in states}) == 1
    # The quota key written beside bob's credential is still there (not the credential's).
    assert cluster.zk.get_user_config("bob")["producer_byte_rate"] == "1048576"
    loaded = [e for b in cluster.brokers.values() for e in b.log_events("scram_credentials_loaded")]
    assert loaded and all(e["users"] == 2 for e in loaded)
    # The followers (SCRAM-SHA-512, admin) logged in every time: a refused login would be a
    # warning line (the test's own wrong SCRAM-SHA-256 login of bob is one).
    for broker in cluster.brokers.values():
        refused = [
            e["mechanism"]
            for e in broker.log_events("kafka.connection_closed")
            if e.get("reason") == "SASL authentication failed"
        ]
        assert refused == ["SCRAM-SHA-256"]


# --- bad input -------------------------------------------------------------------------------


def frame_answer(sock: socket.socket, api_key: int, version: int) -> Any:
    frame = read_frame(sock)
    cls = response_class(api_key, version)
    _, offset = read_entity(cls.__header_schema__, frame, 0)
    return read_entity(cls, frame, offset)[0]


def closed(sock: socket.socket) -> bool:
    sock.settimeout(10)
    try:
        return sock.recv(1) == b""
    except ConnectionError:
        return True


@pytest.fixture
def one_broker(cluster_factory: ClusterFactory) -> Iterator[Cluster]:
    overrides = {**sasl_overrides(), "connection.failed.authentication.delay.ms": "500"}
    cluster = cluster_factory(1, overrides, replication="kafka")
    yield cluster


def test_bad_input_gets_kafka_errors_or_a_closed_connection(one_broker: Cluster) -> None:
    cluster = one_broker
    broker = cluster.brokers[0]
    address = broker.kafka_address
    host, port = address.rsplit(":", 1)

    def connect() -> socket.socket:
        return socket.create_connection((host, int(port)), timeout=10)

    # A well-behaved client works throughout, from another thread.
    stop = threading.Event()
    good_failures: list[str] = []

    def good_client() -> None:
        while not stop.is_set():
            code = raw_login(address, "PLAIN", "alice", ALICE_PASSWORD)
            if code != 0:
                good_failures.append(f"login {code}")
            time.sleep(0.05)

    worker = threading.Thread(target=good_client)
    worker.start()
    try:
        cases: dict[str, Callable[[], None]] = {}

        def wrong_password() -> None:
            with connect() as sock:
                sock.sendall(encode_request(17, 1, {"mechanism": "PLAIN"}))
                assert frame_answer(sock, 17, 1).error_code == 0
                token = f"\0alice\0not-{ALICE_PASSWORD}".encode()
                sock.sendall(encode_request(36, 2, {"auth_bytes": token}, 2))
                started = time.monotonic()
                answer = frame_answer(sock, 36, 2)
                # connection.failed.authentication.delay.ms: a guess is answered late
                assert time.monotonic() - started >= 0.5
                assert answer.error_code == 58
                assert answer.error_message == "Authentication failed: Invalid username or password"
                assert closed(sock)

        def unknown_scram_user() -> None:
            with connect() as sock:
                sock.sendall(encode_request(17, 1, {"mechanism": "SCRAM-SHA-256"}))
                assert frame_answer(sock, 17, 1).error_code == 0
                sock.sendall(encode_request(36, 2, {"auth_bytes": b"n,,n=mallory,r=abc"}, 2))
                answer = frame_answer(sock, 36, 2)
                assert answer.error_code == 58
                assert answer.error_message == (
                    "Authentication failed during authentication due to invalid credentials "
                    "with SASL mechanism SCRAM-SHA-256"
                )
                assert closed(sock)

        def unknown_mechanism() -> None:
            with connect() as sock:
                sock.sendall(encode_request(17, 1, {"mechanism": "GSSAPI"}))
                answer = frame_answer(sock, 17, 1)
                assert answer.error_code == 33
                assert list(answer.mechanisms) == MECHANISMS.split(",")
                assert closed(sock)

        def handshake_repeated() -> None:
            with connect() as sock:
                sock.sendall(encode_request(17, 1, {"mechanism": "PLAIN"}))
                assert frame_answer(sock, 17, 1).error_code == 0
                sock.sendall(encode_request(17, 1, {"mechanism": "PLAIN"}, 2))
                assert frame_answer(sock, 17, 1).error_code == 34
                assert closed(sock)

        def handshake_after_success() -> None:
            with RawKafka(address, timeout_s=10) as raw:
                assert raw.call(17, 1, {"mechanism": "PLAIN"}).error_code == 0
                token = f"\0alice\0{ALICE_PASSWORD}".encode()
                assert raw.call(36, 2, {"auth_bytes": token}).error_code == 0
                assert raw.call(17, 1, {"mechanism": "PLAIN"}).error_code == 34
                again = raw.call(36, 2, {"auth_bytes": token})
                assert again.error_code == 34
                assert raw.call(3, 1, {"topics": []}).brokers  # still served

        def authenticate_before_handshake() -> None:
            with connect() as sock:
                sock.sendall(encode_request(36, 2, {"auth_bytes": b"\0alice\0x"}))
                assert closed(sock)

        def malformed_scram() -> None:
            with connect() as sock:
                sock.sendall(encode_request(17, 1, {"mechanism": "SCRAM-SHA-512"}))
                assert frame_answer(sock, 17, 1).error_code == 0
                sock.sendall(encode_request(36, 2, {"auth_bytes": b"p=tls-unique,,n=a,r=b"}, 2))
                assert frame_answer(sock, 36, 2).error_code == 58
                assert closed(sock)

        def request_before_authentication() -> None:
            with connect() as sock:
                sock.sendall(
                    encode_request(
                        18, 3, {"client_software_name": "t", "client_software_version": "1"}
                    )
                )
                assert frame_answer(sock, 18, 3).error_code == 0  # ApiVersions is served
                sock.sendall(encode_request(3, 1, {"topics": []}, 2))  # Metadata is not
                assert closed(sock)

        def handshake_v0_raw_tokens() -> None:
            with connect() as sock:
                sock.sendall(encode_request(17, 0, {"mechanism": "PLAIN"}))
                assert frame_answer(sock, 17, 0).error_code == 0
                token = f"\0alice\0{ALICE_PASSWORD}".encode()
                sock.sendall(struct.pack(">i", len(token)) + token)
                assert read_frame(sock) == b""
                sock.sendall(encode_request(3, 1, {"topics": []}, 2))
                assert frame_answer(sock, 3, 1).brokers

        versions = {"client_software_name": "t", "client_software_version": "1"}

        def api_versions_twice() -> None:
            # Kafka answers ApiVersions once before the handshake: asking again cannot keep
            # an unauthenticated connection alive.
            with connect() as sock:
                sock.sendall(encode_request(18, 3, versions))
                assert frame_answer(sock, 18, 3).error_code == 0
                sock.sendall(encode_request(18, 3, versions, 2))
                assert closed(sock)

        def pipelined_request_behind_the_handshake() -> None:
            # Metadata sent in the same write as the handshake is not served: the connection
            # closes after the handshake's answer.
            with connect() as sock:
                sock.sendall(
                    encode_request(17, 1, {"mechanism": "PLAIN"})
                    + encode_request(3, 1, {"topics": []}, 2)
                )
                assert frame_answer(sock, 17, 1).error_code == 0
                assert closed(sock)

        def pipelined_request_behind_the_login() -> None:
            # A whole login and a request in one write: the request is read after the
            # exchange completed and is served as alice.
            with connect() as sock:
                token = f"\0alice\0{ALICE_PASSWORD}".encode()
                sock.sendall(
                    encode_request(17, 1, {"mechanism": "PLAIN"})
                    + encode_request(36, 2, {"auth_bytes": token}, 2)
                    + encode_request(3, 1, {"topics": []}, 3)
                )
                assert frame_answer(sock, 17, 1).error_code == 0
                assert frame_answer(sock, 36, 2).error_code == 0
                assert frame_answer(sock, 3, 1).brokers

        cases = {
            "wrong_password": wrong_password,
            "unknown_scram_user": unknown_scram_user,
            "unknown_mechanism": unknown_mechanism,
            "handshake_repeated": handshake_repeated,
            "handshake_after_success": handshake_after_success,
            "authenticate_before_handshake": authenticate_before_handshake,
            "malformed_scram": malformed_scram,
            "request_before_authentication": request_before_authentication,
            "handshake_v0_raw_tokens": handshake_v0_raw_tokens,
            "api_versions_twice": api_versions_twice,
            "pipelined_request_behind_the_handshake": pipelined_request_behind_the_handshake,
            "pipelined_request_behind_the_login": pipelined_request_behind_the_login,
        }

        def warnings() -> int:
            return sum(
                1
                for e in broker.log_events("kafka.connection_closed")
                if e.get("level") == "warning"
            )

        def warnings_reach(count: int) -> bool:
            return warnings() == count

        for name, case in cases.items():
            before = warnings()
            case()
            if name in (
                "handshake_after_success",
                "handshake_v0_raw_tokens",
                "pipelined_request_behind_the_login",
            ):
                continue
            # One warning line per refused connection.
            cluster.wait_for(
                functools.partial(warnings_reach, before + 1), 5, f"the log line of {name}"
            )
    finally:
        stop.set()
        worker.join()
    assert good_failures == []
    closes = [
        e for e in broker.log_events("kafka.connection_closed") if e.get("level") == "warning"
    ]
    reasons = {e["reason"] for e in closes}
    assert {
        "SASL authentication failed",
        "unsupported SASL mechanism",
        "request before SASL authentication completed",
    } <= reasons
    failed = [e for e in closes if e["reason"] == "SASL authentication failed"]
    assert {e["mechanism"] for e in failed} == {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}
    assert all(str(e["client"]).startswith("127.0.0.1:") for e in failed)
    text = broker.output_file.read_text("utf-8")
    assert ALICE_PASSWORD not in text and ADMIN_PASSWORD not in text


def test_sasl_config_errors_are_one_line(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(
        1,
        {
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,KAFKA:SASL_PLAINTEXT",
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
        },
        start=False,
        replication="grpc",
    )
    broker = cluster.start(0)
    assert broker.process is not None
    assert broker.process.wait(timeout=60) != 0
    output = broker.output_tail()
    assert "GSSAPI" in output and "sasl.enabled.mechanisms" in output
    assert "Traceback" not in output
