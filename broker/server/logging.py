"""The broker's log output: structlog events, one per line, for people and for machines.

    configure_logging()                     # before the config is read: no broker id yet
    configure_logging(broker_id=1)          # once it is known: every event carries it

Format: JSON lines (``{"event": "broker_started", "broker_id": 1, "level": "info",
"timestamp": "...", ...}``) when stderr is not a terminal or ``KAFKA_LOG_FORMAT=json``; a
readable console format on a terminal or with ``KAFKA_LOG_FORMAT=console``. The level comes
from ``KAFKA_LOG_LEVEL`` (default INFO). Libraries that log through the standard ``logging``
module (kazoo, grpc) are rendered the same way, at WARNING and above unless the level is
DEBUG.

Process-wide, like ``logging.basicConfig``: call it from the main thread at startup.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping, MutableMapping
from typing import Any, TextIO

import structlog
from structlog.typing import EventDict, Processor, WrappedLogger

__all__ = ["configure_logging", "use_json"]

_LIBRARY_LOGGERS = ("kazoo", "grpc", "asyncio")


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

    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_logger_name,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    if broker_id is not None:
        shared.append(_add_broker_id(broker_id))
    renderer: Processor
    if use_json(stream, environ):
        renderer = structlog.processors.JSONRenderer()
        shared.append(structlog.processors.format_exc_info)
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=stream.isatty())

    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=False,
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
