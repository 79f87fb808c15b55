"""Produce throughput and end-to-end latency on a local 3-broker cluster.

    python -m bench.cluster_bench [--records 200000] [--latency-records 1000]

This starts a real ZooKeeper (Debian's package) and three broker processes on 127.0.0.1, the same
way the integration tests do, then measures:

1. Produce throughput with the Python Producer: 100-byte records, batch.size 16 KB, linger.ms 5,
   in four setups: replication factor 1 or 3, acks=1 or all. Reported as records/s and MB/s of
   record values, from the first send to the end of flush().
2. End-to-end latency, RF 3 and acks=all: one record every 2 ms. A Consumer polls in another
   thread, and the latency is the time it receives a record minus the time the record was sent.
   Reported as p50/p99. A consumer only sees a record once the high watermark passes it, so this
   includes replication to the followers.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import threading
import time

from bench.hygiene import add_port_base, ports_from, scratch_dir
from bench.local_cluster import start_cluster
from minikafka.client.admin import NewTopic
from minikafka.client.consumer.consumer import Consumer
from minikafka.client.producer.producer import Producer
from minikafka.proto.common import TopicPartition
from tests.integration.cluster import Cluster

VALUE = os.urandom(100)


def _has_leader(cluster: Cluster, topic: str) -> bool:
    return cluster.leader(topic, 0) >= 0


def produce_run(bootstrap: str, topic: str, records: int, acks: str | int) -> tuple[float, float]:
    with Producer(
        bootstrap_servers=bootstrap, acks=acks, linger_ms=5, batch_size=16_384
    ) as producer:
        producer.partitions_for(topic)  # metadata before the clock starts
        start = time.perf_counter()
        for _ in range(records):
            producer.send(topic, VALUE)
        producer.flush()
        elapsed = time.perf_counter() - start
    return records / elapsed, records * len(VALUE) / elapsed / 1e6


def latency_run(bootstrap: str, topic: str, records: int) -> tuple[float, float]:
    received: dict[int, float] = {}
    done = threading.Event()

    def consume() -> None:
        with Consumer(bootstrap_servers=bootstrap, fetch_max_wait_ms=100) as consumer:
            tp = TopicPartition(topic, 0)
            consumer.assign([tp])
            consumer.seek_to_beginning(tp)
            ready.set()
            while not done.is_set():
                for batch in consumer.poll(timeout_ms=100).values():
                    now = time.perf_counter()
                    for record in batch:
                        received[int(record.value or b"0")] = now

    ready = threading.Event()
    consumer_thread = threading.Thread(target=consume)
    consumer_thread.start()
    ready.wait(30)
    sent: dict[int, float] = {}
    with Producer(bootstrap_servers=bootstrap, acks="all", linger_ms=0) as producer:
        producer.partitions_for(topic)
        for i in range(records):
            sent[i] = time.perf_counter()
            producer.send(topic, str(i).encode(), partition=0)
            time.sleep(0.002)
        producer.flush()
    deadline = time.monotonic() + 30
    while len(received) < records and time.monotonic() < deadline:
        time.sleep(0.05)
    done.set()
    consumer_thread.join()
    latencies = sorted((received[i] - sent[i]) * 1000 for i in sent if i in received)
    p99 = latencies[int(len(latencies) * 0.99) - 1]
    return statistics.median(latencies), p99


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--latency-records", type=int, default=1_000)
    add_port_base(parser)
    args = parser.parse_args()
    with scratch_dir("cluster-bench-") as root:
        zookeeper, cluster = start_cluster(root, ports=ports_from(args))
        try:
            with cluster.admin() as admin:
                admin.create_topics(
                    [NewTopic("rf1", 1, 1), NewTopic("rf3", 1, 3), NewTopic("lat", 1, 3)]
                )
            for topic in ("rf1", "rf3", "lat"):
                cluster.wait_for(functools.partial(_has_leader, cluster, topic), timeout_s=30)
            print(f"machine: {os.cpu_count()} cores; {args.records} records of 100 bytes per run")
            print()
            print("| replication factor | acks | records/s | MB/s |")
            print("|---|---|---|---|")
            for topic, rf in (("rf1", 1), ("rf3", 3)):
                for acks in (1, "all"):
                    rps, mbps = produce_run(cluster.bootstrap_servers, topic, args.records, acks)
                    print(f"| {rf} | {acks} | {rps:,.0f} | {mbps:.1f} |")
            p50, p99 = latency_run(cluster.bootstrap_servers, "lat", args.latency_records)
            print()
            print(
                f"end-to-end latency (RF 3, acks=all, produce -> consumer poll): "
                f"p50 {p50:.1f} ms, p99 {p99:.1f} ms over {args.latency_records} records"
            )
        finally:
            cluster.close()
            zookeeper.stop()


if __name__ == "__main__":
    main()
