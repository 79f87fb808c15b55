"""``minikafka transactions``: Kafka's kafka-transactions.sh, with its subcommands and columns.

    minikafka transactions --bootstrap-server H:P list [--duration-filter MS]
    minikafka transactions --bootstrap-server H:P describe --transactional-id ID
    minikafka transactions --bootstrap-server H:P describe-producers --topic T --partition P
    minikafka transactions --bootstrap-server H:P abort --topic T --partition P
        (--start-offset O | --producer-id I --producer-epoch E --coordinator-epoch C)
    minikafka transactions --bootstrap-server H:P find-hanging (--topic T [--partition P] |
        --broker-id B) [--max-transaction-timeout MINUTES]

Tables are printed as Kafka's ToolsUtils.prettyPrintTable does: each column padded to its widest
cell, columns separated by a tab, the header row first. ``abort`` prints nothing when it
succeeds. A failure is one line on stderr, in Kafka's words (``Failed to describe transaction
state of transactional-id `x`: ...``), and exit status 1; so are options that do not fit
together.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from minikafka.client.cli._admin_tool import (
    add_command_config,
    kafka_error_message,
    run_admin_tool,
)
from minikafka.proto.errors import ErrorCode, KafkaError

if TYPE_CHECKING:  # client.admin loads grpc: only when the command runs (see minikafka.cli)
    from minikafka.client.admin import AdminClient, ProducerState
    from minikafka.proto.common import TopicPartition

__all__ = ["add_arguments", "execute", "pretty_table", "run"]

LIST_HEADERS = ("TransactionalId", "Coordinator", "ProducerId", "TransactionState")
DESCRIBE_HEADERS = (
    "CoordinatorId",
    "TransactionalId",
    "ProducerId",
    "ProducerEpoch",
    "TransactionState",
    "TransactionTimeoutMs",
    "CurrentTransactionStartTimeMs",
    "TransactionDurationMs",
    "TopicPartitions",
)
PRODUCERS_HEADERS = (
    "ProducerId",
    "ProducerEpoch",
    "LatestCoordinatorEpoch",
    "LastSequence",
    "LastTimestamp",
    "CurrentTransactionStartOffset",
)
HANGING_HEADERS = (
    "Topic",
    "Partition",
    "ProducerId",
    "ProducerEpoch",
    "CoordinatorEpoch",
    "StartOffset",
    "LastTimestamp",
    "Duration(min)",
)


class CommandError(Exception):
    """One line for stderr; exit status 1."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--bootstrap-server", required=True, metavar="HOST:PORT", help="brokers to connect to"
    )
    add_command_config(parser)
    sub = parser.add_subparsers(dest="action", required=True, metavar="COMMAND")
    listing = sub.add_parser("list", help="list transactions")
    listing.add_argument(
        "--duration-filter",
        type=int,
        default=-1,
        metavar="MS",
        help="only transactions running longer than this (ms); < 0: all",
    )
    describe = sub.add_parser("describe", help="describe the state of an active transactional-id")
    describe.add_argument("--transactional-id", required=True, help="transactional id")
    producers = sub.add_parser(
        "describe-producers", help="describe the states of active producers for a topic partition"
    )
    producers.add_argument("--topic", required=True, help="topic name")
    producers.add_argument("--partition", required=True, type=int, help="partition number")
    abort = sub.add_parser(
        "abort", help="abort a hanging transaction (requires administrative privileges)"
    )
    abort.add_argument("--topic", required=True, help="topic name")
    abort.add_argument("--partition", required=True, type=int, help="partition number")
    abort.add_argument("--start-offset", type=int, help="start offset of the transaction to abort")
    abort.add_argument("--producer-id", type=int, help="producer id")
    abort.add_argument("--producer-epoch", type=int, help="producer epoch")
    abort.add_argument("--coordinator-epoch", type=int, help="coordinator epoch")
    hanging = sub.add_parser("find-hanging", help="find hanging transactions")
    hanging.add_argument("--broker-id", type=int, help="broker id to search for hanging ones")
    hanging.add_argument(
        "--max-transaction-timeout",
        type=int,
        default=15,
        metavar="MINUTES",
        help="maximum transaction timeout in minutes to limit the scope of the search (15)",
    )
    hanging.add_argument("--topic", help="topic name to limit search to")
    hanging.add_argument("--partition", type=int, help="partition number (needs --topic)")


