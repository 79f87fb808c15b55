"""The gRPC door's logged-in sessions: ``token -> Session``.

On the Kafka door a SASL login belongs to its TCP connection. gRPC calls are not tied to one
connection on the server (a channel may reconnect, and the server is never told which
connection a call came on), so a login over the Security RPCs ends with an opaque token that
every later call carries in its metadata, and the broker looks the Session up here.

A token is 32 random bytes (``secrets``), unguessable, and holds no secret of the user's. An
entry ends:

- at its lifetime, when ``connections.max.reauth.ms`` is set (Kafka's KIP-368: a login is good
  for that long, then the client logs in again), or sooner when the mechanism's own session
  lifetime is shorter;
- after ``idle_ms`` without a call (``connections.max.idle.ms``: as an idle connection is
  closed on the Kafka door);
- when the table is full: the entry used longest ago goes, so a client logging in in a loop
  cannot grow the broker's memory (``max_entries``).

Owned by the broker's event loop (the SASL interceptor and the Security servicer run there);
not thread-safe.

    >>> from minikafka.broker.security.principal import KafkaPrincipal
    >>> tokens = SessionTokens(max_entries=2, idle_ms=60_000, clock=lambda: 0.0)
    >>> token = tokens.issue(Session(KafkaPrincipal("User", "alice"), "127.0.0.1"))
    >>> tokens.resolve(token).principal.name
    'alice'
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from minikafka.broker.security.principal import Session

__all__ = ["DEFAULT_MAX_ENTRIES", "SessionTokens"]

# Logins held at once per listener: well above any real number of clients of one broker.
DEFAULT_MAX_ENTRIES = 10_000


@dataclass
class _Entry:
    session: Session
    expires_at: float | None  # monotonic seconds; None: no lifetime, only idleness ends it
    last_used: float


class SessionTokens:
    """Tokens of the logins on one gRPC listener (see the module docstring)."""

    def __init__(
        self,
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        idle_ms: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be positive, not {max_entries}")
        self._max_entries = max_entries
        self._idle_s = idle_ms / 1000
        self._clock = clock
        self._entries: OrderedDict[str, _Entry] = OrderedDict()  # least recently used first

    def __len__(self) -> int:
        return len(self._entries)

    def issue(self, session: Session, lifetime_ms: int = 0) -> str:
        """A new token for ``session``, good for ``lifetime_ms`` (0: until idle)."""
        now = self._clock()
        self._drop_expired(now)
        while len(self._entries) >= self._max_entries:
            self._entries.popitem(last=False)
        token = secrets.token_urlsafe(32)
        expires_at = now + lifetime_ms / 1000 if lifetime_ms > 0 else None
        self._entries[token] = _Entry(session, expires_at, now)
        return token

    def resolve(self, token: str) -> Session | None:
        """The Session of a live token (and it counts as used now), else None."""
        entry = self._entries.get(token)
        if entry is None:
            return None
        now = self._clock()
        if self._ended(entry, now):
            del self._entries[token]
            return None
        entry.last_used = now
        self._entries.move_to_end(token)
        return entry.session

    def _ended(self, entry: _Entry, now: float) -> bool:
        if entry.expires_at is not None and now >= entry.expires_at:
            return True
        return now - entry.last_used >= self._idle_s

    def _drop_expired(self, now: float) -> None:
        # Least recently used first: the idle ones sit at the front; an entry with a lifetime
        # may end anywhere, but is also found when resolved.
        while self._entries:
            token, entry = next(iter(self._entries.items()))
            if not self._ended(entry, now):
                break
            del self._entries[token]
