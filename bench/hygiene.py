"""What every benchmark owes the machine it shares: its files removed and its ports chosen.

    parser = argparse.ArgumentParser()
    add_port_base(parser)                       # --port-base N, or MINIKAFKA_BENCH_PORT_BASE
    args = parser.parse_args()
    with scratch_dir("kafka-classic-") as root:  # removed on success, failure, Ctrl-C, SIGTERM
        zookeeper, cluster = start_cluster(root, ports=ports_from(args))

Files: ``scratch_dir`` is a ``tempfile.mkdtemp`` removed at the end whatever the end was. A
Python ``finally`` runs on an exception and on Ctrl-C (KeyboardInterrupt) but not when the
process is ended by SIGTERM or SIGHUP (``timeout``, a closed terminal): while a scratch
directory is open those two raise ``SystemExit`` instead, so every ``finally`` of the run
(brokers killed, ZooKeeper stopped, the directory removed) runs too. The brokers run in sessions
of their own (a Ctrl-C does not reach them), so a bench that did not stop them left them
writing into the directory it could not remove: gigabytes after one run.

Ports: ``--port-base N`` puts every server a bench starts (ZooKeeper, each broker's three
listeners, a peer's servers) on ports from N up, at most ``PORT_SPAN`` of them (the first free
ones in order; a port something else holds is skipped); without it the harness picks free ports
below the kernel's ephemeral range (tests/integration/zookeeper.py's ``free_port``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType

from tests.integration.zookeeper import free_port

__all__ = [
    "PORT_BASE_ENV",
    "PORT_SPAN",
    "PortRange",
    "add_port_base",
    "ports_from",
    "scratch_dir",
    "stop_on_signals",
]

PORT_BASE_ENV = "MINIKAFKA_BENCH_PORT_BASE"
PORT_SPAN = 100


class PortRange:
    """Hands out ports ``base``, ``base + 1``, ... below ``base + span``, each one free on
    127.0.0.1 when handed out and never handed out twice (a closed listener's port may be in
    TIME_WAIT, so a later server gets the next one). Not thread-safe: one bench's thread."""

    def __init__(self, base: int, span: int = PORT_SPAN, host: str = "127.0.0.1") -> None:
        if not 1024 <= base <= 65535 - span + 1:
            raise ValueError(f"port base {base}: ports {base}-{base + span - 1} are not all valid")
        self.base = base
        self.span = span
        self.host = host
        self._next = base

    def __call__(self) -> int:
        while self._next < self.base + self.span:
            port = self._next
            self._next += 1
            if _bindable(self.host, port):
                return port
        raise RuntimeError(
            f"no free port left in {self.base}-{self.base + self.span - 1} (--port-base)"
        )


def _bindable(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def add_port_base(parser: argparse.ArgumentParser) -> None:
    """``--port-base N``, defaulting to $MINIKAFKA_BENCH_PORT_BASE (none: free ports)."""
    env = os.environ.get(PORT_BASE_ENV)
    parser.add_argument(
        "--port-base",
        type=int,
        default=int(env) if env else None,
        help=f"servers listen on ports from N up, at most {PORT_SPAN} (default: "
        f"${PORT_BASE_ENV}, else free ports the harness picks)",
    )


def ports_from(args: argparse.Namespace, span: int = PORT_SPAN) -> Callable[[], int]:
    """The port allocator ``--port-base`` asks for: a PortRange, or ``free_port``."""
    base: int | None = args.port_base
    return free_port if base is None else PortRange(base, span)


def _raise_exit(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGTERM and SIGHUP raise SystemExit inside the block, so its ``finally`` clauses run;
    the previous handlers are back after it. Only in the main thread (Python's rule)."""
    wanted = (signal.SIGTERM, signal.SIGHUP)
    previous = {signum: signal.getsignal(signum) for signum in wanted}
    for signum in wanted:
        signal.signal(signum, _raise_exit)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def scratch_dir(prefix: str, parent: str | Path | None = None) -> Iterator[Path]:
    """A new temporary directory, removed when the block ends, whichever way it ends (see the
    module docstring); what could not be removed is named on stderr, never passed over."""
    root = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    try:
        with stop_on_signals():
            yield root
    finally:
        remove_tree(root)


def remove_tree(path: Path) -> None:
    """``shutil.rmtree``, saying on stderr what is left rather than failing the run's end."""
    errors: list[str] = []
    # onerror, not 3.12's onexc: the project runs on 3.11.
    shutil.rmtree(path, onerror=lambda _f, p, e: errors.append(f"{p}: {e[1]}"))
    if errors or path.exists():
        print(f"bench: could not remove all of {path}: {errors[:3]}", file=sys.stderr)
