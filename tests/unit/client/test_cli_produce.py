"""`minikafka produce`: the line reader, Kafka's error lines, config mapping, against fakes."""

from __future__ import annotations

import argparse
import io
from collections.abc import Callable
from typing import Any

import pytest

from minikafka.cli import build_parser
from minikafka.client.cli import produce
from minikafka.client.cli._config import (
    ConfigError,
    client_kwargs,
    parse_key_values,
    read_properties_file,
)
from minikafka.client.cli.produce import LineReader, ParsedRecord, ReaderError, send_error_line
from minikafka.client.producer.future import FutureRecordMetadata, ProduceRequestResult
from minikafka.client.producer.producer import Producer
from minikafka.proto.errors import ErrorCode, error_for_code


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(
        ["produce", "--bootstrap-server", "127.0.0.1:9092", "--topic", "t", *argv]
    )


class FakeProducer:
    """Records what was sent; ``fail_at`` makes that send's future fail."""

    def __init__(self, fail_at: int | None = None, raise_at: int | None = None) -> None:
        self.sent: list[tuple[str, bytes | None, bytes | None]] = []
        self.headers: list[Any] = []
        self.fail_at = fail_at
        self.raise_at = raise_at
        self.flushed = 0

    def send(
        self,
        topic: str,
        value: bytes | None = None,
        key: bytes | None = None,
        *,
        headers: Any = None,
    ) -> FutureRecordMetadata:
        if self.raise_at == len(self.sent):
            raise error_for_code(ErrorCode.MESSAGE_TOO_LARGE, "the record is too large")
        result = ProduceRequestResult()
        error = (
            error_for_code(ErrorCode.NOT_ENOUGH_REPLICAS, "isr too small")
            if self.fail_at == len(self.sent)
            else None
        )
        self.sent.append((topic, key, value))
        self.headers.append(headers)
        result.set(len(self.sent) - 1, -1, error)
        return FutureRecordMetadata(result, 0, topic, 0, 0)

    def flush(self, timeout: float | None = None) -> None:
        self.flushed += 1


def run(producer: FakeProducer, stdin: bytes, *argv: str) -> tuple[int, str]:
    err = io.StringIO()
    status = produce.execute(parse(*argv), producer, io.BytesIO(stdin), err)
    return status, err.getvalue()


def keys_values(reader: LineReader, lines: list[bytes]) -> list[tuple[bytes | None, ...]]:
    return [(r.key, r.value) for r in reader.records(lines)]


def test_lines_become_values_without_their_line_ends() -> None:
    reader = LineReader()
    assert keys_values(reader, [b"a\n", b"b\r\n", b"", b"last"]) == [
        (None, b"a"),
        (None, b"b"),
        (None, b""),
        (None, b"last"),
    ]


def test_parse_key_splits_at_the_first_separator() -> None:
    reader = LineReader.from_properties({"parse.key": "true", "key.separator": ":"})
    assert keys_values(reader, [b"k1:v:1\n", b":v2\n", b"k3:\n"]) == [
        (b"k1", b"v:1"),
        (b"", b"v2"),
        (b"k3", b""),
    ]
    tab = LineReader.from_properties({"parse.key": "TRUE"})
    assert keys_values(tab, [b"k\tv\n"]) == [(b"k", b"v")]


def test_a_line_without_the_separator_is_kafkas_error_unless_ignored() -> None:
    reader = LineReader.from_properties({"parse.key": "true", "key.separator": ":"})
    with pytest.raises(ReaderError, match="No key separator found on line number 2: 'plain'"):
        list(reader.records([b"a:1\n", b"plain\n"]))
    lenient = LineReader.from_properties(
        {"parse.key": "true", "key.separator": ":", "ignore.error": "true"}
    )
    assert keys_values(lenient, [b"plain\n"]) == [(None, b"plain")]


def test_null_marker_sends_null() -> None:
    reader = LineReader.from_properties(
        {"parse.key": "true", "key.separator": ":", "null.marker": "<null>"}
    )
    assert keys_values(reader, [b"<null>:v\n", b"k:<null>\n"]) == [(None, b"v"), (b"k", None)]


def test_parse_headers_before_key_and_value() -> None:
    reader = LineReader.from_properties(
        {"parse.headers": "true", "parse.key": "true", "null.marker": "NULL"}
    )
    assert list(reader.records([b"h1:v1,h2:NULL,h3\tk\tvalue\n"])) == [
        ParsedRecord(b"k", b"value", (("h1", b"v1"), ("h2", None), ("h3", None)))
    ]
    with pytest.raises(ReaderError, match="No headers delimiter found on line number 1"):
        list(reader.records([b"no-delimiter\n"]))
    with pytest.raises(ReaderError, match="Header keys should not be equal to the null marker"):
        list(reader.records([b"NULL:x\tk\tv\n"]))
    custom = LineReader.from_properties(
        {
            "parse.headers": "true",
            "headers.delimiter": "|",
            "headers.separator": ";",
            "headers.key.separator": "=",
        }
    )
    assert list(custom.records([b"a=1;b=2|payload\n"])) == [
        ParsedRecord(None, b"payload", (("a", b"1"), ("b", b"2")))
    ]


def test_execute_sends_each_line_and_flushes() -> None:
    producer = FakeProducer()
    status, err = run(
        producer, b"a:1\nb:2\n", "--property", "parse.key=true", "--property", "key.separator=:"
    )
    assert (status, err) == (0, "")
    assert producer.sent == [("t", b"a", b"1"), ("t", b"b", b"2")]
    assert producer.headers == [None, None]
    assert producer.flushed == 1
    with_headers = FakeProducer()
    run(with_headers, b"h:1\tv\n", "--property", "parse.headers=true")
    assert with_headers.sent == [("t", None, b"v")]
    assert with_headers.headers == [(("h", b"1"),)]