def pretty_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Kafka's prettyPrintTable: cells padded to their column's width, tab-separated."""
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]
    return [
        "\t".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [tuple(headers), *rows]
    ]


def _none(value: int | None) -> str:
    return "None" if value is None else str(value)


def _failed(what: str, error: KafkaError) -> CommandError:
    return CommandError(
        f"{what}: {kafka_error_message(error)}. Enable debug logging for additional detail."
    )


def _tp(topic: str, partition: int) -> TopicPartition:
    from minikafka.proto.common import TopicPartition

    return TopicPartition(topic, partition)


def _list(args: argparse.Namespace, admin: AdminClient, out: TextIO) -> None:
    try:
        by_broker = admin.list_transactions(duration_filter_ms=args.duration_filter)
    except KafkaError as exc:
        raise _failed("Failed to list transactions", exc) from None
    rows = [
        (listing.transactional_id, str(broker), str(listing.producer_id), listing.state)
        for broker, listings in by_broker.items()
        for listing in listings
    ]
    for line in pretty_table(LIST_HEADERS, rows):
        print(line, file=out)


def _describe(args: argparse.Namespace, admin: AdminClient, out: TextIO) -> None:
    tid = args.transactional_id
    try:
        found = admin.describe_transactions([tid])[tid]
    except KafkaError as exc:
        raise _failed(
            f"Failed to describe transaction state of transactional-id `{tid}`", exc
        ) from None
    start = found.transaction_start_time_ms
    row = (
        str(found.coordinator_id),
        tid,
        str(found.producer_id),
        str(found.producer_epoch),
        found.state,
        str(found.transaction_timeout_ms),
        _none(start),
        "None" if start is None else str(int(time.time() * 1000) - start),
        ",".join(str(tp) for tp in found.topic_partitions),
    )
    for line in pretty_table(DESCRIBE_HEADERS, [row]):
        print(line, file=out)


def _producers(admin: AdminClient, tp: TopicPartition, what: str) -> list[ProducerState]:
    try:
        return admin.describe_producers([tp])[tp]
    except KafkaError as exc:
        raise _failed(f"{what} {tp}", exc) from None


def _describe_producers(args: argparse.Namespace, admin: AdminClient, out: TextIO) -> None:
    tp = _tp(args.topic, args.partition)
    states = _producers(admin, tp, "Failed to describe producers for partition")
    rows = [
        (
            str(s.producer_id),
            str(s.producer_epoch),
            str(-1 if s.coordinator_epoch is None else s.coordinator_epoch),
            str(s.last_sequence),
            str(s.last_timestamp),
            _none(s.current_transaction_start_offset),
        )
        for s in states
    ]
    for line in pretty_table(PRODUCERS_HEADERS, rows):
        print(line, file=out)


def _abort(args: argparse.Namespace, admin: AdminClient) -> None:
    from minikafka.client.admin import AbortTransactionSpec

    tp = _tp(args.topic, args.partition)
    if args.start_offset is None and args.producer_id is None:
        raise CommandError(
            "The transaction to abort must be identified either with --start-offset (for "
            "brokers on 3.0 or above) or with --producer-id, --producer-epoch, and "
            "--coordinator-epoch (for older brokers)"
        )
    if args.start_offset is None:
        if args.producer_epoch is None:
            raise CommandError("Missing required argument --producer-epoch")
        if args.coordinator_epoch is None:
            raise CommandError("Missing required argument --coordinator-epoch")
        spec = AbortTransactionSpec(
            tp, args.producer_id, args.producer_epoch, max(args.coordinator_epoch, 0)
        )
    else:
        states = _producers(admin, tp, "Failed to validate producer state for partition")
        found = [s for s in states if s.current_transaction_start_offset == args.start_offset]
        if not found:
            raise CommandError(
                f"Could not find any open transactions starting at offset {args.start_offset} "
                f"on partition {tp}"
            )
        state = found[0]
        spec = AbortTransactionSpec(
            tp, state.producer_id, state.producer_epoch, state.coordinator_epoch or 0
        )
    try:
        admin.abort_transaction(spec)
    except KafkaError as exc:
        raise _failed(
            f"Failed to abort transaction AbortTransactionSpec(topicPartition={tp}, "
            f"producerId={spec.producer_id}, producerEpoch={spec.producer_epoch}, "
            f"coordinatorEpoch={spec.coordinator_epoch})",
            exc,
        ) from None


def _find_hanging(args: argparse.Namespace, admin: AdminClient, out: TextIO) -> None:
    if args.topic is None and args.broker_id is None:
        raise CommandError(
            "The `find-hanging` command requires either --topic or --broker-id to limit the "
            "scope of the search"
        )
    if args.partition is not None and args.topic is None:
        raise CommandError("The --partition argument requires --topic to be provided")
    max_timeout_ms = args.max_transaction_timeout * 60_000
    try:
        if args.topic is not None and args.partition is not None:
            partitions = [_tp(args.topic, args.partition)]
        else:
            topics = admin.describe_topics([args.topic] if args.topic else None)
            partitions = [
                _tp(name, p.partition)
                for name, description in sorted(topics.items())
                for p in description.partitions
                if args.broker_id is None or args.broker_id in p.replicas
            ]
        now = int(time.time() * 1000)
        open_txns = [
            (tp, s)
            for tp, states in admin.describe_producers(partitions).items()
            for s in states
            if s.current_transaction_start_offset is not None
            and now - s.last_timestamp > max_timeout_ms
        ]
        hanging = []
        if open_txns:
            producer_ids = sorted({s.producer_id for _, s in open_txns})
            listed = admin.list_transactions(producer_ids=producer_ids)
            by_pid = {t.producer_id: t.transactional_id for ts in listed.values() for t in ts}
            for tp, state in open_txns:
                tid = by_pid.get(state.producer_id)
                if tid is None:
                    hanging.append((tp, state))
                    continue
                try:
                    description = admin.describe_transactions([tid])[tid]
                except KafkaError as exc:
                    if exc.code != ErrorCode.TRANSACTIONAL_ID_NOT_FOUND:
                        raise
                    hanging.append((tp, state))
                    continue
                if tp not in description.topic_partitions:
                    hanging.append((tp, state))
    except KafkaError as exc:
        raise _failed("Failed to find hanging transactions", exc) from None
    rows = [
        (
            tp.topic,
            str(tp.partition),
            str(s.producer_id),
            str(s.producer_epoch),
            str(-1 if s.coordinator_epoch is None else s.coordinator_epoch),
            _none(s.current_transaction_start_offset),
            str(s.last_timestamp),
            str((now - s.last_timestamp) // 60_000),
        )
        for tp, s in hanging
    ]
    for line in pretty_table(HANGING_HEADERS, rows):
        print(line, file=out)


def execute(args: argparse.Namespace, admin: AdminClient, out: TextIO, err: TextIO) -> int:
    try:
        if args.action == "list":
            _list(args, admin, out)
        elif args.action == "describe":
            _describe(args, admin, out)
        elif args.action == "describe-producers":
            _describe_producers(args, admin, out)
        elif args.action == "abort":
            _abort(args, admin)
        else:
            _find_hanging(args, admin, out)
    except CommandError as exc:
        print(str(exc), file=err)
        return 1
    except KafkaError as exc:
        print(f"Error: {exc}", file=err)
        return 1
    return 0


def run(args: argparse.Namespace) -> int:
    return run_admin_tool(args, execute, error_line=lambda exc: f"Error: {exc}")
