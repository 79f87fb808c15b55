"""One round over the brokers a client knows; bootstrap servers that all refuse connections,
or are not gRPC listeners, are said so at once.

    response = ask_any_broker(known, bootstrap, lambda address: stub(address).Metadata(...))
    # the first answer; or RetryLater naming the last failure, or BrokersUnreachableError

    # a round over the bootstrap servers: the addresses whose call failed with UNAVAILABLE
    raise_if_unreachable(tried=bootstrap, unavailable=failed)  # or returns: retry as before

Kafka's clients retry bootstrap servers that cannot be reached until a timeout runs out
(60 s for a producer's first send), then blame what they were waiting for: "topic orders not
present in metadata". When a client has not yet reached any broker (it knows none but its
bootstrap servers) and every one of them refuses the connection or has a name that does not
resolve, waiting cannot help: the address or the port is wrong, or nothing runs there. Then
``BrokersUnreachableError`` names each address and why. An address that only times out (a
broker too busy to answer, packets dropped for a while) is retried within the configured
timeouts as before, and so is everything once the client has reached the cluster: a client
rides out a restart of the whole cluster, as Kafka's do.

Why a plain TCP connect decides: gRPC reports a refused connection as UNAVAILABLE, the same
status as a broker shutting down, and words the reason in text that changes between versions.
The connect is only made after a round in which every address failed with UNAVAILABLE.

A bootstrap server that accepts the connection but is not a gRPC listener (a broker's Kafka
port from ``kafka.listeners``, its ``metrics.listener``, anything else) also fails every call
with UNAVAILABLE, and no wait can help either. ``wrong_listener`` tells them apart in about a
second, on its own connections:

1. the HTTP/2 client preface and an empty SETTINGS frame. A gRPC server answers with its
   SETTINGS frame (frame header: 3-byte length, type 0x4) and the address is left alone;
2. otherwise a Kafka ApiVersions v0 request. An answer that starts with a 4-byte size and
   our correlation id is a Kafka-protocol listener;
3. otherwise ``HEAD / HTTP/1.0``: an answer starting ``HTTP/`` is a plain HTTP server (a
   broker's metrics listener).

A listener that answers neither within the probe's timeout is treated as a busy broker and
retried as before; one that closed or answered something else is "not a gRPC listener".
"""

from __future__ import annotations

import errno
import socket
import struct
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import TypeVar

import grpc

from minikafka.client._channel import RETRIABLE_STATUS
from minikafka.client._retry import RetryLater
from minikafka.proto.errors import ErrorCode, KafkaError

__all__ = [
    "BrokersUnreachableError",
    "ask_any_broker",
    "connect_failure",
    "raise_if_unreachable",
    "wrong_listener",
]

R = TypeVar("R")

# How long a connect may take before the address counts as "times out" (retried later).
_CONNECT_TIMEOUT_S = 1.0
# How long a probe waits for a listener's first bytes (each of the up to three probes).
_PROBE_TIMEOUT_S = 1.0

# HTTP/2 (RFC 9113 3.4): the client connection preface, then an empty SETTINGS frame
# (length 0, type 0x4, flags 0, stream 0).
_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
_HTTP2_SETTINGS = 0x4
# An HTTP/1 server may answer the HTTP/2 preface with a bare error page (Python's http.server
# does): a plain request gets its status line.
_HTTP1_REQUEST = b"HEAD / HTTP/1.0\r\n\r\n"
# Kafka ApiVersions v0 (request header v1): size, api_key 18, api_version 0, correlation_id,
# client_id as a null string (-1). The broker side owns Kafka's framing; the client cannot
# import it, and this probe needs nothing more than these 14 bytes.
_KAFKA_PROBE_CORRELATION_ID = 0x6D6B7072  # "mkpr"
_KAFKA_API_VERSIONS_V0 = struct.pack(">ihhih", 10, 18, 0, _KAFKA_PROBE_CORRELATION_ID, -1)


class BrokersUnreachableError(KafkaError):
    """NETWORK_EXCEPTION that is not retried: no bootstrap server accepts connections, or none
    that does is a gRPC listener."""

    code = ErrorCode.NETWORK_EXCEPTION

    @property
    def retriable(self) -> bool:
        return False


def connect_failure(address: str, timeout_s: float = _CONNECT_TIMEOUT_S) -> str | None:
    """Why a TCP connection to ``host:port`` fails at once ("Connection refused", the
    resolver's answer for a name that does not exist), or None when it connects or only
    times out."""
    host, _, port = address.rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except socket.gaierror as exc:
        if exc.errno == socket.EAI_AGAIN:  # the resolver may answer next time
            return None
        return exc.strerror or str(exc)
    except OSError as exc:
        if exc.errno == errno.ECONNREFUSED:
            return exc.strerror or "Connection refused"
        return None
    return None


