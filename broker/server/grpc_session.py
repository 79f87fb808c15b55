"""The Session of a gRPC call: who the call is made as, from where, on which listener.

Every servicer asks ``grpc_session(context, listener)`` before it calls the core, so the
authorizer sees the same Session on this door as on the Kafka door. On a PLAINTEXT gRPC
listener every call is ANONYMOUS; TLS client certificates and SASL logins on the gRPC door
set the principal here.
"""

from __future__ import annotations

from typing import Any

import grpc

from minikafka.broker.security.principal import Session, anonymous_session

__all__ = ["grpc_session", "peer_host"]


def peer_host(context: grpc.aio.ServicerContext[Any, Any]) -> str:
    """The caller's IP address from gRPC's peer string (``ipv4:1.2.3.4:5``,
    ``ipv6:[::1]:5``); empty when the transport has none (``unix:``)."""
    peer = context.peer() or ""
    kind, _, address = peer.partition(":")
    if kind == "ipv4":
        return address.rsplit(":", 1)[0]
    if kind == "ipv6":
        return address.rsplit(":", 1)[0].strip("[]")
    return ""


def grpc_session(context: grpc.aio.ServicerContext[Any, Any], listener: str) -> Session:
    """The Session of the call ``context`` belongs to."""
    return anonymous_session(peer_host(context), listener)
