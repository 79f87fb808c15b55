"""A local cluster for benchmarks: one real ZooKeeper (Debian's package) and broker processes
on 127.0.0.1, started the way the integration tests start them (tests/integration/cluster.py):
followers replicate over the Kafka listener, or over gRPC with MINIKAFKA_TEST_REPLICATION=grpc
(or ``start_cluster(..., replication="grpc")``).

    with scratch_dir("my-bench-") as root:             # bench/hygiene.py
        zookeeper, cluster = start_cluster(root, ports=ports_from(args))
        try: ... cluster.bootstrap_servers ...
        finally: cluster.close(); zookeeper.stop()

``ports``: what hands out the listen ports (bench/hygiene.py's ``--port-base``); free ones by
default.

Several clusters, one after another, on one ZooKeeper (each in a chroot of its own):
``new_cluster(zookeeper, root)`` makes a Cluster without starting it, for a caller that writes
its configs or its users' credentials in ZooKeeper first.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from pathlib import Path

from kazoo.client import KazooClient

from tests.integration.cluster import DEFAULT_REPLICATION, Cluster
from tests.integration.zookeeper import ZooKeeperServer, free_port

__all__ = ["new_cluster", "start_cluster"]


def start_cluster(
    root: Path,
    n_brokers: int = 3,
    overrides: Mapping[str, str] | None = None,
    *,
    replication: str = DEFAULT_REPLICATION,
    tls: Path | None = None,
    ports: Callable[[], int] = free_port,
) -> tuple[ZooKeeperServer, Cluster]:
    """ZooKeeper plus ``n_brokers`` serving brokers, in a chroot of their own under ``root``;
    ``overrides`` go to every broker's server.properties; ``tls``: scripts/make-certs.sh's
    certificates, for TLS listeners on both doors (Cluster's ``tls``)."""
    zookeeper = ZooKeeperServer(root / "zookeeper", port=ports())
    zookeeper.start()
    try:
        cluster = new_cluster(
            zookeeper,
            root / "cluster",
            n_brokers,
            overrides,
            replication=replication,
            tls=tls,
            ports=ports,
        )
        try:
            cluster.start_all()
            cluster.wait_until_serving()
        except BaseException:  # the caller gets no cluster to close: stop its brokers here
            cluster.close()
            raise
    except BaseException:
        zookeeper.stop()
        raise
    return zookeeper, cluster


def new_cluster(
    zookeeper: ZooKeeperServer,
    root: Path,
    n_brokers: int = 3,
    overrides: Mapping[str, str] | None = None,
    *,
    replication: str = DEFAULT_REPLICATION,
    tls: Path | None = None,
    ports: Callable[[], int] = free_port,
) -> Cluster:
    """A Cluster of ``n_brokers`` in ``root`` and a new chroot of ``zookeeper``, not started."""
    chroot = f"/bench-{uuid.uuid4().hex[:8]}"
    zk = KazooClient(hosts=zookeeper.connect_string)
    zk.start()
    zk.create(chroot)
    zk.stop()
    zk.close()
    return Cluster(
        zookeeper.connect_string + chroot,
        root,
        n_brokers=n_brokers,
        overrides=overrides,
        replication=replication,
        tls=tls,
        ports=ports,
    )
