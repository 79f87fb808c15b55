"""``minikafka groups``: Kafka's kafka-consumer-groups.sh, with its options and its tables.

    minikafka groups --bootstrap-server H:P --list [--state]
    minikafka groups --bootstrap-server H:P --describe (--group G ... | --all-groups)
        [--members | --state]
    minikafka groups --bootstrap-server H:P --reset-offsets (--group G ... | --all-groups)
        (--topic T[:P,P] ... | --all-topics)
        (--to-earliest | --to-latest | --to-current | --to-offset N | --shift-by N
         | --to-datetime YYYY-MM-DDTHH:mm:SS.sss[Z|+hh:mm])  [--dry-run | --execute]
    minikafka groups --bootstrap-server H:P --delete (--group G ... | --all-groups)

--describe prints, for each group, a blank line and Kafka's table (columns left-aligned, at least
15 wide; ``-`` where there is no value; lag = log end offset (the high watermark) - committed)::

    GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             \
CONSUMER-ID     HOST            CLIENT-ID

Members' partitions come first (members with the most partitions first), then partitions the
group committed that no member holds. A group in state Empty also prints ``Consumer group 'G'
has no active members.`` on stderr; one that does not exist prints ``Error: Consumer group 'G'
does not exist.`` and exits 1.

--reset-offsets works only on an inactive group (Empty, or one that does not exist yet), as in
Kafka; it prints the new offsets (``GROUP TOPIC PARTITION NEW-OFFSET``, 30/30/10/15 wide) and
commits them only with --execute. Without --dry-run or --execute it warns that nothing is done.
--to-datetime without a zone is local time; a partition with no record at or after that time
goes to its log end. New offsets are kept between the log start and the log end.

Errors print ``Error: <message>`` on stderr and exit 1.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, TextIO

from minikafka.client.cli._admin_tool import add_command_config, run_admin_tool
from minikafka.proto.errors import ErrorCode, KafkaError

if TYPE_CHECKING:  # client.admin loads grpc: only when the command runs (see minikafka.cli)
    from minikafka.client.admin import (
        ConsumerGroupDescription,
        ConsumerGroupListing,
        ListOffsetsResultInfo,
        TopicDescription,
    )
    from minikafka.proto.common import OffsetAndMetadata, TopicPartition

__all__ = [
    "PartitionAssignmentState",
    "add_arguments",
    "execute",
    "format_describe",
    "format_list",
    "format_reset",
    "parse_datetime",
    "run",
]

MISSING = "-"
_ACTIONS = ("list", "describe", "reset_offsets", "delete")
_RESET_SPECS = ("to_earliest", "to_latest", "to_current", "to_offset", "shift_by", "to_datetime")
_NO_ACTION_WARNING = (
    "WARN: No action will be performed as the --execute option is missing. "
    "You should add the --dry-run option explicitly if you are scripting this command."
)

EARLIEST = -2  # ListOffsets specs (client.admin's, without loading it)
LATEST = -1


class GroupAdmin(Protocol):
    """What this tool needs of AdminClient (tests pass a fake)."""

    def list_groups(self) -> list[ConsumerGroupListing]: ...
    def describe_groups(self, group_ids: Iterable[str]) -> dict[str, ConsumerGroupDescription]: ...
    def list_consumer_group_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None = ...
    ) -> dict[TopicPartition, OffsetAndMetadata]: ...
    def alter_consumer_group_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, KafkaError | None]: ...
    def delete_groups(self, group_ids: Iterable[str]) -> dict[str, KafkaError | None]: ...
    def list_offsets(
        self, specs: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, ListOffsetsResultInfo]: ...
    def describe_topics(
        self, topics: Sequence[str] | None = ...
    ) -> dict[str, TopicDescription]: ...


class CommandError(Exception):
    """A failure to report as ``Error: <message>``."""


@dataclass(frozen=True)
class PartitionAssignmentState:
    """One row of --describe (Kafka's PartitionAssignmentState); None prints as ``-``."""

    group: str
    topic: str | None
    partition: int | None
    offset: int | None
    log_end_offset: int | None
    consumer_id: str | None
    host: str | None
    client_id: str | None

    @property
    def lag(self) -> int | None:
        if self.offset is None or self.log_end_offset is None:
            return None
        return max(self.log_end_offset - self.offset, 0)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--bootstrap-server", required=True, metavar="HOST:PORT", help="brokers to connect to"
    )
    add_command_config(parser)
    actions = parser.add_argument_group("actions (exactly one)")
    actions.add_argument("--list", action="store_true", help="list every group")
    actions.add_argument("--describe", action="store_true", help="offsets and lag of groups")
    actions.add_argument(
        "--reset-offsets", action="store_true", help="move an inactive group's offsets"
    )
    actions.add_argument("--delete", action="store_true", help="delete empty groups")
    parser.add_argument("--group", action="append", default=[], help="group id (repeatable)")
    parser.add_argument(
        "--all-groups", action="store_true", help="--describe, --reset-offsets, --delete: all"
    )
    parser.add_argument(
        "--members", action="store_true", help="--describe: members instead of offsets"
    )
    parser.add_argument(
        "--state", action="store_true", help="--describe, --list: the groups' states"
    )
    parser.add_argument(
        "--topic",
        action="append",
        default=[],
        metavar="T[:P,P]",
        help="--reset-offsets: a topic, or some of its partitions",
    )
    parser.add_argument(
        "--all-topics", action="store_true", help="--reset-offsets: every committed partition"
    )
    specs = parser.add_argument_group("reset specifications (exactly one with --reset-offsets)")
    specs.add_argument("--to-earliest", action="store_true", help="the log start offset")
    specs.add_argument("--to-latest", action="store_true", help="the log end offset")
    specs.add_argument("--to-current", action="store_true", help="the committed offset")
    specs.add_argument("--to-offset", type=int, metavar="N", help="offset N")
    specs.add_argument("--shift-by", type=int, metavar="N", help="committed offset + N")
    specs.add_argument(
        "--to-datetime",
        type=_datetime_arg,
        metavar="YYYY-MM-DDTHH:mm:SS.sss",
        help="the first offset at or after this time",
    )
    parser.add_argument("--dry-run", action="store_true", help="only print the new offsets")
    parser.add_argument("--execute", action="store_true", help="commit the new offsets")


