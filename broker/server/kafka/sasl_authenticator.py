"""One connection's SASL authentication on a SASL_PLAINTEXT (or SASL_SSL) Kafka listener:
Kafka's SaslServerAuthenticator as a state machine, no I/O (the connection reads and writes).

    handshake ──SaslHandshake(enabled mechanism)──▶ authenticate ──exchange done──▶ complete
        │  ApiVersions: answered, stays                │  SaslAuthenticate: a token in, a token out
        └─ anything else: closed                       └─ SaslHandshake: ILLEGAL_SASL_STATE, closed;
                                                          anything else: closed

- Before the handshake only ApiVersions and SaslHandshake (v0, v1) are served; any other
  request closes the connection unanswered (Kafka: "Unexpected Kafka request of type X during
  SASL handshake"). ApiVersions is answered once (a version this broker does not serve does
  not count: the client picks again); a second one closes the connection, as Kafka's
  HANDSHAKE_OR_VERSIONS_REQUEST -> HANDSHAKE_REQUEST step: a client that never logs in cannot
  keep its connection past connections.max.idle.ms by asking for versions.
- A mechanism the listener does not enable: UNSUPPORTED_SASL_MECHANISM with the enabled list,
  then the connection closes.
- During the exchange a second SaslHandshake is answered ILLEGAL_SASL_STATE and the connection
  closes; another request closes it unanswered (Kafka answers that request's own error
  response first; a client that sends one has broken the protocol either way).
- SaslHandshake v1 is followed by SaslAuthenticate requests (v0-2); v0 by the bare tokens of
  old clients, each size-prefixed, with no Kafka header either way (``raw_tokens``).
- A failed exchange: SaslAuthenticate answers SASL_AUTHENTICATION_FAILED with the mechanism's
  message (or Kafka's generic one) and the connection closes (a raw-token client just sees the
  close, as in Kafka).
- Once complete, the session is ``User:<authorization id>`` with the listener's protocol, and
  requests go to the handlers; a SaslHandshake or SaslAuthenticate from then on is answered
  ILLEGAL_SASL_STATE by the handlers (re-authentication, KIP-368, is not supported:
  ``session_lifetime_ms`` is 0, connections.max.reauth.ms's default).

Not thread-safe: one per connection, driven by its reader task.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from minikafka.broker.security.principal import USER_TYPE, KafkaPrincipal, Session
from minikafka.broker.security.sasl.errors import (
    SaslAuthenticationFailed,
    UnsupportedSaslMechanism,
)
from minikafka.broker.security.sasl.server import SaslServer, SaslServerFactory
from minikafka.proto.errors import ErrorCode

__all__ = [
    "API_VERSIONS",
    "SASL_AUTHENTICATE",
    "SASL_HANDSHAKE",
    "AuthState",
    "HandshakeAnswer",
    "SaslAuthenticator",
    "SaslStateError",
]

API_VERSIONS = 18
SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36


class AuthState(enum.Enum):
    HANDSHAKE = "handshake"
    AUTHENTICATE = "authenticate"
    COMPLETE = "complete"
    FAILED = "failed"


class SaslStateError(Exception):
    """A request the state does not allow. ``answer``: whether Kafka answers it with
    ILLEGAL_SASL_STATE before closing (during authentication) or just closes (before the
    handshake)."""

    def __init__(self, reason: str, *, answer: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.answer = answer


@dataclass(frozen=True)
class HandshakeAnswer:
    error_code: ErrorCode
    mechanisms: tuple[str, ...]
    close: bool  # the connection closes once this is answered


class SaslAuthenticator:
    def __init__(
        self, factory: SaslServerFactory, *, client_host: str, listener: str, protocol: str
    ) -> None:
        self._factory = factory
        self._client_host = client_host
        self._listener = listener
        self._protocol = protocol
        self.state = AuthState.HANDSHAKE
        self.raw_tokens = False
        self.mechanism = ""
        self._versions_answered = False
        self._server: SaslServer | None = None

    def check_request(self, api_key: int) -> None:
        """SaslStateError unless ``api_key`` may come now."""
        if self.state is AuthState.HANDSHAKE and api_key not in (API_VERSIONS, SASL_HANDSHAKE):
            raise SaslStateError(
                f"Unexpected Kafka request of type {api_key} during SASL handshake.",
                answer=False,
            )
        if (
            self.state is AuthState.HANDSHAKE
            and api_key == API_VERSIONS
            and self._versions_answered
        ):
            raise SaslStateError(
                "Unexpected ApiVersions request received during SASL authentication state "
                "HANDSHAKE_REQUEST",
                answer=False,
            )
        if self.state is AuthState.AUTHENTICATE and api_key != SASL_AUTHENTICATE:
            raise SaslStateError(
                f"Unexpected Kafka request of type {api_key} during SASL authentication.",
                answer=True,
            )
        if self.state in (AuthState.COMPLETE, AuthState.FAILED):
            raise SaslStateError(f"SASL authentication is {self.state.value}", answer=True)

    def versions_answered(self) -> None:
        """An ApiVersions of a served version was answered: the handshake must come next."""
        self._versions_answered = True

    def handshake(self, mechanism: str, version: int) -> HandshakeAnswer:
        self.check_request(SASL_HANDSHAKE)
        enabled = self._factory.enabled_mechanisms
        try:
            self._server = self._factory.create(mechanism)
        except UnsupportedSaslMechanism:
            self.state = AuthState.FAILED
            self.mechanism = mechanism
            return HandshakeAnswer(ErrorCode.UNSUPPORTED_SASL_MECHANISM, enabled, close=True)
        self.mechanism = mechanism
        self.raw_tokens = version == 0
        self.state = AuthState.AUTHENTICATE
        return HandshakeAnswer(ErrorCode.NONE, enabled, close=False)

    def authenticate(self, token: bytes) -> bytes:
        """The server's next token; SaslAuthenticationFailed (the state is then FAILED)."""
        self.check_request(SASL_AUTHENTICATE)
        server = self._server
        assert server is not None  # set with the AUTHENTICATE state
        try:
            answer = server.evaluate_response(token)
        except SaslAuthenticationFailed:
            self.state = AuthState.FAILED
            self._server = None
            raise
        if server.complete:
            self.state = AuthState.COMPLETE
        return answer

    @property
    def complete(self) -> bool:
        return self.state is AuthState.COMPLETE

    def session(self) -> Session:
        assert self._server is not None and self.complete
        principal = KafkaPrincipal(USER_TYPE, self._server.authorization_id)
        return Session(principal, self._client_host, self._listener, self._protocol)
