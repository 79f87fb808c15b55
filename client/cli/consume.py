"""``minikafka consume``: Kafka's kafka-console-consumer.sh — records to stdout, one per line.

    minikafka consume --bootstrap-server H:P (--topic T | --include REGEX) [--from-beginning]
        [--group G | --partition P [--offset O|earliest|latest]] [--max-messages N]
        [--timeout-ms MS] [--property print.key=true ...] [--consumer-property k=v ...]

Without ``--group`` the consumer is assigned every partition of the topic (or only
``--partition``) and starts at the log end, or at the log start with ``--from-beginning``;
nothing is committed. With ``--group`` it joins the group, which decides the partitions and
starts from the committed offsets.

Formatter properties (``--property``) are Kafka's DefaultMessageFormatter's: ``print.timestamp``
(``CreateTime:<ms>``), ``print.partition`` (``Partition:<p>``), ``print.offset``
(``Offset:<o>``), ``print.headers`` (``k:v,k2:v2`` or ``NO_HEADERS``), ``print.key``,
``print.value`` (true), in that order, separated by ``key.separator`` (a tab); then
``line.separator`` (a newline). ``null.literal`` stands for a null key or value ("null").

A ``--topic`` that does not exist ends the tool at once with UNKNOWN_TOPIC_OR_PARTITION, as
kcat does: this consumer never asks the brokers to create a topic (auto.create.topics.enable
is for producers here), so waiting would only wait for somebody else to create it.

At the end ``Processed a total of N messages`` goes to stderr. ``--timeout-ms`` ends the tool
when no record arrived for that long (exit status 0, as Kafka's); errors print one line on
stderr and exit 1.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol, TextIO

from minikafka.client._retry import RetryLater, RetryPolicy, retry_or_raise
from minikafka.client.cli._config import ConfigError, parse_key_values, read_properties_file
from minikafka.proto.errors import ErrorCode, KafkaError, error_for_code

if TYPE_CHECKING:  # the consumer loads grpc: only when the command runs (see minikafka.cli)
    from minikafka.client.consumer.fetcher import ConsumerRecord

__all__ = [
    "MessageFormatter",
    "UsageError",
    "add_arguments",
    "check_args",
    "consume",
    "run",
]

# ConsumerRecord.timestamp_type, as Kafka's TimestampType names them.
_TIMESTAMP_TYPES = {0: "CreateTime", 1: "LogAppendTime"}
# A topic created a moment ago may be missing from the answering broker's metadata until the
# controller's UpdateMetadata reaches it: how long a missing topic is asked for again.
_UNKNOWN_TOPIC_GRACE_S = 2.0
_UNKNOWN_TOPIC_BACKOFF_S = 0.2


class UsageError(Exception):
    pass


class RecordSource(Protocol):
    """What this tool needs of Consumer once it is set up (tests pass a fake)."""

    def poll(self, timeout_ms: int = ..., max_records: int | None = ...) -> dict[Any, Any]: ...


@dataclass(frozen=True)
class MessageFormatter:
    """Kafka's DefaultMessageFormatter: which fields to print and the separators."""

    print_timestamp: bool = False
    print_partition: bool = False
    print_offset: bool = False
    print_headers: bool = False
    print_key: bool = False
    print_value: bool = True
    key_separator: bytes = b"\t"
    line_separator: bytes = b"\n"
    headers_separator: bytes = b","
    headers_key_separator: bytes = b":"
    null_literal: bytes = b"null"

    @classmethod
    def from_properties(cls, properties: dict[str, str]) -> MessageFormatter:
        def flag(name: str, default: bool = False) -> bool:
            text = properties.get(name)
            return default if text is None else text.strip().lower() == "true"

        def text(name: str, default: str) -> bytes:
            return _unescape(properties.get(name, default)).encode()

        return cls(
            print_timestamp=flag("print.timestamp"),
            print_partition=flag("print.partition"),
            print_offset=flag("print.offset"),
            print_headers=flag("print.headers"),
            print_key=flag("print.key"),
            print_value=flag("print.value", True),
            key_separator=text("key.separator", "\t"),
            line_separator=text("line.separator", "\n"),
            headers_separator=text("headers.separator", ","),
            headers_key_separator=text("headers.key.separator", ":"),
            null_literal=text("null.literal", "null"),
        )

    def format(self, record: ConsumerRecord) -> bytes:
        fields: list[bytes] = []
        if self.print_timestamp:
            kind = _TIMESTAMP_TYPES.get(record.timestamp_type)
            fields.append(
                f"{kind}:{record.timestamp}".encode() if kind is not None else b"NO_TIMESTAMP"
            )
        if self.print_partition:
            fields.append(b"Partition:%d" % record.partition)
        if self.print_offset:
            fields.append(b"Offset:%d" % record.offset)
        if self.print_headers:
            fields.append(
                self.headers_separator.join(
                    k.encode() + self.headers_key_separator + self._bytes(v)
                    for k, v in record.headers
                )
                if record.headers
                else b"NO_HEADERS"
            )
        if self.print_key:
            fields.append(self._bytes(record.key))
        if self.print_value:
            fields.append(self._bytes(record.value))
        # Kafka ends the line after the last field printed, whichever it is.
        return self.key_separator.join(fields) + self.line_separator if fields else b""

    def _bytes(self, item: bytes | None) -> bytes:
        return self.null_literal if item is None else item


