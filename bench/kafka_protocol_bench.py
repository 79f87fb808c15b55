"""The Kafka-protocol front door against the gRPC one, for the same work in the same run.

    python -m bench.kafka_protocol_bench [--records 1000000] [--rounds 3]
        [--security PLAINTEXT|SSL] [--record-size 100]
    python -m bench.kafka_protocol_bench --security PLAINTEXT,SSL,SASL_SSL
        [--records 1000000] [--rounds 3] [--record-size 100,10000] [--connections 200]
    python -m bench.kafka_protocol_bench --security PLAINTEXT,SSL,SASL_SSL --smoke
    (each also takes --port-base N, or $MINIKAFKA_BENCH_PORT_BASE: bench/hygiene.py)

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

``--security`` naming several protocols (or SASL_SSL) compares them side by side in one run
(issue 31): the Kafka door with confluent-kafka only, produce RF3 acks=all and consume, for
each ``--record-size`` (100 and 10,000 bytes by default; records above 100 bytes send 4x the
bytes of the 100-byte run). Each round starts one fresh 3-broker cluster per protocol, one
after another on one ZooKeeper, the protocols' order turned by one each round so that the
machine's drift and the first place hit each alike: PLAINTEXT; SSL (as above); SASL_SSL, the
Kafka listener TLS then SASL, clients logging in with SCRAM-SHA-256 and the brokers
replicating over it as admin with SCRAM-SHA-256 too (the gRPC listener stays mutual TLS). On
each cluster it then times ``--connections`` connections of its kind, one after another
(bench.connection_cost): a TCP connect; TCP and the TLS handshake; TCP, TLS and a SASL login
with SCRAM-SHA-256, SCRAM-SHA-512 and PLAIN; median and p99 per round. ``--smoke`` runs all
of it with small counts, to prove it works, not to measure.

Everything a run writes (certificates, ZooKeeper, the brokers' logs, kcat's input file) is in
one temporary directory, deleted at the end however the run ends (bench/hygiene.py: an
error, Ctrl-C, SIGTERM); ``--port-base N`` puts ZooKeeper and the brokers on ports from N up.

Where kcat is installed (Debian's package), the same produce and consume runs also go through
kcat: librdkafka with no Python in the client, which shows what the brokers take when the
client costs little.

Beside each rate it prints the CPU time each process used (from /proc: user + system), in
cores: the client's and each broker's, so the run says whether the broker or the client is the
bottleneck. The medians and ranges over the rounds, and the machine yardstick (kafka-python's
encoder, bench.codec_bench), the load average before and after and the date end the output.
"""

from __future__ import annotations

import argparse
import functools
import os
import secrets
import shutil
import socket
import ssl
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.codec_bench import yardstick
from bench.connection_cost import (
    connect_sasl,
    connect_tcp,
    connect_tls,
    setup_times,
    summary_ms,
)
from bench.hygiene import add_port_base, ports_from, remove_tree, scratch_dir
from bench.kafka_classic import (
    RECORD_SIZE,
    consumer_rate,
    producer_rate,
    python_module,
    start_consumer,
    wait_replicated,
)
from bench.local_cluster import new_cluster, start_cluster
from bench.stats import summary
from minikafka.broker.security.sasl.scram import (
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    credential_from_password,
)
from minikafka.client.admin import NewTopic, raise_first
from tests.integration.cluster import REPO_ROOT, Cluster
from tests.integration.zookeeper import ZooKeeperServer, free_port

PARTITIONS = 6
BATCH_SIZE = 1_000_000  # librdkafka's default batch.size
LINGER_MS = 5
_TICKS = os.sysconf("SC_CLK_TCK")
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_SSL")
LOGIN_MECHANISM = "SCRAM-SHA-256"  # the clients' and the brokers' login on SASL_SSL
MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN")  # timed per connection
BENCH_USER = "bench"
# The run's password reaches the client processes here, never on a command line (ps shows
# those); it is made for the run, like the certificates.
PASSWORD_ENV = "MINIKAFKA_BENCH_SASL_PASSWORD"
SIZE_FACTOR = 4  # records above 100 bytes: 4x the bytes of the 100-byte run


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS  # utime + stime


