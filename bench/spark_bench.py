"""Rows/s of a Spark batch read through the brokers and through the offline segment reader,
beside the Python client's own consume rate.

    python -m bench.spark_bench [--records 1000000] [--partitions 4] [--rounds 3]
                                [--master local[*]]

This starts a real ZooKeeper and one broker process on 127.0.0.1 (the integration tests'
harness), produces ``--records`` records of 100-byte values into a topic, then times:

1. client: a group-less Consumer assigned every partition, from the beginning to the end;
2. spark, brokers: ``spark.read.format("minikafka")`` of the topic, an action that touches
   every value (sum of value lengths), so every row crosses from the Python workers to the JVM;
3. spark, offline: the same query over ``format("minikafka-segments")`` on the broker's log dir.

Spark's session start is not timed; each figure is the median of ``--rounds`` with their
range (bench/stats.py).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid

from kazoo.client import KazooClient

from bench.codec_bench import yardstick
from bench.hygiene import add_port_base, ports_from, scratch_dir
from bench.stats import summary
from minikafka.client.admin import NewTopic
from minikafka.client.consumer.consumer import Consumer
from minikafka.client.producer.producer import Producer
from minikafka.proto.common import TopicPartition
from minikafka.spark.segments import HIGH_WATERMARK_CHECKPOINT, read_checkpoint
from tests.integration.cluster import Cluster
from tests.integration.zookeeper import ZooKeeperServer

VALUE = os.urandom(100)


def produce(bootstrap: str, topic: str, records: int) -> float:
    with Producer(bootstrap, acks=1, linger_ms=20, batch_size=262_144) as producer:
        producer.partitions_for(topic)
        start = time.perf_counter()
        for i in range(records):
            producer.send(topic, VALUE, key=b"%d" % (i % 1000))
        producer.flush()
        return records / (time.perf_counter() - start)


def client_consume(bootstrap: str, topic: str, partitions: int, records: int) -> float:
    with Consumer(
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        max_partition_fetch_bytes=8 * 1024 * 1024,
        max_poll_records=100_000,
    ) as consumer:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        start = time.perf_counter()
        seen = 0
        while seen < records:
            for batch in consumer.poll(1000).values():
                seen += len(batch)
        return records / (time.perf_counter() - start)


def spark_read(spark: object, fmt: str, options: dict[str, str], records: int) -> float:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    assert isinstance(spark, SparkSession)
    reader = spark.read.format(fmt)
    for name, value in options.items():
        reader = reader.option(name, value)
    start = time.perf_counter()
    row = reader.load().agg(F.count("*").alias("n"), F.sum(F.length("value")).alias("b")).first()
    elapsed = time.perf_counter() - start
    assert row is not None and row["n"] == records, (row, records)
    return records / elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--master", default="local[*]")
    add_port_base(parser)
    args = parser.parse_args()
    ports = ports_from(args)

    with scratch_dir("spark-bench-") as tmp:
        zookeeper = ZooKeeperServer(tmp / "zk", port=ports())
        zookeeper.start()
        chroot = f"/bench-{uuid.uuid4().hex}"
        root = KazooClient(hosts=zookeeper.connect_string)
        root.start()
        root.create(chroot)
        root.stop()
        cluster = Cluster(
            zookeeper.connect_string + chroot,
            tmp / "cluster",
            n_brokers=1,
            overrides={"replica.high.watermark.checkpoint.interval.ms": "500"},
            ports=ports,
        )
        try:
            cluster.start_all()
            cluster.wait_until_serving()
            bootstrap = cluster.bootstrap_servers
            topic = "bench"
            with cluster.admin() as admin:
                admin.create_topics([NewTopic(topic, args.partitions, 1)])
            cluster.wait_for(lambda: cluster.leader(topic, 0) >= 0, what="leader")
            rate = produce(bootstrap, topic, args.records)
            print(f"produced {args.records:,} records of 100 bytes at {rate:,.0f} rec/s")
            print(f"median (range) of {args.rounds} rounds; machine yardstick: {yardstick():,.0f}")
            log_dir = cluster.brokers[0].log_dir
            cluster.wait_for(
                lambda: (
                    sum(
                        read_checkpoint(log_dir / HIGH_WATERMARK_CHECKPOINT).get((topic, p), 0)
                        for p in range(args.partitions)
                    )
                    == args.records
                ),
                what="high watermarks checkpointed",
            )

            client_rates = [
                client_consume(bootstrap, topic, args.partitions, args.records)
                for _ in range(args.rounds)
            ]
            print(f"client consume:         {summary(client_rates)} rows/s")

            import minikafka.spark as spark_jobs

            os.environ["PYSPARK_PYTHON"] = sys.executable
            spark = spark_jobs.session("spark_bench", args.master)
            spark.sparkContext.setLogLevel("ERROR")
            live = {"bootstrap.servers": bootstrap, "subscribe": topic}
            offline = {"path": str(log_dir), "subscribe": topic}
            for label, fmt, options in (
                ("spark read, brokers:  ", spark_jobs.FORMAT, live),
                ("spark read, offline:  ", spark_jobs.SEGMENTS_FORMAT, offline),
            ):
                rates = [spark_read(spark, fmt, options, args.records) for _ in range(args.rounds)]
                print(f"{label}  {summary(rates)} rows/s")
            spark.stop()
        finally:
            cluster.close()
            zookeeper.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
