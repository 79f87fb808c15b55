"""The rows of Jay Kreps's 2014 Kafka benchmark, on a local 3-broker minikafka cluster.

    python -m bench.kafka_classic [--scale 1.0] [--latency-rate 10000] [--latency-seconds 5]
        [--latency-only] [--latency-client minikafka|confluent] [--port-base N]

"Benchmarking Apache Kafka: 2 Million Writes Per Second (On Three Cheap Machines)", J. Kreps,
LinkedIn Engineering, 2014:
https://engineering.linkedin.com/kafka/benchmarking-apache-kafka-2-million-writes-second-three-cheap-machines
(figures read from copies of the post: https://www.engineering.fyi/article/benchmarking-apache-kafka-2-million-writes-per-second-on-three-cheap-machines
and https://lf-anuket.atlassian.net/wiki/pages/diffpages.action?originalId=21876397&pageId=21876399;
commands from https://gist.github.com/jkreps/c7ddb4041ef62a900e6c). Those copies did not carry
the "producer and consumer" row; its figure here (795,064 records/s, 75.8 MB/s) is the
original post's as commonly quoted and was not re-checked.

Kafka 2014 ran on six machines (three brokers; 6 SATA disks, 32 GB RAM, 1 GbE each), with 50
million 100-byte records per producer test. Here everything shares one machine: ZooKeeper,
three broker processes and the clients, started the way the integration tests start them
(tests/integration/cluster.py, tests/integration/zookeeper.py). Records are 100 bytes, topics
have 6 partitions like Kreps's, and each client runs as its own process through the same tools a
user has: ``minikafka perf-produce`` (one process = one producer thread) and ``minikafka
perf-consume``. MB = 2^20 bytes of record payload, as in the post.

Rows (throughput in records/s and MB/s):

1. 1 producer, no replication (RF 1, acks=1)
2. 1 producer, 3x asynchronous replication (RF 3, acks=1)
3. 1 producer, 3x synchronous replication (RF 3, acks=all)
4. 3 producers at once, 3x async replication: the sum of their rates
5. 1 consumer reading the records of row 2
6. 3 consumers at once, each reading all of them (each its own reader, as Kafka's perf
   consumers of 2014 were): the sum of their rates
7. 1 producer and 1 consumer at once on a fresh topic (RF 3, acks=1): the producer's rate
8. The rows 1 and 3 again with the Producer's batch API (``perf-produce --batch-send``,
   Producer.send_batch: many records appended by one C call), the way a program that has its
   records at hand sends them
9. End-to-end latency: a record due every 1/rate s (acks=all, RF 3, one partition, linger.ms
   0) for ``--latency-seconds``, at 1,000 and at 10,000 records/s by default; a consumer in
   another process notes when each arrives. Latency is measured from each record's scheduled
   send time, which travels in the value (bench/latency.py: no coordinated omission; both
   processes read the same wall clock), and the achieved send rate is printed beside the
   target. p50 / p99 / p99.9 in ms. Kreps's figure came from Kafka's
   TestEndToEndLatency, which sends one record at a time and waits for it. ``--latency-only``
   runs this row alone (``--latency-rate`` picks the rates, ``--latency-rf`` the topic's
   replication factor: 1 leaves out the followers' round trip). ``--latency-client`` picks the
   clients: ``minikafka`` (default; its Producer and Consumer over gRPC) or ``confluent``
   (confluent-kafka, librdkafka in C, over the brokers' Kafka listeners: what a Kafka user's
   software sees, with clients that cost the shared cores far less). A run in which a
   follower's fetch failed or an ISR shrank stops with an error rather than print a figure
   that is not RF3's.

``--scale`` multiplies the record counts (1,000,000 per test by default: about two minutes on
a 2-core machine; shorter runs are dominated by the start of each tool). ``--port-base N``
(or $MINIKAFKA_BENCH_PORT_BASE) puts ZooKeeper and the brokers on ports from N up
(bench/hygiene.py); the cluster's directory is removed at the end, however the run ends.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.codec_bench import yardstick
from bench.hygiene import add_port_base, ports_from, scratch_dir
from bench.latency import LatencyResult, latency_line, run_schedule, stamp
from bench.local_cluster import start_cluster
from minikafka.client.admin import LATEST, NewTopic, raise_first
from minikafka.client.cli._logging import configure_tool_logging
from minikafka.proto.common import TopicPartition
from tests.integration.cluster import Cluster
from tests.integration.zookeeper import free_port

REPO_ROOT = Path(__file__).resolve().parent.parent
RECORD_SIZE = 100
ISR_SHRINKS = "kafka_server_replicamanager_isrshrinks_total"
PARTITIONS = 6
MB = 1024 * 1024

# (row, records/s, MB/s) of the 2014 post; the latency row is (p50, p99, p99.9) in ms.
KAFKA_2014 = {
    "1 producer, no replication": (821_557, 78.3),
    "1 producer, 3x async replication": (786_980, 75.1),
    "1 producer, 3x sync replication": (421_823, 40.2),
    "3 producers, 3x async replication": (2_024_032, 193.0),
    "1 consumer": (940_521, 89.7),
    "3 consumers": (2_615_968, 249.5),
    "producer and consumer together": (795_064, 75.8),
    # The same two rows with the Producer's batch API (perf-produce --batch-send): Kreps's
    # producer figures beside them.
    "1 producer send_batch, no replication": (821_557, 78.3),
    "1 producer send_batch, 3x sync replication": (421_823, 40.2),
}
# Records per Producer.send_batch call, and the producer settings of those rows: batches of up to
# 1 MB, as librdkafka's default batch.size, and room for them.
BATCH_SEND = 10_000
BATCH_SEND_PROPS = ("batch.size=1000000", "linger.ms=5", "buffer.memory=268435456")
KAFKA_2014_LATENCY = (2.0, 3.0, 14.0)

_SUMMARY = re.compile(r"^(\d+) records sent, ([\d.]+) records/sec")


@dataclass(frozen=True)
class Row:
    name: str
    records_per_s: float
    note: str = ""

    @property
    def mb_per_s(self) -> float:
        return self.records_per_s * RECORD_SIZE / MB


# --- the tools, as processes -------------------------------------------------------------------


def python_module(module: str, *argv: str) -> subprocess.Popen[str]:
    """``python -m module argv`` from the repository, its output piped back as text."""
    return subprocess.Popen(
        [sys.executable, "-m", module, *argv],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(process: subprocess.Popen[str], what: str) -> str:
    out, err = process.communicate(timeout=900)
    if process.returncode != 0:
        raise RuntimeError(f"{what} failed ({process.returncode}): {err.strip()}")
    return out


def start_producer(
    bootstrap: str, topic: str, records: int, acks: str, batch_size: int
) -> subprocess.Popen[str]:
    return python_module(
        "minikafka",
        "perf-produce", "--topic", topic, "--num-records", str(records),
        "--record-size", str(RECORD_SIZE), "--throughput", "-1", "--producer-props",
        f"bootstrap.servers={bootstrap}", f"acks={acks}", f"batch.size={batch_size}",
        "buffer.memory=67108864",
    )  # fmt: skip


def start_batch_producer(
    bootstrap: str, topic: str, records: int, acks: str
) -> subprocess.Popen[str]:
    """perf-produce with Producer.send_batch, BATCH_SEND records a call."""
    return python_module(
        "minikafka",
        "perf-produce", "--topic", topic, "--num-records", str(records),
        "--record-size", str(RECORD_SIZE), "--throughput", "-1",
        "--batch-send", str(BATCH_SEND), "--producer-props",
        f"bootstrap.servers={bootstrap}", f"acks={acks}", *BATCH_SEND_PROPS,
    )  # fmt: skip


def producer_rate(process: subprocess.Popen[str]) -> float:
    last = _finish(process, "perf-produce").strip().splitlines()[-1]
    match = _SUMMARY.match(last)
    if match is None:
        raise RuntimeError(f"unexpected perf-produce output: {last!r}")
    return float(match.group(2))


def start_consumer(
    bootstrap: str, topic: str, records: int, properties: Sequence[str] = ()
) -> subprocess.Popen[str]:
    """perf-consume; ``properties``: more ``key=value`` consumer configs (security.protocol,
    ssl.*)."""
    extra = [arg for p in properties for arg in ("--consumer-property", p)]
    return python_module(
        "minikafka",
        "perf-consume", "--bootstrap-server", bootstrap, "--topic", topic,
        "--messages", str(records), "--hide-header", "--timeout", "30000", *extra,
    )  # fmt: skip


def consumer_rate(process: subprocess.Popen[str], expected: int) -> float:
    fields = _finish(process, "perf-consume").strip().splitlines()[-1].split(", ")
    if int(fields[4]) != expected:
        raise RuntimeError(f"perf-consume read {fields[4]} records, not {expected}")
    return float(fields[5])  # nMsg.sec over the whole run


# --- end-to-end latency ------------------------------------------------------------------------


def latency_consumer(bootstrap: str, topic: str, records: int) -> None:
    """Child process: print one ``sequence latency_ns`` line per record it receives."""
    from minikafka.client.consumer.consumer import Consumer
    from minikafka.proto.common import TopicPartition

    tp = TopicPartition(topic, 0)
    with Consumer(bootstrap_servers=bootstrap, fetch_max_wait_ms=100) as consumer:
        consumer.assign([tp])
        consumer.seek_to_end(tp)
        consumer.position(tp)
        print("ready", flush=True)
        seen = 0
        deadline = time.monotonic() + 120
        lines: list[str] = []
        while seen < records and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=100).values():
                now = time.time_ns()
                for record in batch:
                    line = latency_line(record.value or b"", now)
                    if line is not None:
                        lines.append(line)
                        seen += 1
        print("\n".join(lines), flush=True)


def confluent_latency_consumer(bootstrap: str, topic: str, records: int) -> None:
    """Child process: as ``latency_consumer``, with confluent-kafka's Consumer over the Kafka
    protocol (a long poll the broker answers as soon as a record is committed)."""
    import confluent_kafka

    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"latency-{os.getpid()}",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 100,
            "fetch.min.bytes": 1,
        }
    )
    consumer.assign([confluent_kafka.TopicPartition(topic, 0, confluent_kafka.OFFSET_END)])
    # The assignment takes hold (the end offset is looked up) before the producer starts.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        consumer.poll(0.05)
        position = consumer.position([confluent_kafka.TopicPartition(topic, 0)])[0].offset
        if position >= 0:
            break
    print("ready", flush=True)
    seen = 0
    deadline = time.monotonic() + 120
    lines: list[str] = []
    while seen < records and time.monotonic() < deadline:
        # One message per poll: consume(n, timeout) holds what it has until n arrive or the
        # timeout passes, which would time the client's batching, not the cluster.
        message = consumer.poll(0.1)
        if message is None:
            continue
        now = time.time_ns()
        if message.error() is not None:
            raise SystemExit(f"latency consumer: {message.error()}")
        line = latency_line(message.value() or b"", now)
        if line is not None:
            lines.append(line)
            seen += 1
    consumer.close()
    print("\n".join(lines), flush=True)


class _ConfluentSender:
    """confluent-kafka's Producer with the minikafka Producer's ``send``/``flush``."""

    def __init__(self, bootstrap: str) -> None:
        import confluent_kafka

        self._producer = confluent_kafka.Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "linger.ms": 0,
                # The Java producer's default (librdkafka's is a million): with five requests
                # in flight, records that arrive meanwhile go out together in the next one,
                # rather than one request per record.
                "max.in.flight.requests.per.connection": 5,
            }
        )
        self.failed = 0

    def _delivered(self, err: object, msg: object) -> None:
        if err is not None:
            self.failed += 1

    def send(self, topic: str, value: bytes, partition: int) -> None:
        self._producer.produce(topic, value, partition=partition, on_delivery=self._delivered)
        self._producer.poll(0)

    def flush(self) -> None:
        if self._producer.flush(60) or self.failed:
            raise RuntimeError(f"the latency producer lost {self.failed} records")

    def __enter__(self) -> _ConfluentSender:
        return self

    def __exit__(self, *exc: object) -> None:
        self._producer.flush(10)


def latency_run(
    cluster: Cluster, topic: str, rate: int, seconds: float, client: str = "minikafka"
) -> LatencyResult:
    """Row 8 at ``rate`` for ``seconds`` (bench/latency.py's schedule)."""
    from minikafka.client.producer.producer import Producer

    records = int(rate * seconds)
    if client == "confluent":
        bootstrap = cluster.kafka_bootstrap_servers
        sender: Any = _ConfluentSender(bootstrap)
    else:
        bootstrap = cluster.bootstrap_servers
        sender = Producer(bootstrap_servers=bootstrap, acks="all", linger_ms=0)
    with sender as producer:
        # Warm up first (metadata, producer id, connections, the followers' fetch sessions):
        # Kreps's figure is for a running cluster, not for its first records.
        for sequence in range(-100, 0):
            producer.send(topic, stamp(sequence, 0, RECORD_SIZE), partition=0)
        producer.flush()
        child = subprocess.Popen(
            [sys.executable, "-m", "bench.kafka_classic", "--latency-consumer", bootstrap, topic,
             str(records), client],
            cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert child.stdout is not None
        if child.stdout.readline().strip() != "ready":
            raise RuntimeError("the latency consumer did not start")
        try:
            report = run_schedule(
                lambda value: producer.send(topic, value, partition=0), rate, records, RECORD_SIZE
            )
            producer.flush()
        except BaseException:
            child.kill()
            child.wait()
            raise
    out = _finish(child, "latency consumer")
    errors, shrinks = replication_faults(cluster)
    if errors or shrinks:
        raise RuntimeError(
            f"{errors} follower fetch errors and {shrinks} ISR shrinks so far: the latency "
            "would not be RF3 acks=all's (the brokers' logs say why)"
        )
    try:
        return LatencyResult.from_lines(out, report)
    except ValueError as exc:
        raise RuntimeError(f"latency consumer: {exc}") from None


def replication_faults(cluster: Cluster) -> tuple[int, int]:
    """(follower fetch errors, ISR shrinks) since the brokers started, summed over them: the
    ``fetcher.fetch_failed`` log events and the brokers' isrshrinks counters. A figure taken
    while a follower was out of the ISR is not an RF3 figure."""
    errors = shrinks = 0
    for broker in cluster.brokers.values():
        errors += len(broker.log_events("fetcher.fetch_failed"))
        if broker.running:
            shrinks += int(cluster.metric(broker.broker_id, ISR_SHRINKS) or 0)
    return errors, shrinks


# --- the cluster and the table -----------------------------------------------------------------


def create_topics(cluster: Cluster, topics: dict[str, tuple[int, int]]) -> None:
    with cluster.admin() as admin:
        raise_first(admin.create_topics([NewTopic(t, p, rf) for t, (p, rf) in topics.items()]))
    for topic, (partitions, _) in topics.items():
        for p in range(partitions):
            cluster.wait_for(
                lambda t=topic, p=p: cluster.leader(t, p) >= 0,  # type: ignore[misc]
                timeout_s=30,
                what=f"a leader for {topic}-{p}",
            )


def wait_replicated(cluster: Cluster, topics: dict[str, int]) -> None:
    """Until each topic's high watermarks add up to the records written to it (``topics``):
    every follower then has them all, and an acks=1 test's replication backlog does not load
    the next test."""
    tps = {TopicPartition(t, p): t for t in topics for p in range(PARTITIONS)}
    with cluster.admin() as admin:

        def caught_up() -> bool:
            written = dict.fromkeys(topics, 0)
            for tp, info in admin.list_offsets({tp: LATEST for tp in tps}).items():
                written[tps[tp]] += info.offset
            return all(written[t] >= count for t, count in topics.items())

        cluster.wait_for(caught_up, timeout_s=120, what="replication to catch up")


def run_rows(cluster: Cluster, records: int) -> list[Row]:
    bootstrap = cluster.bootstrap_servers
    rows: list[Row] = []

    def log(name: str, rate: float, note: str = "") -> None:
        rows.append(Row(name, rate, note))
        print(f"  {name}: {rate:,.0f} records/s", file=sys.stderr, flush=True)

    def produce(topic: str, acks: str, batch_size: int) -> subprocess.Popen[str]:
        return start_producer(bootstrap, topic, records, acks, batch_size)

    # batch.size as in Kreps's commands: 8196 for acks=1, 64000 for acks=all
    log("1 producer, no replication", producer_rate(produce("rf1", "1", 8196)))
    log("1 producer, 3x async replication", producer_rate(produce("rf3", "1", 8196)))
    wait_replicated(cluster, {"rf3": records})
    log("1 producer, 3x sync replication", producer_rate(produce("rf3-sync", "all", 64000)))
    three = [produce("rf3-three", "1", 8196) for _ in range(3)]
    log(
        "3 producers, 3x async replication",
        sum(producer_rate(p) for p in three),
        "sum of 3 processes",
    )
    wait_replicated(cluster, {"rf3-three": 3 * records})
    log("1 consumer", consumer_rate(start_consumer(bootstrap, "rf3", records), records))
    readers = [start_consumer(bootstrap, "rf3", records) for _ in range(3)]
    log(
        "3 consumers",
        sum(consumer_rate(c, records) for c in readers),
        "sum of 3 processes, each reads all",
    )
    consumer = start_consumer(bootstrap, "together", records)
    together = producer_rate(produce("together", "1", 8196))
    read = consumer_rate(consumer, records)
    log("producer and consumer together", together, f"consumer: {read:,.0f} records/s")
    note = f"--batch-send {BATCH_SEND} {' '.join(BATCH_SEND_PROPS)}"
    wait_replicated(cluster, {"together": records})
    rf1 = start_batch_producer(bootstrap, "rf1-batch", records, "1")
    log("1 producer send_batch, no replication", producer_rate(rf1), note)
    rf3 = start_batch_producer(bootstrap, "rf3-sync-batch", records, "all")
    log("1 producer send_batch, 3x sync replication", producer_rate(rf3), note)
    return rows


def table(
    rows: Sequence[Row], latencies: dict[int, LatencyResult], latency_rf: int = 3
) -> list[str]:
    lines = [
        "| Test | minikafka records/s | minikafka MB/s | Kafka 2014 records/s | Kafka 2014 MB/s "
        "| Note |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        kafka_rate, kafka_mb = KAFKA_2014[row.name]
        lines.append(
            f"| {row.name} | {row.records_per_s:,.0f} | {row.mb_per_s:.1f} | {kafka_rate:,} | "
            f"{kafka_mb:.1f} | {row.note} |"
        )
    k50, k99, k999 = KAFKA_2014_LATENCY
    for rate, result in sorted(latencies.items()):
        lines.append(
            f"| end-to-end latency p50 / p99 / p99.9 | {result.p50_ms:.1f} / "
            f"{result.p99_ms:.1f} / {result.p999_ms:.1f} ms | | {k50:.0f} / {k99:.0f} / "
            f"{k999:.0f} ms | | {rate:,} records/s due (sent at {result.achieved_rate:,.0f}), "
            f"acks=all, RF {latency_rf}, from the scheduled send time |"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies the record counts")
    parser.add_argument(
        "--records", type=int, default=1_000_000, help="records per test at scale 1"
    )
    parser.add_argument(
        "--latency-rate",
        type=int,
        action="append",
        help="records/s of the latency test; repeatable (default: 1000 and 10000)",
    )
    parser.add_argument("--latency-seconds", type=float, default=5.0)
    parser.add_argument(
        "--latency-only", action="store_true", help="run only row 8, the end-to-end latency"
    )
    parser.add_argument(
        "--latency-client",
        choices=("minikafka", "confluent"),
        default="minikafka",
        help="the latency row's clients: minikafka's over gRPC (default) or confluent-kafka's "
        "over the Kafka protocol",
    )
    parser.add_argument(
        "--latency-rf",
        type=int,
        choices=(1, 2, 3),
        default=3,
        help="the latency topic's replication factor (default 3; 1 leaves out the followers' "
        "round trip)",
    )
    parser.add_argument("--latency-consumer", nargs=4, help=argparse.SUPPRESS)
    add_port_base(parser)
    args = parser.parse_args(argv)
    if args.latency_consumer:
        bootstrap, topic, count, client = args.latency_consumer
        consume = confluent_latency_consumer if client == "confluent" else latency_consumer
        consume(bootstrap, topic, int(count))
        return
    configure_tool_logging()
    records = max(int(args.records * args.scale), 1000)
    speed = yardstick()  # before the cluster starts: on a quiet machine
    print(
        f"{os.cpu_count()} cores; {records:,} records of {RECORD_SIZE} bytes per test; "
        f"3 brokers, ZooKeeper and clients on one machine; machine yardstick: kafka-python "
        f"encodes {speed:,.0f} records/s",
        file=sys.stderr,
        flush=True,
    )
    started = time.monotonic()
    rows, latencies = run_classic(
        records,
        args.latency_rate or [1_000, 10_000],
        args.latency_seconds,
        client=args.latency_client,
        latency_rf=args.latency_rf,
        latency_only=args.latency_only,
        ports=ports_from(args),
    )
    print()
    print(
        f"minikafka on {os.cpu_count()} cores (everything on one machine), "
        f"{records:,} records of {RECORD_SIZE} bytes per test, "
        f"{time.monotonic() - started:.0f} s, kafka-python's encoder at {speed:,.0f} "
        "records/s on one core (the machine's speed); Kafka 2014: three brokers on "
        "commodity machines, 50 million records per test"
    )
    print()
    for line in table(rows, latencies, args.latency_rf):
        print(line)


def run_classic(
    records: int,
    latency_rates: Sequence[int],
    latency_seconds: float,
    *,
    client: str = "minikafka",
    latency_rf: int = 3,
    latency_only: bool = False,
    ports: Callable[[], int] = free_port,
) -> tuple[list[Row], dict[int, LatencyResult]]:
    """One run on a fresh cluster in a scratch directory (about 2 GB of logs at the default
    size, removed at the end however the run ends): the latency rows, then the throughput
    rows unless ``latency_only``."""
    with scratch_dir("kafka-classic-") as root:
        zookeeper, cluster = start_cluster(root, ports=ports)
        try:
            create_topics(
                cluster,
                {
                    "rf1": (PARTITIONS, 1),
                    "rf3": (PARTITIONS, 3),
                    "rf3-sync": (PARTITIONS, 3),
                    "rf3-three": (PARTITIONS, 3),
                    "together": (PARTITIONS, 3),
                    "rf1-batch": (PARTITIONS, 1),
                    "rf3-sync-batch": (PARTITIONS, 3),
                    "latency": (1, latency_rf),
                },
            )
            # Latency first, on a quiet cluster: after the throughput rows the followers are
            # still catching up for a while, and the test would time their backlog.
            latencies = {}
            for rate in latency_rates:
                latencies[rate] = latency_run(cluster, "latency", rate, latency_seconds, client)
                print(
                    f"  end-to-end latency at {rate:,} records/s: {latencies[rate].describe()}",
                    file=sys.stderr,
                    flush=True,
                )
            rows = [] if latency_only else run_rows(cluster, records)
        finally:
            cluster.close()
            zookeeper.stop()
    return rows, latencies


if __name__ == "__main__":
    main()
