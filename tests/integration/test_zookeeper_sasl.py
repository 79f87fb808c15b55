"""The brokers' connection to ZooKeeper secured as Kafka secures it, against a real ZooKeeper
with SASL: the brokers log in with SASL DIGEST-MD5 from the JAAS ``Client`` section named in
``KAFKA_OPTS``, and with ``zookeeper.set.acl=true`` the znodes they create are theirs to write
and, but for the sensitive paths, anyone's to read.

A broker that cannot log in (a wrong password, a ZooKeeper without SASL, ``zookeeper.set.acl``
without a login) exits at once with one line on stderr and no traceback.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import confluent_kafka
import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, SessionClosedRequireSaslError
from kazoo.security import ACL, Id, Permissions

from minikafka.client.admin import NewTopic, raise_first
from minikafka.zk.errors import ZkAuthenticationError
from minikafka.zk.zk_auth import ZkClientSecurity, ZkSaslCredentials
from minikafka.zk.zk_store import ZkStore
from tests.integration.cluster import Cluster
from tests.integration.zookeeper import (
    ZooKeeperServer,
    ZooKeeperStartError,
    ZooKeeperUnavailable,
)

pytestmark = pytest.mark.integration

USER, PASSWORD = "kafka", "kafka-secret"
BROKERS_LOGIN = ZkClientSecurity(ZkSaslCredentials(USER, PASSWORD), set_acl=True)
_NONE = ZkClientSecurity()  # the harness of a test whose ZooKeeper has no SASL

BROKERS_ALL = ACL(Permissions.ALL, Id("sasl", USER))
WORLD_READ = ACL(Permissions.READ, Id("world", "anyone"))


def _server(workdir: Path, **sasl: object) -> ZooKeeperServer:
    try:
        return ZooKeeperServer(workdir, **sasl)  # type: ignore[arg-type]
    except ZooKeeperUnavailable as exc:
        if os.environ.get("CI", "").strip().lower() in ("true", "1"):
            pytest.fail(f"CI=true and ZooKeeper cannot run: {exc}", pytrace=False)
        pytest.skip(f"ZooKeeper cannot run: {exc}")


@pytest.fixture(scope="module")
def sasl_zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    """A ZooKeeper of its own (port, data dir) that knows the user kafka; clients that do not
    log in still get sessions, as ``world``."""
    server = _server(tmp_path_factory.mktemp("zookeeper-sasl"), sasl_users={USER: PASSWORD})
    try:
        server.start()
    except ZooKeeperStartError as exc:
        pytest.fail(str(exc), pytrace=False)
    yield server
    server.stop()


def _jaas_file(path: Path, password: str = PASSWORD) -> Path:
    path.write_text(
        "Client {\n"
        "    org.apache.zookeeper.server.auth.DigestLoginModule required\n"
        f'    username="{USER}"\n'
        f'    password="{password}";\n'
        "};\n"
    )
    return path


def _cluster(
    zk_connect: str,
    tmp_path: Path,
    n_brokers: int,
    *,
    jaas: Path | None,
    set_acl: bool = True,
    harness_login: ZkClientSecurity = BROKERS_LOGIN,
) -> Cluster:
    """A cluster whose brokers get ``-Djava.security.auth.login.config=<jaas>`` in KAFKA_OPTS.
    The harness logs in itself (``harness_login``), so that the chroot it may create first is
    the brokers' too."""
    return Cluster(
        zk_connect,
        tmp_path / "cluster",
        n_brokers,
        overrides={"zookeeper.set.acl": str(set_acl).lower()},
        env={} if jaas is None else {"KAFKA_OPTS": f"-Djava.security.auth.login.config={jaas}"},
        zk_security=harness_login,
    )


@pytest.fixture
def secure_cluster(sasl_zookeeper: ZooKeeperServer, tmp_path: Path) -> Iterator[Cluster]:
    chroot = f"/secure-{uuid.uuid4().hex}"
    cluster = _cluster(
        sasl_zookeeper.connect_string + chroot,
        tmp_path,
        3,
        jaas=_jaas_file(tmp_path / "kafka_server_jaas.conf"),
    )
    try:
        cluster.start_all()
        cluster.wait_until_serving()
        yield cluster
    finally:
        cluster.close()


@pytest.fixture
def anonymous(secure_cluster: Cluster) -> Iterator[KazooClient]:
    """A kazoo client on the cluster's chroot that does not log in."""
    client = KazooClient(hosts=secure_cluster.zk_connect, timeout=10.0)
    client.start(timeout=10.0)
    yield client
    client.stop()
    client.close()


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    failures: list[object] = []

    def delivered(error: confluent_kafka.KafkaError | None, _: object) -> None:
        if error is not None:
            failures.append(error)

    for value in values:
        producer.produce(topic, value, on_delivery=delivered)
    assert producer.flush(30) == 0
    assert failures == []