def _unescape(text: str) -> str:
    """``\\t``, ``\\n``, ``\\r`` written literally on a command line, as Kafka reads them."""
    return text.replace("\\t", "\t").replace("\\n", "\n").replace("\\r", "\r")


def _offset(text: str) -> str | int:
    if text in ("earliest", "latest"):
        return text
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(
            "The provided offset value is incorrect. Valid values are 'earliest', 'latest', "
            "or a non-negative long."
        )
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--bootstrap-server", required=True, metavar="HOST:PORT", help="brokers to connect to"
    )
    parser.add_argument("--topic", help="topic to consume")
    parser.add_argument(
        "--include", metavar="REGEX", help="consume every topic whose whole name matches"
    )
    parser.add_argument("--group", help="consumer group id (committed offsets, rebalancing)")
    parser.add_argument(
        "--from-beginning",
        action="store_true",
        help="start at the log start when there is no committed offset",
    )
    parser.add_argument("--partition", type=int, help="consume only this partition")
    parser.add_argument(
        "--offset",
        type=_offset,
        metavar="earliest|latest|N",
        help="with --partition: where to start (default latest)",
    )
    parser.add_argument(
        "--max-messages", type=int, metavar="N", help="exit after N records (default: never)"
    )
    parser.add_argument(
        "--timeout-ms", type=int, metavar="MS", help="exit when no record came for MS ms"
    )
    parser.add_argument(
        "--property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="formatter property: print.key, print.timestamp, print.partition, print.offset, "
        "print.headers, print.value, key.separator, line.separator, null.literal",
    )
    parser.add_argument(
        "--consumer-property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="consumer config by Kafka name (fetch.max.wait.ms, max.poll.records, ...)",
    )
    parser.add_argument(
        "--consumer.config", dest="consumer_config", metavar="FILE", help="consumer .properties"
    )


def check_args(args: argparse.Namespace) -> None:
    """Kafka's ConsoleConsumer option rules; UsageError naming the first broken one."""
    if (args.topic is None) == (args.include is None):
        raise UsageError("Exactly one of --include/--topic is required.")
    if args.partition is not None and args.topic is None:
        raise UsageError("The topic is required when partition is specified.")
    if args.offset is not None and args.partition is None:
        raise UsageError("The partition is required when offset is specified.")
    if args.from_beginning and args.offset is not None:
        raise UsageError("Options from-beginning and offset cannot be specified together.")
    if args.group is not None and args.partition is not None:
        raise UsageError("Options group and partition cannot be specified together.")
    if args.max_messages is not None and args.max_messages <= 0:
        raise UsageError("--max-messages must be positive.")


def consume(
    source: RecordSource,
    formatter: MessageFormatter,
    out: BinaryIO,
    *,
    max_messages: int | None,
    timeout_ms: int | None,
    clock: Any = time.monotonic,
) -> int:
    """Poll and print until ``max_messages``, ``timeout_ms`` without a record or Ctrl-C; the
    count."""
    count = 0
    last_record_at = clock()
    try:
        while max_messages is None or count < max_messages:
            wait_ms = 1000
            if timeout_ms is not None:
                remaining_ms = timeout_ms - (clock() - last_record_at) * 1000
                if remaining_ms <= 0:
                    break
                wait_ms = max(1, min(wait_ms, int(remaining_ms)))
            budget = None if max_messages is None else max_messages - count
            batch = source.poll(timeout_ms=wait_ms, max_records=budget)
            records: list[ConsumerRecord] = [r for rs in batch.values() for r in rs]
            if not records:
                continue
            last_record_at = clock()
            if budget is not None:
                records = records[:budget]
            out.write(b"".join(formatter.format(r) for r in records))
            out.flush()
            count += len(records)
    except KeyboardInterrupt:
        pass  # Ctrl-C is how the tool is usually stopped: report and exit 0, as Kafka does
    except KafkaError as exc:
        raise ConsumeFailed(exc, count) from exc
    return count


