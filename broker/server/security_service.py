"""The Security RPC family: a SASL login on the gRPC door.

    SecurityService(listener, security_protocol, sasl=SaslLogin(...) | None)

Kafka's two steps, over two RPCs: ``SaslHandshake(mechanism)`` picks a mechanism among the
listener's enabled ones and opens a login (named by a random ``handshake_id``, since gRPC calls
share no connection); ``SaslAuthenticate(handshake_id, auth_bytes)`` feeds the client's tokens
to the same server mechanisms as the Kafka door (broker/security/sasl: PLAIN against the
listener's JAAS users, SCRAM against /config/users) until the mechanism completes. The last
answer carries a session token for ``Session(User:<name>, host, listener, protocol)``, which
later calls send in their metadata (broker/server/grpc_session.py), and its lifetime
(``connections.max.reauth.ms``, 0 when unset).

Errors are Kafka's: UNSUPPORTED_SASL_MECHANISM (with the enabled list), SASL_AUTHENTICATION_FAILED
(the mechanism's message when it is safe to show, else Kafka's generic sentence, so that a
client cannot tell an unknown user from a wrong password), ILLEGAL_SASL_STATE (an unknown or
finished handshake, or a listener that is not SASL_*, as Kafka's PLAINTEXT listener answers).
A failed login is answered ``connection.failed.authentication.delay.ms`` late (Kafka delays
a failed login's answer and close by it) and is one ``sasl.authentication_failed`` warning
with the client's address, the mechanism and the reason; the reason never holds a password or
a proof. Half-done logins are bounded in number, per client host too (``_MAX_PENDING_PER_HOST``:
a host opening handshakes in a loop pushes out only its own).

Runs on the broker's event loop (grpc.aio), which owns the open logins and the tokens.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc
import structlog

from minikafka.broker.security.principal import USER_TYPE, KafkaPrincipal, Session
from minikafka.broker.security.sasl.errors import SaslAuthenticationFailed
from minikafka.broker.security.sasl.server import SaslServer, SaslServerFactory
from minikafka.broker.security.session_tokens import SessionTokens
from minikafka.broker.server.grpc_session import peer_host
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.errors import ErrorCode

__all__ = ["SaslLogin", "SecurityService"]

_log = structlog.get_logger(__name__)

_Context = grpc.aio.ServicerContext[Any, Any]

# Logins half done at once, and how long one may take: a client that opens handshakes and never
# finishes them holds at most this many.
_MAX_PENDING = 1000
_PENDING_TIMEOUT_S = 60.0
# And per client host: a host opening handshakes in a loop pushes out its own oldest ones, not
# the logins other hosts (another broker's controller, say) have half done.
_MAX_PENDING_PER_HOST = 100


@dataclass(frozen=True)
class SaslLogin:
    """What a SASL_* gRPC listener logs clients in with: its mechanisms (the same factory as
    the listener's Kafka-door twin would have), its token table and the token lifetime
    (``connections.max.reauth.ms``; 0: until idle)."""

    mechanisms: SaslServerFactory
    tokens: SessionTokens
    reauth_ms: int = 0
    # connection.failed.authentication.delay.ms: a failed login is answered this much later
    failed_authentication_delay_ms: int = 100


@dataclass
class _Pending:
    server: SaslServer
    started: float
    host: str


class SecurityService(pb_grpc.SecurityServicer):
    """See the module docstring."""

    def __init__(
        self,
        listener: str,
        security_protocol: str,
        sasl: SaslLogin | None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._listener = listener
        self._protocol = security_protocol
        self._sasl = sasl
        self._clock = clock
        self._pending: OrderedDict[str, _Pending] = OrderedDict()  # oldest first

    async def SaslHandshake(
        self, request: pb.SaslHandshakeRequest, context: _Context
    ) -> pb.SaslHandshakeResponse:
        sasl = self._sasl
        if sasl is None:
            return pb.SaslHandshakeResponse(
                error_code=ErrorCode.ILLEGAL_SASL_STATE,
                error_message=f"listener {self._listener} is {self._protocol}, not SASL",
            )
        enabled = list(sasl.mechanisms.enabled_mechanisms)
        if request.mechanism not in enabled:
            return pb.SaslHandshakeResponse(
                error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                error_message=f"Unsupported SASL mechanism {request.mechanism}: enabled "
                f"mechanisms are {enabled}",
                mechanisms=enabled,
            )
        now = self._clock()
        self._drop_stale(now)
        host = peer_host(context)
        same_host = [i for i, p in self._pending.items() if p.host == host]  # oldest first
        if len(same_host) >= _MAX_PENDING_PER_HOST:
            del self._pending[same_host[0]]
        while len(self._pending) >= _MAX_PENDING:
            self._pending.popitem(last=False)
        handshake_id = secrets.token_urlsafe(16)
        self._pending[handshake_id] = _Pending(sasl.mechanisms.create(request.mechanism), now, host)
        return pb.SaslHandshakeResponse(mechanisms=enabled, handshake_id=handshake_id)

    async def SaslAuthenticate(
        self, request: pb.SaslAuthenticateRequest, context: _Context
    ) -> pb.SaslAuthenticateResponse:
        sasl = self._sasl
        if sasl is None:
            return pb.SaslAuthenticateResponse(
                error_code=ErrorCode.ILLEGAL_SASL_STATE,
                error_message=f"listener {self._listener} is {self._protocol}, not SASL",
            )
        self._drop_stale(self._clock())
        pending = self._pending.get(request.handshake_id)
        if pending is None:
            return pb.SaslAuthenticateResponse(
                error_code=ErrorCode.ILLEGAL_SASL_STATE,
                error_message="no SASL handshake open with this id (unknown, finished or "
                "timed out): send SaslHandshake first",
            )
        server = pending.server
        host = peer_host(context)
        try:
            challenge = server.evaluate_response(request.auth_bytes)
        except SaslAuthenticationFailed as exc:
            del self._pending[request.handshake_id]
            if sasl.failed_authentication_delay_ms > 0:
                # As on the Kafka door: one guess per delay per login, however fast the
                # client sends them (the login is gone already, so nothing waits on it).
                await asyncio.sleep(sasl.failed_authentication_delay_ms / 1000)
            _log.warning(
                "sasl.authentication_failed",
                client_host=host,
                listener=self._listener,
                mechanism=server.mechanism,
                reason=exc.reason,
            )
            return pb.SaslAuthenticateResponse(
                error_code=ErrorCode.SASL_AUTHENTICATION_FAILED,
                error_message=exc.client_message(server.mechanism),
            )
        if not server.complete:
            return pb.SaslAuthenticateResponse(auth_bytes=challenge)
        del self._pending[request.handshake_id]
        principal = KafkaPrincipal(USER_TYPE, server.authorization_id)
        session = Session(principal, host, self._listener, self._protocol)
        token = sasl.tokens.issue(session, sasl.reauth_ms)
        _log.info(
            "sasl.authenticated",
            client_host=host,
            listener=self._listener,
            mechanism=server.mechanism,
            principal=str(principal),
        )
        return pb.SaslAuthenticateResponse(
            auth_bytes=challenge, session_token=token, session_lifetime_ms=sasl.reauth_ms
        )

    def _drop_stale(self, now: float) -> None:
        while self._pending:
            handshake_id, pending = next(iter(self._pending.items()))
            if now - pending.started < _PENDING_TIMEOUT_S:
                break
            del self._pending[handshake_id]
