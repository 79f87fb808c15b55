"""Why a SASL exchange failed, told twice: once for the broker's log, once for the client.

Kafka's SaslServerAuthenticator answers a failed SaslAuthenticate with
SASL_AUTHENTICATION_FAILED and either the mechanism's own message, when the mechanism marked it
safe to show an unauthenticated client (Kafka's SaslAuthenticationException: "Authentication
failed: Invalid username or password"), or one generic sentence naming only the mechanism
(Kafka's SaslException, which covers a wrong SCRAM proof, an unknown SCRAM user and a malformed
message alike, so a client cannot probe which users exist).

``reason`` is for the broker's log line. It never holds a password, a salted password, a key or
a SCRAM proof: mechanisms describe what was wrong, never echo a token.
"""

from __future__ import annotations

__all__ = ["SaslAuthenticationFailed", "UnsupportedSaslMechanism", "generic_failure_message"]


def generic_failure_message(mechanism: str) -> str:
    """Kafka's answer when the reason is not safe to tell the client."""
    return (
        "Authentication failed during authentication due to invalid credentials with SASL "
        f"mechanism {mechanism}"
    )


class SaslAuthenticationFailed(Exception):
    """The exchange failed; the connection answers SASL_AUTHENTICATION_FAILED and closes."""

    def __init__(self, reason: str, *, client_safe: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.client_safe = client_safe

    def client_message(self, mechanism: str) -> str:
        return self.reason if self.client_safe else generic_failure_message(mechanism)


class UnsupportedSaslMechanism(Exception):
    """The client asked for a mechanism this listener does not enable."""

    def __init__(self, mechanism: str, enabled: tuple[str, ...]) -> None:
        super().__init__(
            f"Unsupported SASL mechanism {mechanism}: enabled mechanisms are {list(enabled)}"
        )
        self.mechanism = mechanism
        self.enabled = enabled
