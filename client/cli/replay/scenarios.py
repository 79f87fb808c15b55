"""The stories ``minikafka replay`` tells, each a function of a Stage (stage.py).

Brokers are 1, 2 and 3. Each scenario names the broker started first (it wins /controller, so
the story knows where the controller is), the partition's assignment (preferred leader first),
its broker and topic configs, and its variants: the two KIP-101 stories run with
``minikafka.test.follower.truncation=high_watermark`` ("hw": a follower truncates to its own HW
when it becomes a follower, Kafka before KIP-101) and without it ("epoch": it asks the leader
for the end offset of its latest epoch); unclean election runs with
``unclean.leader.election.enable`` true and false. A variant that runs without the mechanism
(``expect_violation``) must break the promise, the others must keep it.

KIP-101's first story has B truncate when it restarts. Here the controller, as Kafka's since
ZooKeeper mode's replica state machine, takes a restarted broker out of every ISR, so B could
not then be elected; B truncates instead when a new leader epoch makes it a follower again (the
third replica's controlled shutdown), which is the same code path: before KIP-101 a replica
truncated to its HW whenever it became a follower, not only at startup.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from minikafka.client.cli.replay.stage import ReplayError, Stage
from minikafka.client.cli.replay.timeline import Sample

__all__ = ["SCENARIOS", "Scenario", "Variant", "scenario_names"]

TRUNCATION_KEY = "minikafka.test.follower.truncation"  # broker/replication/replica_manager.py
ALL = -1


@dataclass(frozen=True)
class Variant:
    name: str  # "" when the scenario has one
    overrides: Mapping[str, str] = field(default_factory=dict)  # broker configs at start
    expect_violation: bool = False
    note: str = ""
    topic_configs: Mapping[str, str] = field(default_factory=dict)
    # Why this variant needs brokers replay starts itself ("" when a running cluster will do).
    own_brokers: str = ""


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    promise: str
    play: Callable[[Stage, Variant], None]
    variants: tuple[Variant, ...] = (Variant(""),)
    assignment: tuple[int, ...] = (1, 2, 3)
    first: int = 3  # started first: the controller
    # Broker configs replay's own brokers start with; on a running cluster the scenario reads
    # the configs in force instead (Stage.settings) and waits for those timers.
    overrides: Mapping[str, str] = field(default_factory=dict)
    topic_configs: Mapping[str, str] = field(default_factory=dict)
    own_brokers: str = ""  # as Variant.own_brokers, for every variant

    def needs_own_brokers(self, variant: Variant) -> str:
        """Why ``variant`` cannot run on a cluster replay did not start ("" when it can)."""
        return self.own_brokers or variant.own_brokers

    def variant(self, name: str | None) -> list[Variant]:
        if name is None:
            return list(self.variants)
        found = [v for v in self.variants if v.name == name]
        if not found:
            names = ", ".join(v.name for v in self.variants)
            raise ValueError(f"{self.name} has no variant {name!r} (it has: {names})")
        return found


_TRUNCATION_AT_START = (
    f"the pre-KIP-101 run starts its brokers with the test-only key {TRUNCATION_KEY}, which a "
    "running cluster does not have"
)


def _hw_and_epoch(epoch_needs: str) -> tuple[Variant, Variant]:
    return (
        Variant(
            "hw",
            {TRUNCATION_KEY: "high_watermark"},
            expect_violation=True,
            note="followers truncate to their own HW (Kafka before KIP-101)",
            own_brokers=_TRUNCATION_AT_START,
        ),
        Variant(
            "epoch",
            note="followers truncate by leader epoch (KIP-101, Kafka since 0.11)",
            own_brokers=epoch_needs,
        ),
    )


def _ids(*broker_ids: int) -> tuple[int, ...]:
    return tuple(sorted(broker_ids))


def _same(isr: tuple[int, ...], broker_ids: tuple[int, ...]) -> bool:
    """The same members, whatever the order ZooKeeper's state holds them in."""
    return sorted(isr) == sorted(broker_ids)


def _show(broker_ids: tuple[int, ...]) -> str:
    return "[" + ",".join(map(str, sorted(broker_ids))) + "]"


def _in_sync(stage: Stage, leader: int, isr: tuple[int, ...], timeout_s: float = 30) -> Sample:
    return stage.wait_until(
        lambda s: s.leader == leader and _same(s.isr, isr),
        f"leader {leader} with ISR {_show(isr)}",
        timeout_s,
    )


