"""A fully secured 3-broker cluster, as an operator would run it, with real clients and real
ZooKeeper: every client listener SASL_SSL (SCRAM) on both doors, ``authorizer.class.name`` on
with ``allow.everyone.if.no.acl.found=false`` and ``super.users=User:admin;User:broker``, SCRAM
users alice, bob and admin written to ZooKeeper before any broker starts (Kafka's
``kafka-configs --zookeeper`` bootstrap), and ZooKeeper itself secured: the brokers log in with
SASL DIGEST-MD5 (a JAAS ``Client`` section in KAFKA_OPTS) and ``zookeeper.set.acl=true``. Two
ways the brokers talk to each other:

``mtls``   replication over a Kafka SSL listener INTERNAL, the controller's requests over a
           gRPC SSL listener CONTROL, both ``ssl.client.auth=required``; a broker is
           ``User:broker`` by ``ssl.principal.mapping.rules`` (CN=broker<N>,OU=brokers).
``scram``  replication and the controller's requests over a gRPC SASL_SSL listener INTERNAL,
           the brokers logging in as ``broker`` with SCRAM-SHA-512.

What is checked, on each (one cluster per variant, shared by the module's tests; the tests that
kill brokers come last):

- confluent-kafka, kafka-python (the Kafka door) and minikafka's client (the gRPC door) as alice
  with SCRAM-SHA-256 and SCRAM-SHA-512: produce refused (TOPIC_AUTHORIZATION_FAILED) until the
  admin grants Write, a group refused (GROUP_AUTHORIZATION_FAILED) until it grants the group,
  then produce, consume in a group and commit; every grant reaches every broker within a
  second; admin and config requests refused, then allowed;
- bob sees in Metadata only the topics he may Describe, on both doors;
- the forged follower: alice (a valid CA certificate, or a SCRAM login) sending a Fetch with a
  follower's replica_id to the inter-broker listener (Kafka's Fetch in mtls, gRPC's FetchStream
  in scram) is refused for want of ClusterAction and logged (``authorization_denied``); it is
  answered TOPIC_AUTHORIZATION_FAILED on each partition, which is what Kafka 3.9 answers a
  follower fetch without ClusterAction (KafkaApis.handleFetchRequest). The leader's high
  watermark does not move, acks=all is not acknowledged by the leader alone, and the dead
  follower leaves the ISR; anyone without a certificate or login does not even get a session;
  the same request on the other door's listeners is refused;
- the forged LeaderAndIsr: alice copies the controller's id and epoch and the broker's epoch
  from ZooKeeper and sends it to the control plane listener: CLUSTER_AUTHORIZATION_FAILED with a
  message that names no id or epoch, logged, nothing changes;
- an anonymous ZooKeeper client may not write an ACL znode nor read SCRAM credentials;
- RF3 acks=all through the death of the leader, then of the controller: nothing acknowledged is
  lost and the replicas agree; and no broker's log holds any password.

About 2.5 minutes for both variants (26 tests).
"""

from __future__ import annotations

import ssl
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import confluent_kafka
import grpc
import kafka
import kafka.errors
import pytest
from confluent_kafka import admin as ck
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from minikafka.broker.security.sasl.scram import (
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    ScramSaslClient,
    credential_from_password,
)
from minikafka.client._security import ClientSecurity
from minikafka.client.admin import NewTopic
from minikafka.client.consumer.consumer import Consumer
from minikafka.client.producer.producer import Producer
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode, KafkaError
from minikafka.proto.sasl_channel import SaslCredentials, sasl_channel
from minikafka.zk.zk_auth import ZkClientSecurity, ZkSaslCredentials
from tests.integration.cluster import Cluster
from tests.integration.conftest import _CLUSTERS_KEY, _running_in_ci
from tests.integration.kafka_protocol.raw import RawKafka
from tests.integration.zookeeper import (
    ZooKeeperServer,
    ZooKeeperStartError,
    ZooKeeperUnavailable,
    free_port,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

PASSWORDS = {
    "admin": "admin-secret-5d1c",
    "alice": "alice-secret-0b7e",
    "bob": "bob-secret-93fa",
    "broker": "broker-secret-4e20",
}
ADMIN = SaslCredentials("SCRAM-SHA-512", "admin", PASSWORDS["admin"])
MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
# alice's client certificate, as a broker's DEFAULT mapping names it (RFC 2253 order)
ALICE_CERT_PRINCIPAL = "User:CN=alice,OU=eng,O=acme,C=US"

# The brokers' (and the harness's) ZooKeeper login: SASL DIGEST-MD5, zookeeper.set.acl=true.
ZK_USER, ZK_PASSWORD = "kafka", "zk-secret-77c1"
ZK_LOGIN = ZkClientSecurity(ZkSaslCredentials(ZK_USER, ZK_PASSWORD), set_acl=True)

_T, _OP = ResourceType, AclOperation


@dataclass
class Secured:
    """The module's cluster and what a test needs to know of its layout."""

    cluster: Cluster
    variant: str  # "mtls" or "scram"
    certs: Path
    internal_ports: dict[int, int]  # the inter-broker listener (Kafka in mtls, gRPC in scram)
    control_ports: dict[int, int]  # the control plane gRPC listener (INTERNAL's in scram)
    _channels: list[grpc.Channel] = field(default_factory=list)

    @property
    def replication_door(self) -> str:
        return "kafka" if self.variant == "mtls" else "grpc"

    def address(self, port: int) -> str:
        return f"127.0.0.1:{port}"

    def channel(
        self, port: int, *, cert: str | None = None, login: SaslCredentials | None = None
    ) -> grpc.Channel:
        """A TLS channel (presenting ``cert``'s certificate, logged in as ``login``)."""
        root = (self.certs / "truststore.pem").read_bytes()
        key = chain = None
        if cert is not None:
            key = (self.certs / f"{cert}.key").read_bytes()
            chain = (self.certs / f"{cert}.crt").read_bytes()
        address = self.address(port)
        channel = grpc.secure_channel(address, grpc.ssl_channel_credentials(root, key, chain))
        if login is not None:
            channel = sasl_channel(channel, login, address)
        self._channels.append(channel)
        return channel

    def ssl_context(self, cert: str | None = None) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.certs / "truststore.pem"))
        if cert is not None:
            context.load_cert_chain(
                str(self.certs / f"{cert}.crt"), str(self.certs / f"{cert}.key")
            )
        return context

    def close(self) -> None:
        for channel in self._channels:
            channel.close()


