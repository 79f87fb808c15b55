"""Many partitions on a local 3-broker cluster: produce rates, idle CPU, scale (issue 18).

    python -m bench.partitions_bench [--partitions 1000] [--records 300000] [--rounds 3]
        [--sizes 100,1024,10240] [--idle-seconds 20] [--scale-partitions 0]
        [--broker-config KEY=VALUE ...]

A local 3-broker cluster (ZooKeeper and brokers on 127.0.0.1, as bench.kafka_classic) with
Kafka's defaults for the replication timers (replica.lag.time.max.ms 30000,
replica.fetch.wait.max.ms 500, replica.high.watermark.checkpoint.interval.ms 5000) rather than
the integration tests' short ones; ``--broker-config`` (repeatable) sets more keys in every
broker's server.properties (``num.replica.fetchers=2``, say). Every topic is RF3; every produce
is acks=all (idempotent) with confluent-kafka's Producer over the Kafka protocol, a child
process per run: it is the
fastest client installed here for RF3 acks=all (docs/benchmarks.md, Kafka protocol front door:
441k records/s against perf-produce's 380k over gRPC; kcat is faster still but not installed).
librdkafka's default batch.size (1,000,000 bytes), linger.ms 5.

1. Alone: a 6-partition topic's produce rate at each record size (``--sizes``; 1 KB and 10 KB
   runs send 4x the bytes of the 100 B run), the only topic in the cluster; then the idle
   CPU of each broker and of ZooKeeper (/proc/<pid>/stat, user + system) over
   ``--idle-seconds``.
2. A ``--partitions`` topic is created (its creation time printed), and the idle CPU measured
   again once it has settled.
3. Beside: each round, the 6-partition topic's rate at each size with the big topic idle
   beside it, then the 100 B rate to the big topic itself. During each produce run it counts
   the follower fetch errors (``fetcher.fetch_failed`` log events) and ISR shrinks (the
   brokers' ``kafka_server_replicamanager_isrshrinks`` counter).
4. With ``--scale-partitions N`` (e.g. 10000): topics of 1000 partitions up to N partitions
   in the cluster, then their creation time, each broker's RSS, controller failover (SIGKILL
   the controller broker: the time to a new controller, which is the dead session's expiry,
   and from there until every partition has a leader on a live broker again) and that
   broker's restart to full ISR (until no broker reports an under-replicated partition).

``--rounds 0`` measures only the idle CPU and creation time (and part 4); ``--partitions 0``
only part 1 (``--sizes 10240 --partitions 0 --idle-seconds 0``: the 10 KB RF3 acks=all rate
alone). Each run's line on stderr also gives the CPU the brokers used during it (user +
system, in cores: a broker near 1.0 is CPU-bound). The medians and
ranges over the rounds, the load average, the machine yardstick (kafka-python's encoder,
bench.codec_bench) and the page-cache write rate before and after (MB of new file written per
CPU-second: the kernel's copy into the page cache, which every replica's append pays) end the
output.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from bench.codec_bench import yardstick
from bench.hygiene import add_port_base, ports_from, remove_tree, stop_on_signals
from bench.kafka_classic import python_module, replication_faults
from bench.kafka_protocol_bench import produce_records
from bench.local_cluster import start_cluster
from bench.storage_bench import page_cache_write_rate
from minikafka.client.admin import NewTopic, raise_first
from tests.integration.cluster import Cluster
from tests.integration.zookeeper import ZooKeeperServer

SMALL_PARTITIONS = 6
BATCH_SIZE = 1_000_000  # librdkafka's default batch.size
LINGER_MS = 5
SCALE_TOPIC_PARTITIONS = 1000
KAFKA_TIMERS = {
    "replica.lag.time.max.ms": "30000",
    "replica.fetch.wait.max.ms": "500",
    "replica.high.watermark.checkpoint.interval.ms": "5000",
    "zookeeper.session.timeout.ms": "18000",
}
_TICKS = os.sysconf("SC_CLK_TCK")
# Between scrapes of every broker's /metrics while waiting: a scrape snapshots every partition
# on the broker's loop, so polling faster would load the brokers being measured.
_POLL_S = 0.5
_LEADERS = "kafka_server_replicamanager_leadercount"
_HOSTED = "kafka_server_replicamanager_partitioncount"
_UNDER_REPLICATED = "kafka_server_replicamanager_underreplicatedpartitions"


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS  # utime + stime


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


# --- the producer, a child process ---------------------------------------------------------------


def kafka_produce(bootstrap: str, topic: str, records: int, size: int) -> None:
    """Child process: send ``records`` records of ``size`` bytes, acks=all; print records/s."""
    import confluent_kafka

    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "batch.size": BATCH_SIZE,
            "linger.ms": LINGER_MS,
            "queue.buffering.max.messages": 2_000_000,
            "queue.buffering.max.kbytes": 1_048_576,
        }
    )
    produce_records(producer, topic, b"x" * size, records, flush_timeout_s=600)


# --- what a run observes -------------------------------------------------------------------------


@dataclass
class Faults:
    """Follower fetch errors and ISR shrinks, summed over the brokers, and the brokers' CPU
    during the run (cores, by broker id)."""

    fetch_errors: int
    isr_shrinks: int
    cpu: dict[int, float] = field(default_factory=dict)


def _faults(cluster: Cluster) -> Faults:
    return Faults(*replication_faults(cluster))


def _metric_values(cluster: Cluster, name: str, broker_ids: list[int]) -> list[int]:
    """One unlabelled sample of each broker's /metrics; OSError when a scrape fails."""
    values = []
    for broker_id in broker_ids:
        samples = _samples(cluster, broker_id, (name,))
        if samples is None:
            raise OSError(f"no /metrics from broker {broker_id}")
        values.append(samples[name])
    return values


