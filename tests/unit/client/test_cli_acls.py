"""``minikafka acls`` without a cluster: option rules, the bindings they ask for, kafka-acls.sh's
output, with an in-memory admin that filters as a broker does."""

from __future__ import annotations

import argparse
import io
from collections.abc import Sequence

import pytest

from minikafka.client.cli import acls
from minikafka.proto.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from minikafka.proto.errors import ErrorCode, KafkaError, error_for_code

Op = AclOperation
ALLOW = AclPermissionType.ALLOW
DENY = AclPermissionType.DENY


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    acls.add_arguments(parser)
    return parser.parse_args(["--bootstrap-server", "b:9092", *argv])


def command(*argv: str) -> acls.AclsCommand:
    return acls.parse_command(parse(*argv))


def bindings_of(cmd: acls.AclsCommand) -> set[tuple[str, str, str, str, str, str]]:
    return {
        (
            r.resource_type.name,
            r.name or "",
            r.pattern_type.name,
            e.principal,
            e.operation.name,
            e.permission_type.name,
        )
        for r, entries in cmd.entries
        for e in entries
    }


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        ([], "exactly one action"),
        (["--add", "--list"], "exactly one action"),
        (["--add", "--topic", "t"], "--allow-principal, --deny-principal"),
        (["--add", "--allow-principal", "User:a"], "at least one resource"),
        (["--add", "--allow-principal", "alice", "--topic", "t"], "Invalid principal 'alice'"),
        (["--add", "--allow-principal", "User:a", "--topic", "t", "--operation", "Fly"],
         "Invalid operation 'Fly'"),
        (["--add", "--allow-principal", "User:a", "--group", "g", "--operation", "Write"],
         "ResourceType Group only supports operations Delete, Describe, Read, All"),
        (["--add", "--allow-principal", "User:a", "--topic", "t",
          "--resource-pattern-type", "match"], "'match' is not valid when adding acls"),
        (["--add", "--allow-principal", "User:a", "--consumer", "--topic", "t"],
         "With --consumer you must specify a --group"),
        (["--add", "--allow-principal", "User:a", "--producer", "--topic", "t",
          "--operation", "Read"], "cannot be used with --operation"),
        (["--remove", "--producer", "--allow-principal", "User:a", "--topic", "t"],
         "only valid with --add"),
        (["--list", "--operation", "Read"], "--operation is only valid with --add or --remove"),
        (["--add", "--allow-host", "1.2.3.4", "--deny-principal", "User:a", "--topic", "t"],
         "--allow-host needs --allow-principal"),
        (["--add", "--allow-principal", "User:a", "--topic", ""], "empty Topic name"),
    ],
)  # fmt: skip
def test_options_that_do_not_fit(argv: list[str], problem: str) -> None:
    with pytest.raises(acls.UsageError, match=problem.replace("(", r"\(").replace("*", r"\*")):
        command(*argv)


def test_add_crosses_principals_hosts_operations_and_resources() -> None:
    cmd = command(
        "--add",
        "--allow-principal", "User:alice",
        "--allow-principal", "User:bob",
        "--allow-host", "10.0.0.1",
        "--operation", "read",
        "--operation", "DescribeConfigs",
        "--topic", "a",
        "--topic", "b",
    )  # fmt: skip
    assert cmd.action == "add"
    assert len(bindings_of(cmd)) == 8
    hosts = {e.host for _, entries in cmd.entries for e in entries}
    assert hosts == {"10.0.0.1"}


def test_defaults_all_operations_every_host_literal() -> None:
    cmd = command("--add", "--deny-principal", "User:*", "--cluster")
    assert bindings_of(cmd) == {("CLUSTER", "kafka-cluster", "LITERAL", "User:*", "ALL", "DENY")}
    ((_, (entry,)),) = cmd.entries
    assert entry.host == "*"


def test_producer_and_consumer_conveniences() -> None:
    cmd = command(
        "--add", "--allow-principal", "User:p", "--producer", "--idempotent",
        "--topic", "sales-", "--resource-pattern-type", "prefixed", "--transactional-id", "tx",
    )  # fmt: skip
    assert bindings_of(cmd) == {
        ("TOPIC", "sales-", "PREFIXED", "User:p", "WRITE", "ALLOW"),
        ("TOPIC", "sales-", "PREFIXED", "User:p", "DESCRIBE", "ALLOW"),
        ("TOPIC", "sales-", "PREFIXED", "User:p", "CREATE", "ALLOW"),
        ("TRANSACTIONAL_ID", "tx", "PREFIXED", "User:p", "WRITE", "ALLOW"),
        ("TRANSACTIONAL_ID", "tx", "PREFIXED", "User:p", "DESCRIBE", "ALLOW"),
        ("CLUSTER", "kafka-cluster", "LITERAL", "User:p", "IDEMPOTENT_WRITE", "ALLOW"),
    }
    cmd = command("--add", "--allow-principal", "User:c", "--consumer", "--topic", "t",
                  "--group", "g")  # fmt: skip
    assert bindings_of(cmd) == {
        ("TOPIC", "t", "LITERAL", "User:c", "READ", "ALLOW"),
        ("TOPIC", "t", "LITERAL", "User:c", "DESCRIBE", "ALLOW"),
        ("GROUP", "g", "LITERAL", "User:c", "READ", "ALLOW"),
    }


