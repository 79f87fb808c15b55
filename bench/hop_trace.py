"""Where an acks=all produce spends its time, hop by hop: a traced run on a local 3-broker
cluster (broker/replication/hop_trace.py writes the traces; this reads them).

    python -m bench.hop_trace --workload latency   # 100 B records at 10,000/s, 1 partition
    python -m bench.hop_trace --workload large     # 10 KB records as fast as they go, 6 partitions

Both produce with confluent-kafka (acks=all, idempotent, RF3) over the Kafka listeners while a
confluent-kafka consumer reads the topic, for ``--seconds``. Every ``--every``-th offset is
traced in every broker; for each traced record the table gives the median and 90th percentile
of each hop, from the leader's append to the produce's answer and to the consumer's fetch:

    append            the leader's append (validation, offsets, the write into the page cache)
    to 1st follower   appended -> the answer to the first follower's fetch holding the record ready
    1st follower      that answer ready -> the follower appended the record (the wire, the
                      follower's decode and append)
    1st report        the follower appended -> its next fetch told the leader (its LEO)
    2nd ...           the same for the second follower (the one that moves the HW)
    hw                appended -> the HW passed the record (the later follower's report)
    answer            HW -> the produce answered (the delayed produce completed)
    consumer          HW -> a consumer's fetch answer holding the record ready

All times are CLOCK_MONOTONIC, one clock for every process. It also prints each broker's CPU
and minor page faults per MiB the cluster appended (leader and follower appends), from
/proc/<pid>/stat. The cluster and the traces are removed at the end however the run ends;
``--port-base N`` picks the ports.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

from bench.codec_bench import yardstick
from bench.hygiene import add_port_base, ports_from, scratch_dir, stop_on_signals
from bench.local_cluster import start_cluster
from minikafka.client.admin import AdminClient, NewTopic, raise_first

HOPS = (
    "append",
    "to 1st follower",
    "1st follower",
    "1st report",
    "to 2nd follower",
    "2nd follower",
    "2nd report",
    "hw (appended -> HW)",
    "answer (HW -> produce answered)",
    "consumer (HW -> consumer answer ready)",
    "total (append began -> produce answered)",
    "client: due -> the leader's append begins",
    "client: produce answered -> delivery report",
    "client: consumer answer ready -> record polled",
    "end to end: due -> record polled",
)
# The bench's own stamps of a traced record (latency workload), beside the brokers' events:
# when it was due (its scheduled send time), when its delivery report came, when the consumer
# polled it. Broker id -2 marks them.
CLIENT = -2

Key = tuple[str, int, int]  # topic, partition, offset


def read_traces(directory: Path) -> dict[Key, dict[tuple[str, int, int], int]]:
    """Traced offset -> {(event, broker, peer): the first time it happened}."""
    events: dict[Key, dict[tuple[str, int, int], int]] = defaultdict(dict)
    for path in directory.glob("hops-*.tsv"):
        for line in path.read_text().splitlines():
            t, broker, event, topic, partition, offset, peer = line.split("\t")
            seen = events[(topic, int(partition), int(offset))]
            name = (event, int(broker), int(peer))
            if name not in seen or int(t) < seen[name]:
                seen[name] = int(t)
    return events


def hops_of(seen: dict[tuple[str, int, int], int]) -> dict[str, float] | None:
    """One traced record's hops in microseconds (None when an event is missing)."""

    def first(event: str, peer: int | None = None, broker: int | None = None) -> tuple[int, int]:
        times = [
            (t, b if peer is None else p)
            for (e, b, p), t in seen.items()
            if e == event and (peer is None or p == peer) and (broker is None or b == broker)
        ]
        if not times:
            raise KeyError(event)
        return min(times)

    try:
        began, leader = first("append_begin")
        appended, _ = first("appended")
        hw, _ = first("hw", broker=leader)
        answered, _ = first("produce_answered")
        consumer, _ = first("fetch_answered", peer=-1)
        reports = sorted(
            (t, p) for (e, b, p), t in seen.items() if e == "follower_leo" and b == leader
        )
        if len(reports) < 2:
            return None
        hops = {
            "append": appended - began,
            "hw (appended -> HW)": hw - appended,
            "answer (HW -> produce answered)": answered - hw,
            "consumer (HW -> consumer answer ready)": consumer - hw,
            "total (append began -> produce answered)": answered - began,
        }
        for ordinal, (reported, follower) in zip(("1st", "2nd"), reports[:2], strict=True):
            ready, _ = first("fetch_answered", peer=follower)
            follower_appended, _ = first("follower_appended", broker=follower)
            hops[f"to {ordinal} follower"] = ready - appended
            hops[f"{ordinal} follower"] = follower_appended - ready
            hops[f"{ordinal} report"] = reported - follower_appended
        client = {e: t for (e, b, _), t in seen.items() if b == CLIENT}
        if {"due", "delivered", "polled"} <= client.keys():
            hops["client: due -> the leader's append begins"] = began - client["due"]
            hops["client: produce answered -> delivery report"] = client["delivered"] - answered
            hops["client: consumer answer ready -> record polled"] = client["polled"] - consumer
            hops["end to end: due -> record polled"] = client["polled"] - client["due"]
    except KeyError:
        return None
    return {name: ns / 1000 for name, ns in hops.items()}