class ConsumeFailed(Exception):
    """``consume`` stopped on a KafkaError (a batch that does not decode, say) after printing
    ``count`` records: the tool reports both, as Kafka's console consumer does."""

    def __init__(self, error: KafkaError, count: int) -> None:
        super().__init__(str(error))
        self.error = error
        self.count = count


def consumer_config(args: argparse.Namespace) -> dict[str, str]:
    config = read_properties_file(args.consumer_config) if args.consumer_config else {}
    config.update(parse_key_values(args.consumer_property))
    config["auto.offset.reset"] = "earliest" if args.from_beginning else "latest"
    if args.group is not None:
        config["group.id"] = args.group
    return config


def require_topic(consumer: Any, topic: str) -> None:
    """Return once ``topic`` exists; UNKNOWN_TOPIC_OR_PARTITION when it is still missing after
    the grace."""

    def attempt() -> None:
        try:
            topics = consumer.topics()
        except KafkaError as exc:
            raise retry_or_raise(exc) from None
        if topic not in topics:
            raise RetryLater(
                error_for_code(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {topic} does not exist"
                )
            )

    RetryPolicy(backoff_s=_UNKNOWN_TOPIC_BACKOFF_S, overrun=True).call(
        attempt, deadline=time.monotonic() + _UNKNOWN_TOPIC_GRACE_S
    )


def _set_up(consumer: Any, args: argparse.Namespace) -> None:
    """Subscribe (with a group) or assign partitions and position them (without one)."""
    from minikafka.proto.common import TopicPartition

    if args.topic is not None:
        require_topic(consumer, args.topic)
    if args.group is not None:
        if args.topic is not None:
            consumer.subscribe([args.topic])
        else:
            consumer.subscribe(pattern=args.include)
        return
    topics: Sequence[str]
    if args.topic is not None:
        topics = [args.topic]
    else:
        pattern = re.compile(args.include)
        topics = sorted(t for t in consumer.topics() if pattern.fullmatch(t))
    partitions: list[TopicPartition] = []
    for topic in topics:
        # --timeout-ms bounds the wait for a topic's metadata too (a missing topic, say)
        numbers = sorted(consumer.partitions_for_topic(topic, timeout_ms=args.timeout_ms))
        if args.partition is not None:
            if args.partition not in numbers:
                raise UsageError(
                    f"partition {args.partition} of topic {topic} does not exist "
                    f"({len(numbers)} partitions)"
                )
            numbers = [args.partition]
        partitions.extend(TopicPartition(topic, p) for p in numbers)
    consumer.assign(partitions)
    if isinstance(args.offset, int):
        for tp in partitions:
            consumer.seek(tp, args.offset)
    elif args.offset == "earliest":
        consumer.seek_to_beginning(*partitions)
    elif args.offset == "latest":
        consumer.seek_to_end(*partitions)


def execute(args: argparse.Namespace, make_consumer: Any, out: BinaryIO, err: TextIO) -> int:
    """Run the tool with ``make_consumer(config)`` building the consumer (tests pass a fake)."""
    try:
        check_args(args)
        formatter = MessageFormatter.from_properties(parse_key_values(args.property))
        config = consumer_config(args)
    except (UsageError, ConfigError) as exc:
        print(exc, file=err)
        return 1
    try:
        consumer = make_consumer(config)
    except (ConfigError, KafkaError) as exc:
        print(f"ERROR {exc}", file=err)
        return 1
    count = 0
    status = 0
    try:
        _set_up(consumer, args)
        count = consume(
            consumer,
            formatter,
            out,
            max_messages=args.max_messages,
            timeout_ms=args.timeout_ms,
        )
    except ConsumeFailed as exc:
        count = exc.count
        print(f"ERROR Error processing message, terminating consumer process: {exc}", file=err)
        status = 1
    except (UsageError, KafkaError) as exc:
        print(f"ERROR Error processing message, terminating consumer process: {exc}", file=err)
        status = 1
    except KeyboardInterrupt:
        pass  # Ctrl-C before the first poll
    finally:
        consumer.close()
        print(f"Processed a total of {count} messages", file=err)
    return status


def run(args: argparse.Namespace) -> int:
    from minikafka.client.cli._config import client_kwargs
    from minikafka.client.cli._logging import configure_tool_logging
    from minikafka.client.consumer.consumer import Consumer

    configure_tool_logging()

    def warn(message: str) -> None:
        print(f"WARN {message}", file=sys.stderr)

    def make_consumer(config: dict[str, str]) -> Consumer:
        kwargs = client_kwargs(Consumer, config, warn)
        return Consumer(bootstrap_servers=args.bootstrap_server, **kwargs)

    return execute(args, make_consumer, sys.stdout.buffer, sys.stderr)
