"""``minikafka acls``: Kafka's kafka-acls.sh, its options and its output.

    minikafka acls --bootstrap-server H:P --add --allow-principal User:alice --operation Read \\
        --operation Describe --topic orders
    minikafka acls --bootstrap-server H:P --add --allow-principal User:bob --producer \\
        --topic sales- --resource-pattern-type prefixed
    minikafka acls --bootstrap-server H:P --add --allow-principal User:carol --consumer \\
        --topic orders --group billing
    minikafka acls --bootstrap-server H:P --list [--topic orders] [--principal User:alice]
    minikafka acls --bootstrap-server H:P --remove --deny-principal User:eve --topic orders \\
        [--force]

--add prints, per resource, ``Adding ACLs for resource `ResourcePattern(resourceType=TOPIC,
name=orders, patternType=LITERAL)`:`` and the entries, then the resource's ACLs now (``Current
ACLs for resource ...``). --remove asks ``Are you sure ...? (y/n)`` on stdin unless --force,
then lists what is left. --list prints every resource the filter matches with its ACLs
(--resource-pattern-type any by default with no resource named; match selects every pattern
that applies to the name). --producer grants Write, Describe and Create on the topics (and
Write, Describe on --transactional-id, IdempotentWrite on the cluster with --idempotent);
--consumer Read and Describe on the topics and Read on the groups.

--command-config is the admin client's properties file, as the other admin tools take it
(``request.timeout.ms``, and the security keys: ``security.protocol``, ``ssl.*``, ``sasl.*``).
Bad input is one line on stderr and exit status 1; a failed request prints ``Error while
executing ACL command : <message>`` and exits 1.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TextIO

from minikafka.client.cli._admin_tool import kafka_error_message
from minikafka.client.cli._config import ConfigError, client_kwargs, read_properties_file
from minikafka.proto.acl import (
    CLUSTER_NAME,
    WILDCARD_HOST,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    kafka_name,
    parse_kafka_name,
)
from minikafka.proto.errors import KafkaError

__all__ = ["AclsCommand", "add_arguments", "execute", "parse_command", "run"]

Op = AclOperation

# Kafka's AclEntry.supportedOperations: what an ACL on each resource type may name (and All).
SUPPORTED_OPERATIONS: dict[ResourceType, frozenset[AclOperation]] = {
    ResourceType.TOPIC: frozenset(
        {
            Op.READ,
            Op.WRITE,
            Op.CREATE,
            Op.DESCRIBE,
            Op.DELETE,
            Op.ALTER,
            Op.DESCRIBE_CONFIGS,
            Op.ALTER_CONFIGS,
        }
    ),
    ResourceType.GROUP: frozenset({Op.READ, Op.DESCRIBE, Op.DELETE}),
    ResourceType.CLUSTER: frozenset(
        {
            Op.CREATE,
            Op.CLUSTER_ACTION,
            Op.DESCRIBE_CONFIGS,
            Op.ALTER_CONFIGS,
            Op.IDEMPOTENT_WRITE,
            Op.ALTER,
            Op.DESCRIBE,
        }
    ),
    ResourceType.TRANSACTIONAL_ID: frozenset({Op.DESCRIBE, Op.WRITE}),
}

_OPERATION_NAMES = (
    "Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, "
    "AlterConfigs, IdempotentWrite, All"
)
_PATTERN_TYPES = ("literal", "prefixed", "any", "match")
_ERROR = "Error while executing ACL command : "


class UsageError(ValueError):
    """Options that do not fit together; the message is the one line the user sees."""


class AclAdmin(Protocol):
    """What this tool needs of AdminClient (tests pass a fake)."""

    def describe_acls(self, binding_filter: AclBindingFilter) -> list[AclBinding]: ...

    def create_acls(
        self, bindings: Sequence[AclBinding]
    ) -> dict[AclBinding, KafkaError | None]: ...

    def delete_acls(
        self, filters: Sequence[AclBindingFilter]
    ) -> dict[AclBindingFilter, list[AclBinding] | KafkaError]: ...


@dataclass(frozen=True)
class AclsCommand:
    """What the options ask for: the action, and per resource (filter) the entries."""

    action: str  # add, remove, list
    # add: each pattern with its entries; remove: each filter with its entries (none: all)
    entries: tuple[tuple[ResourcePatternFilter, tuple[AccessControlEntry, ...]], ...]
    list_filter: AclBindingFilter | None = None  # list
    principal: str | None = None  # list --principal
    force: bool = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--bootstrap-server", required=True, metavar="HOST:PORT", help="brokers to connect to"
    )
    parser.add_argument(
        "--command-config",
        metavar="FILE",
        help="admin client .properties (security.protocol, sasl.*, ssl.*, ...)",
    )
    actions = parser.add_argument_group("actions (exactly one)")
    actions.add_argument("--add", action="store_true", help="add ACLs")
    actions.add_argument("--remove", action="store_true", help="remove ACLs")
    actions.add_argument("--list", action="store_true", help="list ACLs")
    parser.add_argument("--force", action="store_true", help="remove without asking")
    parser.add_argument("--topic", action="append", default=[], help="a topic (repeatable)")
    parser.add_argument("--group", action="append", default=[], help="a group (repeatable)")
    parser.add_argument("--cluster", action="store_true", help="the cluster")
    parser.add_argument(
        "--transactional-id", action="append", default=[], help="a transactional id"
    )
    parser.add_argument(
        "--resource-pattern-type",
        type=str.lower,
        choices=_PATTERN_TYPES,
        help="literal (default for --add/--remove), prefixed, any (default for --list), match",
    )
    parser.add_argument("--allow-principal", action="append", default=[], metavar="PRINCIPAL")
    parser.add_argument("--deny-principal", action="append", default=[], metavar="PRINCIPAL")
    parser.add_argument("--allow-host", action="append", default=[], metavar="HOST")
    parser.add_argument("--deny-host", action="append", default=[], metavar="HOST")
    parser.add_argument(
        "--operation", action="append", default=[], help=f"one of {_OPERATION_NAMES}"
    )
    parser.add_argument("--producer", action="store_true", help="the ACLs a producer needs")
    parser.add_argument("--consumer", action="store_true", help="the ACLs a consumer needs")
    parser.add_argument(
        "--idempotent", action="store_true", help="with --producer: IdempotentWrite too"
    )
    parser.add_argument("--principal", help="with --list: only this principal's ACLs")


def parse_command(args: argparse.Namespace) -> AclsCommand:
    """The command the options ask for; UsageError with Kafka's one-line reason."""
    if [args.add, args.remove, args.list].count(True) != 1:
        raise UsageError("Command must include exactly one action: --list, --add, --remove.")
    pattern_type = _pattern_type(args)
    if args.list:
        return _list_command(args, pattern_type)
    if args.principal is not None:
        raise UsageError("--principal is only valid with --list")
    if (args.producer or args.consumer) and (args.operation or args.deny_principal):
        raise UsageError(
            "--producer and --consumer cannot be used with --operation or --deny-principal"
        )
    if (args.producer or args.consumer) and not args.add:
        raise UsageError("--producer and --consumer are only valid with --add")
    if args.idempotent and not args.producer:
        raise UsageError("--idempotent is only valid with --producer")
    if args.consumer and not args.group:
        raise UsageError("With --consumer you must specify a --group")
    if args.add and pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise UsageError(
            f"A '--resource-pattern-type' value of '{pattern_type.name.lower()}' is not valid "
            "when adding acls."
        )
    if args.add and not (args.allow_principal or args.deny_principal):
        raise UsageError(
            "You must specify one of: --allow-principal, --deny-principal when trying to add ACLs."
        )
    resources = _resources(args, pattern_type)
    if not resources:
        raise UsageError(
            "You must provide at least one resource: --topic <topic> or --cluster or "
            "--group <group> or --transactional-id <id>"
        )
    if args.producer or args.consumer:
        by_resource = _producer_consumer_entries(args, pattern_type)
    else:
        operations = _operations(args.operation)
        entries = _entries(args, operations)
        for resource in resources:
            _check_supported(resource.resource_type, operations)
        by_resource = [(resource, entries) for resource in resources]
    return AclsCommand(
        "add" if args.add else "remove",
        tuple((resource, tuple(entries)) for resource, entries in by_resource),
        force=args.force,
    )