def _consume(bootstrap: str, topic: str, count: int) -> list[bytes]:
    """``count`` values of ``topic`` read in a consumer group of its own, from the start."""
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"zk-sasl-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 100,
        }
    )
    try:
        consumer.subscribe([topic])
        read: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(read) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            value = message.value()
            assert value is not None
            read.append(value)
        return read
    finally:
        consumer.close()


def _create_topic(cluster: Cluster, topic: str, replication_factor: int = 3) -> None:
    with cluster.admin() as admin:
        raise_first(admin.create_topics([NewTopic(topic, 1, replication_factor)]))
    cluster.wait_for(lambda: cluster.leader(topic, 0) >= 0, 30, f"a leader of {topic}")


def test_a_secured_cluster_serves_and_fails_over(secure_cluster: Cluster) -> None:
    cluster = secure_cluster
    bootstrap = cluster.kafka_bootstrap_servers
    _create_topic(cluster, "orders")
    _produce(bootstrap, "orders", [b"a%d" % i for i in range(10)])
    assert _consume(bootstrap, "orders", 10) == [b"a%d" % i for i in range(10)]

    old_controller = cluster.controller_id()
    old_epoch = cluster.controller_epoch()
    assert old_controller is not None and old_epoch is not None
    cluster.kill(old_controller)
    new_controller = cluster.wait_for(
        lambda: (c := cluster.controller_id()) is not None and c != old_controller and c,
        30,
        "a new controller",
    )
    assert (cluster.controller_epoch() or 0) > old_epoch
    # The partition state znode another broker created is written by the leader (the ISR
    # shrinks) and by the new controller (a new leader when the old one led): same user.
    cluster.wait_for(
        lambda: old_controller not in cluster.isr("orders", 0) and cluster.leader("orders", 0) >= 0,
        30,
        "the dead broker out of the ISR",
    )
    _produce(bootstrap, "orders", [b"b%d" % i for i in range(10)])
    assert _consume(bootstrap, "orders", 20) == [b"a%d" % i for i in range(10)] + [
        b"b%d" % i for i in range(10)
    ]
    _create_topic(cluster, "after", replication_factor=2)
    state = cluster.partition_state("after", 0)
    assert state is not None and state.controller_epoch == cluster.controller_epoch()
    assert new_controller in cluster.zk.get_live_broker_ids()


def test_znodes_are_the_brokers_to_write_and_anyones_to_read(
    secure_cluster: Cluster, anonymous: KazooClient
) -> None:
    cluster = secure_cluster
    _create_topic(cluster, "orders")
    brokers = cluster.zk.client
    state = "/brokers/topics/orders/partitions/0/state"
    for path in ("/brokers/ids", "/brokers/topics/orders", state, "/controller", "/cluster/id"):
        assert brokers.get_acls(path)[0] == [BROKERS_ALL, WORLD_READ], path
    for path in ("/config/users", "/config/brokers"):
        assert brokers.get_acls(path)[0] == [BROKERS_ALL], path

    assert sorted(anonymous.get_children("/brokers/ids")) == ["0", "1", "2"]
    assert anonymous.get("/brokers/topics/orders")[0].startswith(b"{")
    assert anonymous.get(state)[0].startswith(b"{")
    for path in ("/controller", "/brokers/topics/orders", state):
        with pytest.raises(NoAuthError):
            anonymous.set(path, b"{}")
    for path in ("/controller", "/brokers/ids/0"):
        with pytest.raises(NoAuthError):
            anonymous.delete(path)
    with pytest.raises(NoAuthError):
        anonymous.create("/brokers/topics/intruder", b"{}")
    with pytest.raises(NoAuthError):
        anonymous.get("/config/users")
    with pytest.raises(NoAuthError):
        anonymous.get_children("/config/users")
    # Nothing the intruder tried landed, and the brokers can still write their znodes.
    brokers.create("/config/users/alice", b'{"version":1,"config":{}}', acl=[BROKERS_ALL])
    assert not brokers.exists("/brokers/topics/intruder")


def _start_and_wait_for_exit(cluster: Cluster, timeout_s: float = 60) -> tuple[int, str]:
    broker = cluster.start(0, wait_for_expiry=False)
    assert broker.process is not None
    try:
        code = broker.process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the broker still runs\n{cluster.describe()}") from None
    return code, broker.output_file.read_text("utf-8", "replace")


