"""The Kafka-protocol front door against the gRPC one, for the same work in the same run.

    python -m bench.kafka_protocol_bench [--records 1000000] [--rounds 3]
        [--security PLAINTEXT|SSL] [--record-size 100]

A local 3-broker cluster (ZooKeeper and brokers on 127.0.0.1, as bench.kafka_classic), 100-byte
records, topics of 6 partitions. Each round runs, one client process at a time:

- produce RF3 acks=all, then RF1 acks=1, each with minikafka's `perf-produce` over gRPC and
  with confluent-kafka's Producer (librdkafka, C) over the Kafka protocol, on topics of their
  own, both with librdkafka's default batch.size (1,000,000 bytes) and linger.ms 5;
- consume all of the RF3 topic with `perf-consume` over gRPC and with confluent-kafka's Consumer
  (its local queue made deep enough that it never pauses fetching for fetch.queue.backoff.ms).

``--security SSL`` runs the same rounds on a cluster whose listeners are TLS on both doors
(scripts/make-certs.sh's certificates, made for the run; Cluster's ``tls``: brokers replicate
over mutual TLS, minikafka's clients present a certificate, confluent-kafka's none) and first
measures the TLS handshake per connection to a Kafka listener, beside a bare TCP connect;
``--record-size`` sets the records' size (100 bytes by default). Run it with and without
``--security SSL`` for the two side by side.

Where kcat is installed (Debian's package), the same produce and consume runs also go through
kcat: librdkafka with no Python in the client, which shows what the brokers take when the
client costs little.

Beside each rate it prints the CPU time each process used (from /proc: user + system), in
cores: the client's and each broker's, so the run says whether the broker or the client is the
bottleneck. The medians and ranges over the rounds, and the machine yardstick (kafka-python's
encoder, bench.codec_bench), end the output.
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.codec_bench import yardstick
from bench.kafka_classic import (
    RECORD_SIZE,
    consumer_rate,
    producer_rate,
    python_module,
    start_consumer,
    wait_replicated,
)
from bench.local_cluster import start_cluster
from minikafka.client.admin import NewTopic, raise_first
from tests.integration.cluster import REPO_ROOT, Cluster

PARTITIONS = 6
BATCH_SIZE = 1_000_000  # librdkafka's default batch.size
LINGER_MS = 5
_TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS  # utime + stime


@dataclass(frozen=True)
class Options:
    """What every client of a run is given: the records' size and, for an SSL run, the
    certificates (None: PLAINTEXT)."""

    record_size: int = RECORD_SIZE
    certs: Path | None = None

    def kafka_config(self) -> dict[str, str]:
        """confluent-kafka's security settings (no client certificate: the Kafka listener
        asks for one without requiring it)."""
        if self.certs is None:
            return {}
        return {"security.protocol": "SSL", "ssl.ca.location": str(self.certs / "ca.pem")}

    def grpc_properties(self) -> list[str]:
        """minikafka's tools' ``key=value`` security settings (the gRPC listener requires a
        client certificate)."""
        if self.certs is None:
            return []
        return [
            "security.protocol=SSL",
            f"ssl.ca.location={self.certs / 'ca.pem'}",
            f"ssl.certificate.location={self.certs / 'admin.crt'}",
            f"ssl.key.location={self.certs / 'admin.key'}",
        ]

    def child_args(self) -> list[str]:
        certs = [] if self.certs is None else ["--certs", str(self.certs)]
        return ["--record-size", str(self.record_size), *certs]


@dataclass
class Result:
    rates: dict[str, list[float]] = field(default_factory=dict)
    cpu: dict[str, list[str]] = field(default_factory=dict)


# --- the confluent-kafka clients, as child processes ---------------------------------------------


def kafka_produce(
    bootstrap: str,
    topic: str,
    records: int,
    acks: str,
    batch_size: int,
    compression: str = "none",
    options: Options = Options(),
) -> None:
    """Child process: send ``records`` records of ``options.record_size`` bytes in the
    producer's ``compression``; print records/s over the whole run."""
    import confluent_kafka

    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": acks,
            "batch.size": batch_size,
            "linger.ms": LINGER_MS,
            "queue.buffering.max.messages": 2_000_000,
            "queue.buffering.max.kbytes": 1_048_576,
            "enable.idempotence": acks == "all",
            "compression.type": compression,
            **options.kafka_config(),
        }
    )
    produce_records(producer, topic, b"x" * options.record_size, records, flush_timeout_s=300)