@dataclass(frozen=True)
class Options:
    """What every client of a run is given: the records' size, for an SSL run the
    certificates (None: PLAINTEXT), and for SASL_SSL the mechanism the Kafka clients log in
    with (as BENCH_USER, the password in PASSWORD_ENV)."""

    record_size: int = RECORD_SIZE
    certs: Path | None = None
    sasl_mechanism: str | None = None

    def kafka_config(self) -> dict[str, str]:
        """confluent-kafka's security settings (no client certificate: the Kafka listener
        asks for one without requiring it)."""
        if self.certs is None:
            return {}
        tls = {"security.protocol": "SSL", "ssl.ca.location": str(self.certs / "ca.pem")}
        if self.sasl_mechanism is None:
            return tls
        return {
            **tls,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": self.sasl_mechanism,
            "sasl.username": BENCH_USER,
            "sasl.password": os.environ[PASSWORD_ENV],
        }

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
        sasl = [] if self.sasl_mechanism is None else ["--sasl-mechanism", self.sasl_mechanism]
        return ["--record-size", str(self.record_size), *certs, *sasl]


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


def _records_file(records: int, directory: Path) -> Path:
    """``records`` lines of 99 bytes plus the newline: kcat's producer input, in ``directory``
    (the run's scratch directory: 96 MiB at a million records, removed with it)."""
    path = directory / f"kcat-input-{records}.txt"
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


def kcat_produce(bootstrap: str, topic: str, records: int, acks: str, directory: Path) -> Timed:
    source = _records_file(records, directory).open("rb")
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
                    kafka_bootstrap, t, records, a, cluster.tmp_path
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
    parser.add_argument(
        "--security",
        type=_protocols,
        default=["PLAINTEXT"],
        help="PLAINTEXT, SSL or SASL_SSL, or several, comma-separated, side by side",
    )
    parser.add_argument(
        "--record-size", type=_sizes, help="bytes a record (several, comma-separated, side by side)"
    )
    parser.add_argument(
        "--connections", type=int, default=200, help="connections timed per kind and round"
    )
    parser.add_argument(
        "--smoke", action="store_true", help="small counts: proves the run works, measures nothing"
    )
    parser.add_argument("--certs", type=Path, help="child: the run's certificates (SSL)")
    parser.add_argument("--sasl-mechanism", help="child: log in as the bench user (SASL_SSL)")
    add_port_base(parser)
    args = parser.parse_args()
    sizes: list[int] = args.record_size or [RECORD_SIZE]
    options = Options(sizes[0], args.certs, args.sasl_mechanism)
    if args.produce:
        bootstrap, topic, n, acks, batch, *codec = args.produce
        compression = codec[0] if codec else "none"
        kafka_produce(bootstrap, topic, int(n), acks, int(batch), compression, options)
        return
    if args.consume:
        bootstrap, topic, n = args.consume
        kafka_consume(bootstrap, topic, int(n), options)
        return
    if args.smoke:
        args.records, args.rounds, args.connections = 3000, 2, 20
    if len(args.security) > 1 or "SASL_SSL" in args.security:
        compare_security(
            args.security, args.record_size or [RECORD_SIZE, 10_000], args.records, args.rounds,
            args.connections, ports_from(args),
        )  # fmt: skip
        return
    if len(sizes) > 1:
        parser.error("--record-size takes one size unless --security names several protocols")

    before = _machine()
    with scratch_dir("kafka-protocol-bench-certs-") as root:
        if args.security == ["SSL"]:
            certs = root / "certs"
            _make_certs(certs)
            options = Options(options.record_size, certs)
        result = run_rounds(
            "kafka-protocol-bench-",
            args.rounds,
            args.records,
            functools.partial(run_round, options),
            tls=options.certs,
            before=None if options.certs is None else _print_handshake_cost,
            ports=ports_from(args),
        )
    print(f"\n{args.records:,} records of {options.record_size} bytes, {args.rounds} rounds, "
          f"{args.security[0]}; {before}, load average after {_load_average()}")  # fmt: skip
    print_table(result, "test")


