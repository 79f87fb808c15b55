"""The run of every admin console tool (topics, configs, consumer-groups, elect-leaders):
check the arguments, connect an AdminClient, do the work, close the client.

    def run(args: argparse.Namespace) -> int:
        return run_admin_tool(args, execute, check_args=check_args,
                              error_line=lambda e: f"Error while executing topic command : {e}")

A usage problem (``check_args`` answers a message) or a client that cannot start is one line on
stderr and exit status 1, in the tool's own words (Kafka's tools word them differently).
``--command-config FILE`` (``add_command_config``) is the admin client's properties file, as
Kafka's tools take it: its security keys (security.protocol, ssl.*) set how to connect.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from minikafka.proto.errors import KafkaError

if TYPE_CHECKING:  # client.admin loads grpc: only when the command runs (see minikafka.cli)
    from minikafka.client.admin import AdminClient

__all__ = ["add_command_config", "kafka_error_message", "run_admin_tool"]

Execute = Callable[[argparse.Namespace, "AdminClient", TextIO, TextIO], int]


def add_command_config(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--command-config",
        metavar="FILE",
        help="admin client .properties (security.protocol, ssl.ca.location, ...)",
    )


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
    from minikafka.client.cli._config import ConfigError, client_kwargs, read_properties_file

    try:
        path = getattr(args, "command_config", None)
        config = read_properties_file(path) if path else {}
        kwargs = client_kwargs(AdminClient, config, lambda line: print(line, file=sys.stderr))
        admin = AdminClient(args.bootstrap_server, **kwargs)
    except ConfigError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except KafkaError as exc:
        print(error_line(exc), file=sys.stderr)
        return 1
    with admin:
        return execute(args, admin, sys.stdout, sys.stderr)


def kafka_error_message(error: KafkaError) -> str:
    """The error's own message, or its code and number when it came without one."""
    return error.message if error.message != error.code.name else str(error)
