"""Hostile clients on the Kafka listener, against a real broker process: connections that send
a Fetch for a large log (one each, or many pipelined) and never read the answers keep the
broker's memory bounded (its resident set, /proc/<pid>/status) and give it back when they go,
while another client is still served; and the connection limits refuse what they must.

Before the answers' records were sent from the segment files, each such connection held its
whole answer (about 20 MB here) in the broker's memory."""

from __future__ import annotations

import contextlib
import socket
import struct
import time
from collections.abc import Iterator

import confluent_kafka
import pytest

from minikafka.client.admin import NewTopic
from tests.integration.cluster import Cluster
from tests.integration.conftest import ClusterFactory
from tests.integration.kafka_protocol.raw import (
    RawKafka,
    batch,
    connect_small,
    encode_request,
    fetch_fields,
    produce_fields,
    rss_mb,
    unread_bytes,
)

pytestmark = pytest.mark.integration

TOPIC = "big"
LOG_BYTES = 20 << 20
_VALUE = bytes(range(256)) * 400  # 100 KiB


def _fetch(correlation_id: int) -> bytes:
    """Fetch v12 of the whole partition, from offset 0, answered at once."""
    return encode_request(1, 12, fetch_fields(TOPIC, 0, 50 << 20), correlation_id)


@contextlib.contextmanager
def _sockets() -> Iterator[list[socket.socket]]:
    opened: list[socket.socket] = []
    try:
        yield opened
    finally:
        for sock in opened:
            sock.close()


def _big_topic(cluster_factory: ClusterFactory) -> Cluster:
    cluster = cluster_factory(n_brokers=1)
    with cluster.admin() as admin:
        admin.create_topics([NewTopic(TOPIC, 1, 1)])
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": cluster.brokers[0].kafka_address,
            "linger.ms": 20,
            "batch.size": 1 << 20,
        }
    )
    for _ in range(LOG_BYTES // len(_VALUE)):
        producer.produce(TOPIC, _VALUE, partition=0)
        producer.poll(0)
    assert producer.flush(60) == 0
    return cluster


def _served_quickly(address: str) -> float:
    """Seconds for another client's produce (acks=1) and its fetch of what it produced."""
    started = time.monotonic()
    with RawKafka(address) as raw:
        produced = raw.call(0, 8, produce_fields(TOPIC, batch([b"still served"]), acks=1))
        [partition] = produced.responses[0].partition_responses
        assert partition.error_code == 0
        fetch = fetch_fields(TOPIC, partition.base_offset, 1 << 16)
        [fetched] = raw.call(1, 12, fetch).responses[0].partitions
        assert fetched.error_code == 0 and b"still served" in fetched.records
    return time.monotonic() - started


def test_connections_that_never_read_their_fetch_answers_keep_memory_bounded(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = _big_topic(cluster_factory)
    broker = cluster.brokers[0]
    assert broker.process is not None
    pid = broker.process.pid
    # A whole answer read once: the segment's pages cached, the fetch path warm.
    with _sockets() as warm:
        warm.append(connect_small(broker.kafka_address))
        warm[0].sendall(_fetch(1))
        warm[0].settimeout(20)
        (size,) = struct.unpack(">i", warm[0].recv(4, socket.MSG_WAITALL))
        assert size > LOG_BYTES * 0.9
        got = 0
        while got < size:
            chunk = warm[0].recv(1 << 20)
            assert chunk
            got += len(chunk)
    baseline = rss_mb(pid)

    with _sockets() as hostile:
        for n in range(40):  # one fetch each
            sock = connect_small(broker.kafka_address)
            hostile.append(sock)
            sock.sendall(_fetch(n))
        for _ in range(10):  # 20 pipelined fetches each
            sock = connect_small(broker.kafka_address)
            hostile.append(sock)
            sock.sendall(b"".join(_fetch(i) for i in range(20)))
        deadline = time.monotonic() + 30
        while not all(unread_bytes(sock) for sock in hostile):  # every one of them answered
            assert time.monotonic() < deadline, "fetches not answered in 30 s"
            time.sleep(0.2)
        time.sleep(1)
        loaded = rss_mb(pid)
        # Another client is still served while the answers wait.
        assert _served_quickly(broker.kafka_address) < 2.0
    # Today: a few MB for 50 connections; before, about 20 MB each (1 GB).
    assert loaded - baseline < 100, f"RSS {baseline:.0f} MB -> {loaded:.0f} MB"

    deadline = time.monotonic() + 20
    while rss_mb(pid) - baseline > 50 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert rss_mb(pid) - baseline <= 50, "memory not given back after the clients left"
    assert _served_quickly(broker.kafka_address) < 2.0


def _refused(sock: socket.socket) -> bool:
    """Whether the broker closed the connection rather than answer ApiVersions."""
    sock.settimeout(10)
    try:
        sock.sendall(
            encode_request(18, 3, {"client_software_name": "t", "client_software_version": "1"})
        )
        return sock.recv(4) == b""
    except ConnectionError:
        return True


def test_connection_limits_per_address_with_overrides_and_in_all(
    cluster_factory: ClusterFactory,
) -> None:
    # gRPC replication: the Kafka listener is not the inter-broker one, which max.connections
    # spares.
    cluster = cluster_factory(
        n_brokers=1,
        replication="grpc",
        overrides={
            "max.connections.per.ip": "3",
            "max.connections.per.ip.overrides": "127.0.0.2:1",
            "max.connections": "5",
        },
    )
    address = cluster.brokers[0].kafka_address
    with _sockets() as held:
        for _ in range(3):
            held.append(connect_small(address))
            assert not _refused(held[-1])
        extra = connect_small(address)
        assert _refused(extra), "a 4th connection from 127.0.0.1 (max.connections.per.ip=3)"
        extra.close()
        held.append(connect_small(address, "127.0.0.2"))
        assert not _refused(held[-1])
        extra = connect_small(address, "127.0.0.2")
        assert _refused(extra), "a 2nd connection from 127.0.0.2 (its override is 1)"
        extra.close()
        held.append(connect_small(address, "127.0.0.3"))
        assert not _refused(held[-1])  # the 5th in all
        extra = connect_small(address, "127.0.0.3")
        assert _refused(extra), "a 6th connection in all (max.connections=5)"
        extra.close()
        held.pop(0).close()
        time.sleep(0.5)  # the broker sees the close
        held.append(connect_small(address, "127.0.0.3"))
        assert not _refused(held[-1]), "a slot freed by a close is taken again"
