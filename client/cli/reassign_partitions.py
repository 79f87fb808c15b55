"""``minikafka reassign-partitions``: Kafka's kafka-reassign-partitions.sh, its options, JSON and
messages, over the AdminClient's AlterPartitionReassignments / ListPartitionReassignments.

    minikafka reassign-partitions --bootstrap-server H:P --generate \\
        --topics-to-move-json-file topics.json --broker-list 1,2,3 [--disable-rack-aware]
    minikafka reassign-partitions --bootstrap-server H:P --execute \\
        --reassignment-json-file plan.json [--throttle B/s] [--replica-alter-log-dirs-throttle B/s]
        [--additional]
    minikafka reassign-partitions --bootstrap-server H:P --verify \\
        --reassignment-json-file plan.json [--preserve-throttles]
    minikafka reassign-partitions --bootstrap-server H:P --cancel \\
        --reassignment-json-file plan.json [--preserve-throttles]
    minikafka reassign-partitions --bootstrap-server H:P --list

Kafka's files: topics to move ``{"version":1,"topics":[{"topic":"foo"}]}``; a reassignment
``{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2,3],
"log_dirs":["any","any","any"]}]}`` (``log_dirs`` optional; a dir other than ``any`` moves
that replica into it through AlterReplicaLogDirs once the reassignment started, as Kafka's
tool does; --verify reports partitions only). --generate proposes with the
controller's own assignment (proto/replica_assignment.py: rack-aware when every broker has a
rack) and changes nothing; --execute prints the current assignment (to keep for a rollback)
and starts the moves; --verify tells which are done and, once all are, clears the throttles;
--cancel reverts the moves under way; --list shows them.

Throttles (--throttle): as Kafka's tool, ``leader.replication.throttled.rate`` and
``follower.replication.throttled.rate`` on every broker of the moves, and the topic keys
``leader.replication.throttled.replicas`` (the current replicas, ``partition:broker``) and
``follower.replication.throttled.replicas`` (the replicas being added), through
IncrementalAlterConfigs; the brokers apply them at once (KIP-73: a replica being added copies at
most that rate). A broker or topic that refuses them (an authorizer's refusal, say) gets the
moves without its throttle, and a warning on stderr names it.

Bad input (malformed JSON, duplicates, an unknown broker, a missing partition, an option
that does not fit) is one line on stderr and exit status 1; nothing is changed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from minikafka.client.cli._admin_tool import (
    add_command_config,
    kafka_error_message,
    run_admin_tool,
)
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import KafkaError

if TYPE_CHECKING:  # client.admin loads grpc: only when the command runs (see minikafka.cli)
    from minikafka.client.admin import AdminClient

__all__ = [
    "add_arguments",
    "execute",
    "format_reassignment_json",
    "parse_reassignment_json",
    "parse_topics_to_move_json",
    "run",
]

ANY_LOG_DIR = "any"
LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
LOG_DIR_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
_ACTIONS = ("generate", "execute", "verify", "cancel", "list")


class UsageError(Exception):
    """One line for stderr; exit status 1."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--bootstrap-server", required=True, metavar="HOST:PORT", help="brokers to connect to"
    )
    add_command_config(parser)
    actions = parser.add_argument_group("actions (exactly one)")
    actions.add_argument("--generate", action="store_true", help="propose a reassignment")
    actions.add_argument("--execute", action="store_true", help="start the reassignment")
    actions.add_argument("--verify", action="store_true", help="check it (clears throttles)")
    actions.add_argument("--cancel", action="store_true", help="cancel the moves under way")
    actions.add_argument("--list", action="store_true", help="list the moves under way")
    parser.add_argument("--topics-to-move-json-file", type=Path, metavar="FILE")
    parser.add_argument("--broker-list", metavar="1,2,3", help="brokers to move the topics to")
    parser.add_argument("--reassignment-json-file", type=Path, metavar="FILE")
    parser.add_argument("--disable-rack-aware", action="store_true")
    parser.add_argument("--throttle", type=int, default=-1, metavar="B/s")
    parser.add_argument("--replica-alter-log-dirs-throttle", type=int, default=-1, metavar="B/s")
    parser.add_argument(
        "--additional", action="store_true", help="execute while other moves are under way"
    )
    parser.add_argument("--preserve-throttles", action="store_true")
    parser.add_argument("--timeout", type=int, default=10_000, metavar="MS")


