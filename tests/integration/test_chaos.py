"""Random SIGKILLs under continuous acks=all idempotent produce, with real broker processes.

Every few seconds a broker chosen at random (seeded, and the seed printed) is killed with
SIGKILL and started again at once; its log is recovered from its recovery point while the
others lead. Once the controller has seen the death and the ISRs are full again, the next one
goes: one broker down at a time, so min.insync.replicas=2 holds and produce goes on.
Afterwards the invariants of the fault suite (tests/e2e/faults.py, reused here): nothing
acknowledged is lost, nothing is stored twice, each partition keeps the order of sending, and
the replicas hold the same bytes.

A second test kills while the cluster is already degraded: a second broker while the first is
still down (every ISR down to one replica, produce stalls on min.insync.replicas), and a broker
while a restarted one is still catching up (back with its partitions, not yet in every ISR).
The same end checks.

    MINIKAFKA_CHAOS_SECONDS   how long the kills go on (default 60: CI; minutes for a soak)
    MINIKAFKA_CHAOS_SEED      the random seed (default: a fixed one, so a CI run repeats)
    MINIKAFKA_CHAOS_KILL_INTERVAL_S   at least this many seconds between kills (default 2;
                                      a cycle also waits for the controller to notice the
                                      death, about the 4 s session timeout, and for full ISRs)
"""

from __future__ import annotations

import os
import random
import time

from minikafka.proto.records import decode_records
from tests.e2e.faults import Ack, ContinuousProducer, assert_acked_readable, read_partitions
from tests.integration.cluster import Cluster
from tests.integration.conftest import ClusterFactory
from tests.integration.test_failover import create_topic

TOPIC = "chaos"
PARTITIONS = 3
CHAOS_SECONDS = float(os.environ.get("MINIKAFKA_CHAOS_SECONDS", "60"))
CHAOS_SEED = int(os.environ.get("MINIKAFKA_CHAOS_SEED", "16005"))
KILL_INTERVAL_S = float(os.environ.get("MINIKAFKA_CHAOS_KILL_INTERVAL_S", "2"))
# Rounds of the degraded test, each both of its kinds of kill: two brokers' restarts apiece.
DEGRADED_ROUNDS = 2


def isrs_are(cluster: Cluster, brokers: set[int]) -> bool:
    """Whether every partition has a leader and exactly ``brokers`` in sync (ZooKeeper's state:
    the controller's and the leaders' view)."""
    for partition in range(PARTITIONS):
        state = cluster.partition_state(TOPIC, partition)
        if state is None or state.leader < 0 or set(state.isr) != brokers:
            return False
    return True


def full_isrs(cluster: Cluster) -> bool:
    return isrs_are(cluster, set(cluster.brokers))


def kill(cluster: Cluster, broker_id: int) -> int:
    """SIGKILL; the number of log events of the dead process (has_its_partitions counts from
    there)."""
    cluster.kill(broker_id)
    return len(cluster.brokers[broker_id].log_events())


def has_its_partitions(cluster: Cluster, broker_id: int, events_before: int) -> bool:
    """Whether the broker, since its log had ``events_before`` events, became leader or
    follower of every partition of the topic."""
    events = cluster.brokers[broker_id].log_events()[events_before:]
    became = {
        e.get("partition")
        for e in events
        if e.get("event") in ("became_leader", "became_follower") and e.get("topic") == TOPIC
    }
    return became >= set(range(PARTITIONS))


def assert_replicas_agree(cluster: Cluster) -> None:
    """Every replica of each partition reaches the leader's high watermark and holds the same
    bytes below it (read from the files; the brokers are idle by then)."""
    for partition in range(PARTITIONS):
        leader = cluster.leader(TOPIC, partition)
        hw = cluster.fetch(leader, TOPIC, partition, 0).high_watermark
        cluster.wait_for(
            lambda p=partition, hw=hw: all(  # type: ignore[misc]
                cluster.replica_state(b, TOPIC, p).log_end_offset >= hw for b in cluster.brokers
            ),
            30,
            f"the replicas of {TOPIC}-{partition} to reach {hw}",
        )
        images = {
            b: cluster.replica_state(b, TOPIC, partition).bytes_below(hw) for b in cluster.brokers
        }
        assert len(set(images.values())) == 1, (
            f"{TOPIC}-{partition}: replicas differ below HW {hw}: "
            f"{ {b: len(i) for b, i in images.items()} } bytes"
        )
        # The leader's answer below the HW is those very bytes, every record decodable.
        assert sum(1 for _ in decode_records(images[leader])) > 0


def chaos_cluster(cluster_factory: ClusterFactory) -> Cluster:
    """Three brokers, the topic (min.insync.replicas=2), full ISRs."""
    cluster = cluster_factory(
        n_brokers=3,
        overrides={
            "zookeeper.session.timeout.ms": "4000",
            "log.flush.offset.checkpoint.interval.ms": "1000",
        },
    )
    # Small segments, so that rolls, flushes and recovery points are part of every restart.
    create_topic(
        cluster,
        TOPIC,
        partitions=PARTITIONS,
        configs={"min.insync.replicas": "2", "segment.bytes": "65536"},
    )
    cluster.wait_for(lambda: full_isrs(cluster), 30, "full ISRs")
    return cluster


def stop_after_more_acks(cluster: Cluster, load: ContinuousProducer) -> list[Ack]:
    """Once the load has had 100 more acks (produce goes on after the kills): stop it; every
    ack."""
    acked_before = len(load.acks_so_far())
    cluster.wait_for(
        lambda: len(load.acks_so_far()) >= acked_before + 100, 60, "acks after the kills"
    )
    return load.stop()