def login(user: str, mechanism: str = "SCRAM-SHA-512") -> SaslCredentials:
    return SaslCredentials(mechanism, user, PASSWORDS[user])


def _write_users(cluster: Cluster) -> None:
    """Every user's SCRAM-SHA-256 and -512 credentials, before any broker runs."""

    def credentials(password: str) -> Callable[[dict[str, str]], dict[str, str]]:
        sha256 = credential_from_password(SCRAM_SHA_256, password, 4096).to_string()
        sha512 = credential_from_password(SCRAM_SHA_512, password, 4096).to_string()
        return lambda c: {**c, "SCRAM-SHA-256": sha256, "SCRAM-SHA-512": sha512}

    cluster.zk.update_user_configs({u: credentials(p) for u, p in PASSWORDS.items()})


def _common_props(certs: Path) -> dict[str, str]:
    return {
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:admin;User:broker",
        "allow.everyone.if.no.acl.found": "false",
        "sasl.enabled.mechanisms": ",".join(MECHANISMS),
        "ssl.truststore.location": str(certs / "truststore.pem"),
        "min.insync.replicas": "2",
    }


def _broker_props(
    variant: str, cluster: Cluster, certs: Path, broker_id: int, internal: int, control: int
) -> dict[str, str]:
    """Broker ``broker_id``'s listeners and key store (scripts/make-certs.sh's broker<N>)."""
    broker = cluster.brokers[broker_id]
    props = {"ssl.keystore.location": str(certs / f"broker{broker_id % 3 + 1}.pem")}
    if variant == "mtls":
        props.update(
            {
                "listeners": (f"SASL_SSL://127.0.0.1:{broker.port},CONTROL://127.0.0.1:{control}"),
                "kafka.listeners": (
                    f"KAFKA_SASL_SSL://127.0.0.1:{broker.kafka_port},"
                    f"INTERNAL://127.0.0.1:{internal}"
                ),
                "listener.security.protocol.map": (
                    "SASL_SSL:SASL_SSL,CONTROL:SSL,KAFKA_SASL_SSL:SASL_SSL,INTERNAL:SSL"
                ),
                "inter.broker.listener.name": "INTERNAL",
                "control.plane.listener.name": "CONTROL",
                "listener.name.internal.ssl.client.auth": "required",
                "listener.name.control.ssl.client.auth": "required",
                # only the brokers' certificates are User:broker; others keep their DN
                "ssl.principal.mapping.rules": (
                    "RULE:^CN=broker[0-9]+,OU=brokers,.*$/broker/,DEFAULT"
                ),
            }
        )
    else:
        props.update(
            {
                "listeners": (
                    f"SASL_SSL://127.0.0.1:{broker.port},INTERNAL://127.0.0.1:{internal}"
                ),
                "kafka.listeners": f"KAFKA_SASL_SSL://127.0.0.1:{broker.kafka_port}",
                "listener.security.protocol.map": (
                    "SASL_SSL:SASL_SSL,INTERNAL:SASL_SSL,KAFKA_SASL_SSL:SASL_SSL"
                ),
                "inter.broker.listener.name": "INTERNAL",
                "control.plane.listener.name": "",
                "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
                "listener.name.internal.scram-sha-512.sasl.jaas.config": (
                    "org.apache.kafka.common.security.scram.ScramLoginModule required "
                    f'username="broker" password="{PASSWORDS["broker"]}";'
                ),
            }
        )
    return props


@pytest.fixture(scope="module")
def sasl_zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    """A ZooKeeper of the module's own that knows the brokers' user (anonymous clients still
    get sessions, as ``world``, so that a test can show what they may not do)."""
    try:
        server = ZooKeeperServer(
            tmp_path_factory.mktemp("zookeeper-sasl"), sasl_users={ZK_USER: ZK_PASSWORD}
        )
    except ZooKeeperUnavailable as exc:
        if _running_in_ci():
            pytest.fail(f"CI=true and ZooKeeper cannot run: {exc}", pytrace=False)
        pytest.skip(f"ZooKeeper cannot run: {exc}")
    try:
        server.start()
    except ZooKeeperStartError as exc:
        pytest.fail(str(exc), pytrace=False)
    yield server
    server.stop()


