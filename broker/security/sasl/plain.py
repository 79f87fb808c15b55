"""SASL/PLAIN on the server (RFC 4616), checked against the listener's JAAS users.

The client's one token is ``authzid NUL authcid NUL passwd`` in UTF-8. As Kafka's
PlainSaslServer: exactly three fields, user name and password both non-empty, the password equal
to the JAAS option ``user_<name>`` of the listener's PlainLoginModule (compared in constant time),
and the authorization id either empty or the user name itself (no impersonation). The answer is
an empty token and the exchange is complete.

    >>> server = PlainSaslServer({"alice": "alice-secret"})
    >>> server.evaluate_response(b"\\0alice\\0alice-secret")
    b''
    >>> server.authorization_id
    'alice'

Not thread-safe: one instance per connection, driven by that connection's task.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from minikafka.broker.security.sasl.errors import SaslAuthenticationFailed

__all__ = ["PLAIN", "PlainSaslServer"]

PLAIN = "PLAIN"


class PlainSaslServer:
    mechanism = PLAIN

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self._authorization_id: str | None = None
        self._done = False

    @property
    def complete(self) -> bool:
        return self._authorization_id is not None

    @property
    def authorization_id(self) -> str:
        if self._authorization_id is None:
            raise RuntimeError("the SASL/PLAIN exchange has not completed")
        return self._authorization_id

    def evaluate_response(self, response: bytes) -> bytes:
        if self._done:
            raise SaslAuthenticationFailed("SASL/PLAIN takes one token; another arrived")
        self._done = True
        try:
            text = response.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslAuthenticationFailed("Invalid SASL/PLAIN response: not UTF-8") from None
        tokens = text.split("\0")
        if len(tokens) != 3:
            raise SaslAuthenticationFailed(
                f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(tokens)}"
            )
        authzid, username, password = tokens
        if not username:
            raise SaslAuthenticationFailed(
                "Authentication failed: username not specified", client_safe=True
            )
        if not password:
            raise SaslAuthenticationFailed(
                "Authentication failed: password not specified", client_safe=True
            )
        expected = self._users.get(username)
        # Compare against something even for an unknown user, so the time taken does not tell
        # a client which user names exist.
        matches = hmac.compare_digest(
            (expected if expected is not None else "\0" + password).encode(), password.encode()
        )
        if expected is None or not matches:
            raise SaslAuthenticationFailed(
                "Authentication failed: Invalid username or password", client_safe=True
            )
        if authzid and authzid != username:
            raise SaslAuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is different "
                "from username",
                client_safe=True,
            )
        self._authorization_id = username
        return b""
