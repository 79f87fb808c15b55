"""What ``Producer.send`` returns: a future of the record's ``RecordMetadata``.

    future = producer.send("orders", b"v")
    metadata = future.result(timeout=10)   # RecordMetadata(topic, partition, offset, timestamp)
    future.add_callback(lambda md: ...)    # kafka-python's spelling, on success only
    future.add_errback(lambda exc: ...)    # ... and on failure only

Callbacks run on the producer's sender thread (or at once when the future is already done):
keep them short.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, NamedTuple

__all__ = ["FutureRecordMetadata", "RecordMetadata"]


class RecordMetadata(NamedTuple):
    topic: str
    partition: int
    offset: int  # -1 with acks=0: the broker does not say
    timestamp: int  # the record's CreateTime (or the broker's LogAppendTime)


class FutureRecordMetadata(Future[RecordMetadata]):
    """A ``concurrent.futures.Future`` with kafka-python's ``get`` and callbacks."""

    def get(self, timeout: float | None = None) -> RecordMetadata:
        return self.result(timeout)

    def add_callback(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        def call(future: Future[RecordMetadata]) -> None:
            if future.exception() is None:
                fn(*args, future.result(), **kwargs)

        self.add_done_callback(call)

    def add_errback(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        def call(future: Future[RecordMetadata]) -> None:
            exc = future.exception()
            if exc is not None:
                fn(*args, exc, **kwargs)

        self.add_done_callback(call)
