"""The gRPC door's token table: lifetime, idleness, the bound."""

from __future__ import annotations

from minikafka.broker.security.principal import KafkaPrincipal, Session
from minikafka.broker.security.session_tokens import SessionTokens


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _session(name: str) -> Session:
    return Session(KafkaPrincipal("User", name), "127.0.0.1", "SASL", "SASL_PLAINTEXT")


def test_a_token_resolves_to_its_session_and_an_unknown_one_to_none() -> None:
    tokens = SessionTokens(idle_ms=60_000, clock=Clock())
    alice, bob = tokens.issue(_session("alice")), tokens.issue(_session("bob"))
    assert alice != bob
    assert tokens.resolve(alice) == _session("alice")
    assert tokens.resolve(bob) == _session("bob")
    assert tokens.resolve("not-a-token") is None


def test_a_token_ends_at_its_lifetime_even_while_in_use() -> None:
    clock = Clock()
    tokens = SessionTokens(idle_ms=60_000, clock=clock)
    token = tokens.issue(_session("alice"), lifetime_ms=10_000)
    for _ in range(9):
        clock.now += 1.0
        assert tokens.resolve(token) is not None
    clock.now += 1.0  # 10 s after the login
    assert tokens.resolve(token) is None
    assert len(tokens) == 0


def test_without_a_lifetime_a_token_ends_only_when_idle() -> None:
    clock = Clock()
    tokens = SessionTokens(idle_ms=5_000, clock=clock)
    token = tokens.issue(_session("alice"))
    for _ in range(10):  # used every 4 s: alive for 40 s
        clock.now += 4.0
        assert tokens.resolve(token) is not None
    clock.now += 5.0
    assert tokens.resolve(token) is None


def test_idle_tokens_are_dropped_when_a_new_one_is_issued() -> None:
    clock = Clock()
    tokens = SessionTokens(idle_ms=5_000, clock=clock)
    for name in ("a", "b", "c"):
        tokens.issue(_session(name))
    clock.now += 6.0
    tokens.issue(_session("d"))
    assert len(tokens) == 1


def test_a_full_table_drops_the_token_used_longest_ago() -> None:
    clock = Clock()
    tokens = SessionTokens(max_entries=3, idle_ms=60_000, clock=clock)
    first, second, third = (tokens.issue(_session(n)) for n in ("a", "b", "c"))
    clock.now += 1.0
    assert tokens.resolve(first) is not None  # used: second is now the oldest
    fourth = tokens.issue(_session("d"))
    assert len(tokens) == 3
    assert tokens.resolve(second) is None
    assert all(tokens.resolve(t) is not None for t in (first, third, fourth))
