"""RecordAccumulator.append says when a record fills its partition's batch: the sticky
partitioner moves on then; a batch refused as too large is split (Kafka's splitAndReenqueue)."""

from __future__ import annotations

import itertools
from itertools import pairwise

from minikafka.client.producer.accumulator import ProducerBatch, RecordAccumulator
from minikafka.client.producer.future import FutureRecordMetadata
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode, KafkaError, error_for_code
from minikafka.proto.records import NO_SEQUENCE, Compression, RecordBatchBuilder, decode_batch

TP = TopicPartition("t", 0)


def accumulator(batch_size: int) -> RecordAccumulator:
    return RecordAccumulator(
        batch_size=batch_size,
        linger_ms=5,
        buffer_memory=1 << 20,
        compression=Compression.NONE,
        delivery_timeout_ms=120_000,
    )


def append(acc: RecordAccumulator, value: bytes) -> bool:
    size = RecordBatchBuilder.estimate_record_size(None, value, ())
    _, full = acc.append(TP, 1_700_000_000_000, None, value, (), size, 1.0)
    return full


def test_append_says_when_the_batch_reaches_batch_size() -> None:
    acc = accumulator(batch_size=1000)
    value = bytes(90)  # about 100 bytes a record on the wire
    flags = [append(acc, value) for _ in range(12)]
    filled = flags.index(True)
    assert flags[filled + 1 :] == [False] * (11 - filled)  # the next batch is not full yet
    ready, _ = acc.ready_partitions(now=0.0)
    assert ready == [TP]  # full: sendable before linger.ms
    first, second = (b.record_count for b in acc.drain(TP, 1 << 20))
    assert first + second == 12
    # The flagged record took the first batch to 1000 bytes, or did not fit and started the
    # second: either way, the first batch is within one record of 1000 bytes.
    assert first in (filled, filled + 1)
    assert RecordBatchBuilder.estimate_record_size(None, value, ()) * first + 61 >= 1000 - 100


def test_a_record_that_does_not_fit_starts_a_new_batch_and_says_full() -> None:
    acc = accumulator(batch_size=1000)
    assert append(acc, bytes(700)) is False
    assert append(acc, bytes(700)) is True  # did not fit: the first batch is full as it is
    assert [b.record_count for b in acc.drain(TP, 1 << 20)] == [1, 1]


def test_a_waiting_partition_grows_its_batch_and_says_full_every_batch_size_bytes() -> None:
    acc = accumulator(batch_size=1000)
    for _ in range(4):
        append(acc, bytes(90))
    (in_flight,) = acc.drain(TP, 1 << 20)  # the partition is muted: its request is in flight
    flags = [append(acc, bytes(90)) for _ in range(40)]
    # Past batch.size the batch keeps growing (it cannot leave before the request in flight
    # comes back), and says full again at every further 1000 bytes or so: a sticky
    # partitioner coming back to it puts about a batch's worth there, not everything.
    full = [n for n, flag in enumerate(flags) if flag]
    assert len(full) == 3  # about 3,900 bytes in all
    assert all(9 <= b - a <= 11 for a, b in pairwise(full))
    acc.done([in_flight])
    assert [b.record_count for b in acc.drain(TP, 1 << 20)] == [40]


def test_a_batch_started_by_an_overflow_is_full_at_batch_size_not_twice_that() -> None:
    acc = accumulator(batch_size=1000)
    append(acc, bytes(700))
    assert append(acc, bytes(700)) is True  # did not fit: started the second batch
    (in_flight,) = acc.drain(TP, 1 << 20, max_batches=1)  # the partition waits for the first
    # The second batch grows while it waits, and is full where it passes 1000 bytes.
    flags = [append(acc, bytes(90)) for _ in range(5)]
    assert flags.index(True) in (1, 2, 3)  # 770 bytes and about 100 a record
    acc.done([in_flight])


def test_a_batch_behind_a_retried_one_is_not_full_from_its_first_record() -> None:
    acc = accumulator(batch_size=1000)
    append(acc, bytes(90))
    batches = acc.drain(TP, 1 << 20)
    acc.requeue(batches, retry_at=0.0)  # the request failed: the batch waits at the head
    assert append(acc, bytes(90)) is False  # a new batch behind it, not an overflow
    assert [b.record_count for b in acc.drain(TP, 1 << 20)] == [1, 1]


def test_a_batch_started_by_a_record_over_batch_size_has_a_next_mark() -> None:
    acc = accumulator(batch_size=1000)
    append(acc, bytes(500))
    assert append(acc, bytes(1_200)) is True  # started a batch, already past batch.size
    (in_flight,) = acc.drain(TP, 1 << 20, max_batches=1)  # the partition waits for the first
    flags = [append(acc, bytes(90)) for _ in range(30)]
    # Full again about 1000 bytes further on, not never.
    full = [n for n, flag in enumerate(flags) if flag]
    assert full and 8 <= full[0] <= 11
    assert all(9 <= b - a <= 11 for a, b in pairwise(full))
    acc.done([in_flight])