def _first_bytes(address: str, request: bytes, want: int, timeout_s: float) -> bytes | None:
    """Up to ``want`` bytes a listener answers to ``request`` on a new connection: b"" when it
    closed without a word (or refused), None when it said nothing within ``timeout_s``."""
    host, _, port = address.rpartition(":")
    answer = b""
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s) as sock:
            sock.sendall(request)
            while len(answer) < want:
                chunk = sock.recv(want - len(answer))
                if not chunk:
                    break
                answer += chunk
    except TimeoutError:
        return answer or None
    except OSError:  # reset by a listener that read our bytes and gave up on them
        return answer
    return answer


def wrong_listener(address: str, timeout_s: float = _PROBE_TIMEOUT_S) -> str | None:
    """Why ``address`` is not a minikafka gRPC listener (a Kafka-protocol listener, an HTTP
    server, something else), or None when it may be one (it speaks HTTP/2, or said nothing
    within the timeout: a busy broker)."""
    http2 = _first_bytes(address, _HTTP2_PREFACE, 9, timeout_s)
    if http2 is not None and len(http2) == 9 and http2[3] == _HTTP2_SETTINGS:
        return None
    kafka = _first_bytes(address, _KAFKA_API_VERSIONS_V0, 8, timeout_s)
    if kafka is not None and len(kafka) == 8:
        (correlation_id,) = struct.unpack_from(">i", kafka, 4)
        if correlation_id == _KAFKA_PROBE_CORRELATION_ID:
            return (
                f"{address} is a Kafka-protocol listener (use the gRPC port, from the broker's "
                "listeners, not kafka.listeners; Kafka clients such as kcat use this one)"
            )
    if http2 is None and kafka is None:
        return None
    if (http2 or b"").startswith(b"HTTP/") or _first_bytes(
        address, _HTTP1_REQUEST, 5, timeout_s
    ) == b"HTTP/":
        return (
            f"{address} is an HTTP/1 listener, not a minikafka gRPC listener "
            "(a broker's metrics.listener?): use the port of the broker's listeners"
        )
    return f"{address} is not a minikafka gRPC listener"


def raise_if_unreachable(tried: Collection[str], unavailable: Iterable[str]) -> None:
    """After a round over the bootstrap servers ``tried`` in which each address listed in
    ``unavailable`` failed with UNAVAILABLE: raise BrokersUnreachableError if that is all of
    them and each refuses connections, does not resolve, or is not a gRPC listener."""
    if not tried or set(unavailable) != set(tried):
        return
    refused: list[str] = []
    wrong: list[str] = []
    for address in dict.fromkeys(tried):
        reason = connect_failure(address)
        if reason is not None:
            refused.append(f"{address} ({reason})")
            continue
        mismatch = wrong_listener(address)
        if mismatch is None:
            return
        wrong.append(mismatch)
    if not refused:  # the address is the problem, not the connection: say only that
        raise BrokersUnreachableError("; ".join(wrong))
    reasons = ", ".join(refused)
    raise BrokersUnreachableError(
        f"cannot connect to any bootstrap server: {'; '.join([reasons, *wrong])}"
    )


def ask_any_broker(
    known: Sequence[str],
    bootstrap: Sequence[str],
    ask: Callable[[str], R],
    *,
    deadline: float | None = None,
) -> R:
    """``ask(address)`` of each known broker, then of each bootstrap server not among them,
    until one answers; the round ends early once ``deadline`` (time.monotonic()) has passed.

    A gRPC failure a retry may fix (RETRIABLE_STATUS) moves on to the next address; any other
    propagates as it is. With no answer: BrokersUnreachableError when no broker is known yet
    and every bootstrap server refuses connections, else RetryLater naming the last failure."""
    addresses = list(dict.fromkeys([*known, *bootstrap]))
    unavailable: list[str] = []
    problem = "no broker answered"
    for address in addresses:
        if deadline is not None and time.monotonic() >= deadline:
            break
        try:
            return ask(address)
        except grpc.RpcError as exc:
            if exc.code() not in RETRIABLE_STATUS:
                raise
            if exc.code() == grpc.StatusCode.UNAVAILABLE:
                unavailable.append(address)
            problem = f"{address}: {exc.code().name}: {exc.details()}"
    if not known:  # never reached a broker: fail at once if none can be
        raise_if_unreachable(addresses, unavailable)
    raise RetryLater(problem)