def _samples(cluster: Cluster, broker_id: int, names: tuple[str, ...]) -> dict[str, int] | None:
    """Unlabelled samples of one scrape of the broker's /metrics (0 for one it does not
    report); None when the scrape fails.

    Picked from the text by name: the exposition of a broker with 10,000 partitions is
    megabytes of per-partition samples, and parsing all of it (prometheus_client's parser,
    as Cluster.metrics does) took seconds per scrape, which a wait loop of several scrapes
    per poll added to what it measured."""
    url = f"http://127.0.0.1:{cluster.brokers[broker_id].metrics_port}/metrics"
    found = dict.fromkeys(names, 0)
    try:
        with urllib.request.urlopen(url, timeout=5.0) as response:
            text = response.read().decode("utf-8")
    except OSError:
        return None
    for name in names:
        at = text.find(f"\n{name} ")
        if at >= 0:
            line = text[at + 1 : text.find("\n", at + 1)]
            found[name] = int(float(line.split()[1]))
    return found


def _broker_cpu(cluster: Cluster) -> dict[int, float]:
    return {
        b.broker_id: _cpu_seconds(b.process.pid)
        for b in cluster.brokers.values()
        if b.process is not None and b.running
    }


def produce(cluster: Cluster, topic: str, records: int, size: int) -> tuple[float, Faults]:
    before = _faults(cluster)
    cpu_before = _broker_cpu(cluster)
    began = time.perf_counter()
    process = python_module(
        "bench.partitions_bench", "--produce", cluster.kafka_bootstrap_servers, topic,
        str(records), str(size),
    )  # fmt: skip
    out, err = process.communicate(timeout=1800)
    if process.returncode != 0:
        raise RuntimeError(f"producer failed ({process.returncode}): {err.strip()[-500:]}")
    wall = time.perf_counter() - began
    cpu = {i: (s - cpu_before.get(i, s)) / wall for i, s in _broker_cpu(cluster).items()}
    after = _faults(cluster)
    rate = float(out.strip().splitlines()[-1])
    return rate, Faults(
        after.fetch_errors - before.fetch_errors, after.isr_shrinks - before.isr_shrinks, cpu
    )


def idle_cpu(cluster: Cluster, zookeeper: ZooKeeperServer, seconds: float) -> dict[str, float]:
    """Each broker's and ZooKeeper's CPU over ``seconds`` of doing nothing, in % of a core."""
    pids = {
        f"broker {b.broker_id}": b.process.pid
        for b in cluster.brokers.values()
        if b.process is not None and b.running
    }
    zk_process = zookeeper._process  # the harness keeps no public pid
    assert zk_process is not None
    pids["zookeeper"] = zk_process.pid
    before = {name: _cpu_seconds(pid) for name, pid in pids.items()}
    began = time.perf_counter()
    time.sleep(seconds)
    wall = time.perf_counter() - began
    return {name: 100 * (_cpu_seconds(pid) - before[name]) / wall for name, pid in pids.items()}


