"""``minikafka watch``: the cluster live, in a terminal.

    minikafka watch --bootstrap-server H:P [--topic T ...] [--include-internal]
        [--interval SECONDS] [--no-groups] [--lines]

On a terminal it redraws a view (render.py, with rich) every ``--interval`` seconds (default 1):
brokers, the controller and its epoch, every partition's leader, leader epoch, replicas, ISR,
high watermark and each replica's log end offset, under-replicated and offline partitions
highlighted, consumer groups with their lag, and the latest changes. Without a terminal (piped,
CI), or with ``--lines``, it prints one line per change instead (model.py), the whole cluster
first::

    02:10:03 broker 1 dead
    02:10:03 orders-0 leader 1 -> 2 epoch 4 -> 5 isr [0,1,2] -> [0,2] under-replicated

``--topic`` names topics to show (default: every topic but the internal ones). The data comes
from the brokers' own answers (collect.py). Bootstrap servers that refuse connections print
``Error: ...`` on one line and exit 1; Ctrl-C exits 0.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections import deque
from typing import Protocol, TextIO

from minikafka.client.cli._logging import configure_tool_logging
from minikafka.client.cli.watch.model import Snapshot, change_lines
from minikafka.proto.errors import KafkaError

__all__ = ["add_arguments", "follow_lines", "run"]

_RECENT_CHANGES = 8


class SnapshotSource(Protocol):
    """A ClusterWatcher (collect.py), or a fake."""

    def snapshot(self) -> Snapshot: ...


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--bootstrap-server", required=True, metavar="HOST:PORT", help="brokers to connect to"
    )
    parser.add_argument(
        "--topic",
        action="append",
        default=[],
        metavar="TOPIC",
        help="a topic to show (repeatable); default: every topic but the internal ones",
    )
    parser.add_argument(
        "--include-internal", action="store_true", help="show __consumer_offsets too"
    )
    parser.add_argument(
        "--interval", type=_interval, default=1.0, metavar="SECONDS", help="refresh period"
    )
    parser.add_argument("--no-groups", action="store_true", help="do not show consumer groups")
    parser.add_argument(
        "--lines", action="store_true", help="print change lines even on a terminal"
    )


def _interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0.1 <= value <= 60:
        raise argparse.ArgumentTypeError("must be between 0.1 and 60 seconds")
    return value


def follow_lines(
    watcher: SnapshotSource,
    out: TextIO,
    *,
    interval_s: float,
    rounds: int | None = None,
    first: Snapshot | None = None,
) -> None:
    """Print the change lines of each refresh (the whole cluster first), ``rounds`` times or
    until interrupted."""
    previous: Snapshot | None = None
    done = 0
    while rounds is None or done < rounds:
        started = time.monotonic()
        snapshot = first if first is not None and previous is None else watcher.snapshot()
        for line in change_lines(previous, snapshot):
            print(line, file=out, flush=True)
        previous = snapshot
        done += 1
        time.sleep(max(interval_s - (time.monotonic() - started), 0))


def _follow_live(watcher: SnapshotSource, first: Snapshot, interval_s: float) -> None:
    from rich.console import Console
    from rich.live import Live

    from minikafka.client.cli.watch.render import render

    recent: deque[str] = deque(change_lines(None, first)[-_RECENT_CHANGES:], _RECENT_CHANGES)
    previous = first
    # Follow the terminal's size as it changes: COLUMNS / LINES in the environment (tmux sets
    # them when it starts a command) would pin rich to the size they had at the start.
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)
    console = Console()
    with Live(
        render(first, list(recent), interval_s=interval_s),
        console=console,
        screen=True,
        auto_refresh=False,
    ) as live:
        started = time.monotonic()
        while True:
            time.sleep(max(interval_s - (time.monotonic() - started), 0))
            started = time.monotonic()
            snapshot = watcher.snapshot()
            recent.extend(change_lines(previous, snapshot))
            previous = snapshot
            live.update(render(snapshot, list(recent), interval_s=interval_s), refresh=True)


def run(args: argparse.Namespace) -> int:
    from minikafka.client.admin import AdminClient
    from minikafka.client.cli.watch.collect import ClusterWatcher

    live = sys.stdout.isatty() and not args.lines
    if live:  # log lines would tear the view: the view shows what matters
        logging.getLogger().handlers[:] = [logging.NullHandler()]
    else:
        configure_tool_logging()
    try:
        admin = AdminClient(args.bootstrap_server, request_timeout_ms=5000)
    except KafkaError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    try:
        with admin:
            watcher = ClusterWatcher(
                admin,
                topics=args.topic,
                include_internal=args.include_internal,
                groups=not args.no_groups,
            )
            try:
                first = watcher.snapshot()
            except KafkaError as exc:
                print(f"Error: {exc}", file=sys.stderr)
                return 1
            if live:
                _follow_live(watcher, first, args.interval)
            else:
                follow_lines(watcher, sys.stdout, interval_s=args.interval, first=first)
    except KeyboardInterrupt:
        return 0
    return 0