@pytest.fixture(scope="module", params=["mtls", "scram"])
def secured(
    request: pytest.FixtureRequest,
    sasl_zookeeper: ZooKeeperServer,
    tls_certs: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Secured]:
    variant: str = request.param
    root = tmp_path_factory.mktemp(f"secured-{variant}")
    jaas = root / "kafka_server_jaas.conf"
    jaas.write_text(
        "Client {\n"
        "    org.apache.zookeeper.server.auth.DigestLoginModule required\n"
        f'    username="{ZK_USER}"\n'
        f'    password="{ZK_PASSWORD}";\n'
        "};\n"
    )
    cluster = Cluster(
        # a chroot the harness creates logged in, so that it is the brokers' too
        f"{sasl_zookeeper.connect_string}/secured-{uuid.uuid4().hex}",
        root,
        3,
        {**_common_props(tls_certs), "zookeeper.set.acl": "true"},
        env={"KAFKA_OPTS": f"-Djava.security.auth.login.config={jaas}"},
        zk_security=ZK_LOGIN,
        replication="kafka" if variant == "mtls" else "grpc",
        grpc_listener="SASL_SSL",
        sasl=ADMIN,
        client_security=ClientSecurity(
            security_protocol="SASL_SSL",
            ssl_ca_location=str(tls_certs / "truststore.pem"),
            sasl_mechanism=ADMIN.mechanism,
            sasl_username=ADMIN.username,
            sasl_password=ADMIN.password,
        ),
    )
    internal = {b: free_port() for b in cluster.brokers}
    control = {b: free_port() for b in cluster.brokers} if variant == "mtls" else internal
    secured = Secured(cluster, variant, tls_certs, internal, control)
    try:
        _write_users(cluster)
        for b in cluster.brokers:
            cluster.write_config(
                b, _broker_props(variant, cluster, tls_certs, b, internal[b], control[b])
            )
        cluster.start_all()
        cluster.wait_until_serving(timeout_s=60)
        yield secured
    finally:
        secured.close()
        cluster.close()


@pytest.fixture
def cluster(secured: Secured, request: pytest.FixtureRequest) -> Cluster:
    """The module's cluster; a failing test's report gets its brokers' log tails."""
    request.node.stash[_CLUSTERS_KEY] = [secured.cluster]
    return secured.cluster


# --- ACLs and topics -----------------------------------------------------------------------------


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def create_topic(cluster: Cluster, name: str, replicas: Sequence[int] = (), rf: int = 3) -> None:
    topic = (
        NewTopic(name, replica_assignment={0: list(replicas)})
        if replicas
        else NewTopic(name, 1, rf)
    )
    with cluster.admin() as admin:
        errors = admin.create_topics([topic])
    assert errors[name] is None, errors
    want = len(replicas) or rf
    cluster.wait_for(lambda: len(cluster.isr(name, 0)) == want, 30, f"{name}'s ISR to fill")


def grant(
    cluster: Cluster, principal: str, pattern: ResourcePattern, *operations: AclOperation
) -> None:
    bindings = [
        AclBinding(pattern, AccessControlEntry(principal, "*", op, AclPermissionType.ALLOW))
        for op in operations
    ]
    with cluster.admin() as admin:
        errors = admin.create_acls(bindings)
    assert all(e is None for e in errors.values()), errors


def metadata_error(channel: grpc.Channel, topic: str) -> int:
    answer = pb_grpc.MetadataStub(channel).Metadata(
        pb.MetadataRequest(topics=[pb.MetadataRequest.MetadataRequestTopic(name=topic)]),
        timeout=5,
    )
    return int(answer.topics[0].error_code)


def describe_group_error(channel: grpc.Channel, group: str) -> int:
    answer = pb_grpc.GroupStub(channel).DescribeGroups(
        pb.DescribeGroupsRequest(groups=[group]), timeout=5
    )
    return int(answer.groups[0].error_code)


def grant_and_see_it_everywhere(
    secured: Secured,
    user: str,
    pattern: ResourcePattern,
    *operations: AclOperation,
) -> None:
    """Grant ``user`` the operations (Describe among them, or implying it) on a topic or a
    group; within a second of CreateAcls' answer every broker lets the user describe it (the
    change reached each broker's authorizer). Any broker answers the authorization first."""
    cluster = secured.cluster
    channels = {
        b: secured.channel(broker.port, login=login(user)) for b, broker in cluster.brokers.items()
    }
    if pattern.resource_type == _T.TOPIC:
        refused = ErrorCode.TOPIC_AUTHORIZATION_FAILED

        def error(b: int) -> int:
            return metadata_error(channels[b], pattern.name)
    else:
        refused = ErrorCode.GROUP_AUTHORIZATION_FAILED

        def error(b: int) -> int:
            return describe_group_error(channels[b], pattern.name)

    for b in channels:  # logged in before the clock starts
        assert error(b) == refused
    grant(cluster, f"User:{user}", pattern, *operations)
    granted = time.monotonic()
    pending = set(channels)
    while pending:
        pending = {b for b in pending if error(b) == refused}
        elapsed = time.monotonic() - granted
        assert not pending or elapsed < 1.0, f"brokers {sorted(pending)} still refuse {user}"
        time.sleep(0.02)


# --- clients as alice ----------------------------------------------------------------------------


class AliceClient(Protocol):
    def produce(self, topic: str, values: list[bytes]) -> int:
        """0 when every value is acknowledged, else the Kafka error code of the refusal."""
        ...

    def consume(self, topic: str, group: str, count: int) -> tuple[int, list[bytes]]:
        """Consume ``count`` values in ``group`` and commit; (error code, values read)."""
        ...


