"""The broker's SCRAM credentials: every user's, by mechanism, as /config/users holds them.

Kafka's CredentialCache, fed as Kafka feeds it in ZooKeeper mode: every user's config is read
at startup (so credentials written before the brokers started count), and a user's again on
each ``users/<user>`` config change notification. ``update_user`` takes the user's whole
config: keys that are no SCRAM mechanism (client quotas) are not its business; a mechanism
missing from it is a credential deleted. A value that does not parse is logged (the key only)
and treated as no credential, so that user cannot log in with that mechanism.

Thread-safe: read by every connection's SCRAM exchange on the event loop, written by the
config change handler and at startup from a worker thread.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

import structlog

from minikafka.broker.security.sasl.scram import ScramCredential, ScramMechanism

__all__ = ["CredentialCache"]

_log = structlog.get_logger("broker.credential_cache")


class CredentialCache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._credentials: dict[tuple[str, ScramMechanism], ScramCredential] = {}

    def get(self, user: str, mechanism: ScramMechanism) -> ScramCredential | None:
        with self._lock:
            return self._credentials.get((user, mechanism))

    def mechanisms(self, user: str) -> list[tuple[ScramMechanism, int]]:
        """``(mechanism, iterations)`` of the user's credentials, for DescribeUserScram."""
        with self._lock:
            return [
                (mechanism, self._credentials[(user, mechanism)].iterations)
                for mechanism in ScramMechanism
                if (user, mechanism) in self._credentials
            ]

    def update_user(self, user: str, config: Mapping[str, str]) -> None:
        parsed: dict[ScramMechanism, ScramCredential] = {}
        for mechanism in ScramMechanism:
            text = config.get(mechanism.mechanism_name)
            if text is None:
                continue
            try:
                parsed[mechanism] = ScramCredential.parse(text)
            except ValueError as exc:
                _log.error(
                    "scram_credential_invalid",
                    user=user,
                    mechanism=mechanism.mechanism_name,
                    error=str(exc),
                )
        with self._lock:
            for mechanism in ScramMechanism:
                credential = parsed.get(mechanism)
                if credential is None:
                    self._credentials.pop((user, mechanism), None)
                else:
                    self._credentials[(user, mechanism)] = credential
