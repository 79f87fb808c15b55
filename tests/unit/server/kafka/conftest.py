"""``either_event_loop``: a test runs once on the standard library's event loop and once on
uvloop's, which the broker runs on (broker_server.event_loop_factory): uvloop's transports are
not asyncio's classes, and asyncio.run picks the loop from the policy set here."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
import uvloop


@pytest.fixture(params=["asyncio", "uvloop"])
def either_event_loop(request: pytest.FixtureRequest) -> Iterator[str]:
    policy = asyncio.get_event_loop_policy()
    if request.param == "uvloop":
        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    try:
        yield request.param
    finally:
        asyncio.set_event_loop_policy(policy)
