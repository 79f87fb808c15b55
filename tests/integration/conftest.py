"""Integration fixtures: one real ZooKeeper per test session, one chroot per test.

    def test_something(zk_connect: str) -> None:          # "127.0.0.1:PORT/test-<uuid>"
        ...
    def test_raw(zk_client: KazooClient) -> None:         # started client on that chroot
        ...
    def test_restart(zookeeper_server, zk_connect) -> None:
        zookeeper_server.stop(); zookeeper_server.start() # same port, same data
    def test_expiry(zookeeper_server, zk_client) -> None:
        expire_session(zk_client, zookeeper_server.connect_string)  # tests.integration.zookeeper
    def test_brokers(cluster_factory) -> None:             # tests.integration.cluster.Cluster
        cluster = cluster_factory(n_brokers=3, overrides={"min.insync.replicas": "2"})
        ...                                               # started and serving; killed after

Without java or ZooKeeper's jars the tests are skipped, except under CI=true where a missing
dependency fails them: CI must never pass by skipping.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Callable, Generator, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.retry import KazooRetry

from tests.integration.cluster import DEFAULT_REPLICATION, REPO_ROOT, Cluster
from tests.integration.zookeeper import (
    ZooKeeperServer,
    ZooKeeperStartError,
    ZooKeeperUnavailable,
)


def _running_in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1")


@pytest.fixture(scope="session")
def zookeeper_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    """A standalone ZooKeeper on 127.0.0.1, shared by the whole session."""
    workdir: Path = tmp_path_factory.mktemp("zookeeper")
    try:
        server = ZooKeeperServer(workdir)
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


@pytest.fixture
def zk_connect(zookeeper_server: ZooKeeperServer) -> str:
    """A connect string with a chroot of its own, so tests never see each other's znodes.

    The chroot znode is created here: kazoo warns when it connects under a missing chroot.
    """
    return fresh_chroot(zookeeper_server)


def fresh_chroot(zookeeper_server: ZooKeeperServer) -> str:
    """A new chroot on the shared server (for fixtures of a wider scope than ``zk_connect``)."""
    if not zookeeper_server.running:
        # an earlier test stopped or killed the shared server and did not bring it back
        zookeeper_server.start()
    chroot = f"/test-{uuid.uuid4().hex}"
    root = KazooClient(hosts=zookeeper_server.connect_string, timeout=10.0)
    root.start(timeout=10.0)
    try:
        root.create(chroot)
    finally:
        root.stop()
        root.close()
    return zookeeper_server.connect_string + chroot


@pytest.fixture
def zk_client(zk_connect: str) -> Iterator[KazooClient]:
    """A started kazoo client on this test's chroot, stopped after the test.

    Reconnects back off to at most 0.5 s (kazoo's default lets the pause grow far beyond
    ZooKeeper's restart time), so restart tests do not wait on a sleeping client.
    """
    reconnect = KazooRetry(max_tries=-1, delay=0.05, backoff=2, max_delay=0.5)
    client = KazooClient(hosts=zk_connect, timeout=10.0, connection_retry=reconnect)
    client.start(timeout=10.0)
    yield client
    client.stop()
    client.close()


ClusterFactory = Callable[..., Cluster]
_CLUSTERS_KEY = pytest.StashKey[list[Cluster]]()


@pytest.fixture(scope="session")
def tls_certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory of test certificates made by scripts/make-certs.sh (openssl), once a run."""
    directory = tmp_path_factory.mktemp("certs")
    subprocess.run(
        [str(REPO_ROOT / "scripts" / "make-certs.sh"), str(directory)],
        check=True,
        capture_output=True,
    )
    return directory


@pytest.fixture
def cluster_factory(
    zk_connect: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[ClusterFactory]:
    """``cluster_factory(n_brokers=3, overrides=None, start=True, replication=..., tls=None)
    -> Cluster`` (``replication`` "kafka" or "grpc": Cluster's, by default
    MINIKAFKA_TEST_REPLICATION's; ``tls``: a directory of scripts/make-certs.sh's certificates
    for TLS listeners; other keywords, e.g. ``grpc_listener`` and ``sasl``, go to Cluster).

    The brokers are started and waited for (``start=False`` leaves that to the test). At the
    end of the test every broker process still running is killed; when the test failed, the
    tail of each broker's output is added to the failure report.
    """
    clusters: list[Cluster] = []
    request.node.stash[_CLUSTERS_KEY] = clusters

    def make(
        n_brokers: int = 3,
        overrides: Mapping[str, str] | None = None,
        *,
        start: bool = True,
        replication: str = DEFAULT_REPLICATION,
        tls: Path | None = None,
        **cluster_options: Any,
    ) -> Cluster:
        cluster = Cluster(
            zk_connect,
            tmp_path / f"cluster-{len(clusters)}",
            n_brokers,
            overrides,
            replication=replication,
            tls=tls,
            **cluster_options,
        )
        clusters.append(cluster)
        if start:
            cluster.start_all()
            cluster.wait_until_serving()
        return cluster

    yield make
    for cluster in clusters:
        cluster.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report: pytest.TestReport = yield
    clusters = item.stash.get(_CLUSTERS_KEY, [])
    if report.failed and clusters:
        for cluster in clusters:
            report.sections.append((f"broker logs ({cluster.tmp_path})", cluster.describe(80)))
    return report