# --- Kafka's JSON ---------------------------------------------------------------------------


def _load(text: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"Unable to parse the {what}: {exc}") from None
    if not isinstance(value, dict):
        raise UsageError(f"Unable to parse the {what}: not a JSON object")
    version = value.get("version", 1)
    if version != 1:
        raise UsageError(f"Not supported version field value {version}")
    return value


def parse_topics_to_move_json(text: str) -> list[str]:
    """``{"version":1,"topics":[{"topic":"foo"}]}`` -> the topic names."""
    value = _load(text, "topics to move json file")
    items = value.get("topics")
    if not isinstance(items, list) or not all(
        isinstance(i, dict) and isinstance(i.get("topic"), str) for i in items
    ):
        raise UsageError('Unable to parse the topics to move json file: no "topics" list')
    topics = [str(i["topic"]) for i in items]
    duplicates = sorted({t for t in topics if topics.count(t) > 1})
    if duplicates:
        raise UsageError(
            f"List of topics to reassign contains duplicate entries: {','.join(duplicates)}"
        )
    return topics


def parse_reassignment_json(text: str) -> dict[TopicPartition, list[int]]:
    """Kafka's reassignment JSON -> target replicas per partition, checked as its tool does."""
    value = _load(text, "reassignment json file")
    items = value.get("partitions")
    if not isinstance(items, list):
        raise UsageError('Unable to parse the reassignment json file: no "partitions" list')
    parsed: list[tuple[TopicPartition, list[int]]] = []
    for item in items:
        try:
            tp = TopicPartition(str(item["topic"]), _int(item["partition"]))
            replicas = [_int(r) for r in item["replicas"]]
        except (KeyError, TypeError, ValueError):
            raise UsageError(
                "Unable to parse the reassignment json file: each partition needs "
                '"topic", "partition" and "replicas"'
            ) from None
        log_dirs = item.get("log_dirs", [ANY_LOG_DIR] * len(replicas))
        if not isinstance(log_dirs, list) or len(log_dirs) != len(replicas):
            raise UsageError(
                f"Size of replicas list {replicas} is different from size of log dirs list "
                f"{log_dirs} for partition {tp}"
            )
        if not all(isinstance(d, str) for d in log_dirs):
            raise UsageError(f"Unable to parse the reassignment json file: log_dirs of {tp}")
        parsed.append((tp, replicas))
    if not parsed:
        raise UsageError("Partition reassignment list cannot be empty")
    seen = [tp for tp, _ in parsed]
    duplicates = sorted({tp for tp in seen if seen.count(tp) > 1})
    if duplicates:
        raise UsageError(
            "Partition reassignment contains duplicate topic partitions: "
            + ",".join(map(str, duplicates))
        )
    repeated = [
        f"{tp} contains multiple entries for "
        + ",".join(str(r) for r in sorted({r for r in rs if rs.count(r) > 1}))
        for tp, rs in parsed
        if len(set(rs)) != len(rs)
    ]
    if repeated:
        raise UsageError(
            "Partition replica lists may not contain duplicate entries: " + ". ".join(repeated)
        )
    return dict(parsed)


def parse_replica_log_dirs(text: str) -> dict[tuple[str, int, int], str]:
    """The ``log_dirs`` other than ``any`` of a reassignment JSON that
    ``parse_reassignment_json`` accepted: (topic, partition, broker) -> absolute path."""
    moves = {}
    for item in json.loads(text)["partitions"]:
        for broker, log_dir in zip(item["replicas"], item.get("log_dirs", ()), strict=False):
            if log_dir != ANY_LOG_DIR:
                moves[(str(item["topic"]), int(item["partition"]), int(broker))] = str(log_dir)
    return moves


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(value)
    return value