def summarize(events: dict[Key, dict[tuple[str, int, int], int]]) -> dict[str, tuple[float, float]]:
    """Hop -> (median, 90th percentile) in microseconds over the complete traced records."""
    per_hop: dict[str, list[float]] = defaultdict(list)
    for seen in events.values():
        hops = hops_of(seen)
        if hops is None:
            continue
        for name, value in hops.items():
            per_hop[name].append(value)
    out = {}
    for name in HOPS:
        values = sorted(per_hop.get(name, []))
        if values:
            out[name] = (statistics.median(values), values[int(0.9 * (len(values) - 1))])
    return out


Stamps = dict[tuple[str, int, int], dict[str, int]]  # (topic, partition, offset) -> event -> ns


def _consume(
    bootstrap: str,
    topic: str,
    partitions: int,
    every: int,
    stamps: Stamps,
    stop: threading.Event,
) -> None:
    """Reads the topic from its start, a record per poll, noting when each traced one came."""
    import confluent_kafka

    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "hop-trace",
            "fetch.wait.max.ms": 100,
            "enable.auto.commit": False,
        }
    )
    consumer.assign(
        [
            confluent_kafka.TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING)
            for p in range(partitions)
        ]
    )
    while not stop.is_set():
        message = consumer.poll(0.1)
        if message is None or message.error() is not None:
            continue
        offset, partition = message.offset() or 0, message.partition() or 0
        if offset % every == 0:
            now = time.monotonic_ns()
            stamps.setdefault((topic, partition, offset), {})["polled"] = now
    consumer.close()


def _produce(
    bootstrap: str, topic: str, workload: str, seconds: float, every: int, stamps: Stamps
) -> float:
    """Records per second sent and acknowledged; a latency run stamps each traced record's due
    time and delivery report (CLOCK_MONOTONIC, the brokers' clock)."""
    import confluent_kafka

    def delivered(due_ns: int, err: object, message: confluent_kafka.Message) -> None:
        offset, partition = message.offset() or 0, message.partition() or 0
        if err is None and offset % every == 0:
            stamp = stamps.setdefault((topic, partition, offset), {})
            stamp.update(due=due_ns, delivered=time.monotonic_ns())

    latency = workload == "latency"
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 0 if latency else 5,
            "batch.size": 1_000_000,
            "queue.buffering.max.kbytes": 1_048_576,
        }
    )
    value = b"x" * (100 if latency else 10_240)
    sent = 0
    began = time.monotonic()
    end = began + seconds
    while (now := time.monotonic()) < end:
        if latency:
            due = began + sent / 10_000
            if due > now:
                time.sleep(due - now)
            callback = functools.partial(delivered, int(due * 1e9))
            producer.produce(topic, value, on_delivery=callback)
            sent += 1
            producer.poll(0)
        else:
            try:
                producer.produce(topic, value)
                sent += 1
            except BufferError:
                producer.poll(0.01)
            if sent % 1000 == 0:
                producer.poll(0)
    producer.flush(120)
    return sent / (time.monotonic() - began)


