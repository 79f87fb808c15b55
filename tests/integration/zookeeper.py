"""A real standalone ZooKeeper for integration tests, plus a way to expire a client's session.

The server and the port allocator live on the client side, where ``minikafka replay`` starts
its own cluster with them (minikafka/client/cli/replay/local_zookeeper.py, whose docstring
describes the work directory and SASL mode); they are re-exported here, so one ``free_port``
hands out every port of a test process. ``expire_session`` needs kazoo and stays here.

Usage::

    server = ZooKeeperServer(tmp_path / "zk")
    server.start()                    # waits until `ruok` answers `imok`
    kazoo = KazooClient(server.connect_string + "/my-chroot")
    expire_session(kazoo, server.connect_string)
    server.stop()                     # SIGTERM; start() again brings it back, same port and data
"""

from __future__ import annotations

import threading

from kazoo.client import KazooClient, KazooState

from minikafka.client.cli.replay.local_zookeeper import (
    ZooKeeperServer,
    ZooKeeperStartError,
    ZooKeeperUnavailable,
    find_java,
    four_letter_word,
    free_port,
    zookeeper_classpath,
)

__all__ = [
    "ZooKeeperServer",
    "ZooKeeperStartError",
    "ZooKeeperUnavailable",
    "expire_session",
    "find_java",
    "four_letter_word",
    "free_port",
    "zookeeper_classpath",
]


def expire_session(client: KazooClient, connect_string: str, timeout_s: float = 15.0) -> None:
    """Make ZooKeeper expire ``client``'s session, then wait until kazoo has a new one.

    A second client attaches to the same session (id and password) and closes it, so the
    server really ends the session and deletes its ephemeral znodes, exactly as when a broker
    stays away longer than its session timeout. ``client`` sees LOST, then reconnects with a
    fresh session; watches set through kazoo's recipes are re-established by kazoo.
    ``connect_string`` is the server's host:port (a chroot does not matter for sessions).
    """
    lost = threading.Event()
    reconnected = threading.Event()

    def listener(state: str) -> None:
        if state == KazooState.LOST:
            lost.set()
        elif state == KazooState.CONNECTED and lost.is_set():
            reconnected.set()

    old_session_id = client.client_id[0]
    client.add_listener(listener)
    try:
        intruder = KazooClient(hosts=connect_string, client_id=client.client_id)
        intruder.start(timeout=timeout_s)
        intruder.stop()
        intruder.close()
        if not lost.wait(timeout_s):
            raise TimeoutError(f"session 0x{old_session_id:x} was not reported LOST")
        if not reconnected.wait(timeout_s) and not client.connected:
            raise TimeoutError("client did not reconnect with a new session")
    finally:
        client.remove_listener(listener)
