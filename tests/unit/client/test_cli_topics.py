"""`minikafka topics`: option rules, Kafka's output shapes, the commands against a fake admin."""

from __future__ import annotations

import argparse
import io
from collections.abc import Iterable, Mapping, Sequence

import pytest

from minikafka.cli import build_parser
from minikafka.client.admin import ConfigEntry, NewTopic, PartitionInfo, TopicDescription
from minikafka.client.cli import topics
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto.errors import ErrorCode, KafkaError, error_for_code


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["topics", "--bootstrap-server", "127.0.0.1:9092", *argv])


def describe(name: str, *partitions: PartitionInfo, topic_id: str = "abc") -> TopicDescription:
    return TopicDescription(name, topic_id, False, partitions)


class FakeAdmin:
    def __init__(self) -> None:
        self.topics: dict[str, TopicDescription] = {}
        self.configs: dict[str, dict[str, ConfigEntry]] = {}
        self.created: list[NewTopic] = []
        self.deleted: list[str] = []
        self.grown: dict[str, int] = {}
        self.errors: dict[str, KafkaError] = {}

    def list_topics(self, *, include_internal: bool = True) -> list[str]:
        return sorted(n for n, d in self.topics.items() if include_internal or not d.is_internal)

    def describe_topics(self, topics: Sequence[str] | None = None) -> dict[str, TopicDescription]:
        return {n: self.topics[n] for n in sorted(topics or self.topics)}

    def describe_topic_configs(self, topic: str) -> dict[str, ConfigEntry]:
        return self.configs.get(topic, {})

    def create_topics(self, new_topics: Iterable[NewTopic]) -> dict[str, KafkaError | None]:
        result: dict[str, KafkaError | None] = {}
        for t in new_topics:
            self.created.append(t)
            if t.name in self.topics:
                result[t.name] = error_for_code(ErrorCode.TOPIC_ALREADY_EXISTS, "exists")
            else:
                result[t.name] = self.errors.get(t.name)
        return result

    def delete_topics(self, names: Iterable[str]) -> dict[str, KafkaError | None]:
        self.deleted.extend(names)
        return {n: self.errors.get(n) for n in names}

    def create_partitions(self, new_counts: Mapping[str, int]) -> dict[str, KafkaError | None]:
        self.grown.update(new_counts)
        return {n: self.errors.get(n) for n in new_counts}


def run(admin: FakeAdmin, *argv: str) -> tuple[int, str, str]:
    args = parse(*argv)
    problem = topics.check_args(args)
    if problem is not None:
        return 1, "", problem
    out, err = io.StringIO(), io.StringIO()
    status = topics.execute(args, admin, out, err)
    return status, out.getvalue(), err.getvalue()


# --- output shapes ------------------------------------------------------------------------------


def test_format_topic_is_kafkas_header_line() -> None:
    description = describe("orders", PartitionInfo(0, 2, 0, (2, 1, 0), (0, 1, 2)))
    configs = {
        "cleanup.policy": ConfigEntry(
            "cleanup.policy", "delete", pb.CONFIG_SOURCE_DEFAULT_CONFIG, True
        ),
        "retention.ms": ConfigEntry(
            "retention.ms", "1000", pb.CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG, False
        ),
        "segment.bytes": ConfigEntry(
            "segment.bytes", "4096", pb.CONFIG_SOURCE_STATIC_BROKER_CONFIG, False
        ),
    }
    assert topics.format_topic(description, configs) == (
        "Topic: orders\tTopicId: abc\tPartitionCount: 1\tReplicationFactor: 3\t"
        "Configs: retention.ms=1000,segment.bytes=4096"
    )


def test_format_topic_without_id_or_configs() -> None:
    description = describe("t", PartitionInfo(0, 1, 0, (1,), (1,)), topic_id="")
    assert topics.format_topic(description, {}) == (
        "Topic: t\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: "
    )


def test_format_partition_is_kafkas_line() -> None:
    assert topics.format_partition("orders", 0, 2, (2, 1, 0), (0, 1, 2)) == (
        "\tTopic: orders\tPartition: 0\tLeader: 2\tReplicas: 2,1,0\tIsr: 0,1,2"
    )
    assert topics.format_partition("orders", 3, -1, (2, 1), ()) == (
        "\tTopic: orders\tPartition: 3\tLeader: none\tReplicas: 2,1\tIsr: "
    )


# --- option rules -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ((), "exactly one action"),
        (("--list", "--describe"), "exactly one action"),
        (("--create",), 'Missing required argument "[topic]"'),
        (("--delete",), 'Missing required argument "[topic]"'),
        (("--alter", "--topic", "t"), 'Missing required argument "[partitions]"'),
        (
            ("--create", "--topic", "t", "--replica-assignment", "0:1", "--partitions", "1"),
            "[replica-assignment] can't be used",
        ),
        (("--describe", "--replication-factor", "2"), "[replication-factor] can only be used"),
        (("--list", "--partitions", "2"), "[partitions] can only be used"),
        (("--describe", "--config", "a=b"), "[config] can only be used"),
        (("--delete", "--topic", "t", "--if-not-exists"), "[if-not-exists] can only be used"),
        (("--create", "--topic", "t", "--if-exists"), "[if-exists] can only be used"),
    ],
)
def test_check_args_refuses_what_kafka_refuses(argv: tuple[str, ...], message: str) -> None:
    problem = topics.check_args(parse(*argv))
    assert problem is not None and message in problem


def test_bootstrap_server_is_required() -> None:
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["topics", "--list"])
    assert exc.value.code == 2


