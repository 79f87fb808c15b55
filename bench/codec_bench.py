"""Records/s of the RecordBatch v2 codec, beside kafka-python's, on one core.

    python -m bench.codec_bench [--records 300000] [--batch 150] [--rounds 3]

100-byte values, no key, timestamps varying by up to a second within a batch (so timestamp deltas
take one to two varint bytes, as in real traffic). Batches of ``--batch`` records (150 is about
16 KB). "decode" means records turned into objects with offset, timestamp, key, value and headers.
"encode" is the producer's own path (``encode_batch`` appends to a ``RecordBatchBuilder``).
One more row is the consumer's, without a kafka-python counterpart: "consume" reads a fetch's
worth of batches 500 records at a time (``RecordsReader``) into ``ConsumerRecord``. Each figure
is the median of ``--rounds`` runs with their range (bench/stats.py). The first line says
whether the record loops ran in C (``proto._crecords``) or in Python: run it again with
``MINIKAFKA_PURE_PYTHON=1`` for the other.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from bench.stats import rates, summary
from minikafka.client.consumer.fetcher import ConsumerRecord
from minikafka.proto import records

Input = list[tuple[int, bytes | None, bytes | None, tuple[()]]]


def make_input(count: int, seed: int = 7) -> Input:
    rng = random.Random(seed)
    value = os.urandom(100)
    base = 1_700_000_000_000
    return [(base + rng.randrange(1000), None, value, ()) for _ in range(count)]


def ours_encode(recs: Input, batch: int) -> list[bytes]:
    return [records.encode_batch(recs[i : i + batch]) for i in range(0, len(recs), batch)]


def ours_consume(fetched: bytes) -> int:
    reader = records.RecordsReader(fetched, ConsumerRecord, ("topic", 0))
    count = 0
    while chunk := reader.read(500):
        count += len(chunk)
    return count


def kafka_python_encode(recs: Input, batch: int) -> list[bytes]:
    out = []
    for i in range(0, len(recs), batch):
        builder = DefaultRecordBatchBuilder(
            magic=2,
            compression_type=0,
            is_transactional=False,
            producer_id=-1,
            producer_epoch=-1,
            base_sequence=-1,
            batch_size=1 << 30,
        )
        for delta, (ts, key, value, _h) in enumerate(recs[i : i + batch]):
            builder.append(delta, timestamp=ts, key=key, value=value, headers=[])
        out.append(bytes(builder.build()))
    return out


def ours_decode(batches: list[bytes]) -> int:
    return sum(len(records.decode_batch(b)[1]) for b in batches)


def kafka_python_decode(batches: list[bytes]) -> int:
    count = 0
    for data in batches:
        batch = MemoryRecords(data).next_batch()
        batch.validate_crc()
        for record in batch:
            _ = (record.offset, record.timestamp, record.key, record.value, record.headers)
            count += 1
    return count


def yardstick(count: int = 100_000) -> float:
    """kafka-python's encoder in records/s (median of 3, 150 records a batch): how fast this
    machine runs Python code the project does not touch, to compare runs on other machines."""
    recs = make_input(count)
    return statistics.median(rates(lambda: kafka_python_encode(recs, 150), count, 3))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--batch", type=int, default=150)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    recs = make_input(args.records)
    batches = ours_encode(recs, args.batch)
    assert kafka_python_decode(batches) == args.records  # our bytes are Kafka's bytes
    theirs = kafka_python_encode(recs, args.batch)
    assert ours_decode(theirs) == args.records

    n, b, r = args.records, args.batch, args.rounds
    code = (
        "C (proto._crecords)"
        if records.ACCELERATED
        else "Python (MINIKAFKA_PURE_PYTHON or not built)"
    )
    print(f"record loops in {code}")
    fetched = bytes(records.assign_offsets(b"".join(batches), 0, 0)[0])  # as a log holds them
    assert ours_consume(fetched) == n
    enc = rates(lambda: ours_encode(recs, b), n, r)
    kenc = rates(lambda: kafka_python_encode(recs, b), n, r)
    dec = rates(lambda: ours_decode(batches), n, r)
    kdec = rates(lambda: kafka_python_decode(batches), n, r)
    consume = rates(lambda: ours_consume(fetched), n, r)
    ratio = statistics.median

    print(f"records/s: median (range) of {r} rounds; machine yardstick: {yardstick():,.0f}")
    print("| operation | minikafka | kafka-python | ratio of medians | target |")
    print("|---|---:|---:|---:|---|")
    print(
        f"| encode | {summary(enc)} | {summary(kenc)} | "
        f"{ratio(enc) / ratio(kenc):.1f}x | >= 1,000,000 |"
    )
    print(
        f"| decode | {summary(dec)} | {summary(kdec)} | "
        f"{ratio(dec) / ratio(kdec):.1f}x | >= 500,000 |"
    )
    print(f"| consume | {summary(consume)} | | | |")


if __name__ == "__main__":
    main()
