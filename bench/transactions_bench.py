"""What transactions cost the produce and consume paths (issue 33), on the Kafka door.

    python -m bench.transactions_bench [--records 500000] [--rounds 3]
    python -m bench.transactions_bench --smoke   # proves it runs, measures nothing

A local 3-broker cluster (ZooKeeper and brokers on 127.0.0.1, bench.local_cluster), topics of
6 partitions at replication factor 3 with min.insync.replicas 2, 100-byte records, and
confluent-kafka (librdkafka, C) as the client, so that the brokers are what is measured; one
client process at a time, librdkafka's default batch.size (1,000,000 bytes), linger.ms 5.
Each round, on topics of its own:

- produce, idempotent (acks=all): ``--records`` records, from the first send to the end of
  flush();
- produce, transactional, 1,000 records a transaction: begin, 1,000 sends, commit, again until
  ``--records`` are written; from the first begin to the last commit's answer, so every
  transaction's AddPartitionsToTxn, EndTxn and COMMIT markers are in the time;
- the same with 100,000 records a transaction;
- consume all of the 1,000-a-transaction topic from the start (its records and a marker per
  partition and transaction) with isolation.level read_committed, then read_uncommitted.

Prints records/s and MB/s (of record values) per mode, median and range over the rounds, the
CPU each process used in the median round (cores: user + system over wall time, from /proc),
and first the date, the commit, the load average and the machine yardstick (kafka-python's
encoder, bench.codec_bench). The cluster's directory (ZooKeeper, the brokers' logs) is a
temporary one, deleted at the end; the ports are free ones the harness picks.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field

from bench.hygiene import add_port_base, ports_from
from bench.kafka_classic import RECORD_SIZE, python_module, wait_replicated
from bench.kafka_protocol_bench import (
    PARTITIONS,
    Result,
    _child_rate,
    _load_average,
    _machine,
    _measured,
    create_topic,
    run_rounds,
)
from bench.stats import summary
from tests.integration.cluster import Cluster

BATCH_SIZE = 1_000_000  # librdkafka's default batch.size
LINGER_MS = 5
SMALL_TXN, LARGE_TXN = 1_000, 100_000
MODES = (
    "produce, idempotent",
    f"produce, transactional, {SMALL_TXN:,} records a transaction",
    f"produce, transactional, {LARGE_TXN:,} records a transaction",
    "consume read_committed",
    "consume read_uncommitted",
)


# --- the confluent-kafka clients, as child processes -------------------------------------------


def _producer_config(bootstrap: str, transactional_id: str | None) -> dict[str, object]:
    config: dict[str, object] = {
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "enable.idempotence": True,
        "batch.size": BATCH_SIZE,
        "linger.ms": LINGER_MS,
        "queue.buffering.max.messages": 2_000_000,
        "queue.buffering.max.kbytes": 1_048_576,
    }
    if transactional_id is not None:
        config["transactional.id"] = transactional_id
        config["transaction.timeout.ms"] = 120_000
    return config


def kafka_produce(bootstrap: str, topic: str, records: int, per_transaction: int) -> None:
    """Child process: ``records`` records of RECORD_SIZE bytes, idempotent when
    ``per_transaction`` is 0, else in transactions of that many; prints records/s."""
    import confluent_kafka

    transactional = per_transaction > 0
    producer = confluent_kafka.Producer(
        _producer_config(bootstrap, f"bench-{topic}" if transactional else None)
    )
    value = os.urandom(RECORD_SIZE)
    # Before the clock: the topic's metadata and the producer id (init_transactions, or for
    # the idempotent producer one record to another topic: librdkafka gets its id lazily).
    producer.list_topics(topic, timeout=30)
    if transactional:
        producer.init_transactions(60)
    else:
        producer.produce(f"{topic}-warm-up", value)
        if producer.flush(60):
            raise SystemExit("the warm-up record was not delivered")
    failed = 0

    def on_delivery(err: object, msg: object) -> None:
        nonlocal failed
        if err is not None:
            failed += 1

    def send(count: int) -> None:
        for _ in range(count):
            while True:
                try:
                    producer.produce(topic, value, on_delivery=on_delivery)
                    break
                except BufferError:
                    producer.poll(0.01)
            producer.poll(0)

    start = time.perf_counter()
    if transactional:
        left = records
        while left > 0:
            producer.begin_transaction()
            send(min(per_transaction, left))
            producer.commit_transaction(120)
            left -= per_transaction
    else:
        send(records)
        producer.flush(300)
    elapsed = time.perf_counter() - start
    if failed:
        raise SystemExit(f"{failed} records failed")
    print(f"{records / elapsed:.1f}", flush=True)


def kafka_consume(bootstrap: str, topic: str, records: int, isolation: str) -> None:
    """Child process: read ``records`` records of the topic from the start; prints records/s."""
    import confluent_kafka

    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{os.getpid()}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "fetch.max.bytes": 52_428_800,
            # As kafka_protocol_bench: deep enough that librdkafka never pauses fetching.
            "queued.min.messages": 10_000_000,
            "queued.max.messages.kbytes": 2_097_151,
        }
    )
    consumer.assign([confluent_kafka.TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    seen = 0
    start = time.perf_counter()
    deadline = start + 300
    while seen < records and time.perf_counter() < deadline:
        for message in consumer.consume(10_000, 1.0):
            if message.error() is None:
                seen += 1
    elapsed = time.perf_counter() - start
    consumer.close()
    if seen != records:
        raise SystemExit(f"read {seen} of {records} records ({isolation})")
    print(f"{records / elapsed:.1f}", flush=True)


# --- a round -----------------------------------------------------------------------------------


@dataclass
class _Runs:
    result: Result = field(default_factory=Result)

    def note(self, name: str, rate: float, cpu: str) -> None:
        self.result.rates.setdefault(name, []).append(rate)
        self.result.cpu.setdefault(name, []).append(cpu)
        print(f"  {name}: {rate:,.0f} records/s (CPU cores: {cpu})", file=sys.stderr, flush=True)


def _child(*argv: str) -> subprocess.Popen[str]:
    return python_module("bench.transactions_bench", *argv)


def run_round(cluster: Cluster, records: int, round_no: int, result: Result) -> None:
    bootstrap = cluster.kafka_bootstrap_servers
    runs = _Runs(result)
    topics = {
        0: f"idempotent-{round_no}",
        SMALL_TXN: f"txn-{SMALL_TXN}-{round_no}",
        LARGE_TXN: f"txn-{LARGE_TXN}-{round_no}",
    }
    for topic in [*topics.values(), f"{topics[0]}-warm-up"]:
        create_topic(cluster, topic, 3, {"min.insync.replicas": "2"})
    for mode, (per_transaction, topic) in zip(MODES, topics.items(), strict=False):
        rate, cpu = _measured(
            cluster,
            lambda t=topic, n=per_transaction: _child(  # type: ignore[misc]
                "--produce", bootstrap, t, str(records), str(n)
            ),
            lambda p: _child_rate(p, "confluent-kafka producer"),
        )
        runs.note(mode, rate, cpu)
    wait_replicated(cluster, {topics[SMALL_TXN]: records})
    for mode, isolation in zip(MODES[3:], ("read_committed", "read_uncommitted"), strict=True):
        rate, cpu = _measured(
            cluster,
            lambda i=isolation: _child(  # type: ignore[misc]
                "--consume", bootstrap, topics[SMALL_TXN], str(records), i
            ),
            lambda p: _child_rate(p, "confluent-kafka consumer"),
        )
        runs.note(mode, rate, cpu)


def print_table(result: Result) -> None:
    """One row per mode: records/s and MB/s, median (range), the CPU of the median round."""
    print("| mode | records/s: median (range) | MB/s: median (range) | CPU cores, median round |")
    print("|---|---:|---:|---|")
    for mode in MODES:
        rates = result.rates.get(mode)
        if not rates:
            continue
        median = statistics.median(rates)
        at = min(range(len(rates)), key=lambda i: abs(rates[i] - median))
        mb = [r * RECORD_SIZE / 1e6 for r in rates]
        print(f"| {mode} | {summary(rates)} | {summary(mb, ',.1f')} | {result.cpu[mode][at]} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--smoke", action="store_true", help="small counts: proves the run works, measures nothing"
    )
    parser.add_argument("--produce", nargs=4, metavar=("BOOTSTRAP", "TOPIC", "N", "PER_TXN"))
    parser.add_argument("--consume", nargs=4, metavar=("BOOTSTRAP", "TOPIC", "N", "ISOLATION"))
    add_port_base(parser)
    args = parser.parse_args()
    if args.produce:
        bootstrap, topic, n, per_transaction = args.produce
        kafka_produce(bootstrap, topic, int(n), int(per_transaction))
        return
    if args.consume:
        bootstrap, topic, n, isolation = args.consume
        kafka_consume(bootstrap, topic, int(n), isolation)
        return
    if args.smoke:
        args.records, args.rounds = 3_000, 1
    if args.records < LARGE_TXN and not args.smoke:
        parser.error(f"--records below {LARGE_TXN:,} makes no {LARGE_TXN:,}-record transaction")
    before = _machine()
    result = run_rounds(
        "transactions-bench-", args.rounds, args.records, run_round, ports=ports_from(args)
    )
    print(
        f"\n{args.records:,} records of {RECORD_SIZE} bytes, {PARTITIONS} partitions, RF3, "
        f"min.insync.replicas 2, {args.rounds} rounds; {before}, "
        f"load average after {_load_average()}"
    )
    print_table(result)


if __name__ == "__main__":
    main()