def _protocols(text: str) -> list[str]:
    names = [name.strip().upper() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in PROTOCOLS]
    if not names or unknown or len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(
            f"{text!r}: name each of {', '.join(PROTOCOLS)} at most once, comma-separated"
        )
    return names


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(size) for size in text.split(",")]
    except ValueError:
        sizes = []
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: positive byte counts, comma-separated")
    return sizes


def _load_average() -> str:
    return " ".join(f"{load:.2f}" for load in os.getloadavg())


def _machine() -> str:
    """The date, the commit, the load average and the machine yardstick, before a run."""
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True
    ).stdout.strip()
    load = _load_average()  # before the yardstick's own load
    machine = yardstick()
    return (
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, at {commit or 'unknown'}, "
        f"load average before {load}, machine yardstick (kafka-python encoder) "
        f"{machine:,.0f} records/s"
    )


def _make_certs(directory: Path) -> None:
    subprocess.run(
        [str(REPO_ROOT / "scripts" / "make-certs.sh"), str(directory)],
        check=True,
        stdout=subprocess.DEVNULL,
    )


# --- PLAINTEXT, SSL and SASL_SSL side by side --------------------------------------------------


@dataclass
class Connections:
    """Per kind of connection setup, each round's median and p99 in ms."""

    medians: dict[str, list[float]] = field(default_factory=dict)
    p99s: dict[str, list[float]] = field(default_factory=dict)

    def add(self, kind: str, times: list[float]) -> None:
        median, p99 = summary_ms(times)
        self.medians.setdefault(kind, []).append(median)
        self.p99s.setdefault(kind, []).append(p99)
        print(f"  {kind}: median {median:.2f} ms, p99 {p99:.2f} ms", file=sys.stderr, flush=True)


def sasl_overrides(password: str) -> dict[str, str]:
    """The Kafka listener's SASL keys (its name is KAFKA_SSL on a TLS Cluster): every
    mechanism enabled, brokers logging in to each other as admin with LOGIN_MECHANISM, PLAIN's
    users in its JAAS config (SCRAM's are in ZooKeeper)."""
    scram = (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="admin" password="{password}";'
    )
    plain = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="admin" password="{password}" user_admin="{password}" '
        f'user_{BENCH_USER}="{password}";'
    )
    return {
        "sasl.enabled.mechanisms": ",".join(MECHANISMS),
        "sasl.mechanism.inter.broker.protocol": LOGIN_MECHANISM,
        "listener.name.kafka_ssl.plain.sasl.jaas.config": plain,
        "listener.name.kafka_ssl.scram-sha-256.sasl.jaas.config": scram,
        "listener.name.kafka_ssl.scram-sha-512.sasl.jaas.config": scram,
    }


def start_secured(
    zookeeper: ZooKeeperServer,
    root: Path,
    protocol: str,
    certs: Path | None,
    password: str,
    ports: Callable[[], int] = free_port,
) -> Cluster:
    """A serving 3-broker cluster whose Kafka listener is ``protocol`` (followers replicate
    over it); for SASL_SSL, admin's and BENCH_USER's SCRAM credentials (4096 iterations,
    Kafka's minimum) are in ZooKeeper before any broker starts."""
    if protocol == "PLAINTEXT":
        cluster = new_cluster(zookeeper, root, ports=ports)
    elif protocol == "SSL":
        cluster = new_cluster(zookeeper, root, tls=certs, ports=ports)
    else:
        cluster = new_cluster(
            zookeeper, root, overrides=sasl_overrides(password), tls=certs, ports=ports
        )
        credentials = {
            "SCRAM-SHA-256": credential_from_password(SCRAM_SHA_256, password).to_string(),
            "SCRAM-SHA-512": credential_from_password(SCRAM_SHA_512, password).to_string(),
        }
        cluster.zk.update_user_configs(
            {user: lambda c: {**c, **credentials} for user in ("admin", BENCH_USER)}
        )
        for broker_id in cluster.brokers:  # the Cluster's TLS names both listeners SSL
            cluster.write_config(
                broker_id, {"listener.security.protocol.map": "SSL:SSL,KAFKA_SSL:SASL_SSL"}
            )
    try:
        cluster.start_all()
        cluster.wait_until_serving()
    except BaseException:  # the caller gets no cluster to close
        cluster.close()
        raise
    return cluster