def _pattern_type(args: argparse.Namespace) -> PatternType:
    if args.resource_pattern_type is None:
        return PatternType.LITERAL
    return parse_kafka_name(PatternType, args.resource_pattern_type)


def _list_command(args: argparse.Namespace, pattern_type: PatternType) -> AclsCommand:
    for option in ("allow_principal", "deny_principal", "allow_host", "deny_host", "operation"):
        if getattr(args, option):
            raise UsageError(f"--{option.replace('_', '-')} is only valid with --add or --remove")
    if args.producer or args.consumer or args.force:
        raise UsageError("--producer, --consumer and --force are not valid with --list")
    principal = args.principal
    if principal is not None:
        _check_principal(principal)
    resources = _resources(args, pattern_type)
    entry_filter = AccessControlEntryFilter(
        principal, None, AclOperation.ANY, AclPermissionType.ANY
    )
    if not resources:
        any_type = PatternType.ANY if args.resource_pattern_type is None else pattern_type
        return AclsCommand(
            "list",
            (),
            AclBindingFilter(ResourcePatternFilter(ResourceType.ANY, None, any_type), entry_filter),
            principal=principal,
        )
    return AclsCommand(
        "list",
        tuple((resource, ()) for resource in resources),
        principal=principal,
    )


def _resources(args: argparse.Namespace, pattern_type: PatternType) -> list[ResourcePatternFilter]:
    resources = [ResourcePatternFilter(ResourceType.TOPIC, t, pattern_type) for t in args.topic]
    resources += [ResourcePatternFilter(ResourceType.GROUP, g, pattern_type) for g in args.group]
    if args.cluster:
        resources.append(ResourcePatternFilter(ResourceType.CLUSTER, CLUSTER_NAME, pattern_type))
    resources += [
        ResourcePatternFilter(ResourceType.TRANSACTIONAL_ID, t, pattern_type)
        for t in args.transactional_id
    ]
    for resource in resources:
        if resource.name == "":
            raise UsageError(f"an empty {kafka_name(resource.resource_type)} name is not valid")
    return resources