@dataclass
class ConfluentAlice:
    secured: Secured
    mechanism: str

    def conf(self, **extra: Any) -> dict[str, Any]:
        return {
            "bootstrap.servers": self.secured.cluster.kafka_bootstrap_servers,
            "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(self.secured.certs / "truststore.pem"),
            "sasl.mechanism": self.mechanism,
            "sasl.username": "alice",
            "sasl.password": PASSWORDS["alice"],
            **extra,
        }

    def produce(self, topic: str, values: list[bytes]) -> int:
        producer = confluent_kafka.Producer(
            self.conf(**{"acks": "all", "linger.ms": 0, "message.timeout.ms": 15_000})
        )
        errors: list[confluent_kafka.KafkaError] = []

        def delivered(error: confluent_kafka.KafkaError | None, _: Any) -> None:
            if error is not None:
                errors.append(error)

        for value in values:
            producer.produce(topic, value, on_delivery=delivered)
        assert producer.flush(30) == 0
        return int(errors[0].code()) if errors else 0

    def consume(self, topic: str, group: str, count: int) -> tuple[int, list[bytes]]:
        consumer = confluent_kafka.Consumer(
            self.conf(
                **{
                    "group.id": group,
                    "auto.offset.reset": "earliest",
                    "enable.auto.commit": False,
                }
            )
        )
        got: list[bytes] = []
        try:
            consumer.subscribe([topic])
            deadline = time.monotonic() + 30
            while len(got) < count and time.monotonic() < deadline:
                message = consumer.poll(0.5)
                if message is None:
                    continue
                error = message.error()
                if error is not None:
                    return int(error.code()), got
                got.append(message.value() or b"")
            consumer.commit(asynchronous=False)
        except confluent_kafka.KafkaException as exc:
            return int(exc.args[0].code()), got
        finally:
            consumer.close()
        return 0, got


@dataclass
class KafkaPythonAlice:
    secured: Secured
    mechanism: str

    def conf(self) -> dict[str, Any]:
        return {
            "bootstrap_servers": self.secured.cluster.kafka_bootstrap_servers.split(","),
            "security_protocol": "SASL_SSL",
            "ssl_cafile": str(self.secured.certs / "truststore.pem"),
            "sasl_mechanism": self.mechanism,
            "sasl_plain_username": "alice",
            "sasl_plain_password": PASSWORDS["alice"],
        }

    def produce(self, topic: str, values: list[bytes]) -> int:
        producer = kafka.KafkaProducer(acks="all", max_block_ms=15_000, **self.conf())
        try:
            for value in values:
                producer.send(topic, value).get(timeout=15)
        except kafka.errors.KafkaError as exc:
            return int(getattr(exc, "errno", -1) or -1)
        finally:
            producer.close(timeout=5)
        return 0

    def consume(self, topic: str, group: str, count: int) -> tuple[int, list[bytes]]:
        consumer = kafka.KafkaConsumer(
            topic,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            **self.conf(),
        )
        got: list[bytes] = []
        try:
            deadline = time.monotonic() + 30
            while len(got) < count and time.monotonic() < deadline:
                for records in consumer.poll(timeout_ms=500).values():
                    got += [r.value for r in records]
            consumer.commit()
        except kafka.errors.KafkaError as exc:
            return int(getattr(exc, "errno", -1) or -1), got
        finally:
            consumer.close()
        return 0, got


@dataclass
class MinikafkaAlice:
    secured: Secured
    mechanism: str

    def security(self) -> dict[str, str]:
        return {
            "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(self.secured.certs / "truststore.pem"),
            "sasl.mechanism": self.mechanism,
            "sasl.username": "alice",
            "sasl.password": PASSWORDS["alice"],
        }

    def produce(self, topic: str, values: list[bytes]) -> int:
        try:
            with Producer(
                self.secured.cluster.bootstrap_servers,
                acks="all",
                security=self.security(),
            ) as producer:
                futures = [producer.send(topic, v, partition=0) for v in values]
                for future in futures:
                    future.result(timeout=30)
        except KafkaError as exc:
            return int(exc.code)
        return 0

    def consume(self, topic: str, group: str, count: int) -> tuple[int, list[bytes]]:
        got: list[bytes] = []
        try:
            with Consumer(
                topic,
                bootstrap_servers=self.secured.cluster.bootstrap_servers,
                group_id=group,
                auto_offset_reset="earliest",
                enable_auto_commit=False,
                security=self.security(),
            ) as consumer:
                deadline = time.monotonic() + 30
                while len(got) < count and time.monotonic() < deadline:
                    for records in consumer.poll(timeout_ms=500).values():
                        got += [r.value or b"" for r in records]
                consumer.commit()
        except KafkaError as exc:
            return int(exc.code), got
        return 0, got


CLIENTS: dict[str, Callable[[Secured, str], AliceClient]] = {
    "confluent-kafka": ConfluentAlice,
    "kafka-python": KafkaPythonAlice,
    "minikafka-grpc": MinikafkaAlice,
}


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("client_name", sorted(CLIENTS))
def test_alice_is_refused_until_the_admin_grants_then_produces_consumes_and_commits(
    secured: Secured, cluster: Cluster, client_name: str, mechanism: str
) -> None:
    client = CLIENTS[client_name](secured, mechanism)
    topic = _unique(f"{client_name}-{mechanism.lower()}")
    group = f"g-{topic}"
    create_topic(cluster, topic)
    values = [f"{topic}-{i}".encode() for i in range(10)]

    assert client.produce(topic, [b"refused"]) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert cluster.fetch(cluster.leader(topic, 0), topic, 0, 0).high_watermark == 0

    grant_and_see_it_everywhere(
        secured, "alice", ResourcePattern(_T.TOPIC, topic), _OP.WRITE, _OP.READ
    )
    assert client.produce(topic, values) == 0

    code, _ = client.consume(topic, group, len(values))
    assert code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    with cluster.admin() as admin:
        assert admin.list_consumer_group_offsets(group) == {}

    grant_and_see_it_everywhere(secured, "alice", ResourcePattern(_T.GROUP, group), _OP.READ)
    code, got = client.consume(topic, group, len(values))
    assert (code, got) == (0, values)
    with cluster.admin() as admin:
        committed = admin.list_consumer_group_offsets(group)
    assert committed[TopicPartition(topic, 0)].offset == len(values)


