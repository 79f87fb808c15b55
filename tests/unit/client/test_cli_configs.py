"""``minikafka configs`` without a cluster: option rules, --add-config parsing, output lines."""

from __future__ import annotations

import argparse
import io
from collections.abc import Iterable, Mapping, Sequence

import pytest

from minikafka.client.admin import (
    ClientQuotaAlteration,
    ClientQuotaEntity,
    ClientQuotaFilterComponent,
    ClusterDescription,
    ConfigEntry,
    ConfigSynonym,
    ScramCredentialInfo,
    UserScramCredentialDeletion,
    UserScramCredentialsDescription,
    UserScramCredentialUpsertion,
)
from minikafka.client.cli import configs
from minikafka.proto.common import Node
from minikafka.proto.errors import (
    ErrorCode,
    InvalidConfigError,
    InvalidRequestError,
    KafkaError,
    error_for_code,
)


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
        (["--entity-type", "topics", "--entity-default", "--describe"], "not valid"),
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

    def describe_user_scram_credentials(
        self, users: Sequence[str] | None = None
    ) -> dict[str, UserScramCredentialsDescription | KafkaError]:
        known: dict[str, UserScramCredentialsDescription | KafkaError] = {
            "alice": UserScramCredentialsDescription(
                "alice",
                (
                    ScramCredentialInfo("SCRAM-SHA-256", 8192),
                    ScramCredentialInfo("SCRAM-SHA-512", 4096),
                ),
            )
        }
        if users is None:
            return known
        return {
            u: known.get(u)
            or error_for_code(ErrorCode.RESOURCE_NOT_FOUND, "Attempt to describe a user "
                              "credential that does not exist")
            for u in users
        }  # fmt: skip

    def alter_user_scram_credentials(
        self, alterations: Iterable[UserScramCredentialUpsertion | UserScramCredentialDeletion]
    ) -> dict[str, KafkaError | None]:
        self.altered.append(("users", {"alterations": repr(list(alterations))}))
        return {"alice": None}

    quotas: dict[ClientQuotaEntity, dict[str, float]]

    def describe_client_quotas(
        self, components: Sequence[ClientQuotaFilterComponent] = (), *, strict: bool = False
    ) -> dict[ClientQuotaEntity, dict[str, float]]:
        self.described = (list(components), strict)
        return getattr(self, "quotas", {})

    def alter_client_quotas(
        self, alterations: Iterable[ClientQuotaAlteration]
    ) -> dict[ClientQuotaEntity, KafkaError | None]:
        made = list(alterations)
        self.altered.append(("quotas", {"alterations": repr(made)}))
        return {a.entity: None for a in made}


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


def test_scram_credentials_parse_as_kafka_configs_writes_them() -> None:
    given = configs.parse_add_config(
        "SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=a=b]"
    )
    assert configs.parse_scram_credentials(given) == {
        "SCRAM-SHA-256": (8192, "alice-secret"),
        "SCRAM-SHA-512": (4096, "a=b"),  # iterations: Kafka's default
    }


@pytest.mark.parametrize(
    ("add_config", "problem"),
    [
        ("SCRAM-SHA-256=[iterations=8192]", "a password must be given"),
        ("SCRAM-SHA-256=[iterations=many,password=p]", "iterations must be a number"),
        ("SCRAM-SHA-1=[password=p]", "only SCRAM-SHA-256, SCRAM-SHA-512"),
        ("SCRAM-SHA-256=[salt=x,password=p]", "expected SCRAM-SHA-256=[iterations="),
        ("consumer_byte_rate=lots", "a number is expected"),
    ],
)
def test_bad_scram_credentials_are_one_line_and_exit_1(add_config: str, problem: str) -> None:
    admin = FakeAdmin()
    code, out, err = run(
        admin, "--entity-type", "users", "--entity-name", "alice", "--alter",
        "--add-config", add_config,
    )  # fmt: skip
    assert (code, out) == (1, "")
    assert err.startswith("Error while executing config command : ")
    assert problem in err and err.count("\n") == 1
    assert "secret" not in err
    assert admin.altered == []


