"""A client whose bootstrap servers all refuse connections says so at once.

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
from collections.abc import Collection, Iterable

from minikafka.proto.errors import ErrorCode, KafkaError

__all__ = ["BrokersUnreachableError", "connect_failure", "raise_if_unreachable"]

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
