"""The client's log events, through Python's ``logging``: silent unless the application asks.

    _log = event_logger(__name__)
    _log.info("group.joined", group_id="billing", generation_id=3)
    # logger "minikafka.client.consumer.coordinator", INFO: "group.joined group_id=billing
    # generation_id=3"

A library must not decide where its logs go: the events are records of the standard
``logging`` module under ``minikafka.client.*``, and the package's logger has a
``NullHandler`` (client/__init__.py), so nothing is printed until the application configures
logging (``logging.basicConfig(level=logging.INFO)``, or a handler on ``minikafka.client``).
The message is the event name followed by its fields as ``key=value``, the shape of the
broker's structlog events; it is only formatted when a handler will see it.

Thread-safe, as ``logging`` is.
"""

from __future__ import annotations

import logging

__all__ = ["EventLogger", "event_logger"]


class EventLogger:
    """A ``logging.Logger`` that takes an event name and keyword fields."""

    __slots__ = ("logger",)

    def __init__(self, logger: logging.Logger) -> None:
        self.logger = logger

    def debug(self, event: str, **fields: object) -> None:
        self._log(logging.DEBUG, event, fields)

    def info(self, event: str, **fields: object) -> None:
        self._log(logging.INFO, event, fields)

    def warning(self, event: str, **fields: object) -> None:
        self._log(logging.WARNING, event, fields)

    def exception(self, event: str, **fields: object) -> None:
        """ERROR with the exception being handled (call it from an ``except`` block)."""
        self._log(logging.ERROR, event, fields, exc_info=True)

    def _log(
        self, level: int, event: str, fields: dict[str, object], *, exc_info: bool = False
    ) -> None:
        if not self.logger.isEnabledFor(level):
            return
        message = " ".join([event, *(f"{key}={value}" for key, value in fields.items())])
        # stacklevel: the record names the caller of info()/debug(), not this module
        self.logger.log(level, message, exc_info=exc_info, stacklevel=3)


def event_logger(name: str) -> EventLogger:
    return EventLogger(logging.getLogger(name))
