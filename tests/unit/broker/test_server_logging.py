"""broker.server.logging: JSON lines off a terminal (event first), short console lines on one,
the broker id on every event."""

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


def test_json_lines_start_with_the_event() -> None:
    out = io.StringIO()
    configure_logging(broker_id=1, stream=out, environ={"KAFKA_LOG_FORMAT": "json"})
    structlog.get_logger("controller").bind(controller_epoch=4).warning(
        "broker_failed", broker_id=2
    )
    line = out.getvalue().splitlines()[0]
    assert line.startswith('{"event": "broker_failed", "level": "warning", "timestamp": ')
    assert json.loads(line)["broker_id"] == 2  # the event's own broker id wins
    assert json.loads(line)["controller_epoch"] == 4


def test_console_lines_are_short_and_event_first() -> None:
    out = io.StringIO()
    configure_logging(broker_id=1, stream=out, environ={"KAFKA_LOG_FORMAT": "console"})
    structlog.get_logger("minikafka.broker.replication.replica_manager").info(
        "isr_shrunk", topic="orders", partition=0, old_isr=[1, 2, 3], new_isr=[1, 3]
    )
    try:
        raise ValueError("boom")
    except ValueError:
        structlog.get_logger("x").exception("handler_failed")
    lines = out.getvalue().splitlines()
    time, level = lines[0].split()[:2]
    assert len(time) == len("02:09:19") and level == "[info"
    assert lines[0].split("]", 1)[1].split() == [
        "isr_shrunk", "topic=orders", "partition=0", "old_isr=[1,", "2,", "3]", "new_isr=[1,",
        "3]", "broker_id=1",
    ]  # fmt: skip
    assert "replica_manager" not in lines[0]  # no logger name
    assert "\x1b" not in out.getvalue()  # no colours off a terminal
    assert lines[-1] == "ValueError: boom"  # a plain traceback, no locals


def test_loggers_are_cached_only_once_the_broker_id_is_known() -> None:
    out = io.StringIO()
    log = structlog.get_logger("minikafka.broker.config")
    configure_logging(stream=out, environ={"KAFKA_LOG_FORMAT": "json"})
    log.info("before_the_config")  # used before the broker id is known: not cached then
    configure_logging(broker_id=4, stream=out, environ={"KAFKA_LOG_FORMAT": "json"})
    log.info("after_the_config")
    log.info("again")
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [e["event"] for e in events] == ["before_the_config", "after_the_config", "again"]
    assert "broker_id" not in events[0]
    assert events[1]["broker_id"] == events[2]["broker_id"] == 4
    assert structlog.get_config()["cache_logger_on_first_use"] is True