def _operations(names: Iterable[str]) -> list[AclOperation]:
    operations = []
    for name in names or ["All"]:
        try:
            operation = parse_kafka_name(AclOperation, name)
        except ValueError:
            operation = AclOperation.UNKNOWN
        if operation in (AclOperation.UNKNOWN, AclOperation.ANY):
            raise UsageError(f"Invalid operation {name!r}: one of {_OPERATION_NAMES}")
        operations.append(operation)
    return list(dict.fromkeys(operations))


def _check_supported(resource_type: ResourceType, operations: Iterable[AclOperation]) -> None:
    supported = SUPPORTED_OPERATIONS[resource_type]
    for operation in operations:
        if operation is not AclOperation.ALL and operation not in supported:
            names = ", ".join(sorted(kafka_name(op) for op in supported))
            raise UsageError(
                f"ResourceType {kafka_name(resource_type)} only supports operations {names}, All"
            )


def _check_principal(principal: str) -> None:
    principal_type, sep, name = principal.partition(":")
    if not sep or not principal_type or not name:
        raise UsageError(
            f"Invalid principal {principal!r}: expected the form principalType:principalName "
            "(User:alice, User:* for every principal)"
        )


def _entries(
    args: argparse.Namespace, operations: Sequence[AclOperation]
) -> list[AccessControlEntry]:
    entries = []
    for principals, hosts, permission in (
        (args.allow_principal, args.allow_host, AclPermissionType.ALLOW),
        (args.deny_principal, args.deny_host, AclPermissionType.DENY),
    ):
        if hosts and not principals:
            kind = "allow" if permission is AclPermissionType.ALLOW else "deny"
            raise UsageError(f"--{kind}-host needs --{kind}-principal")
        for principal in principals:
            _check_principal(principal)
            for host in hosts or [WILDCARD_HOST]:
                for operation in operations:
                    entries.append(AccessControlEntry(principal, host, operation, permission))
    return entries


def _producer_consumer_entries(
    args: argparse.Namespace, pattern_type: PatternType
) -> list[tuple[ResourcePatternFilter, list[AccessControlEntry]]]:
    def entries(operations: Sequence[AclOperation]) -> list[AccessControlEntry]:
        return _entries(args, operations)

    found: list[tuple[ResourcePatternFilter, list[AccessControlEntry]]] = []
    topics = [ResourcePatternFilter(ResourceType.TOPIC, t, pattern_type) for t in args.topic]
    if not topics:
        raise UsageError("--producer and --consumer need at least one --topic")
    if args.producer:
        found += [(t, entries([Op.WRITE, Op.DESCRIBE, Op.CREATE])) for t in topics]
        found += [
            (
                ResourcePatternFilter(ResourceType.TRANSACTIONAL_ID, t, pattern_type),
                entries([Op.WRITE, Op.DESCRIBE]),
            )
            for t in args.transactional_id
        ]
        if args.idempotent:
            cluster = ResourcePatternFilter(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL)
            found.append((cluster, entries([Op.IDEMPOTENT_WRITE])))
    if args.consumer:
        found += [(t, entries([Op.READ, Op.DESCRIBE])) for t in topics]
        found += [
            (ResourcePatternFilter(ResourceType.GROUP, g, pattern_type), entries([Op.READ]))
            for g in args.group
        ]
    # A topic named by both gets the union, once.
    merged: dict[ResourcePatternFilter, list[AccessControlEntry]] = {}
    for resource, resource_entries in found:
        merged.setdefault(resource, [])
        merged[resource] += [e for e in resource_entries if e not in merged[resource]]
    return list(merged.items())


# --- output, as kafka-acls.sh prints it ------------------------------------------------------


def pattern_text(resource: ResourcePattern | ResourcePatternFilter) -> str:
    return (
        f"ResourcePattern(resourceType={resource.resource_type.name}, name={resource.name}, "
        f"patternType={resource.pattern_type.name})"
    )


