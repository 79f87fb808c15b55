"""An asyncio event loop on a virtual clock, for tests of time-driven loops (back-off, periodic
work) that must not depend on how busy the machine is.

The clock moves only when the loop has nothing ready to run: where a real loop would block in
``select`` until its next timer, this one polls the selector without blocking and, finding
nothing, jumps its clock to that timer. ``asyncio.sleep(0.2)`` then takes no real time, and
whatever the code under test did in those 0.2 s of loop time is exactly what it does on any
machine. Only for code whose every wait is on this loop: a wait on a thread or a socket is
skipped over by the jumps (a real wait happens only when no timer is pending at all).

    run_virtual(scenario())  # in place of asyncio.run(scenario())
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class _JumpingSelector(selectors.DefaultSelector):
    """Polls instead of blocking; a timeout that found nothing moves the loop's clock."""

    def __init__(self) -> None:
        super().__init__()
        self.loop: VirtualTimeLoop | None = None

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is None:  # no timer pending: only another thread can wake the loop
            return super().select(None)
        events = super().select(0)
        if not events and timeout > 0 and self.loop is not None:
            self.loop.advance(timeout)
        return events


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """A selector event loop whose ``time()`` is the virtual clock (module docstring)."""

    def __init__(self) -> None:
        selector = _JumpingSelector()
        super().__init__(selector)
        selector.loop = self
        self._now = 0.0

    def time(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        self._now += seconds


def run_virtual(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` on a VirtualTimeLoop."""
    with asyncio.Runner(loop_factory=VirtualTimeLoop) as runner:
        return runner.run(main)