def _caught_up(stage: Stage, brokers: tuple[int, ...], offset: int) -> Sample:
    """Until each of ``brokers`` reports LEO and HW ``offset``."""
    return stage.wait_until(
        lambda s: all(
            s.replica(b).log_end_offset == offset and s.replica(b).high_watermark == offset
            for b in brokers
        ),
        f"brokers {list(brokers)} at LEO = HW = {offset}",
    )


def _acked_survive(stage: Stage, promised: str, *, breaks: bool = False) -> None:
    """Reads the end state (Stage.finish) and checks that no acknowledged record is lost;
    ``breaks``: this run is expected to lose one."""
    stage.finish()
    lost = [f.value for f in stage.fates if f.acked and not f.kept]
    acked = [f.value for f in stage.fates if f.acked]
    stage.check(
        "acknowledged records readable at the end",
        promised=promised,
        measured=f"lost {', '.join(lost)}" if lost else f"all {len(acked)} kept",
        held=bool(lost) == breaks,
    )


def _replicas_agree(stage: Stage, *, breaks: bool = False) -> None:
    logs = {b: tuple(log) for b, log in stage.logs.items()}
    differ = sorted(
        {
            offset
            for log in logs.values()
            for offset, value in log
            if any(dict(other).get(offset, value) != value for other in logs.values())
        }
    )
    stage.check(
        "replicas hold the same record at every offset",
        promised="replicas never diverge",
        measured=f"differ at offsets {differ}" if differ else "identical",
        held=bool(differ) == breaks,
    )


# --- KIP-101 story 1: an acknowledged record lost ---------------------------------------------


def lost_ack(stage: Stage, variant: Variant) -> None:
    a, b, c = 1, 2, 3
    hw = variant.name == "hw"
    _in_sync(stage, a, (1, 2, 3))
    stage.step(
        f"Partition {stage.topic}-0 on brokers 1, 2, 3; A = broker {a} leads, B = broker {b} is "
        "the controller",
        f"Variant {variant.name}: {variant.note}. Followers learn the HW from the leader's "
        "fetch answers; here a follower's fetch that finds nothing new is parked on the "
        "leader for replica.fetch.wait.max.ms (3 s), so a follower's HW lags by that much.",
    )
    stage.produce("m1", acks=ALL)
    _caught_up(stage, (a, b, c), 1)
    stage.hold(0.5)  # a HW checkpoint (replica.high.watermark.checkpoint.interval.ms)
    stage.step(
        "m1 produced with acks=all: every replica has it and knows HW 1",
        "The leader answered once every ISR member had fetched past m1.",
    )
    answer = stage.produce("m2", acks=ALL)
    if not answer.ok:
        raise ReplayError(f"m2 was not acknowledged: {answer.error}")
    stage.wait_until(lambda s: s.replica(b).log_end_offset == 2, "B to have m2", timeout_s=5)
    stage.hold(0.5)  # A checkpoints HW 2 (B's parked fetch still holds HW 2 back from B)
    stage.step(
        "m2 produced with acks=all and acknowledged: B holds m2 but its HW is still 1",
        "B and C fetched m2, the leader's HW moved to 2 and it answered the producer. B hears "
        "of HW 2 only in the answer to its next fetch, which the leader parks.",
    )
    stage.pause(a)
    stage.step(
        f"A (broker {a}) stops answering: SIGSTOP",
        "A is frozen, not dead: ZooKeeper still holds its registration until its session "
        "times out (zookeeper.session.timeout.ms, 3 s). B's parked fetch never returns.",
    )
    epoch = stage.last().leader_epoch
    stage.stop(c)
    stage.wait_until(
        lambda s: s.replica(b).leader_epoch > epoch, f"B to learn leader epoch {epoch + 1}"
    )
    stage.hold(0.5)
    truncated = stage.last().replica(b).log_end_offset
    stage.step(
        f"C (broker {c}) shuts down: the controller drops it from the ISR, leader epoch + 1",
        "A new leader epoch makes B a follower again. "
        + (
            f"Before KIP-101 a new follower truncated to its own HW: B cut its log to 1 "
            f"(LEO now {truncated}), m2 is gone from B."
            if hw
            else f"With leader epochs B asks the leader (A) where its epoch ended before it "
            f"truncates anything; A cannot answer, so B keeps m2 (LEO {truncated})."
        ),
    )
    stage.kill(a)
    stage.wait_until(lambda s: s.leader == b, "B to be elected", timeout_s=20)
    stage.step(
        "A dies (kill -9); its session expires and the controller elects B (in the ISR)",
        "B leads with what its log holds: "
        + ("m1 only. The acknowledged m2 is lost." if hw else "m1 and m2."),
    )
    stage.produce("m3", acks=ALL)
    stage.start(a)
    stage.start(c)
    _in_sync(stage, b, (1, 2, 3), timeout_s=40)
    stage.step(
        "A and C come back as followers of B and catch up",
        (
            "Before KIP-101 each truncated to its own HW: A's is 2, so A kept m2 at offset 1 "
            "where B has m3, and fetched from 2 on. m2 is lost to consumers, and A disagrees."
            if hw
            else "Each asked B where its last epoch ended and truncated there: every replica "
            "holds B's log, m2 included."
        ),
    )
    _acked_survive(stage, "m1 and m2 survive", breaks=hw)
    _replicas_agree(stage, breaks=hw)