def within_a_second(attempt: Callable[[], int]) -> int:
    """``attempt()`` again while it answers TOPIC_AUTHORIZATION_FAILED, for a second: an ACL
    granted by one broker reaches the others by ZooKeeper's change notification."""
    granted = time.monotonic()
    while True:
        code = attempt()
        if code != ErrorCode.TOPIC_AUTHORIZATION_FAILED or time.monotonic() - granted > 1.0:
            return code
        time.sleep(0.05)


def _ck_code(future: Any) -> int:
    try:
        future.result(timeout=30)
    except confluent_kafka.KafkaException as exc:
        return int(exc.args[0].code())
    return 0


def test_admin_and_config_requests_are_refused_until_granted(
    secured: Secured, cluster: Cluster
) -> None:
    """CreateTopics, DescribeConfigs and IncrementalAlterConfigs from confluent-kafka's admin as
    alice: refused (nothing created or changed), then allowed by the matching grants."""
    admin = ck.AdminClient(ConfluentAlice(secured, "SCRAM-SHA-256").conf())
    topic = _unique("alice-admin")
    (created,) = admin.create_topics([ck.NewTopic(topic, 1, 3)], operation_timeout=20).values()
    assert _ck_code(created) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert cluster.zk.get_topic(topic) is None

    grant(cluster, "User:alice", ResourcePattern(_T.TOPIC, topic), _OP.CREATE)
    # CreateTopics goes to the controller, which may not have had the change notification yet
    # when the broker that took CreateAcls answered: within a second, it has
    assert (
        within_a_second(lambda: _ck_code(admin.create_topics([ck.NewTopic(topic, 1, 3)])[topic]))
        == 0
    )
    assert cluster.zk.get_topic(topic) is not None

    resource = ck.ConfigResource(ck.ConfigResource.Type.TOPIC, topic)
    (described,) = admin.describe_configs([resource]).values()
    assert _ck_code(described) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    change = ck.ConfigResource(
        ck.ConfigResource.Type.TOPIC,
        topic,
        incremental_configs=[
            ck.ConfigEntry(
                "retention.ms", "3600000", incremental_operation=ck.AlterConfigOpType.SET
            )
        ],
    )
    (altered,) = admin.incremental_alter_configs([change]).values()
    assert _ck_code(altered) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert "retention.ms" not in cluster.zk.get_topic_config(topic)

    grant(
        cluster,
        "User:alice",
        ResourcePattern(_T.TOPIC, topic),
        _OP.DESCRIBE_CONFIGS,
        _OP.ALTER_CONFIGS,
    )
    assert within_a_second(lambda: _ck_code(admin.incremental_alter_configs([change])[change])) == 0
    assert within_a_second(lambda: _ck_code(admin.describe_configs([resource])[resource])) == 0
    (described,) = admin.describe_configs([resource]).values()
    assert described.result(timeout=30)["retention.ms"].value == "3600000"


def test_bob_sees_only_the_topics_he_may_describe(secured: Secured, cluster: Cluster) -> None:
    prefix = _unique("bob-visible")
    visible = {f"{prefix}-a", f"{prefix}-b"}
    hidden = _unique("bob-hidden")
    for topic in (*sorted(visible), hidden):
        create_topic(cluster, topic, rf=2)
    grant(
        cluster,
        "User:bob",
        ResourcePattern(_T.TOPIC, f"{prefix}-", PatternType.PREFIXED),
        _OP.DESCRIBE,
    )

    def grpc_topics(broker_id: int) -> set[str]:
        channel = secured.channel(cluster.brokers[broker_id].port, login=login("bob"))
        answer = pb_grpc.MetadataStub(channel).Metadata(pb.MetadataRequest(), timeout=5)
        return {t.name for t in answer.topics}

    # the grant reaches every broker; the admin (a super user) sees everything
    cluster.wait_for(
        lambda: all(grpc_topics(b) == visible for b in cluster.brokers), 5, "bob's view"
    )
    assert {hidden, *visible} <= {t.name for t in cluster.metadata(0, topics=()).topics}

    bob = ConfluentAlice(secured, "SCRAM-SHA-512").conf(**{"sasl.username": "bob"})
    bob["sasl.password"] = PASSWORDS["bob"]
    listed = ck.AdminClient(bob).list_topics(timeout=20)
    assert set(listed.topics) == visible
    # naming a hidden topic, or one that does not exist, gives the same answer
    missing = _unique("no-such-topic")
    for name in (hidden, missing):
        answer = ck.AdminClient(bob).list_topics(name, timeout=20).topics[name]
        assert answer.error is not None
        assert answer.error.code() == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        assert (
            metadata_error(secured.channel(cluster.brokers[1].port, login=login("bob")), name)
            == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        )
    assert cluster.zk.get_topic(missing) is None  # and bob's asking did not create it

    python_conf = KafkaPythonAlice(secured, "SCRAM-SHA-256").conf()
    python_conf.update(sasl_plain_username="bob", sasl_plain_password=PASSWORDS["bob"])
    consumer = kafka.KafkaConsumer(**python_conf)
    try:
        assert consumer.topics() == visible
    finally:
        consumer.close()


