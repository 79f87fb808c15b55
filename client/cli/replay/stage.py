"""Where a scenario runs: the brokers it may kill, what it measures, and how it is told.

A scenario (scenarios.py) is a function of a ``Stage``::

    def lost_ack(stage: Stage) -> None:
        stage.produce("m1", acks=-1)
        stage.pause(1)                                   # a mark on the timeline
        stage.wait_until(lambda s: s.leader == 2, "broker 2 leads")   # sampling meanwhile
        stage.step("Broker 2 is elected", "why ...")     # narrated with the state now
        stage.check("m2 kept", promised="...", measured="...", held=...)

Every action is a ``Mark``; ``sample()`` reads the cluster through the ``minikafka watch``
model (client/cli/watch: DescribeCluster, Metadata, every live broker's DescribeReplicas) and
adds marks for what the cluster did by itself: a new leader or leader epoch (an election), a
new controller or controller epoch, an ISR change. Waits sample every ``_SAMPLE_EVERY_S`` so
the timeline shows the HW and LEO moving between steps. ``beat_s`` is the pause after each
narrated step (``--speed`` divides it), ``interactive`` waits for Enter instead (``--pause``).

Not thread-safe: a Stage belongs to the replay's thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from minikafka.client.cli.replay.control import BrokerControl
from minikafka.client.cli.replay.narrate import state_lines
from minikafka.client.cli.replay.timeline import (
    UNKNOWN,
    Check,
    Mark,
    RecordFate,
    ReplicaSample,
    Sample,
    Step,
)
from minikafka.client.cli.replay.wire import ProduceAnswer, Wire
from minikafka.client.cli.watch.model import Snapshot
from minikafka.proto.errors import KafkaError

__all__ = ["Narrator", "Observer", "ReplayError", "Stage"]

_SAMPLE_EVERY_S = 0.25


class ReplayError(Exception):
    """The cluster did not do what the scenario waited for."""


class Observer(Protocol):
    """The cluster through the ``minikafka watch`` model, asked of the brokers named (the ones
    whose process runs: a paused one would hold every request until its timeout)."""

    def snapshot(self, answering: Sequence[int]) -> Snapshot: ...


class Narrator(Protocol):
    """Where the steps go: a terminal with a live view, plain lines, or nothing (tests)."""

    def step(self, step: Step) -> None: ...
    def sampled(self, sample: Sample) -> None: ...
    def wait_for_enter(self) -> None: ...


@dataclass
class _Produced:
    value: str
    answer: ProduceAnswer
    acks: int


@dataclass
class Stage:
    brokers: BrokerControl
    observer: Observer
    wire: Wire
    narrator: Narrator
    topic: str
    partition: int
    replicas: tuple[int, ...]
    beat_s: float = 1.0
    interactive: bool = False
    # Broker ids for the scenario's 1, 2, 3: locally themselves; on a cluster replay did not
    # start, the scenario's first broker (its controller) is the cluster's controller.
    cast: tuple[int, ...] = (1, 2, 3)
    # The brokers' configs in force (DescribeConfigs): the timers a scenario waits for.
    settings: Mapping[str, str] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)
    process: dict[int, str] = field(default_factory=dict)
    samples: list[Sample] = field(default_factory=list)
    _last_isr: tuple[int, ...] = ()  # the last ISR a sample could read
    marks: list[Mark] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    produced: list[_Produced] = field(default_factory=list)
    fates: list[RecordFate] = field(default_factory=list)  # set by finish()
    logs: dict[int, list[tuple[int, str]]] = field(default_factory=dict)  # set by finish()
    snapshot: Snapshot | None = None  # the watch model's last answer

    def t(self) -> float:
        return round(time.monotonic() - self.started, 2)

    def mark(self, kind: str, label: str, broker_id: int = UNKNOWN) -> None:
        self.marks.append(Mark(self.t(), kind, label, broker_id))

    # --- the processes ---------------------------------------------------------------------

    def seconds(self, key: str, default: float) -> float:
        """A ``*.ms`` or ``*.seconds`` broker config in seconds (``default`` when unknown)."""
        try:
            value = float(self.settings[key])
        except (KeyError, ValueError):
            return default
        return value / 1000 if key.endswith(".ms") else value

    def start(self, broker_id: int) -> None:
        self.brokers.start(broker_id)
        self.process[broker_id] = "up"
        self.mark("start", f"start {broker_id}", broker_id)

    def kill(self, broker_id: int) -> None:
        self.brokers.kill(broker_id)
        self.process[broker_id] = "down"
        self.mark("kill", f"kill -9 {broker_id}", broker_id)

    def stop(self, broker_id: int) -> None:
        self.brokers.stop(broker_id)
        self.process[broker_id] = "down"
        self.mark("stop", f"stop {broker_id}", broker_id)

    def pause(self, broker_id: int) -> None:
        self.brokers.pause(broker_id)
        self.process[broker_id] = "paused"
        self.mark("pause", f"SIGSTOP {broker_id}", broker_id)

    def resume(self, broker_id: int) -> None:
        self.brokers.resume(broker_id)
        self.process[broker_id] = "up"
        self.mark("resume", f"SIGCONT {broker_id}", broker_id)

    def power_cut(self, broker_id: int, offset: int) -> None:
        """The broker (down already) loses every batch from ``offset`` on: its page cache."""
        self.brokers.lose_unflushed_tail(broker_id, self.topic, self.partition, offset)
        self.mark("power-cut", f"{broker_id} loses offsets >= {offset}", broker_id)

    def address(self, broker_id: int) -> str:
        return self.brokers.address(broker_id)

    def control_address(self, broker_id: int) -> str:
        return self.brokers.control_address(broker_id)

    def elect_preferred(self) -> str:
        """Ask the controller for a preferred leader election of the partition (ElectLeaders,
        as kafka-leader-election.sh); the error name of the answer."""
        from minikafka.client.admin import AdminClient, ElectionType
        from minikafka.proto.common import TopicPartition

        tp = TopicPartition(self.topic, self.partition)
        up = [self.address(b) for b, state in sorted(self.process.items()) if state == "up"]
        with AdminClient(up, request_timeout_ms=5000) as admin:
            try:
                error = admin.elect_leaders(ElectionType.PREFERRED, [tp]).get(tp)
            except KafkaError as exc:
                error = exc
        answer = "NONE" if error is None else error.code.name
        self.mark("elect", f"preferred election: {answer}")
        return answer

    # --- records ---------------------------------------------------------------------------

    def produce(
        self, value: str, *, acks: int, to: int | None = None, timeout_ms: int = 3000
    ) -> ProduceAnswer:
        """One record to the leader (or ``to``), acks as given; its fate is measured later."""
        target = to if to is not None else self.last().leader
        if target < 0:
            answer = ProduceAnswer("LEADER_NOT_AVAILABLE", -1)
        else:
            answer = self.wire.produce(
                self.address(target),
                self.topic,
                self.partition,
                [value.encode()],
                acks=acks,
                timeout_ms=timeout_ms,
            )
        self.produced.append(_Produced(value, answer, acks))
        label = f"{value} acks={'all' if acks == -1 else acks}: "
        label += f"@{answer.base_offset}" if answer.ok else answer.error
        self.mark("produce", label, target)
        return answer

    def record_fates(self, readable: Mapping[str, int]) -> list[RecordFate]:
        """Each produced record: acknowledged or not, and whether ``readable`` (value ->
        offset, what a consumer reads at the end) has it."""
        return [
            RecordFate(
                p.value,
                p.answer.base_offset,
                p.answer.ok,
                p.answer.error,
                p.value in readable,
            )
            for p in self.produced
        ]

    def finish(self) -> dict[str, int]:
        """What a consumer reads from the leader now (value -> offset); also sets ``fates``
        and ``logs`` (each replica's files) for the outcome."""
        leader = self.last().leader
        readable: dict[str, int] = {}
        if leader >= 0:
            for offset, value in self.wire.read_committed(
                self.address(leader), self.topic, self.partition
            ):
                readable[(value or b"").decode("utf-8", "replace")] = offset
        self.fates = self.record_fates(readable)
        self.logs = self.replica_logs()
        return readable

    def replica_logs(self) -> dict[int, list[tuple[int, str]]]:
        """Each replica's records as its segment files hold them now."""
        return {
            b: [
                (offset, (value or b"").decode("utf-8", "replace"))
                for offset, value in self.brokers.replica_records(b, self.topic, self.partition)
            ]
            for b in self.replicas
        }

    # --- observing -------------------------------------------------------------------------

    def sample(self) -> Sample:
        try:
            up = [b for b, state in sorted(self.process.items()) if state == "up"]
            snapshot = self.observer.snapshot(up)
        except KafkaError:
            snapshot = Snapshot(time.time())
        self.snapshot = snapshot
        view = next(
            (
                p
                for p in snapshot.partitions
                if (p.topic, p.partition) == (self.topic, self.partition)
            ),
            None,
        )
        reports = {r.broker_id: r for r in view.reports} if view is not None else {}
        replicas = []
        for broker_id in self.replicas:
            state = self.process.get(broker_id, "down")
            report = reports.get(broker_id)
            if report is None or state != "up":
                replicas.append(ReplicaSample(broker_id, state))
            else:
                replicas.append(
                    ReplicaSample(
                        broker_id,
                        state,
                        report.log_end_offset,
                        report.high_watermark,
                        report.leader_epoch,
                    )
                )
        sample = Sample(
            self.t(),
            view.leader if view is not None else UNKNOWN,
            view.leader_epoch if view is not None else UNKNOWN,
            view.isr if view is not None else (),
            snapshot.controller_id,
            snapshot.controller_epoch,
            tuple(replicas),
        )
        self._reactions(sample)
        self.samples.append(sample)
        if sample.isr:
            self._last_isr = sample.isr
        self.narrator.sampled(sample)
        return sample

    def _reactions(self, new: Sample) -> None:
        old = self.samples[-1] if self.samples else None
        if old is None:
            return
        if new.leader_epoch > old.leader_epoch or (
            new.leader != old.leader and new.leader_epoch >= 0
        ):
            leader = "none" if new.leader < 0 else str(new.leader)
            self.mark("election", f"leader {leader} epoch {new.leader_epoch}", new.leader)
        elif new.isr and self._last_isr and set(new.isr) != set(self._last_isr):
            # Against the last ISR seen: a sample that could not read one (a paused broker
            # answering nothing in time) in between must not hide the change.
            self.mark("isr", "ISR [" + ",".join(map(str, new.isr)) + "]")
        if new.controller_epoch > old.controller_epoch >= 0 or (
            new.controller_id != old.controller_id and new.controller_id >= 0
        ):
            self.mark(
                "controller",
                f"controller {new.controller_id} epoch {new.controller_epoch}",
                new.controller_id,
            )

    def broker_epoch(self, broker_id: int) -> int:
        """The broker's registration epoch (czxid of /brokers/ids/<id>) as it last said."""
        view = self.snapshot.broker(broker_id) if self.snapshot is not None else None
        return view.broker_epoch if view is not None else UNKNOWN

    def last(self) -> Sample:
        return self.samples[-1] if self.samples else self.sample()

    def wait_until(
        self, predicate: Callable[[Sample], bool], what: str, timeout_s: float = 20.0
    ) -> Sample:
        deadline = time.monotonic() + timeout_s
        while True:
            sample = self.sample()
            if predicate(sample):
                return sample
            if time.monotonic() >= deadline:
                raise ReplayError(f"timed out after {timeout_s:g} s waiting for {what}")
            time.sleep(_SAMPLE_EVERY_S)

    def hold(self, seconds: float) -> None:
        """Let ``seconds`` pass, sampling (a scenario waiting for a timer of the cluster)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.sample()
            time.sleep(min(_SAMPLE_EVERY_S, max(deadline - time.monotonic(), 0)))

    # --- telling ---------------------------------------------------------------------------

    def step(self, title: str, why: str) -> Step:
        sample = self.sample()
        step = Step(
            len(self.steps) + 1,
            sample.t,
            title,
            why,
            state_lines(sample, topic=self.topic, partition=self.partition),
        )
        self.steps.append(step)
        self.narrator.step(step)
        if self.interactive:
            self.narrator.wait_for_enter()
        elif self.beat_s > 0:
            self.hold(self.beat_s)
        return step

    def check(self, what: str, *, promised: str, measured: str, held: bool) -> None:
        self.checks.append(Check(what, promised, measured, held))
