"""``minikafka log-dirs``: Kafka's kafka-log-dirs.sh, with its options and output.

    minikafka log-dirs --bootstrap-server H:P --describe [--broker-list 0,1] [--topic-list t,u]

Asks each broker (every live one without ``--broker-list``) for its log dirs (DescribeLogDirs)
and prints, as Kafka does::

    Querying brokers for log directories information
    Received log directory information from brokers 0,1,2
    {"version":1,"brokers":[{"broker":0,"logDirs":[{"logDir":"/data/a","error":null,
     "partitions":[{"partition":"t-0","size":1234,"offsetLag":0,"isFuture":false}]}]}]}

(the JSON on one line). ``--topic-list`` keeps the partitions of those topics (all by default).
An offline dir has ``"error":"org.apache.kafka.common.errors.KafkaStorageException"`` and no
partitions. Exit status 1, with one line on stderr, when an option is missing or malformed, a
broker of ``--broker-list`` does not exist, or a broker does not answer.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TextIO

from minikafka.client.cli._admin_tool import (
    add_command_config,
    kafka_error_message,
    run_admin_tool,
)
from minikafka.proto.errors import KafkaError

if TYPE_CHECKING:  # client.admin loads grpc: only when the command runs (see minikafka.cli)
    from minikafka.client.admin import AdminClient, LogDirDescription

__all__ = ["add_arguments", "exception_class_name", "format_json", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--bootstrap-server", required=True, metavar="HOST:PORT", help="brokers to connect to"
    )
    add_command_config(parser)
    parser.add_argument(
        "--describe", action="store_true", help="describe the log dirs of the brokers"
    )
    parser.add_argument(
        "--broker-list",
        metavar="0,1,2",
        help="the brokers to query (default: every live broker)",
    )
    parser.add_argument(
        "--topic-list",
        metavar="t1,t2",
        default="",
        help="the topics whose partitions to list (default: all)",
    )


def _broker_ids(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError(
            f"invalid --broker-list {text!r}: expected broker ids like 0,1,2"
        ) from None


def check_args(args: argparse.Namespace) -> str | None:
    if not args.describe:
        return "Command must include option '--describe'"
    try:
        _broker_ids(args.broker_list)
    except ValueError as exc:
        return str(exc)
    return None


def exception_class_name(error: KafkaError) -> str:
    """The Java exception class Kafka's tool prints for an error code (KAFKA_STORAGE_ERROR ->
    org.apache.kafka.common.errors.KafkaStorageException)."""
    name = "".join(part.capitalize() for part in error.code.name.split("_"))
    name = name[: -len("Error")] if name.endswith("Error") else name
    return f"org.apache.kafka.common.errors.{name}Exception"


def format_json(described: Mapping[int, Mapping[str, LogDirDescription]], topics: set[str]) -> str:
    """Kafka's LogDirsCommand JSON, version 1."""
    brokers: list[dict[str, Any]] = []
    for broker_id, log_dirs in described.items():
        entries = []
        for log_dir, description in log_dirs.items():
            partitions = [
                {
                    "partition": str(tp),
                    "size": info.size,
                    "offsetLag": info.offset_lag,
                    "isFuture": info.is_future,
                }
                for tp, info in sorted(
                    description.replicas.items(), key=lambda item: (item[0], item[1].is_future)
                )
                if not topics or tp.topic in topics
            ]
            error = None if description.error is None else exception_class_name(description.error)
            entries.append({"logDir": log_dir, "error": error, "partitions": partitions})
        brokers.append({"broker": broker_id, "logDirs": entries})
    return json.dumps({"version": 1, "brokers": brokers}, separators=(",", ":"))


def execute(args: argparse.Namespace, admin: AdminClient, out: TextIO, err: TextIO) -> int:
    wanted = _broker_ids(args.broker_list)
    topics = {t.strip() for t in args.topic_list.split(",") if t.strip()}
    try:
        live = sorted(node.id for node in admin.describe_cluster().brokers)
        if wanted is not None:
            absent = sorted(set(wanted) - set(live))
            if absent:
                print(
                    "ERROR: The given brokers do not exist from --broker-list: "
                    f"{','.join(map(str, absent))}. Current existent brokers: "
                    f"{','.join(map(str, live))}",
                    file=err,
                )
                return 1
        brokers = live if wanted is None else sorted(set(wanted))
        print("Querying brokers for log directories information", file=out)
        answers = admin.describe_log_dirs(brokers)
    except KafkaError as exc:
        print(f"Error while describing log dirs: {kafka_error_message(exc)}", file=err)
        return 1
    described: dict[int, Mapping[str, LogDirDescription]] = {}
    for broker_id, answer in answers.items():
        if isinstance(answer, KafkaError):
            print(
                f"Error while describing log dirs of broker {broker_id}: "
                f"{kafka_error_message(answer)}",
                file=err,
            )
            return 1
        described[broker_id] = answer
    print(
        f"Received log directory information from brokers {','.join(map(str, described))}",
        file=out,
    )
    print(format_json(described, topics), file=out)
    return 0


def run(args: argparse.Namespace) -> int:
    return run_admin_tool(
        args,
        execute,
        check_args=check_args,
        error_line=lambda e: f"Error while describing log dirs: {kafka_error_message(e)}",
    )
