"""``minikafka produce``: Kafka's kafka-console-producer.sh — one record per line of stdin.

    minikafka produce --bootstrap-server H:P --topic T [--acks all|1|0] [--sync]
        [--message-send-max-retries 3] [--retry-backoff-ms 100] [--timeout 1000]
        [--request-timeout-ms 1500] [--batch-size 16384]
        [--property parse.key=true --property key.separator=:]
        [--producer-property linger.ms=5 ...] [--producer.config FILE]

Reader properties (``--property``), as Kafka's LineMessageReader reads them: ``parse.key``
(false; the key is the text before the first ``key.separator``, a tab by default),
``parse.headers`` (false; the line starts with headers ``k:v,k2:v2`` up to the first
``headers.delimiter``, a tab; ``headers.separator`` and ``headers.key.separator`` split them),
``ignore.error`` (false: a line without a separator is an error; true: the line is taken as
it is), ``null.marker`` (a key, value or header value equal to it is sent as null). Lines are
bytes; the line end (``\\n`` or ``\\r\\n``) is not part of the value.

Records go out asynchronously (``--sync``: one at a time) with Kafka's console-producer
settings, not the producer library's (``CONSOLE_DEFAULTS``): acks=all (``--acks``, or Kafka's
``--request-required-acks``), 3 retries (``--message-send-max-retries``) ``--retry-backoff-ms``
100 apart, linger.ms 1000 (``--timeout``), request.timeout.ms 1500 (``--request-timeout-ms``),
batch.size 16384 (``--batch-size``), client.id ``console-producer``. So a record the cluster
cannot take (NOT_ENOUGH_REPLICAS while the ISR is short) fails after 4 attempts, within a
few seconds, rather than after the library's delivery.timeout.ms of two minutes. As Kafka
merges them, an option given on the command line wins over ``--producer-property`` and
``--producer.config``, and its default only fills a key neither of those set. ``--sync``
sends each record at once (a flush) and waits for it. The first failure prints one line on
stderr, as Kafka's ErrorLoggingCallback words it, and the tool exits 1 once what was already
sent is settled::

    ERROR Error when sending message to topic T with key: null, value: 5 bytes with error: <error>
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO, Protocol, TextIO

from minikafka.client.cli._config import ConfigError, parse_key_values, read_properties_file
from minikafka.proto.errors import KafkaError

if TYPE_CHECKING:  # the producer loads grpc: only when the command runs (see minikafka.cli)
    from minikafka.client.producer.future import FutureRecordMetadata

__all__ = [
    "CONSOLE_DEFAULTS",
    "LineReader",
    "ParsedRecord",
    "ReaderError",
    "add_arguments",
    "execute",
    "run",
    "send_error_line",
]


# Kafka's kafka-console-producer.sh: its option -> (the producer config it sets, its default).
CONSOLE_DEFAULTS: dict[str, tuple[str, str]] = {
    "acks": ("acks", "all"),
    "message_send_max_retries": ("retries", "3"),
    "retry_backoff_ms": ("retry.backoff.ms", "100"),
    "timeout": ("linger.ms", "1000"),
    "request_timeout_ms": ("request.timeout.ms", "1500"),
    "batch_size": ("batch.size", "16384"),
}


class ReaderError(Exception):
    """A line the reader cannot turn into a record (Kafka's KafkaException from the reader)."""


class RecordSender(Protocol):
    """What this tool needs of Producer (tests pass a fake)."""

    def send(
        self,
        topic: str,
        value: bytes | None = None,
        key: bytes | None = None,
        *,
        headers: Iterable[tuple[str, bytes | None]] | None = None,
    ) -> FutureRecordMetadata: ...
    def flush(self, timeout: float | None = None) -> None: ...


Header = tuple[str, bytes | None]


@dataclass(frozen=True)
class ParsedRecord:
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()


@dataclass(frozen=True)
class LineReader:
    """Kafka's LineMessageReader: lines of bytes -> records (headers, key, value)."""

    parse_key: bool = False
    key_separator: bytes = b"\t"
    parse_headers: bool = False
    headers_delimiter: bytes = b"\t"
    headers_separator: bytes = b","
    headers_key_separator: bytes = b":"
    ignore_error: bool = False
    null_marker: bytes | None = None

    @classmethod
    def from_properties(cls, properties: dict[str, str]) -> LineReader:
        def separator(name: str, default: str) -> bytes:
            text = properties.get(name, default)
            if not text:
                raise ConfigError(f"{name} must not be empty")
            return text.encode()

        null_marker = properties.get("null.marker")
        return cls(
            parse_key=_true(properties.get("parse.key")),
            key_separator=separator("key.separator", "\t"),
            parse_headers=_true(properties.get("parse.headers")),
            headers_delimiter=separator("headers.delimiter", "\t"),
            headers_separator=separator("headers.separator", ","),
            headers_key_separator=separator("headers.key.separator", ":"),
            ignore_error=_true(properties.get("ignore.error")),
            null_marker=null_marker.encode() if null_marker else None,
        )

    def records(self, lines: Iterable[bytes]) -> Iterator[ParsedRecord]:
        for number, raw in enumerate(lines, start=1):
            line = raw[:-1] if raw.endswith(b"\n") else raw
            line = line[:-1] if line.endswith(b"\r") else line
            rest = line
            headers: tuple[Header, ...] = ()
            if self.parse_headers:
                text, found, after = rest.partition(self.headers_delimiter)
                if found:
                    headers, rest = self._headers(text), after
                elif not self.ignore_error:
                    raise ReaderError(
                        f"No headers delimiter found on line number {number}: '{_show(line)}'"
                    )
            key: bytes | None = None
            value: bytes | None = rest
            if self.parse_key:
                before, found, after = rest.partition(self.key_separator)
                if found:
                    key, value = before, after
                elif not self.ignore_error:
                    raise ReaderError(
                        f"No key separator found on line number {number}: '{_show(line)}'"
                    )
            yield ParsedRecord(self._null(key), self._null(value), headers)

    def _headers(self, text: bytes) -> tuple[Header, ...]:
        headers: list[Header] = []
        for item in text.split(self.headers_separator):
            name, found, value = item.partition(self.headers_key_separator)
            if self.null_marker is not None and name == self.null_marker:
                raise ReaderError(
                    f"Header keys should not be equal to the null marker "
                    f"'{self.null_marker.decode()}' as they can't be null"
                )
            headers.append((name.decode(errors="replace"), self._null(value) if found else None))
        return tuple(headers)

    def _null(self, item: bytes | None) -> bytes | None:
        return None if item is not None and item == self.null_marker else item


def _show(line: bytes) -> str:
    return line.decode(errors="replace")


def _true(text: str | None) -> bool:
    return text is not None and text.strip().lower() == "true"


def send_error_line(topic: str, key: bytes | None, value: bytes | None, error: object) -> str:
    def size(item: bytes | None) -> str:
        return "null" if item is None else f"{len(item)} bytes"

    return (
        f"ERROR Error when sending message to topic {topic} with key: {size(key)}, "
        f"value: {size(value)} with error: {error}"
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--bootstrap-server", required=True, metavar="HOST:PORT", help="brokers to connect to"
    )
    parser.add_argument("--topic", required=True, help="topic to produce to")
    parser.add_argument(
        "--acks",
        "--request-required-acks",
        dest="acks",
        choices=["all", "-1", "0", "1"],
        help="acknowledgements the leader waits for (default: all)",
    )
    parser.add_argument("--sync", action="store_true", help="send each record and wait for it")
    numbers = (
        ("--message-send-max-retries", "retries before a record is given up (default: 3)"),
        ("--retry-backoff-ms", "wait before each retry (default: 100)"),
        ("--timeout", "linger.ms: how long a record may wait for its batch (default: 1000)"),
        ("--request-timeout-ms", "how long the leader may take to answer (default: 1500)"),
        ("--batch-size", "batch.size in bytes (default: 16384)"),
    )
    for flag, text in numbers:
        parser.add_argument(flag, type=_non_negative, metavar="N", help=text)
    parser.add_argument(
        "--property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="line reader property: parse.key, key.separator, ignore.error, null.marker",
    )
    parser.add_argument(
        "--producer-property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="producer config by Kafka name (linger.ms, batch.size, ...)",
    )
    parser.add_argument(
        "--producer.config", dest="producer_config", metavar="FILE", help="producer .properties"
    )


class _FirstError:
    """The first failed send; later ones are dropped (one line on stderr). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.line: str | None = None

    def set(self, line: str) -> None:
        with self._lock:
            if self.line is None:
                self.line = line


def execute(
    args: argparse.Namespace, producer: RecordSender, lines: Iterable[bytes], err: TextIO
) -> int:
    try:
        reader = LineReader.from_properties(parse_key_values(args.property))
    except ConfigError as exc:
        print(f"ERROR {exc}", file=err)
        return 1
    topic: str = args.topic
    failed = _FirstError()
    status = 0
    try:
        for record in reader.records(lines):
            if failed.line is not None:
                break
            key, value = record.key, record.value
            future = producer.send(topic, value=value, key=key, headers=record.headers or None)
            if args.sync:
                producer.flush()  # now, not after linger.ms
                future.result()
            else:
                future.add_errback(
                    lambda exc, k=key, v=value: failed.set(send_error_line(topic, k, v, exc))
                )
    except ReaderError as exc:
        print(f"ERROR {exc}", file=err)
        status = 1
    except (KafkaError, TypeError, TimeoutError) as exc:  # raised by send or by a --sync wait
        failed.set(send_error_line(topic, key, value, exc))
    try:
        producer.flush()
    except KafkaError as exc:
        failed.set(f"ERROR {exc}")
    if failed.line is not None:
        print(failed.line, file=err)
        return 1
    return status


def producer_config(args: argparse.Namespace) -> dict[str, str]:
    """The producer's Kafka-named config: --producer.config, then --producer-property, then
    each console option when given, else its default where neither set the key (Kafka's
    maybeMergeOptions)."""
    config = read_properties_file(args.producer_config) if args.producer_config else {}
    config.update(parse_key_values(args.producer_property))
    for option, (key, default) in CONSOLE_DEFAULTS.items():
        given = getattr(args, option)
        if given is not None:
            config[key] = str(given)
        else:
            config.setdefault(key, default)
    config.setdefault("client.id", "console-producer")
    return config


def _non_negative(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if number < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more: {number}")
    return number


def run(args: argparse.Namespace) -> int:
    from minikafka.client.cli._config import client_kwargs
    from minikafka.client.cli._logging import configure_tool_logging
    from minikafka.client.producer.producer import Producer

    configure_tool_logging()

    def warn(message: str) -> None:
        print(f"WARN {message}", file=sys.stderr)

    try:
        kwargs = client_kwargs(Producer, producer_config(args), warn)
        producer = Producer(bootstrap_servers=args.bootstrap_server, **kwargs)
    except (ConfigError, KafkaError) as exc:
        print(f"ERROR {exc}", file=sys.stderr)
        return 1
    stdin: BinaryIO = sys.stdin.buffer
    try:
        return execute(args, producer, stdin, sys.stderr)
    finally:
        producer.close()
