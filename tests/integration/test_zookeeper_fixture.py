"""The ZooKeeper fixture itself: serves, isolates tests by chroot, expires sessions, restarts."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from tests.integration.zookeeper import (
    ZooKeeperServer,
    ZooKeeperStartError,
    expire_session,
    four_letter_word,
)

pytestmark = pytest.mark.integration


def test_server_answers_ruok(zookeeper_server: ZooKeeperServer) -> None:
    assert zookeeper_server.connect_string == f"127.0.0.1:{zookeeper_server.port}"
    assert four_letter_word("127.0.0.1", zookeeper_server.port, "ruok") == "imok"


def test_each_test_gets_its_own_chroot(zk_client: KazooClient, zk_connect: str) -> None:
    zk_client.create("/mine", b"x")
    host_port, chroot = zk_connect.split("/", 1)
    root = KazooClient(hosts=host_port)
    root.start(timeout=10)
    try:
        assert root.get(f"/{chroot}/mine")[0] == b"x"
        assert not root.exists("/mine")
    finally:
        root.stop()
        root.close()


def test_expire_session_deletes_ephemerals_and_client_reconnects(
    zookeeper_server: ZooKeeperServer, zk_client: KazooClient
) -> None:
    zk_client.create("/ephemeral", b"", ephemeral=True)
    old_session = zk_client.client_id[0]

    expire_session(zk_client, zookeeper_server.connect_string)

    assert zk_client.connected
    assert zk_client.client_id[0] != old_session
    assert zk_client.exists("/ephemeral") is None


def test_stop_and_start_keep_port_and_data(
    zookeeper_server: ZooKeeperServer, zk_client: KazooClient
) -> None:
    zk_client.create("/persistent", b"kept")
    port = zookeeper_server.port

    zookeeper_server.stop()
    assert not zookeeper_server.running
    zookeeper_server.start()

    assert zookeeper_server.port == port
    # kazoo reconnects on its own; the session survives a short outage
    assert zk_client.retry(zk_client.get, "/persistent")[0] == b"kept"


def test_kill_then_start(zookeeper_server: ZooKeeperServer, zk_client: KazooClient) -> None:
    zk_client.create("/before-kill", b"1")
    zookeeper_server.kill()
    assert not zookeeper_server.running
    zookeeper_server.start()
    assert zk_client.retry(zk_client.get, "/before-kill")[0] == b"1"


def test_start_failure_reports_zookeepers_output(
    zookeeper_server: ZooKeeperServer, tmp_path: Path
) -> None:
    # zookeeper_server only makes the test skip (or fail in CI) where ZooKeeper cannot run
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        server = ZooKeeperServer(tmp_path, port=squatter.getsockname()[1])
        with pytest.raises(ZooKeeperStartError, match="Address already in use"):
            server.start(timeout_s=20)
    assert not server.running
