"""``minikafka replay``: Kafka's replication stories, run live on a real 3-broker cluster.

    minikafka replay --list
    minikafka replay lost-ack [--variant hw|epoch] [--pause] [--speed X] [--json FILE]
                     [--out DIR] [--zookeeper HOST:PORT] [--work-dir DIR] [--keep]
    minikafka replay isr --bootstrap-server 127.0.0.1:9092 [--compose-project NAME]

Each run starts ZooKeeper (Debian's package, as the integration tests do; or ``--zookeeper``
names a running one, and the run takes a chroot of it) and three brokers as processes of this
machine (``python -m minikafka broker``), plays the scenario with real faults (SIGKILL,
SIGSTOP, SIGTERM, a power cut's lost page cache), narrates every step with what the controller,
ZooKeeper's partition state and each replica hold (LEO, HW, leader epoch, ISR, read from the
brokers through the ``minikafka watch`` model), and ends with the outcome it measured checked
against the promise. It writes ``<out>/<scenario>[-<variant>].svg`` for each run (svg.py) and,
with ``--json``, every step, sample, mark and check (``-``: to stdout, the narration to
stderr). A scenario with variants runs each unless ``--variant`` picks one.

On a terminal a live view of the partition's replicas stays under the narration; ``--pause``
waits for Enter after each step; ``--speed`` divides the pause between steps (1.5 s; the
cluster's own timeouts are what they are). Exit status: 0 when every run came out as its
variant expects, 1 when one did not, 2 when the cluster did not do what a step waited for.

With ``--bootstrap-server`` the run uses a docker compose cluster that runs already (the
repository's docker-compose.yml) instead: its broker containers are found by their compose
labels and faulted through the ``docker`` CLI (compose_brokers.py: kill, pause, unpause, start,
stop), each scenario's topic is a new name deleted at the end, and every container the run
paused, killed or stopped is unpaused or started again, also on failure and Ctrl-C. The
scenarios that need more than that (a test-only broker key at start, the brokers started with
a long replica.fetch.wait.max.ms, a log's tail cut: lost-ack and diverge) say why in one line
and exit 2.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import tempfile
import uuid
from pathlib import Path
from typing import TextIO

from minikafka.client.cli.replay.narrate import outcome_text, state_lines, step_text
from minikafka.client.cli.replay.scenarios import SCENARIOS, Variant
from minikafka.client.cli.replay.timeline import Run, Sample, Step

__all__ = ["LineNarrator", "add_arguments", "compose_project", "list_text", "run"]

_BEAT_S = 1.5


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenario", nargs="?", metavar="SCENARIO", help="see --list")
    parser.add_argument("--list", action="store_true", help="name the scenarios and exit")
    parser.add_argument("--variant", help="run one variant (hw/epoch, on/off)")
    parser.add_argument("--pause", action="store_true", help="wait for Enter after each step")
    parser.add_argument(
        "--speed", type=_speed, default=1.0, metavar="X", help="divide the pause between steps"
    )
    parser.add_argument("--json", metavar="FILE", help="write the runs as JSON ('-': stdout)")
    parser.add_argument(
        "--out", default=".", metavar="DIR", help="where the SVG timelines go (default: .)"
    )
    parser.add_argument(
        "--zookeeper", metavar="HOST:PORT", help="a running ZooKeeper (default: start one)"
    )
    parser.add_argument("--work-dir", metavar="DIR", help="brokers' files (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the work dir (logs, segments)")
    parser.add_argument(
        "--bootstrap-server",
        metavar="HOST:PORT",
        help="use this running docker compose cluster instead of starting brokers",
    )
    parser.add_argument(
        "--compose-project",
        metavar="NAME",
        help="its compose project (default: $COMPOSE_PROJECT_NAME, else the one `docker "
        "compose up` makes in this directory)",
    )


def _speed(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("must be above 0")
    return value


def list_text() -> str:
    lines = []
    for scenario in SCENARIOS.values():
        variants = [v.name for v in scenario.variants if v.name]
        suffix = f"  [variants: {', '.join(variants)}]" if variants else ""
        lines.append(f"{scenario.name:<20} {scenario.title}{suffix}")
    return "\n".join(lines)


class LineNarrator:
    """Steps as text, one block each (no terminal needed)."""

    def __init__(self, out: TextIO) -> None:
        self._out = out

    def step(self, step: Step) -> None:
        print(step_text(step), file=self._out, flush=True)

    def sampled(self, sample: Sample) -> None:
        pass

    def wait_for_enter(self) -> None:
        input("  (Enter for the next step) ")

    def say(self, text: str) -> None:
        print(text, file=self._out, flush=True)

    def close(self) -> None:
        pass


class _LiveNarrator(LineNarrator):
    """On a terminal: the steps scroll above a live view of the partition (rich)."""

    def __init__(self, topic: str) -> None:
        from rich.console import Console
        from rich.live import Live
        from rich.text import Text

        self.topic = topic  # the run's (one a variant on a running cluster)
        self._console = Console()
        self._live = Live(Text("starting the cluster ..."), console=self._console, transient=True)
        self._live.start()

    def step(self, step: Step) -> None:
        self._console.print(step_text(step), highlight=False)
        self._console.print()

    def sampled(self, sample: Sample) -> None:
        from rich.panel import Panel
        from rich.text import Text

        lines = state_lines(sample, topic=self.topic, partition=0)
        self._live.update(
            Panel(Text("\n".join(lines)), title=f"live  +{sample.t:.1f}s", expand=False)
        )

    def wait_for_enter(self) -> None:
        self._live.stop()
        input("  (Enter for the next step) ")
        self._live.start()

    def say(self, text: str) -> None:
        self._console.print(text, highlight=False)

    def close(self) -> None:
        self._live.stop()


def run(args: argparse.Namespace) -> int:
    if args.list:
        print(list_text())
        return 0
    if args.scenario not in SCENARIOS:
        print(
            f"Error: name a scenario (minikafka replay --list), not {args.scenario!r}",
            file=sys.stderr,
        )
        return 2
    scenario = SCENARIOS[args.scenario]
    try:
        variants = scenario.variant(args.variant)
    except ValueError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 2
    if args.bootstrap_server:
        for variant in variants:
            reason = scenario.needs_own_brokers(variant)
            if reason:
                label = f"{scenario.name} {variant.name}".strip()
                print(
                    f"Error: {label} cannot run on a running cluster: {reason}; run it "
                    "without --bootstrap-server (replay starts its own brokers)",
                    file=sys.stderr,
                )
                return 2
    logging.getLogger().handlers[:] = [logging.NullHandler()]  # the narration is the output
    to_stdout = args.json == "-"
    narrator: LineNarrator
    if sys.stdout.isatty() and not to_stdout and not args.pause:
        from minikafka.client.cli.replay.runner import TOPIC

        narrator = _LiveNarrator(TOPIC)
    else:
        narrator = LineNarrator(sys.stderr if to_stdout else sys.stdout)
    workdir = Path(args.work_dir) if args.work_dir else Path(tempfile.mkdtemp(prefix="replay-"))
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        if args.bootstrap_server:
            return _play_on_compose(args, scenario.name, variants, narrator, out_dir)
        return _play(args, scenario.name, variants, narrator, workdir, out_dir)
    except KeyboardInterrupt:
        narrator.say("Interrupted.")
        return 130
    finally:
        narrator.close()
        if not args.keep and not args.work_dir:
            shutil.rmtree(workdir, ignore_errors=True)


def _play(
    args: argparse.Namespace,
    name: str,
    variants: list[Variant],
    narrator: LineNarrator,
    workdir: Path,
    out_dir: Path,
) -> int:
    from minikafka.client.cli.replay.local_zookeeper import (
        ZooKeeperServer,
        ZooKeeperStartError,
        ZooKeeperUnavailable,
    )
    from minikafka.client.cli.replay.runner import run_scenario
    from minikafka.client.cli.replay.stage import ReplayError

    scenario = SCENARIOS[name]
    server: ZooKeeperServer | None = None
    if args.zookeeper:
        zk_connect = args.zookeeper.rstrip("/")
    else:
        try:
            server = ZooKeeperServer(workdir / "zookeeper")
            server.start()
        except (ZooKeeperUnavailable, ZooKeeperStartError) as exc:
            print(f"Error: cannot start ZooKeeper ({exc}); use --zookeeper", file=sys.stderr)
            return 2
        zk_connect = server.connect_string
    runs: list[Run] = []
    status = 0
    try:
        for variant in variants:
            label = f"{scenario.name} {variant.name}".strip()
            narrator.say(f"=== {label}: {scenario.title}")
            try:
                result = run_scenario(
                    scenario,
                    variant,
                    workdir=workdir / f"{scenario.name}-{variant.name or 'run'}",
                    zk_connect=f"{zk_connect}/minikafka-replay-{uuid.uuid4().hex[:12]}",
                    narrator=narrator,
                    beat_s=_BEAT_S / args.speed,
                    interactive=args.pause,
                )
            except ReplayError as exc:
                narrator.say(f"Error: {label}: {exc}")
                status = 2
                continue
            runs.append(result)
            status = _told(result, narrator, out_dir, status)
    finally:
        if server is not None:
            server.stop()
    _write_json(args, runs)
    return status


def _told(result: Run, narrator: LineNarrator, out_dir: Path, status: int) -> int:
    """The run's outcome and picture; the status with this run's counted."""
    from minikafka.client.cli.replay.svg import render_svg

    picture = out_dir / f"{result.name}.svg"
    picture.write_text(render_svg(result), encoding="utf-8")
    narrator.say(outcome_text(result))
    narrator.say(f"  timeline: {picture}\n")
    return 1 if not result.held and status == 0 else status


def _write_json(args: argparse.Namespace, runs: list[Run]) -> None:
    if args.json:
        document = json.dumps({"runs": [r.to_json() for r in runs]}, indent=1)
        if args.json == "-":
            print(document)
        else:
            Path(args.json).write_text(document + "\n", encoding="utf-8")


def compose_project(args: argparse.Namespace) -> str:
    """--compose-project, else $COMPOSE_PROJECT_NAME, else compose's name for this directory."""
    from minikafka.client.cli.replay.compose_brokers import default_project

    return (
        args.compose_project
        or os.environ.get("COMPOSE_PROJECT_NAME")
        or default_project(Path.cwd().name)
    )


