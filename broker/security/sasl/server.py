"""A listener's SASL mechanisms: which are enabled and a fresh server exchange per connection.

A mechanism's server is a small state machine fed the client's tokens: ``evaluate_response``
returns the next server token or raises SaslAuthenticationFailed; once ``complete``,
``authorization_id`` is the user name the session's principal is made from (``User:<name>``).

    >>> factory = SaslServerFactory(("PLAIN",), {"alice": "alice-secret"}, lambda u, m: None)
    >>> server = factory.create("PLAIN")
    >>> server.evaluate_response(b"\\0alice\\0alice-secret"), server.authorization_id
    (b'', 'alice')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from minikafka.broker.security.sasl.errors import UnsupportedSaslMechanism
from minikafka.broker.security.sasl.plain import PLAIN, PlainSaslServer
from minikafka.broker.security.sasl.scram import CredentialLookup, ScramMechanism, ScramSaslServer

__all__ = ["SUPPORTED_MECHANISMS", "SaslServer", "SaslServerFactory"]

# What this broker implements; Kafka's GSSAPI and OAUTHBEARER are not.
SUPPORTED_MECHANISMS = (PLAIN, "SCRAM-SHA-256", "SCRAM-SHA-512")


class SaslServer(Protocol):
    @property
    def mechanism(self) -> str: ...

    @property
    def complete(self) -> bool: ...

    @property
    def authorization_id(self) -> str: ...

    def evaluate_response(self, response: bytes) -> bytes: ...


@dataclass(frozen=True)
class SaslServerFactory:
    """The SASL side of one listener: its enabled mechanisms, PLAIN's users from the listener's
    JAAS config, and the broker's SCRAM credential cache."""

    enabled_mechanisms: tuple[str, ...]
    plain_users: Mapping[str, str]
    credentials: CredentialLookup

    def create(self, mechanism: str) -> SaslServer:
        if mechanism not in self.enabled_mechanisms:
            raise UnsupportedSaslMechanism(mechanism, self.enabled_mechanisms)
        if mechanism == PLAIN:
            return PlainSaslServer(self.plain_users)
        scram = ScramMechanism.from_name(mechanism)
        if scram is None:
            raise UnsupportedSaslMechanism(mechanism, self.enabled_mechanisms)
        return ScramSaslServer(scram, self.credentials)