def format_reassignment_json(assignment: Mapping[TopicPartition, Sequence[int]]) -> str:
    """Kafka's reassignment JSON (compact, partitions sorted, ``log_dirs`` all ``any``)."""
    return json.dumps(
        {
            "version": 1,
            "partitions": [
                {
                    "topic": tp.topic,
                    "partition": tp.partition,
                    "replicas": list(assignment[tp]),
                    "log_dirs": [ANY_LOG_DIR] * len(assignment[tp]),
                }
                for tp in sorted(assignment)
            ],
        },
        separators=(",", ":"),
    )


def _parts(partitions: Iterable[TopicPartition]) -> str:
    return ",".join(str(tp) for tp in sorted(partitions))


def _plural(items: Sequence[object] | set[object]) -> str:
    return "" if len(items) == 1 else "s"


# --- the actions ----------------------------------------------------------------------------


def _read(path: Path | None, option: str) -> str:
    if path is None:
        raise UsageError(f'Missing required argument "[{option}]"')
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None


def _current_replicas(
    admin: AdminClient, partitions: Iterable[TopicPartition]
) -> dict[TopicPartition, tuple[int, ...]]:
    """The replicas each partition has now; UsageError naming one that does not exist."""
    from minikafka.proto.errors import UnknownTopicOrPartitionError

    partitions = sorted(partitions)
    topics = sorted({tp.topic for tp in partitions})
    described = {}
    for topic in topics:
        try:
            described.update(admin.describe_topics([topic]))
        except UnknownTopicOrPartitionError:
            missing = next(tp for tp in partitions if tp.topic == topic)
            raise UsageError(f"Unable to find partition: {missing}") from None
    current = {}
    for tp in partitions:
        info = next(
            (p for p in described[tp.topic].partitions if p.partition == tp.partition), None
        )
        if info is None:
            raise UsageError(f"Unable to find partition: {tp}")
        current[tp] = info.replicas
    return current


def _generate(args: argparse.Namespace, admin: AdminClient, out: TextIO) -> int:
    from minikafka.proto.errors import UnknownTopicOrPartitionError
    from minikafka.proto.replica_assignment import assign_replicas

    if args.broker_list is None:
        raise UsageError("--broker-list must be provided with --generate")
    topics = parse_topics_to_move_json(
        _read(args.topics_to_move_json_file, "topics-to-move-json-file")
    )
    try:
        brokers = [int(b) for b in args.broker_list.split(",") if b.strip()]
    except ValueError:
        raise UsageError(f"Invalid broker list: {args.broker_list}") from None
    duplicates = sorted({b for b in brokers if brokers.count(b) > 1})
    if duplicates:
        raise UsageError(
            f"Broker list contains duplicate entries: {','.join(map(str, duplicates))}"
        )
    nodes = {n.id: n for n in admin.describe_cluster().brokers}
    unknown = [b for b in brokers if b not in nodes]
    if unknown:
        raise UsageError(f"Unknown broker id {unknown[0]}")
    racks: dict[int, str] | None = None
    if not args.disable_rack_aware:
        with_rack = {b: nodes[b].rack for b in brokers if nodes[b].rack is not None}
        if with_rack and len(with_rack) < len(brokers):
            raise UsageError(
                "Not all brokers have rack information. Add --disable-rack-aware in command "
                "line to make replica assignment without rack information."
            )
        racks = {b: str(r) for b, r in with_rack.items()} or None
    current: dict[TopicPartition, tuple[int, ...]] = {}
    proposed: dict[TopicPartition, tuple[int, ...]] = {}
    for topic in topics:
        try:
            description = admin.describe_topics([topic])[topic]
        except UnknownTopicOrPartitionError:
            raise UsageError(f"Topic {topic} not found") from None
        for p in description.partitions:
            current[TopicPartition(topic, p.partition)] = p.replicas
        try:
            assigned = assign_replicas(
                len(description.partitions),
                description.replication_factor,
                brokers,
                racks=racks,
                rng=random.Random(),
            )
        except KafkaError as exc:
            raise UsageError(kafka_error_message(exc)) from None
        for partition, replicas in assigned.items():
            proposed[TopicPartition(topic, partition)] = replicas
    print("Current partition replica assignment", file=out)
    print(format_reassignment_json(current), file=out)
    print(file=out)
    print("Proposed partition reassignment configuration", file=out)
    print(format_reassignment_json(proposed), file=out)
    return 0


