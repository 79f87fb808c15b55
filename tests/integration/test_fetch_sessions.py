"""Followers fetch in incremental fetch sessions (KIP-227) between real broker processes: an idle
200-partition topic beside a busy one costs the follower fetches almost nothing (neither listed
nor read), a leader lost mid-session moves its partitions to new sessions, and nothing
acknowledged is lost."""

from __future__ import annotations

import time
from collections.abc import Iterable

import pytest

from minikafka.client.admin import NewTopic, raise_first
from tests.integration.cluster import Cluster
from tests.integration.conftest import ClusterFactory

FAST = {"zookeeper.session.timeout.ms": "4000"}
IDLE, BUSY = "idle", "busy"
IDLE_PARTITIONS, BUSY_PARTITIONS = 200, 6


def _create(cluster: Cluster, name: str, partitions: int) -> None:
    with cluster.admin() as admin:
        raise_first(admin.create_topics([NewTopic(name, partitions, 3)]))


def _full_isr(cluster: Cluster, topic: str, partitions: Iterable[int]) -> bool:
    for p in partitions:
        state = cluster.partition_state(topic, p)
        if state is None or len(state.isr) != 3:
            return False
    return True


def _sessions(cluster: Cluster, brokers: Iterable[int]) -> dict[str, float]:
    """The fetch session counters, summed over ``brokers``."""
    total: dict[str, float] = {}
    for b in brokers:
        m = cluster.metrics(b)
        for key, name, labels in (
            ("sessions", "kafka_server_fetchsessioncache_numincrementalfetchsessions", ()),
            ("cached", "kafka_server_fetchsessioncache_numincrementalfetchpartitionscached", ()),
            ("incremental", "minikafka_fetch_session_requests_total", (("kind", "incremental"),)),
            ("full", "minikafka_fetch_session_requests_total", (("kind", "full"),)),
            ("requested", "minikafka_fetch_session_partitions_total", (("stage", "requested"),)),
            ("answered", "minikafka_fetch_session_partitions_total", (("stage", "answered"),)),
            ("read", "minikafka_fetch_session_partitions_total", (("stage", "read"),)),
        ):
            total[key] = total.get(key, 0.0) + m.get((name, labels), 0.0)
    return total


@pytest.mark.parametrize("replication", ["kafka", "grpc"])
def test_follower_sessions_idle_partitions_and_a_leader_change(
    cluster_factory: ClusterFactory, replication: str
) -> None:
    cluster = cluster_factory(n_brokers=3, overrides=FAST, replication=replication)
    _create(cluster, IDLE, IDLE_PARTITIONS)
    _create(cluster, BUSY, BUSY_PARTITIONS)
    everything = range(IDLE_PARTITIONS)
    cluster.wait_for(
        lambda: _full_isr(cluster, IDLE, everything) and _full_isr(cluster, BUSY, range(6)),
        60,
        "a full ISR everywhere",
    )
    # Every follower fetches in one session per leader: 3 x 2 sessions holding each of the
    # 206 partitions twice (one per follower).
    replicas = 2 * (IDLE_PARTITIONS + BUSY_PARTITIONS)
    cluster.wait_for(
        lambda: _sessions(cluster, cluster.brokers)["cached"] == replicas, 30, "follower sessions"
    )
    assert _sessions(cluster, cluster.brokers)["sessions"] == 6

    # Idle: the followers' fetches keep coming (long polls), and read no partition (once the
    # last ISR changes of the start have been answered).
    def quiet() -> bool:
        read = _sessions(cluster, cluster.brokers)["read"]
        time.sleep(1)
        return _sessions(cluster, cluster.brokers)["read"] == read

    cluster.wait_for(quiet, 30, "idle sessions reading nothing")
    idle_before = _sessions(cluster, cluster.brokers)

    def six_more_fetches() -> dict[str, float] | None:
        now = _sessions(cluster, cluster.brokers)
        return now if now["incremental"] - idle_before["incremental"] >= 6 else None

    idle_after = cluster.wait_for(six_more_fetches, 30, "six incremental fetches while idle")
    assert idle_after["read"] == idle_before["read"]
    assert idle_after["answered"] == idle_before["answered"]

    acked: dict[int, list[bytes]] = {p: [] for p in range(BUSY_PARTITIONS)}
    before = _sessions(cluster, cluster.brokers)
    for i in range(20):
        for p in range(BUSY_PARTITIONS):
            value = b"%d-%d" % (p, i)
            assert cluster.produce(BUSY, p, [value], acks=-1, retry_s=10).ok
            acked[p].append(value)
    after = _sessions(cluster, cluster.brokers)
    fetches = after["incremental"] - before["incremental"]
    requested = (after["requested"] - before["requested"]) / fetches
    answered = (after["answered"] - before["answered"]) / fetches
    read = (after["read"] - before["read"]) / fetches
    print(
        f"per incremental follower fetch: {requested:.2f} partitions listed, "
        f"{answered:.2f} answered, {read:.1f} read ({fetches:.0f} fetches)"
    )
    assert fetches >= 120  # acks=all: each produce needs the followers' fetches
    assert after["full"] == before["full"]  # no session was lost
    assert requested < 3 and answered < 3
    assert read < 10  # the busy partitions that changed, not all 206 of the session

    # Lose the leader of busy-0 mid-session; keep producing to every busy partition.
    after_each = {b: _sessions(cluster, [b]) for b in cluster.brokers}
    lost = cluster.leader(BUSY, 0)
    cluster.kill(lost)
    cluster.wait_for(lambda: cluster.leader(BUSY, 0) not in (-1, lost), 30, "a new leader")
    survivors = [b for b in cluster.brokers if b != lost]
    for i in range(20, 30):
        for p in range(BUSY_PARTITIONS):
            value = b"%d-%d" % (p, i)
            result = cluster.produce(BUSY, p, [value], acks=-1, retry_s=20)
            assert result.ok, result
            acked[p].append(value)
    # The survivors' sessions with the lost broker are gone from its (dead) cache; theirs with
    # each other now hold the partitions it led.
    cluster.start(lost)
    cluster.wait_until_serving()
    cluster.wait_for(
        lambda: _full_isr(cluster, BUSY, range(BUSY_PARTITIONS)), 60, "the restarted broker back"
    )
    # The survivors kept fetching in their sessions (their own counts: the lost broker's
    # restarted from zero, so a sum over all three before the kill says only how long this took).
    assert _sessions(cluster, survivors)["incremental"] > sum(
        after_each[b]["incremental"] for b in survivors
    )
    for p in range(BUSY_PARTITIONS):
        assert [r.value for r in cluster.fetch_all(BUSY, p)] == acked[p]
    # Every replica holds the same bytes (read from the files of the stopped brokers).
    for b in cluster.brokers:
        cluster.stop(b)
    for p in range(BUSY_PARTITIONS):
        states = [cluster.replica_state(b, BUSY, p) for b in cluster.brokers]
        assert {s.log_end_offset for s in states} == {len(acked[p])}, (p, states)
        assert len({s.bytes_below(len(acked[p])) for s in states}) == 1, p