def assert_nothing_lost(cluster: Cluster, acked: list[Ack]) -> None:
    """The end checks: enough acknowledged; nothing acknowledged lost, nothing stored twice,
    each partition in the order of sending; full ISRs, and the replicas agree."""
    assert len(acked) > 200, f"only {len(acked)} records acknowledged"
    read = read_partitions(TOPIC, PARTITIONS, bootstrap=cluster.bootstrap_servers)
    assert_acked_readable(read, acked, prefix=f"{TOPIC}-".encode())  # lost, twice, order
    cluster.wait_for(lambda: full_isrs(cluster), 60, "full ISRs at the end")
    assert_replicas_agree(cluster)


def test_random_kills_under_idempotent_produce(cluster_factory: ClusterFactory) -> None:
    print(
        f"chaos: seed {CHAOS_SEED}, {CHAOS_SECONDS:.0f} s, a kill every {KILL_INTERVAL_S} s "
        "(MINIKAFKA_CHAOS_SEED / MINIKAFKA_CHAOS_SECONDS / MINIKAFKA_CHAOS_KILL_INTERVAL_S)"
    )
    rng = random.Random(CHAOS_SEED)
    cluster = chaos_cluster(cluster_factory)
    kills: list[int] = []
    with ContinuousProducer(TOPIC, PARTITIONS, bootstrap=cluster.bootstrap_servers) as load:
        cluster.wait_for(lambda: len(load.acks_so_far()) >= 100, 30, "the load's first acks")
        deadline = time.monotonic() + CHAOS_SECONDS
        while time.monotonic() < deadline:
            started = time.monotonic()
            victim = rng.choice(sorted(cluster.brokers))
            kills.append(victim)
            seen = kill(cluster, victim)
            # Started at once: the broker itself waits for its old session to expire.
            cluster.start(victim, wait_for_expiry=False)
            # Its new incarnation has its LeaderAndIsr (so the controller has handled the
            # death), and then it caught up: full ISRs are its own, not the state before.
            cluster.wait_for(
                lambda v=victim, n=seen: has_its_partitions(cluster, v, n),  # type: ignore[misc]
                60,
                f"broker {victim} to get its partitions back",
                interval_s=0.5,
            )
            cluster.wait_until_serving(timeout_s=60)
            cluster.wait_for(lambda: full_isrs(cluster), 60, "full ISRs after a restart")
            time.sleep(max(0.0, KILL_INTERVAL_S - (time.monotonic() - started)))
        acked = stop_after_more_acks(cluster, load)
    print(
        f"chaos: {len(kills)} kills {kills}; {load.sent} sent, {len(acked)} acked, "
        f"{len(load.failures)} failed"
    )
    assert len(kills) >= 2
    assert_nothing_lost(cluster, acked)


def test_kills_while_degraded(cluster_factory: ClusterFactory) -> None:
    """Kills that land while a broker is already down or still catching up (module
    docstring); the seed is MINIKAFKA_CHAOS_SEED's."""
    rng = random.Random(CHAOS_SEED)
    cluster = chaos_cluster(cluster_factory)
    everyone = set(cluster.brokers)
    kills: list[tuple[str, int, int]] = []
    during_catch_up = 0

    def rejoined(broker_id: int, seen: int) -> None:
        cluster.wait_for(
            lambda: has_its_partitions(cluster, broker_id, seen),
            120,
            f"broker {broker_id} to get its partitions back",
            interval_s=0.1,
        )

    def isrs_become(brokers: set[int]) -> None:
        cluster.wait_for(lambda: isrs_are(cluster, brokers), 120, f"ISRs of {sorted(brokers)}")

    with ContinuousProducer(TOPIC, PARTITIONS, bootstrap=cluster.bootstrap_servers) as load:
        cluster.wait_for(lambda: len(load.acks_so_far()) >= 100, 30, "the load's first acks")
        for _ in range(DEGRADED_ROUNDS):
            # A second broker down while the first is still down: one replica left in sync.
            first, second = rng.sample(sorted(everyone), 2)
            kills.append(("both down", first, second))
            seen_first = kill(cluster, first)
            isrs_become(everyone - {first})  # the controller saw the first death
            seen_second = kill(cluster, second)
            isrs_become(everyone - {first, second})
            cluster.start(first, wait_for_expiry=False)
            rejoined(first, seen_first)
            isrs_become(everyone - {second})  # caught up from the one replica left
            cluster.start(second, wait_for_expiry=False)
            rejoined(second, seen_second)
            cluster.wait_until_serving(timeout_s=120)
            isrs_become(everyone)

            # A broker killed while a restarted one catches up: as soon as the restarted one
            # has its partitions back (the controller handled its death and its return).
            first, second = rng.sample(sorted(everyone), 2)
            kills.append(("during catch-up", first, second))
            seen_first = kill(cluster, first)
            cluster.start(first, wait_for_expiry=False)
            rejoined(first, seen_first)
            during_catch_up += not full_isrs(cluster)
            seen_second = kill(cluster, second)
            cluster.start(second, wait_for_expiry=False)
            rejoined(first, seen_first)
            rejoined(second, seen_second)
            cluster.wait_until_serving(timeout_s=120)
            isrs_become(everyone)
        acked = stop_after_more_acks(cluster, load)
    print(
        f"chaos (degraded): seed {CHAOS_SEED}, kills {kills}, {during_catch_up} of "
        f"{DEGRADED_ROUNDS} during a catch-up; {load.sent} sent, {len(acked)} acked, "
        f"{len(load.failures)} failed"
    )
    assert_nothing_lost(cluster, acked)
