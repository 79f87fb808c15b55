"""How long a partition takes to move to another broker, with and without a throttle, and what
producers to other partitions get meanwhile (issue 34).

    python -m bench.reassignment_bench [--size-mb 1024] [--throttle-mb 20] [--rounds 3]
    python -m bench.reassignment_bench --smoke      # proves it runs, measures nothing

A local 4-broker cluster (bench.local_cluster: ZooKeeper and brokers on 127.0.0.1, Kafka's
defaults). Each round, on topics of its own:

- produce alone: a confluent-kafka producer (a child process; 1 KB records, acks=all,
  linger.ms 5) writes to a 6-partition RF3 topic (min.insync.replicas 2) on brokers 0-2 for
  ``--produce-seconds``: the rate with no move;
- a partition of ``--size-mb`` (10 KB records, written by a child producer before the clock
  starts) on brokers 0,1,2 moves to 1,2,3 with ``minikafka reassign-partitions --execute``:
  the time from --execute until /brokers/topics/<t> holds 1,2,3 and no adding or removing
  replicas (broker 3 copied the whole log and joined the ISR, broker 0's replica went), while
  the same producer writes to its own 6-partition topic beside it (its rate: records
  acknowledged from 1 s before --execute until the move is done);
- the same with ``--throttle`` of ``--throttle-mb`` MB/s (KIP-73: leader and follower rates
  and the throttled replicas), cleared by --verify after.

Each moved topic is deleted after its move. Prints the move times (median and range over the
rounds), the rate they imply, the produce rates, and first the date, the commit, the load
average and the machine yardstick (bench.codec_bench). The cluster's directory is a temporary
one, deleted at the end; the ports are free ones the harness picks.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bench.hygiene import add_port_base, ports_from, scratch_dir
from bench.kafka_classic import python_module
from bench.kafka_protocol_bench import _child_rate, _load_average, _machine
from bench.local_cluster import start_cluster
from bench.stats import summary
from minikafka.cli import main as minikafka_main
from minikafka.client.admin import NewTopic, raise_first
from tests.integration.cluster import Cluster
from tests.integration.zookeeper import free_port

MB = 1_000_000
FILL_RECORD = 10_000
PRODUCE_RECORD = 1_000
PRODUCE_PARTITIONS = 6
ROWS = ("no move", "move, unthrottled", "move, throttled")


# --- confluent-kafka children ------------------------------------------------------------------


def _fill(bootstrap: str, topic: str, size: int) -> None:
    """``size`` bytes of 10 KB incompressible records to partition 0, acks=all."""
    import confluent_kafka

    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 5,
            "queue.buffering.max.kbytes": 1_048_576,
        }
    )
    pool = os.urandom(MB + FILL_RECORD)
    for i in range(size // FILL_RECORD):
        start = (i * 7919) % MB
        while True:
            try:
                producer.produce(topic, pool[start : start + FILL_RECORD], partition=0)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    if producer.flush(600) != 0:
        raise SystemExit("fill: records left unacknowledged")
    print("0", flush=True)


def _produce(bootstrap: str, topic: str, stop_file: str) -> None:
    """1 KB records, acks=all, until ``stop_file`` exists; prints records acknowledged per
    second between the first send and the stop. ``<stop_file>.ready`` appears with the first
    acknowledgement."""
    import confluent_kafka

    producer = confluent_kafka.Producer(
        {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5}
    )
    acked = 0

    def delivered(error: object, _: object) -> None:
        nonlocal acked
        if error is None:
            acked += 1

    value = b"x" * PRODUCE_RECORD
    start = time.perf_counter()
    sent = 0
    ready = False
    while True:
        if sent % 1000 == 0 and os.path.exists(stop_file):
            break
        if not ready and acked:
            Path(f"{stop_file}.ready").touch()
            ready = True
        try:
            producer.produce(
                topic, value, partition=sent % PRODUCE_PARTITIONS, on_delivery=delivered
            )
            sent += 1
        except BufferError:
            producer.poll(0.01)
        producer.poll(0)
    elapsed = time.perf_counter() - start
    counted = acked
    producer.flush(60)
    print(f"{counted / elapsed:.1f}", flush=True)


# --- a round -----------------------------------------------------------------------------------


class _Beside:
    """The produce child, running until ``stop``; its records/s."""

    def __init__(self, cluster: Cluster, topic: str, root: Path) -> None:
        self._stop = root / f"stop-{topic}"
        self._process = python_module(
            "bench.reassignment_bench",
            "--produce",
            cluster.kafka_bootstrap_servers,
            topic,
            str(self._stop),
        )
        # Acknowledged once (connected, the topic's leaders known) before what it is
        # measured beside: a fixed second was not always enough on a busy machine.
        ready = root / f"stop-{topic}.ready"
        deadline = time.monotonic() + 60
        while not ready.exists():
            if self._process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the producer beside {topic} never got an acknowledgement")
            time.sleep(0.05)

    def stop(self) -> float:
        self._stop.touch()
        return _child_rate(self._process, "confluent-kafka producer")


def _create(cluster: Cluster, topic: str, assignment: dict[int, list[int]]) -> None:
    with cluster.admin() as admin:
        raise_first(
            admin.create_topics(
                [
                    NewTopic(
                        topic, replica_assignment=assignment, configs={"min.insync.replicas": "2"}
                    )
                ]
            )
        )
    for p in assignment:
        cluster.wait_for(lambda p=p: cluster.leader(topic, p) >= 0, 30, f"a leader for {topic}-{p}")  # type: ignore[misc]


def _tool(*args: str) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = minikafka_main(["reassign-partitions", *args])
    if code != 0 or "Warning: the throttle" in out.getvalue():
        raise RuntimeError(f"reassign-partitions {args[2]}: {out.getvalue()[-800:]}")


def _moved(cluster: Cluster, topic: str) -> bool:
    read = cluster.zk.get_topic(topic)
    assert read is not None
    a = read.value
    return a.partitions[0] == (1, 2, 3) and not a.adding_replicas and not a.removing_replicas


def _move(
    cluster: Cluster, root: Path, topic: str, size: int, throttle: int | None
) -> tuple[float, float]:
    """Fill ``topic``-0 on 0,1,2 and move it to 1,2,3 with produce beside; (seconds, records/s)."""
    _create(cluster, topic, {0: [0, 1, 2]})
    filler = python_module(
        "bench.reassignment_bench", "--fill", cluster.kafka_bootstrap_servers, topic, str(size)
    )
    _child_rate(filler, "fill")
    plan = root / f"{topic}.json"
    plan.write_text(
        json.dumps(
            {"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [1, 2, 3]}]}
        )
    )
    other = f"{topic}-beside"
    _create(
        cluster, other, {p: [p % 3, (p + 1) % 3, (p + 2) % 3] for p in range(PRODUCE_PARTITIONS)}
    )
    beside = _Beside(cluster, other, root)
    bootstrap = cluster.bootstrap_servers
    started = time.perf_counter()
    _tool("--bootstrap-server", bootstrap, "--execute", "--reassignment-json-file", str(plan),
          *(("--throttle", str(throttle)) if throttle is not None else ()))  # fmt: skip
    cluster.wait_for(lambda: _moved(cluster, topic), 3600, f"{topic}-0 moved", interval_s=0.05)
    seconds = time.perf_counter() - started
    rate = beside.stop()
    _tool("--bootstrap-server", bootstrap, "--verify", "--reassignment-json-file", str(plan))
    with cluster.admin() as admin:
        raise_first(admin.delete_topics([topic, other]))
    return seconds, rate


def _alone(cluster: Cluster, root: Path, topic: str, seconds: float) -> float:
    _create(
        cluster, topic, {p: [p % 3, (p + 1) % 3, (p + 2) % 3] for p in range(PRODUCE_PARTITIONS)}
    )
    beside = _Beside(cluster, topic, root)
    time.sleep(seconds)
    rate = beside.stop()
    with cluster.admin() as admin:
        raise_first(admin.delete_topics([topic]))
    return rate


def run(
    size: int,
    throttle: int,
    rounds: int,
    produce_seconds: float,
    ports: Callable[[], int] = free_port,
) -> dict[str, list[tuple[float, float]]]:
    """Per row: (move seconds, produce records/s) of each round (no move: seconds 0)."""
    results: dict[str, list[tuple[float, float]]] = {row: [] for row in ROWS}
    with scratch_dir("reassignment-bench-") as root:
        zookeeper, cluster = start_cluster(root / "run", n_brokers=4, ports=ports)
        try:
            for r in range(rounds):
                results[ROWS[0]].append((0.0, _alone(cluster, root, f"alone-{r}", produce_seconds)))
                results[ROWS[1]].append(_move(cluster, root, f"fast-{r}", size, None))
                results[ROWS[2]].append(_move(cluster, root, f"slow-{r}", size, throttle))
                print(
                    f"round {r + 1}: "
                    + ", ".join(
                        f"{row} {v[-1][0]:.1f} s, {v[-1][1]:,.0f} records/s"
                        for row, v in results.items()
                    ),
                    file=sys.stderr,
                    flush=True,
                )
        finally:
            cluster.close()
            zookeeper.stop()
    return results


def print_table(results: dict[str, list[tuple[float, float]]], size: int, throttle: int) -> None:
    print(
        f"| {size / MB:,.0f} MB partition, RF3, 0,1,2 -> 1,2,3 | move, s: median (range) | MB/s "
        "| produce beside, 1 KB records/s: median (range) |"
    )
    print("|---|---:|---:|---:|")
    for row, values in results.items():
        seconds = [s for s, _ in values]
        produce = summary([p for _, p in values])
        label = f"move, --throttle {throttle / MB:g} MB/s" if row == ROWS[2] else row
        if row == ROWS[0]:
            print(f"| {label} | - | - | {produce} |")
        else:
            mb_s = size / MB / statistics.median(seconds)
            print(f"| {label} | {summary(seconds, ',.1f')} | {mb_s:,.1f} | {produce} |")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size-mb", type=float, default=1024)
    parser.add_argument("--throttle-mb", type=float, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--produce-seconds", type=float, default=10)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one round")
    parser.add_argument(
        "--fill", nargs=3, metavar=("BOOTSTRAP", "TOPIC", "BYTES"), help=argparse.SUPPRESS
    )
    parser.add_argument(
        "--produce", nargs=3, metavar=("BOOTSTRAP", "TOPIC", "STOP"), help=argparse.SUPPRESS
    )
    add_port_base(parser)
    args = parser.parse_args()
    if args.fill:
        _fill(args.fill[0], args.fill[1], int(args.fill[2]))
        return
    if args.produce:
        _produce(*args.produce)
        return
    if args.smoke:
        args.size_mb, args.throttle_mb, args.rounds, args.produce_seconds = 5, 1, 1, 2
    size, throttle = int(args.size_mb * MB), int(args.throttle_mb * MB)
    print(_machine(), flush=True)
    results = run(size, throttle, args.rounds, args.produce_seconds, ports_from(args))
    print(f"load average after {_load_average()}")
    print_table(results, size, throttle)


if __name__ == "__main__":
    main()
