"""One round over the brokers a client knows; bootstrap servers that all refuse connections
are said so at once.

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
"""

from __future__ import annotations

import errno
import socket
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import TypeVar

import grpc

from minikafka.client._channel import RETRIABLE_STATUS
from minikafka.client._retry import RetryLater
from minikafka.proto.errors import ErrorCode, KafkaError

__all__ = ["BrokersUnreachableError", "ask_any_broker", "connect_failure", "raise_if_unreachable"]

R = TypeVar("R")

# How long a connect may take before the address counts as "times out" (retried later).
_CONNECT_TIMEOUT_S = 1.0


class BrokersUnreachableError(KafkaError):
    """NETWORK_EXCEPTION that is not retried: no bootstrap server accepts connections."""

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


def raise_if_unreachable(tried: Collection[str], unavailable: Iterable[str]) -> None:
    """After a round over the bootstrap servers ``tried`` in which each address listed in
    ``unavailable`` failed with UNAVAILABLE: raise BrokersUnreachableError if that is all of
    them and each refuses connections or does not resolve."""
    if not tried or set(unavailable) != set(tried):
        return
    reasons: list[str] = []
    for address in dict.fromkeys(tried):
        reason = connect_failure(address)
        if reason is None:
            return
        reasons.append(f"{address} ({reason})")
    raise BrokersUnreachableError(f"cannot connect to any bootstrap server: {', '.join(reasons)}")


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
