"""Consumer groups against real broker processes: rebalances, commits, coordinator failover."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from minikafka.client.admin import NewTopic
from minikafka.client.consumer.consumer import Consumer
from minikafka.client.producer.producer import Producer
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.common import TopicPartition
from tests.integration.cluster import Cluster
from tests.integration.conftest import ClusterFactory

pytestmark = pytest.mark.integration

GROUP_OVERRIDES = {
    "offsets.topic.num.partitions": "3",
    "group.min.session.timeout.ms": "1000",
}
TOPIC = "events"
PARTITIONS = 6


def _cluster(cluster_factory: ClusterFactory) -> Cluster:
    cluster = cluster_factory(n_brokers=3, overrides=GROUP_OVERRIDES)
    with cluster.admin() as admin:
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 2)])
    cluster.wait_for(
        lambda: all(cluster.leader(TOPIC, p) >= 0 for p in range(PARTITIONS)),
        timeout_s=30,
        what=f"leaders for {TOPIC}",
    )
    return cluster


def _produce(bootstrap: str, start: int, count: int) -> None:
    with Producer(bootstrap_servers=bootstrap, acks="all", linger_ms=5) as producer:
        for i in range(start, start + count):
            producer.send(TOPIC, f"v{i}".encode(), key=f"k{i}".encode())
        producer.flush(timeout=30)


class Member:
    """A group member polling in its own thread; records what it consumed."""

    def __init__(self, bootstrap: str, group: str, name: str, **config: object) -> None:
        self.name = name
        self.consumed: list[tuple[TopicPartition, int, bytes]] = []
        listener = config.pop("listener", None)
        self.consumer = Consumer(
            bootstrap_servers=bootstrap,
            group_id=group,
            auto_offset_reset="earliest",
            session_timeout_ms=3000,
            heartbeat_interval_ms=300,
            auto_commit_interval_ms=300,
            client_id=name,
            **config,  # type: ignore[arg-type]
        )
        self.consumer.subscribe([TOPIC], listener=listener)  # type: ignore[arg-type]
        self._stop = threading.Event()
        self._crash = False
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                for tp, records in self.consumer.poll(timeout_ms=200).items():
                    self.consumed.extend((tp, r.offset, r.value or b"") for r in records)
        except BaseException as exc:
            self.error = exc
        if not self._crash:
            self.consumer.close()

    def assignment(self) -> set[TopicPartition]:
        return self.consumer.assignment()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        assert self.error is None, self.error

    def crash(self) -> None:
        """Stop heartbeating and polling without leaving the group."""
        self._crash = True
        coordinator = self.consumer._coordinator
        assert coordinator is not None
        coordinator.abandon()
        self._stop.set()
        self._thread.join(timeout=30)


def _wait_balanced(cluster: Cluster, members: list[Member], what: str) -> None:
    everything = {TopicPartition(TOPIC, p) for p in range(PARTITIONS)}

    def balanced() -> bool:
        owned = [m.assignment() for m in members]
        if any(not o for o in owned) or sum(len(o) for o in owned) != PARTITIONS:
            return False
        return set().union(*owned) == everything  # disjoint: sizes add up to the union

    cluster.wait_for(balanced, timeout_s=40, what=what)


def _wait_consumed(cluster: Cluster, members: list[Member], total: int) -> None:
    def done() -> bool:
        values = {v for m in members for _, _, v in m.consumed}
        return len(values) >= total

    cluster.wait_for(done, timeout_s=40, what=f"{total} distinct records consumed")


def _group_stub(cluster: Cluster, group: str) -> pb_grpc.GroupStub:
    def find() -> int | None:
        response = pb_grpc.GroupStub(cluster.channel(cluster.running_ids()[0])).FindCoordinator(
            pb.FindCoordinatorRequest(key=group), timeout=5
        )
        return response.node_id if response.error_code == 0 else None

    node = cluster.wait_for(find, timeout_s=30, what=f"coordinator of {group}")
    return pb_grpc.GroupStub(cluster.channel(node))


def _committed(bootstrap: str, group: str) -> dict[int, int | None]:
    with Consumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False) as c:
        return {p: c.committed(TopicPartition(TOPIC, p)) for p in range(PARTITIONS)}


def _end_offsets(bootstrap: str) -> dict[int, int]:
    with Consumer(bootstrap_servers=bootstrap) as c:
        ends = c.end_offsets([TopicPartition(TOPIC, p) for p in range(PARTITIONS)])
        return {tp.partition: offset for tp, offset in ends.items()}


def _eventually(check: Callable[[], bool], cluster: Cluster, what: str) -> None:
    cluster.wait_for(check, timeout_s=30, what=what)


def test_rebalance_on_join_and_leave_consumes_everything_and_keeps_commits(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = _cluster(cluster_factory)
    bootstrap = cluster.bootstrap_servers
    _produce(bootstrap, 0, 300)

    a = Member(bootstrap, "g1", "a")
    _wait_balanced(cluster, [a], "a owns every partition")
    b = Member(bootstrap, "g1", "b", partition_assignment_strategy=("roundrobin", "range"))
    _wait_balanced(cluster, [a, b], "a and b split the partitions")
    events: list[tuple[str, set[TopicPartition]]] = []

    class Listener:
        def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
            events.append(("revoked", revoked))

        def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
            events.append(("assigned", assigned))

    _produce(bootstrap, 300, 300)
    c = Member(bootstrap, "g1", "c", listener=Listener())
    _wait_balanced(cluster, [a, b, c], "a, b and c split the partitions")
    # bool(): an empty list is neither None nor False, so wait_for took it for done
    cluster.wait_for(lambda: bool(events) and events[-1][0] == "assigned", what="c's listener")
    assert events[0][0] == "assigned"  # nothing owned before: nothing revoked
    assert events[-1] == ("assigned", c.assignment())

    stub = _group_stub(cluster, "g1")
    described = stub.DescribeGroups(pb.DescribeGroupsRequest(groups=["g1"]), timeout=5).groups[0]
    assert described.group_state in ("Stable", "CompletingRebalance", "PreparingRebalance")
    assert described.protocol_type == "consumer"
    assert sorted(m.client_id for m in described.members) == ["a", "b", "c"]
    # a and c prefer range, b prefers roundrobin but has range: range wins the vote
    if described.group_state == "Stable":
        assert described.protocol_data == "range"
    listed = stub.ListGroups(pb.ListGroupsRequest(), timeout=5)
    assert ("g1", "consumer") in [(g.group_id, g.protocol_type) for g in listed.groups]

    owned_by_c = c.assignment()
    b.close()  # LeaveGroup: a and c take b's partitions
    _wait_balanced(cluster, [a, c], "a and c split the partitions after b left")
    cluster.wait_for(lambda: len(events) >= 3, what="c's listener after b left")
    assert events[1] == ("revoked", owned_by_c)
    _produce(bootstrap, 600, 200)
    _wait_consumed(cluster, [a, b, c], 800)
    a.close()
    c.close()

    assert _committed(bootstrap, "g1") == _end_offsets(bootstrap)
    described = stub.DescribeGroups(pb.DescribeGroupsRequest(groups=["g1"]), timeout=5).groups[0]
    assert described.group_state == "Empty"
    assert not described.members
    # Every record was consumed; with commits on revoke, each one once.
    consumed = [v for m in (a, b, c) for _, _, v in m.consumed]
    assert len(set(consumed)) == 800
    assert len(consumed) == 800

    deleted = stub.DeleteGroups(pb.DeleteGroupsRequest(groups_names=["g1"]), timeout=5)
    assert [(r.group_id, r.error_code) for r in deleted.results] == [("g1", 0)]
    assert all(v is None for v in _committed(bootstrap, "g1").values())

    # assign() with a group_id: positions from the group's commits, commits outside the
    # group (generation -1), allowed while it has no members
    tp = TopicPartition(TOPIC, 0)
    with Consumer(bootstrap_servers=bootstrap, group_id="g1", enable_auto_commit=False) as one:
        one.assign([tp])
        one.commit({tp: 5})
        assert one.committed(tp) == 5
    with Consumer(bootstrap_servers=bootstrap, group_id="g1", enable_auto_commit=False) as two:
        two.assign([tp])
        assert two.position(tp) == 5


def test_crashed_member_is_expired_and_its_partitions_move(cluster_factory: ClusterFactory) -> None:
    cluster = _cluster(cluster_factory)
    bootstrap = cluster.bootstrap_servers
    _produce(bootstrap, 0, 200)
    a = Member(bootstrap, "g2", "a")
    b = Member(bootstrap, "g2", "b")
    _wait_balanced(cluster, [a, b], "a and b split the partitions")
    _wait_consumed(cluster, [a, b], 200)
    b.crash()  # no LeaveGroup: the coordinator notices after session.timeout.ms (3 s)
    _wait_balanced(cluster, [a], "a owns every partition after b's session expired")
    _produce(bootstrap, 200, 200)
    _wait_consumed(cluster, [a, b], 400)
    a.close()
    assert _committed(bootstrap, "g2") == _end_offsets(bootstrap)


def test_member_that_stops_polling_leaves_and_rejoins(cluster_factory: ClusterFactory) -> None:
    cluster = _cluster(cluster_factory)
    bootstrap = cluster.bootstrap_servers
    a = Member(bootstrap, "g4", "a")
    slow = Consumer(
        TOPIC,
        bootstrap_servers=bootstrap,
        group_id="g4",
        session_timeout_ms=3000,
        heartbeat_interval_ms=200,
        max_poll_interval_ms=1500,
        client_id="slow",
    )
    try:
        cluster.wait_for(
            lambda: slow.poll(timeout_ms=100) is not None and len(slow.assignment()) == 3,
            timeout_s=30,
            what="slow gets half of the partitions",
        )
        # No poll for longer than max.poll.interval.ms: its heartbeat thread leaves the group
        # (its session is still alive), and a takes everything.
        _wait_balanced(cluster, [a], "a owns every partition after slow left")
        cluster.wait_for(
            lambda: slow.poll(timeout_ms=100) is not None and len(slow.assignment()) == 3,
            timeout_s=30,
            what="slow rejoins when it polls again",
        )
    finally:
        slow.close()
        a.close()


def _coordinator_of(cluster: Cluster, group: str) -> int:
    def find() -> int | None:
        for broker_id in cluster.running_ids():
            response = pb_grpc.GroupStub(cluster.channel(broker_id)).FindCoordinator(
                pb.FindCoordinatorRequest(key=group), timeout=5
            )
            if response.error_code == 0 and response.node_id in cluster.running_ids():
                return response.node_id
        return None

    return cluster.wait_for(find, timeout_s=30, what=f"coordinator of {group}")


def test_coordinator_killed_group_recovers_with_commits_intact(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = _cluster(cluster_factory)
    bootstrap = cluster.bootstrap_servers
    _produce(bootstrap, 0, 200)
    a = Member(bootstrap, "g3", "a")
    b = Member(bootstrap, "g3", "b")
    _wait_balanced(cluster, [a, b], "a and b split the partitions")
    _wait_consumed(cluster, [a, b], 200)
    ends = _end_offsets(bootstrap)
    _eventually(lambda: _committed(bootstrap, "g3") == ends, cluster, "auto commits of 200")

    coordinator = _coordinator_of(cluster, "g3")
    cluster.kill(coordinator)
    new_coordinator = _coordinator_of(cluster, "g3")
    assert new_coordinator != coordinator
    # The new leader of the group's __consumer_offsets partition loaded the commits.
    assert _committed(bootstrap, "g3") == ends
    loaded = cluster.brokers[new_coordinator].log_events("group_partition.loaded")
    assert any(int(str(e["groups"])) >= 1 for e in loaded), loaded

    _produce(bootstrap, 200, 200)
    _wait_consumed(cluster, [a, b], 400)
    _wait_balanced(cluster, [a, b], "a and b still split the partitions")
    # the members kept their generation through the failover: no member had to rejoin
    rebalances = cluster.brokers[new_coordinator].log_events("group.rebalance_completed")
    assert not [e for e in rebalances if e.get("group_id") == "g3"], rebalances
    a.close()
    b.close()
    assert _committed(bootstrap, "g3") == _end_offsets(bootstrap)
    consumed = [v for m in (a, b) for _, _, v in m.consumed]
    assert len(set(consumed)) == 400


def test_pattern_and_partition_changes_rebalance_the_group(cluster_factory: ClusterFactory) -> None:
    cluster = _cluster(cluster_factory)
    bootstrap = cluster.bootstrap_servers
    consumer = Consumer(
        bootstrap_servers=bootstrap,
        group_id="g5",
        session_timeout_ms=3000,
        heartbeat_interval_ms=300,
        metadata_max_age_ms=500,
    )
    try:
        consumer.subscribe(pattern="ev.*")

        def owns(count: int) -> bool:
            consumer.poll(timeout_ms=100)
            return len(consumer.assignment()) == count

        cluster.wait_for(lambda: owns(PARTITIONS), timeout_s=30, what="events' partitions")
        with cluster.admin() as admin:
            admin.create_topics([NewTopic("evx", 2, 1)])
            cluster.wait_for(lambda: owns(PARTITIONS + 2), timeout_s=30, what="evx matched")
            admin.create_partitions({TOPIC: PARTITIONS + 2})
            cluster.wait_for(lambda: owns(PARTITIONS + 4), timeout_s=30, what="new partitions")
        assert {tp.topic for tp in consumer.assignment()} == {TOPIC, "evx"}
    finally:
        consumer.close()