def records_for(size: int, records: int) -> int:
    """``records`` of 100 bytes; of larger records, SIZE_FACTOR times those bytes."""
    if size <= RECORD_SIZE:
        return records
    return max(1, records * RECORD_SIZE * SIZE_FACTOR // size)


def security_round(
    cluster: Cluster,
    protocol: str,
    certs: Path | None,
    sizes: Sequence[int],
    records: int,
    result: Result,
) -> None:
    """Produce RF3 acks=all and consume each size with confluent-kafka, over ``protocol``."""
    bootstrap = cluster.kafka_bootstrap_servers
    for size in sizes:
        count = records_for(size, records)
        options = Options(
            size,
            None if protocol == "PLAINTEXT" else certs,
            LOGIN_MECHANISM if protocol == "SASL_SSL" else None,
        )
        topic = f"rf3-{size}"
        create_topic(cluster, topic, 3)
        produce = ["--produce", bootstrap, topic, str(count), "all", str(BATCH_SIZE)]
        consume = ["--consume", bootstrap, topic, str(count)]
        for test, argv, what in (
            (f"produce {size:,} B RF3 acks=all", produce, "confluent-kafka producer"),
            (f"consume {size:,} B", consume, "confluent-kafka consumer"),
        ):
            rate, cpu = _measured(
                cluster,
                functools.partial(_child, *options.child_args(), *argv),
                functools.partial(_child_rate, what=what),
            )
            name = f"{test}|{protocol}"
            result.rates.setdefault(name, []).append(rate)
            result.cpu.setdefault(name, []).append(cpu)
            print(
                f"  {test}, {protocol}: {rate:,.0f} records/s, {rate * size / 1e6:.1f} MB/s "
                f"(CPU cores: {cpu})",
                file=sys.stderr,
                flush=True,
            )
            if test.startswith("produce"):
                wait_replicated(cluster, {topic: count})


def time_connections(
    cluster: Cluster,
    protocol: str,
    certs: Path | None,
    password: str,
    connections: int,
    out: Connections,
) -> None:
    """Each kind of connection setup ``protocol``'s Kafka listener takes, to broker 0."""
    address = cluster.brokers[0].kafka_address
    if protocol == "PLAINTEXT":
        out.add("TCP connect (PLAINTEXT)", setup_times(connect_tcp(address), connections))
        return
    assert certs is not None
    ca_file = str(certs / "ca.pem")
    if protocol == "SSL":
        out.add(
            "TCP + TLS handshake (SSL)", setup_times(connect_tls(address, ca_file), connections)
        )
        return
    for mechanism in MECHANISMS:
        login = connect_sasl(address, ca_file, mechanism, BENCH_USER, password)
        out.add(f"TCP + TLS + SASL {mechanism} login (SASL_SSL)", setup_times(login, connections))


def compare_security(
    protocols: Sequence[str],
    sizes: Sequence[int],
    records: int,
    rounds: int,
    connections: int,
    ports: Callable[[], int] = free_port,
) -> None:
    """See the module docstring: every protocol each round, their order turned each round."""
    before = _machine()
    with scratch_dir("kafka-protocol-bench-") as root:
        result, times = _compare_security(
            root, protocols, sizes, records, rounds, connections, ports
        )
    print(
        f"\nconfluent-kafka over the Kafka protocol, {rounds} rounds, records of "
        f"{', '.join(f'{size:,}' for size in sizes)} bytes ({records:,} records of 100 B, "
        f"{SIZE_FACTOR}x those bytes in larger ones); SASL_SSL clients log in with "
        f"{LOGIN_MECHANISM}; {connections} connections per kind and round; {before}, "
        f"load average after {_load_average()}\n"
    )
    print_side_by_side(result, protocols, sizes)
    print()
    print_connections(times)


def _compare_security(
    root: Path,
    protocols: Sequence[str],
    sizes: Sequence[int],
    records: int,
    rounds: int,
    connections: int,
    ports: Callable[[], int],
) -> tuple[Result, Connections]:
    password = secrets.token_urlsafe(18)
    os.environ[PASSWORD_ENV] = password  # for the client processes, which inherit it
    result, times = Result(), Connections()
    zookeeper = ZooKeeperServer(root / "zookeeper", port=ports())
    try:
        certs = None
        if any(protocol != "PLAINTEXT" for protocol in protocols):
            certs = root / "certs"
            _make_certs(certs)
        zookeeper.start()
        for round_no in range(rounds):
            turn = round_no % len(protocols)
            for protocol in [*protocols[turn:], *protocols[:turn]]:
                print(f"round {round_no + 1} of {rounds}: {protocol}", file=sys.stderr, flush=True)
                directory = root / f"cluster-{round_no}-{protocol}"
                cluster = start_secured(zookeeper, directory, protocol, certs, password, ports)
                try:
                    security_round(cluster, protocol, certs, sizes, records, result)
                    time_connections(cluster, protocol, certs, password, connections, times)
                finally:
                    cluster.close()
                    remove_tree(directory)  # its logs: disk for the next
    finally:
        zookeeper.stop()
        del os.environ[PASSWORD_ENV]
    return result, times


def print_side_by_side(result: Result, protocols: Sequence[str], sizes: Sequence[int]) -> None:
    """One row per test, one column per protocol: records/s median (range), MB/s of the
    median; below each, the CPU cores of the median round."""
    print(f"| test, records/s: median (range), MB/s | {' | '.join(protocols)} |")
    print(f"|---|{'---:|' * len(protocols)}")
    for size in sizes:
        for test in (f"produce {size:,} B RF3 acks=all", f"consume {size:,} B"):
            cells, cpus = [], []
            for protocol in protocols:
                rates = result.rates.get(f"{test}|{protocol}", [])
                if not rates:
                    cells.append("-")
                    cpus.append("-")
                    continue
                median = statistics.median(rates)
                at = min(range(len(rates)), key=lambda i: abs(rates[i] - median))
                cells.append(f"{summary(rates)}, {median * size / 1e6:.1f} MB/s")
                cpus.append(result.cpu[f"{test}|{protocol}"][at])
            print(f"| {test} | {' | '.join(cells)} |")
            print(f"| CPU cores of the median round | {' | '.join(cpus)} |")


def print_connections(times: Connections) -> None:
    print("| connection setup, ms | median (range over rounds) | p99 (range over rounds) |")
    print("|---|---:|---:|")
    for kind, medians in times.medians.items():
        print(f"| {kind} | {summary(medians, ',.2f')} | {summary(times.p99s[kind], ',.2f')} |")


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
    ports: Callable[[], int] = free_port,
    result: Result | None = None,
) -> Result:
    """``run_round(cluster, records, round_no, result)`` ``rounds`` times on one local
    3-broker cluster, started in a scratch directory named ``prefix...``, closed and deleted
    after however the run ends (``tls``: its listeners TLS, with these certificates; ``ports``:
    its listen ports); ``before(cluster)`` runs first; ``result``: add to this one."""
    result = Result() if result is None else result
    with scratch_dir(prefix) as root:
        zookeeper, cluster = start_cluster(root, tls=tls, ports=ports)
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
