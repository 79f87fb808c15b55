"""The broker's log output: structlog events, one per line, for people and for machines.

    configure_logging()                     # before the config is read: no broker id yet
    configure_logging(broker_id=1)          # once it is known: every event carries it

Format: JSON lines, ``event`` first (``{"event": "broker_started", "broker_id": 1, "level":
"info", "timestamp": "...", ...}``), when stderr is not a terminal or ``KAFKA_LOG_FORMAT=json``;
on a terminal or with ``KAFKA_LOG_FORMAT=console`` (docker-compose.yml sets it), one short
line per event for a person, the event first after the time and level::

    02:09:19 [warning  ] broker_failed            broker_id=1 controller_epoch=2 was_controller=True

The level comes from ``KAFKA_LOG_LEVEL`` (default INFO). Libraries that log through the
standard ``logging`` module (kazoo, grpc) are rendered the same way, at WARNING and above
unless the level is DEBUG.

Process-wide, like ``logging.basicConfig``: call it from the main thread at startup. The call
with the broker id is the last: structlog's loggers are cached on first use from then on.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
from collections.abc import Mapping, MutableMapping
from typing import Any, TextIO

import structlog
from structlog.typing import EventDict, Processor, WrappedLogger

__all__ = ["configure_logging", "use_json"]

_LIBRARY_LOGGERS = ("kazoo", "grpc", "asyncio")
_HEAD_KEYS = ("event", "level", "timestamp", "broker_id", "logger")


def use_json(stream: TextIO, environ: Mapping[str, str]) -> bool:
    """JSON unless the stream is a terminal; ``KAFKA_LOG_FORMAT`` (json|console) decides first."""
    wanted = environ.get("KAFKA_LOG_FORMAT", "").strip().lower()
    if wanted in ("json", "console"):
        return wanted == "json"
    return not stream.isatty()


def _add_broker_id(broker_id: int) -> Processor:
    def add(_: WrappedLogger, __: str, event: MutableMapping[str, Any]) -> EventDict:
        event.setdefault("broker_id", broker_id)
        return event

    return add


def _event_first(_: WrappedLogger, __: str, event: MutableMapping[str, Any]) -> EventDict:
    """JSON keys in reading order: the event, then what structlog adds, then the details."""
    head = {key: event[key] for key in _HEAD_KEYS if key in event}
    return {**head, **{k: v for k, v in event.items() if k not in head}}


def _console_renderer(colors: bool) -> Processor:
    """Time, level, event, then the details as key=value; the logger name is left out."""
    columns = [
        structlog.dev.Column(
            "timestamp",
            structlog.dev.KeyValueColumnFormatter(
                key_style=None, value_style="", reset_style="", value_repr=str
            ),
        ),
        structlog.dev.Column(
            "level",
            structlog.dev.LogLevelColumnFormatter(
                structlog.dev.ConsoleRenderer.get_default_level_styles(colors),
                reset_style=structlog.dev.RESET_ALL if colors else "",
            ),
        ),
        structlog.dev.Column(
            "event",
            structlog.dev.KeyValueColumnFormatter(
                key_style=None,
                value_style=structlog.dev.BRIGHT if colors else "",
                reset_style=structlog.dev.RESET_ALL if colors else "",
                value_repr=str,
                width=24,
            ),
        ),
        structlog.dev.Column(
            "",
            structlog.dev.KeyValueColumnFormatter(
                key_style=structlog.dev.CYAN if colors else "",
                value_style=structlog.dev.MAGENTA if colors else "",
                reset_style=structlog.dev.RESET_ALL if colors else "",
                value_repr=str,
            ),
        ),
    ]
    # Tracebacks without the locals: a person wants the failing line, not every variable.
    formatter: structlog.typing.ExceptionRenderer = structlog.dev.plain_traceback
    if colors and importlib.util.find_spec("rich") is not None:
        formatter = structlog.dev.RichTracebackFormatter(show_locals=False)
    return structlog.dev.ConsoleRenderer(
        columns=columns, sort_keys=False, exception_formatter=formatter
    )


def configure_logging(
    broker_id: int | None = None,
    *,
    stream: TextIO | None = None,
    environ: Mapping[str, str] | None = None,
) -> None:
    """Route structlog and the standard ``logging`` module to ``stream`` (stderr)."""
    stream = stream or sys.stderr
    environ = os.environ if environ is None else environ
    level_name = environ.get("KAFKA_LOG_LEVEL", "INFO").strip().upper() or "INFO"
    level = logging.getLevelNamesMapping().get(level_name, logging.INFO)

    as_json = use_json(stream, environ)
    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
    ]
    renderer: Processor
    if as_json:
        shared += [
            structlog.stdlib.add_logger_name,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
        ]
        if broker_id is not None:
            shared.append(_add_broker_id(broker_id))
        shared += [structlog.processors.format_exc_info, _event_first]
        renderer = structlog.processors.JSONRenderer()
    else:
        # One short line: the time of day (UTC, as the JSON), no logger name; the broker id
        # stays (several brokers may write to one terminal), after the event's own fields.
        shared.append(structlog.processors.TimeStamper(fmt="%H:%M:%S", utc=True))
        if broker_id is not None:
            shared.append(_add_broker_id(broker_id))
        renderer = _console_renderer(colors=stream.isatty())

    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.stdlib.LoggerFactory(),
        # Once the broker id is known this is the final configuration, and each logger is
        # assembled once, on first use, rather than on every call (structlog's advice: a
        # debug call that logs nothing then costs little, for thousands of partitions). Not
        # before: the first call's loggers would keep a configuration without the broker id.
        cache_logger_on_first_use=broker_id is not None,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
    )
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for name in _LIBRARY_LOGGERS:
        logging.getLogger(name).setLevel(level if level <= logging.DEBUG else logging.WARNING)