# --- the forged LeaderAndIsr --------------------------------------------------------------------


def test_a_forged_leader_and_isr_is_refused_logged_and_changes_nothing(
    secured: Secured, cluster: Cluster
) -> None:
    topic = _unique("forged-lai")
    create_topic(cluster, topic)
    assert cluster.produce(topic, 0, [b"before"], retry_s=10).ok
    leader = cluster.leader(topic, 0)
    target = next(b for b in cluster.brokers if b != leader)
    state_before = cluster.partition_state_json(topic, 0)
    controller, epoch = cluster.controller_id(), cluster.controller_epoch()
    broker_epoch = cluster.zk.get_broker_epoch(target)
    assert controller is not None and epoch is not None and broker_epoch is not None

    # Everything a forger can read in ZooKeeper, to make the target the leader.
    request = pb.LeaderAndIsrRequest(
        controller_id=controller, controller_epoch=epoch, broker_epoch=broker_epoch
    )
    request.partition_states.add(
        topic_name=topic,
        partition_index=0,
        controller_epoch=epoch,
        leader=target,
        leader_epoch=int(str(state_before["leader_epoch"])) + 100,
        isr=[target],
        partition_epoch=1000,
        replicas=[target],
    )
    control_port = secured.control_ports[target]
    # alice: in mtls a valid client certificate, in scram her SCRAM login
    alice = (
        secured.channel(control_port, cert="alice")
        if secured.variant == "mtls"
        else secured.channel(control_port, login=login("alice"))
    )
    answer = pb_grpc.ControlStub(alice).LeaderAndIsr(request, timeout=10)
    assert answer.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert not answer.partition_errors
    assert not any(c.isdigit() for c in answer.error_message), answer.error_message

    # alice logged in on the client listener: the controller's requests are not served there
    on_client_listener = secured.channel(cluster.brokers[target].port, login=login("alice"))
    with pytest.raises(grpc.RpcError) as unserved:
        pb_grpc.ControlStub(on_client_listener).LeaderAndIsr(request, timeout=10)
    assert unserved.value.code() == grpc.StatusCode.UNIMPLEMENTED

    # without a certificate (mtls) or a login (scram) there is no session to refuse
    anonymous = secured.channel(control_port)
    with pytest.raises(grpc.RpcError) as refused:
        pb_grpc.ControlStub(anonymous).LeaderAndIsr(request, timeout=10)
    assert refused.value.code() in (
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.UNAUTHENTICATED,
    )

    # logged with who asked, and without the controller's id or epoch
    refusals = [
        e
        for e in cluster.brokers[target].log_events("controller_request.unauthorized")
        if e.get("api") == "LeaderAndIsr"
    ]
    alice_principal = ALICE_CERT_PRINCIPAL if secured.variant == "mtls" else "User:alice"
    principals = {e.get("principal") for e in refusals}
    assert alice_principal in principals and principals <= {alice_principal, "User:alice"}
    assert not any("controller_id" in e or "controller_epoch" in e for e in refusals)

    # nothing changed: ZooKeeper, the target's view, the leader's
    assert cluster.partition_state_json(topic, 0) == state_before
    assert cluster.produce(topic, 0, [b"to the target"], to=target).error == (
        ErrorCode.NOT_LEADER_OR_FOLLOWER
    )
    after = cluster.produce(topic, 0, [b"after"])
    assert after.ok and after.leader == leader, after
    assert len(cluster.isr(topic, 0)) == 3
    for b in cluster.brokers:
        (meta,) = cluster.metadata(b, [topic]).topics
        assert meta.partitions[0].leader_id == leader


# --- the forged follower fetch ------------------------------------------------------------------


def _kafka_replica_fetch(raw: RawKafka, topic: str, replica_id: int, offset: int) -> int:
    body = {
        "replica_id": replica_id,
        "max_wait": 0,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}
                ],
            }
        ],
    }
    answer = raw.call(1, 12, body)
    return int(answer.responses[0].partitions[0].error_code)


def _scram_login(raw: RawKafka, user: str, mechanism: str = "SCRAM-SHA-512") -> None:
    assert raw.call(17, 1, {"mechanism": mechanism}).error_code == 0
    client = ScramSaslClient(
        SCRAM_SHA_256 if mechanism == "SCRAM-SHA-256" else SCRAM_SHA_512, user, PASSWORDS[user]
    )
    first = raw.call(36, 2, {"auth_bytes": client.first()})
    assert first.error_code == 0
    final = raw.call(36, 2, {"auth_bytes": client.final(first.auth_bytes)})
    assert final.error_code == 0
    client.verify(final.auth_bytes)


def _grpc_replica_fetch(channel: grpc.Channel, topic: str, replica_id: int, offset: int) -> int:
    request = pb.FetchRequest(
        replica_id=replica_id, replica_epoch=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20
    )
    request.topics.add(topic=topic).partitions.add(
        partition=0,
        current_leader_epoch=-1,
        fetch_offset=offset,
        last_fetched_epoch=-1,
        log_start_offset=-1,
        partition_max_bytes=1 << 20,
    )
    answers = pb_grpc.DataStub(channel).FetchStream(iter([request]), timeout=10)
    for answer in answers:
        return int(answer.responses[0].partitions[0].error_code)
    raise AssertionError("FetchStream answered nothing")


