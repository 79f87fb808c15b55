"""broker.server.logging: JSON lines off a terminal, the broker id on every event."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
import structlog

from minikafka.broker.server.logging import configure_logging, use_json


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    structlog.reset_defaults()


def test_format_follows_the_terminal_unless_kafka_log_format_says() -> None:
    assert use_json(io.StringIO(), {})
    assert not use_json(Terminal(), {})
    assert use_json(Terminal(), {"KAFKA_LOG_FORMAT": "json"})
    assert not use_json(io.StringIO(), {"KAFKA_LOG_FORMAT": "console"})


def test_json_lines_carry_the_broker_id_also_for_stdlib_loggers() -> None:
    out = io.StringIO()
    configure_logging(broker_id=3, stream=out, environ={})
    structlog.get_logger("broker.server").info("broker_started", listeners=["PLAINTEXT://h:1"])
    logging.getLogger("kazoo.client").warning("Connection dropped")
    logging.getLogger("kazoo.client").info("too chatty to show")

    events = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [e["event"] for e in events] == ["broker_started", "Connection dropped"]
    assert all(e["broker_id"] == 3 for e in events)
    assert events[0]["listeners"] == ["PLAINTEXT://h:1"]
    assert events[0]["level"] == "info" and events[1]["level"] == "warning"
    assert events[1]["logger"] == "kazoo.client"


def test_level_from_the_environment() -> None:
    out = io.StringIO()
    configure_logging(stream=out, environ={"KAFKA_LOG_LEVEL": "warning"})
    structlog.get_logger("x").info("hidden")
    structlog.get_logger("x").warning("shown")
    assert [json.loads(line)["event"] for line in out.getvalue().splitlines()] == ["shown"]
