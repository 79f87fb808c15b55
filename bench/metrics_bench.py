"""Produce throughput with the brokers' Prometheus metrics on and off (issue 19).

    python -m bench.metrics_bench [--records 1000000] [--rounds 3] [--scrape-interval 1]

Each round starts a local 3-broker cluster twice (bench/local_cluster.py): once with
``metrics.listener`` set (GET /metrics served; the request metrics of both front doors and
the interceptor on the gRPC servers active) while a thread scrapes every broker every
``--scrape-interval`` seconds (15 times more often than Prometheus' default), and once with
``metrics.listener`` empty. The same load runs on both: ``minikafka perf-produce`` (one
process), 100-byte records, a topic of 6 partitions, RF 3, acks=all, over gRPC. The order of
the two alternates from round to round, so that a machine slowing down does not favour one.
Prints the rates, their medians and ranges, and the difference of the medians; the target is
under 5%. On a shared machine the rate varies more than that from run to run, so it also
prints the CPU time the three brokers spent per 100,000 records (user + system, from
/proc/<pid>/stat), which other processes disturb less.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import urllib.request
from collections.abc import Callable
from pathlib import Path

from bench.codec_bench import yardstick
from bench.hygiene import PORT_SPAN, add_port_base, ports_from, scratch_dir
from bench.kafka_classic import PARTITIONS, producer_rate, start_producer
from bench.local_cluster import start_cluster
from bench.stats import summary
from minikafka.client.admin import NewTopic, raise_first
from tests.integration.cluster import Cluster
from tests.integration.zookeeper import free_port

TOPIC = "metrics-bench"
BATCH_SIZE = 1_000_000


class Scraper(threading.Thread):
    """Scrapes every broker's /metrics until stopped; counts scrapes and failures."""

    def __init__(self, cluster: Cluster, interval_s: float) -> None:
        super().__init__(daemon=True)
        self._urls = [
            f"http://127.0.0.1:{b.metrics_port}/metrics" for b in cluster.brokers.values()
        ]
        self._interval_s = interval_s
        self._stop_event = threading.Event()
        self.scrapes = 0
        self.failures = 0

    def run(self) -> None:
        while not self._stop_event.wait(self._interval_s):
            for url in self._urls:
                try:
                    with urllib.request.urlopen(url, timeout=5) as response:
                        response.read()
                    self.scrapes += 1
                except OSError:
                    self.failures += 1

    def stop(self) -> None:
        self._stop_event.set()
        self.join()


def broker_cpu_s(cluster: Cluster) -> float:
    """User + system CPU seconds of the running broker processes so far."""
    total = 0
    for broker in cluster.brokers.values():
        if broker.process is not None:
            fields = Path(f"/proc/{broker.process.pid}/stat").read_text().rsplit(")", 1)[1]
            utime, stime = fields.split()[11:13]
            total += int(utime) + int(stime)
    return total / os.sysconf("SC_CLK_TCK")


def one_run(
    records: int, metrics_on: bool, scrape_interval_s: float, ports: Callable[[], int] = free_port
) -> tuple[float, float, str]:
    with scratch_dir("metrics-bench-") as root:
        overrides = None if metrics_on else {"metrics.listener": ""}
        zookeeper, cluster = start_cluster(root, overrides=overrides)
        scraper = None
        try:
            with cluster.admin() as admin:
                raise_first(admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3, {}, {})]))
            cluster.wait_for(
                lambda: all(len(cluster.isr(TOPIC, p)) == 3 for p in range(PARTITIONS)),
                what="a full ISR",
            )
            if metrics_on:
                scraper = Scraper(cluster, scrape_interval_s)
                scraper.start()
            cpu_before = broker_cpu_s(cluster)
            producer = start_producer(cluster.bootstrap_servers, TOPIC, records, "all", BATCH_SIZE)
            rate = producer_rate(producer)
            cpu_per_100k = (broker_cpu_s(cluster) - cpu_before) / records * 100_000
            note = ""
            if scraper is not None:
                scraper.stop()
                note = f"{scraper.scrapes} scrapes, {scraper.failures} failed"
            return rate, cpu_per_100k, note
        finally:
            if scraper is not None and scraper.is_alive():
                scraper.stop()
            cluster.close()
            zookeeper.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scrape-interval", type=float, default=1.0, metavar="SECONDS")
    add_port_base(parser)
    args = parser.parse_args()
    ports = ports_from(args, span=PORT_SPAN * 10)  # a fresh cluster each run

    rates: dict[bool, list[float]] = {True: [], False: []}
    cpu: dict[bool, list[float]] = {True: [], False: []}
    for round_no in range(args.rounds):
        order = (True, False) if round_no % 2 == 0 else (False, True)
        for metrics_on in order:
            rate, cpu_s, note = one_run(args.records, metrics_on, args.scrape_interval, ports)
            rates[metrics_on].append(rate)
            cpu[metrics_on].append(cpu_s)
            label = "on " if metrics_on else "off"
            print(
                f"round {round_no + 1} metrics {label}: {rate:,.0f} records/s, "
                f"brokers {cpu_s:.3f} CPU s per 100k records {note}",
                file=sys.stderr,
                flush=True,
            )
    print(f"machine yardstick (kafka-python's encoder): {yardstick():,.0f} records/s")
    print("| produce RF3 acks=all | metrics on | metrics off | on vs off (medians) |")
    print("|---|---:|---:|---:|")
    for name, values, fmt in (
        ("records/s: median (range)", rates, ",.0f"),
        ("brokers' CPU s per 100k records: median (range)", cpu, ".3f"),
    ):
        on, off = statistics.median(values[True]), statistics.median(values[False])
        print(
            f"| {name} | {summary(values[True], fmt)} | {summary(values[False], fmt)} | "
            f"{(on - off) / off:+.1%} |"
        )
    for metrics_on, name in ((True, "on"), (False, "off")):
        each = " · ".join(f"{r:,.0f}" for r in rates[metrics_on])
        print(f"records/s of each round, metrics {name}: {each}")


if __name__ == "__main__":
    main()