def test_users_alter_and_describe_print_kafkas_lines() -> None:
    admin = FakeAdmin()
    code, out, _ = run(
        admin, "--entity-type", "users", "--entity-name", "alice", "--alter",
        "--add-config", "SCRAM-SHA-256=[iterations=8192,password=alice-secret]",
        "--delete-config", "SCRAM-SHA-512",
    )  # fmt: skip
    assert (code, out) == (0, "Completed updating config for user alice.\n")
    [(_, made)] = admin.altered
    assert (
        "UserScramCredentialUpsertion(user='alice', mechanism='SCRAM-SHA-256', iterations=8192"
        in str(made)
    )
    assert "UserScramCredentialDeletion(user='alice', mechanism='SCRAM-SHA-512')" in str(made)
    assert "alice-secret" not in str(made)  # the password is kept out of the repr

    code, out, _ = run(admin, "--entity-type", "users", "--describe")
    assert (code, out) == (
        0,
        "SCRAM credential configs for user-principal 'alice' are "
        "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096\n",
    )
    code, out, _ = run(admin, "--entity-type", "users", "--entity-name", "bob", "--describe")
    assert code == 0
    assert out.startswith(
        "Error retrieving SCRAM credential configs for user-principal 'bob': "
        "ResourceNotFoundError: "
    )


def test_users_alter_needs_a_name_or_the_default() -> None:
    message = configs.check_args(
        parse("--entity-type", "users", "--alter", "--add-config", "SCRAM-SHA-256=[password=p]")
    )
    assert message is not None and "--entity-name or --entity-default" in message
    assert configs.check_args(parse("--entity-type", "topics", "--entity-default", "--describe"))


def test_quota_entities_pair_types_and_names_as_kafka_configs() -> None:
    args = parse(
        "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients",
        "--entity-default", "--alter", "--add-config", "producer_byte_rate=1048576",
    )  # fmt: skip
    assert configs.check_args(args) is None
    assert configs.entities(args) == [("users", "alice"), ("clients", None)]
    assert (args.entity_type, args.entity_name) == ("users", "alice")
    message = configs.check_args(
        parse("--entity-type", "clients", "--entity-type", "users", "--describe")
    )
    assert message is not None and "Only one entity type" in message


def test_client_quotas_alter_and_describe_print_kafkas_lines() -> None:
    admin = FakeAdmin()
    code, out, err = run(
        admin, "--entity-type", "clients", "--entity-name", "app", "--alter",
        "--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2048",
        "--delete-config", "request_percentage",
    )  # fmt: skip
    assert (code, out, err) == (0, "Completed updating config for client app.\n", "")
    [(_, made)] = admin.altered
    assert made["alterations"] == repr(
        [
            ClientQuotaAlteration(
                ClientQuotaEntity((("client-id", "app"),)),
                {
                    "producer_byte_rate": 1048576.0,
                    "consumer_byte_rate": 2048.0,
                    "request_percentage": None,
                },
            )
        ]
    )
    admin.quotas = {
        ClientQuotaEntity((("user", "alice"),)): {"producer_byte_rate": 1048576.0},
        ClientQuotaEntity((("user", "alice"), ("client-id", None))): {"request_percentage": 50.0},
        ClientQuotaEntity((("user", None),)): {"consumer_byte_rate": 2048.0},
    }
    code, out, _ = run(admin, "--entity-type", "users", "--entity-name", "alice", "--describe")
    assert code == 0
    assert out.splitlines()[:3] == [
        "Quota configs for user-principal 'alice' are producer_byte_rate=1048576.0",
        "Quota configs for user-principal 'alice', the default client-id are "
        "request_percentage=50.0",
        "Quota configs for the default user-principal are consumer_byte_rate=2048.0",
    ]
    assert admin.described == ([ClientQuotaFilterComponent.exact("user", "alice")], True)
    # SCRAM credentials still print after the quotas, for users.
    assert out.splitlines()[3].startswith("SCRAM credential configs for user-principal 'alice'")


def test_users_mix_quotas_and_scram_credentials() -> None:
    admin = FakeAdmin()
    code, out, _ = run(
        admin, "--entity-type", "users", "--entity-name", "alice", "--alter",
        "--add-config", "producer_byte_rate=1024,SCRAM-SHA-256=[password=alice-secret]",
    )  # fmt: skip
    assert (code, out) == (0, "Completed updating config for user alice.\n")
    assert [what for what, _ in admin.altered] == ["quotas", "users"]


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["--entity-type", "clients", "--entity-name", "app", "--alter", "--add-config",
          "retention.ms=1"], "Invalid config retention.ms for clients"),
        (["--entity-type", "clients", "--entity-default", "--alter", "--add-config",
          "producer_byte_rate=fast"], "a number is expected"),
    ],
)  # fmt: skip
def test_bad_quota_configs_are_one_line(argv: list[str], problem: str) -> None:
    admin = FakeAdmin()
    code, out, err = run(admin, *argv)
    assert (code, out) == (1, "")
    assert problem in err and err.count("\n") == 1
    assert admin.altered == []
