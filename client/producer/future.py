"""What ``Producer.send`` returns: a future of the record's ``RecordMetadata``.

    future = producer.send("orders", b"v")
    metadata = future.result(timeout=10)   # RecordMetadata(topic, partition, offset, timestamp)
    future.add_callback(lambda md: ...)    # kafka-python's spelling, on success only
    future.add_errback(lambda exc: ...)    # ... and on failure only

As in Kafka's Java client, the records of one batch share one ``ProduceRequestResult``, which is
settled once, when the broker answers for the batch. Each record's future only holds its index
in the batch, so ``send`` does not pay for a lock and an event per record. A batch the broker
refused as too large is split (Kafka's splitAndReenqueue): its result then names the results
of the pieces (``split``), each record's future reads its own piece's (``resolve``), and the
batch's result settles once every piece has: its records settle together, so callbacks still run
in send order within a partition.

``Producer.send_batch`` returns one ``SendBatchFuture`` for all its records: the runs of them
that went into one batch each (``runs``), and per record on demand a ``FutureRecordMetadata``
(``future[i]``), its metadata (``result``) or its error (``exceptions``).

Callbacks run on the producer's sender thread, or at once when the future is already done.
Keep them short.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

__all__ = [
    "FutureRecordMetadata",
    "ProduceRequestResult",
    "RecordMetadata",
    "SendBatchFuture",
    "SentRun",
]


class RecordMetadata(NamedTuple):
    topic: str
    partition: int
    offset: int  # -1 with acks=0: the broker does not say
    timestamp: int  # the record's CreateTime (or the broker's LogAppendTime)


class ProduceRequestResult:
    """The outcome of one batch: its base offset, or the error it failed with. Thread-safe."""

    __slots__ = (
        "_callbacks",
        "_event",
        "_lock",
        "_pieces",
        "base_offset",
        "error",
        "log_append_time",
    )

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []
        # After a split: (index of the piece's first record, the piece's result), in order.
        self._pieces: tuple[tuple[int, ProduceRequestResult], ...] = ()
        self.base_offset = -1
        self.log_append_time = -1
        self.error: BaseException | None = None

    def done(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._event.wait(timeout)

    def set(self, base_offset: int, log_append_time: int, error: BaseException | None) -> None:
        with self._lock:
            if self._event.is_set():
                return
            self.base_offset = base_offset
            self.log_append_time = log_append_time
            self.error = error
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def on_done(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return
        callback()

    def split(self, pieces: Sequence[tuple[int, ProduceRequestResult]]) -> None:
        """The batch goes on as ``pieces`` (each with the index of its first record): this
        result settles when all of them have, failed with the first piece's error if any
        failed (base offset -1: the records are not contiguous any more)."""
        self._pieces = tuple(pieces)
        remaining = [len(self._pieces)]
        count = threading.Lock()

        def piece_done() -> None:
            with count:
                remaining[0] -= 1
                if remaining[0]:
                    return
            errors = (r.error for _, r in self._pieces if r.error is not None)
            self.set(-1, -1, next(errors, None))

        for _, piece in self._pieces:
            piece.on_done(piece_done)

    def resolve(self, index: int) -> tuple[ProduceRequestResult, int]:
        """The result that settles record ``index`` of this batch, and the record's index
        there: this one and ``index``, unless the batch was split."""
        result = self
        while result._pieces:
            start, piece = next(p for p in reversed(result._pieces) if p[0] <= index)
            result, index = piece, index - start
        return result, index


class FutureRecordMetadata:
    """One record's slice of its batch's result, with the ``concurrent.futures`` methods."""

    # batch_result: the result this record shares with the rest of its batch (one callback
    # per batch instead of one per record: how ``perf-produce`` times records cheaply).
    __slots__ = ("_index", "_partition", "_timestamp", "_topic", "batch_result")

    def __init__(
        self, result: ProduceRequestResult, index: int, topic: str, partition: int, timestamp: int
    ) -> None:
        self.batch_result = result
        self._index = index
        self._topic = topic
        self._partition = partition
        self._timestamp = timestamp

    def done(self) -> bool:
        return self.batch_result.done()

    def result(self, timeout: float | None = None) -> RecordMetadata:
        if not self.batch_result.wait(timeout):
            raise TimeoutError(f"no answer for the record within {timeout} s")
        result, index = self.batch_result.resolve(self._index)
        if result.error is not None:
            raise result.error
        return self._metadata(result, index)

    get = result

    def exception(self, timeout: float | None = None) -> BaseException | None:
        if not self.batch_result.wait(timeout):
            raise TimeoutError(f"no answer for the record within {timeout} s")
        return self.batch_result.resolve(self._index)[0].error

    def _metadata(self, result: ProduceRequestResult, index: int) -> RecordMetadata:
        base = result.base_offset
        append_time = result.log_append_time
        return RecordMetadata(
            self._topic,
            self._partition,
            -1 if base < 0 else base + index,
            append_time if append_time >= 0 else self._timestamp,
        )

    def add_done_callback(self, fn: Callable[[FutureRecordMetadata], Any]) -> None:
        self.batch_result.on_done(lambda: fn(self))

    def add_callback(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        def call() -> None:
            result, index = self.batch_result.resolve(self._index)
            if result.error is None:
                fn(*args, self._metadata(result, index), **kwargs)

        self.batch_result.on_done(call)

    def add_errback(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        def call() -> None:
            error = self.batch_result.resolve(self._index)[0].error
            if error is not None:
                fn(*args, error, **kwargs)

        self.batch_result.on_done(call)


class SentRun(NamedTuple):
    """Records of one ``send_batch`` call that went into one batch: ``positions`` are their
    indices in the call, the first at index ``first`` of the batch (its offset delta)."""

    result: ProduceRequestResult
    first: int
    positions: range | Sequence[int]
    partition: int


class SentRecord(NamedTuple):
    run: SentRun
    at: int  # its place in the run


class SendBatchFuture:
    """The futures of one ``send_batch`` call's records, in the order given, kept as runs of
    records that share a batch (``runs``, in the order they were appended) so the call costs
    no object per record. Thread-safe."""

    __slots__ = ("_count", "_located", "_timestamp", "_topic", "runs")

    def __init__(self, topic: str, timestamp: int, runs: Sequence[SentRun]) -> None:
        self._topic = topic
        self._timestamp = timestamp
        self.runs = tuple(runs)
        self._count = sum(len(run.positions) for run in self.runs)
        self._located: list[SentRecord] | None = None

    def __len__(self) -> int:
        return self._count

    def _locate(self) -> list[SentRecord]:
        located = self._located
        if located is None:
            end = max((max(run.positions) + 1 for run in self.runs if run.positions), default=0)
            slots: list[SentRecord | None] = [None] * end
            for run in self.runs:
                for k, position in enumerate(run.positions):
                    slots[position] = SentRecord(run, k)
            located = self._located = [s for s in slots if s is not None]
        return located

    def __getitem__(self, position: int) -> FutureRecordMetadata:
        """The future of the record at ``position`` in the call (of the records queued, in
        the order given, when the call raised after queueing some: ``queued`` on its
        error)."""
        run, k = self._locate()[position]
        return FutureRecordMetadata(
            run.result, run.first + k, self._topic, run.partition, self._timestamp
        )

    def __iter__(self) -> Iterator[FutureRecordMetadata]:
        for position in range(self._count):
            yield self[position]

    def done(self) -> bool:
        return all(run.result.done() for run in self.runs)

    def wait(self, timeout: float | None = None) -> bool:
        """Whether every record was answered within ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for run in self.runs:
            remaining = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            if not run.result.wait(remaining):
                return False
        return True

    def result(self, timeout: float | None = None) -> list[RecordMetadata]:
        """Each record's metadata, in the order given; raises the first failed record's error
        (``exceptions`` has each record's)."""
        if not self.wait(timeout):
            raise TimeoutError(f"no answer for every record within {timeout} s")
        return [future.result(0) for future in self]

    get = result

    def exceptions(self, timeout: float | None = None) -> list[BaseException | None]:
        """Each record's error (None: written), in the order given."""
        if not self.wait(timeout):
            raise TimeoutError(f"no answer for every record within {timeout} s")
        return [future.exception(0) for future in self]

    def add_done_callback(self, fn: Callable[[SendBatchFuture], Any]) -> None:
        """``fn(self)`` once every record is answered (on the sender thread, or now)."""
        remaining = [len(self.runs)]
        lock = threading.Lock()

        def run_done() -> None:
            with lock:
                remaining[0] -= 1
                if remaining[0]:
                    return
            fn(self)

        if not self.runs:
            fn(self)
        for run in self.runs:
            run.result.on_done(run_done)
