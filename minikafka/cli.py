"""The ``minikafka`` command: one entry point, a subcommand per tool, shaped like Kafka's scripts.

Each subcommand lives in the package that owns what it works on; this module only routes and
imports that package lazily, so ``minikafka dump-log`` never loads grpc and a client tool never
loads the broker.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

# subcommand -> (module, help). The module defines add_arguments(parser) and run(args) -> int.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "dump-log": (
        "minikafka.broker.tools.dump_log",
        "print the batches, records and index entries of log files",
    ),
    "broker": (
        "minikafka.broker.server.main",
        "run a broker (server.properties, KAFKA_* env, --override)",
    ),
    "topics": ("minikafka.client.cli.topics", "create, list, describe, alter and delete topics"),
    "configs": (
        "minikafka.client.cli.configs",
        "describe and alter topic and broker configs (kafka-configs.sh)",
    ),
    "acls": (
        "minikafka.client.cli.acls",
        "add, remove and list ACLs (kafka-acls.sh)",
    ),
    "elect-leaders": (
        "minikafka.client.cli.elect_leaders",
        "run a preferred or unclean leader election for partitions",
    ),
    "reassign-partitions": (
        "minikafka.client.cli.reassign_partitions",
        "move partitions to other brokers: generate, execute, verify, cancel, list "
        "(kafka-reassign-partitions.sh)",
    ),
    "log-dirs": (
        "minikafka.client.cli.log_dirs",
        "describe the log dirs of brokers: sizes, offset lag, future replicas (kafka-log-dirs.sh)",
    ),
    "produce": (
        "minikafka.client.cli.produce",
        "produce lines of stdin as records (console producer)",
    ),
    "consume": (
        "minikafka.client.cli.consume",
        "print records of topics to stdout (console consumer)",
    ),
    "groups": (
        "minikafka.client.cli.groups",
        "list, describe, reset the offsets of and delete consumer groups",
    ),
    "transactions": (
        "minikafka.client.cli.transactions",
        "list, describe and abort transactions, describe producers (kafka-transactions.sh)",
    ),
    "watch": (
        "minikafka.client.cli.watch",
        "a live view of brokers, partitions (leader, epoch, ISR, LEO, HW) and group lag",
    ),
    "replay": (
        "minikafka.client.cli.replay",
        "run Kafka's replication stories (KIP-101, failover, ISR, unclean) on a live cluster",
    ),
    "perf-produce": ("minikafka.client.cli.perf_produce", "producer throughput and latency test"),
    "perf-consume": ("minikafka.client.cli.perf_consume", "consumer throughput test"),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser. Given a ``command``, only that subcommand's module is imported (``main``
    does this), so a broken or heavy tool never stops another from starting; without one,
    every subcommand gets its options."""
    parser = argparse.ArgumentParser(prog="minikafka", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        if command is None or name == command:
            module = importlib.import_module(module_name)
            module.add_arguments(sub_parser)
            sub_parser.set_defaults(run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in arguments if not a.startswith("-")), None)
    if command not in SUBCOMMANDS:
        command = ""  # argparse reports the unknown or missing command
    args = build_parser(command).parse_args(arguments)
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except BrokenPipeError:  # `minikafka dump-log ... | head` is not an error
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
