"""``minikafka topics``: Kafka's kafka-topics.sh, with its options and its output.

    minikafka topics --bootstrap-server H:P --create --topic T --partitions 3 \\
        --replication-factor 3 [--config k=v ...] [--if-not-exists]
    minikafka topics --bootstrap-server H:P --create --topic T --replica-assignment 0:1,1:2
    minikafka topics --bootstrap-server H:P --list [--exclude-internal]
    minikafka topics --bootstrap-server H:P --describe [--topic T] [--exclude-internal]
        [--under-replicated-partitions | --unavailable-partitions | --topics-with-overrides]
    minikafka topics --bootstrap-server H:P --alter --topic T --partitions 6 [--if-exists]
    minikafka topics --bootstrap-server H:P --delete --topic T [--if-exists]

As in Kafka, ``--topic`` of --describe, --alter and --delete is a pattern: a regular expression
matched against whole names, ``,`` separating alternatives. --describe prints::

    Topic: T<TAB>TopicId: <id><TAB>PartitionCount: 3<TAB>ReplicationFactor: 3<TAB>Configs: k=v,...
    <TAB>Topic: T<TAB>Partition: 0<TAB>Leader: 2<TAB>Replicas: 2,1,0<TAB>Isr: 2,1,0

(``Leader: none`` without a leader; Configs lists the topic's non-default configs). A failure
prints ``Error while executing topic command : <message>`` to stderr and exits 1; options that
do not fit together exit 1 with a message naming them, as Kafka's tool does.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, TextIO

from minikafka.client.cli._admin_tool import add_command_config, kafka_error_message, run_admin_tool
from minikafka.client.cli._config import parse_key_values
from minikafka.proto.errors import ErrorCode, InvalidConfigError, KafkaError

if TYPE_CHECKING:  # client.admin loads grpc: only when the command runs (see minikafka.cli)
    from minikafka.client.admin import ConfigEntry, NewTopic, TopicDescription

__all__ = [
    "add_arguments",
    "execute",
    "format_partition",
    "format_topic",
    "parse_configs",
    "parse_replica_assignment",
    "run",
    "topic_pattern",
]

_ACTIONS = ("create", "list", "describe", "alter", "delete")


class TopicAdmin(Protocol):
    """What this tool needs of AdminClient (tests pass a fake)."""

    def list_topics(self, *, include_internal: bool = ...) -> list[str]: ...
    def describe_topics(
        self, topics: Sequence[str] | None = ...
    ) -> dict[str, TopicDescription]: ...
    def describe_topic_configs(self, topic: str) -> dict[str, ConfigEntry]: ...
    def create_topics(self, new_topics: Iterable[NewTopic]) -> dict[str, KafkaError | None]: ...
    def delete_topics(self, topics: Iterable[str]) -> dict[str, KafkaError | None]: ...
    def create_partitions(self, new_counts: Mapping[str, int]) -> dict[str, KafkaError | None]: ...


class CommandError(Exception):
    """A failure to report as ``Error while executing topic command : <message>``."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--bootstrap-server", required=True, metavar="HOST:PORT", help="brokers to connect to"
    )
    add_command_config(parser)
    actions = parser.add_argument_group("actions (exactly one)")
    for action in _ACTIONS:
        actions.add_argument(f"--{action}", action="store_true", help=f"{action} topics")
    parser.add_argument("--topic", help="topic name; a regular expression except for --create")
    parser.add_argument("--partitions", type=int, help="number of partitions (new total)")
    parser.add_argument("--replication-factor", type=int, help="replicas of each partition")
    parser.add_argument(
        "--replica-assignment",
        metavar="B:B,B:B",
        help="manual assignment: partitions separated by ',', their brokers by ':'",
    )
    parser.add_argument(
        "--config", action="append", default=[], metavar="KEY=VALUE", help="topic config"
    )
    parser.add_argument("--if-not-exists", action="store_true", help="--create: skip if it exists")
    parser.add_argument("--if-exists", action="store_true", help="only act on existing topics")
    parser.add_argument("--exclude-internal", action="store_true", help="skip internal topics")
    parser.add_argument(
        "--under-replicated-partitions",
        action="store_true",
        help="--describe: only partitions whose ISR is smaller than their replicas",
    )
    parser.add_argument(
        "--unavailable-partitions",
        action="store_true",
        help="--describe: only partitions without a leader",
    )
    parser.add_argument(
        "--topics-with-overrides",
        action="store_true",
        help="--describe: only topics with configs set, without their partitions",
    )


