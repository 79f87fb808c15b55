"""`minikafka replay`'s words and picture from a hand-made Run: no cluster, no network."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from minikafka.client.cli.replay import list_text
from minikafka.client.cli.replay.narrate import outcome_text, state_lines, step_text
from minikafka.client.cli.replay.scenarios import SCENARIOS
from minikafka.client.cli.replay.svg import render_svg
from minikafka.client.cli.replay.timeline import (
    Check,
    Mark,
    RecordFate,
    ReplicaSample,
    Run,
    Sample,
    Step,
)

SVG = "{http://www.w3.org/2000/svg}"


def _sample(t: float, leader: int, epoch: int, b2_leo: int, b1: str = "up") -> Sample:
    return Sample(
        t,
        leader,
        epoch,
        (1, 2) if leader >= 0 else (2,),
        3,
        1,
        (
            ReplicaSample(1, b1, 2 if b1 == "up" else -1, 2 if b1 == "up" else -1, epoch),
            ReplicaSample(2, "up", b2_leo, 1, epoch),
        ),
    )


def _run(held: bool = True) -> Run:
    samples = (
        _sample(1.0, 1, 0, 2),
        _sample(2.0, 1, 1, 1),
        _sample(3.0, -1, 1, 1, b1="paused"),
        _sample(4.0, 2, 2, 1, b1="down"),
    )
    return Run(
        scenario="lost-ack",
        variant="hw",
        title="KIP-101 story 1",
        promise="acked records survive",
        expect_violation=True,
        topic="replay",
        partition=0,
        replicas=(1, 2),
        steps=(Step(1, 1.0, "m2 acked", "B's HW lags", ("state",)),),
        samples=samples,
        marks=(
            Mark(2.5, "pause", "SIGSTOP 1", 1),
            Mark(3.5, "kill", "kill -9 1", 1),
            Mark(4.0, "election", "leader 2 epoch 2", 2),
        ),
        records=(
            RecordFate("m1", 0, True, "NONE", True),
            RecordFate("m2", 1, True, "NONE", False),
            RecordFate("m3", -1, False, "NOT_ENOUGH_REPLICAS", False),
        ),
        checks=(Check("acked kept", "all", "lost m2", held),),
        replica_logs={1: [(0, "m1"), (1, "m2")], 2: [(0, "m1"), (1, "m3")]},
        duration_s=4.5,
    )


def test_state_lines_show_each_replica_as_it_reports_itself() -> None:
    lines = state_lines(_sample(3.0, -1, 1, 1, b1="paused"), topic="replay", partition=0)
    assert lines[0] == (
        "controller 3 (epoch 1)   replay-0: leader none (offline), leader epoch 1, ISR [2]"
    )
    assert lines[1].split() == ["broker", "1", "paused", "LEO", "?", "HW", "?", "epoch", "1"]
    assert lines[2].split() == [
        "broker",
        "2",
        "up",
        "follower",
        "LEO",
        "1",
        "HW",
        "1",
        "epoch",
        "1",
    ]


def test_a_step_reads_number_time_title_why_then_state() -> None:
    text = step_text(Step(3, 4.25, "Pause broker 1", "because", ("controller 3", "  broker 1")))
    assert text.splitlines() == [
        "[3] +4.2s  Pause broker 1",
        "    because",
        "    controller 3",
        "      broker 1",
    ]


def test_the_outcome_names_lost_and_refused_records_and_the_verdict() -> None:
    text = outcome_text(_run())
    assert "m2   acked" in text and "LOST" in text
    assert "refused (NOT_ENOUGH_REPLICAS)" in text
    assert "broker 2 log: 0:m1 1:m3" in text
    assert text.endswith("=> the failure happened, as it did before the mechanism existed")
    assert outcome_text(_run(held=False)).endswith("(the replay could not reproduce it)")


def test_the_picture_marks_faults_elections_and_lost_records() -> None:
    svg = render_svg(_run())
    root = ET.fromstring(svg)
    marks = [
        (g.get("data-kind"), g.get("data-label"))
        for g in root.iter(f"{SVG}g")
        if "mark" in (g.get("class") or "")
    ]
    assert marks == [
        ("pause", "SIGSTOP 1"),
        ("kill", "kill -9 1"),
        ("election", "leader 2 epoch 2"),
    ]
    by_class: dict[str, list[dict[str, str]]] = {}
    for element in root.iter():
        for name in (element.get("class") or "").split():
            by_class.setdefault(name, []).append(dict(element.attrib))
    assert [r["data-value"] for r in by_class["lost"]] == ["m2"]
    assert [r["data-value"] for r in by_class["refused"]] == ["m3"]
    assert {(c["data-broker"], c["data-offset"]) for c in by_class["diverged"]} == {
        ("1", "1"),
        ("2", "1"),
    }
    assert [s["data-leader"] for s in by_class["leader-span"]] == ["1", "1", "-1", "2"]
    assert len(by_class["offline"]) == 1
    # broker 1 paused then down, from the marks
    assert [p["class"] for p in by_class["process"]] == ["process paused", "process down"]
    # one LEO path for broker 2 (it always answered), broker 1's ends when it stopped answering
    assert [p["data-broker"] for p in by_class["log_end_offset"]] == ["1", "2"]


def test_json_has_every_part_and_the_verdict() -> None:
    data = json.loads(json.dumps(_run().to_json()))
    assert data["name"] == "lost-ack-hw"
    assert data["held"] is True
    assert [m["kind"] for m in data["marks"]] == ["pause", "kill", "election"]
    assert data["replica_logs"]["2"] == [[0, "m1"], [1, "m3"]]
    assert data["samples"][0]["replicas"][1]["log_end_offset"] == 2


def test_list_names_every_scenario_with_its_variants() -> None:
    lines = list_text().splitlines()
    assert [line.split()[0] for line in lines] == list(SCENARIOS)
    assert "[variants: hw, epoch]" in lines[0]
    assert {"lost-ack", "diverge", "controller-failover", "isr", "min-isr", "unclean"} <= set(
        SCENARIOS
    )
