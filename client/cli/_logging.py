"""Client logs of the console and perf tools: warnings and errors only, on stderr.

Kafka's tools log at WARN to stderr (tools-log4j.properties), so stdout carries nothing but the
tool's own output and can be piped (``minikafka consume ... | wc -l``).
"""

from __future__ import annotations

import logging
import sys

import structlog

__all__ = ["configure_tool_logging"]


def configure_tool_logging() -> None:
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="%Y-%m-%d %H:%M:%S"),
            structlog.dev.ConsoleRenderer(colors=False),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=False,
    )
