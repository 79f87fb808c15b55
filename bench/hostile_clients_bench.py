"""Clients that never read their Fetch answers, and a well-behaved client beside them.

    python -m bench.hostile_clients_bench [--connections 1000] [--log-mb 20] [--rounds 3]

One broker (ZooKeeper and the broker on 127.0.0.1, as bench.kafka_classic), a one-partition
topic holding ``--log-mb`` MB. Each round opens ``--connections`` connections to the Kafka
listener (16 KiB receive buffers), each sending one Fetch for the whole log and never reading
the answer, and waits until the broker has started every answer. It then reports the broker's
resident set (VmRSS) with all of them open, and the latency of another client's produce
(acks=1, one 100-byte record) and of its fetch of that record, each timed 20 times on one
connection of its own; then closes them all and reports the resident set again.

Issue 30's target: under 300 MB with 1,000 such connections, produce and fetch under 100 ms.
Prints medians and ranges over the rounds, and the machine yardstick (kafka-python's encoder,
bench.codec_bench). Everything it writes is removed at the end.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import time

import confluent_kafka

from bench.codec_bench import yardstick
from bench.hygiene import add_port_base, ports_from, scratch_dir
from bench.local_cluster import start_cluster
from bench.stats import summary
from minikafka.client.admin import NewTopic
from minikafka.client.cli._logging import configure_tool_logging
from tests.integration.cluster import Cluster
from tests.integration.kafka_protocol.raw import (
    RawKafka,
    batch,
    connect_small,
    encode_request,
    fetch_fields,
    produce_fields,
    rss_mb,
    unread_bytes,
)

TOPIC = "hostile"
_VALUE = bytes(range(256)) * 400  # 100 KiB
_SAMPLES = 20


def _fill(cluster: Cluster, megabytes: int) -> None:
    with cluster.admin() as admin:
        admin.create_topics([NewTopic(TOPIC, 1, 1)])
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": cluster.kafka_bootstrap_servers, "linger.ms": 20}
    )
    for _ in range((megabytes << 20) // len(_VALUE)):
        producer.produce(TOPIC, _VALUE, partition=0)
        producer.poll(0)
    if producer.flush(120) != 0:
        raise RuntimeError("records still undelivered after 120 s")


def _latencies_ms(address: str) -> tuple[list[float], list[float]]:
    """Produce and fetch latencies of one well-behaved client, in ms."""
    produce_ms: list[float] = []
    fetch_ms: list[float] = []
    with RawKafka(address) as raw:
        for _ in range(_SAMPLES):
            started = time.perf_counter()
            produced = raw.call(0, 8, produce_fields(TOPIC, batch([b"x" * 100]), acks=1))
            produce_ms.append((time.perf_counter() - started) * 1000)
            [partition] = produced.responses[0].partition_responses
            if partition.error_code != 0:
                raise RuntimeError(f"produce failed with error {partition.error_code}")
            started = time.perf_counter()
            fetched = raw.call(1, 12, fetch_fields(TOPIC, partition.base_offset, 1 << 16))
            fetch_ms.append((time.perf_counter() - started) * 1000)
            if not fetched.responses[0].partitions[0].records:
                raise RuntimeError("the record just produced was not fetched")
    return produce_ms, fetch_ms


def _round(cluster: Cluster, connections: int) -> dict[str, float]:
    broker = cluster.brokers[0]
    assert broker.process is not None
    pid = broker.process.pid
    address = broker.kafka_address
    fetch = encode_request(1, 12, fetch_fields(TOPIC, 0, 1 << 30))
    before = rss_mb(pid)
    hostile: list[socket.socket] = []
    try:
        for _ in range(connections):
            sock = connect_small(address)
            hostile.append(sock)
            sock.sendall(fetch)
        deadline = time.monotonic() + 120
        while sum(1 for sock in hostile if unread_bytes(sock)) < connections:
            if time.monotonic() > deadline:
                raise RuntimeError("the broker did not start every answer in 120 s")
            time.sleep(0.5)
        time.sleep(1)
        loaded = rss_mb(pid)
        produce_ms, fetch_ms = _latencies_ms(address)
    finally:
        for sock in hostile:
            sock.close()
    time.sleep(5)
    return {
        "before": before,
        "loaded": loaded,
        "after": rss_mb(pid),
        "produce_ms": statistics.median(produce_ms),
        "produce_max_ms": max(produce_ms),
        "fetch_ms": statistics.median(fetch_ms),
        "fetch_max_ms": max(fetch_ms),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--log-mb", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    add_port_base(parser)
    args = parser.parse_args()
    configure_tool_logging()
    speed = yardstick()  # before the cluster starts: on a quiet machine
    with scratch_dir("hostile-clients-") as root:
        zookeeper, cluster = start_cluster(root, n_brokers=1, ports=ports_from(args))
        try:
            _fill(cluster, args.log_mb)
            rounds = []
            for n in range(args.rounds):
                result = _round(cluster, args.connections)
                rounds.append(result)
                print(
                    f"  round {n + 1}: RSS {result['before']:.0f} -> {result['loaded']:.0f} -> "
                    f"{result['after']:.0f} MB; produce {result['produce_ms']:.1f} ms "
                    f"(max {result['produce_max_ms']:.1f}), fetch {result['fetch_ms']:.1f} ms "
                    f"(max {result['fetch_max_ms']:.1f})",
                    file=sys.stderr,
                    flush=True,
                )
        finally:
            cluster.close()
            zookeeper.stop()

    def column(key: str, fmt: str = ",.0f") -> str:
        return summary([r[key] for r in rounds], fmt)

    print(
        f"{args.connections:,} connections each sending one Fetch for a {args.log_mb} MB log and "
        f"never reading; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; "
        f"machine yardstick: kafka-python encodes {speed:,.0f} records/s; "
        f"median (range) of {args.rounds} rounds"
    )
    print(f"broker RSS before:             {column('before')} MB")
    print(f"broker RSS, connections open:  {column('loaded')} MB")
    print(f"broker RSS 5 s after they go:  {column('after')} MB")
    print(f"other client's produce, median of {_SAMPLES}: {column('produce_ms', '.1f')} ms")
    print(f"other client's produce, max of {_SAMPLES}:    {column('produce_max_ms', '.1f')} ms")
    print(f"other client's fetch, median of {_SAMPLES}:   {column('fetch_ms', '.1f')} ms")
    print(f"other client's fetch, max of {_SAMPLES}:      {column('fetch_max_ms', '.1f')} ms")


if __name__ == "__main__":
    main()