def entry_text(entry: AccessControlEntry) -> str:
    return (
        f"(principal={entry.principal}, host={entry.host}, operation={entry.operation.name}, "
        f"permissionType={entry.permission_type.name})"
    )


def _print_entries(out: TextIO, heading: str, entries: Iterable[AccessControlEntry]) -> None:
    lines = "\n".join(f"\t{entry_text(e)}" for e in entries)
    print(f"{heading}: \n {lines} \n", file=out)


def _print_bindings(out: TextIO, bindings: Iterable[AclBinding]) -> None:
    by_pattern: dict[ResourcePattern, list[AccessControlEntry]] = {}
    for binding in bindings:
        by_pattern.setdefault(binding.pattern, []).append(binding.entry)
    for pattern, entries in by_pattern.items():
        _print_entries(out, f"Current ACLs for resource `{pattern_text(pattern)}`", entries)


def _exact_filter(
    resource: ResourcePatternFilter, principal: str | None = None
) -> AclBindingFilter:
    return AclBindingFilter(
        resource,
        AccessControlEntryFilter(principal, None, AclOperation.ANY, AclPermissionType.ANY),
    )


def execute(
    command: AclsCommand,
    admin: AclAdmin,
    out: TextIO,
    err: TextIO,
    confirm: Callable[[str], bool] | None = None,
) -> int:
    try:
        if command.action == "add":
            _add(command, admin, out)
        elif command.action == "remove":
            if not _remove(command, admin, out, confirm or _ask):
                return 0
        else:
            _list(command, admin, out)
    except KafkaError as exc:
        print(f"{_ERROR}{kafka_error_message(exc)}", file=err)
        return 1
    return 0


def _add(command: AclsCommand, admin: AclAdmin, out: TextIO) -> None:
    bindings = []
    for resource, entries in command.entries:
        pattern = ResourcePattern(
            resource.resource_type, resource.name or "", resource.pattern_type
        )
        _print_entries(out, f"Adding ACLs for resource `{pattern_text(pattern)}`", entries)
        bindings += [AclBinding(pattern, e) for e in entries]
    for error in admin.create_acls(bindings).values():
        if error is not None:
            raise error
    for resource, _ in command.entries:
        _print_bindings(out, admin.describe_acls(_exact_filter(resource)))


def _remove(
    command: AclsCommand, admin: AclAdmin, out: TextIO, confirm: Callable[[str], bool]
) -> bool:
    filters: list[AclBindingFilter] = []
    for resource, entries in command.entries:
        if not entries:
            question = (
                f"Are you sure you want to delete all ACLs for resource filter "
                f"`{pattern_text(resource)}`? (y/n)"
            )
            filters.append(_exact_filter(resource))
        else:
            lines = "\n".join(f"\t{entry_text(e)}" for e in entries)
            question = (
                f"Are you sure you want to remove ACLs: \n {lines} \n from resource filter "
                f"`{pattern_text(resource)}`? (y/n)"
            )
            filters += [
                AclBindingFilter(
                    resource,
                    AccessControlEntryFilter(e.principal, e.host, e.operation, e.permission_type),
                )
                for e in entries
            ]
        if not command.force and not confirm(question):
            return False
    for result in admin.delete_acls(filters).values():
        if isinstance(result, KafkaError):
            raise result
    for resource, _ in command.entries:
        _print_bindings(out, admin.describe_acls(_exact_filter(resource)))
    return True


def _list(command: AclsCommand, admin: AclAdmin, out: TextIO) -> None:
    filters = (
        [command.list_filter]
        if command.list_filter is not None
        else [_exact_filter(resource, command.principal) for resource, _ in command.entries]
    )
    if command.principal is not None:
        print(f"ACLs for principal `{command.principal}`", file=out)
    for binding_filter in filters:
        _print_bindings(out, admin.describe_acls(binding_filter))


def _ask(question: str) -> bool:
    print(question, flush=True)
    answer = sys.stdin.readline().strip().lower()
    return answer in ("y", "yes")


def run(args: argparse.Namespace) -> int:
    try:
        command = parse_command(args)
        kwargs = _client_config(args.command_config)
    except (UsageError, ConfigError) as exc:
        print(exc, file=sys.stderr)
        return 1
    from minikafka.client.admin import AdminClient

    try:
        admin = AdminClient(args.bootstrap_server, **kwargs)
    except KafkaError as exc:
        print(f"{_ERROR}{kafka_error_message(exc)}", file=sys.stderr)
        return 1
    with admin:
        return execute(command, admin, sys.stdout, sys.stderr)


def _client_config(path: str | None) -> dict[str, Any]:
    if path is None:
        return {}
    props = read_properties_file(path)
    from minikafka.client.admin import AdminClient

    return client_kwargs(AdminClient, props, lambda line: print(line, file=sys.stderr))
