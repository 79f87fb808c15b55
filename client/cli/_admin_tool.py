"""The run of every admin console tool (topics, configs, consumer-groups, elect-leaders):
check the arguments, connect an AdminClient, do the work, close the client.

    def run(args: argparse.Namespace) -> int:
        return run_admin_tool(args, execute, check_args=check_args,
                              error_line=lambda e: f"Error while executing topic command : {e}")

A usage problem (``check_args`` answers a message) or a client that cannot start is one line on
stderr and exit status 1, in the tool's own words (Kafka's tools word them differently).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from minikafka.proto.errors import KafkaError

if TYPE_CHECKING:  # client.admin loads grpc: only when the command runs (see minikafka.cli)
    from minikafka.client.admin import AdminClient

__all__ = ["kafka_error_message", "run_admin_tool"]

Execute = Callable[[argparse.Namespace, "AdminClient", TextIO, TextIO], int]


def run_admin_tool(
    args: argparse.Namespace,
    execute: Execute,
    *,
    error_line: Callable[[KafkaError], str],
    check_args: Callable[[argparse.Namespace], str | None] | None = None,
) -> int:
    """``execute(args, admin, stdout, stderr)`` on an AdminClient of ``--bootstrap-server``."""
    problem = None if check_args is None else check_args(args)
    if problem is not None:
        print(problem, file=sys.stderr)
        return 1
    from minikafka.client.admin import AdminClient

    try:
        admin = AdminClient(args.bootstrap_server)
    except KafkaError as exc:
        print(error_line(exc), file=sys.stderr)
        return 1
    with admin:
        return execute(args, admin, sys.stdout, sys.stderr)


def kafka_error_message(error: KafkaError) -> str:
    """The error's own message, or its code and number when it came without one."""
    return error.message if error.message != error.code.name else str(error)
