"""Connections that never finish their TLS handshake, on a real broker's SSL Kafka listener:
each counts against the connection limits from the moment it is accepted (a client cannot
open more half-open connections than max.connections.per.ip allows), and each is dropped
when the handshake times out, which gives its place back."""

from __future__ import annotations

import socket
import ssl
import time
from pathlib import Path

import pytest

from tests.integration.cluster import BrokerProcess
from tests.integration.conftest import ClusterFactory

# Handshake timeouts timed: alone, not beside other tests (scripts/test.sh).
pytestmark = [pytest.mark.integration, pytest.mark.serial, pytest.mark.timeout(120)]


def _closed_by_peer(sock: socket.socket, timeout_s: float) -> bool:
    sock.settimeout(timeout_s)
    try:
        return sock.recv(1) == b""
    except ConnectionError:
        return True
    except TimeoutError:
        return False


def _refused(broker: BrokerProcess) -> list[dict[str, object]]:
    return [
        e for e in broker.log_events("kafka.connection_refused") if e["listener"] == "KAFKA_SSL"
    ]


def test_stalled_handshakes_count_against_the_limit_and_are_released(
    cluster_factory: ClusterFactory, tls_certs: Path
) -> None:
    cluster = cluster_factory(
        1, {"max.connections.per.ip": "3", "min.insync.replicas": "1"}, tls=tls_certs
    )
    broker = cluster.brokers[0]
    host, port = broker.kafka_address.rsplit(":", 1)
    stalled = [socket.create_connection((host, int(port)), timeout=10) for _ in range(3)]
    try:
        time.sleep(0.5)  # the broker has accepted all three
        with socket.create_connection((host, int(port)), timeout=10) as fourth:
            assert _closed_by_peer(fourth, 5)  # over the limit: closed at once
        # The broker logs the refusal before it closes the socket.
        assert len(_refused(broker)) == 1, _refused(broker)
        started = time.monotonic()
        # The handshake timeout drops the silent ones.
        for sock in stalled:
            assert _closed_by_peer(sock, 30)
        assert time.monotonic() - started < 20
    finally:
        for sock in stalled:
            sock.close()

    # Their places are free again: a real TLS client connects and completes its handshake.
    context = ssl.create_default_context(cafile=str(tls_certs / "truststore.pem"))
    context.load_cert_chain(str(tls_certs / "alice.crt"), str(tls_certs / "alice.key"))
    deadline = time.monotonic() + 10
    while True:
        try:
            with (
                socket.create_connection((host, int(port)), timeout=10) as raw,
                context.wrap_socket(raw, server_hostname="localhost") as secured,
            ):
                assert secured.version() is not None
                break
        except (ConnectionError, ssl.SSLError):
            # the broker may not have counted the last one down yet
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    # The handshake timeout closes a socket a moment before its place is counted free, so
    # the client above may have been refused (and tried again) in between: no refusal is
    # checked after the first.
    timeouts = [
        e
        for e in broker.log_events("kafka.tls_handshake_failed")
        # asyncio's TimeoutError, or uvloop's ConnectionAbortedError with its own sentence
        if "timeout" in str(e["reason"]) or "taking longer" in str(e["reason"])
    ]
    assert len(timeouts) == 3, broker.log_events("kafka.tls_handshake_failed")