def _execute(args: argparse.Namespace, admin: AdminClient, out: TextIO, err: TextIO) -> int:
    text = _read(args.reassignment_json_file, "reassignment-json-file")
    proposed = parse_reassignment_json(text)
    log_dir_moves = parse_replica_log_dirs(text)
    current = _current_replicas(admin, proposed)
    known = {n.id for n in admin.describe_cluster().brokers}
    unknown = sorted({r for rs in proposed.values() for r in rs} - known)
    if unknown:
        raise UsageError(f"Unknown broker id {unknown[0]}")
    if admin.list_partition_reassignments() and not args.additional:
        raise UsageError(
            "Cannot execute because there is an existing partition assignment.  Use "
            "--additional to override this and create a new partition assignment in addition "
            "to the existing one. The --additional flag can also be used to change the "
            "throttle by resubmitting the current reassignment."
        )
    print("Current partition replica assignment", file=out)
    print(file=out)
    print(format_reassignment_json(current), file=out)
    print(file=out)
    print("Save this to use as the --reassignment-json-file option during rollback", file=out)
    if args.throttle >= 0 or args.replica_alter_log_dirs_throttle >= 0:
        print(
            "Warning: You must run --verify periodically, until the reassignment completes, "
            "to ensure the throttle is removed.",
            file=out,
        )
        if args.throttle >= 0:
            _set_throttles(admin, current, proposed, args.throttle, out, err)
        if args.replica_alter_log_dirs_throttle >= 0:
            brokers = sorted({r for rs in proposed.values() for r in rs})
            if _alter_brokers(
                admin, brokers, {LOG_DIR_RATE: str(args.replica_alter_log_dirs_throttle)}, err
            ):
                print(
                    "The replica-alter-dir throttle limit was set to "
                    f"{args.replica_alter_log_dirs_throttle} B/s",
                    file=out,
                )
    errors = admin.alter_partition_reassignments(proposed)
    failed = {tp: e for tp, e in errors.items() if e is not None}
    if failed:
        print("Error reassigning partition(s):", file=err)
        for tp, error in sorted(failed.items()):
            print(f"{tp}: {kafka_error_message(error)}", file=err)
        return 1
    print(
        f"Successfully started partition reassignment{_plural(list(proposed))} for "
        + _parts(proposed),
        file=out,
    )
    if log_dir_moves:
        return _move_log_dirs(admin, log_dir_moves, out, err)
    return 0


def _move_log_dirs(
    admin: AdminClient, moves: Mapping[tuple[str, int, int], str], out: TextIO, err: TextIO
) -> int:
    """AlterReplicaLogDirs for the ``log_dirs`` named. A replica its broker does not host yet
    (being added) answers REPLICA_NOT_AVAILABLE: the broker keeps the dir for it and creates
    the replica there, so its move counts as started."""
    from minikafka.client.admin import TopicPartitionReplica
    from minikafka.proto.errors import ErrorCode

    answers = admin.alter_replica_log_dirs(
        {TopicPartitionReplica(*replica): log_dir for replica, log_dir in moves.items()}
    )

    def name(r: TopicPartitionReplica) -> str:  # Kafka's TopicPartitionReplica.toString
        return f"{r.topic}-{r.partition}-{r.broker_id}"

    failed = {
        r: e
        for r, e in answers.items()
        if e is not None and e.code != ErrorCode.REPLICA_NOT_AVAILABLE
    }
    if failed:
        print(f"Error moving replica{_plural(list(failed))} between log dirs:", file=err)
        for r, e in sorted(failed.items()):
            print(f"{name(r)}: {kafka_error_message(e)}", file=err)
        return 1
    started = sorted(answers)
    print(
        f"Successfully started log directory move{_plural(started)} for: "
        + ",".join(name(r) for r in started),
        file=out,
    )
    return 0


