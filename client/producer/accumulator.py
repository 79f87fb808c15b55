"""The producer's accumulator: a queue of record batches per partition, bounded in memory.

``send`` appends a record to the last open batch of its partition (a new one when that is full).
The sender thread drains batches that are ready: full (``batch.size``), older than
``linger.ms``, or wanted at once by ``flush``/``close``. ``buffer.memory`` bounds the bytes
held: a send that would exceed it waits up to ``max.block.ms`` for the sender to free space,
then raises.

A partition with a request in flight is *muted* and not drained again until that request
completes, so batches of one partition reach the broker in order even after retries (Kafka does
the same for max.in.flight=1 and with idempotence). The sender drains one batch per partition
per request, as Kafka's RecordAccumulator.drain.

A batch the broker refuses as too large (MESSAGE_TOO_LARGE over max.message.bytes,
RECORD_LIST_TOO_LARGE over a small segment.bytes) with more than one record is split into
batches of at most batch.size and put back at the head of its partition, not counted as a
retry (Kafka's splitAndReenqueue). The pieces have no sequence numbers yet: the idempotent
sender gives them the refused batch's again when they are drained (``Sender._split``), or,
after a piece failed for good and the producer bumped its epoch, sequences from 0 of the new
epoch, as Kafka restarts the sequences of a partition's batches not yet written. From then on
that partition's open batch no longer grows past batch.size while it waits.

Thread-safe: every method takes the accumulator's lock; ``send`` threads and the sender thread
share it.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from minikafka.client.producer.future import FutureRecordMetadata, ProduceRequestResult
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode, KafkaError, error_for_code
from minikafka.proto.records import (
    NO_SEQUENCE,
    Compression,
    Header,
    RecordBatchBuilder,
    decode_batch,
)

__all__ = ["AppendedRun", "ProducerBatch", "RecordAccumulator"]


@dataclass(eq=False)
class ProducerBatch:
    """One batch being filled or in flight, with a future per record."""

    tp: TopicPartition
    builder: RecordBatchBuilder
    created: float
    result: ProduceRequestResult = field(default_factory=ProduceRequestResult)
    attempts: int = 0
    retry_at: float = 0.0
    # The error of the last failed attempt: what the batch fails with if delivery.timeout.ms
    # passes while it waits to be retried (NOT_ENOUGH_REPLICAS rather than "timed out").
    last_error: KafkaError | None = None
    closed: bool = False
    data: bytes = b""
    reserved: int = 0  # bytes of buffer.memory held
    full_at: int = 0  # builder size at which the sticky partitioner next moves on
    # Bytes past which the batch is full, and whether it may grow past them while its
    # partition waits (not once a batch of the partition was split, see the module docstring).
    limit: int = 0
    grows: bool = True

    @property
    def record_count(self) -> int:
        return self.builder.record_count

    def close(self) -> None:
        """No more records: the batch is about to be sent (its bytes are built by ``build``)."""
        self.closed = True

    def build(self) -> bytes:
        if not self.data:
            self.data = self.builder.build()
        return self.data

    def size(self) -> int:
        """Bytes on the wire once built (before: an upper bound, exact without compression)."""
        return len(self.data) if self.data else self.builder.size

    def complete(self, base_offset: int, log_append_time: int) -> None:
        self.result.set(base_offset, log_append_time, None)

    def fail(self, error: BaseException) -> None:
        self.result.set(-1, -1, error)


class AppendedRun(NamedTuple):
    """Records ``start`` up to ``stop`` of an ``append_many`` call, appended to one batch:
    the first at index ``first`` of the batch (its offset delta)."""

    result: ProduceRequestResult
    first: int
    start: int
    stop: int


def _estimate(
    keys: tuple[bytes | None, ...] | None,
    values: tuple[bytes | None, ...],
    headers: tuple[tuple[Header, ...] | None, ...] | None,
    i: int,
) -> int:
    return RecordBatchBuilder.estimate_record_size(
        None if keys is None else keys[i], values[i], (headers and headers[i]) or ()
    )


class RecordAccumulator:
    def __init__(
        self,
        *,
        batch_size: int,
        linger_ms: int,
        buffer_memory: int,
        compression: Compression,
        delivery_timeout_ms: int,
        max_request_size: int = 1_048_576,
    ) -> None:
        self._batch_size = batch_size
        self._max_batch_bytes = max(batch_size, max_request_size - 1024)  # room for the request
        self._linger_s = linger_ms / 1000
        self._buffer_memory = buffer_memory
        self._compression = compression
        self._delivery_timeout_s = delivery_timeout_ms / 1000
        self._lock = threading.Lock()
        self._space = threading.Condition(self._lock)  # buffer memory freed
        self.wakeup = threading.Event()  # something may be ready: the sender looks again
        self._queues: dict[TopicPartition, deque[ProducerBatch]] = {}
        self._muted: set[TopicPartition] = set()
        self._used = 0
        self._flushing = 0
        self._in_flight: set[ProducerBatch] = set()
        # Partitions a batch was split for: the size their batches stop at.
        self._split_limits: dict[TopicPartition, int] = {}
        self._closed = False

    # --- send side ------------------------------------------------------------------------

    def _open_queue(self, tp: TopicPartition) -> deque[ProducerBatch]:
        """``tp``'s queue, made on first use; raises once the producer is closed. Lock held."""
        if self._closed:
            raise error_for_code(ErrorCode.UNKNOWN_SERVER_ERROR, "the producer is closed")
        queue = self._queues.get(tp)
        if queue is None:
            queue = self._queues[tp] = deque()
        return queue

    def _new_batch(self, tp: TopicPartition, size: int, max_block_s: float) -> ProducerBatch:
        """A batch for ``tp`` with room for a record of ``size`` bytes, its memory reserved
        (waiting up to ``max_block_s``, the lock released meanwhile). Lock held."""
        reserve = max(self._batch_size, size + 61)
        self._reserve(reserve, max_block_s)
        limit = self._split_limits.get(tp)
        return ProducerBatch(
            tp,
            RecordBatchBuilder(compression=self._compression),
            time.monotonic(),
            reserved=reserve,
            full_at=limit or self._batch_size,
            limit=limit or self._batch_size,
            grows=limit is None,
        )

    def append(
        self,
        tp: TopicPartition,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: tuple[Header, ...],
        size: int,
        max_block_s: float,
    ) -> tuple[FutureRecordMetadata, bool]:
        """Add a record of ``size`` bytes (``RecordBatchBuilder.estimate_record_size``); True
        with its future when the partition's batch is full with it (the sticky partitioner
        moves on then)."""
        with self._lock:
            queue = self._open_queue(tp)
            batch = queue[-1] if queue else None
            if batch is not None and not batch.closed:
                builder = batch.builder
                before = builder.size
                # While the partition waits for its request in flight, its open batch may grow
                # up to max.request.size: it cannot leave sooner anyway, and one large batch
                # per request is what lets an idempotent producer (one batch per partition per
                # request) keep up.
                after = before + size
                if (
                    after > batch.limit
                    and (after > self._max_batch_bytes or tp not in self._muted or not batch.grows)
                    and builder.record_count > 0
                ):
                    batch = None  # full: a new one
                elif after > batch.reserved:
                    grow = max(self._batch_size, size)
                    if self._used + grow > self._buffer_memory:
                        batch = None  # no memory to grow now: a new batch, which waits for it
                    else:
                        self._used += grow
                        batch.reserved += grow
            else:
                batch = None
            if batch is None:
                batch = self._new_batch(tp, size, max_block_s)
                builder = batch.builder
                queue.append(batch)
                before = 0
            index = builder.append(timestamp, key, value, headers)
            future = FutureRecordMetadata(batch.result, index, tp.topic, tp.partition, timestamp)
            # Full: the record took the batch to its next mark, or did not fit in the open
            # batch and started this one; the sticky partitioner moves on then. The first mark
            # is batch.size; a batch that keeps growing while its partition waits (above) has
            # one every further batch.size bytes, so a partition gets about a batch's worth
            # each time the partitioner comes back to it (KIP-794), not every record until its
            # request returns. A batch behind a retried one (closed) did not start from an
            # overflow.
            started_next = index == 0 and len(queue) > 1 and not queue[-2].closed
            crossed = before < batch.full_at <= builder.size
            full = started_next or crossed
            if crossed:
                batch.full_at = builder.size + self._batch_size
            # Wake the sender only when a batch becomes sendable and its partition is not
            # waiting (``done`` wakes it then): each needless wake-up makes the sender take
            # this lock, and send() wait for it. A partition's first batch needs none: the
            # sender looks again every linger.ms.
            wake = (
                started_next or before < self._batch_size <= builder.size
            ) and tp not in self._muted
        if wake or self._linger_s == 0:
            self.wakeup.set()
        return future, full

    def append_many(
        self,
        tp: TopicPartition,
        timestamp: int,
        keys: tuple[bytes | None, ...] | None,
        values: tuple[bytes | None, ...],
        headers: tuple[tuple[Header, ...] | None, ...] | None,
        start: int,
        deadline: float,
        runs: list[AppendedRun],
    ) -> tuple[int, bool]:
        """``append`` for records ``start``, ``start + 1``, ... of the columns (bytes or None;
        ``scan_records`` checked them) with one timestamp, in as few C calls as the batches
        allow, into the same batches ``append`` would fill one record at a time. Stops when a
        record fills the partition's batch (as ``append`` says, for the sticky partitioner) or
        at the end; returns the index it stopped at and whether it stopped full. Each batch the
        records went into is added to ``runs``. Waits for buffer memory until ``deadline``
        (monotonic), with the lock released, as ``append``."""
        stop = len(values)
        i = start
        full = wake = False
        with self._lock:
            queue = self._open_queue(tp)
            muted = self._muted
            while i < stop and not full:
                batch = queue[-1] if queue and not queue[-1].closed else None
                if batch is not None:
                    builder = batch.builder
                    cap = self._max_batch_bytes if tp in muted and batch.grows else batch.limit
                    before = builder.size if builder.record_count else 0
                    first = builder.record_count
                    j = builder.append_many(
                        timestamp, keys, values, headers, i, stop, min(cap, batch.reserved),
                        batch.full_at,
                    )  # fmt: skip
                    if j > i:
                        runs.append(AppendedRun(batch.result, first, i, j))
                        i = j
                        if before < batch.full_at <= builder.size:
                            batch.full_at = builder.size + self._batch_size
                            full = True
                        wake |= before < self._batch_size <= builder.size
                    if full or i == stop:
                        break
                    # Record i did not fit: more memory for this batch, or a new one.
                    size = _estimate(keys, values, headers, i)
                    after = builder.size + size
                    if after <= cap:
                        grow = max(self._batch_size, size)
                        if self._used + grow <= self._buffer_memory:
                            self._used += grow
                            batch.reserved += grow
                            continue
                else:
                    size = _estimate(keys, values, headers, i)
                fresh = self._new_batch(tp, size, max(deadline - time.monotonic(), 0.0))
                queue.append(fresh)
                if len(queue) > 1 and not queue[-2].closed:
                    # Started by a record the open batch had no room for: that batch is full,
                    # and this one takes the record alone for now, as append.
                    builder = fresh.builder
                    key = None if keys is None else keys[i]
                    record_headers = (headers and headers[i]) or ()
                    builder.append(timestamp, key, values[i], record_headers)
                    runs.append(AppendedRun(fresh.result, 0, i, i + 1))
                    if 0 < fresh.full_at <= builder.size:
                        fresh.full_at = builder.size + self._batch_size
                    i += 1
                    full = wake = True
            wake = wake and tp not in muted
        if wake or self._linger_s == 0:
            self.wakeup.set()
        return i, full

    def _reserve(self, size: int, max_block_s: float) -> None:
        if size > self._buffer_memory:
            raise error_for_code(
                ErrorCode.MESSAGE_TOO_LARGE,
                f"record of {size} bytes is larger than buffer.memory ({self._buffer_memory})",
            )
        deadline = time.monotonic() + max_block_s
        while self._used + size > self._buffer_memory:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise error_for_code(
                    ErrorCode.REQUEST_TIMED_OUT,
                    f"failed to allocate {size} bytes within max.block.ms: buffer.memory "
                    f"({self._buffer_memory}) is full",
                )
            self.wakeup.set()
            self._space.wait(remaining)
        self._used += size

    # --- sender side ----------------------------------------------------------------------

    def ready_partitions(self, now: float) -> tuple[list[TopicPartition], float]:
        """Partitions with a batch to send now, and how long until the next one may be."""
        ready: list[TopicPartition] = []
        next_check = self._linger_s if self._linger_s > 0 else 0.1
        with self._lock:
            for tp, queue in self._queues.items():
                if not queue or tp in self._muted:
                    continue
                first = queue[0]
                if first.retry_at > now:
                    next_check = min(next_check, first.retry_at - now)
                    continue
                sendable = (
                    first.closed
                    or len(queue) > 1
                    or first.builder.size >= self._batch_size
                    or self._flushing > 0
                    or self._closed
                    or now - first.created >= self._linger_s
                )
                if sendable:
                    ready.append(tp)
                else:
                    next_check = min(next_check, first.created + self._linger_s - now)
        return ready, max(next_check, 0.0)

    def drain(
        self,
        tp: TopicPartition,
        max_bytes: int,
        *,
        max_batches: int | None = None,
        fit: bool = False,
        prepare: Callable[[ProducerBatch], None] | None = None,
    ) -> list[ProducerBatch]:
        """Close and take the partition's sendable batches (up to ``max_bytes`` and
        ``max_batches``), built; mute it. The first is taken whatever its size unless ``fit``
        (it would join a request that holds batches already). ``prepare`` sees each batch
        without a sequence number (the idempotent producer stamps producer id, epoch and
        sequence there, as Kafka's drain does): a retried batch keeps the one it was first
        sent with."""
        taken: list[ProducerBatch] = []
        total = 0
        with self._lock:
            queue = self._queues.get(tp)
            while queue and (max_batches is None or len(taken) < max_batches):
                batch = queue[0]
                size = batch.size()
                if (taken or fit) and total + size > max_bytes:
                    break
                if prepare is not None and batch.builder.base_sequence == NO_SEQUENCE:
                    prepare(batch)  # never sent: a new batch, or a piece of a split one
                batch.close()
                queue.popleft()
                taken.append(batch)
                total += size
            if taken:
                self._muted.add(tp)
                self._in_flight.update(taken)
        # Built outside the lock: joining and checksumming up to a megabyte would stall send().
        for batch in taken:
            batch.build()
        return taken

    def expire(self, now: float) -> list[ProducerBatch]:
        """Batches waiting longer than ``delivery.timeout.ms``: removed, for the caller to fail."""
        expired: list[ProducerBatch] = []
        with self._lock:
            for queue in self._queues.values():
                while queue and now - queue[0].created > self._delivery_timeout_s:
                    expired.append(queue.popleft())
            for batch in expired:
                self._free(batch)
        return expired

    def done(self, batches: Iterable[ProducerBatch]) -> None:
        """The batches are completed or failed: free their memory and unmute their partition."""
        with self._lock:
            for batch in batches:
                self._in_flight.discard(batch)
                self._muted.discard(batch.tp)
                self._free(batch)
        self.wakeup.set()

    def requeue(self, batches: list[ProducerBatch], retry_at: float) -> None:
        """Put batches back at the head of their partitions' queues, in order, for a retry."""
        with self._lock:
            for batch in reversed(batches):
                batch.attempts += 1
                batch.retry_at = retry_at
                self._queues.setdefault(batch.tp, deque()).appendleft(batch)
                self._in_flight.discard(batch)
                self._muted.discard(batch.tp)
        self.wakeup.set()

    def split_and_requeue(self, batch: ProducerBatch) -> list[ProducerBatch]:
        """Kafka's splitAndReenqueue for ``batch`` (in flight, refused as too large, more than
        one record): its records in batches of at most batch.size and at most half its own
        size (a larger record alone), at the head of its partition, ready at once, with the
        attempts ``batch`` had and no sequence numbers (see the module docstring). Half, so
        that a batch.size the leader refuses too still comes down to what it takes (Kafka's
        split to batch.size alone would send the same batch again). The partition's batches
        stop at that size from then on. Each record's future follows its record
        (``ProduceRequestResult.split``)."""
        data = batch.build()
        target = min(self._batch_size, len(data) // 2)
        _, records = decode_batch(data, verify_crc=False)
        pieces: list[ProducerBatch] = []
        starts: list[int] = []
        builder: RecordBatchBuilder | None = None
        for index, record in enumerate(records):
            size = RecordBatchBuilder.estimate_record_size(record.key, record.value, record.headers)
            if builder is None or (builder.record_count > 0 and builder.size + size > target):
                builder = RecordBatchBuilder(compression=batch.builder.compression)
                piece = ProducerBatch(
                    batch.tp,
                    builder,
                    batch.created,
                    attempts=batch.attempts,
                    last_error=batch.last_error,
                    closed=True,  # takes no more records, and is ready at once
                )
                pieces.append(piece)
                starts.append(index)
            builder.append(record.timestamp, record.key, record.value, record.headers)
        with self._lock:
            # The memory the batch held goes on with its first piece.
            pieces[0].reserved, batch.reserved = batch.reserved, 0
            self._in_flight.discard(batch)
            self._muted.discard(batch.tp)
            self._split_limits[batch.tp] = min(target, self._split_limits.get(batch.tp, target))
            self._queues.setdefault(batch.tp, deque()).extendleft(reversed(pieces))
        batch.result.split(
            [(start, piece.result) for start, piece in zip(starts, pieces, strict=True)]
        )
        self.wakeup.set()
        return pieces

    def expired_in_flight(self, batch: ProducerBatch, now: float) -> bool:
        return now - batch.created > self._delivery_timeout_s

    def _free(self, batch: ProducerBatch) -> None:
        self._used -= batch.reserved
        batch.reserved = 0
        self._space.notify_all()

    # --- flush and close ------------------------------------------------------------------

    def begin_flush(self) -> None:
        with self._lock:
            self._flushing += 1
        self.wakeup.set()

    def end_flush(self) -> None:
        with self._lock:
            self._flushing -= 1

    def pending(self) -> list[ProduceRequestResult]:
        """The results of every batch queued or in flight now."""
        with self._lock:
            batches = [b for q in self._queues.values() for b in q] + list(self._in_flight)
        return [b.result for b in batches]

    def has_pending(self) -> bool:
        with self._lock:
            return bool(self._in_flight) or any(self._queues.values())

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self.wakeup.set()

    def abort_all(self, error: KafkaError) -> list[ProducerBatch]:
        """Fail every queued batch (not those in flight) with ``error``; returns them."""
        with self._lock:
            batches = [b for q in self._queues.values() for b in q]
            for queue in self._queues.values():
                queue.clear()
            for batch in batches:
                self._free(batch)
        for batch in batches:
            batch.fail(error)
        return batches