# --- KIP-101 story 2: replicas diverge ---------------------------------------------------------


def diverge(stage: Stage, variant: Variant) -> None:
    a, b = 1, 2
    hw = variant.name == "hw"
    _in_sync(stage, a, (1, 2))
    stage.step(
        f"Partition {stage.topic}-0 on A = broker {a} (leader) and B = broker {b}; broker 3 "
        "is the controller",
        f"Variant {variant.name}: {variant.note}.",
    )
    stage.produce("m1", acks=ALL)
    stage.produce("m2", acks=ALL)
    _caught_up(stage, (a, b), 2)
    stage.hold(0.5)  # the HW checkpoint
    stage.step(
        "m1 and m2 produced with acks=all: both replicas hold them, HW 2",
        "Both are committed; B has written m2 but not yet flushed it to disk.",
    )
    stage.kill(a)
    stage.wait_until(lambda s: s.leader == b, "B to take over from A", timeout_s=20)
    stage.kill(b)
    stage.power_cut(b, 1)
    stage.wait_until(lambda s: s.leader < 0, "the partition to go offline", timeout_s=20)
    stage.step(
        "Power failure: A dies, B takes over for a moment and dies too; B's unflushed m2 is "
        "gone from its disk",
        "A kill -9 keeps what the page cache held; a power cut does not, so the replay cuts "
        "m2 off B's segment as the cut would. (A dies first so that B, the last to die, is "
        "the ISR's last member: the controller keeps it there with no leader.)",
    )
    stage.start(b)
    stage.wait_until(lambda s: s.leader == b, "B to be elected", timeout_s=20)
    stage.produce("m3", acks=ALL)
    stage.step(
        "B comes back first and is elected; m3 is written at offset 1",
        "B's log ends after m1, so the new leader puts m3 where A still holds m2.",
    )
    stage.start(a)
    _in_sync(stage, b, (1, 2), timeout_s=30)
    stage.produce("m4", acks=ALL)
    stage.wait_until(
        lambda s: s.replica(a).log_end_offset == s.replica(b).log_end_offset == 3,
        "A to fetch up to m4",
    )
    stage.step(
        "A comes back as B's follower and catches up",
        (
            "Before KIP-101 A truncated to its own HW, 2: it kept m2 at offset 1 and fetched "
            "from 2 on. A and B now hold different records at offset 1, for ever, and both "
            "count as in sync."
            if hw
            else "A asked B where its last epoch (0) ended on B: offset 1. A truncated m2 and "
            "fetched m3 and m4: the replicas agree."
        ),
    )
    stage.finish()
    _replicas_agree(stage, breaks=hw)
    stage.check(
        "m2, acknowledged, after every replica lost power",
        promised="acks=all keeps a record while one replica that has it survives; none did",
        measured="lost" if any(f.value == "m2" and not f.kept for f in stage.fates) else "kept",
        held=True,
    )


# --- controller failover and a zombie controller -----------------------------------------------


