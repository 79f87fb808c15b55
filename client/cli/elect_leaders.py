"""``minikafka elect-leaders``: Kafka's kafka-leader-election.sh, with its options and output.

    minikafka elect-leaders --bootstrap-server H:P --election-type preferred \\
        (--topic T --partition P | --all-topic-partitions | --path-to-json-file F)

The JSON file is Kafka's: ``{"partitions": [{"topic": "T", "partition": 0}, ...]}``. Output, as
Kafka prints it::

    Successfully completed leader election (PREFERRED) for partitions T-0, T-1
    Valid replica already elected for partitions T-2
    Error completing leader election (PREFERRED) for partition: T-3: <error>

Exit status 0 when every partition has its leader; 1 when some could not be elected (with
``Error while making request: N replica(s) could not be elected`` on stderr), when the request
failed, or when the options do not fit together.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TextIO

from minikafka.client.cli._admin_tool import add_command_config, run_admin_tool
from minikafka.proto.errors import ErrorCode, KafkaError

if TYPE_CHECKING:  # client.admin loads grpc: only when the command runs (see minikafka.cli)
    from minikafka.client.admin import ElectionType
    from minikafka.proto.common import TopicPartition

__all__ = ["add_arguments", "execute", "format_results", "parse_partitions_file", "run"]


class ElectionAdmin(Protocol):
    def elect_leaders(
        self, election_type: ElectionType, partitions: Iterable[TopicPartition] | None = ...
    ) -> dict[TopicPartition, KafkaError | None]: ...


class UsageError(Exception):
    pass


def _election_type(text: str) -> ElectionType:
    from minikafka.client.admin import ElectionType

    try:
        return ElectionType[text.strip().upper()]
    except KeyError:
        raise argparse.ArgumentTypeError(
            f"invalid election type {text!r}: expected preferred or unclean"
        ) from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--bootstrap-server", required=True, metavar="HOST:PORT", help="brokers to connect to"
    )
    add_command_config(parser)
    parser.add_argument(
        "--election-type",
        required=True,
        type=_election_type,
        metavar="preferred|unclean",
        help="preferred: move leadership back to the first assigned replica; unclean: elect "
        "an out-of-sync replica when no in-sync one is alive",
    )
    parser.add_argument("--topic", help="topic of the partition to elect (needs --partition)")
    parser.add_argument("--partition", type=int, help="partition to elect (needs --topic)")
    parser.add_argument(
        "--all-topic-partitions", action="store_true", help="every partition of the cluster"
    )
    parser.add_argument(
        "--path-to-json-file", type=Path, help='{"partitions": [{"topic": T, "partition": P}]}'
    )


def parse_partitions_file(text: str) -> list[TopicPartition]:
    """Kafka's election JSON; duplicates are an error, as in Kafka."""
    from minikafka.proto.common import TopicPartition

    try:
        content = json.loads(text)
        items = content["partitions"]
        partitions = [TopicPartition(str(i["topic"]), int(i["partition"])) for i in items]
    except (ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"invalid partitions file: {exc}") from None
    duplicates = sorted({str(tp) for tp in partitions if partitions.count(tp) > 1})
    if duplicates:
        raise UsageError(f"Replica election data contains duplicate partitions: {duplicates}")
    return partitions


def selected_partitions(args: argparse.Namespace) -> list[TopicPartition] | None:
    """The partitions the options name; None = all. UsageError when they do not fit together."""
    from minikafka.proto.common import TopicPartition

    given = (args.topic is not None, args.all_topic_partitions, args.path_to_json_file is not None)
    if sum(map(bool, given)) != 1:
        raise UsageError(
            "One and only one of the following options is required: "
            "--topic, --all-topic-partitions or --path-to-json-file"
        )
    if args.partition is not None and args.topic is None:
        raise UsageError("Missing required option(s) [topic]")
    if args.topic is not None:
        if args.partition is None:
            raise UsageError("Missing required option(s) [partition]")
        return [TopicPartition(args.topic, args.partition)]
    if args.all_topic_partitions:
        return None
    try:
        text = Path(args.path_to_json_file).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read {args.path_to_json_file}: {exc.strerror}") from None
    return parse_partitions_file(text)


def format_results(
    election_type: ElectionType, results: Mapping[TopicPartition, KafkaError | None]
) -> tuple[list[str], int]:
    """Kafka's lines for the results, and how many partitions failed."""
    succeeded = [str(tp) for tp, error in results.items() if error is None]
    noop = [
        str(tp)
        for tp, error in results.items()
        if error is not None and error.code == ErrorCode.ELECTION_NOT_NEEDED
    ]
    failed = [
        (tp, error)
        for tp, error in results.items()
        if error is not None and error.code != ErrorCode.ELECTION_NOT_NEEDED
    ]
    lines = []
    if succeeded:
        lines.append(
            f"Successfully completed leader election ({election_type}) for partitions "
            + ", ".join(succeeded)
        )
    if noop:
        lines.append("Valid replica already elected for partitions " + ", ".join(noop))
    for tp, error in failed:
        lines.append(
            f"Error completing leader election ({election_type}) for partition: {tp}: {error}"
        )
    return lines, len(failed)


def execute(args: argparse.Namespace, admin: ElectionAdmin, out: TextIO, err: TextIO) -> int:
    try:
        partitions = selected_partitions(args)
    except UsageError as exc:
        print(exc, file=err)
        return 1
    try:
        results = admin.elect_leaders(args.election_type, partitions)
    except KafkaError as exc:
        print(f"Error while making request: {exc}", file=err)
        return 1
    lines, failures = format_results(args.election_type, results)
    for line in lines:
        print(line, file=out)
    if failures:
        print(f"Error while making request: {failures} replica(s) could not be elected", file=err)
        return 1
    return 0


def run(args: argparse.Namespace) -> int:
    return run_admin_tool(
        args, execute, error_line=lambda exc: f"Error while making request: {exc}"
    )
