"""broker_server.event_loop_factory: uvloop's loop unless MINIKAFKA_EVENT_LOOP=asyncio; any
other value is refused with a one-line error naming the variable."""

from __future__ import annotations

import asyncio

import pytest
import uvloop

from minikafka.broker.server.broker_server import BrokerStartupError, event_loop_factory


def test_uvloop_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MINIKAFKA_EVENT_LOOP", raising=False)
    factory = event_loop_factory()
    assert factory is not None
    with asyncio.Runner(loop_factory=factory) as runner:
        assert isinstance(runner.get_loop(), uvloop.Loop)


def test_asyncio_on_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINIKAFKA_EVENT_LOOP", "asyncio")
    assert event_loop_factory() is None


def test_an_unknown_loop_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINIKAFKA_EVENT_LOOP", "tokio")
    with pytest.raises(
        BrokerStartupError, match="MINIKAFKA_EVENT_LOOP must be uvloop or asyncio, not 'tokio'"
    ):
        event_loop_factory()