def produce_records(
    producer: Any, topic: str, value: bytes, records: int, *, flush_timeout_s: float
) -> None:
    """Send ``records`` copies of ``value`` through a confluent_kafka.Producer as fast as it
    takes them (a full queue is waited out with poll), flush, and print records/s over the
    whole run; SystemExit when any delivery failed."""
    failed = 0

    def on_delivery(err: object, msg: object) -> None:
        nonlocal failed
        if err is not None:
            failed += 1

    start = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, value, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.01)
        producer.poll(0)
    producer.flush(flush_timeout_s)
    elapsed = time.perf_counter() - start
    if failed:
        raise SystemExit(f"{failed} records failed")
    print(f"{records / elapsed:.1f}", flush=True)


def kafka_consume(bootstrap: str, topic: str, records: int, options: Options = Options()) -> None:
    """Child process: read ``records`` records of the topic from the start; print records/s."""
    import confluent_kafka

    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{os.getpid()}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "fetch.max.bytes": 52428800,
            # librdkafka stops fetching for fetch.queue.backoff.ms (1 s) once a partition has
            # queued.min.messages waiting for the application: a client-side pause, not the
            # broker's, so keep the queue deep enough for the whole run.
            "queued.min.messages": 10_000_000,
            "queued.max.messages.kbytes": 2_097_151,
            **options.kafka_config(),
        }
    )
    consumer.assign([confluent_kafka.TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    seen = 0
    start = time.perf_counter()
    deadline = start + 300
    while seen < records and time.perf_counter() < deadline:
        for message in consumer.consume(10000, 1.0):
            if message.error() is None:
                seen += 1
    elapsed = time.perf_counter() - start
    consumer.close()
    if seen != records:
        raise SystemExit(f"read {seen} of {records} records")
    print(f"{records / elapsed:.1f}", flush=True)


def grpc_produce(
    bootstrap: str, topic: str, records: int, acks: str, options: Options = Options()
) -> subprocess.Popen[str]:
    """minikafka's perf-produce, with the producer settings the Kafka client gets."""
    return python_module(
        "minikafka", "perf-produce", "--topic", topic, "--num-records", str(records),
        "--record-size", str(options.record_size), "--throughput", "-1", "--producer-props",
        f"bootstrap.servers={bootstrap}", f"acks={acks}", f"batch.size={BATCH_SIZE}",
        f"linger.ms={LINGER_MS}", "buffer.memory=268435456", *options.grpc_properties(),
    )  # fmt: skip


def handshake_cost(address: str, certs: Path, connections: int = 200) -> tuple[float, float]:
    """Mean milliseconds per connection to a TLS Kafka listener: a TCP connect alone, and a
    TCP connect with the whole TLS handshake (the broker's certificate checked, none sent)."""
    host, port = address.rsplit(":", 1)
    context = ssl.create_default_context(cafile=str(certs / "ca.pem"))

    def timed(handshake: bool) -> float:
        start = time.perf_counter()
        for _ in range(connections):
            with socket.create_connection((host, int(port)), timeout=10) as raw:
                if handshake:
                    with context.wrap_socket(raw, server_hostname=host):
                        pass
        return (time.perf_counter() - start) * 1000 / connections

    return timed(False), timed(True)


def _records_file(records: int) -> Path:
    """``records`` lines of 99 bytes plus the newline: kcat's producer input."""
    path = Path(tempfile.gettempdir()) / f"kafka-protocol-bench-{records}.txt"
    if not path.exists() or path.stat().st_size != records * RECORD_SIZE:
        line = b"x" * (RECORD_SIZE - 1) + b"\n"
        with path.open("wb") as out:
            for _ in range(records // 10_000):
                out.write(line * 10_000)
            out.write(line * (records % 10_000))
    return path


@dataclass
class Timed:
    """A process whose rate is ``records`` over its wall time (kcat prints no rate)."""

    process: subprocess.Popen[str]
    records: int
    started: float

    def rate(self) -> float:
        _, err = self.process.communicate(timeout=900)
        if self.process.returncode != 0:
            raise RuntimeError(f"kcat failed ({self.process.returncode}): {err.strip()[-500:]}")
        return self.records / (time.perf_counter() - self.started)


def kcat_produce(bootstrap: str, topic: str, records: int, acks: str) -> Timed:
    source = _records_file(records).open("rb")
    started = time.perf_counter()
    process = subprocess.Popen(
        ["kcat", "-P", "-b", bootstrap, "-t", topic, "-X", f"acks={acks}",
         "-X", f"enable.idempotence={'true' if acks == 'all' else 'false'}",
         "-X", f"batch.size={BATCH_SIZE}", "-X", f"linger.ms={LINGER_MS}",
         "-X", "queue.buffering.max.kbytes=1048576", "-X", "queue.buffering.max.messages=2000000"],
        stdin=source, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    source.close()
    return Timed(process, records, started)


def kcat_consume(bootstrap: str, topic: str, records: int) -> Timed:
    started = time.perf_counter()
    process = subprocess.Popen(
        ["kcat", "-C", "-b", bootstrap, "-t", topic, "-o", "beginning", "-e", "-q",
         "-c", str(records), "-f", "", "-X", "queued.min.messages=10000000"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    return Timed(process, records, started)


def _child(*argv: str) -> subprocess.Popen[str]:
    return python_module("bench.kafka_protocol_bench", *argv)


def _child_rate(process: subprocess.Popen[str], what: str) -> float:
    out, err = process.communicate(timeout=900)
    if process.returncode != 0:
        raise RuntimeError(f"{what} failed ({process.returncode}): {err.strip()[-500:]}")
    return float(out.strip().splitlines()[-1])


# --- a round -----------------------------------------------------------------------------------


def _measured(
    cluster: Cluster, start: Callable[[], Any], rate: Callable[..., float]
) -> tuple[float, str]:
    """Run one client process; its rate and the CPU (in cores) of it and of each broker."""
    brokers = {
        b.broker_id: b.process.pid for b in cluster.brokers.values() if b.process is not None
    }
    before = {i: _cpu_seconds(pid) for i, pid in brokers.items()}
    began = time.perf_counter()
    started = start()
    process = started.process if isinstance(started, Timed) else started
    client_cpu = 0.0
    # The client's CPU is read just before it exits: poll its /proc entry while it runs.
    while process.poll() is None:
        try:
            client_cpu = _cpu_seconds(process.pid)
        except (FileNotFoundError, ProcessLookupError):
            break
        time.sleep(0.05)
    result = rate(started)
    wall = time.perf_counter() - began
    after = {i: _cpu_seconds(pid) for i, pid in brokers.items()}
    cores = ", ".join(f"broker {i} {(after[i] - before[i]) / wall:.2f}" for i in sorted(brokers))
    return result, f"client {client_cpu / wall:.2f}, {cores}"


def create_topic(
    cluster: Cluster, name: str, replication_factor: int, configs: dict[str, str] | None = None
) -> None:
    """A topic of PARTITIONS partitions, waited for until each has a leader."""
    topic = NewTopic(name, PARTITIONS, replication_factor, configs=configs or {})
    with cluster.admin() as admin:
        raise_first(admin.create_topics([topic]))
    for partition in range(PARTITIONS):
        cluster.wait_for(
            lambda p=partition: cluster.leader(name, p) >= 0,  # type: ignore[misc]
            30,
            f"a leader for {name}-{partition}",
        )


def run_round(
    options: Options, cluster: Cluster, records: int, round_no: int, result: Result
) -> None:
    grpc_bootstrap = cluster.bootstrap_servers
    kafka_bootstrap = cluster.kafka_bootstrap_servers

    def note(name: str, rate: float, cpu: str) -> None:
        result.rates.setdefault(name, []).append(rate)
        result.cpu.setdefault(name, []).append(cpu)
        print(f"  {name}: {rate:,.0f} records/s (CPU cores: {cpu})", file=sys.stderr, flush=True)

    for acks, rf in (("all", 3), ("1", 1)):
        batch_size = BATCH_SIZE
        label = f"RF{rf} acks={acks}"
        grpc_topic, kafka_topic = f"g-rf{rf}-{round_no}", f"k-rf{rf}-{round_no}"
        create_topic(cluster, grpc_topic, rf)
        create_topic(cluster, kafka_topic, rf)
        rate, cpu = _measured(
            cluster,
            lambda t=grpc_topic, a=acks: grpc_produce(  # type: ignore[misc]
                grpc_bootstrap, t, records, a, options
            ),
            producer_rate,
        )
        note(f"produce {label}, gRPC (minikafka perf-produce)", rate, cpu)
        rate, cpu = _measured(
            cluster,
            lambda t=kafka_topic, a=acks, b=batch_size: _child(  # type: ignore[misc]
                *options.child_args(), "--produce", kafka_bootstrap, t, str(records), a, str(b)
            ),
            lambda p: _child_rate(p, "confluent-kafka producer"),
        )
        note(f"produce {label}, Kafka protocol (confluent-kafka)", rate, cpu)
        if shutil.which("kcat") and options.certs is None:
            kcat_topic = f"c-rf{rf}-{round_no}"
            create_topic(cluster, kcat_topic, rf)
            rate, cpu = _measured(
                cluster,
                lambda t=kcat_topic, a=acks: kcat_produce(  # type: ignore[misc]
                    kafka_bootstrap, t, records, a
                ),
                Timed.rate,
            )
            note(f"produce {label}, Kafka protocol (kcat)", rate, cpu)

    wait_replicated(cluster, {f"g-rf3-{round_no}": records, f"k-rf3-{round_no}": records})
    topic = f"k-rf3-{round_no}"
    rate, cpu = _measured(
        cluster,
        lambda: start_consumer(grpc_bootstrap, topic, records, options.grpc_properties()),
        lambda p: consumer_rate(p, records),
    )
    note("consume, gRPC (minikafka perf-consume)", rate, cpu)
    rate, cpu = _measured(
        cluster,
        lambda: _child(*options.child_args(), "--consume", kafka_bootstrap, topic, str(records)),
        lambda p: _child_rate(p, "confluent-kafka consumer"),
    )
    note("consume, Kafka protocol (confluent-kafka)", rate, cpu)
    if shutil.which("kcat") and options.certs is None:
        rate, cpu = _measured(
            cluster, lambda: kcat_consume(kafka_bootstrap, topic, records), Timed.rate
        )
        note("consume, Kafka protocol (kcat)", rate, cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--produce",
        nargs="+",
        metavar="ARG",
        help="child: BOOTSTRAP TOPIC N ACKS BATCH [COMPRESSION]",
    )
    parser.add_argument("--consume", nargs=3, metavar=("BOOTSTRAP", "TOPIC", "N"))
    parser.add_argument("--security", choices=("PLAINTEXT", "SSL"), default="PLAINTEXT")
    parser.add_argument("--record-size", type=int, default=RECORD_SIZE)
    parser.add_argument("--certs", type=Path, help="child: the run's certificates (SSL)")
    args = parser.parse_args()
    options = Options(args.record_size, args.certs)
    if args.produce:
        bootstrap, topic, n, acks, batch, *codec = args.produce
        compression = codec[0] if codec else "none"
        kafka_produce(bootstrap, topic, int(n), acks, int(batch), compression, options)
        return
    if args.consume:
        bootstrap, topic, n = args.consume
        kafka_consume(bootstrap, topic, int(n), options)
        return

    machine = yardstick()
    if args.security == "SSL":
        certs = Path(tempfile.mkdtemp(prefix="kafka-protocol-bench-certs-"))
        subprocess.run([str(REPO_ROOT / "scripts" / "make-certs.sh"), str(certs)], check=True)
        options = Options(args.record_size, certs)
    result = run_rounds(
        "kafka-protocol-bench-",
        args.rounds,
        args.records,
        functools.partial(run_round, options),
        tls=options.certs,
        before=None if options.certs is None else _print_handshake_cost,
    )
    print(f"\n{args.records:,} records of {options.record_size} bytes, {args.rounds} rounds, "
          f"{args.security}, {time.strftime('%Y-%m-%d')}; machine yardstick (kafka-python "
          f"encoder): {machine:,.0f} records/s")  # fmt: skip
    print_table(result, "test")


def _print_handshake_cost(cluster: Cluster) -> None:
    assert cluster.tls is not None
    tcp_ms, tls_ms = handshake_cost(cluster.brokers[0].kafka_address, cluster.tls)
    print(
        f"per connection to a Kafka TLS listener: TCP connect {tcp_ms:.2f} ms, "
        f"TCP connect + TLS handshake {tls_ms:.2f} ms",
        flush=True,
    )


def run_rounds(
    prefix: str,
    rounds: int,
    records: int,
    run_round: Callable[[Cluster, int, int, Result], None],
    *,
    tls: Path | None = None,
    before: Callable[[Cluster], None] | None = None,
) -> Result:
    """``run_round(cluster, records, round_no, result)`` ``rounds`` times on one local
    3-broker cluster, started in a temporary directory named ``prefix...`` and closed after
    (``tls``: its listeners TLS, with these certificates); ``before(cluster)`` runs first."""
    result = Result()
    zookeeper, cluster = start_cluster(Path(tempfile.mkdtemp(prefix=prefix)), tls=tls)
    try:
        if before is not None:
            before(cluster)
        for round_no in range(rounds):
            print(f"round {round_no + 1} of {rounds}", file=sys.stderr, flush=True)
            run_round(cluster, records, round_no, result)
    finally:
        cluster.close()
        zookeeper.stop()
    return result


def print_table(result: Result, first_column: str) -> None:
    """One markdown row per test: median records/s, range, the CPU of the median run."""
    print(f"| {first_column} | median records/s | range | CPU cores of the median run |")
    print("|---|---:|---|---|")
    for name, rates in result.rates.items():
        median = statistics.median(rates)
        at = min(range(len(rates)), key=lambda i: abs(rates[i] - median))
        print(
            f"| {name} | {median:,.0f} | {min(rates):,.0f} to {max(rates):,.0f} "
            f"| {result.cpu[name][at]} |"
        )


if __name__ == "__main__":
    main()