def test_list_without_resource_is_every_pattern() -> None:
    cmd = command("--list", "--principal", "User:alice")
    assert cmd.list_filter is not None
    assert cmd.list_filter.pattern_filter == ResourcePatternFilter(
        ResourceType.ANY, None, PatternType.ANY
    )
    assert cmd.list_filter.entry_filter.principal == "User:alice"
    cmd = command("--list", "--topic", "orders", "--resource-pattern-type", "match")
    assert cmd.list_filter is None
    assert cmd.entries == (
        (ResourcePatternFilter(ResourceType.TOPIC, "orders", PatternType.MATCH), ()),
    )


class MemoryAdmin:
    """Keeps bindings; filters them with proto.acl's filters, as the broker's authorizer."""

    def __init__(self, bindings: Sequence[AclBinding] = (), error: KafkaError | None = None):
        self.bindings = list(bindings)
        self.error = error

    def describe_acls(self, binding_filter: AclBindingFilter) -> list[AclBinding]:
        if self.error is not None:
            raise self.error
        return sorted((b for b in self.bindings if binding_filter.matches(b)), key=lambda b: str(b))

    def create_acls(self, bindings: Sequence[AclBinding]) -> dict[AclBinding, KafkaError | None]:
        self.bindings += [b for b in bindings if b not in self.bindings]
        return {b: self.error for b in bindings}

    def delete_acls(
        self, filters: Sequence[AclBindingFilter]
    ) -> dict[AclBindingFilter, list[AclBinding] | KafkaError]:
        results: dict[AclBindingFilter, list[AclBinding] | KafkaError] = {}
        for f in filters:
            gone = [b for b in self.bindings if f.matches(b)]
            self.bindings = [b for b in self.bindings if b not in gone]
            results[f] = gone
        return results


def run(cmd: acls.AclsCommand, admin: MemoryAdmin, answer: bool = True) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    asked: list[str] = []

    def confirm(question: str) -> bool:
        asked.append(question)
        return answer

    code = acls.execute(cmd, admin, out, err, confirm)
    return code, out.getvalue(), err.getvalue() + "".join(asked)


ORDERS = ResourcePattern(ResourceType.TOPIC, "orders", PatternType.LITERAL)
ALICE = AccessControlEntry("User:alice", "*", Op.READ, ALLOW)


def test_add_prints_as_kafka_acls() -> None:
    admin = MemoryAdmin()
    code, out, _ = run(
        command(
            "--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders"
        ),
        admin,
    )
    assert code == 0
    assert admin.bindings == [AclBinding(ORDERS, ALICE)]
    resource = "`ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`"
    entry = "\t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"
    assert out == (
        f"Adding ACLs for resource {resource}: \n {entry} \n\n"
        f"Current ACLs for resource {resource}: \n {entry} \n\n"
    )


def test_remove_asks_unless_forced() -> None:
    deny = AccessControlEntry("User:eve", "*", Op.ALL, DENY)
    admin = MemoryAdmin([AclBinding(ORDERS, ALICE), AclBinding(ORDERS, deny)])
    argv = ("--remove", "--deny-principal", "User:eve", "--topic", "orders")
    code, out, asked = run(command(*argv), admin, answer=False)
    assert code == 0 and out == "" and "Are you sure you want to remove ACLs" in asked
    assert len(admin.bindings) == 2
    code, out, asked = run(command(*argv, "--force"), admin)
    assert code == 0 and asked == ""
    assert admin.bindings == [AclBinding(ORDERS, ALICE)]
    assert "User:alice" in out and "User:eve" not in out


def test_remove_everything_of_a_resource() -> None:
    admin = MemoryAdmin([AclBinding(ORDERS, ALICE)])
    code, _, asked = run(command("--remove", "--topic", "orders"), admin)
    assert code == 0 and "delete all ACLs for resource filter" in asked
    assert admin.bindings == []


def test_list_groups_by_resource_and_filters_by_principal() -> None:
    prefixed = ResourcePattern(ResourceType.TOPIC, "ord", PatternType.PREFIXED)
    bob = AccessControlEntry("User:bob", "*", Op.WRITE, ALLOW)
    admin = MemoryAdmin([AclBinding(ORDERS, ALICE), AclBinding(ORDERS, bob),
                         AclBinding(prefixed, ALICE)])  # fmt: skip
    _, out, _ = run(command("--list"), admin)
    assert out.count("Current ACLs for resource") == 2
    _, out, _ = run(command("--list", "--principal", "User:bob"), admin)
    assert out.startswith("ACLs for principal `User:bob`\n")
    assert out.count("Current ACLs") == 1 and "User:alice" not in out
    _, out, _ = run(command("--list", "--topic", "orders"), admin)
    assert "patternType=PREFIXED" not in out
    _, out, _ = run(command("--list", "--topic", "orders", "--resource-pattern-type", "match"),
                    admin)  # fmt: skip
    assert "patternType=PREFIXED" in out and "patternType=LITERAL" in out


def test_a_failed_request_is_one_line() -> None:
    admin = MemoryAdmin(
        error=error_for_code(ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")
    )
    code, _out, err = run(command("--list"), admin)
    assert code == 1
    assert err == "Error while executing ACL command : No Authorizer is configured.\n"


def test_run_reports_usage_and_config_problems(
    tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    assert acls.run(parse("--list", "--deny-host", "x")) == 1
    assert capsys.readouterr().err.count("\n") == 1
    assert acls.run(parse("--list", "--command-config", "/nonexistent/file")) == 1
    assert "cannot read /nonexistent/file" in capsys.readouterr().err
