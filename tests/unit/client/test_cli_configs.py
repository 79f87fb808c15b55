"""``minikafka configs`` without a cluster: option rules, --add-config parsing, output lines."""

from __future__ import annotations

import argparse
import io
from collections.abc import Mapping

import pytest

from minikafka.client.admin import ClusterDescription, ConfigEntry, ConfigSynonym
from minikafka.client.cli import configs
from minikafka.proto.common import Node
from minikafka.proto.errors import InvalidConfigError, InvalidRequestError


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    configs.add_arguments(parser)
    return parser.parse_args(["--bootstrap-server", "b:9092", *argv])


def test_add_config_splits_on_commas_outside_brackets() -> None:
    assert configs.parse_add_config("retention.ms=1,cleanup.policy=[compact,delete]") == {
        "retention.ms": "1",
        "cleanup.policy": "compact,delete",
    }
    assert configs.parse_add_config("a=x=y") == {"a": "x=y"}
    with pytest.raises(InvalidConfigError, match="key=val"):
        configs.parse_add_config("retention.ms")
    with pytest.raises(InvalidConfigError, match="brackets"):
        configs.parse_add_config("cleanup.policy=[compact")


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["--describe"], "--entity-type must be specified"),
        (["--entity-type", "topics"], "exactly one action"),
        (["--entity-type", "topics", "--entity-default", "--describe"], "brokers"),
        (["--entity-type", "topics", "--alter", "--add-config", "a=1"], "entity name"),
        (["--entity-type", "topics", "--entity-name", "t", "--alter"], "--add-config"),
        (["--entity-type", "brokers", "--entity-name", "x", "--describe"], "valid integer"),
        (["--entity-type", "topics", "--entity-name", "t", "--describe", "--add-config", "a=1"],
         "only valid with --alter"),
    ],
)  # fmt: skip
def test_options_that_do_not_fit(argv: list[str], problem: str) -> None:
    message = configs.check_args(parse(*argv))
    assert message is not None and problem in message


class FakeAdmin:
    def __init__(self) -> None:
        self.topic: dict[str, ConfigEntry] = {
            "retention.ms": ConfigEntry(
                "retention.ms",
                "1000",
                1,
                False,
                synonyms=(
                    ConfigSynonym("retention.ms", "1000", 1),
                    ConfigSynonym("log.retention.ms", "604800000", 5),
                ),
            ),
            "segment.bytes": ConfigEntry("segment.bytes", "1073741824", 5, True),
        }
        self.altered: list[tuple[object, Mapping[str, str | None]]] = []

    def list_topics(self, *, include_internal: bool = True) -> list[str]:
        return ["t"]

    def describe_cluster(self) -> ClusterDescription:
        return ClusterDescription("c", 0, (Node(0, "h", 1),))

    def describe_topic_configs(self, topic: str) -> dict[str, ConfigEntry]:
        return self.topic

    def describe_broker_configs(self, broker_id: int | None = None) -> dict[str, ConfigEntry]:
        return {}

    def incremental_alter_configs(self, topic: str, operations: Mapping[str, str | None]) -> None:
        if "bad" in operations:
            raise InvalidRequestError("Invalid config value for resource: bad")
        self.altered.append((topic, operations))

    def alter_broker_configs(
        self, broker_id: int | None, operations: Mapping[str, str | None]
    ) -> None:
        self.altered.append((broker_id, operations))


def run(admin: FakeAdmin, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = configs.execute(parse(*argv), admin, out, err)
    return code, out.getvalue(), err.getvalue()


def test_describe_prints_kafkas_lines() -> None:
    code, out, _ = run(FakeAdmin(), "--entity-type", "topics", "--entity-name", "t", "--describe")
    assert code == 0
    assert out.splitlines() == [
        "Dynamic configs for topic t are:",
        "  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000, "
        "DEFAULT_CONFIG:log.retention.ms=604800000}",
    ]
    _, every, _ = run(FakeAdmin(), "--entity-type", "topics", "--describe", "--all")
    assert every.splitlines()[0] == "All configs for topic t are:"
    assert "  segment.bytes=1073741824 sensitive=false synonyms={}" in every.splitlines()


def test_alter_and_its_errors() -> None:
    admin = FakeAdmin()
    code, out, _ = run(
        admin, "--entity-type", "brokers", "--entity-default", "--alter",
        "--add-config", "log.retention.ms=1",
    )  # fmt: skip
    assert (code, out) == (0, "Completed updating default config for brokers in the cluster.\n")
    assert admin.altered == [(None, {"log.retention.ms": "1"})]
    code, _, err = run(
        admin, "--entity-type", "topics", "--entity-name", "t", "--alter", "--add-config", "bad=1"
    )
    assert code == 1
    assert err == "Error while executing config command : Invalid config value for resource: bad\n"
    code, _, err = run(
        admin, "--entity-type", "topics", "--entity-name", "t", "--alter",
        "--delete-config", "segment.bytes",
    )  # fmt: skip
    assert (code, err) == (
        1,
        "Error while executing config command : Invalid config(s): segment.bytes\n",
    )