def controller_failover(stage: Stage, variant: Variant) -> None:
    leader, other, old = stage.cast
    session = stage.seconds("zookeeper.session.timeout.ms", 6)
    first = _in_sync(stage, leader, stage.replicas)
    epoch = first.controller_epoch
    stage.step(
        f"Broker {old} holds /controller (controller epoch {epoch}); broker {leader} leads the "
        "partition",
        "The controller is whichever broker created the ephemeral /controller first; "
        "/controller_epoch counts the elections.",
    )
    stage.pause(old)
    stage.step(
        f"The controller (broker {old}) freezes: SIGSTOP",
        f"Its ZooKeeper session stays open until zookeeper.session.timeout.ms ({session:g} s) "
        "passes without a heartbeat; until then /controller is still its.",
    )
    now = stage.wait_until(
        lambda s: s.controller_id not in (old, -1) and s.controller_epoch > epoch,
        "a new controller",
        timeout_s=session + 15,
    )
    stage.step(
        f"Broker {now.controller_id} wins /controller; /controller_epoch {epoch} -> "
        f"{now.controller_epoch}",
        f"The session expired, ZooKeeper deleted /controller and /brokers/ids/{old}; the "
        f"brokers watching raced to create /controller. The new controller takes broker {old} "
        "out of the ISR.",
    )
    leader_epoch = now.leader_epoch
    answer = stage.wire.leader_and_isr(
        stage.control_address(leader),
        controller_id=old,
        controller_epoch=epoch,
        broker_epoch=stage.broker_epoch(leader),
        topic=stage.topic,
        partition=stage.partition,
        leader=other,
        leader_epoch=leader_epoch + 10,
        isr=[other],
        replicas=list(stage.replicas),
    )
    stage.mark("fenced", f"zombie LeaderAndIsr: {answer}", leader)
    stage.step(
        f"A zombie's request: LeaderAndIsr from controller {old} at epoch {epoch}, moving the "
        f"leadership to broker {other} -> {answer}",
        f"What broker {old} would send if it woke up believing it is still the controller. "
        f"Broker {leader} has seen controller epoch {now.controller_epoch}: an older epoch is "
        "refused and nothing changes.",
    )
    stage.resume(old)
    back = stage.wait_until(
        lambda s: _same(s.isr, stage.replicas), f"broker {old} back in the ISR", timeout_s=30
    )
    stage.produce("m1", acks=ALL)
    stage.step(
        f"Broker {old} wakes: its session is gone, it registers again as a plain broker",
        f"It learns it lost /controller and stays a follower; controller {back.controller_id} "
        f"(epoch {back.controller_epoch}) puts it back in the ISR once it caught up.",
    )
    stage.check(
        "controller epoch after the failover",
        promised="a new controller bumps /controller_epoch by one",
        measured=f"{epoch} -> {now.controller_epoch} (controller {now.controller_id})",
        held=now.controller_epoch == epoch + 1 and now.controller_id != old,
    )
    stage.check(
        "the zombie controller's LeaderAndIsr",
        promised="refused with STALE_CONTROLLER_EPOCH",
        measured=answer,
        held=answer == "STALE_CONTROLLER_EPOCH",
    )
    _acked_survive(stage, "m1 survives")
    stage.check(
        "leadership after the zombie's request",
        promised=f"unchanged (broker {leader})",
        measured=f"leader {stage.last().leader}",
        held=stage.last().leader == leader,
    )


# --- ISR shrink and expand ----------------------------------------------------------------------


