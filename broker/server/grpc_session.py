"""The Session of a gRPC call: who the call is made as, from where, on which listener.

Every servicer asks ``grpc_session(context, listener)`` before it calls the core, so the
authorizer sees the same Session on this door as on the Kafka door. The broker declares each
gRPC listener's security once, when it builds that listener's server
(``configure_listener(name, protocol, tls)``); a listener never declared is PLAINTEXT. On a
PLAINTEXT listener every call is ANONYMOUS; on an SSL one the caller's certificate (gRPC's
auth context, ``x509_pem_cert``) is mapped by the listener's ``ssl.principal.mapping.rules``
to ``User:<name>``, and a call without one (``ssl.client.auth=none``) is ANONYMOUS.

The declarations are per process (one broker per process); they are written before the
servers start and only read afterwards, on the broker's event loop.
"""

from __future__ import annotations

import functools
from typing import Any

import grpc
import structlog
from cryptography import x509

from minikafka.broker.security.principal import ANONYMOUS, KafkaPrincipal, Session
from minikafka.broker.security.tls import ListenerTls

__all__ = ["configure_listener", "grpc_session", "peer_host"]

_log = structlog.get_logger(__name__)

# listener name -> (security protocol, its TLS or None)
_LISTENERS: dict[str, tuple[str, ListenerTls | None]] = {}


def configure_listener(name: str, security_protocol: str, tls: ListenerTls | None) -> None:
    """Declare gRPC listener ``name``'s protocol and TLS (before its server starts)."""
    _LISTENERS[name] = (security_protocol, tls)


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
    """The Session of the call ``context`` belongs to.

    A certificate that no ``ssl.principal.mapping.rules`` rule maps makes the call ANONYMOUS
    (the authorizer decides), with a warning the first time it is seen: Kafka closes such a
    connection at its handshake, which gRPC's TLS gives no hook for."""
    protocol, tls = _LISTENERS.get(listener, ("PLAINTEXT", None))
    principal = ANONYMOUS
    if tls is not None:
        certificate = next(iter(context.auth_context().get("x509_pem_cert", ())), None)
        if certificate is not None:
            principal = _certificate_principal(tls, certificate)
    return Session(principal, peer_host(context), listener, protocol)


@functools.lru_cache(maxsize=1024)
def _certificate_principal(tls: ListenerTls, pem: bytes) -> KafkaPrincipal:
    # Cached: a client's calls all carry the same certificate, and parsing it costs more than
    # the rest of the call's bookkeeping.
    try:
        return tls.principal_of(x509.load_pem_x509_certificate(pem))
    except ValueError as exc:  # NoMatchingRule, or a certificate cryptography cannot read
        _log.warning("grpc.certificate_not_mapped", listener=tls.listener, reason=str(exc))
        return ANONYMOUS
