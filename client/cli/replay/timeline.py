"""What a replay measured, as values: samples of every replica over time, the marks (kills,
pauses, elections, ...), the narrated steps, and the outcome checked against the promise.

    run = Run(scenario="lost-ack", variant="hw", ...)
    json.dumps(run.to_json())         # what --json writes

Every time is seconds since the run began. -1 is "not known" (a dead or paused broker does not
answer). Pure values: safe from any thread.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = [
    "Check",
    "Mark",
    "RecordFate",
    "ReplicaSample",
    "Run",
    "Sample",
    "Step",
]

UNKNOWN = -1

# Mark kinds. Faults and actions the replay did, then what the cluster did on its own.
ACTIONS = ("kill", "pause", "resume", "start", "stop", "power-cut", "produce", "config", "elect")
REACTIONS = ("election", "controller", "isr", "fenced", "truncated")


@dataclass(frozen=True)
class ReplicaSample:
    broker_id: int
    process: str  # "up", "paused", "down" (as the replay left the process)
    log_end_offset: int = UNKNOWN
    high_watermark: int = UNKNOWN
    leader_epoch: int = UNKNOWN  # the partition's leader epoch as this broker knows it


@dataclass(frozen=True)
class Sample:
    t: float
    leader: int  # -1 = none (offline)
    leader_epoch: int
    isr: tuple[int, ...]
    controller_id: int
    controller_epoch: int
    replicas: tuple[ReplicaSample, ...]

    def replica(self, broker_id: int) -> ReplicaSample:
        for r in self.replicas:
            if r.broker_id == broker_id:
                return r
        return ReplicaSample(broker_id, "down")


@dataclass(frozen=True)
class Mark:
    t: float
    kind: str  # one of ACTIONS or REACTIONS
    label: str  # short: "kill 1", "leader 2 epoch 3", "m2 acked at 1"
    broker_id: int = UNKNOWN


@dataclass(frozen=True)
class Step:
    number: int
    t: float
    title: str
    why: str
    state: tuple[str, ...]  # the narration's lines of cluster state after the step


@dataclass(frozen=True)
class Check:
    what: str
    promised: str
    measured: str
    held: bool


@dataclass(frozen=True)
class RecordFate:
    value: str
    offset: int  # where the leader that acknowledged it put it; -1 when refused
    acked: bool
    answer: str  # the produce's error name (NONE when acked)
    kept: bool  # readable at the end (a consumer reads it from the leader)


@dataclass(frozen=True)
class Run:
    scenario: str
    variant: str  # "" or "hw" / "epoch" / "on" / "off"
    title: str
    promise: str  # what the mechanism promises, in one sentence
    expect_violation: bool  # the variant shows the mechanism missing: the promise must break
    topic: str
    partition: int
    replicas: tuple[int, ...]
    steps: tuple[Step, ...] = ()
    samples: tuple[Sample, ...] = ()
    marks: tuple[Mark, ...] = ()
    records: tuple[RecordFate, ...] = ()
    checks: tuple[Check, ...] = ()
    replica_logs: dict[int, list[tuple[int, str]]] = field(default_factory=dict)
    duration_s: float = 0.0

    @property
    def held(self) -> bool:
        """Every check came out as this variant expects."""
        return bool(self.checks) and all(c.held for c in self.checks)

    @property
    def name(self) -> str:
        return f"{self.scenario}-{self.variant}" if self.variant else self.scenario

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["name"] = self.name
        data["held"] = self.held
        data["replica_logs"] = {str(k): [list(r) for r in v] for k, v in self.replica_logs.items()}
        return data