def _verify(args: argparse.Namespace, admin: AdminClient, out: TextIO, err: TextIO) -> int:
    target = parse_reassignment_json(_read(args.reassignment_json_file, "reassignment-json-file"))
    ongoing = admin.list_partition_reassignments(target)
    current = _current_replicas(admin, [tp for tp in target if tp not in ongoing])
    print("Status of partition reassignment:", file=out)
    for tp in sorted(target):
        if tp in ongoing:
            print(f"Reassignment of partition {tp} is still in progress.", file=out)
        elif list(current[tp]) == list(target[tp]):
            print(f"Reassignment of partition {tp} is completed.", file=out)
        else:
            print(
                f"There is no active reassignment of partition {tp}, but replica set is "
                f"{','.join(map(str, current[tp]))} rather than "
                f"{','.join(map(str, target[tp]))}.",
                file=out,
            )
    if not ongoing and not args.preserve_throttles:
        _clear_throttles(admin, target, out, err)
    return 0


def _cancel(args: argparse.Namespace, admin: AdminClient, out: TextIO, err: TextIO) -> int:
    target = parse_reassignment_json(_read(args.reassignment_json_file, "reassignment-json-file"))
    ongoing = admin.list_partition_reassignments(target)
    if ongoing:
        errors = admin.alter_partition_reassignments({tp: None for tp in ongoing})
        failed = {tp: e for tp, e in errors.items() if e is not None}
        if failed:
            print(f"Error cancelling partition reassignment{_plural(list(failed))} for:", file=err)
            for tp, error in sorted(failed.items()):
                print(f"{tp}: {kafka_error_message(error)}", file=err)
            return 1
    if not args.preserve_throttles:
        _clear_throttles(admin, target, out, err)
    if ongoing:
        print(
            f"Successfully cancelled partition reassignment{_plural(list(ongoing))} for: "
            + _parts(ongoing),
            file=out,
        )
    else:
        print("None of the specified partition reassignments are active.", file=out)
    return 0


def _list(admin: AdminClient, out: TextIO) -> int:
    ongoing = admin.list_partition_reassignments()
    if not ongoing:
        print("No partition reassignments found.", file=out)
        return 0
    print("Current partition reassignments:", file=out)
    for tp, r in sorted(ongoing.items()):
        adding = f" adding: {','.join(map(str, r.adding_replicas))}." if r.adding_replicas else ""
        removing = (
            f" removing: {','.join(map(str, r.removing_replicas))}." if r.removing_replicas else ""
        )
        print(f"{tp}: replicas: {','.join(map(str, r.replicas))}.{adding}{removing}", file=out)
    return 0


# --- throttles ------------------------------------------------------------------------------