def check_args(args: argparse.Namespace) -> str | None:
    """Kafka's TopicCommand option rules; the message for the first broken one, else None."""
    chosen = [a for a in _ACTIONS if getattr(args, a)]
    if len(chosen) != 1:
        return (
            "Command must include exactly one action: "
            "--list, --describe, --create, --alter or --delete"
        )
    action = chosen[0]
    if action in ("create", "alter", "delete") and not args.topic:
        return 'Missing required argument "[topic]"'
    if action == "alter" and args.partitions is None:
        return 'Missing required argument "[partitions]"'
    if args.replica_assignment and (
        args.partitions is not None or args.replication_factor is not None
    ):
        return (
            "Option [replica-assignment] can't be used with option [partitions] "
            "or [replication-factor]"
        )
    if args.replication_factor is not None and action != "create":
        return "Option [replication-factor] can only be used with option [create]"
    if args.partitions is not None and action not in ("create", "alter"):
        return "Option [partitions] can only be used with options [create] or [alter]"
    if args.config and action != "create":
        return "Option [config] can only be used with option [create]"
    if args.if_not_exists and action != "create":
        return "Option [if-not-exists] can only be used with option [create]"
    if args.if_exists and action not in ("alter", "delete", "describe"):
        return "Option [if-exists] can only be used with options [alter], [delete] or [describe]"
    filters = (
        args.under_replicated_partitions,
        args.unavailable_partitions,
        args.topics_with_overrides,
    )
    if any(filters) and action != "describe":
        return (
            "Options [under-replicated-partitions], [unavailable-partitions] and "
            "[topics-with-overrides] can only be used with option [describe]"
        )
    if sum(map(bool, filters)) > 1:
        return (
            "Options [under-replicated-partitions], [unavailable-partitions] and "
            "[topics-with-overrides] cannot be used together"
        )
    return None


def parse_configs(items: Iterable[str]) -> dict[str, str]:
    """``["k=v", ...]`` -> ``{"k": "v"}``; a value may itself contain ``=``."""
    return parse_key_values(
        items,
        lambda item: InvalidConfigError(
            f"Invalid topic config: all configs must be key=value: {item}"
        ),
    )


def parse_replica_assignment(text: str) -> dict[int, list[int]]:
    """``"0:1:2,1:2:0"`` -> ``{0: [0, 1, 2], 1: [1, 2, 0]}`` (partition i = the i-th group)."""
    assignment: dict[int, list[int]] = {}
    for partition, group in enumerate(text.split(",")):
        try:
            brokers = [int(b) for b in group.split(":")]
        except ValueError:
            raise InvalidConfigError(f"Invalid replica assignment: {text!r}") from None
        if len(set(brokers)) != len(brokers):
            raise InvalidConfigError(
                f"Partition replica lists may not contain duplicate entries: {group}"
            )
        if assignment and len(brokers) != len(assignment[0]):
            raise InvalidConfigError(
                f"Partition {partition} has different replication factor: {brokers}"
            )
        assignment[partition] = brokers
    return assignment


def topic_pattern(text: str) -> re.Pattern[str]:
    """Kafka's IncludeList: a regular expression over whole names, ``,`` meaning ``|``."""
    cleaned = text.strip().strip("\"'").replace(",", "|")
    try:
        return re.compile(cleaned)
    except re.error as exc:
        raise CommandError(f"Invalid topic pattern {text!r}: {exc}") from None


def format_topic(description: TopicDescription, configs: Mapping[str, ConfigEntry]) -> str:
    parts = [f"Topic: {description.name}"]
    if description.topic_id and description.topic_id != "AAAAAAAAAAAAAAAAAAAAAA":
        parts.append(f"TopicId: {description.topic_id}")
    parts.append(f"PartitionCount: {len(description.partitions)}")
    parts.append(f"ReplicationFactor: {description.replication_factor}")
    shown = ",".join(
        f"{name}={'null' if entry.value is None else entry.value}"
        for name, entry in configs.items()
        if not entry.is_default
    )
    parts.append(f"Configs: {shown}")
    return "\t".join(parts)


