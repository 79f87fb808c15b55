"""``minikafka replay --bootstrap-server`` on the compose cluster: the command finds the
project's broker containers by their labels, faults them with ``docker`` (pause/unpause for
isr, kill/start for preferred), measures what the mechanism promises, and leaves the cluster as
it found it: every container running, no topic of its own left.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import BROKER_IDS, REPO, ComposeCluster
from tests.e2e.faults import BOOTSTRAP, admin, wait_for

pytestmark = pytest.mark.timeout(300)


def _replay(cluster: ComposeCluster, scenario: str, out: Path) -> dict[str, Any]:
    done = subprocess.run(
        [
            sys.executable, "-m", "minikafka", "replay", scenario,
            "--bootstrap-server", BOOTSTRAP.split(",")[0],
            "--compose-project", cluster.project,
            "--speed", "1000", "--json", "-", "--out", str(out),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=150,
    )  # fmt: skip
    # Whatever the outcome: nothing paused or stopped by the replay stays so.
    states = {
        b: cluster.docker(
            "inspect", "-f", "{{.State.Status}}", cluster.container(cluster.service(b))
        ).strip()
        for b in BROKER_IDS
    }
    assert set(states.values()) == {"running"}, states  # not paused, not exited
    assert done.returncode == 0, f"{done.returncode}\n{done.stderr[-4000:]}"
    (run,) = json.loads(done.stdout)["runs"]
    assert run["held"], done.stderr[-4000:]
    assert (out / f"{scenario}.svg").exists()
    return dict(run)


def _no_replay_topics() -> bool:
    """Deleted (the deletion completes in the background, as Kafka's)."""

    def gone() -> bool:
        with admin() as client:
            return not [t for t in client.list_topics() if t.startswith("replay-")]

    return wait_for(gone, 30, "replay topics deleted")


def test_isr_on_compose(cluster: ComposeCluster, tmp_path: Path) -> None:
    run = _replay(cluster, "isr", tmp_path)
    kinds = {m["kind"] for m in run["marks"]}
    assert {"pause", "resume", "isr"} <= kinds
    checks = {c["what"]: c for c in run["checks"]}
    assert checks["acks=all while the follower was paused"]["measured"] == "NONE"
    assert checks["ISR while the follower was paused"]["held"]
    assert checks["ISR after the follower caught up"]["held"]
    assert run["topic"].startswith("replay-isr-")
    cluster.wait_healthy()
    assert _no_replay_topics()


def test_preferred_on_compose(cluster: ComposeCluster, tmp_path: Path) -> None:
    run = _replay(cluster, "preferred", tmp_path)
    kinds = {m["kind"] for m in run["marks"]}
    assert {"kill", "start", "election", "elect"} <= kinds  # 300 s checks: replay elects
    assert all(c["held"] for c in run["checks"])
    cluster.wait_healthy()
    assert _no_replay_topics()


def test_a_scenario_that_needs_its_own_brokers_is_refused(cluster: ComposeCluster) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "minikafka", "replay", "diverge", "--bootstrap-server", BOOTSTRAP],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "cannot run on a running cluster: a power cut" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
