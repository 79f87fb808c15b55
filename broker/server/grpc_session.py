"""The Session of a gRPC call: who the call is made as, from where, on which listener.

Every servicer asks ``grpc_session(context, listener)`` before it calls the core, so the
authorizer sees the same Session on this door as on the Kafka door. The broker declares each
gRPC listener's security once, when it builds that listener's server
(``configure_listener(name, protocol, tls)``); a listener never declared is PLAINTEXT. On a
PLAINTEXT listener every call is ANONYMOUS; on an SSL one the caller's certificate (gRPC's
auth context, ``x509_pem_cert``) is mapped by the listener's ``ssl.principal.mapping.rules``
to ``User:<name>``, and a call without one (``ssl.client.auth=none``) is ANONYMOUS. On a
SASL_* gRPC listener a call carries the token of a login made over the Security RPCs
(broker/server/security_service.py) in its metadata (``SESSION_TOKEN_KEY``);
``SaslServerInterceptor`` looks it up in the listener's ``SessionTokens`` before the servicer
runs, and refuses a call without a live one with UNAUTHENTICATED (the Security RPCs themselves
excepted: they are how a client logs in). The SASL user is the principal, on SASL_SSL too.

The interceptor hands the Session to ``grpc_session`` in a context variable: grpc.aio runs an
RPC's interceptors and its handler in the RPC's own task, one after the other, so the variable
set for one call is seen by that call's handler and by no other call. The listener
declarations are per process (one broker per process); they are written before the servers
start and only read afterwards, on the broker's event loop.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias

import grpc
import structlog
from cryptography import x509

from minikafka.broker.security.principal import ANONYMOUS, KafkaPrincipal, Session
from minikafka.broker.security.session_tokens import SessionTokens
from minikafka.broker.security.tls import ListenerTls
from minikafka.proto.sasl_client import SESSION_TOKEN_KEY

__all__ = ["SaslServerInterceptor", "configure_listener", "grpc_session", "peer_host"]

_log = structlog.get_logger(__name__)

_Handler: TypeAlias = "grpc.RpcMethodHandler[Any, Any]"
_Context: TypeAlias = "grpc.aio.ServicerContext[Any, Any]"

# The Session the SASL interceptor found for the call running in this task.
_call_session: contextvars.ContextVar[Session | None] = contextvars.ContextVar(
    "minikafka_grpc_session", default=None
)
_NO_TOKEN = "the call carries no session token"
_DEAD_TOKEN = "the session token is unknown or expired (log in again)"
# The login RPCs, served without a token.
_SECURITY_SERVICE = "/minikafka.v1.Security/"

# listener name -> (security protocol, its TLS or None)
_LISTENERS: dict[str, tuple[str, ListenerTls | None]] = {}


def configure_listener(name: str, security_protocol: str, tls: ListenerTls | None) -> None:
    """Declare gRPC listener ``name``'s protocol and TLS (before its server starts)."""
    _LISTENERS[name] = (security_protocol, tls)


def peer_host(context: _Context) -> str:
    """The caller's IP address from gRPC's peer string (``ipv4:1.2.3.4:5``,
    ``ipv6:[::1]:5``); empty when the transport has none (``unix:``)."""
    peer = context.peer() or ""
    kind, _, address = peer.partition(":")
    if kind == "ipv4":
        return address.rsplit(":", 1)[0]
    if kind == "ipv6":
        return address.rsplit(":", 1)[0].strip("[]")
    return ""


def grpc_session(context: _Context, listener: str) -> Session:
    """The Session of the call ``context`` belongs to: the SASL login's when the call carried
    a live token, else the TLS client certificate's principal, else ANONYMOUS.

    A certificate that no ``ssl.principal.mapping.rules`` rule maps makes the call ANONYMOUS
    (the authorizer decides), with a warning the first time it is seen: Kafka closes such a
    connection at its handshake, which gRPC's TLS gives no hook for."""
    session = _call_session.get()
    if session is not None and session.listener == listener:
        return session
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


class SaslServerInterceptor(grpc.aio.ServerInterceptor):
    """On a SASL_* gRPC listener: the call's token -> its Session, or UNAUTHENTICATED.

    Runs on the broker's loop, as the ``SessionTokens`` it reads expects. A refused call is one
    ``grpc.sasl_call_refused`` warning with the client's address and the reason, never the
    token (whoever reads the log could use it).
    """

    def __init__(self, tokens: SessionTokens, listener: str) -> None:
        self._tokens = tokens
        self._listener = listener
        # One refusal handler per method and reason, made once: the interceptors outside
        # this one cache what they wrap by handler.
        self._refusals: dict[tuple[str, str], _Handler] = {}

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[_Handler | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> _Handler | None:
        handler = await continuation(handler_call_details)
        method: str = handler_call_details.method
        if handler is None or method.startswith(_SECURITY_SERVICE):
            return handler
        token = _token(handler_call_details.invocation_metadata)
        if token is None:
            return self._refusal(handler, method, _NO_TOKEN)
        session = self._tokens.resolve(token)
        if session is None:
            return self._refusal(handler, method, _DEAD_TOKEN)
        _call_session.set(session)
        return handler

    def _refusal(self, handler: _Handler, method: str, reason: str) -> _Handler:
        refusal = self._refusals.get((method, reason))
        if refusal is None:
            refusal = self._refusals[(method, reason)] = _refusal(
                handler, self._listener, method, reason
            )
        return refusal


def _token(metadata: Any) -> str | None:
    for key, value in metadata or ():
        if key == SESSION_TOKEN_KEY:
            return value if isinstance(value, str) else value.decode("ascii", "replace")
    return None


def _refusal(handler: _Handler, listener: str, method: str, reason: str) -> _Handler:
    """A handler of ``handler``'s kind that logs the refusal and answers UNAUTHENTICATED (a
    handler, not a refusal here: only the handler's context knows the client's address)."""

    async def refuse(request: Any, context: _Context) -> Any:
        _log.warning(
            "grpc.sasl_call_refused",
            client_host=peer_host(context),
            listener=listener,
            method=method,
            reason=reason,
        )
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, f"not authenticated: {reason}")

    parse, serialize = handler.request_deserializer, handler.response_serializer
    if handler.request_streaming and handler.response_streaming:
        return grpc.stream_stream_rpc_method_handler(refuse, parse, serialize)
    if handler.request_streaming:
        return grpc.stream_unary_rpc_method_handler(refuse, parse, serialize)
    if handler.response_streaming:
        return grpc.unary_stream_rpc_method_handler(refuse, parse, serialize)
    return grpc.unary_unary_rpc_method_handler(refuse, parse, serialize)
