"""Producer.send_batch and RecordAccumulator.append_many: the same records in the same batches as
a send per record, split where batch.size splits them, bounded by buffer.memory, and a future
per record that reads its own batch's answer. Runs on the C record loop and, under
MINIKAFKA_PURE_PYTHON=1, on the Python one."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator

import pytest

from minikafka.client.producer.accumulator import AppendedRun, RecordAccumulator
from minikafka.client.producer.future import SendBatchFuture, SentRun
from minikafka.client.producer.partitioner import StickyPartitioner
from minikafka.client.producer.producer import Producer, _TopicInfo
from minikafka.client.producer.sender import Sender
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode, InvalidConfigError, KafkaError, error_for_code
from minikafka.proto.records import Compression, RecordBatchBuilder, decode_batch

TP = TopicPartition("t", 0)
TIMESTAMP = 1_700_000_000_000


def accumulator(batch_size: int, buffer_memory: int = 1 << 20) -> RecordAccumulator:
    return RecordAccumulator(
        batch_size=batch_size,
        linger_ms=5,
        buffer_memory=buffer_memory,
        compression=Compression.NONE,
        delivery_timeout_ms=120_000,
    )


def one_by_one(acc: RecordAccumulator, keys: list[bytes | None], values: list[bytes]) -> list[int]:
    """Appends each record; the indices of those that said the batch is full."""
    fulls = []
    for i, (key, value) in enumerate(zip(keys, values, strict=True)):
        size = RecordBatchBuilder.estimate_record_size(key, value, ())
        _, full = acc.append(TP, TIMESTAMP, key, value, (), size, 1.0)
        if full:
            fulls.append(i)
    return fulls


def many(
    acc: RecordAccumulator, keys: list[bytes | None], values: list[bytes], runs: list[AppendedRun]
) -> list[int]:
    """append_many until every record is in; the indices of the records it stopped full at."""
    fulls, start = [], 0
    while start < len(values):
        start, full = acc.append_many(
            TP, TIMESTAMP, tuple(keys), tuple(values), None, start, time.monotonic() + 10, runs
        )
        if full:
            fulls.append(start - 1)
    return fulls


def batches(acc: RecordAccumulator) -> list[bytes]:
    return [batch.build() for batch in acc.drain(TP, 1 << 30)]


def records_of(rng: random.Random, n: int) -> tuple[list[bytes | None], list[bytes]]:
    keys = [None if rng.random() < 0.5 else rng.randbytes(rng.randrange(8)) for _ in range(n)]
    return keys, [rng.randbytes(rng.choice((0, 5, 90, 400, 1_300))) for _ in range(n)]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("waiting", [False, True])
def test_append_many_fills_the_batches_append_fills_and_says_full_at_the_same_records(
    seed: int, waiting: bool
) -> None:
    # waiting: the partition has a request in flight, so its open batch grows past batch.size
    # (up to max.request.size) and says full every batch.size bytes.
    keys, values = records_of(random.Random(seed), 120)
    got = []
    for one_at_a_time in (True, False):
        acc = accumulator(batch_size=1_000)
        if waiting:
            one_by_one(acc, [None], [b"first"])
            in_flight = acc.drain(TP, 1 << 20)
        fulls = one_by_one(acc, keys, values) if one_at_a_time else many(acc, keys, values, [])
        if waiting:
            acc.done(in_flight)
        got.append((fulls, batches(acc)))
    assert got[0] == got[1]
    fulls, built = got[0]
    if waiting:  # one batch, said full about every 1000 bytes
        assert len(built) == 1 and len(fulls) > 10
    else:  # split at batch.size
        assert len(built) > 10


def test_append_many_reports_each_batch_it_appended_to() -> None:
    acc = accumulator(batch_size=1_000)
    runs: list[AppendedRun] = []
    many(acc, [None] * 40, [bytes(90)] * 40, runs)
    assert [r.start for r in runs] == [0] + [r.stop for r in runs[:-1]]  # contiguous, in order
    assert runs[-1].stop == 40
    # A batch may take records over two calls (one that ended full with a record that started
    # it, and the next): its runs follow each other, each starting where the last ended.
    per_batch: dict[object, list[AppendedRun]] = {}
    for run in runs:
        per_batch.setdefault(run.result, []).append(run)
    counts = []
    for parts in per_batch.values():
        assert [r.first for r in parts] == [
            sum(r.stop - r.start for r in parts[:k]) for k in range(len(parts))
        ]
        counts.append(sum(r.stop - r.start for r in parts))
    assert [decode_batch(b)[0].record_count for b in batches(acc)] == counts


def test_append_many_waits_for_buffer_memory_and_times_out_with_the_records_queued() -> None:
    acc = accumulator(batch_size=1_000, buffer_memory=3_000)  # three batches' worth
    runs: list[AppendedRun] = []
    values = (bytes(90),) * 40  # five batches
    with pytest.raises(KafkaError) as raised:
        start = 0
        while start < 40:
            start, _ = acc.append_many(TP, TIMESTAMP, None, values, None, start, 0.0, runs)
    assert raised.value.code == ErrorCode.REQUEST_TIMED_OUT
    queued = runs[-1].stop
    assert 0 < queued < 40 and len({r.result for r in runs}) == 3

    # Memory freed by the sender lets a waiting call go on.
    done = threading.Event()

    def rest() -> None:
        start = queued
        while start < 40:
            start, _ = acc.append_many(
                TP, TIMESTAMP, None, values, None, start, time.monotonic() + 10, runs
            )
        done.set()

    thread = threading.Thread(target=rest)
    thread.start()
    assert not done.wait(0.05)
    sent = acc.drain(TP, 1 << 20, max_batches=2)  # the rest needs two more batches
    acc.done(sent)
    thread.join(5)
    assert done.is_set() and runs[-1].stop == 40


def test_each_record_reads_its_own_batchs_answer() -> None:
    acc = accumulator(batch_size=1_000)
    appended: list[AppendedRun] = []
    many(acc, [None] * 25, [bytes(90)] * 25, appended)
    runs = [SentRun(r.result, r.first, range(r.start, r.stop), 0) for r in appended]
    future = SendBatchFuture("t", TIMESTAMP, runs)
    first, second, third = acc.drain(TP, 1 << 30)
    assert not future.done() and not future.wait(0)
    first.complete(100, -1)
    third.complete(500, -1)
    error = error_for_code(ErrorCode.NOT_ENOUGH_REPLICAS, "isr")
    second.fail(error)
    assert future.done()
    n1, n2 = first.record_count, second.record_count
    exceptions = future.exceptions(0)
    assert exceptions == [None] * n1 + [error] * n2 + [None] * (25 - n1 - n2)
    assert future[0].result(0).offset == 100
    assert future[n1 - 1].result(0).offset == 100 + n1 - 1
    assert future[n1 + n2].result(0).offset == 500
    assert future[24].result(0).offset == 500 + 24 - n1 - n2
    assert future[24].result(0).timestamp == TIMESTAMP
    with pytest.raises(KafkaError):
        future.result(0)
    called: list[SendBatchFuture] = []
    future.add_done_callback(called.append)
    assert called == [future]


# --- Producer.send_batch, with no broker: the sender is not started --------------------------


@pytest.fixture
def producers(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Producer, Producer]]:
    monkeypatch.setattr(Sender, "start", lambda self: None)
    made = []
    for _ in range(2):
        producer = Producer(
            "127.0.0.1:9",
            acks=1,
            linger_ms=600_000,
            delivery_timeout_ms=700_000,
            batch_size=2_000,
        )
        # three partitions, all with leaders, known now; the same random choices in both
        producer._topics["t"] = _TopicInfo(
            producer._metadata.version,
            [0, 1, 2],
            {p: TopicPartition("t", p) for p in range(3)},
            [0, 1, 2],
        )
        producer._sticky = producer._partitioner = StickyPartitioner(random.Random(7))
        made.append(producer)
    yield made[0], made[1]
    for producer in made:
        producer._pool.close()


def queued(producer: Producer) -> dict[int, list[bytes]]:
    acc = producer._accumulator
    return {tp.partition: [b.build() for b in queue] for tp, queue in acc._queues.items()}


@pytest.mark.parametrize("keys_given", ["no keys column", "keyed", "a keys column of None"])
def test_send_batch_queues_the_bytes_sends_one_by_one_queue(
    producers: tuple[Producer, Producer], keys_given: str
) -> None:
    one, batch = producers
    _, values = records_of(random.Random(3), 200)
    keyed = keys_given == "keyed"
    keys: list[bytes | None] = [b"k%d" % (n % 17) if keyed else None for n in range(200)]
    headers = [None if n % 5 else [("trace", b"%d" % n)] for n in range(200)]
    futures = [
        one.send("t", v, key=k, headers=h, timestamp_ms=TIMESTAMP)
        for k, v, h in zip(keys, values, headers, strict=True)
    ]
    column = None if keys_given == "no keys column" else keys
    sent = batch.send_batch("t", values, keys=column, headers=headers, timestamp_ms=TIMESTAMP)
    assert queued(one) == queued(batch)
    assert len(queued(one)) == 3 and len(sent) == 200
    # Each record's future names the partition and batch place its one-by-one twin has.
    for position in (0, 57, 199):
        twin = futures[position]
        record = sent[position]
        assert (record._partition, record._index) == (twin._partition, twin._index)


def test_send_batch_to_one_partition_splits_at_batch_size(
    producers: tuple[Producer, Producer],
) -> None:
    producer, _ = producers
    sent = producer.send_batch("t", [bytes(100)] * 100, partition=2)
    built = queued(producer)[2]
    assert len(built) == 6 and all(len(b) <= 2_000 for b in built)
    assert {r.partition for r in sent.runs} == {2} and len({r.result for r in sent.runs}) == 6
    assert sum(len(r.positions) for r in sent.runs) == 100


def test_send_batch_checks_every_record_before_queueing_any(
    producers: tuple[Producer, Producer],
) -> None:
    producer, _ = producers
    with pytest.raises(InvalidConfigError, match="record 1"):
        producer.send_batch("t", [b"a", None, b"b"])
    with pytest.raises(KafkaError) as raised:
        producer.send_batch("t", [b"a", bytes(2_000_000)])
    assert raised.value.code == ErrorCode.MESSAGE_TOO_LARGE
    with pytest.raises(TypeError):
        producer.send_batch("t", [b"a", "text"])
    with pytest.raises(ValueError, match="3 values but 2 keys"):
        producer.send_batch("t", [b"a", b"b", b"c"], keys=[b"k", b"k"])
    assert queued(producer) == {}
    # bytes-likes are copied, as send does
    sent = producer.send_batch("t", [bytearray(b"ab"), memoryview(b"cd")], partition=0)
    (data,) = queued(producer)[0]
    assert [r.value for r in decode_batch(data)[1]] == [b"ab", b"cd"]
    assert len(sent) == 2


def test_a_call_that_runs_out_of_buffer_memory_raises_with_the_records_it_queued(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(Sender, "start", lambda self: None)
    producer = Producer(
        "127.0.0.1:9",
        acks=1,
        linger_ms=600_000,
        delivery_timeout_ms=700_000,
        batch_size=2_000,
        buffer_memory=6_000,  # three batches
        max_block_ms=50,
    )
    producer._topics["t"] = _TopicInfo(
        producer._metadata.version, [0], {0: TopicPartition("t", 0)}, [0]
    )
    try:
        with pytest.raises(KafkaError) as raised:
            producer.send_batch("t", [bytes(100)] * 100)
        assert raised.value.code == ErrorCode.REQUEST_TIMED_OUT
        queued: SendBatchFuture = raised.value.queued  # type: ignore[attr-defined]
        assert 40 <= len(queued) == sum(len(r.positions) for r in queued.runs) < 100
        assert queued[len(queued) - 1]._index >= 0 and not queued.done()
        assert len({r.result for r in queued.runs}) == 3
    finally:
        producer._pool.close()