def _proc_stat(pid: int) -> tuple[int, float]:
    """(minor faults, CPU seconds) of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return int(fields[7]), (int(fields[11]) + int(fields[12])) / ticks


class Run(NamedTuple):
    hops: dict[str, tuple[float, float]]
    rate: float
    complete: int
    faults_per_mib: list[float]  # per broker
    cpu_ms_per_mib: list[float]


def run(workload: str, seconds: float, every: int, ports: Callable[[], int] | None = None) -> Run:
    with scratch_dir("hop-trace-") as root:
        return _run(root, workload, seconds, every, ports)


def _run(
    root: Path, workload: str, seconds: float, every: int, ports: Callable[[], int] | None
) -> Run:
    traces = root / "traces"
    saved = {k: os.environ.get(k) for k in ("MINIKAFKA_HOP_TRACE", "MINIKAFKA_HOP_TRACE_EVERY")}
    os.environ["MINIKAFKA_HOP_TRACE"] = str(traces)
    os.environ["MINIKAFKA_HOP_TRACE_EVERY"] = str(every)
    zookeeper = cluster = None
    try:
        zookeeper, cluster = (
            start_cluster(root) if ports is None else start_cluster(root, ports=ports)
        )
        topic = f"hops-{workload}"
        with AdminClient(cluster.bootstrap_servers) as admin:
            partitions = 1 if workload == "latency" else 6
            raise_first(admin.create_topics([NewTopic(topic, partitions, 3)], timeout_ms=60_000))
        time.sleep(2)  # leaders elected and followers fetching
        stop = threading.Event()
        stamps: Stamps = {}
        bootstrap = cluster.kafka_bootstrap_servers
        consumer = threading.Thread(
            target=_consume,
            args=(bootstrap, topic, partitions, every, stamps, stop),
            daemon=True,
        )
        consumer.start()
        time.sleep(1)  # its first fetch parked at the leaders
        pids = [b.process.pid for b in cluster.brokers.values() if b.process is not None]
        before = [_proc_stat(pid) for pid in pids]
        rate = _produce(bootstrap, topic, workload, seconds, every, stamps)
        after = [_proc_stat(pid) for pid in pids]
        time.sleep(1)
        stop.set()
        consumer.join(10)
        events = read_traces(traces)
        for record, stamp in stamps.items():
            for event, t in stamp.items():
                events[record][(event, CLIENT, -1)] = t
        complete = sum(1 for seen in events.values() if hops_of(seen) is not None)
        # Each record is appended three times (RF3), a third of them in each broker.
        mib = rate * seconds * (100 if workload == "latency" else 10_240) / (1 << 20)
        return Run(
            summarize(events),
            rate,
            complete,
            [(a[0] - b[0]) / mib for a, b in zip(after, before, strict=True)],
            [(a[1] - b[1]) * 1000 / mib for a, b in zip(after, before, strict=True)],
        )
    finally:
        if cluster is not None:
            cluster.close()
        if zookeeper is not None:
            zookeeper.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=("latency", "large"), default="latency")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--every", type=int, help="trace every N-th offset")
    add_port_base(parser)
    args = parser.parse_args(argv)
    every = args.every or (100 if args.workload == "latency" else 50)
    speed = yardstick()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    with stop_on_signals():
        result = run(args.workload, args.seconds, every, ports_from(args))
    hops = result.hops
    print(
        f"workload {args.workload}: {result.rate:,.0f} records/s for {args.seconds:g} s, "
        f"{result.complete} traced records; load before {load}; yardstick {speed:,.0f}"
    )
    print(
        "per MiB of records (each broker): minor faults "
        + ", ".join(f"{x:,.0f}" for x in result.faults_per_mib)
        + "; CPU ms "
        + ", ".join(f"{x:,.2f}" for x in result.cpu_ms_per_mib)
    )
    print(f"{'hop':44} {'p50 µs':>10} {'p90 µs':>10}")
    for name in HOPS:
        if name in hops:
            p50, p90 = hops[name]
            print(f"{name:44} {p50:10,.0f} {p90:10,.0f}")


if __name__ == "__main__":
    main()