class Forger:
    """alice posing as follower ``replica_id`` on the leader's inter-broker listener, over and
    over from a thread, claiming to have fetched up to ``offset``."""

    def __init__(
        self, secured: Secured, leader: int, topic: str, replica_id: int, offset: int
    ) -> None:
        self.secured = secured
        self.leader = leader
        self.topic = topic
        self.replica_id = replica_id
        self.offset = offset
        self.answers: list[int] = []
        self.error: Exception | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def forge_once(self) -> int:
        secured, port = self.secured, self.secured.internal_ports[self.leader]
        if secured.replication_door == "kafka":  # INTERNAL is SSL: alice's certificate
            with RawKafka(secured.address(port), 10, secured.ssl_context("alice")) as raw:
                return _kafka_replica_fetch(raw, self.topic, self.replica_id, self.offset)
        channel = secured.channel(port, login=login("alice"))  # INTERNAL is SASL_SSL
        try:
            return _grpc_replica_fetch(channel, self.topic, self.replica_id, self.offset)
        finally:
            channel.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.answers.append(self.forge_once())
            except Exception as exc:  # an error of the test's, not a refusal: reported
                self.error = exc
                return
            self._stop.wait(0.1)

    def __enter__(self) -> Forger:
        self.answers.append(self.forge_once())  # one before anything else happens
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(15)


def _anonymous_cannot_fetch(secured: Secured, leader: int, topic: str, follower: int) -> None:
    """Without alice's certificate (SSL) or a login (SASL_SSL), no replica fetch is served."""
    port = secured.internal_ports[leader]
    if secured.replication_door == "kafka":
        # ssl.SSLError, or the broker's close right after TLS 1.3's handshake
        with (
            pytest.raises(OSError),
            RawKafka(secured.address(port), 10, secured.ssl_context()) as raw,
        ):
            _kafka_replica_fetch(raw, topic, follower, 0)
    else:
        with pytest.raises(grpc.RpcError) as refused:
            _grpc_replica_fetch(secured.channel(port), topic, follower, 0)
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED


def _the_other_door_refuses(secured: Secured, leader: int, topic: str, follower: int) -> None:
    """The same forged fetch on the client listeners of both doors (and, in mtls, on the
    control plane listener): refused there too, as they are not the inter-broker listener."""
    cluster = secured.cluster
    with RawKafka(cluster.brokers[leader].kafka_address, 10, secured.ssl_context()) as raw:
        _scram_login(raw, "alice")
        assert _kafka_replica_fetch(raw, topic, follower, 0) == (
            ErrorCode.TOPIC_AUTHORIZATION_FAILED
        )
    channels = [secured.channel(cluster.brokers[leader].port, login=login("alice"))]
    if secured.variant == "mtls":
        channels.append(secured.channel(secured.control_ports[leader], cert="alice"))
    for channel in channels:
        assert _grpc_replica_fetch(channel, topic, follower, 0) == (
            ErrorCode.TOPIC_AUTHORIZATION_FAILED
        )


def test_a_forged_follower_fetch_is_refused_and_acks_all_waits_for_the_real_follower(
    secured: Secured, cluster: Cluster
) -> None:
    """RF2 topic with min.insync.replicas=2 on two brokers other than the controller; its
    follower is killed; alice fetches as that follower, claiming to have everything. Were she
    believed, the leader would move the high watermark and acknowledge acks=all alone."""
    controller = cluster.controller_id()
    leader, follower = (b for b in sorted(cluster.brokers) if b != controller)
    topic = _unique("forged-fetch")
    create_topic(cluster, topic, replicas=(leader, follower))
    # the ISR in ZooKeeper is full before the leader has its LeaderAndIsr: retried
    assert cluster.produce(topic, 0, [b"acknowledged"], retry_s=10).ok
    hw = cluster.fetch(leader, topic, 0, 0).high_watermark
    assert hw == 1

    _anonymous_cannot_fetch(secured, leader, topic, follower)
    _the_other_door_refuses(secured, leader, topic, follower)

    cluster.kill(follower)
    try:
        forged = _forge_while_the_follower_is_dead(secured, leader, topic, follower, hw)
    finally:
        if not cluster.brokers[follower].running:  # the next tests want three brokers
            cluster.start(follower, wait_for_expiry=False)
    assert forged, "alice never got an answer"
    assert set(forged) == {ErrorCode.TOPIC_AUTHORIZATION_FAILED}

    denied = [
        e
        for e in cluster.brokers[leader].log_events("authorization_denied")
        if e.get("operation") == "ClusterAction"
    ]
    alice = ALICE_CERT_PRINCIPAL if secured.variant == "mtls" else "User:alice"
    assert any(e.get("principal") == alice for e in denied), denied[-5:]

    # the real follower is back: it catches up and rejoins; acks=all works again
    cluster.wait_for(
        lambda: set(cluster.isr(topic, 0)) == {leader, follower}, 40, "the follower to rejoin"
    )
    assert cluster.produce(topic, 0, [b"after"], retry_s=10).ok
    values = [r.value for r in cluster.fetch_all(topic, 0)]
    # "never acknowledged" was appended while the follower was still in the ISR (then committed
    # when the ISR shrank to the leader alone, as in Kafka), or refused before any append
    assert values in (
        [b"acknowledged", b"never acknowledged", b"after"],
        [b"acknowledged", b"after"],
    ), values