def _show_cpu(label: str, cpu: dict[str, float]) -> str:
    return f"{label}: " + ", ".join(f"{name} {pct:.1f}%" for name, pct in cpu.items())


def create_topic(cluster: Cluster, name: str, partitions: int) -> float:
    """Create an RF3 topic; seconds until every broker hosts and a leader leads each partition."""
    began = time.perf_counter()
    with cluster.admin(request_timeout_ms=600_000) as admin:
        raise_first(admin.create_topics([NewTopic(name, partitions, 3)], timeout_ms=600_000))
    wait_all_led(cluster, timeout_s=600)
    return time.perf_counter() - began


def _total_partitions(cluster: Cluster) -> int:
    """Partitions the brokers should host: what ZooKeeper lists, every topic's count."""
    zk = cluster.zk
    total = 0
    for topic in zk.get_all_topics():
        assignment = zk.get_topic(topic)
        total += 0 if assignment is None else len(assignment.value.partitions)
    return total


def wait_all_led(cluster: Cluster, timeout_s: float) -> None:
    """Until the live brokers lead every partition between them and each hosts all of them
    (RF3 on 3 brokers: every broker holds a replica of every partition)."""
    total = _total_partitions(cluster)
    live = [b.broker_id for b in cluster.brokers.values() if b.running]

    def done() -> bool:
        scrapes = [_samples(cluster, i, (_LEADERS, _HOSTED)) for i in live]
        known = [s for s in scrapes if s is not None]
        return (
            len(known) == len(scrapes)
            and sum(s[_LEADERS] for s in known) >= total
            and min(s[_HOSTED] for s in known) >= total
        )

    cluster.wait_for(done, timeout_s, f"{total} partitions with a leader", _POLL_S)


# --- the parts ------------------------------------------------------------------------------------


@dataclass
class Rates:
    rates: dict[str, list[float]] = field(default_factory=dict)
    faults: dict[str, list[Faults]] = field(default_factory=dict)

    def add(self, name: str, rate: float, faults: Faults) -> None:
        self.rates.setdefault(name, []).append(rate)
        self.faults.setdefault(name, []).append(faults)
        size = int(name.rsplit(", ", 1)[1].split()[0])
        cpu = " ".join(f"{i}:{c:.2f}" for i, c in sorted(faults.cpu.items()))
        print(
            f"  {name}: {rate:,.0f} records/s ({rate * size / 2**20:,.1f} MiB/s); fetch errors "
            f"{faults.fetch_errors}, ISR shrinks {faults.isr_shrinks}; broker CPU {cpu}",
            file=sys.stderr,
            flush=True,
        )

    def median(self, name: str) -> float:
        return statistics.median(self.rates[name])


