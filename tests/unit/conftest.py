"""Unit tests share one process with the integration and Spark tests: close every Log a test
opened, so that their descriptors do not pile up. (Past 1024 open descriptors, libraries that
still use select(), py4j's callback server among them, fail on the new ones.)"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from minikafka.broker.storage.log import Log


@pytest.fixture(autouse=True)
def _close_opened_logs(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    opened: list[Log] = []
    original = Log.__init__

    def tracking(self: Log, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        opened.append(self)

    monkeypatch.setattr(Log, "__init__", tracking)
    yield
    for log in opened:
        with contextlib.suppress(Exception):
            log.close()