def format_partition(
    topic: str, partition: int, leader: int, replicas: Sequence[int], isr: Sequence[int]
) -> str:
    leader_text = "none" if leader < 0 else str(leader)
    return (
        f"\tTopic: {topic}\tPartition: {partition}\tLeader: {leader_text}"
        f"\tReplicas: {','.join(map(str, replicas))}\tIsr: {','.join(map(str, isr))}"
    )


def _matching(admin: TopicAdmin, args: argparse.Namespace) -> list[str]:
    topics = admin.list_topics(include_internal=not args.exclude_internal)
    if not args.topic:
        return topics
    pattern = topic_pattern(args.topic)
    matched = [t for t in topics if pattern.fullmatch(t)]
    if not matched and not args.if_exists:
        raise CommandError(f"Topic '{args.topic}' does not exist as expected")
    return matched


def _raise(errors: Mapping[str, KafkaError | None]) -> None:
    for error in errors.values():
        if error is not None:
            raise CommandError(kafka_error_message(error))


def _create(admin: TopicAdmin, args: argparse.Namespace, out: TextIO) -> None:
    from minikafka.client.admin import NewTopic

    assignment = {}
    if args.replica_assignment:
        assignment = parse_replica_assignment(args.replica_assignment)
    new_topic = NewTopic(
        args.topic,
        num_partitions=-1 if args.partitions is None else args.partitions,
        replication_factor=-1 if args.replication_factor is None else args.replication_factor,
        replica_assignment=assignment,
        configs=parse_configs(args.config),
    )
    errors = admin.create_topics([new_topic])
    error = errors.get(args.topic)
    if error is not None and error.code == ErrorCode.TOPIC_ALREADY_EXISTS:
        if args.if_not_exists:
            return
        raise CommandError(f"Topic '{args.topic}' already exists.")
    _raise(errors)
    print(f"Created topic {args.topic}.", file=out)


def _describe(admin: TopicAdmin, args: argparse.Namespace, out: TextIO) -> None:
    topics = _matching(admin, args)
    if not topics:
        return
    filtered = args.under_replicated_partitions or args.unavailable_partitions
    for name, description in admin.describe_topics(topics).items():
        if args.topics_with_overrides:
            configs = admin.describe_topic_configs(name)
            if any(not entry.is_default for entry in configs.values()):
                print(format_topic(description, configs), file=out)
            continue
        if not filtered:
            print(format_topic(description, admin.describe_topic_configs(name)), file=out)
        for p in description.partitions:
            if args.under_replicated_partitions and len(p.isr) >= len(p.replicas):
                continue
            if args.unavailable_partitions and p.leader >= 0:
                continue
            print(format_partition(name, p.partition, p.leader, p.replicas, p.isr), file=out)


def _alter(admin: TopicAdmin, args: argparse.Namespace) -> None:
    topics = _matching(admin, args)
    if topics:
        _raise(admin.create_partitions({t: args.partitions for t in topics}))


def _delete(admin: TopicAdmin, args: argparse.Namespace) -> None:
    topics = _matching(admin, args)
    if topics:
        _raise(admin.delete_topics(topics))


def execute(args: argparse.Namespace, admin: TopicAdmin, out: TextIO, err: TextIO) -> int:
    """Run the checked command against ``admin``; the exit status."""
    try:
        if args.create:
            _create(admin, args, out)
        elif args.list:
            for name in admin.list_topics(include_internal=not args.exclude_internal):
                print(name, file=out)
        elif args.describe:
            _describe(admin, args, out)
        elif args.alter:
            _alter(admin, args)
        else:
            _delete(admin, args)
    except CommandError as exc:
        print(f"Error while executing topic command : {exc}", file=err)
        return 1
    except KafkaError as exc:
        print(f"Error while executing topic command : {kafka_error_message(exc)}", file=err)
        return 1
    return 0


def run(args: argparse.Namespace) -> int:
    return run_admin_tool(
        args,
        execute,
        check_args=check_args,
        error_line=lambda exc: f"Error while executing topic command : {kafka_error_message(exc)}",
    )
