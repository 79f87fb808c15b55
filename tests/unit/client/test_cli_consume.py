"""`minikafka consume`: option rules, Kafka's DefaultMessageFormatter lines, the poll loop."""

from __future__ import annotations

import argparse
import io
import time
from typing import Any

import pytest

from minikafka.cli import build_parser
from minikafka.client.cli import consume
from minikafka.client.cli.consume import MessageFormatter, UsageError, check_args
from minikafka.client.consumer.fetcher import ConsumerRecord
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode, error_for_code


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["consume", "--bootstrap-server", "127.0.0.1:9092", *argv])


def record(
    offset: int,
    value: bytes | None = b"v",
    key: bytes | None = None,
    partition: int = 0,
    headers: list[tuple[str, bytes | None]] | None = None,
    timestamp_type: int = 0,
) -> ConsumerRecord:
    return ConsumerRecord("t", partition, offset, 1700, timestamp_type, key, value, headers or [])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ((), "Exactly one of --include/--topic is required."),
        (("--topic", "t", "--include", "t.*"), "Exactly one of --include/--topic is required."),
        (("--include", "t", "--partition", "0"), "The topic is required when partition is"),
        (("--topic", "t", "--offset", "3"), "The partition is required when offset is specified."),
        (
            ("--topic", "t", "--partition", "0", "--offset", "3", "--from-beginning"),
            "Options from-beginning and offset cannot be specified together.",
        ),
        (
            ("--topic", "t", "--group", "g", "--partition", "0"),
            "Options group and partition cannot be specified together.",
        ),
        (("--topic", "t", "--max-messages", "0"), "--max-messages must be positive."),
    ],
)
def test_option_rules(argv: tuple[str, ...], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        check_args(parse(*argv))


def test_offset_values() -> None:
    assert parse("--topic", "t", "--partition", "0", "--offset", "earliest").offset == "earliest"
    assert parse("--topic", "t", "--partition", "0", "--offset", "12").offset == 12
    for bad in ("-1", "soon"):
        with pytest.raises(SystemExit):
            parse("--topic", "t", "--partition", "0", "--offset", bad)


def test_value_only_by_default() -> None:
    formatter = MessageFormatter.from_properties({})
    assert formatter.format(record(0, b"hello")) == b"hello\n"
    assert formatter.format(record(0, None)) == b"null\n"


def test_every_field_in_kafkas_order() -> None:
    formatter = MessageFormatter.from_properties(
        {
            "print.timestamp": "true",
            "print.partition": "true",
            "print.offset": "true",
            "print.headers": "true",
            "print.key": "true",
        }
    )
    line = formatter.format(record(7, b"v", key=b"k", partition=2, headers=[("h", b"1")]))
    assert line == b"CreateTime:1700\tPartition:2\tOffset:7\th:1\tk\tv\n"
    no_headers = formatter.format(record(8, b"v", key=None, timestamp_type=1))
    assert no_headers == b"LogAppendTime:1700\tPartition:0\tOffset:8\tNO_HEADERS\tnull\tv\n"
    assert formatter.format(record(9, timestamp_type=-1)).startswith(b"NO_TIMESTAMP\t")


def test_separators_and_null_literal() -> None:
    formatter = MessageFormatter.from_properties(
        {
            "print.key": "true",
            "key.separator": " => ",
            "line.separator": "\\n--\\n",
            "null.literal": "<none>",
            "print.headers": "true",
            "headers.separator": ";",
            "headers.key.separator": "=",
        }
    )
    line = formatter.format(record(0, b"v", headers=[("a", b"1"), ("b", None)]))
    assert line == b"a=1;b=<none> => <none> => v\n--\n"


def test_print_value_false_ends_the_line_after_the_last_field() -> None:
    formatter = MessageFormatter.from_properties({"print.key": "true", "print.value": "false"})
    assert formatter.format(record(0, b"v", key=b"k")) == b"k\n"


class FakeConsumer:
    """Hands out the queued batches, one per poll; empty polls advance a fake clock."""

    def __init__(self, batches: list[list[ConsumerRecord]], clock: list[float]) -> None:
        self.batches = batches
        self.clock = clock
        self.calls: list[tuple[str, Any]] = []
        self.metadata_timeouts: list[int | None] = []
        self.closed = False

    def poll(self, timeout_ms: int = 0, max_records: int | None = None) -> dict[Any, Any]:
        if not self.batches:
            self.clock[0] += timeout_ms / 1000
            return {}
        batch = self.batches.pop(0)
        if max_records is not None:
            batch = batch[:max_records]
        return {TopicPartition("t", 0): batch} if batch else {}

    def partitions_for_topic(self, topic: str, timeout_ms: int | None = None) -> set[int]:
        self.metadata_timeouts.append(timeout_ms)
        if topic == "missing":
            raise error_for_code(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "no such topic")
        return {0, 1}

    def topics(self) -> set[str]:
        return {"t", "t2", "other"}

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.calls.append(("assign", partitions))

    def subscribe(self, topics: Any = (), pattern: str | None = None) -> None:
        self.calls.append(("subscribe", pattern or list(topics)))

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.calls.append(("seek", (tp, offset)))

    def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        self.calls.append(("seek_to_beginning", partitions))

    def seek_to_end(self, *partitions: TopicPartition) -> None:
        self.calls.append(("seek_to_end", partitions))

    def close(self) -> None:
        self.closed = True


def test_consume_stops_at_max_messages() -> None:
    clock = [0.0]
    source = FakeConsumer([[record(0), record(1)], [record(2), record(3)]], clock)
    out = io.BytesIO()
    count = consume.consume(
        source, MessageFormatter(), out, max_messages=3, timeout_ms=None, clock=lambda: clock[0]
    )
    assert count == 3
    assert out.getvalue() == b"v\nv\nv\n"


def test_consume_stops_after_timeout_without_records() -> None:
    clock = [0.0]
    source = FakeConsumer([[record(0)]], clock)
    out = io.BytesIO()
    count = consume.consume(
        source, MessageFormatter(), out, max_messages=None, timeout_ms=2500, clock=lambda: clock[0]
    )
    assert count == 1
    assert 2.5 <= clock[0] < 3.5


def run(consumer: FakeConsumer, *argv: str) -> tuple[int, bytes, str, dict[str, str]]:
    out, err = io.BytesIO(), io.StringIO()
    configs: dict[str, str] = {}

    def make(config: dict[str, str]) -> FakeConsumer:
        configs.update(config)
        return consumer

    status = consume.execute(parse(*argv), make, out, err)
    return status, out.getvalue(), err.getvalue(), configs


def test_execute_assigns_every_partition_and_reports_the_count() -> None:
    consumer = FakeConsumer([[record(0, b"a"), record(1, b"b")]], [0.0])
    status, out, err, config = run(
        consumer, "--topic", "t", "--from-beginning", "--max-messages", "2"
    )
    assert (status, out, err) == (0, b"a\nb\n", "Processed a total of 2 messages\n")
    assert config["auto.offset.reset"] == "earliest"
    assert "group.id" not in config
    assert consumer.calls == [("assign", [TopicPartition("t", 0), TopicPartition("t", 1)])]
    assert consumer.closed


def test_execute_one_partition_from_an_offset() -> None:
    consumer = FakeConsumer([[record(5)]], [0.0])
    status, _, _, config = run(
        consumer, "--topic", "t", "--partition", "1", "--offset", "5", "--max-messages", "1"
    )
    assert status == 0
    assert config["auto.offset.reset"] == "latest"
    tp = TopicPartition("t", 1)
    assert consumer.calls == [("assign", [tp]), ("seek", (tp, 5))]


def test_execute_include_pattern_assigns_matching_topics() -> None:
    consumer = FakeConsumer([[record(0)]], [0.0])
    run(consumer, "--include", "t.*", "--max-messages", "1")
    assert consumer.calls[0] == (
        "assign",
        [TopicPartition(t, p) for t in ("t", "t2") for p in (0, 1)],
    )


def test_execute_with_a_group_subscribes() -> None:
    consumer = FakeConsumer([[record(0)]], [0.0])
    status, _, _, config = run(consumer, "--topic", "t", "--group", "g", "--max-messages", "1")
    assert status == 0
    assert config["group.id"] == "g"
    assert consumer.calls == [("subscribe", ["t"])]


def test_timeout_ms_bounds_the_wait_for_the_topic_metadata() -> None:
    consumer = FakeConsumer([], [0.0])
    run(consumer, "--topic", "t", "--timeout-ms", "3000")
    assert consumer.metadata_timeouts == [3000]
    consumer = FakeConsumer([[record(0)]], [0.0])
    run(consumer, "--topic", "t", "--max-messages", "1")
    assert consumer.metadata_timeouts == [None]  # the consumer's own default


class LateTopicConsumer(FakeConsumer):
    """Lists its topic only from the third metadata answer on (created a moment ago)."""

    def __init__(self) -> None:
        super().__init__([[record(0)]], [0.0])
        self.listed = 0

    def topics(self) -> set[str]:
        self.listed += 1
        return {"t"} if self.listed >= 3 else set()


@pytest.mark.parametrize("group", [(), ("--group", "g")])
def test_a_missing_topic_ends_the_tool_at_once(
    monkeypatch: pytest.MonkeyPatch, group: tuple[str, ...]
) -> None:
    monkeypatch.setattr(consume, "_UNKNOWN_TOPIC_GRACE_S", 0.3)
    monkeypatch.setattr(consume, "_UNKNOWN_TOPIC_BACKOFF_S", 0.05)
    consumer = FakeConsumer([], [0.0])
    start = time.monotonic()
    status, _out, err, _ = run(consumer, "--topic", "missing", *group)
    assert time.monotonic() - start < 2
    assert status == 1
    assert err.splitlines() == [
        "ERROR Error processing message, terminating consumer process: "
        "UNKNOWN_TOPIC_OR_PARTITION (3): Topic missing does not exist",
        "Processed a total of 0 messages",
    ]
    assert consumer.calls == []  # neither assigned nor subscribed


def test_a_topic_created_a_moment_ago_is_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(consume, "_UNKNOWN_TOPIC_BACKOFF_S", 0.01)
    consumer = LateTopicConsumer()
    status, out, _, _ = run(consumer, "--topic", "t", "--max-messages", "1")
    assert (status, out, consumer.listed) == (0, b"v\n", 3)


def test_execute_errors_are_one_line_and_exit_1() -> None:
    status, _, err, _ = run(FakeConsumer([], [0.0]), "--topic", "t", "--partition", "9")
    assert status == 1
    assert "partition 9 of topic t does not exist" in err
    status, _, err, _ = run(FakeConsumer([], [0.0]), "--partition", "0")
    assert (status, err) == (1, "Exactly one of --include/--topic is required.\n")


class PoisonedConsumer(FakeConsumer):
    """Its queued batches, then the error a batch that does not decode gives on every poll."""

    def poll(self, timeout_ms: int = 0, max_records: int | None = None) -> dict[Any, Any]:
        if self.batches:
            return super().poll(timeout_ms, max_records)
        raise error_for_code(
            ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, "cannot read t-0 at offset 2: codec 5"
        )


def test_a_batch_that_does_not_decode_ends_the_tool_with_one_line_and_the_count() -> None:
    consumer = PoisonedConsumer([[record(0, b"a"), record(1, b"b")]], [0.0])
    status, out, err, _ = run(consumer, "--topic", "t", "--from-beginning")
    assert (status, out) == (1, b"a\nb\n")
    assert err == (
        "ERROR Error processing message, terminating consumer process: "
        "UNSUPPORTED_COMPRESSION_TYPE (76): cannot read t-0 at offset 2: codec 5\n"
        "Processed a total of 2 messages\n"
    )
    assert consumer.closed
