"""What a client pays per connection to a Kafka listener before its first request, by steps:

    tcp = setup_times(connect_tcp(address), 200)                     # TCP connect alone
    tls = setup_times(connect_tls(address, ca_file), 200)            # + the TLS handshake
    scram = setup_times(connect_sasl(address, ca_file, "SCRAM-SHA-256", user, password), 200)
    summary_ms(scram)                                                # (median, p99) in ms

Each connection is timed from ``connect()`` to the moment the broker would serve a request
(for SASL: SaslAuthenticate answered without error, and for SCRAM the server's signature
checked), then closed; connections are made one after another, never two at once. The client
is a raw one (tests/integration/kafka_protocol/raw.py, Python's ssl module: OpenSSL), so the
times hold the broker's work plus a thin client's: a SCRAM login costs the client one PBKDF2
of ``iterations`` rounds (4096, Kafka's minimum) and the broker a few HMACs.
"""

from __future__ import annotations

import socket
import ssl
import statistics
import time
from collections.abc import Callable

from minikafka.broker.security.sasl.scram import SCRAM_SHA_256, SCRAM_SHA_512, ScramSaslClient
from tests.integration.kafka_protocol.raw import RawKafka

__all__ = ["connect_sasl", "connect_tcp", "connect_tls", "setup_times", "summary_ms"]

SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36

Connect = Callable[[], None]


def connect_tcp(address: str) -> Connect:
    """A TCP connect, closed at once."""
    host, port = address.rsplit(":", 1)

    def connect() -> None:
        socket.create_connection((host, int(port)), timeout=10).close()

    return connect


def connect_tls(address: str, ca_file: str) -> Connect:
    """A TCP connect and the whole TLS handshake (the broker's certificate checked against
    ``ca_file``, no client certificate sent: the bench's Kafka listeners ask for none)."""
    host, port = address.rsplit(":", 1)
    context = ssl.create_default_context(cafile=ca_file)

    def connect() -> None:
        raw = socket.create_connection((host, int(port)), timeout=10)
        with raw, context.wrap_socket(raw, server_hostname=host):
            pass

    return connect


def connect_sasl(
    address: str, ca_file: str | None, mechanism: str, username: str, password: str
) -> Connect:
    """TCP, TLS (unless ``ca_file`` is None: SASL_PLAINTEXT), then a SASL login:
    SaslHandshake v1 and SaslAuthenticate v2 (one for PLAIN, two for SCRAM). RuntimeError when
    the broker refuses it, so a broken login never passes for a fast one."""
    host, _ = address.rsplit(":", 1)
    context = None if ca_file is None else ssl.create_default_context(cafile=ca_file)

    def connect() -> None:
        with RawKafka(address, timeout_s=10) as raw:
            if context is not None:
                raw.socket = context.wrap_socket(raw.socket, server_hostname=host)
            _login(raw, mechanism, username, password)

    return connect


def _login(raw: RawKafka, mechanism: str, username: str, password: str) -> None:
    handshake = raw.call(SASL_HANDSHAKE, 1, {"mechanism": mechanism})
    _check(handshake.error_code, "SaslHandshake", mechanism)
    if mechanism == "PLAIN":
        token = f"\0{username}\0{password}".encode()
        _check(
            raw.call(SASL_AUTHENTICATE, 2, {"auth_bytes": token}).error_code,
            "SaslAuthenticate",
            mechanism,
        )
        return
    scram = {"SCRAM-SHA-256": SCRAM_SHA_256, "SCRAM-SHA-512": SCRAM_SHA_512}[mechanism]
    client = ScramSaslClient(scram, username, password)
    first = raw.call(SASL_AUTHENTICATE, 2, {"auth_bytes": client.first()})
    _check(first.error_code, "SaslAuthenticate (client-first)", mechanism)
    final = raw.call(SASL_AUTHENTICATE, 2, {"auth_bytes": client.final(first.auth_bytes)})
    _check(final.error_code, "SaslAuthenticate (client-final)", mechanism)
    client.verify(final.auth_bytes)


def _check(error_code: int, step: str, mechanism: str) -> None:
    if error_code != 0:
        raise RuntimeError(f"{step} {mechanism} refused: error code {error_code}")


def setup_times(connect: Connect, connections: int) -> list[float]:
    """Seconds each of ``connections`` calls of ``connect`` took, one after another (a few
    unmeasured first, so that neither side's first-use costs count)."""
    for _ in range(min(5, connections)):
        connect()
    times = []
    for _ in range(connections):
        start = time.perf_counter()
        connect()
        times.append(time.perf_counter() - start)
    return times


def summary_ms(times: list[float]) -> tuple[float, float]:
    """Median and 99th percentile, in milliseconds (p99 by the nearest rank: one of the
    measured times, the largest of them below 100 connections)."""
    ordered = sorted(times)
    rank = max(0, -(-99 * len(ordered) // 100) - 1)
    return statistics.median(ordered) * 1000, ordered[rank] * 1000