def _set_throttles(
    admin: AdminClient,
    current: Mapping[TopicPartition, Sequence[int]],
    proposed: Mapping[TopicPartition, Sequence[int]],
    rate: int,
    out: TextIO,
    err: TextIO,
) -> None:
    """Kafka's tool: the leaders' side throttles the current replicas of each moving
    partition, the followers' side the replicas being added; the rate on every broker."""
    leaders: dict[str, list[str]] = {}
    followers: dict[str, list[str]] = {}
    for tp, target in sorted(proposed.items()):
        old = list(current[tp])
        if list(target) == old:
            continue
        leaders.setdefault(tp.topic, []).extend(f"{tp.partition}:{b}" for b in old)
        followers.setdefault(tp.topic, []).extend(
            f"{tp.partition}:{b}" for b in target if b not in old
        )
    applied = True
    for topic in sorted(leaders):
        try:
            admin.incremental_alter_configs(
                topic,
                {
                    LEADER_REPLICAS: ",".join(leaders[topic]),
                    FOLLOWER_REPLICAS: ",".join(followers[topic]),
                },
            )
        except KafkaError as exc:
            applied = False
            print(f"Warning: the throttle was not applied to topic {topic}: {exc}", file=err)
    brokers = sorted({b for rs in (*current.values(), *proposed.values()) for b in rs})
    rates = {LEADER_RATE: str(rate), FOLLOWER_RATE: str(rate)}
    if _alter_brokers(admin, brokers, rates, err) and applied:
        print(f"The inter-broker throttle limit was set to {rate} B/s", file=out)


def _alter_brokers(
    admin: AdminClient, brokers: Iterable[int], configs: Mapping[str, str | None], err: TextIO
) -> bool:
    ok = True
    for broker in brokers:
        try:
            admin.alter_broker_configs(broker, configs)
        except KafkaError as exc:
            ok = False
            print(f"Warning: the throttle was not applied to broker {broker}: {exc}", file=err)
    return ok


def _clear_throttles(
    admin: AdminClient, target: Mapping[TopicPartition, Sequence[int]], out: TextIO, err: TextIO
) -> None:
    brokers = [n.id for n in admin.describe_cluster().brokers]
    topics = sorted({tp.topic for tp in target})
    print(
        f"Clearing broker-level throttles on broker{_plural(brokers)} "
        + ",".join(map(str, brokers)),
        file=out,
    )
    for broker in brokers:
        # Nothing set, or keys this cluster does not know: nothing to clear.
        with contextlib.suppress(KafkaError):
            admin.alter_broker_configs(
                broker, {LEADER_RATE: None, FOLLOWER_RATE: None, LOG_DIR_RATE: None}
            )
    print(f"Clearing topic-level throttles on topic{_plural(topics)} {','.join(topics)}", file=out)
    for topic in topics:
        with contextlib.suppress(KafkaError):
            admin.incremental_alter_configs(topic, {LEADER_REPLICAS: None, FOLLOWER_REPLICAS: None})


# --- the command ----------------------------------------------------------------------------


def check_args(args: argparse.Namespace) -> str | None:
    chosen = [a for a in _ACTIONS if getattr(args, a)]
    if len(chosen) != 1:
        return (
            "Command must include exactly one action: --generate, --execute, --verify, "
            "--cancel, or --list"
        )
    action = chosen[0]
    if action == "generate" and args.topics_to_move_json_file is None:
        return 'Missing required argument "[topics-to-move-json-file]"'
    if action in ("execute", "verify", "cancel") and args.reassignment_json_file is None:
        return 'Missing required argument "[reassignment-json-file]"'
    if action != "execute" and (args.throttle >= 0 or args.replica_alter_log_dirs_throttle >= 0):
        return 'Option "[throttle]" can\'t be used with action "[' + action + ']"'
    return None


def execute(args: argparse.Namespace, admin: AdminClient, out: TextIO, err: TextIO) -> int:
    try:
        if args.generate:
            return _generate(args, admin, out)
        if args.execute:
            return _execute(args, admin, out, err)
        if args.verify:
            return _verify(args, admin, out, err)
        if args.cancel:
            return _cancel(args, admin, out, err)
        return _list(admin, out)
    except UsageError as exc:
        print(exc, file=err)
        return 1
    except KafkaError as exc:
        print(f"Error: {kafka_error_message(exc)}", file=err)
        return 1


def run(args: argparse.Namespace) -> int:
    return run_admin_tool(
        args,
        execute,
        check_args=check_args,
        error_line=lambda exc: f"Error: {kafka_error_message(exc)}",
    )
