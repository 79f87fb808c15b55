"""Client logs of the console and perf tools: warnings and errors only, on stderr.

Kafka's tools log at WARN to stderr (tools-log4j.properties), so stdout carries nothing but the
tool's own output and can be piped (``minikafka consume ... | wc -l``). The client library only
logs through Python's ``logging`` (client/_log.py); a tool, being the application, says where
those records go, in the shape of Kafka's tool log lines: ``[time] LEVEL message (logger)``.
"""

from __future__ import annotations

import logging
import sys

__all__ = ["configure_tool_logging"]


def configure_tool_logging() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("[%(asctime)s] %(levelname)s %(message)s (%(name)s)"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
