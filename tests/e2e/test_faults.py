"""Faults on the compose cluster under continuous acks=all idempotent produce.

Each test creates its own topic (replication factor 3, six partitions, min.insync.replicas=2,
so each broker leads two), runs a ContinuousProducer over every partition, injects one fault,
undoes it, and then checks what a user relies on:

- the cluster serves again: a fresh acks=all producer gets a record into every partition;
- every acknowledged record is readable at the offset it was acknowledged with, exactly once,
  and each partition holds the load's records in the order they were sent;
- the replicas agree: once the load stops and the ISRs are full, all three replicas of each
  partition reach the same LEO and checkpointed HW and hold the same bytes below it.

Times printed (failover) are for reading, not asserted: speed targets live in
bench/failover_bench.py and docs/benchmarks.md.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from minikafka.client.admin import TopicDescription
from minikafka.proto.errors import ErrorCode
from tests.e2e.conftest import BROKER_IDS, ComposeCluster
from tests.e2e.faults import (
    ZK_SESSION_TIMEOUT_S,
    ContinuousProducer,
    RawAnswer,
    assert_acked_readable,
    assert_replicas_agree,
    controller_id,
    create_topic,
    describe,
    diagnose,
    first_ack_after,
    produce_once_everywhere,
    raw_produce,
    read_partitions,
    wait_for,
    wait_full_isr,
)

PARTITIONS = 6
# Past the session timeout with a margin: the controller has moved the partitions by then.
PAST_SESSION_S = ZK_SESSION_TIMEOUT_S + 4

Fault = Callable[[TopicDescription, ContinuousProducer], None]


def led_by(described: TopicDescription, broker_id: int) -> list[int]:
    return [p.partition for p in described.partitions if p.leader == broker_id]


def wait_moved(
    cluster: ComposeCluster, topic: str, broker_id: int, partitions: list[int], timeout: float = 60
) -> None:
    """The partitions have live leaders other than ``broker_id``, which left their ISRs."""

    def moved() -> bool:
        states = describe(topic, avoid=broker_id).partitions
        return all(
            states[p].leader not in (-1, broker_id) and broker_id not in states[p].isr
            for p in partitions
        )

    try:
        wait_for(moved, timeout, f"leaders of {topic} {partitions} away from broker {broker_id}")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{diagnose(cluster, topic)}") from None


def settle(cluster: ComposeCluster, topic: str, timeout: float) -> None:
    """Every partition of the topic has a leader and a full ISR again."""
    try:
        wait_full_isr(topic, timeout)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{diagnose(cluster, topic)}") from None


def run_with_fault(
    cluster: ComposeCluster, topic: str, fault: Fault, raw: list[RawAnswer] | None = None
) -> None:
    """Create the topic, start the load, inject the fault (which undoes it, or leaves it to
    ``restore``), restore the cluster, and check: serving, acked records, replicas."""
    described = create_topic(topic, PARTITIONS)
    with ContinuousProducer(topic, PARTITIONS) as load:
        wait_for(lambda: len(load.acks_so_far()) >= 200, 60, "the load's first acks")
        fault(described, load)
        cluster.restore()
        settle(cluster, topic, 120)
        recovered = len(load.acks_so_far())
        wait_for(lambda: len(load.acks_so_far()) >= recovered + 200, 60, "acks after the fault")
        produce_once_everywhere(topic, PARTITIONS)
        acked = load.stop()
    print(f"{topic}: {load.sent} sent, {len(acked)} acked, {len(load.failures)} failed")
    read = read_partitions(topic, PARTITIONS)
    assert_acked_readable(read, acked, prefix=f"{topic}-".encode())
    if raw is not None:
        stored = {(p, o): v for p, records in read.items() for o, v in records}
        lost = [
            a
            for a in raw
            if a.error_code == 0 and stored.get((a.partition, a.base_offset)) != a.value
        ]
        assert not lost, f"acknowledged by the zombie but not readable: {lost[:5]}"
    settle(cluster, topic, 60)
    assert_replicas_agree(cluster, topic, PARTITIONS)


def test_kill_the_leader(cluster: ComposeCluster) -> None:
    topic = "faults-kill-leader"

    def fault(described: TopicDescription, load: ContinuousProducer) -> None:
        victim = described.partitions[0].leader
        partitions = led_by(described, victim)
        container = cluster.container(cluster.service(victim))
        before = time.monotonic()
        cluster.docker("kill", container)
        killed = time.monotonic()
        failover = wait_for(
            lambda: first_ack_after(load.acks_so_far(), partitions, killed, before),
            60,
            f"an ack on {partitions} after broker {victim} was killed",
        )
        print(f"kill of leader {victim} -> first acks=all on {partitions}: {failover:.2f} s")
        wait_moved(cluster, topic, victim, partitions)
        cluster.start(cluster.service(victim))  # it waits for its old session to expire

    run_with_fault(cluster, topic, fault)


def test_kill_the_controller(cluster: ComposeCluster) -> None:
    topic = "faults-kill-controller"

    def fault(described: TopicDescription, load: ContinuousProducer) -> None:
        victim = controller_id()
        assert victim in BROKER_IDS
        cluster.kill(cluster.service(victim))
        successor = wait_for(
            lambda: (c := controller_id(avoid=victim)) not in (-1, victim) and c,
            60,
            f"a controller other than {victim}",
        )
        print(f"controller {victim} killed, {successor} took over")
        wait_moved(cluster, topic, victim, led_by(described, victim))
        cluster.start(cluster.service(victim))

    run_with_fault(cluster, topic, fault)


def test_paused_leader_is_a_fenced_zombie(cluster: ComposeCluster) -> None:
    """A leader (not the controller) frozen past its ZooKeeper session comes back believing it
    still leads. acks=all produce requests sent straight to it, queued while it was frozen and
    sent after, must not be acknowledged: its followers fetch from the new leaders, so its HW
    cannot pass them (and were one acknowledged, run_with_fault checks it is readable)."""
    topic = "faults-pause-leader"
    raw: list[RawAnswer] = []

    def fault(described: TopicDescription, load: ContinuousProducer) -> None:
        controller = controller_id()
        victim = next(p.leader for p in described.partitions if p.leader != controller)
        partitions = led_by(described, victim)
        service = cluster.service(victim)
        stop = threading.Event()
        lock = threading.Lock()

        def hammer(partition: int) -> None:
            n = 0
            while not stop.is_set():
                answer = raw_produce(victim, topic, partition, b"zombie-%d-%06d" % (partition, n))
                n += 1
                with lock:
                    raw.append(answer)
                if answer.error_code != -1:
                    time.sleep(0.05)

        cluster.pause(service)
        paused = time.monotonic()
        writers = [threading.Thread(target=hammer, args=(p,), daemon=True) for p in partitions]
        for writer in writers:
            writer.start()
        wait_moved(cluster, topic, victim, partitions)
        time.sleep(max(0.0, paused + PAST_SESSION_S - time.monotonic()))
        cluster.unpause(service)
        # The zombie answers what queued up while it was frozen, then learns it was replaced.
        time.sleep(5)
        stop.set()
        for writer in writers:
            writer.join(30)
        with lock:
            answers = list(raw)
        codes = sorted({a.error_code for a in answers})
        acked = sum(a.error_code == ErrorCode.NONE for a in answers)
        print(f"zombie {victim}: {len(answers)} raw produces, codes {codes}, {acked} acked")
        # Its followers fetch from the new leaders, so its HW cannot pass these records.
        assert acked == 0, [a for a in answers if a.error_code == ErrorCode.NONE][:5]

    run_with_fault(cluster, topic, fault, raw)


def test_disconnected_controller(cluster: ComposeCluster) -> None:
    """The controller (which also leads partitions) loses the network past its session."""
    topic = "faults-disconnect"

    def fault(described: TopicDescription, load: ContinuousProducer) -> None:
        victim = controller_id()
        partitions = led_by(described, victim)
        service = cluster.service(victim)
        cluster.disconnect(service)
        cut = time.monotonic()
        wait_for(
            lambda: controller_id(avoid=victim) not in (-1, victim),
            60,
            f"a controller other than {victim}",
        )
        wait_moved(cluster, topic, victim, partitions)
        time.sleep(max(0.0, cut + PAST_SESSION_S - time.monotonic()))
        cluster.connect(service)

    run_with_fault(cluster, topic, fault)


def test_zookeeper_restart(cluster: ComposeCluster) -> None:
    topic = "faults-zookeeper-restart"

    def fault(described: TopicDescription, load: ContinuousProducer) -> None:
        cluster.stop("zookeeper")
        time.sleep(3)
        cluster.start("zookeeper")
        cluster.wait_healthy(["zookeeper"], timeout=120)

    run_with_fault(cluster, topic, fault)