def test_a_failed_send_prints_one_kafka_line_and_exits_1() -> None:
    producer = FakeProducer(fail_at=1)
    status, err = run(producer, b"one\ntwo\nthree\nfour\n")
    assert status == 1
    assert err == (
        "ERROR Error when sending message to topic t with key: null, value: 3 bytes with "
        "error: NOT_ENOUGH_REPLICAS (19): isr too small\n"
    )
    assert len(producer.sent) == 2  # stops reading after the failure


def test_a_send_that_raises_is_reported_the_same_way() -> None:
    status, err = run(FakeProducer(raise_at=0), b"big\n", "--sync")
    assert status == 1
    assert err.startswith("ERROR Error when sending message to topic t with key: null, value: 3")
    assert "MESSAGE_TOO_LARGE" in err


def test_reader_error_is_one_line() -> None:
    status, err = run(FakeProducer(), b"nokey\n", "--property", "parse.key=true")
    assert (status, err) == (1, "ERROR No key separator found on line number 1: 'nokey'\n")


def test_bad_property_is_one_line() -> None:
    status, err = run(FakeProducer(), b"x\n", "--property", "parse.key")
    assert status == 1
    assert err.startswith("ERROR Invalid property: 'parse.key'")


def test_send_error_line_shapes() -> None:
    assert send_error_line("t", b"ab", None, "boom") == (
        "ERROR Error when sending message to topic t with key: 2 bytes, value: null with error: "
        "boom"
    )


def test_acks_choices_and_default() -> None:
    assert parse().acks is None
    assert parse("--acks", "1").acks == "1"
    with pytest.raises(SystemExit):
        parse("--acks", "2")


def test_producer_config_maps_kafka_names_to_producer_kwargs(tmp_path: Any) -> None:
    config_file = tmp_path / "producer.properties"
    config_file.write_text("# comment\nlinger.ms=50\n\nbatch.size=1024\n")
    args = parse(
        "--acks",
        "0",
        "--producer.config",
        str(config_file),
        "--producer-property",
        "linger.ms=7",
        "--producer-property",
        "enable.idempotence=false",
        "--producer-property",
        "compression.type=gzip",
        "--producer-property",
        "no.such.thing=1",
    )
    warnings: list[str] = []
    kwargs = client_kwargs(Producer, produce.producer_config(args), warnings.append)
    assert kwargs == {
        "linger_ms": 7,
        "batch_size": 1024,
        "enable_idempotence": False,
        "compression_type": "gzip",
        "acks": "0",
        # the console producer's own defaults, for the keys nobody set
        "retries": 3,
        "retry_backoff_ms": 100,
        "request_timeout_ms": 1500,
        "client_id": "console-producer",
    }
    # --acks wins over a producer property only when given, as in Kafka
    assert produce.producer_config(parse("--producer-property", "acks=1"))["acks"] == "1"
    assert produce.producer_config(parse())["acks"] == "all"
    assert warnings == ["The configuration 'no.such.thing' was supplied but isn't a known config."]


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"linger.ms": "soon"}, "Invalid value soon for configuration linger.ms"),
        ({"enable.idempotence": "yes"}, "Invalid value yes for configuration enable.idempotence"),
    ],
)
def test_bad_config_values(config: dict[str, str], message: str) -> None:
    ignore: Callable[[str], None] = lambda _: None  # noqa: E731
    with pytest.raises(ConfigError, match=message):
        client_kwargs(Producer, config, ignore)


def test_key_values_and_properties_files(tmp_path: Any) -> None:
    assert parse_key_values(["a=1", "b=x=y", "c="]) == {"a": "1", "b": "x=y", "c": ""}
    with pytest.raises(ConfigError):
        parse_key_values(["=1"])
    with pytest.raises(ConfigError, match="cannot read"):
        read_properties_file(str(tmp_path / "missing.properties"))


def test_the_console_producers_defaults_are_kafkas_not_the_librarys() -> None:
    # kafka-console-producer.sh gives up after 3 retries, where a producer's defaults retry
    # for delivery.timeout.ms (two minutes).
    assert produce.producer_config(parse()) == {
        "acks": "all",
        "retries": "3",
        "retry.backoff.ms": "100",
        "linger.ms": "1000",
        "request.timeout.ms": "1500",
        "batch.size": "16384",
        "client.id": "console-producer",
    }
    given = parse(
        "--request-required-acks",
        "1",
        "--message-send-max-retries",
        "0",
        "--retry-backoff-ms",
        "5",
        "--timeout",
        "0",
        "--request-timeout-ms",
        "900",
        "--batch-size",
        "100",
        "--producer-property",
        "retries=7",
        "--producer-property",
        "client.id=mine",
    )
    assert produce.producer_config(given) == {
        "acks": "1",
        "retries": "0",  # the option wins over the property
        "retry.backoff.ms": "5",
        "linger.ms": "0",
        "request.timeout.ms": "900",
        "batch.size": "100",
        "client.id": "mine",
    }
    # a property wins over an option's default
    assert produce.producer_config(parse("--producer-property", "retries=7"))["retries"] == "7"
    with pytest.raises(SystemExit):
        parse("--message-send-max-retries", "-1")


def test_sync_sends_each_record_at_once() -> None:
    producer = FakeProducer()
    status, _ = run(producer, b"a\nb\n", "--sync")
    assert status == 0 and producer.flushed == 3  # one per record (not after linger.ms), one at EOF