def append_future(acc: RecordAccumulator, value: bytes) -> FutureRecordMetadata:
    size = RecordBatchBuilder.estimate_record_size(None, value, ())
    future, _ = acc.append(TP, 1_700_000_000_000, None, value, (), size, 1.0)
    return future


def test_a_batch_refused_as_too_large_is_split_at_batch_size_and_goes_first() -> None:
    # Kafka's splitAndReenqueue: a batch that grew while its partition waited, refused by a
    # leader whose segment.bytes is smaller, goes again as batches of at most batch.size.
    acc = accumulator(batch_size=1000)
    append(acc, bytes(90))
    (first,) = acc.drain(TP, 1 << 20)  # muted: the next batch grows past batch.size
    futures = [append_future(acc, bytes([n]) * 90) for n in range(40)]
    acc.done([first])
    (big,) = acc.drain(TP, 1 << 20)
    big.builder.base_sequence = 7  # as the idempotent sender stamps it
    big.attempts = 1
    assert big.record_count == 40 and big.size() > 3 * 1000
    behind = append_future(acc, b"behind")
    pieces = acc.split_and_requeue(big)

    assert 4 <= len(pieces) <= 5
    assert [p.size() <= 1000 for p in pieces] == [True] * len(pieces)
    assert sum(p.record_count for p in pieces) == 40
    # the pieces keep the batch's attempts (no retry); they have no sequence numbers until
    # drained: the sender's stamp gives them (here, a counter from the batch's)
    starts = [0, *itertools.accumulate(p.record_count for p in pieces)][:-1]
    assert {p.builder.base_sequence for p in pieces} == {NO_SEQUENCE}
    assert {p.attempts for p in pieces} == {1}
    ready, _ = acc.ready_partitions(now=0.0)
    assert ready == [TP]  # unmuted, and ready at once
    sequence = itertools.count(7)

    def stamp(batch: ProducerBatch) -> None:
        batch.builder.base_sequence = next(sequence)
        for _ in range(batch.record_count - 1):
            next(sequence)

    for piece in pieces:
        (drained,) = acc.drain(TP, 1 << 20, max_batches=1, prepare=stamp)
        assert drained is piece
        assert drained.builder.base_sequence == 7 + starts[pieces.index(piece)]
        _, records = decode_batch(drained.build())
        assert [r.value for r in records] == [
            bytes([n]) * 90 for n in range(starts[pieces.index(piece)], 40)
        ][: piece.record_count]
        acc.done([drained])
    (last,) = acc.drain(TP, 1 << 20)
    assert last.record_count == 1 and behind.batch_result is last.result

    # The batch's records settle together, once the last piece has (so a partition's
    # callbacks still run in send order); each record's future reads its own piece.
    for n, piece in enumerate(pieces[:-1]):
        piece.complete(100 * n, -1)
    assert not big.result.done() and not futures[0].done()
    pieces[-1].fail(error_for_code(ErrorCode.NOT_ENOUGH_REPLICAS, "no"))
    assert big.result.done()
    assert isinstance(big.result.error, KafkaError)
    assert futures[0].result(0).offset == 0
    assert futures[starts[1] + 2].result(0).offset == 102
    assert futures[starts[-1]].exception(0) is big.result.error
    assert futures[starts[-1] - 1].exception(0) is None
    errors: list[BaseException] = []
    futures[-1].add_errback(errors.append)
    futures[0].add_errback(errors.append)
    assert errors == [big.result.error]


def test_after_a_split_the_partitions_batches_stop_at_batch_size() -> None:
    acc = accumulator(batch_size=1000)
    append(acc, bytes(90))
    (first,) = acc.drain(TP, 1 << 20)
    for _ in range(20):
        append(acc, bytes(90))
    acc.done([first])
    (big,) = acc.drain(TP, 1 << 20)
    assert big.size() > 1000  # it grew while its partition waited
    acc.split_and_requeue(big)
    (piece,) = acc.drain(TP, 1 << 20, max_batches=1)  # muted again, with batches behind it
    for _ in range(40):
        append(acc, bytes(90))
    acc.done([piece])
    sizes = [b.size() for b in acc.drain(TP, 1 << 20)]
    assert max(sizes) <= 1000 and sum(sizes) > 3 * 1000


def test_the_drain_stamps_a_batch_once_a_retry_keeps_its_sequence() -> None:
    acc = accumulator(batch_size=1000)
    stamped: list[ProducerBatch] = []

    def stamp(batch: ProducerBatch) -> None:
        batch.builder.base_sequence = 5 * len(stamped)
        stamped.append(batch)

    append(acc, bytes(90))
    (sent,) = acc.drain(TP, 1 << 20, prepare=stamp)
    append(acc, bytes(90))
    acc.requeue([sent], retry_at=0.0)
    (retried,) = acc.drain(TP, 1 << 20, max_batches=1, prepare=stamp)
    assert retried is sent and stamped == [sent] and sent.builder.base_sequence == 0
    acc.done([retried])
    (behind,) = acc.drain(TP, 1 << 20, prepare=stamp)
    assert stamped == [sent, behind] and behind.builder.base_sequence == 5