def isr_shrink_expand(stage: Stage, variant: Variant) -> None:
    leader, follower, other = stage.cast
    lag = stage.seconds("replica.lag.time.max.ms", 30)
    full, rest = stage.replicas, _ids(leader, other)
    _in_sync(stage, leader, full)
    stage.produce("m1", acks=ALL)
    stage.step(
        f"m1 produced with acks=all to leader {leader}, ISR {_show(full)}",
        "acks=all waits until every ISR member has fetched the record (the HW passed it).",
    )
    stage.pause(follower)
    # The produce outlasts the lag time: it is answered when the ISR shrinks, not timed out.
    answer = stage.produce("m2", acks=ALL, timeout_ms=int((lag + 10) * 1000))
    shrunk = stage.wait_until(lambda s: _same(s.isr, rest), "the ISR to shrink", timeout_s=lag + 10)
    stage.step(
        f"Follower {follower} paused; m2 (acks=all) waits, then the ISR shrinks to "
        f"{_show(rest)} and m2 is acknowledged: {answer.error}",
        f"A follower that has not caught up for replica.lag.time.max.ms ({lag:g} s) leaves the "
        "ISR: the leader writes the new ISR to the partition's state znode. With the smaller "
        "ISR the HW moves and the parked produce completes.",
    )
    stage.produce("m3", acks=ALL)
    stage.step(
        f"m3 (acks=all) is acknowledged at once by the leader and broker {other}",
        f"Broker {follower} is not waited for: it is out of the ISR.",
    )
    stage.resume(follower)
    expanded = stage.wait_until(
        lambda s: _same(s.isr, full), "the ISR to expand", timeout_s=lag + 10
    )
    stage.step(
        f"Follower {follower} resumes, fetches m2 and m3 and rejoins: ISR {_show(full)}",
        "A follower whose LEO reaches the leader's HW goes back into the ISR.",
    )
    stage.check(
        "ISR while the follower was paused",
        promised="shrinks to the replicas that keep up",
        measured=f"ISR {_show(shrunk.isr)}",
        held=_same(shrunk.isr, rest),
    )
    stage.check(
        "acks=all while the follower was paused",
        promised="answered once the ISR shrank",
        measured=answer.error,
        held=answer.ok,
    )
    stage.check(
        "ISR after the follower caught up",
        promised="expands back",
        measured=f"ISR {_show(expanded.isr)}",
        held=_same(expanded.isr, full),
    )
    _acked_survive(stage, "m1, m2 and m3 survive")
    _replicas_agree(stage)


# --- min.insync.replicas ------------------------------------------------------------------------


def min_insync(stage: Stage, variant: Variant) -> None:
    leader, second, third = stage.cast
    full = stage.replicas
    _in_sync(stage, leader, full)
    stage.produce("m1", acks=ALL)
    stage.step(
        f"Topic with min.insync.replicas=2; m1 produced with acks=all, ISR {_show(full)}",
        "acks=all is refused when the ISR is smaller than min.insync.replicas: the record "
        "would otherwise live on fewer replicas than the topic asks for.",
    )
    stage.kill(third)
    _in_sync(stage, leader, _ids(leader, second))
    m2 = stage.produce("m2", acks=ALL)
    stage.step(
        f"Broker {third} dies: ISR {_show(_ids(leader, second))}, still 2 in sync; m2 "
        f"acks=all -> {m2.error}",
        "Two in-sync replicas meet min.insync.replicas=2.",
    )
    stage.kill(second)
    _in_sync(stage, leader, (leader,))
    m3 = stage.produce("m3", acks=ALL)
    m4 = stage.produce("m4", acks=1)
    stage.step(
        f"Broker {second} dies too: ISR [{leader}]; m3 acks=all -> {m3.error}; m4 acks=1 -> "
        + (f"acknowledged at offset {m4.base_offset}" if m4.ok else m4.error),
        "Below min.insync.replicas the leader refuses acks=all before appending; acks=1 "
        f"only asks the leader. m4 now lives on broker {leader} alone: if its disk died now, "
        "m4 would be gone although it was acknowledged (the unclean scenario shows that "
        "loss).",
    )
    stage.start(second)
    stage.start(third)
    _in_sync(stage, leader, full, timeout_s=40)
    stage.step(
        f"Brokers {second} and {third} return and catch up; acks=all works again",
        "They fetch m4 from the leader; the ISR is whole.",
    )
    stage.check(
        f"acks=all with ISR {_show(_ids(leader, second))}",
        promised="acknowledged",
        measured=m2.error,
        held=m2.ok,
    )
    stage.check(
        f"acks=all with ISR [{leader}] < min.insync.replicas",
        promised="refused with NOT_ENOUGH_REPLICAS",
        measured=m3.error,
        held=m3.error == "NOT_ENOUGH_REPLICAS",
    )
    stage.check(
        f"acks=1 with ISR [{leader}]",
        promised="acknowledged by the leader alone",
        measured=m4.error,
        held=m4.ok,
    )
    _acked_survive(stage, f"m1, m2 and m4 survive (broker {leader} never died)")


# --- unclean leader election --------------------------------------------------------------------


