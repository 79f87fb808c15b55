"""Produce throughput when the leader recompresses to the topic's compression.type.

    python -m bench.recompression_bench [--records 300000] [--rounds 3]

A local 3-broker cluster (as bench.kafka_protocol_bench), topics of 6 partitions, RF3,
confluent-kafka's Producer (librdkafka) with acks=all, the 100-byte records of
bench.kafka_protocol_bench (all 'x': they compress to almost nothing). Each round produces
into four topics, one client process at a time: producer codec none and lz4 into a topic
with compression.type producer (the broker keeps the batches), and the same codecs into
topics with compression.type zstd and gzip (the leader decompresses and recompresses every
batch; its followers copy the result). Beside each rate: the CPU of the client and of each broker.
"""

from __future__ import annotations

import argparse
import sys
import time

from bench.codec_bench import yardstick
from bench.hygiene import add_port_base, ports_from
from bench.kafka_protocol_bench import (
    BATCH_SIZE,
    Result,
    _child,
    _child_rate,
    _measured,
    create_topic,
    print_table,
    run_rounds,
)
from tests.integration.cluster import Cluster

# (producer's compression.type, topic's compression.type)
CASES = (("none", "producer"), ("none", "zstd"), ("lz4", "producer"), ("lz4", "gzip"))


def run_round(cluster: Cluster, records: int, round_no: int, result: Result) -> None:
    bootstrap = cluster.kafka_bootstrap_servers
    for producer_codec, topic_codec in CASES:
        name = f"producer {producer_codec} -> topic {topic_codec}"
        topic = f"recompress-{producer_codec}-{topic_codec}-{round_no}"
        create_topic(cluster, topic, 3, {"compression.type": topic_codec})
        rate, cpu = _measured(
            cluster,
            lambda t=topic, c=producer_codec: _child(  # type: ignore[misc]
                "--produce", bootstrap, t, str(records), "all", str(BATCH_SIZE), c
            ),
            lambda p, n=name: _child_rate(p, n),
        )
        result.rates.setdefault(name, []).append(rate)
        result.cpu.setdefault(name, []).append(cpu)
        print(f"  {name}: {rate:,.0f} records/s ({cpu})", file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=3)
    add_port_base(parser)
    args = parser.parse_args()
    machine = yardstick()
    result = run_rounds(
        "recompression-bench-", args.rounds, args.records, run_round, ports=ports_from(args)
    )
    with open("/proc/loadavg") as loadavg:
        load = " ".join(loadavg.read().split()[:3])
    print(
        f"\n{args.records:,} records of 100 bytes, RF3 acks=all, {args.rounds} rounds, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average at the end "
        f"{load}; machine yardstick (kafka-python encoder): {machine:,.0f} records/s"
    )
    print_table(result, "producer codec -> topic compression.type")


if __name__ == "__main__":
    main()
