"""The replay's words: a step's state lines from a sample, a step as printed, the outcome.

    state_lines(sample, topic="replay", partition=0)
    # controller 3 (epoch 1)   replay-0: leader 1, leader epoch 1, ISR [1,2,3]
    #   broker 1  up      leader    LEO 2  HW 2  epoch 1
    #   broker 2  up      follower  LEO 2  HW 1  epoch 1
    #   broker 3  down              LEO ?  HW ?  epoch ?
    step_text(step)          # "[3] +4.2s  Pause broker 1 ..." then "why" and the state lines
    outcome_text(run)        # the records (acked? kept?) and each check against the promise

Pure functions of values: no I/O.
"""

from __future__ import annotations

import textwrap

from minikafka.client.cli.replay.timeline import UNKNOWN, Run, Sample, Step
from minikafka.client.cli.watch.model import format_ids

__all__ = ["outcome_text", "state_lines", "step_text"]

_WIDTH = 96


def _num(value: int) -> str:
    return "?" if value == UNKNOWN else str(value)


def state_lines(sample: Sample, *, topic: str, partition: int) -> tuple[str, ...]:
    """The controller and the partition as ZooKeeper's state reaches the brokers, then each
    replica as its own broker reports it (a paused or dead one cannot: ``?``)."""
    controller = "none" if sample.controller_id < 0 else str(sample.controller_id)
    leader = "none (offline)" if sample.leader < 0 else str(sample.leader)
    lines = [
        f"controller {controller} (epoch {_num(sample.controller_epoch)})   "
        f"{topic}-{partition}: leader {leader}, leader epoch {_num(sample.leader_epoch)}, "
        f"ISR {format_ids(sample.isr)}"
    ]
    for r in sample.replicas:
        role = "leader" if r.broker_id == sample.leader else "follower"
        if r.process != "up":
            role = ""
        lines.append(
            f"  broker {r.broker_id}  {r.process:<6}  {role:<8}  LEO {_num(r.log_end_offset):>2}  "
            f"HW {_num(r.high_watermark):>2}  epoch {_num(r.leader_epoch)}"
        )
    return tuple(lines)


def step_text(step: Step) -> str:
    head = f"[{step.number}] +{step.t:.1f}s  {step.title}"
    why = textwrap.fill(step.why, _WIDTH, initial_indent="    ", subsequent_indent="    ")
    state = "\n".join("    " + line for line in step.state)
    return "\n".join(part for part in (head, why, state) if part.strip())


def outcome_text(run: Run) -> str:
    lines = [f"Outcome of {run.name}: {run.promise}"]
    for record in run.records:
        where = f"offset {record.offset}" if record.offset >= 0 else "no offset"
        acked = "acked" if record.acked else f"refused ({record.answer})"
        kept = "kept" if record.kept else "LOST" if record.acked else "absent"
        lines.append(f"  {record.value:<4} {acked:<28} {where:<10} {kept}")
    if run.replica_logs:
        for broker_id, log in sorted(run.replica_logs.items()):
            text = " ".join(f"{offset}:{value}" for offset, value in log) or "(empty)"
            lines.append(f"  broker {broker_id} log: {text}")
    for check in run.checks:
        mark = "as expected" if check.held else "NOT as expected"
        lines.append(f"  - {check.what}: {check.measured} [{mark}; promised: {check.promised}]")
    verdict = "held" if run.held else "DID NOT HOLD"
    if run.expect_violation:
        verdict = (
            "the failure happened, as it did before the mechanism existed"
            if run.held
            else "the failure did NOT happen (the replay could not reproduce it)"
        )
    lines.append(f"  => {verdict}")
    return "\n".join(lines)
