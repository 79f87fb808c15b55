"""``minikafka perf-consume``: Kafka's kafka-consumer-perf-test.sh — consumer throughput.

    minikafka perf-consume --bootstrap-server H:P --topic T --messages N [--group G]
        [--timeout MS] [--from-latest] [--hide-header] [--consumer-property k=v ...]

Reads N records (from the log start, or the log end with --from-latest) and prints Kafka's
header and one CSV line (MB = 2^20 bytes of keys and values; times as yyyy-MM-dd HH:mm:ss:SSS)::

    start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, \\
rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
    2026-11-23 12:00:00:000, 2026-11-23 12:00:01:000, 9.5367, 9.5367, 100000, 100000.0000, \\
12, 988, 9.6525, 101214.5749

Without --group every partition of the topic is assigned (rebalance.time.ms is then the time
to assign and position them); with --group the consumer joins that group and the rebalance
time is until the first records arrive. When no record came for ``--timeout`` ms (10000) it
stops early with Kafka's warning on stderr.
"""

from __future__ import annotations

import argparse
import operator
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TextIO

from minikafka.client.cli._config import ConfigError, parse_key_values, read_properties_file
from minikafka.proto.errors import KafkaError

__all__ = ["ConsumeResult", "add_arguments", "consume", "format_result", "run"]

MB = 1024 * 1024
_key = operator.attrgetter("key")
_value = operator.attrgetter("value")
HEADER = (
    "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
    "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
)


class RecordSource(Protocol):
    def poll(self, timeout_ms: int = ..., max_records: int | None = ...) -> dict[Any, Any]: ...


@dataclass(frozen=True)
class ConsumeResult:
    start_ms: float  # wall clock, epoch ms
    end_ms: float
    joined_ms: float  # when the partitions were ours (rebalance done)
    messages: int
    bytes: int
    timed_out: bool


def consume(
    source: RecordSource,
    messages: int,
    timeout_ms: int,
    start_ms: float,
    joined_ms: float | None,
    *,
    max_poll_records: int = 500,
    clock: Callable[[], float] = time.time,
) -> ConsumeResult:
    """Poll until ``messages`` records or ``timeout_ms`` without any; ``joined_ms`` None means
    the rebalance ends with the first records (group mode)."""
    count = 0
    size = 0
    last_ms = clock() * 1000
    timed_out = False
    while count < messages:
        # Polls of max.poll.records, as Kafka's tool: never more than asked for in all.
        batch = source.poll(timeout_ms=100, max_records=min(messages - count, max_poll_records))
        now_ms = clock() * 1000
        if not batch:
            if now_ms - last_ms > timeout_ms:
                timed_out = True
                break
            continue
        if joined_ms is None:
            joined_ms = now_ms
        last_ms = now_ms
        for records in batch.values():
            count += len(records)
            # keys and values that are not None, summed in C rather than record by record
            size += sum(map(len, filter(None, map(_key, records))))
            size += sum(map(len, filter(None, map(_value, records))))
    end_ms = clock() * 1000
    return ConsumeResult(
        start_ms, end_ms, start_ms if joined_ms is None else joined_ms, count, size, timed_out
    )


def _time(ms: float) -> str:
    stamp = datetime.fromtimestamp(ms / 1000)
    return stamp.strftime("%Y-%m-%d %H:%M:%S:") + f"{stamp.microsecond // 1000:03d}"


def format_result(result: ConsumeResult) -> str:
    """Kafka's CSV line: totals over the whole run, fetch figures without the rebalance."""
    elapsed_s = max((result.end_ms - result.start_ms) / 1000, 1e-9)
    rebalance_ms = int(result.joined_ms - result.start_ms)
    fetch_ms = int(result.end_ms - result.joined_ms)
    fetch_s = max(fetch_ms / 1000, 1e-9)
    mb = result.bytes / MB
    return (
        f"{_time(result.start_ms)}, {_time(result.end_ms)}, {mb:.4f}, {mb / elapsed_s:.4f}, "
        f"{result.messages}, {result.messages / elapsed_s:.4f}, {rebalance_ms}, {fetch_ms}, "
        f"{mb / fetch_s:.4f}, {result.messages / fetch_s:.4f}"
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--bootstrap-server", required=True, metavar="HOST:PORT", help="brokers to connect to"
    )
    parser.add_argument("--topic", required=True, help="topic to consume")
    parser.add_argument("--messages", type=int, required=True, help="records to consume")
    parser.add_argument("--group", help="consume as a member of this group")
    parser.add_argument(
        "--timeout",
        type=int,
        default=10_000,
        metavar="MS",
        help="stop when no record came for this long (default 10000)",
    )
    parser.add_argument(
        "--from-latest", action="store_true", help="start at the log end, not the log start"
    )
    parser.add_argument("--hide-header", action="store_true", help="print only the CSV line")
    parser.add_argument(
        "--consumer-property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="consumer config by Kafka name",
    )
    parser.add_argument(
        "--consumer.config", dest="consumer_config", metavar="FILE", help="consumer .properties"
    )


def execute(
    args: argparse.Namespace,
    make_consumer: Callable[[dict[str, str]], Any],
    out: TextIO,
    err: TextIO,
) -> int:
    from minikafka.proto.common import TopicPartition

    if args.messages <= 0:
        print("ERROR --messages must be positive", file=err)
        return 1
    try:
        config = read_properties_file(args.consumer_config) if args.consumer_config else {}
        config.update(parse_key_values(args.consumer_property))
    except ConfigError as exc:
        print(f"ERROR {exc}", file=err)
        return 1
    config["auto.offset.reset"] = "latest" if args.from_latest else "earliest"
    if args.group is not None:
        config["group.id"] = args.group
    start_ms = time.time() * 1000
    try:
        consumer = make_consumer(config)
    except (ConfigError, KafkaError) as exc:
        print(f"ERROR {exc}", file=err)
        return 1
    try:
        joined_ms: float | None = None
        if args.group is not None:
            consumer.subscribe([args.topic])
        else:
            partitions = sorted(consumer.partitions_for_topic(args.topic))
            consumer.assign([TopicPartition(args.topic, p) for p in partitions])
            joined_ms = time.time() * 1000
        result = consume(
            consumer,
            args.messages,
            args.timeout,
            start_ms,
            joined_ms,
            max_poll_records=int(config.get("max.poll.records", "500")),
        )
    except KafkaError as exc:
        print(f"ERROR {exc}", file=err)
        return 1
    finally:
        consumer.close()
    if result.timed_out:
        print(
            f"WARNING: Exiting before consuming the expected number of messages: timeout "
            f"({args.timeout} ms) exceeded. You can use the --timeout option to increase the "
            "timeout.",
            file=err,
        )
    if not args.hide_header:
        print(HEADER, file=out)
    print(format_result(result), file=out)
    return 0


def run(args: argparse.Namespace) -> int:
    from minikafka.client.cli._config import client_kwargs
    from minikafka.client.cli._logging import configure_tool_logging
    from minikafka.client.consumer.consumer import Consumer

    configure_tool_logging()

    def warn(message: str) -> None:
        print(f"WARN {message}", file=sys.stderr)

    def make_consumer(config: dict[str, str]) -> Consumer:
        return Consumer(
            bootstrap_servers=args.bootstrap_server, **client_kwargs(Consumer, config, warn)
        )

    return execute(args, make_consumer, sys.stdout, sys.stderr)
