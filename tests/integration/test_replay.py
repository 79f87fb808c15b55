"""`minikafka replay` on real clusters: every scenario and variant, each on three broker processes
of its own over the session's ZooKeeper (a chroot a run), with the outcome it measured checked:
the pre-KIP-101 runs lose an acknowledged record or diverge, the leader-epoch runs do not, and
so on for failover, ISR, min.insync.replicas, unclean election and the preferred leader. Each
run's picture is drawn and must mark its faults and elections; one run goes through the command
line, for the JSON and the SVG file. Brokers are killed at the end of each run, pass or fail
(runner.py), and at exit (local_brokers.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from minikafka.client.cli.replay.narrate import outcome_text
from minikafka.client.cli.replay.runner import run_scenario
from minikafka.client.cli.replay.scenarios import SCENARIOS
from minikafka.client.cli.replay.svg import render_svg
from minikafka.client.cli.replay.timeline import Run, Sample, Step
from tests.integration.cluster import REPO_ROOT
from tests.integration.conftest import fresh_chroot
from tests.integration.zookeeper import ZooKeeperServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

SVG = "{http://www.w3.org/2000/svg}"


class _Quiet:
    def __init__(self) -> None:
        self.steps: list[Step] = []

    def step(self, step: Step) -> None:
        self.steps.append(step)

    def sampled(self, sample: Sample) -> None:
        pass

    def wait_for_enter(self) -> None:
        raise AssertionError("a test run never waits for Enter")


def _play(name: str, variant: str, zookeeper: ZooKeeperServer, tmp_path: Path) -> Run:
    scenario = SCENARIOS[name]
    (chosen,) = scenario.variant(variant)
    narrator = _Quiet()
    run = run_scenario(
        scenario,
        chosen,
        workdir=tmp_path / "brokers",
        zk_connect=fresh_chroot(zookeeper),
        narrator=narrator,
        beat_s=0,
    )
    assert [s.title for s in run.steps] == [s.title for s in narrator.steps]
    return run


def _marks(svg: str) -> list[tuple[str, str]]:
    root = ET.fromstring(svg)
    return [
        (g.get("data-kind", ""), g.get("data-label", ""))
        for g in root.iter(f"{SVG}g")
        if "mark" in (g.get("class") or "").split()
    ]


def _classes(svg: str, kind: str) -> list[dict[str, str]]:
    root = ET.fromstring(svg)
    return [dict(e.attrib) for e in root.iter() if kind in (e.get("class") or "").split()]


def _fates(run: Run) -> dict[str, tuple[bool, bool]]:
    return {r.value: (r.acked, r.kept) for r in run.records}


@pytest.mark.parametrize("variant", ["hw", "epoch"])
def test_lost_ack(variant: str, zookeeper_server: ZooKeeperServer, tmp_path: Path) -> None:
    run = _play("lost-ack", variant, zookeeper_server, tmp_path)
    assert run.held, outcome_text(run)
    fates = _fates(run)
    logs = {b: [v for _, v in log] for b, log in run.replica_logs.items()}
    if variant == "hw":  # m2 was acknowledged, then truncated away by B before it led
        assert fates["m2"] == (True, False), outcome_text(run)
        assert logs[2] == ["m1", "m3"]
        assert logs[1] == ["m1", "m2"]  # A kept m2 below its own HW: diverged too
    else:
        assert fates["m2"] == (True, True), outcome_text(run)
        assert logs == {b: ["m1", "m2", "m3"] for b in (1, 2, 3)}
    svg = render_svg(run)
    kinds = {kind for kind, _ in _marks(svg)}
    assert {"pause", "stop", "kill", "election"} <= kinds
    assert ("kill", "kill -9 1") in _marks(svg)
    lost = [e["data-value"] for e in _classes(svg, "lost")]
    assert lost == (["m2"] if variant == "hw" else [])
    assert bool(_classes(svg, "diverged")) == (variant == "hw")


@pytest.mark.parametrize("variant", ["hw", "epoch"])
def test_diverge(variant: str, zookeeper_server: ZooKeeperServer, tmp_path: Path) -> None:
    run = _play("diverge", variant, zookeeper_server, tmp_path)
    assert run.held, outcome_text(run)
    logs = {b: [v for _, v in log] for b, log in run.replica_logs.items()}
    assert logs[2] == ["m1", "m3", "m4"]
    assert logs[1] == (["m1", "m2", "m4"] if variant == "hw" else ["m1", "m3", "m4"])
    svg = render_svg(run)
    assert {"kill", "power-cut", "start", "election"} <= {kind for kind, _ in _marks(svg)}
    assert _classes(svg, "offline")  # the leader strip shows the partition offline
    diverged = {(e["data-broker"], e["data-offset"]) for e in _classes(svg, "diverged")}
    assert diverged == ({("1", "1"), ("2", "1")} if variant == "hw" else set())


def test_controller_failover_fences_the_zombie(
    zookeeper_server: ZooKeeperServer, tmp_path: Path
) -> None:
    run = _play("controller-failover", "", zookeeper_server, tmp_path)
    assert run.held, outcome_text(run)
    measured = {c.what: c.measured for c in run.checks}
    assert measured["the zombie controller's LeaderAndIsr"] == "STALE_CONTROLLER_EPOCH"
    kinds = {kind for kind, _ in _marks(render_svg(run))}
    assert {"pause", "controller", "fenced", "resume"} <= kinds


def test_isr_shrinks_and_expands(zookeeper_server: ZooKeeperServer, tmp_path: Path) -> None:
    run = _play("isr", "", zookeeper_server, tmp_path)
    assert run.held, outcome_text(run)
    labels = [label for kind, label in _marks(render_svg(run)) if kind == "isr"]
    assert labels[-2:] == ["ISR [1,3]", "ISR [1,2,3]"] or "ISR [1,3]" in labels


def test_min_insync_replicas(zookeeper_server: ZooKeeperServer, tmp_path: Path) -> None:
    run = _play("min-isr", "", zookeeper_server, tmp_path)
    assert run.held, outcome_text(run)
    assert {r.value: r.answer for r in run.records} == {
        "m1": "NONE",
        "m2": "NONE",
        "m3": "NOT_ENOUGH_REPLICAS",
        "m4": "NONE",
    }
    assert [e["data-value"] for e in _classes(render_svg(run), "refused")] == ["m3"]


@pytest.mark.parametrize("variant", ["on", "off"])
def test_unclean_election(variant: str, zookeeper_server: ZooKeeperServer, tmp_path: Path) -> None:
    run = _play("unclean", variant, zookeeper_server, tmp_path)
    assert run.held, outcome_text(run)
    assert _fates(run)["m2"] == (True, variant == "off")
    svg = render_svg(run)
    assert [e["data-value"] for e in _classes(svg, "lost")] == (["m2"] if variant == "on" else [])
    assert _classes(svg, "offline")


def test_preferred_leader_rebalance(zookeeper_server: ZooKeeperServer, tmp_path: Path) -> None:
    run = _play("preferred", "", zookeeper_server, tmp_path)
    assert run.held, outcome_text(run)
    elections = [label for kind, label in _marks(render_svg(run)) if kind == "election"]
    assert elections[-1].startswith("leader 1 ")


def test_the_command_writes_json_and_a_picture(
    zookeeper_server: ZooKeeperServer, tmp_path: Path
) -> None:
    listed = subprocess.run(
        [sys.executable, "-m", "minikafka", "replay", "--list"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listed.returncode == 0, listed.stderr
    assert [line.split()[0] for line in listed.stdout.splitlines()] == list(SCENARIOS)

    done = subprocess.run(
        [
            sys.executable, "-m", "minikafka", "replay", "isr",
            "--speed", "1000", "--json", "-", "--out", str(tmp_path),
            "--zookeeper", zookeeper_server.connect_string,
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=110,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    (run,) = document["runs"]
    assert (run["name"], run["held"]) == ("isr", True)
    assert [s["number"] for s in run["steps"]] == list(range(1, len(run["steps"]) + 1))
    assert {"pause", "resume", "isr", "produce"} <= {m["kind"] for m in run["marks"]}
    assert all(c["held"] for c in run["checks"])
    assert "[1] +" in done.stderr and "Outcome of isr" in done.stderr  # narration on stderr
    svg = (tmp_path / "isr.svg").read_text()
    assert ("pause", "SIGSTOP 2") in _marks(svg)


def test_bootstrap_server_refuses_a_story_that_needs_its_own_brokers() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "minikafka", "replay", "lost-ack", "--bootstrap-server", "h:1"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "cannot run on a running cluster" in done.stderr