def _the_one_error_line(output: str) -> str:
    assert "Traceback" not in output, output
    errors = [line for line in output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, output
    return errors[0]


def test_a_wrong_password_stops_the_broker_with_one_line(
    sasl_zookeeper: ZooKeeperServer, tmp_path: Path
) -> None:
    jaas = _jaas_file(tmp_path / "jaas.conf", password="not-the-secret")
    cluster = _cluster(
        f"{sasl_zookeeper.connect_string}/wrong-{uuid.uuid4().hex}", tmp_path, 1, jaas=jaas
    )
    try:
        code, output = _start_and_wait_for_exit(cluster)
    finally:
        cluster.close()
    assert code == 1
    assert _the_one_error_line(output) == (
        f"error: ZooKeeper at {sasl_zookeeper.connect_string} refused the SASL DIGEST-MD5 "
        f"login of user '{USER}': a wrong username or password, or a ZooKeeper without SASL"
    )
    assert "not-the-secret" not in output


def test_a_zookeeper_without_sasl_stops_the_broker_with_one_line(
    zookeeper_server: ZooKeeperServer, zk_connect: str, tmp_path: Path
) -> None:
    jaas = _jaas_file(tmp_path / "jaas.conf")
    cluster = _cluster(zk_connect, tmp_path, 1, jaas=jaas, set_acl=False, harness_login=_NONE)
    try:
        code, output = _start_and_wait_for_exit(cluster)
    finally:
        cluster.close()
    assert code == 1
    assert _the_one_error_line(output).startswith(
        f"error: ZooKeeper at {zookeeper_server.connect_string} refused the SASL DIGEST-MD5 "
        f"login of user '{USER}'"
    )
    assert PASSWORD not in output


def test_set_acl_without_a_login_stops_the_broker_with_one_line(
    zk_connect: str, tmp_path: Path
) -> None:
    cluster = _cluster(zk_connect, tmp_path, 1, jaas=None, harness_login=_NONE)
    try:
        code, output = _start_and_wait_for_exit(cluster)
    finally:
        cluster.close()
    assert code == 1
    assert _the_one_error_line(output) == (
        "error: zookeeper.set.acl is true, but the broker has no SASL login to ZooKeeper: give "
        "a JAAS file with a Client section (-Djava.security.auth.login.config=<file> in "
        "KAFKA_OPTS)"
    )


def test_a_zookeeper_that_requires_sasl(tmp_path: Path) -> None:
    """The test ZooKeeper's require_sasl mode: only clients that log in get a session, and a
    refused login is ZkAuthenticationError, not a dead kazoo thread."""
    server = _server(tmp_path / "zk", sasl_users={USER: PASSWORD}, require_sasl=True)
    server.start()
    try:
        with ZkStore.connect(server.connect_string + "/strict", security=BROKERS_LOGIN) as store:
            store.ensure_paths()
            assert store.get_or_create_cluster_id()
        wrong = ZkClientSecurity(ZkSaslCredentials(USER, "nope"))
        with pytest.raises(ZkAuthenticationError, match=r"refused the SASL DIGEST-MD5 login"):
            ZkStore.connect(server.connect_string, session_timeout_ms=6000, security=wrong)
        anonymous = KazooClient(hosts=server.connect_string + "/strict", timeout=6.0)
        try:
            # It connects, and ZooKeeper closes the session at its first request (kazoo's
            # check that the chroot exists, within start()).
            with pytest.raises(SessionClosedRequireSaslError):
                anonymous.start(timeout=6.0)
                anonymous.get_children("/brokers/ids")
        finally:
            anonymous.stop()
            anonymous.close()
    finally:
        server.stop()


def test_each_created_parent_gets_the_acls_of_its_own_path(
    sasl_zookeeper: ZooKeeperServer,
) -> None:
    """The chroot and the parents a write creates on its way get the ACLs of their own paths:
    /config stays world-readable under a sensitive /config/brokers/<default>."""
    chroot = f"/parents-{uuid.uuid4().hex}"
    with ZkStore.connect(sasl_zookeeper.connect_string + chroot, security=BROKERS_LOGIN) as store:
        store.set_broker_config("<default>", {"log.retention.ms": "1000"})
        acls = {
            path: store.client.get_acls(path)[0]
            for path in ("/", "/config", "/config/brokers", "/config/brokers/<default>")
        }
        assert store.client.get_acls("/config/changes")[0] == [BROKERS_ALL, WORLD_READ]
    assert acls == {
        "/": [BROKERS_ALL, WORLD_READ],  # the chroot
        "/config": [BROKERS_ALL, WORLD_READ],
        "/config/brokers": [BROKERS_ALL],
        "/config/brokers/<default>": [BROKERS_ALL],
    }