def _play_on_compose(
    args: argparse.Namespace,
    name: str,
    variants: list[Variant],
    narrator: LineNarrator,
    out_dir: Path,
) -> int:
    from minikafka.client.admin import AdminClient
    from minikafka.client.cli.replay.compose_brokers import (
        DEFAULT_LOG_DIRS,
        ComposeBrokers,
        ComposeError,
    )
    from minikafka.client.cli.replay.runner import run_on_cluster
    from minikafka.client.cli.replay.stage import ReplayError
    from minikafka.proto.errors import KafkaError

    scenario = SCENARIOS[name]
    project = compose_project(args)
    runs: list[Run] = []
    status = 0
    for variant in variants:
        label = f"{scenario.name} {variant.name}".strip()
        try:
            with AdminClient(args.bootstrap_server, request_timeout_ms=5000) as admin:
                described = admin.describe_cluster(timeout_ms=10_000)
                addresses = {node.id: node.address for node in described.brokers}
                log_dirs = admin.describe_broker_configs(min(addresses)).get("log.dirs")
            brokers = ComposeBrokers.discover(
                project,
                addresses,
                log_dirs=(
                    log_dirs.value.split(",")
                    if log_dirs is not None and log_dirs.value
                    else DEFAULT_LOG_DIRS
                ),
            )
        except (KafkaError, ComposeError) as exc:
            print(f"Error: {exc}", file=sys.stderr)
            return 2
        topic = f"replay-{scenario.name}-{variant.name or 'run'}-{uuid.uuid4().hex[:8]}"
        if isinstance(narrator, _LiveNarrator):
            narrator.topic = topic
        narrator.say(f"=== {label}: {scenario.title} (compose project {project}, topic {topic})")
        try:
            result = run_on_cluster(
                scenario,
                variant,
                brokers,
                topic=topic,
                narrator=narrator,
                beat_s=_BEAT_S / args.speed,
                interactive=args.pause,
            )
        except (ReplayError, ComposeError, KafkaError) as exc:
            narrator.say(f"Error: {label}: {exc}")
            status = 2
            continue
        runs.append(result)
        status = _told(result, narrator, out_dir, status)
    _write_json(args, runs)
    return status
