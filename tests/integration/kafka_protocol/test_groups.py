"""Consumer groups through the Kafka protocol: kafka-python and confluent-kafka (librdkafka)
consumers and admin clients (and aiokafka's consumer, for static membership) against real
broker processes, and groups shared with minikafka's
own gRPC consumers (the same coordinator, the same ``__consumer_offsets`` records).

Records are produced with minikafka's gRPC producer, so that these tests depend on the Kafka
door only for what consumers use: the group APIs, Metadata, ListOffsets and Fetch.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import aiokafka
import aiokafka.abc
import confluent_kafka
import confluent_kafka.admin
import kafka
import kafka.admin
import kafka.errors
import pytest

from minikafka.broker.group.coordinator import partition_for
from minikafka.broker.server.kafka.schema import (
    Entity,
)
from minikafka.client.admin import NewTopic
from minikafka.client.consumer.consumer import Consumer as MiniConsumer
from minikafka.client.producer.producer import Producer as MiniProducer
from minikafka.proto.common import TopicPartition as MiniTopicPartition
from minikafka.proto.errors import ErrorCode
from tests.integration.cluster import Cluster
from tests.integration.conftest import ClusterFactory
from tests.integration.kafka_protocol.raw import RawKafka

pytestmark = pytest.mark.integration

TOPIC = "orders"
PARTITIONS = 6
OFFSETS_PARTITIONS = 3
GROUP_OVERRIDES = {
    "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
    "group.min.session.timeout.ms": "1000",
}
SESSION_TIMEOUT_MS = 3000
HEARTBEAT_INTERVAL_MS = 300
CLIENTS = ["kafka-python", "confluent-kafka"]


def _cluster(cluster_factory: ClusterFactory, n_brokers: int = 2) -> Cluster:
    cluster = cluster_factory(n_brokers=n_brokers, overrides=GROUP_OVERRIDES)
    with cluster.admin() as admin:
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, min(n_brokers, 2))])
    cluster.wait_for(
        lambda: all(cluster.leader(TOPIC, p) >= 0 for p in range(PARTITIONS)),
        timeout_s=30,
        what=f"leaders for {TOPIC}",
    )
    return cluster


def _produce(cluster: Cluster, start: int, count: int) -> None:
    """Records v<start> .. v<start+count-1>, spread over the partitions by key."""
    with MiniProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all") as producer:
        for i in range(start, start + count):
            producer.send(TOPIC, f"v{i}".encode(), key=f"k{i}".encode())
        producer.flush(timeout=30)


def _group() -> str:
    return f"group-{uuid.uuid4().hex[:8]}"


# --- group members of three kinds, each polling in its own thread -------------------------------


class Member:
    """A consumer of ``TOPIC`` in ``group``, polling in a thread of its own (the clients are not
    thread-safe: the test thread only reads what the poll thread recorded)."""

    def __init__(
        self,
        client: str,
        cluster: Cluster,
        group: str,
        name: str,
        *,
        group_instance_id: str | None = None,
    ) -> None:
        self.client = client
        self.name = name
        self.consumed: list[tuple[int, int, bytes]] = []  # (partition, offset, value)
        self.owned: frozenset[int] = frozenset()
        self.assignments = 0  # rebalances this member took part in (assignment callbacks)
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._consumer = _new_consumer(
            client, cluster, group, name, group_instance_id, on_assign=self._assigned
        )
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self.consumed.extend(_poll(self.client, self._consumer))
                self.owned = frozenset(_assignment(self._consumer))
        except BaseException as exc:
            self.error = exc
        finally:
            self.owned = frozenset()
            self._consumer.close()  # commits what was consumed, then leaves the group

    def _assigned(self) -> None:
        self.assignments += 1

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        assert not self._thread.is_alive(), f"{self.name} did not close"
        assert self.error is None, f"{self.name}: {self.error!r}"

    def values(self) -> list[bytes]:
        return [v for _, _, v in self.consumed]


class _Assigned(
    kafka.ConsumerRebalanceListener,  # type: ignore[misc]
    aiokafka.abc.ConsumerRebalanceListener,  # type: ignore[misc]
):
    """A rebalance listener for kafka-python's, aiokafka's and the minikafka consumer."""

    def __init__(self, on_assign: Callable[[], None]) -> None:
        self._on_assign = on_assign

    def on_partitions_revoked(self, revoked: Any) -> None:
        pass

    def on_partitions_assigned(self, assigned: Any) -> None:
        self._on_assign()


def _new_consumer(
    client: str,
    cluster: Cluster,
    group: str,
    name: str,
    group_instance_id: str | None = None,
    *,
    on_assign: Callable[[], None] = lambda: None,
) -> Any:
    # A static member's restart must fit in its session, on a loaded machine too.
    session_timeout_ms = SESSION_TIMEOUT_MS if group_instance_id is None else 10_000
    if client == "kafka-python":
        consumer = kafka.KafkaConsumer(
            bootstrap_servers=cluster.kafka_bootstrap_servers,
            group_id=group,
            client_id=name,
            group_instance_id=group_instance_id,
            auto_offset_reset="earliest",
            session_timeout_ms=session_timeout_ms,
            heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
            auto_commit_interval_ms=300,
            retry_backoff_ms=50,
        )
        consumer.subscribe([TOPIC], listener=_Assigned(on_assign))
        # kafka-python 3.0.12 drops the result of a join that outlives poll()'s timeout when
        # the leader's own metadata snapshot started it (the member then stays unassigned,
        # without heartbeats, until its session expires). A new consumer's snapshot is taken
        # at its first metadata update after subscribe(), and a leader without one rejoins
        # once it arrives: take it now, before the first join.
        consumer.topics()
        return consumer
    if client == "confluent-kafka":
        config = {
            "bootstrap.servers": cluster.kafka_bootstrap_servers,
            "group.id": group,
            "client.id": name,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": session_timeout_ms,
            "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
            "auto.commit.interval.ms": 300,
            "topic.metadata.refresh.interval.ms": 1000,
        }
        if group_instance_id is not None:
            config["group.instance.id"] = group_instance_id
        consumer = confluent_kafka.Consumer(config)
        consumer.subscribe([TOPIC], on_assign=lambda _consumer, _partitions: on_assign())
        return consumer
    if client == "aiokafka":
        return _AioConsumer(cluster, group, name, group_instance_id, session_timeout_ms, on_assign)
    assert client == "minikafka"
    consumer = MiniConsumer(
        bootstrap_servers=cluster.bootstrap_servers,
        group_id=group,
        client_id=name,
        group_instance_id=group_instance_id,
        auto_offset_reset="earliest",
        session_timeout_ms=session_timeout_ms,
        heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
        auto_commit_interval_ms=300,
    )
    consumer.subscribe([TOPIC], listener=_Assigned(on_assign))
    return consumer


class _AioConsumer:
    """aiokafka's consumer behind the blocking calls a Member makes: its event loop runs
    while the member polls (its heartbeats and fetches go on then), one thread at a time."""

    def __init__(
        self,
        cluster: Cluster,
        group: str,
        name: str,
        group_instance_id: str | None,
        session_timeout_ms: int,
        on_assign: Callable[[], None],
    ) -> None:
        self._loop = asyncio.new_event_loop()

        async def start() -> aiokafka.AIOKafkaConsumer:
            consumer = aiokafka.AIOKafkaConsumer(  # made on its loop: aiokafka asks for it
                bootstrap_servers=cluster.kafka_bootstrap_servers,
                group_id=group,
                client_id=name,
                group_instance_id=group_instance_id,
                auto_offset_reset="earliest",
                session_timeout_ms=session_timeout_ms,
                heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
                auto_commit_interval_ms=300,
            )
            await consumer.start()
            consumer.subscribe([TOPIC], listener=_Assigned(on_assign))
            return consumer

        self._consumer = self._loop.run_until_complete(start())

    def poll(self, timeout_ms: int) -> dict[Any, list[Any]]:
        polled: dict[Any, list[Any]] = self._loop.run_until_complete(
            self._consumer.getmany(timeout_ms=timeout_ms)
        )
        return polled

    def assignment(self) -> set[Any]:
        return set(self._consumer.assignment())

    def close(self) -> None:
        try:
            self._loop.run_until_complete(self._consumer.stop())
        finally:
            self._loop.close()


def _poll(client: str, consumer: Any) -> list[tuple[int, int, bytes]]:
    if client == "confluent-kafka":
        polled = []
        for message in consumer.consume(num_messages=500, timeout=0.2):
            if message.error() is not None:
                if message.error().code() == confluent_kafka.KafkaError._PARTITION_EOF:
                    continue
                raise confluent_kafka.KafkaException(message.error())
            polled.append((message.partition(), message.offset(), message.value()))
        return polled
    batches = consumer.poll(timeout_ms=200)
    return [(tp.partition, r.offset, r.value) for tp, rs in batches.items() for r in rs]


def _assignment(consumer: Any) -> list[int]:
    return [tp.partition for tp in consumer.assignment()]


def _wait_split(cluster: Cluster, members: list[Member], what: str) -> None:
    """Until every partition is owned by exactly one of ``members`` and each owns some."""

    def split() -> bool:
        owned = [m.owned for m in members]
        return all(owned) and sorted(p for o in owned for p in o) == list(range(PARTITIONS))

    _wait(cluster, members, split, what)


def _wait_consumed(cluster: Cluster, members: list[Member], total: int) -> None:
    def done() -> bool:
        return len({v for m in members for v in m.values()}) >= total

    _wait(cluster, members, done, f"{total} distinct records consumed")


def _wait(cluster: Cluster, members: list[Member], done: Callable[[], bool], what: str) -> None:
    """Until ``done()``; a member whose poll thread failed fails the test at once."""
    cluster.wait_for(lambda: done() or any(m.error for m in members), timeout_s=40, what=what)
    for m in members:
        assert m.error is None, f"{m.name}: {m.error!r}"


def _committed_by_minikafka(cluster: Cluster, group: str) -> dict[int, int]:
    """The group's commits on ``TOPIC`` as minikafka's gRPC admin reads them."""
    with cluster.admin() as admin:
        offsets = admin.list_consumer_group_offsets(group)
    return {tp.partition: o.offset for tp, o in offsets.items() if tp.topic == TOPIC}


def _end_offsets(cluster: Cluster) -> dict[int, int]:
    with MiniConsumer(bootstrap_servers=cluster.bootstrap_servers) as consumer:
        ends = consumer.end_offsets([MiniTopicPartition(TOPIC, p) for p in range(PARTITIONS)])
    return {tp.partition: offset for tp, offset in ends.items()}


# --- rebalances --------------------------------------------------------------------------------


@pytest.mark.parametrize("client", CLIENTS)
def test_group_rebalances_as_members_join_and_leave_and_consumes_each_record_once(
    cluster_factory: ClusterFactory, client: str
) -> None:
    cluster = _cluster(cluster_factory)
    group = _group()
    _produce(cluster, 0, 300)

    a = Member(client, cluster, group, "a")
    _wait_split(cluster, [a], "a owns every partition")
    b = Member(client, cluster, group, "b")
    _wait_split(cluster, [a, b], "a and b split the partitions")
    _produce(cluster, 300, 300)
    c = Member(client, cluster, group, "c")
    _wait_split(cluster, [a, b, c], "a, b and c split the partitions")
    _wait_consumed(cluster, [a, b, c], 600)

    b.close()  # LeaveGroup: a and c take b's partitions at once
    _wait_split(cluster, [a, c], "a and c split the partitions after b left")
    _produce(cluster, 600, 200)
    _wait_consumed(cluster, [a, b, c], 800)
    a.close()
    c.close()

    consumed = a.values() + b.values() + c.values()
    assert sorted(set(consumed)) == sorted(f"v{i}".encode() for i in range(800))
    # Commits on every revocation: no record went to two members.
    assert len(consumed) == 800
    assert _committed_by_minikafka(cluster, group) == _end_offsets(cluster)


@pytest.mark.parametrize("client", CLIENTS)
def test_new_member_resumes_from_the_offsets_the_last_one_committed(
    cluster_factory: ClusterFactory, client: str
) -> None:
    cluster = _cluster(cluster_factory)
    group = _group()
    _produce(cluster, 0, 120)
    first = Member(client, cluster, group, "first")
    _wait_consumed(cluster, [first], 120)
    first.close()  # commits its positions and leaves
    assert _committed_by_minikafka(cluster, group) == _end_offsets(cluster)

    _produce(cluster, 120, 60)
    second = Member(client, cluster, group, "second")
    expected = {f"v{i}".encode() for i in range(120, 180)}
    # Every new record read: a partition is read in offset order, so a record before the
    # committed offset, had it been read, came before them.
    _wait(cluster, [second], lambda: expected <= set(second.values()), "v120..v179 consumed")
    second.close()
    assert sorted(second.values()) == sorted(expected)


# --- one group, two front doors ----------------------------------------------------------------


@pytest.mark.parametrize("client", CLIENTS)
def test_mixed_group_of_grpc_and_kafka_consumers_splits_the_partitions(
    cluster_factory: ClusterFactory, client: str
) -> None:
    cluster = _cluster(cluster_factory)
    group = _group()
    _produce(cluster, 0, 200)
    first = Member("minikafka", cluster, group, "grpc-1")
    _wait_split(cluster, [first], "the gRPC consumer owns every partition")
    kafka_member = Member(client, cluster, group, "kafka")
    # minikafka's consumer leads: it reads the Kafka client's subscription and assigns to it.
    _wait_split(cluster, [first, kafka_member], "a gRPC and a Kafka consumer split the partitions")
    assert len(first.owned) == len(kafka_member.owned) == PARTITIONS // 2
    _produce(cluster, 200, 200)
    _wait_consumed(cluster, [first, kafka_member], 400)
    assert kafka_member.consumed, "the Kafka consumer got records after joining"

    first.close()
    _wait_split(cluster, [kafka_member], "the Kafka consumer owns every partition")
    second = Member("minikafka", cluster, group, "grpc-2")
    # Now the Kafka client leads: it reads minikafka's subscription, minikafka its assignment.
    _wait_split(cluster, [kafka_member, second], "the Kafka consumer shares with a new gRPC one")
    assert len(second.owned) == PARTITIONS // 2
    _produce(cluster, 400, 100)
    _wait_consumed(cluster, [first, kafka_member, second], 500)
    assert second.consumed, "the second gRPC consumer got records after joining"
    kafka_member.close()
    second.close()

    consumed = first.values() + kafka_member.values() + second.values()
    assert sorted(set(consumed)) == sorted(f"v{i}".encode() for i in range(500))
    assert len(consumed) == 500
    assert _committed_by_minikafka(cluster, group) == _end_offsets(cluster)


def test_offsets_committed_through_one_door_are_read_through_the_other(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = _cluster(cluster_factory)
    _produce(cluster, 0, 60)

    # kafka-python commits (OffsetCommit, generation -1: no membership), minikafka reads.
    by_kafka = _group()
    consumer = kafka.KafkaConsumer(
        bootstrap_servers=cluster.kafka_bootstrap_servers,
        group_id=by_kafka,
        enable_auto_commit=False,
    )
    try:
        consumer.assign([kafka.TopicPartition(TOPIC, p) for p in (0, 1)])
        consumer.commit(
            {
                kafka.TopicPartition(TOPIC, 0): kafka.OffsetAndMetadata(3, "from kafka", -1),
                kafka.TopicPartition(TOPIC, 1): kafka.OffsetAndMetadata(7, "", -1),
            }
        )
        assert consumer.committed(kafka.TopicPartition(TOPIC, 0)) == 3
    finally:
        consumer.close()
    with cluster.admin() as admin:
        offsets = admin.list_consumer_group_offsets(by_kafka)
    assert {tp.partition: (o.offset, o.metadata) for tp, o in offsets.items()} == {
        0: (3, "from kafka"),
        1: (7, ""),
    }
    with MiniConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id=by_kafka) as mini:
        mini.assign([MiniTopicPartition(TOPIC, 1)])
        assert mini.position(MiniTopicPartition(TOPIC, 1)) == 7

    # minikafka commits, confluent-kafka and kafka-python's admin read.
    by_grpc = _group()
    with MiniConsumer(
        bootstrap_servers=cluster.bootstrap_servers, group_id=by_grpc, enable_auto_commit=False
    ) as mini:
        mini.assign([MiniTopicPartition(TOPIC, 2)])
        mini.commit({MiniTopicPartition(TOPIC, 2): 5})
    rdkafka = confluent_kafka.Consumer(
        {"bootstrap.servers": cluster.kafka_bootstrap_servers, "group.id": by_grpc}
    )
    try:
        (committed,) = rdkafka.committed([confluent_kafka.TopicPartition(TOPIC, 2)], timeout=20)
        assert committed.error is None and committed.offset == 5
        (missing,) = rdkafka.committed([confluent_kafka.TopicPartition(TOPIC, 3)], timeout=20)
        assert missing.offset == confluent_kafka.OFFSET_INVALID
    finally:
        rdkafka.close()
    admin = kafka.KafkaAdminClient(bootstrap_servers=cluster.kafka_bootstrap_servers)
    try:
        # OffsetFetch v8 (two groups in one request), each with a null topic list
        both = admin.list_group_offsets([by_kafka, by_grpc])
    finally:
        admin.close()
    assert {g: {tp.partition: o.offset for tp, o in v.items()} for g, v in both.items()} == {
        by_kafka: {0: 3, 1: 7},
        by_grpc: {2: 5},
    }


@pytest.mark.parametrize("client", [*CLIENTS, "aiokafka", "minikafka"])
def test_a_static_member_restarting_within_its_session_gets_its_partitions_back(
    cluster_factory: ClusterFactory, client: str
) -> None:
    cluster = _cluster(cluster_factory)
    _produce(cluster, 0, 60)
    group = _group()
    a = Member(client, cluster, group, "a", group_instance_id="a")
    b = Member(client, cluster, group, "b", group_instance_id="b")
    restarted: Member | None = None
    try:
        _wait_split(cluster, [a, b], "two static members sharing the partitions")
        _wait_consumed(cluster, [a, b], 60)
        owned_by_a, owned_by_b, b_assignments = a.owned, b.owned, b.assignments
        a.close()  # a static member leaves no LeaveGroup behind: its place is kept
        restarted = Member(client, cluster, group, "a-again", group_instance_id="a")
        _wait(cluster, [restarted, b], lambda: restarted.owned == owned_by_a, "a back")
        _produce(cluster, 60, 60)
        _wait_consumed(cluster, [a, restarted, b], 120)
        # b never took part in a rebalance, and owns what it owned.
        assert (b.assignments, b.owned) == (b_assignments, owned_by_b)
        assert restarted.assignments == 1
        assert set(restarted.values()) | set(b.values()) >= {
            f"v{i}".encode() for i in range(60, 120)
        }
    finally:
        b.close()
        if restarted is not None:
            restarted.close()


def test_offset_delete_spares_the_topics_a_live_group_consumes(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = _cluster(cluster_factory)
    with cluster.admin() as admin:
        admin.create_topics([NewTopic("other", 1, 1)])
    cluster.wait_for(lambda: cluster.leader("other", 0) >= 0, timeout_s=30, what="other-0")
    _produce(cluster, 0, 30)
    group = _group()
    committer = kafka.KafkaConsumer(
        bootstrap_servers=cluster.kafka_bootstrap_servers, group_id=group, enable_auto_commit=False
    )
    try:
        committer.commit(
            {
                kafka.TopicPartition(TOPIC, 0): kafka.OffsetAndMetadata(1, "", -1),
                kafka.TopicPartition("other", 0): kafka.OffsetAndMetadata(2, "", -1),
            }
        )
    finally:
        committer.close()
    member = Member("confluent-kafka", cluster, group, "member")
    admin = kafka.KafkaAdminClient(bootstrap_servers=cluster.kafka_bootstrap_servers)
    try:
        _wait(cluster, [member], lambda: len(member.owned) == PARTITIONS, "the member's partitions")
        deleted = admin.delete_group_offsets(
            group, [kafka.TopicPartition(TOPIC, 0), kafka.TopicPartition("other", 0)]
        )
        assert deleted == {
            kafka.TopicPartition(TOPIC, 0): kafka.errors.GroupSubscribedToTopicError,
            kafka.TopicPartition("other", 0): kafka.errors.NoError,
        }
        assert kafka.TopicPartition("other", 0) not in admin.list_group_offsets(group)
        member.close()

        def empty() -> bool:
            return bool(admin.describe_groups([group])[group]["group_state"] == "Empty")

        cluster.wait_for(empty, timeout_s=30, what="the group to empty")
        deleted = admin.delete_group_offsets(group, [kafka.TopicPartition(TOPIC, 0)])
        assert deleted == {kafka.TopicPartition(TOPIC, 0): kafka.errors.NoError}
        assert kafka.TopicPartition(TOPIC, 0) not in admin.list_group_offsets(group)
        with pytest.raises(kafka.errors.GroupIdNotFoundError):
            admin.delete_group_offsets(_group(), [kafka.TopicPartition(TOPIC, 0)])
    finally:
        admin.close()


# --- administration ----------------------------------------------------------------------------


def test_confluent_admin_lists_describes_and_deletes_groups(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = _cluster(cluster_factory)
    _produce(cluster, 0, 30)
    group = _group()
    members = [Member("confluent-kafka", cluster, group, n) for n in ("a", "b")]
    _wait_split(cluster, members, "a and b split the partitions")
    _wait_consumed(cluster, members, 30)
    admin = confluent_kafka.admin.AdminClient(
        {"bootstrap.servers": cluster.kafka_bootstrap_servers}
    )

    def listed(states: set[Any]) -> dict[str, Any]:
        result = admin.list_consumer_groups(states=states, request_timeout=10).result()
        assert not result.errors, result.errors
        return {g.group_id: g for g in result.valid}

    stable = confluent_kafka.ConsumerGroupState.STABLE
    assert listed({stable})[group].state == stable
    assert group not in listed({confluent_kafka.ConsumerGroupState.EMPTY})

    description = admin.describe_consumer_groups([group], request_timeout=10)[group].result()
    assert description.state == stable
    assert description.partition_assignor in ("range", "roundrobin")
    assert not description.is_simple_consumer_group
    assert sorted(m.client_id for m in description.members) == ["a", "b"]
    # The members' assignments, decoded by librdkafka from DescribeGroups' bytes.
    assigned = sorted(
        (tp.topic, tp.partition)
        for m in description.members
        for tp in m.assignment.topic_partitions
    )
    assert assigned == [(TOPIC, p) for p in range(PARTITIONS)]

    (refused,) = admin.delete_consumer_groups([group], request_timeout=10).values()
    with pytest.raises(confluent_kafka.KafkaException) as raised:
        refused.result()
    assert raised.value.args[0].code() == confluent_kafka.KafkaError.NON_EMPTY_GROUP

    for member in members:
        member.close()
    empty = listed({confluent_kafka.ConsumerGroupState.EMPTY})[group]
    assert (empty.state, empty.is_simple_consumer_group) == (
        confluent_kafka.ConsumerGroupState.EMPTY,
        False,
    )
    (deleted,) = admin.delete_consumer_groups([group], request_timeout=10).values()
    deleted.result()
    assert group not in listed(set())
    with cluster.admin() as mini_admin:
        assert mini_admin.list_consumer_group_offsets(group) == {}


def test_kafka_python_admin_lists_describes_removes_members_and_deletes_groups(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = _cluster(cluster_factory)
    _produce(cluster, 0, 30)
    group = _group()
    member = Member("minikafka", cluster, group, "grpc-member")  # described through Kafka's door
    _wait_split(cluster, [member], "the member owns every partition")
    admin = kafka.KafkaAdminClient(bootstrap_servers=cluster.kafka_bootstrap_servers)
    try:
        groups = admin.list_groups(states_filter=["Stable"])
        assert {
            "group_id": group,
            "protocol_type": "consumer",
            "group_state": "Stable",
        }.items() <= {g["group_id"]: g for g in groups}[group].items()

        described = admin.describe_groups([group])[group]
        assert described["error"] is None
        assert described["group_state"] == "Stable"
        (m,) = described["members"]
        assert m["client_id"] == "grpc-member"
        assert m["client_host"] == "/127.0.0.1"
        # minikafka's subscription and assignment, decoded by kafka-python as ConsumerProtocol
        assert m["member_metadata"]["topics"] == [TOPIC]
        (assigned,) = m["member_assignment"]["assigned_partitions"]
        assert (assigned["topic"], assigned["partitions"]) == (TOPIC, list(range(PARTITIONS)))
        # asked for (KIP-430): every operation on a group, as a broker without an authorizer
        assert sorted(described["authorized_operations"]) == ["DELETE", "DESCRIBE", "READ"]

        # LeaveGroup v3+ (batched): a Kafka admin removes the gRPC member, and one unknown
        removed = admin.remove_group_members(
            group,
            [
                kafka.admin.MemberToRemove(member_id=m["member_id"], reason="test"),
                kafka.admin.MemberToRemove(member_id="nobody"),
            ],
        )
        assert removed == {
            m["member_id"]: kafka.errors.NoError,
            "nobody": kafka.errors.UnknownMemberIdError,
        }

        def rejoined() -> bool:
            members = admin.describe_groups([group])[group]["members"]
            return len(members) == 1 and members[0]["member_id"] != m["member_id"]

        # Its next heartbeat gets UNKNOWN_MEMBER_ID: it joins again under a new id.
        cluster.wait_for(rejoined, timeout_s=20, what="the removed member to join again")
        _wait_split(cluster, [member], "the member owns every partition again")
        member.close()
        assert admin.describe_groups([group])[group]["group_state"] == "Empty"
        assert admin.delete_groups([group]) == {group: "OK"}
        assert admin.delete_groups([group]) == {group: "GroupIdNotFoundError"}
        assert admin.describe_groups([group])[group]["group_state"] == "Dead"
    finally:
        admin.close()


# --- versions, through a raw connection --------------------------------------------------------


@pytest.fixture
def raw_cluster(
    cluster_factory: ClusterFactory,
) -> Iterator[tuple[Cluster, Callable[[str], RawKafka]]]:
    cluster = _cluster(cluster_factory)
    opened: list[RawKafka] = []

    def connect(address: str) -> RawKafka:
        opened.append(RawKafka(address))
        return opened[-1]

    yield cluster, connect
    for connection in opened:
        connection.close()


def _coordinator_address(cluster: Cluster, raw: RawKafka, group: str) -> str:
    def find() -> str | None:
        answer = raw.call(10, 4, {"key_type": 0, "coordinator_keys": [group]}).coordinators[0]
        return f"{answer.host}:{answer.port}" if answer.error_code == 0 else None

    return cluster.wait_for(find, timeout_s=30, what=f"the coordinator of {group}")


def test_find_coordinator_batches_keys_and_finds_transaction_coordinators(
    raw_cluster: tuple[Cluster, Callable[[str], RawKafka]],
) -> None:
    cluster, connect = raw_cluster
    raw = connect(cluster.brokers[0].kafka_address)
    groups = [_group() for _ in range(4)]
    _coordinator_address(cluster, raw, groups[0])  # __consumer_offsets exists and has leaders

    answer = raw.call(10, 4, {"key_type": 0, "coordinator_keys": groups})
    assert [c.key for c in answer.coordinators] == groups
    kafka_ports = {b.kafka_port for b in cluster.brokers.values()}
    for coordinator in answer.coordinators:
        assert coordinator.error_code == 0
        assert coordinator.port in kafka_ports  # the Kafka listener, not the gRPC one
        assert cluster.brokers[coordinator.node_id].kafka_port == coordinator.port
    v0 = raw.call(10, 0, {"key": groups[1]})
    assert (v0.error_code, v0.node_id) == (0, answer.coordinators[1].node_id)

    # Key type 1: the transaction coordinator, once __transaction_state (created by the first
    # such request) has a leader.
    def transaction_coordinator() -> Entity | None:
        found = raw.call(10, 4, {"key_type": 1, "coordinator_keys": ["txn"]}).coordinators[0]
        if found.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE:
            return None
        return found

    transactional = cluster.wait_for(transaction_coordinator, 30, "a transaction coordinator")
    assert transactional.error_code == ErrorCode.NONE
    assert cluster.brokers[transactional.node_id].kafka_port == transactional.port
    v2 = raw.call(10, 2, {"key": "txn", "key_type": 1})
    assert (v2.error_code, v2.node_id) == (ErrorCode.NONE, transactional.node_id)


def _join(raw: RawKafka, version: int, group: str, member_id: str) -> Entity:
    return raw.call(
        11,
        version,
        {
            "group_id": group,
            "session_timeout": 10_000,  # the test pauses between calls
            "rebalance_timeout": 10_000,
            "member_id": member_id,
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b"subscription"}],
        },
    )


def test_join_group_versions_member_ids_leave_and_offsets(
    raw_cluster: tuple[Cluster, Callable[[str], RawKafka]],
) -> None:
    cluster, connect = raw_cluster
    group = _group()
    address = _coordinator_address(cluster, connect(cluster.brokers[0].kafka_address), group)
    raw = connect(address)

    # v4 (KIP-394): a first join gets an id and MEMBER_ID_REQUIRED, then joins with it.
    required = _join(raw, 4, group, "")
    assert required.error_code == ErrorCode.MEMBER_ID_REQUIRED
    assert required.member_id.startswith("raw-")
    joined = _join(raw, 4, group, required.member_id)
    assert joined.error_code == 0
    assert (joined.leader, joined.member_id) == (required.member_id, required.member_id)
    assert [(m.member_id, m.metadata) for m in joined.members] == [
        (required.member_id, b"subscription")
    ]
    synced = raw.call(
        14,
        5,
        {
            "group_id": group,
            "generation_id": joined.generation_id,
            "member_id": joined.member_id,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": [{"member_id": joined.member_id, "assignment": b"assignment"}],
        },
    )
    assert (synced.error_code, synced.assignment) == (0, b"assignment")
    assert (synced.protocol_type, synced.protocol_name) == ("consumer", "range")
    described = raw.call(15, 5, {"groups": [group], "include_authorized_operations": True})
    (member,) = described.groups[0].members
    assert (member.member_metadata, member.member_assignment) == (b"subscription", b"assignment")
    assert described.groups[0].authorized_operations == (1 << 3) | (1 << 6) | (1 << 8)

    # OffsetCommit v2 from the member, OffsetFetch v1 (partition list) and v5 (null: all).
    commit = raw.call(
        8,
        2,
        {
            "group_id": group,
            "generation_id_or_member_epoch": joined.generation_id,
            "member_id": joined.member_id,
            "retention_time": -1,
            "topics": [
                {
                    "name": TOPIC,
                    "partitions": [
                        {"partition_index": 4, "committed_offset": 9, "committed_metadata": None}
                    ],
                }
            ],
        },
    )
    assert [(p.partition_index, p.error_code) for p in commit.topics[0].partitions] == [(4, 0)]
    wrong_generation = raw.call(
        12,
        4,
        {
            "group_id": group,
            "generation_id": joined.generation_id + 1,
            "member_id": joined.member_id,
        },
    )
    assert wrong_generation.error_code == ErrorCode.ILLEGAL_GENERATION
    fetched = raw.call(
        9, 1, {"group_id": group, "topics": [{"name": TOPIC, "partition_indexes": [4, 5]}]}
    )
    assert [
        (p.partition_index, p.committed_offset, p.metadata) for p in fetched.topics[0].partitions
    ] == [
        (4, 9, ""),
        (5, -1, ""),
    ]
    every = raw.call(9, 5, {"group_id": group, "topics": None})
    assert every.error_code == 0
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in every.topics] == [
        (TOPIC, [4])
    ]

    # Another broker is not the group's coordinator: its errors, in each version's place.
    elsewhere = connect(
        next(b.kafka_address for b in cluster.brokers.values() if b.kafka_address != address)
    )
    v1 = elsewhere.call(
        9, 1, {"group_id": group, "topics": [{"name": TOPIC, "partition_indexes": [4]}]}
    )
    assert [(p.committed_offset, p.error_code) for p in v1.topics[0].partitions] == [
        (-1, ErrorCode.NOT_COORDINATOR)
    ]
    v6 = elsewhere.call(9, 6, {"group_id": group, "topics": None})
    assert (v6.error_code, v6.topics) == (ErrorCode.NOT_COORDINATOR, ())
    not_here = elsewhere.call(
        12,
        0,
        {"group_id": group, "generation_id": joined.generation_id, "member_id": joined.member_id},
    )
    assert not_here.error_code == ErrorCode.NOT_COORDINATOR

    # v2 (before KIP-394): a first join gets its id and joins in the same request. The
    # rebalance it starts waits for the known member, whose rejoin (v4) completes it.
    answers: dict[str, Entity] = {}
    newcomer = connect(address)

    def join(name: str, connection: RawKafka, version: int, member_id: str) -> None:
        answers[name] = _join(connection, version, group, member_id)

    threads = [
        threading.Thread(target=join, args=("newcomer", newcomer, 2, "")),
        threading.Thread(target=join, args=("first", raw, 4, joined.member_id)),
    ]
    threads[0].start()
    with cluster.admin() as admin:  # the newcomer's join starts the rebalance
        cluster.wait_for(
            lambda: admin.describe_groups([group])[group].state == "PreparingRebalance",
            20,
            "the newcomer's join to start a rebalance",
            interval_s=0.02,
        )
    threads[1].start()
    for thread in threads:
        thread.join(timeout=20)
    second = answers["newcomer"]
    assert second.error_code == 0, second
    assert second.member_id.startswith("raw-") and second.member_id != joined.member_id
    assert answers["first"].error_code == 0
    assert second.generation_id == answers["first"].generation_id == joined.generation_id + 1
    assert second.leader == answers["first"].leader == joined.member_id

    # LeaveGroup v3: both members at once, and one the group does not know.
    left = raw.call(
        13,
        3,
        {
            "group_id": group,
            "members": [
                {"member_id": joined.member_id, "group_instance_id": None},
                {"member_id": second.member_id, "group_instance_id": None},
                {"member_id": "nobody", "group_instance_id": None},
            ],
        },
    )
    assert left.error_code == 0
    assert [(m.member_id, m.error_code) for m in left.members] == [
        (joined.member_id, 0),
        (second.member_id, 0),
        ("nobody", ErrorCode.UNKNOWN_MEMBER_ID),
    ]
    listed = raw.call(16, 4, {"states_filter": ["empty"]})
    assert group in [g.group_id for g in listed.groups]
    assert not raw.call(16, 5, {"types_filter": ["consumer"]}).groups
    assert group in [g.group_id for g in raw.call(16, 5, {"types_filter": ["classic"]}).groups]

    # OffsetFetch v8: two groups in one request, one of them never seen (no offsets, no error)
    # but coordinated here too.
    unknown = next(
        g
        for g in (_group() for _ in range(1000))
        if partition_for(g, OFFSETS_PARTITIONS) == partition_for(group, OFFSETS_PARTITIONS)
    )
    batched = raw.call(
        9,
        8,
        {
            "groups": [
                {"group_id": group, "topics": [{"name": TOPIC, "partition_indexes": [4]}]},
                {"group_id": unknown, "topics": None},
            ],
            "require_stable": True,
        },
    )
    by_group = {g.group_id: g for g in batched.groups}
    assert by_group[group].error_code == 0
    assert by_group[group].topics[0].partitions[0].committed_offset == 9
    assert by_group[unknown].topics == ()