def unclean(stage: Stage, variant: Variant) -> None:
    on = variant.name == "on"
    leader, follower = stage.cast[0], stage.cast[1]
    both = stage.replicas
    _in_sync(stage, leader, both)
    stage.produce("m1", acks=ALL)
    stage.step(
        f"Partition on brokers {leader} (leader) and {follower}; "
        f"unclean.leader.election.enable={str(on).lower()}",
        variant.note + ".",
    )
    stage.kill(follower)
    _in_sync(stage, leader, (leader,))
    stage.produce("m2", acks=ALL)
    stage.step(
        f"Follower {follower} dies: ISR [{leader}]; m2 is acknowledged (acks=all) by broker "
        f"{leader} alone",
        "The ISR is only the leader now (min.insync.replicas=1), so acks=all waits for "
        "nobody else.",
    )
    stage.kill(leader)
    stage.wait_until(lambda s: s.leader < 0, "the partition to go offline", timeout_s=30)
    stage.step(
        f"Leader {leader} dies: no replica of the ISR is alive, the partition is offline",
        f"The ISR keeps its last member, {leader}: only {leader} holds everything acknowledged.",
    )
    stage.start(follower)
    if on:
        elected = stage.wait_until(
            lambda s: s.leader == follower, f"{follower} to be elected", timeout_s=30
        )
        stage.produce("m3", acks=ALL)
        stage.step(
            f"Broker {follower} returns and is elected although it is not in the ISR (unclean)",
            f"Availability first: {follower} leads with what it has, which does not include "
            "m2; m3 takes m2's offset.",
        )
        stage.start(leader)
        _in_sync(stage, follower, both, timeout_s=30)
        stage.step(
            f"Broker {leader} returns as {follower}'s follower and truncates m2 away",
            f"It asks {follower} where epoch 0 ended (offset 1) and truncates there: the "
            "acknowledged m2 is gone from every replica.",
        )
        stage.check(
            "leader elected while no ISR member was alive",
            promised=f"the out-of-sync replica {follower} (unclean)",
            measured=f"leader {elected.leader}",
            held=elected.leader == follower,
        )
        _acked_survive(stage, "every acknowledged record survives", breaks=True)
    else:
        stage.hold(4)
        offline = stage.last()
        stage.step(
            f"Broker {follower} returns, but the partition stays offline",
            f"{follower} is not in the ISR: electing it would lose what only {leader} had. The "
            f"partition waits for {leader}.",
        )
        stage.start(leader)
        _in_sync(stage, leader, both, timeout_s=30)
        stage.step(
            f"Broker {leader} returns, is elected from the ISR, and {follower} catches up",
            "Nothing acknowledged was lost; the price was the time offline.",
        )
        stage.check(
            "leader while only the out-of-sync replica was alive",
            promised="none: the partition waits offline",
            measured=f"leader {offline.leader}",
            held=offline.leader < 0,
        )
        _acked_survive(stage, "every acknowledged record survives")
    _replicas_agree(stage)


# --- preferred leader rebalance -----------------------------------------------------------------

# Longer than this between imbalance checks, and replay asks for the election itself.
_REBALANCE_WAIT_LIMIT_S = 15.0


def preferred(stage: Stage, variant: Variant) -> None:
    first, second, _ = stage.cast
    full = stage.replicas
    auto = stage.settings.get("auto.leader.rebalance.enable", "true") == "true"
    interval = stage.seconds("leader.imbalance.check.interval.seconds", 300)
    waits = auto and interval <= _REBALANCE_WAIT_LIMIT_S
    _in_sync(stage, first, full)
    stage.produce("m1", acks=ALL)
    stage.step(
        f"Broker {first}, the preferred leader (first in the assignment), leads",
        f"auto.leader.rebalance.enable={str(auto).lower()}; the controller checks the balance "
        f"every leader.imbalance.check.interval.seconds ({interval:g} s)."
        + ("" if waits else " Too long to wait for: replay will ask for the election."),
    )
    stage.kill(first)
    drifted = stage.wait_until(
        lambda s: s.leader == second, f"broker {second} to take over", timeout_s=30
    )
    stage.step(
        f"Broker {first} dies: broker {second}, next in the assignment and in the ISR, is elected",
        "Leadership has moved off the preferred replica.",
    )
    stage.start(first)
    rejoined = stage.wait_until(
        lambda s: _same(s.isr, full), f"broker {first} back in the ISR", timeout_s=40
    )
    stage.step(
        f"Broker {first} returns as a follower of {rejoined.leader} and catches up",
        "A restart does not take leadership back by itself: the cluster is imbalanced "
        f"(broker {rejoined.leader} leads a partition broker {first} prefers).",
    )

    # Back means leading with its high watermark caught up: a new leader starts from the HW
    # it had as a follower and moves it once the others fetch, so a consumer reading at the
    # moment of the election could see less than is committed.
    def led_again(s: Sample) -> bool:
        r = s.replica(first)
        return s.leader == first and r.log_end_offset >= 0 and r.high_watermark == r.log_end_offset

    if waits:
        how = "The controller's imbalance check runs a preferred leader election"
        back = stage.wait_until(led_again, "the preferred leader back", timeout_s=interval + 15)
    else:
        answer = stage.elect_preferred()
        how = f"A preferred leader election, asked of the controller (ElectLeaders: {answer})"
        back = stage.wait_until(led_again, "the preferred leader back", timeout_s=15)
    stage.step(
        f"{how}: {first} leads again",
        f"Leader epoch {back.leader_epoch}: an election like any other, with the others "
        f"following {first}.",
    )
    stage.check(
        "leader after the preferred replica died",
        promised=f"another ISR member ({second})",
        measured=f"leader {drifted.leader}",
        held=drifted.leader == second,
    )
    stage.check(
        "leader after the preferred replica returned",
        promised=f"moved back to {first} by the rebalance",
        measured=f"leader {back.leader}",
        held=back.leader == first,
    )
    _acked_survive(stage, "m1 survives")
    _replicas_agree(stage)