def parse_datetime(text: str) -> int:
    """Kafka's reset datetime (``2024-01-31T12:00:00.000``, optional ``Z`` or ``+hh:mm``;
    local time without one) -> epoch milliseconds."""
    value = text.strip()
    if value.endswith("Z"):
        value = value[:-1] + "+00:00"
    try:
        parsed = datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%f%z")
    except ValueError:
        try:
            parsed = datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%f")
        except ValueError:
            raise ValueError(
                f"Error parsing timestamp. It does not match format yyyy-MM-dd'T'HH:mm:ss.SSS: "
                f"{text}"
            ) from None
        parsed = parsed.astimezone()  # naive = local time
    return int(parsed.timestamp() * 1000)


def _datetime_arg(text: str) -> int:
    try:
        return parse_datetime(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def check_args(args: argparse.Namespace) -> str:
    """Kafka's ConsumerGroupCommand option rules: the chosen action, or CommandError."""
    chosen = [a for a in _ACTIONS if getattr(args, a)]
    if len(chosen) != 1:
        raise CommandError(
            "Command must include exactly one action: --list, --describe, --delete, --reset-offsets"
        )
    action = chosen[0]
    if action in ("describe", "delete", "reset_offsets") and (bool(args.group) == args.all_groups):
        raise CommandError(
            f"Option [{'--' + action.replace('_', '-')}] takes one of these options: "
            "[all-groups, group]"
        )
    if args.members and args.state:
        raise CommandError("Option [describe] takes at most one of these options: members, state")
    if action == "reset_offsets":
        specs = [s for s in _RESET_SPECS if getattr(args, s) not in (None, False)]
        if len(specs) != 1:
            raise CommandError(
                "Option [reset-offsets] takes exactly one of these options: to-datetime, "
                "to-earliest, to-latest, to-current, to-offset, shift-by"
            )
        if bool(args.topic) == args.all_topics:
            raise CommandError(
                "Option [reset-offsets] takes exactly one of these options: topic, all-topics"
            )
        if args.dry_run and args.execute:
            raise CommandError("Option [reset-offsets] takes only one of these: dry-run, execute")
    return action


# --- --describe ------------------------------------------------------------------------------


def collect_assignments(
    group: str,
    description: ConsumerGroupDescription,
    committed: Mapping[TopicPartition, OffsetAndMetadata],
    log_end_offsets: Mapping[TopicPartition, int],
) -> list[PartitionAssignmentState]:
    """Kafka's rows: members' partitions (busiest member first), then committed partitions
    no member holds."""
    rows: list[PartitionAssignmentState] = []
    assigned: set[tuple[str, int]] = set()
    members = sorted(description.members, key=lambda m: (-len(m.assignment), m.member_id))
    for member in members:
        for tp in sorted(member.assignment):
            assigned.add((tp.topic, tp.partition))
            offset = committed.get(tp)
            rows.append(
                PartitionAssignmentState(
                    group,
                    tp.topic,
                    tp.partition,
                    None if offset is None else offset.offset,
                    log_end_offsets.get(tp),
                    member.member_id,
                    member.host,
                    member.client_id,
                )
            )
    for tp in sorted(committed):
        if (tp.topic, tp.partition) in assigned:
            continue
        rows.append(
            PartitionAssignmentState(
                group,
                tp.topic,
                tp.partition,
                committed[tp].offset,
                log_end_offsets.get(tp),
                None,
                None,
                None,
            )
        )
    return rows


def _cell(value: object) -> str:
    return MISSING if value is None else str(value)


def format_describe(rows: Sequence[PartitionAssignmentState]) -> list[str]:
    """Kafka's --describe table: header and rows (the caller prints the blank line before)."""
    group_len = max([15, *(len(r.group) for r in rows)])
    topic_len = max([15, *(len(_cell(r.topic)) for r in rows)])
    consumer_len = max([15, *(len(_cell(r.consumer_id)) for r in rows)])
    host_len = max([15, *(len(_cell(r.host)) for r in rows)])

    def line(*cells: object) -> str:
        g, t, p, o, leo, lag, cid, host, client = (_cell(c) for c in cells)
        return (
            f"{g:<{group_len}} {t:<{topic_len}} {p:<10} {o:<15} {leo:<15} {lag:<15} "
            f"{cid:<{consumer_len}} {host:<{host_len}} {client}"
        )

    lines = [
        line(
            "GROUP",
            "TOPIC",
            "PARTITION",
            "CURRENT-OFFSET",
            "LOG-END-OFFSET",
            "LAG",
            "CONSUMER-ID",
            "HOST",
            "CLIENT-ID",
        )
    ]
    for r in rows:
        lines.append(
            line(
                r.group,
                r.topic,
                r.partition,
                r.offset,
                r.log_end_offset,
                r.lag,
                r.consumer_id,
                r.host,
                r.client_id,
            )
        )
    return lines


def format_members(description: ConsumerGroupDescription) -> list[str]:
    """Kafka's --describe --members table."""
    members = description.members
    group_len = max(15, len(description.group_id))
    consumer_len = max([15, *(len(m.member_id) for m in members)])
    host_len = max([15, *(len(m.host) for m in members)])
    client_len = max([15, *(len(m.client_id) for m in members)])

    def line(*cells: object) -> str:
        g, cid, host, client, count = (str(c) for c in cells)
        return (
            f"{g:<{group_len}} {cid:<{consumer_len}} {host:<{host_len}} "
            f"{client:<{client_len}} {count:<15} "
        )

    lines = [line("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS")]
    for m in members:
        lines.append(
            line(description.group_id, m.member_id, m.host, m.client_id, len(m.assignment))
        )
    return lines


def format_state(description: ConsumerGroupDescription) -> list[str]:
    """Kafka's --describe --state table."""
    c = description.coordinator
    coordinator = f"{c.host}:{c.port}  ({c.id})"
    group_len = max(15, len(description.group_id))
    coordinator_len = max(25, len(coordinator))

    def line(*cells: object) -> str:
        g, coord, strategy, state, members = (str(x) for x in cells)
        return f"{g:<{group_len}} {coord:<{coordinator_len}} {strategy:<25} {state:<20} {members}"

    return [
        line("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"),
        line(
            description.group_id,
            coordinator,
            description.partition_assignor,
            description.state,
            len(description.members),
        ),
    ]


def _describe(args: argparse.Namespace, admin: GroupAdmin, out: TextIO, err: TextIO) -> int:
    status = 0
    group_ids = _groups(args, admin)
    descriptions = admin.describe_groups(group_ids)
    for group in group_ids:
        description = descriptions[group]
        if description.state == "Dead":
            print(f"Error: Consumer group '{group}' does not exist.", file=err)
            status = 1
            continue
        if description.state == "Empty" and not args.state:
            print(f"\nConsumer group '{group}' has no active members.", file=err)
        elif description.state in ("PreparingRebalance", "CompletingRebalance"):
            print(f"\nWarning: Consumer group '{group}' is rebalancing.", file=err)
        if args.state:
            lines = format_state(description)
        elif args.members:
            if not description.members:
                continue
            lines = format_members(description)
        else:
            committed = admin.list_consumer_group_offsets(group)
            partitions = set(committed) | {tp for m in description.members for tp in m.assignment}
            ends = admin.list_offsets(dict.fromkeys(partitions, LATEST)) if partitions else {}
            rows = collect_assignments(
                group, description, committed, {tp: r.offset for tp, r in ends.items()}
            )
            if not rows:
                continue
            lines = format_describe(rows)
        print("", file=out)
        for line in lines:
            print(line, file=out)
    return status


# --- --reset-offsets -------------------------------------------------------------------------


def _reset_partitions(
    args: argparse.Namespace, admin: GroupAdmin, group: str
) -> list[TopicPartition]:
    from minikafka.proto.common import TopicPartition

    if args.all_topics:
        return sorted(admin.list_consumer_group_offsets(group))
    partitions: list[TopicPartition] = []
    whole_topics: list[str] = []
    for item in args.topic:
        topic, colon, numbers = item.partition(":")
        if colon:
            try:
                partitions.extend(TopicPartition(topic, int(n)) for n in numbers.split(","))
            except ValueError:
                raise CommandError(f"Invalid partitions in --topic {item}") from None
        else:
            whole_topics.append(topic)
    if whole_topics:
        for name, description in admin.describe_topics(whole_topics).items():
            partitions.extend(TopicPartition(name, p.partition) for p in description.partitions)
    return sorted(set(partitions))


def compute_reset(
    args: argparse.Namespace,
    admin: GroupAdmin,
    group: str,
    partitions: Sequence[TopicPartition],
) -> dict[TopicPartition, int]:
    """The new offset of each partition for the chosen reset specification."""
    if not partitions:
        return {}

    def offsets(spec: int) -> dict[TopicPartition, int]:
        return {
            tp: r.offset for tp, r in admin.list_offsets(dict.fromkeys(partitions, spec)).items()
        }

    if args.to_earliest:
        return offsets(EARLIEST)
    if args.to_latest:
        return offsets(LATEST)
    if args.to_datetime is not None:
        found = admin.list_offsets(dict.fromkeys(partitions, args.to_datetime))
        missing = [tp for tp, r in found.items() if r.offset < 0]
        ends = offsets(LATEST) if missing else {}
        return {tp: ends[tp] if r.offset < 0 else r.offset for tp, r in found.items()}
    committed = admin.list_consumer_group_offsets(group, partitions)
    if args.to_current:
        # Kafka keeps partitions without a committed offset where a new consumer would start
        ends = offsets(LATEST)
        return {tp: committed[tp].offset if tp in committed else ends[tp] for tp in partitions}
    earliest, latest = offsets(EARLIEST), offsets(LATEST)
    targets: dict[TopicPartition, int] = {}
    for tp in partitions:
        if args.to_offset is not None:
            target = args.to_offset
        else:
            if tp not in committed:
                raise CommandError(
                    f"Cannot shift offset for partition {tp.topic}-{tp.partition} since there "
                    "is no current committed offset"
                )
            target = committed[tp].offset + args.shift_by
        targets[tp] = min(max(target, earliest[tp]), latest[tp])
    return targets


def format_reset(group: str, offsets: Mapping[TopicPartition, int]) -> list[str]:
    """Kafka's reset table (header and rows; the caller prints the blank line before)."""

    def line(*cells: object) -> str:
        g, t, p, o = (str(c) for c in cells)
        return f"{g:<30} {t:<30} {p:<10} {o:<15}"

    lines = [line("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")]
    lines += [line(group, tp.topic, tp.partition, o) for tp, o in sorted(offsets.items())]
    return lines


def _reset(args: argparse.Namespace, admin: GroupAdmin, out: TextIO, err: TextIO) -> int:
    if not args.dry_run and not args.execute:
        print(_NO_ACTION_WARNING, file=out)
    group_ids = _groups(args, admin)
    descriptions = admin.describe_groups(group_ids)
    status = 0
    for group in group_ids:
        state = descriptions[group].state
        if state not in ("Empty", "Dead"):
            print(
                f"Error: Assignments can only be reset if the group '{group}' is inactive, "
                f"but the current state is {state}.",
                file=err,
            )
            status = 1
            continue
        offsets = compute_reset(args, admin, group, _reset_partitions(args, admin, group))
        if args.execute and offsets:
            results = admin.alter_consumer_group_offsets(group, offsets)
            failed = [(tp, e) for tp, e in results.items() if e is not None]
            if failed:
                tp, error = failed[0]
                raise CommandError(
                    f"Failed to commit the new offset of {tp.topic}-{tp.partition}: {error}"
                )
        print("", file=out)
        for line in format_reset(group, offsets):
            print(line, file=out)
    return status


# --- --list, --delete and the entry point ----------------------------------------------------


def _delete(args: argparse.Namespace, admin: GroupAdmin, out: TextIO, err: TextIO) -> int:
    group_ids = _groups(args, admin)
    results = admin.delete_groups(group_ids)
    failed = {g: e for g, e in results.items() if e is not None}
    succeeded = [g for g in group_ids if g in results and g not in failed]
    if succeeded:
        names = ", ".join(f"'{g}'" for g in succeeded)
        print(f"Deletion of requested consumer groups ({names}) was successful.", file=out)
    if failed:
        print("Error: Deletion of some consumer groups failed:", file=err)
        for group, error in failed.items():
            print(f"* Group '{group}' could not be deleted due to: {_reason(error)}", file=err)
        return 1
    return 0


def _groups(args: argparse.Namespace, admin: GroupAdmin) -> list[str]:
    """The groups the command is about: --group ones, or every group with --all-groups."""
    if args.all_groups:
        return [listing.group_id for listing in admin.list_groups()]
    return list(dict.fromkeys(args.group))


def format_list(listings: Sequence[ConsumerGroupListing], *, with_state: bool) -> list[str]:
    """--list: group ids, one a line; with --state Kafka's GROUP STATE table."""
    if not with_state:
        return [listing.group_id for listing in listings]
    width = max([15, *(len(listing.group_id) for listing in listings)])
    lines = [f"{'GROUP':<{width}} STATE"]
    lines += [f"{listing.group_id:<{width}} {listing.state}" for listing in listings]
    return lines


def _reason(error: KafkaError) -> str:
    if error.code == ErrorCode.NON_EMPTY_GROUP:
        return f"{error} (the group has active members)"
    return str(error)


def execute(args: argparse.Namespace, admin: GroupAdmin, out: TextIO, err: TextIO) -> int:
    try:
        action = check_args(args)
        if action == "list":
            for line in format_list(admin.list_groups(), with_state=args.state):
                print(line, file=out)
            return 0
        if action == "describe":
            return _describe(args, admin, out, err)
        if action == "reset_offsets":
            return _reset(args, admin, out, err)
        return _delete(args, admin, out, err)
    except (CommandError, KafkaError) as exc:
        print(f"Error: {exc}", file=err)
        return 1


def run(args: argparse.Namespace) -> int:
    return run_admin_tool(args, execute, error_line=lambda exc: f"Error: {exc}")
