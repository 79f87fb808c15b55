"""Every table of issue 35 in one run, back to back, and one table of the figures with their
ratios to the peers.

    python -m bench.run_all [--rounds 3] [--quick] [--port-base N] [--records 1000000]
        [--latency-seconds 5]

Each round, one after another, each on servers of its own started for it:

1. the Kreps table (bench.kafka_classic) on a fresh 3-broker cluster, its latency row first as
   that bench runs it, at 10,000 records/s with confluent-kafka (RF3 acks=all, from each
   record's scheduled send time, bench/latency.py);
2. the Kafka-protocol table (bench.kafka_protocol_bench, PLAINTEXT) on another fresh cluster;
3. Redis Streams and NATS JetStream R3 (bench.peers): produce and consume of 100-byte records
   and the same latency run.

Then one markdown table: each figure's median and range over the rounds (bench/stats.py), the
peers' figures beside the ones they compare with (produce, consume, latency p50 and p99) and
the ratio minikafka / peer (records/s: above 1 is faster than the peer; ms: above 1 is
slower), Kafka 2014's figures beside the Kreps rows. Before it: the date, the commit, the load
average before and after, and the machine yardstick (kafka-python's encoder, bench.codec_bench)
before and after.

``--quick``: small counts and one round, to prove the whole run works (about two minutes), not
to measure. ``--port-base N`` (or $MINIKAFKA_BENCH_PORT_BASE): every server on ports from N up.
Everything the run writes is in scratch directories removed at the end, however it ends. The
peers need ``redis-server`` and ``nats-server`` (``apt-get install redis-server nats-server``)
and their clients (``pip install redis nats-py``); without them the run stops at once and says
so.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from bench.codec_bench import yardstick
from bench.hygiene import PORT_SPAN, add_port_base, ports_from, scratch_dir
from bench.kafka_classic import KAFKA_2014, KAFKA_2014_LATENCY, run_classic
from bench.kafka_protocol_bench import Options, Result, _load_average, _machine, run_rounds
from bench.kafka_protocol_bench import run_round as protocol_round
from bench.latency import LatencyResult
from bench.peers import (
    NATS,
    REDIS,
    MissingPeer,
    PeerResult,
    check_peers,
    describe,
    run_nats,
    run_redis,
)
from bench.stats import summary
from minikafka.client.cli._logging import configure_tool_logging

LATENCY_RATE = 10_000
KAFKA_2014_NAME = "Kafka 2014"
PEERS = (REDIS, NATS, KAFKA_2014_NAME)
PORTS_PER_ROUND = 40  # 10 per Kafka cluster (ZooKeeper, 3 brokers x 3), 1 Redis, 6 NATS


@dataclass
class Figure:
    """One row of the table: minikafka's value in each round, and each peer's it compares with
    (Kafka 2014's: the one published figure)."""

    name: str
    unit: str  # "records/s" or "ms"
    values: list[float] = field(default_factory=list)
    peers: dict[str, list[float]] = field(default_factory=dict)
    note: str = ""


def ratio(value: float, peer: float) -> str:
    return f"{value / peer:.2f}" if peer > 0 else "-"


def _cell(values: Sequence[float], fmt: str) -> str:
    """``median (min-max)``, or the one value of a single round."""
    return summary(values, fmt) if len(values) > 1 else f"{values[0]:{fmt}}"


def format_table(figures: Sequence[Figure], peers: Sequence[str] = PEERS) -> list[str]:
    """Markdown: figure, minikafka, then each peer's figure and minikafka / that figure."""
    header = ["figure", "minikafka"]
    for peer in peers:
        header += [peer, f"/ {peer}"]
    lines = [
        "| " + " | ".join([*header, "note"]) + " |",
        "|---|" + "---:|" * (len(header) - 1) + "---|",
    ]
    for figure in figures:
        fmt = ",.2f" if figure.unit == "ms" else ",.0f"
        cells = [f"{figure.name}, {figure.unit}", _cell(figure.values, fmt)]
        for peer in peers:
            theirs = figure.peers.get(peer)
            if not theirs or not figure.values:
                cells += ["-", "-"]
                continue
            cells.append(_cell(theirs, fmt))
            cells.append(ratio(statistics.median(figure.values), statistics.median(theirs)))
        lines.append("| " + " | ".join([*cells, figure.note]) + " |")
    return lines


@dataclass
class Collected:
    """Every round's figures, in the order they are printed."""

    classic: dict[str, list[float]] = field(default_factory=dict)
    protocol: Result = field(default_factory=Result)
    latency: list[LatencyResult] = field(default_factory=list)
    peers: dict[str, list[PeerResult]] = field(default_factory=dict)

    def figures(self) -> list[Figure]:
        redis = self.peers.get(REDIS, [])
        nats = self.peers.get(NATS, [])

        def peer_values(kind: str) -> dict[str, list[float]]:
            return {
                REDIS: [getattr(r, kind) for r in redis],
                NATS: [getattr(r, kind) for r in nats],
            }

        figures = []
        for name, values in self.classic.items():
            kafka_rate = float(KAFKA_2014[name][0])
            figures.append(
                Figure(f"Kreps: {name}", "records/s", values, {KAFKA_2014_NAME: [kafka_rate]})
            )
        for name, values in self.protocol.rates.items():
            kind = "produce" if name.startswith("produce") else "consume"
            figures.append(Figure(f"protocol: {name}", "records/s", values, peer_values(kind)))
        if self.latency:
            sent = [
                f"{name} {statistics.median(r.latency.achieved_rate for r in results):,.0f}"
                for name, results in ((REDIS, redis), (NATS, nats))
                if results
            ]
            minikafka = statistics.median(r.achieved_rate for r in self.latency)
            note = (
                f"records/s sent (target {LATENCY_RATE:,}): minikafka {minikafka:,.0f}, "
                + ", ".join(sent)
            )
            for label, attribute, kafka in (
                ("p50", "p50_ms", KAFKA_2014_LATENCY[0]),
                ("p99", "p99_ms", KAFKA_2014_LATENCY[1]),
            ):
                peers = {
                    REDIS: [getattr(r.latency, attribute) for r in redis],
                    NATS: [getattr(r.latency, attribute) for r in nats],
                    KAFKA_2014_NAME: [kafka],
                }
                values = [getattr(r, attribute) for r in self.latency]
                figures.append(
                    Figure(
                        f"end-to-end latency {label} at {LATENCY_RATE:,} records/s, RF3 acks=all "
                        "(confluent-kafka)",
                        "ms",
                        values,
                        peers,
                        note,
                    )
                )
        return figures


def one_round(
    collected: Collected,
    records: int,
    latency_seconds: float,
    ports: Callable[[], int],
) -> None:
    """Every bench once, on servers of their own, adding to ``collected``."""
    print("Kreps table and latency (bench.kafka_classic)", file=sys.stderr, flush=True)
    rows, latencies = run_classic(
        records, [LATENCY_RATE], latency_seconds, client="confluent", ports=ports
    )
    for row in rows:
        collected.classic.setdefault(row.name, []).append(row.records_per_s)
    collected.latency.append(latencies[LATENCY_RATE])
    print("Kafka-protocol table (bench.kafka_protocol_bench)", file=sys.stderr, flush=True)
    run_rounds(
        "kafka-protocol-bench-",
        1,
        records,
        functools.partial(protocol_round, Options()),
        ports=ports,
        result=collected.protocol,
    )
    with scratch_dir("bench-peers-") as root:
        for name, run in ((REDIS, run_redis), (NATS, run_nats)):
            print(f"{name} (bench.peers)", file=sys.stderr, flush=True)
            result = run(
                root / name.split()[0].lower(), ports, records, LATENCY_RATE, latency_seconds
            )
            print(describe(name, result), file=sys.stderr, flush=True)
            collected.peers.setdefault(name, []).append(result)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, help="rounds of every bench (default 3; 1 --quick)")
    parser.add_argument(
        "--quick", action="store_true", help="small counts, one round: proves the run works"
    )
    parser.add_argument(
        "--records", type=int, help="100-byte records per throughput test (default 1,000,000)"
    )
    parser.add_argument(
        "--latency-seconds", type=float, help="seconds of each latency run (default 5)"
    )
    add_port_base(parser)
    args = parser.parse_args(argv)
    rounds = args.rounds or (1 if args.quick else 3)
    records = args.records or (10_000 if args.quick else 1_000_000)
    latency_seconds = args.latency_seconds or (1.0 if args.quick else 5.0)
    try:
        check_peers()
    except MissingPeer as exc:
        raise SystemExit(f"bench.run_all: {exc}") from None
    configure_tool_logging()
    before = _machine()
    ports = ports_from(args, span=max(PORT_SPAN, PORTS_PER_ROUND * rounds))
    started = time.monotonic()
    collected = Collected()
    for round_no in range(rounds):
        print(f"=== round {round_no + 1} of {rounds}", file=sys.stderr, flush=True)
        one_round(collected, records, latency_seconds, ports)
    load_after = _load_average()
    speed_after = yardstick()
    print()
    print(
        f"bench.run_all: {rounds} round(s), {records:,} records of 100 B per throughput test, "
        f"latency {latency_seconds:g} s at {LATENCY_RATE:,} records/s, "
        f"{time.monotonic() - started:.0f} s; {before}; load average after {load_after}, "
        f"yardstick after {speed_after:,.0f} records/s"
        + ("; --quick: proves the run works, measures nothing" if args.quick else "")
    )
    print(
        "minikafka: 3 brokers, ZooKeeper and the clients on this machine; Redis Streams: one "
        "redis-server (no replication, AOF without fsync); NATS JetStream R3: 3 routed "
        "nats-server, file storage, a stream of 3 replicas; Kafka 2014: Kreps's post. "
        "Ratio: minikafka / peer (records/s: above 1 is faster; ms: above 1 is slower). "
        "Latency from each record's scheduled send time (bench/latency.py)."
    )
    print()
    for line in format_table(collected.figures()):
        print(line)


if __name__ == "__main__":
    main()