def _forge_while_the_follower_is_dead(
    secured: Secured, leader: int, topic: str, follower: int, hw: int
) -> list[int]:
    """alice fetches as the dead follower while acks=all is produced; the answers she got."""
    cluster = secured.cluster
    # claims to hold the record produced next
    with Forger(secured, leader, topic, follower, offset=hw + 1) as forger:
        # well within replica.lag.time.max.ms (3 s) of the kill: the follower is in the ISR
        unacked = cluster.produce(topic, 0, [b"never acknowledged"], timeout_ms=1_000)
        hw_now, isr_now = cluster.fetch(leader, topic, 0, 0).high_watermark, cluster.isr(topic, 0)
        assert follower in isr_now, "too slow: the ISR shrank before the checks"
        assert unacked.error == ErrorCode.REQUEST_TIMED_OUT, unacked
        assert hw_now == hw
        assert forger.answers, "alice's fetches did not reach the leader in time"
        # the dead follower leaves the ISR all the same
        cluster.wait_for(lambda: cluster.isr(topic, 0) == (leader,), 30, "the ISR to shrink")
        # (the leader alone is the ISR now: what it holds is committed, as in Kafka; a new
        # acks=all record is refused before it is appended)
        refused = cluster.produce(topic, 0, [b"refused"], timeout_ms=3_000)
        assert refused.error == ErrorCode.NOT_ENOUGH_REPLICAS
    assert forger.error is None, repr(forger.error)
    return forger.answers


# --- ZooKeeper and the logs --------------------------------------------------------------------


def test_zookeeper_takes_no_acl_or_credential_from_an_anonymous_client(
    secured: Secured, cluster: Cluster
) -> None:
    """ACLs and SCRAM credentials live in ZooKeeper: with zookeeper.set.acl only the brokers'
    login writes them, and credentials are not even readable (Kafka's sensitive paths)."""
    topic = _unique("zk-guarded")
    grant(cluster, "User:alice", ResourcePattern(_T.TOPIC, topic), _OP.READ)
    anonymous = KazooClient(hosts=cluster.zk_connect, timeout=10.0)
    anonymous.start(timeout=10.0)
    try:
        assert anonymous.exists(f"/kafka-acl/Topic/{topic}") is not None  # readable
        with pytest.raises(NoAuthError):
            anonymous.set(f"/kafka-acl/Topic/{topic}", b'{"version":1,"acls":[]}')
        with pytest.raises(NoAuthError):
            anonymous.create("/kafka-acl/Topic/stolen", b'{"version":1,"acls":[]}')
        with pytest.raises(NoAuthError):
            anonymous.get("/config/users/alice")
    finally:
        anonymous.stop()
        anonymous.close()


# --- replication and failover (kills brokers: last) ---------------------------------------------


def test_replication_survives_the_leader_then_the_controller_dying(
    secured: Secured, cluster: Cluster
) -> None:
    for b in cluster.brokers:  # whatever an earlier test left stopped
        if not cluster.brokers[b].running:
            cluster.start(b)
    cluster.wait_until_serving(timeout_s=60)
    topic = _unique("failover")
    create_topic(cluster, topic)
    acked: list[bytes] = []

    def produce(tag: str, n: int) -> None:
        for i in range(n):
            value = f"{tag}-{i}".encode()
            result = cluster.produce(topic, 0, [value], retry_s=30)
            assert result.ok, result
            acked.append(value)

    produce("a", 20)
    leader = cluster.leader(topic, 0)
    cluster.kill(leader)
    cluster.wait_for(lambda: cluster.leader(topic, 0) not in (-1, leader), 30, "a new leader")
    produce("b", 20)

    # the controller now (a new one if the leader was it); 0 is a broker id, None is "not yet"
    controller: int = cluster.wait_for(
        lambda: c if (c := cluster.controller_id()) not in (None, leader) else None,
        30,
        "a live controller",
    )
    cluster.kill(controller)
    survivor = next(b for b in cluster.brokers if b not in (leader, controller))
    cluster.wait_for(lambda: cluster.controller_id() == survivor, 30, "the survivor to control")
    cluster.wait_for(lambda: cluster.leader(topic, 0) == survivor, 30, "the survivor to lead")

    cluster.start(leader, wait_for_expiry=False)
    cluster.start(controller, wait_for_expiry=False)
    cluster.wait_until_serving(timeout_s=60)
    cluster.wait_for(lambda: len(cluster.isr(topic, 0)) == 3, 60, "the ISR to refill")
    produce("c", 20)

    read = [r.value for r in cluster.fetch_all(topic, 0)]
    assert read == acked, "acknowledged records lost, duplicated or reordered"
    hw, brokers = len(acked), list(cluster.brokers)
    cluster.wait_for(
        lambda: all(cluster.replica_state(b, topic, 0).log_end_offset >= hw for b in brokers),
        20,
        "every replica to hold every record",
    )
    for b in cluster.brokers:  # nothing is written now; the files are read as they stand
        cluster.kill(b)
    images = {b: cluster.replica_state(b, topic, 0).bytes_below(hw) for b in cluster.brokers}
    assert len(set(images.values())) == 1, {b: len(i) for b, i in images.items()}


def test_no_broker_log_line_holds_a_password(secured: Secured, cluster: Cluster) -> None:
    """After every login, refusal and failover above: no secret in any broker's output."""
    secrets = [*PASSWORDS.values(), ZK_PASSWORD]
    for broker in cluster.brokers.values():
        text = broker.output_file.read_text("utf-8", "replace")
        assert text, f"broker {broker.broker_id} wrote nothing"
        leaked = [secret for secret in secrets if secret in text]
        assert not leaked, f"broker {broker.broker_id}'s log holds a password"