# --- the table ---------------------------------------------------------------------------------

SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "lost-ack",
            "KIP-101 story 1: an acknowledged record lost when a follower truncates to its HW",
            "every record acknowledged with acks=all survives the leader's death",
            lost_ack,
            variants=_hw_and_epoch(
                "B's HW must lag its log by seconds, which needs brokers started with "
                "replica.fetch.wait.max.ms=3000 and B as the controller"
            ),
            assignment=(1, 2, 3),
            first=2,
            overrides={
                "replica.fetch.wait.max.ms": "3000",
                "replica.lag.time.max.ms": "30000",
            },
        ),
        Scenario(
            "diverge",
            "KIP-101 story 2: replicas diverge after both crash and restart in the other order",
            "replicas never hold different records at the same offset",
            diverge,
            variants=_hw_and_epoch(""),
            own_brokers="a power cut takes m2 off a stopped replica's segment file, which needs "
            "the brokers' files on this machine",
            assignment=(1, 2),
            first=3,
        ),
        Scenario(
            "controller-failover",
            "Controller failover: /controller won again, the epoch rises, a zombie is fenced",
            "one controller at a time: requests from an older controller epoch are refused",
            controller_failover,
            first=3,
        ),
        Scenario(
            "isr",
            "ISR shrink and expand: a paused follower leaves the ISR and comes back",
            "acks=all waits only for the ISR, and the ISR holds the replicas that keep up",
            isr_shrink_expand,
            first=3,
            overrides={"replica.lag.time.max.ms": "2000"},
        ),
        Scenario(
            "min-isr",
            "min.insync.replicas: acks=all refused below it, acks=1 still answered",
            "an acks=all record is acknowledged only with min.insync.replicas in sync",
            min_insync,
            first=1,
            topic_configs={"min.insync.replicas": "2"},
        ),
        Scenario(
            "unclean",
            "Unclean leader election: availability against acknowledged records",
            "with unclean election off no acknowledged record is lost; the partition waits",
            unclean,
            variants=(
                Variant(
                    "on",
                    expect_violation=True,
                    note="an out-of-sync replica may be elected when no ISR member is alive",
                    topic_configs={"unclean.leader.election.enable": "true"},
                ),
                Variant(
                    "off",
                    note="only an ISR member may be elected (Kafka's default)",
                    topic_configs={"unclean.leader.election.enable": "false"},
                ),
            ),
            assignment=(1, 2),
            first=3,
            topic_configs={"min.insync.replicas": "1"},
        ),
        Scenario(
            "preferred",
            "Preferred leader rebalance: leadership drifts after a restart and is moved back",
            "leadership returns to the preferred replica once it is back in sync",
            preferred,
            first=3,
            overrides={
                "auto.leader.rebalance.enable": "true",
                "leader.imbalance.check.interval.seconds": "3",
                "leader.imbalance.per.broker.percentage": "0",
            },
        ),
    )
}


def scenario_names() -> list[str]:
    return list(SCENARIOS)