def _records_for(records: int, size: int) -> int:
    """As many bytes at 1 KB and 10 KB as 4x the 100 B run: long enough to reach steady state
    without filling the disk."""
    return max(1000, min(records, records * 400 // size))


def scale(cluster: Cluster, target: int) -> list[str]:
    """Part 4: topics of 1000 partitions up to ``target`` partitions in the cluster; what it
    measured, one line each."""
    lines: list[str] = []
    existing = _total_partitions(cluster)
    topics = max(0, -(-(target - existing) // SCALE_TOPIC_PARTITIONS))  # rounded up
    print(f"part 4: {topics} more topics of {SCALE_TOPIC_PARTITIONS} partitions", file=sys.stderr,
          flush=True)  # fmt: skip
    began = time.perf_counter()
    with cluster.admin(request_timeout_ms=600_000) as admin:
        raise_first(
            admin.create_topics(
                [NewTopic(f"scale-{i}", SCALE_TOPIC_PARTITIONS, 3) for i in range(topics)],
                timeout_ms=600_000,
            )
        )
    wait_all_led(cluster, timeout_s=900)
    total = _total_partitions(cluster)
    created = topics * SCALE_TOPIC_PARTITIONS
    lines.append(f"{total:,} partitions in the cluster, the last {created:,} created, led and "
                 f"hosted in {time.perf_counter() - began:.1f} s")  # fmt: skip
    print(lines[-1], file=sys.stderr, flush=True)
    time.sleep(10)
    rss = {b.broker_id: _rss_mb(b.process.pid) for b in cluster.brokers.values() if b.process}
    lines.append("RSS: " + ", ".join(f"broker {i} {mb:.0f} MB" for i, mb in sorted(rss.items())))
    print(lines[-1], file=sys.stderr, flush=True)

    controller = cluster.controller_id()
    assert controller is not None
    began = time.perf_counter()
    cluster.kill(controller)
    # The dead broker's session must expire before another broker can take /controller: that
    # part is zookeeper.session.timeout.ms, whatever the number of partitions.
    cluster.wait_for(
        lambda: cluster.controller_id() not in (None, controller), 600, "a new controller"
    )
    elected = time.perf_counter()
    wait_all_led_by_live(cluster, total, timeout_s=600)
    done = time.perf_counter()
    timeout_ms = cluster.overrides["zookeeper.session.timeout.ms"]
    lines.append(f"controller failover (SIGKILL broker {controller}): every partition led by a "
                 f"live broker after {done - began:.1f} s: a new controller after "
                 f"{elected - began:.1f} s (zookeeper.session.timeout.ms {timeout_ms}), then "
                 f"{done - elected:.1f} s to lead every partition")  # fmt: skip
    print(lines[-1], file=sys.stderr, flush=True)

    began = time.perf_counter()
    cluster.start(controller, wait_for_expiry=False)
    # Registered: its logs are loaded (a SIGKILL leaves them to recover) and it serves.
    cluster.wait_for(
        lambda: cluster.zk.get_broker_epoch(controller) is not None,
        900,
        "the restarted broker to register",
        _POLL_S,
    )
    registered = time.perf_counter()

    def full_isr() -> bool:
        if not cluster.brokers[controller].running:
            return False
        scrapes = {i: _samples(cluster, i, (_UNDER_REPLICATED, _HOSTED)) for i in cluster.brokers}
        known = {i: s for i, s in scrapes.items() if s is not None}
        return (
            len(known) == len(scrapes)
            and all(s[_UNDER_REPLICATED] == 0 for s in known.values())
            and known[controller][_HOSTED] >= total
        )

    cluster.wait_for(full_isr, 900, "full ISR after the restart", _POLL_S)
    done = time.perf_counter()
    lines.append(f"broker {controller} restarted (after the SIGKILL above): full ISR on every "
                 f"partition after {done - began:.1f} s: registered (logs loaded) after "
                 f"{registered - began:.1f} s, then {done - registered:.1f} s to rejoin every "
                 "ISR")  # fmt: skip
    print(lines[-1], file=sys.stderr, flush=True)
    return lines


def wait_all_led_by_live(cluster: Cluster, total: int, timeout_s: float) -> None:
    """Until what the live brokers say they lead adds up to every partition."""
    live = sorted(b.broker_id for b in cluster.brokers.values() if b.running)

    def done() -> bool:
        try:
            return sum(_metric_values(cluster, _LEADERS, live)) >= total
        except OSError:
            return False

    cluster.wait_for(done, timeout_s, "every partition led by a live broker", _POLL_S)


def parts_two_and_three(
    cluster: Cluster,
    zookeeper: ZooKeeperServer,
    args: argparse.Namespace,
    sizes: list[int],
    rates: Rates,
    cpu: list[str],
    notes: list[str],
) -> None:
    """Part 2 (the big topic created, idle CPU beside it) and part 3 (rates beside it)."""
    created = create_topic(cluster, "big", args.partitions)
    notes.append(f"{args.partitions} partitions (RF3) created, led and hosted in {created:.1f} s")
    print(f"part 2: {notes[-1]}", file=sys.stderr, flush=True)
    if args.idle_seconds > 0:
        time.sleep(args.settle_seconds)
        cpu.append(
            _show_cpu(
                f"idle, {args.partitions} + 6 partitions",
                idle_cpu(cluster, zookeeper, args.idle_seconds),
            )
        )
        print(cpu[-1], file=sys.stderr, flush=True)

    print(f"part 3: beside {args.partitions} idle partitions", file=sys.stderr, flush=True)
    for _ in range(args.rounds):
        for size in sizes:
            rate, faults = produce(cluster, "small", _records_for(args.records, size), size)
            rates.add(f"6 partitions beside {args.partitions} idle, {size} B", rate, faults)
        rate, faults = produce(cluster, "big", args.records, 100)
        rates.add(f"{args.partitions} partitions, 100 B", rate, faults)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--records", type=int, default=300_000, help="per 100 B produce run")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", default="100,1024,10240")
    parser.add_argument("--idle-seconds", type=float, default=20.0)
    parser.add_argument("--settle-seconds", type=float, default=10.0)
    parser.add_argument("--scale-partitions", type=int, default=0)
    parser.add_argument(
        "--keep-dir",
        action="store_true",
        help="keep the cluster's directory (brokers' logs and data) and print its path",
    )
    parser.add_argument(
        "--broker-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a server.properties key for every broker; repeatable",
    )
    parser.add_argument("--produce", nargs=4, metavar=("BOOTSTRAP", "TOPIC", "N", "SIZE"))
    add_port_base(parser)
    args = parser.parse_args()
    if args.produce:
        bootstrap, topic, n, size = args.produce
        kafka_produce(bootstrap, topic, int(n), int(size))
        return

    sizes = [int(s) for s in args.sizes.split(",")]
    machine = yardstick()
    load_before = _load_average()
    rates = Rates()
    cpu: list[str] = []
    notes: list[str] = []
    root = Path(tempfile.mkdtemp(prefix="partitions-bench-"))
    try:
        with stop_on_signals():
            page_cache_before = page_cache_write_rate(root)
            overrides = dict(KAFKA_TIMERS)
            for item in args.broker_config:
                key, _, value = item.partition("=")
                overrides[key.strip()] = value.strip()
            zookeeper, cluster = start_cluster(root, overrides=overrides, ports=ports_from(args))
            try:
                create_topic(cluster, "small", SMALL_PARTITIONS)
                print("part 1: the 6-partition topic alone", file=sys.stderr, flush=True)
                for _ in range(args.rounds):
                    for size in sizes:
                        rate, faults = produce(
                            cluster, "small", _records_for(args.records, size), size
                        )
                        rates.add(f"6 partitions alone, {size} B", rate, faults)
                if args.idle_seconds > 0:
                    time.sleep(args.settle_seconds)
                    cpu.append(
                        _show_cpu(
                            "idle, 6 partitions", idle_cpu(cluster, zookeeper, args.idle_seconds)
                        )
                    )
                    print(cpu[-1], file=sys.stderr, flush=True)
                if args.partitions > 0:
                    parts_two_and_three(cluster, zookeeper, args, sizes, rates, cpu, notes)
                if args.scale_partitions:
                    notes.extend(scale(cluster, args.scale_partitions))
            finally:
                cluster.close()
                zookeeper.stop()
                page_cache_after = page_cache_write_rate(root)
    finally:
        if args.keep_dir:
            print(f"cluster directory kept: {root}", file=sys.stderr, flush=True)
        else:
            remove_tree(root)

    print(f"\n{args.rounds} rounds, {args.records:,} records per 100 B run, "
          f"{time.strftime('%Y-%m-%d')}; RF3, acks=all, confluent-kafka; broker config "
          f"{args.broker_config or 'as above'}; machine: "
          f"{os.cpu_count()} cores, yardstick (kafka-python encoder) {machine:,.0f} records/s; "
          f"load average before {load_before}, after {_load_average()}; page-cache writes "
          f"{page_cache_before:,.0f} MB per CPU-s before, {page_cache_after:,.0f} "
          "after")  # fmt: skip
    print("| test | median records/s | range | MB/s | fetch errors | ISR shrinks |")
    print("|---|---:|---|---:|---:|---:|")
    for name, values in rates.rates.items():
        size = int(name.rsplit(", ", 1)[1].split()[0])
        seen = rates.faults[name]
        print(
            f"| {name} | {statistics.median(values):,.0f} | {min(values):,.0f} to "
            f"{max(values):,.0f} | {statistics.median(values) * size / 1e6:.1f} "
            f"| {sum(f.fetch_errors for f in seen)} | {sum(f.isr_shrinks for f in seen)} |"
        )
    print()
    for size in sizes if args.rounds and args.partitions > 0 else ():
        alone = rates.median(f"6 partitions alone, {size} B")
        beside = rates.median(f"6 partitions beside {args.partitions} idle, {size} B")
        print(f"- 6 partitions beside {args.partitions} idle / alone, {size} B: "
              f"{beside / alone:.2f}x")  # fmt: skip
    if args.rounds and args.partitions > 0 and 100 in sizes:
        big = rates.median(f"{args.partitions} partitions, 100 B")
        small = rates.median(f"6 partitions beside {args.partitions} idle, 100 B")
        print(f"- {args.partitions} partitions / 6 partitions, 100 B: {big / small:.2f}x")
    for line in cpu:
        print(f"- CPU over {args.idle_seconds:.0f} s, {line}")
    for line in notes:
        print(f"- {line}")


if __name__ == "__main__":
    main()