def test_parse_configs_and_replica_assignment() -> None:
    assert topics.parse_configs(["retention.ms=1000", "a=b=c"]) == {
        "retention.ms": "1000",
        "a": "b=c",
    }
    with pytest.raises(KafkaError, match="key=value"):
        topics.parse_configs(["novalue"])
    assert topics.parse_replica_assignment("0:1:2,1:2:0") == {0: [0, 1, 2], 1: [1, 2, 0]}
    with pytest.raises(KafkaError, match="duplicate"):
        topics.parse_replica_assignment("0:0")
    with pytest.raises(KafkaError, match="different replication factor"):
        topics.parse_replica_assignment("0:1,2")


def test_topic_pattern_is_a_whole_name_regex_with_commas() -> None:
    pattern = topics.topic_pattern("orders.*,payments")
    assert pattern.fullmatch("orders-eu")
    assert pattern.fullmatch("payments")
    assert not pattern.fullmatch("payments-eu")


# --- commands -----------------------------------------------------------------------------------


def test_create_sends_the_topic_and_prints_kafkas_line() -> None:
    admin = FakeAdmin()
    status, out, err = run(
        admin,
        "--create", "--topic", "orders", "--partitions", "3", "--replication-factor", "2",
        "--config", "retention.ms=1000",
    )  # fmt: skip
    assert (status, out, err) == (0, "Created topic orders.\n", "")
    assert admin.created == [NewTopic("orders", 3, 2, {}, {"retention.ms": "1000"})]


def test_create_defaults_to_the_broker_settings() -> None:
    admin = FakeAdmin()
    assert run(admin, "--create", "--topic", "t")[0] == 0
    assert admin.created[0].num_partitions == -1
    assert admin.created[0].replication_factor == -1


def test_create_existing_topic_fails_unless_if_not_exists() -> None:
    admin = FakeAdmin()
    admin.topics["orders"] = describe("orders")
    status, _, err = run(admin, "--create", "--topic", "orders")
    assert status == 1
    assert err == "Error while executing topic command : Topic 'orders' already exists.\n"
    assert run(admin, "--create", "--topic", "orders", "--if-not-exists") == (0, "", "")


def test_create_error_from_the_controller_is_one_line() -> None:
    admin = FakeAdmin()
    admin.errors["t"] = error_for_code(
        ErrorCode.INVALID_REPLICATION_FACTOR,
        "Replication factor: 4 larger than available brokers: 3.",
    )
    status, _, err = run(admin, "--create", "--topic", "t", "--replication-factor", "4")
    assert status == 1
    assert err == (
        "Error while executing topic command : "
        "Replication factor: 4 larger than available brokers: 3.\n"
    )


def test_list_prints_names() -> None:
    admin = FakeAdmin()
    admin.topics = {"b": describe("b"), "a": describe("a")}
    assert run(admin, "--list") == (0, "a\nb\n", "")


def test_describe_prints_topics_and_partitions() -> None:
    admin = FakeAdmin()
    admin.topics["orders"] = describe(
        "orders",
        PartitionInfo(0, 2, 1, (2, 1, 0), (2, 1, 0)),
        PartitionInfo(1, -1, 1, (0, 2, 1), ()),
    )
    status, out, _ = run(admin, "--describe", "--topic", "orders")
    assert status == 0
    assert out.splitlines() == [
        "Topic: orders\tTopicId: abc\tPartitionCount: 2\tReplicationFactor: 3\tConfigs: ",
        "\tTopic: orders\tPartition: 0\tLeader: 2\tReplicas: 2,1,0\tIsr: 2,1,0",
        "\tTopic: orders\tPartition: 1\tLeader: none\tReplicas: 0,2,1\tIsr: ",
    ]
    _, out, _ = run(admin, "--describe", "--unavailable-partitions")
    assert out.splitlines() == [
        "\tTopic: orders\tPartition: 1\tLeader: none\tReplicas: 0,2,1\tIsr: "
    ]


def test_describe_topics_with_overrides_prints_only_their_header() -> None:
    admin = FakeAdmin()
    admin.topics = {n: describe(n, PartitionInfo(0, 1, 0, (1,), (1,))) for n in ("a", "b")}
    admin.configs["b"] = {
        "retention.ms": ConfigEntry(
            "retention.ms", "5", pb.CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG, False
        )
    }
    status, out, _ = run(admin, "--describe", "--topics-with-overrides")
    assert (status, out.splitlines()) == (
        0,
        [
            "Topic: b\tTopicId: abc\tPartitionCount: 1\tReplicationFactor: 1\t"
            "Configs: retention.ms=5"
        ],
    )
    problem = topics.check_args(
        parse("--describe", "--topics-with-overrides", "--unavailable-partitions")
    )
    assert problem is not None and "cannot be used together" in problem


def test_describe_missing_topic() -> None:
    admin = FakeAdmin()
    status, out, err = run(admin, "--describe", "--topic", "nope")
    assert (status, out) == (1, "")
    assert err == "Error while executing topic command : Topic 'nope' does not exist as expected\n"
    assert run(admin, "--describe", "--topic", "nope", "--if-exists") == (0, "", "")


def test_alter_and_delete_act_on_matching_topics() -> None:
    admin = FakeAdmin()
    admin.topics = {n: describe(n) for n in ("orders-1", "orders-2", "other")}
    assert run(admin, "--alter", "--topic", "orders-.*", "--partitions", "4")[0] == 0
    assert admin.grown == {"orders-1": 4, "orders-2": 4}
    assert run(admin, "--delete", "--topic", "other")[0] == 0
    assert admin.deleted == ["other"]


def test_delete_error_is_reported() -> None:
    admin = FakeAdmin()
    admin.topics["t"] = describe("t")
    admin.errors["t"] = error_for_code(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "Topic t is gone.")
    status, _, err = run(admin, "--delete", "--topic", "t")
    assert status == 1
    assert err == "Error while executing topic command : Topic t is gone.\n"
