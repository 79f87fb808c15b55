"""ZkStore against a real ZooKeeper: registrations, topics, partition state, election, fencing."""

from __future__ import annotations

import functools
import json
import operator
import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import pytest
from kazoo.exceptions import NoNodeError, UnimplementedError

from minikafka.controller.errors import TopicAlreadyExistsError
from minikafka.proto.cluster_state import BadZNodeVersionError, PartitionState, Versioned
from minikafka.proto.common import EndPoint, TopicPartition
from minikafka.proto.errors import UnknownTopicOrPartitionError
from minikafka.zk import zk_store
from minikafka.zk.errors import (
    BrokerIdAlreadyRegisteredError,
    ControllerMovedError,
    ElectionInProgressError,
    ZNodeExistsError,
)
from minikafka.zk.zk_data import (
    PERSISTENT_PATHS,
    BrokerRegistration,
    TopicAssignment,
    random_uuid_base64,
)
from minikafka.zk.zk_multi_read import multi_read_async
from minikafka.zk.zk_store import ZkStore
from tests.integration.zookeeper import ZooKeeperServer, expire_session

pytestmark = pytest.mark.integration

T = TypeVar("T")
StoreFactory = Callable[[], ZkStore]


@pytest.fixture
def new_store(zk_connect: str) -> Iterator[StoreFactory]:
    """Opens stores (each its own ZooKeeper session) on this test's chroot; closes them after."""
    stores: list[ZkStore] = []

    def open_store() -> ZkStore:
        store = ZkStore.connect(zk_connect, session_timeout_ms=6000)
        store.ensure_paths()
        stores.append(store)
        return store

    yield open_store
    for store in stores:
        store.close()


@pytest.fixture
def zk(new_store: StoreFactory) -> ZkStore:
    return new_store()


def broker(broker_id: int, port: int = 9092) -> BrokerRegistration:
    return BrokerRegistration(broker_id, (EndPoint("PLAINTEXT", "127.0.0.1", port + broker_id),))


def wait_for(values: queue.Queue[T], predicate: Callable[[T], bool], timeout_s: float = 10) -> None:
    """Consume what a watch delivers until a value satisfies ``predicate``, else queue.Empty."""
    while not predicate(values.get(timeout=timeout_s)):
        pass


# --- connection and paths ----------------------------------------------------------------------


def test_connect_creates_a_missing_chroot(zookeeper_server: ZooKeeperServer) -> None:
    chroot = f"/fresh-{uuid.uuid4().hex}/cluster-a"
    with ZkStore.connect(zookeeper_server.connect_string + chroot) as zk:
        zk.ensure_paths()
        zk.ensure_paths()  # idempotent
        for path in PERSISTENT_PATHS:
            assert zk.client.exists(path)
    with ZkStore.connect(zookeeper_server.connect_string) as root:
        assert root.client.exists(chroot + "/brokers/ids")


# --- brokers -----------------------------------------------------------------------------------


def test_register_broker_and_read_it_back(zk: ZkStore) -> None:
    registration = broker(1)
    zk.register_broker(registration)
    zk.register_broker(registration)  # the same session again (a retried create) is fine

    assert zk.get_broker(1) == registration
    assert zk.get_broker(2) is None
    assert zk.get_live_broker_ids() == [1]
    data, stat = zk.client.get("/brokers/ids/1")
    assert stat.ephemeralOwner == zk.session_id
    assert json.loads(data)["endpoints"] == ["PLAINTEXT://127.0.0.1:9093"]


def test_broker_epoch_is_the_registration_czxid(
    zookeeper_server: ZooKeeperServer, new_store: StoreFactory
) -> None:
    zk = new_store()
    epoch = zk.register_broker(broker(1))
    assert zk.get_broker_epoch(1) == epoch == zk.client.exists("/brokers/ids/1").czxid
    assert zk.register_broker(broker(1)) == epoch  # a retried create keeps the epoch
    assert zk.get_broker_epoch(2) is None

    expire_session(zk.client, zookeeper_server.connect_string)
    assert zk.register_broker(broker(1)) > epoch


def test_duplicate_broker_id_from_another_session_fails(new_store: StoreFactory) -> None:
    first, second = new_store(), new_store()
    registration = broker(1)
    first.register_broker(registration)
    with pytest.raises(
        BrokerIdAlreadyRegisteredError, match="broker id 1 is already registered"
    ) as held:
        second.register_broker(broker(1, port=19092))
    # the error names the holder: its session and what it advertises
    assert held.value.owner_session == first.session_id
    assert held.value.endpoints == ("PLAINTEXT://127.0.0.1:9093",)
    assert f"session 0x{first.session_id:x} (PLAINTEXT://127.0.0.1:9093)" in str(held.value)
    assert first.get_broker(1) == registration


def test_waiting_for_a_registration_to_go(
    zookeeper_server: ZooKeeperServer, new_store: StoreFactory
) -> None:
    holder, restarted = new_store(), new_store()
    holder.register_broker(broker(1))
    started = time.monotonic()
    assert not restarted.wait_for_broker_deregistration(1, timeout_s=0.5)  # held by a live one
    assert time.monotonic() - started >= 0.5
    assert restarted.wait_for_broker_deregistration(2, timeout_s=0.5)  # never registered

    result: list[bool] = []
    waiter = threading.Thread(
        target=lambda: result.append(restarted.wait_for_broker_deregistration(1, timeout_s=20))
    )
    waiter.start()
    expire_session(holder.client, zookeeper_server.connect_string)  # as when a broker died
    waiter.join(20)
    assert result == [True]
    assert restarted.register_broker(broker(1)) == restarted.get_broker_epoch(1)


def test_registration_vanishes_when_the_session_expires(
    zookeeper_server: ZooKeeperServer, new_store: StoreFactory
) -> None:
    doomed, observer = new_store(), new_store()
    doomed.register_broker(broker(1))
    observer.register_broker(broker(2))
    seen: queue.Queue[list[int]] = queue.Queue()
    observer.watch_broker_ids(seen.put)
    wait_for(seen, lambda ids: ids == [1, 2])

    expire_session(doomed.client, zookeeper_server.connect_string)

    wait_for(seen, lambda ids: ids == [2])
    assert observer.get_broker(1) is None
    # a broker whose session expired registers again under its new session
    doomed.register_broker(broker(1))
    wait_for(seen, lambda ids: ids == [1, 2])


def test_cancelled_watch_gets_no_more_calls(new_store: StoreFactory) -> None:
    zk = new_store()
    seen: queue.Queue[list[int]] = queue.Queue()
    watch = zk.watch_broker_ids(seen.put)
    assert seen.get(timeout=5) == []
    watch.cancel()
    zk.register_broker(broker(1))
    with pytest.raises(queue.Empty):
        seen.get(timeout=0.5)


# --- topics and partition state ----------------------------------------------------------------


def orders(topic_id: str) -> TopicAssignment:
    return TopicAssignment("orders", topic_id, {0: (2, 1, 0), 1: (0, 2, 1)})


def test_topic_round_trip_with_config(zk: ZkStore) -> None:
    topic_id = random_uuid_base64()
    assignment = orders(topic_id)
    zk.create_topic(assignment, {"cleanup.policy": "compact"})

    assert zk.get_topic("orders") == Versioned(assignment, 0)
    assert zk.get_topic("missing") is None
    assert zk.get_all_topics() == ["orders"]
    assert zk.get_topic_config("orders") == {"cleanup.policy": "compact"}
    assert zk.get_topic_config("missing") == {}
    raw, _ = zk.client.get("/brokers/topics/orders")
    assert raw == (
        b'{"partitions":{"0":[2,1,0],"1":[0,2,1]},"topic_id":"' + topic_id.encode() + b'",'
        b'"adding_replicas":{},"removing_replicas":{},"version":3}'
    )
    with pytest.raises(TopicAlreadyExistsError, match="'orders' already exists"):
        zk.create_topic(orders(random_uuid_base64()))


def test_create_topic_overwrites_a_leftover_config(zk: ZkStore) -> None:
    zk.set_topic_config("orders", {"retention.ms": "1"})
    zk.create_topic(orders(random_uuid_base64()), {"retention.ms": "2"})
    assert zk.get_topic_config("orders") == {"retention.ms": "2"}


def test_topic_update_is_conditional_on_its_version(zk: ZkStore) -> None:
    zk.create_topic(orders(random_uuid_base64()))
    read = zk.get_topic("orders")
    assert read is not None
    grown = TopicAssignment("orders", read.value.topic_id, {**read.value.partitions, 2: (1, 0, 2)})
    assert zk.update_topic(grown, read.zk_version) == read.zk_version + 1
    with pytest.raises(BadZNodeVersionError):
        zk.update_topic(grown, read.zk_version)
    assert zk.get_topic("orders") == Versioned(grown, 1)


def test_watch_topics(zk: ZkStore) -> None:
    seen: queue.Queue[list[str]] = queue.Queue()
    zk.watch_topics(seen.put)
    zk.create_topic(orders(random_uuid_base64()))
    zk.create_topic(TopicAssignment("audit", random_uuid_base64(), {0: (1,)}))
    wait_for(seen, lambda topics: topics == ["audit", "orders"])


def test_partition_state_round_trip_and_conditional_update(zk: ZkStore) -> None:
    zk.create_topic(orders(random_uuid_base64()))
    state = PartitionState(leader=2, leader_epoch=0, isr=(2, 1, 0), controller_epoch=1)
    assert zk.create_partition_state("orders", 0, state) == 0
    with pytest.raises(ZNodeExistsError):
        zk.create_partition_state("orders", 0, state)

    read = zk.get_partition_state("orders", 0)
    assert read == Versioned(state, 0)
    raw, _ = zk.client.get("/brokers/topics/orders/partitions/0/state")
    assert raw == b'{"controller_epoch":1,"leader":2,"version":1,"leader_epoch":0,"isr":[2,1,0]}'

    shrunk = PartitionState(leader=2, leader_epoch=0, isr=(2, 1), controller_epoch=1)
    assert zk.update_partition_state("orders", 0, shrunk, expected_zk_version=0) == 1
    assert zk.get_partition_state("orders", 0) == Versioned(shrunk, 1)

    # a writer that read version 0 lost the race: it must re-read
    with pytest.raises(BadZNodeVersionError, match="no longer at zk version 0"):
        zk.update_partition_state("orders", 0, state, expected_zk_version=0)
    assert zk.get_partition_state("orders", 0) == Versioned(shrunk, 1)

    assert zk.get_partition_state("orders", 1) is None
    with pytest.raises(UnknownTopicOrPartitionError):
        zk.update_partition_state("orders", 1, state, expected_zk_version=0)


def test_partition_states_in_bulk_are_fenced_and_conditional_each(
    zookeeper_server: ZooKeeperServer, new_store: StoreFactory
) -> None:
    zk, successor = new_store(), new_store()
    count = 1500  # more than one pipeline's worth of requests in flight
    zk.create_topic(
        TopicAssignment("bulk", random_uuid_base64(), {p: (1, 2) for p in range(count)})
    )
    elected = zk.elect_controller(broker_id=1)
    assert elected is not None
    fence = elected.zk_version
    tps = [TopicPartition("bulk", p) for p in range(count)]
    first = {tp: PartitionState(1, 0, (1, 2), elected.value) for tp in tps}
    # one partition already has a state: it alone is refused
    zk.create_partition_state("bulk", 7, first[tps[7]], controller_epoch_zk_version=fence)
    created = zk.create_partition_states(first, controller_epoch_zk_version=fence)
    assert isinstance(created.pop(tps[7]), ZNodeExistsError)
    assert set(created.values()) == {0}
    raw, _ = zk.client.get("/brokers/topics/bulk/partitions/1499/state")
    assert raw == b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2]}'

    read = zk.get_partition_states([*tps, TopicPartition("bulk", count)])
    assert read == {tp: Versioned(first[tp], 0) for tp in tps}  # the missing one left out

    # a leader's ISR write lands first on partition 3: that update alone loses
    zk.update_partition_state("bulk", 3, PartitionState(1, 0, (1,), elected.value), 0)
    shrunk = {tp: (PartitionState(2, 1, (2,), elected.value), 0) for tp in tps}
    shrunk[TopicPartition("bulk", count)] = (first[tps[0]], 0)
    answers = zk.update_partition_states(shrunk, controller_epoch_zk_version=fence)
    assert isinstance(answers.pop(tps[3]), BadZNodeVersionError)
    assert isinstance(answers.pop(TopicPartition("bulk", count)), UnknownTopicOrPartitionError)
    assert set(answers.values()) == {1}
    assert zk.get_partition_states([tps[3], tps[4]]) == {
        tps[3]: Versioned(PartitionState(1, 0, (1,), elected.value), 1),
        tps[4]: Versioned(shrunk[tps[4]][0], 1),
    }

    # a partition leader's ISR writes: not fenced, each still conditional on its version
    leader_writes = {tps[5]: (PartitionState(2, 1, (2, 1), elected.value), 1)}
    leader_writes[tps[6]] = (PartitionState(2, 1, (2, 1), elected.value), 0)  # stale version
    leader_answers = zk.update_partition_states(leader_writes)
    assert leader_answers[tps[5]] == 2
    assert isinstance(leader_answers[tps[6]], BadZNodeVersionError)
    shrunk[tps[5]] = (leader_writes[tps[5]][0], 2)

    # a zombie controller's bulk writes are refused, none lands
    expire_session(zk.client, zookeeper_server.connect_string)
    assert successor.elect_controller(broker_id=2) is not None
    with pytest.raises(ControllerMovedError):
        zk.update_partition_states(
            {tp: (first[tp], 1) for tp in tps[4:]}, controller_epoch_zk_version=fence
        )
    with pytest.raises(ControllerMovedError):
        zk.create_partition_states(
            {TopicPartition("bulk", count): first[tps[0]]}, controller_epoch_zk_version=fence
        )
    after = successor.get_partition_states(tps)
    assert after[tps[5]] == Versioned(shrunk[tps[5]][0], 2)
    assert all(after[tp] == Versioned(shrunk[tp][0], 1) for tp in tps[4:] if tp != tps[5])
    assert successor.get_partition_state("bulk", count) is None


def test_partition_states_in_bulk_share_multi_ops(
    new_store: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    zk = new_store()
    count = 1000
    zk.create_topic(
        TopicAssignment("shared", random_uuid_base64(), {p: (1, 2) for p in range(count)})
    )
    elected = zk.elect_controller(broker_id=1)
    assert elected is not None
    fence = elected.zk_version
    tps = [TopicPartition("shared", p) for p in range(count)]
    # a partition znode left without its state (a creation cut short): its batch is refused
    # whole and made again one partition at a time, the state created all the same
    zk.client.create("/brokers/topics/shared/partitions/5", makepath=True)
    transactions: list[object] = []
    real_transaction = zk.client.transaction

    def counted() -> object:
        transactions.append(None)
        return real_transaction()

    monkeypatch.setattr(zk.client, "transaction", counted)
    first = {tp: PartitionState(1, 0, (1, 2), elected.value) for tp in tps}
    created = zk.create_partition_states(first, controller_epoch_zk_version=fence)
    assert created == {tp: 0 for tp in tps}
    assert zk.get_partition_states(tps) == {tp: Versioned(first[tp], 0) for tp in tps}
    # five batches of 200, the refused one again as 200 multi-ops of one partition each
    assert len(transactions) == 5 + 200

    transactions.clear()
    shrunk = {tp: (PartitionState(1, 1, (1,), elected.value), 0) for tp in tps}
    answers = zk.update_partition_states(shrunk, controller_epoch_zk_version=fence)
    assert answers == {tp: 1 for tp in tps}
    assert len(transactions) == 5
    # a leader's writes, not fenced, batched all the same
    transactions.clear()
    grown = {tp: (PartitionState(1, 1, (1, 2), elected.value), 1) for tp in tps}
    assert zk.update_partition_states(grown) == {tp: 2 for tp in tps}
    assert len(transactions) == 5


def test_multi_read_answers_each_path_on_its_own(zk: ZkStore) -> None:
    zk.client.create("/reads/a", b"first", makepath=True)
    zk.client.create("/reads/empty")
    answers = multi_read_async(zk.client, ["/reads/a", "/reads/missing", "/reads/empty"]).get()
    assert [a[0] if isinstance(a, tuple) else type(a) for a in answers] == [
        b"first",
        NoNodeError,
        b"",
    ]
    assert answers[0][1] == zk.client.get("/reads/a")[1]  # the stat, through the chroot


def test_partition_states_are_read_one_by_one_when_a_multi_read_fails(
    zk: ZkStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    states = {TopicPartition("old", p): PartitionState(1, p, (1,), 1) for p in range(3)}
    for tp, state in states.items():
        zk.create_partition_state(tp.topic, tp.partition, state)

    asked: list[list[str]] = []

    def refused(client: object, paths: list[str]) -> object:
        asked.append(paths)
        result = zk.client.handler.async_result()
        result.set_exception(UnimplementedError())  # what a server before 3.6 answers
        return result

    monkeypatch.setattr(zk_store, "multi_read_async", refused)
    missing = TopicPartition("old", 3)
    assert zk.get_partition_states([*states, missing]) == {
        tp: Versioned(state, 0) for tp, state in states.items()
    }
    assert len(asked) == 1
    # Such a server closes the connection after its answer: it is not asked again.
    assert zk.get_partition_states(list(states)) == {
        tp: Versioned(state, 0) for tp, state in states.items()
    }
    assert len(asked) == 1


# --- controller election and fencing -----------------------------------------------------------


def test_controller_election_race_has_one_winner(new_store: StoreFactory) -> None:
    stores = [new_store() for _ in range(4)]
    barrier = threading.Barrier(len(stores))

    def elect(index: int) -> Versioned[int] | None:
        barrier.wait()
        return stores[index].elect_controller(broker_id=index)

    with ThreadPoolExecutor(len(stores)) as pool:
        results = list(pool.map(elect, range(len(stores))))

    winners = [i for i, result in enumerate(results) if result is not None]
    assert len(winners) == 1
    assert results[winners[0]] == Versioned(1, 1)  # epoch 1; /controller_epoch went 0 -> 1
    controller = stores[0].get_controller()
    assert controller is not None and controller.broker_id == winners[0]
    assert stores[0].get_controller_epoch() == Versioned(1, 1)
    raw = json.loads(stores[0].client.get("/controller")[0])
    assert list(raw) == ["version", "brokerid", "timestamp", "kraftControllerEpoch"]
    assert (raw["version"], raw["brokerid"], raw["kraftControllerEpoch"]) == (2, winners[0], -1)


def test_controller_epoch_increments_with_each_election(new_store: StoreFactory) -> None:
    observer = new_store()
    seen: queue.Queue[int | None] = queue.Queue()
    observer.watch_controller(lambda c: seen.put(None if c is None else c.broker_id))
    assert seen.get(timeout=5) is None
    for expected_epoch, broker_id in [(1, 10), (2, 11), (3, 10)]:
        candidate = new_store()
        elected = candidate.elect_controller(broker_id)
        assert elected is not None and elected.value == expected_epoch
        assert observer.elect_controller(99) is None  # taken while the winner lives
        wait_for(seen, functools.partial(operator.eq, broker_id))
        candidate.close()  # its session ends and /controller goes with it
        wait_for(seen, lambda b: b is None)
    assert observer.get_controller_epoch() == Versioned(3, 3)
    assert observer.client.get("/controller_epoch")[0] == b"3"


def test_zombie_controller_is_fenced(
    zookeeper_server: ZooKeeperServer, new_store: StoreFactory
) -> None:
    zombie, successor = new_store(), new_store()
    zombie.create_topic(orders(random_uuid_base64()))
    old = zombie.elect_controller(broker_id=1)
    assert old is not None
    state = PartitionState(1, 0, (1,), controller_epoch=old.value)
    zombie.create_partition_state("orders", 0, state, controller_epoch_zk_version=old.zk_version)
    assert (
        zombie.update_partition_state(
            "orders", 0, state, 0, controller_epoch_zk_version=old.zk_version
        )
        == 1
    )

    expire_session(zombie.client, zookeeper_server.connect_string)
    new = successor.elect_controller(broker_id=2)
    assert new is not None and new.value == old.value + 1

    # the old controller still believes in its epoch: every fenced write is refused
    with pytest.raises(ControllerMovedError):
        zombie.update_partition_state(
            "orders", 0, state, 1, controller_epoch_zk_version=old.zk_version
        )
    with pytest.raises(ControllerMovedError):
        zombie.create_partition_state(
            "orders", 1, state, controller_epoch_zk_version=old.zk_version
        )
    assert zombie.get_partition_state("orders", 1) is None
    successor_state = PartitionState(2, 1, (2,), controller_epoch=new.value)
    assert (
        successor.update_partition_state(
            "orders", 0, successor_state, 1, controller_epoch_zk_version=new.zk_version
        )
        == 2
    )


# --- admin requests, notifications, ids --------------------------------------------------------


def test_isr_change_notifications_are_sequential(zk: ZkStore) -> None:
    seen: queue.Queue[list[str]] = queue.Queue()
    zk.watch_isr_change_notifications(seen.put)
    batches = [
        {TopicPartition("orders", 0)},
        {TopicPartition("orders", 1), TopicPartition("audit", 0)},
        {TopicPartition("orders", 0)},
    ]
    names = [zk.create_isr_change_notification(batch) for batch in batches]

    assert names == [f"isr_change_{i:010d}" for i in range(3)]
    assert zk.get_isr_change_notification_names() == names
    assert [zk.get_isr_change_notification(n) for n in names] == [frozenset(b) for b in batches]
    raw, _ = zk.client.get("/isr_change_notification/" + names[1])
    assert raw == (
        b'{"version":1,"partitions":[{"topic":"audit","partition":0},'
        b'{"topic":"orders","partition":1}]}'
    )
    wait_for(seen, lambda pending: pending == names)

    zk.delete_isr_change_notifications([*names[:2], "isr_change_9999999999"])
    assert zk.get_isr_change_notification_names() == names[2:]
    assert zk.get_isr_change_notification(names[0]) is None


def test_topic_deletion_markers(zk: ZkStore) -> None:
    with pytest.raises(UnknownTopicOrPartitionError):
        zk.mark_topic_for_deletion("orders")
    zk.create_topic(orders(random_uuid_base64()), {"retention.ms": "1"})
    zk.create_partition_state("orders", 0, PartitionState(2, 0, (2,), 1))
    seen: queue.Queue[list[str]] = queue.Queue()
    zk.watch_topic_deletions(seen.put)

    assert zk.mark_topic_for_deletion("orders") is True
    assert zk.mark_topic_for_deletion("orders") is False
    assert zk.get_topics_marked_for_deletion() == ["orders"]
    wait_for(seen, lambda topics: topics == ["orders"])

    zk.delete_topic_znodes("orders")
    assert zk.get_topic("orders") is None
    assert zk.get_topic_config("orders") == {}
    assert zk.get_topics_marked_for_deletion() == []
    zk.delete_topic_znodes("orders")  # nothing left: no error


def test_preferred_replica_election_request(zk: ZkStore) -> None:
    seen: queue.Queue[frozenset[TopicPartition] | None] = queue.Queue()
    zk.watch_preferred_replica_election(seen.put)
    assert seen.get(timeout=5) is None
    partitions = frozenset({TopicPartition("orders", 0), TopicPartition("orders", 1)})

    zk.create_preferred_replica_election(partitions)
    with pytest.raises(ElectionInProgressError, match="already in progress"):
        zk.create_preferred_replica_election(partitions)
    assert zk.get_preferred_replica_election() == partitions
    wait_for(seen, lambda request: request == partitions)

    zk.delete_preferred_replica_election()
    assert zk.get_preferred_replica_election() is None
    wait_for(seen, lambda request: request is None)


def test_cluster_id_is_created_once(new_store: StoreFactory) -> None:
    stores = [new_store() for _ in range(4)]
    barrier = threading.Barrier(len(stores))

    def get_id(store: ZkStore) -> str:
        barrier.wait()
        return store.get_or_create_cluster_id()

    with ThreadPoolExecutor(len(stores)) as pool:
        ids = set(pool.map(get_id, stores))
    assert len(ids) == 1
    (cluster_id,) = ids
    assert len(cluster_id) == 22
    assert stores[0].client.get("/cluster/id")[0] == (
        b'{"version":"1","id":"' + cluster_id.encode() + b'"}'
    )


def test_producer_id_blocks_never_overlap(new_store: StoreFactory) -> None:
    stores = [new_store() for _ in range(3)]
    blocks_each = 15

    def allocate(index: int) -> list[tuple[int, int, int]]:
        blocks = [stores[index].allocate_producer_id_block(index) for _ in range(blocks_each)]
        return [(b.block_start, b.block_end, b.broker_id) for b in blocks]

    with ThreadPoolExecutor(len(stores)) as pool:
        claimed = sorted(block for blocks in pool.map(allocate, range(3)) for block in blocks)

    # together the blocks tile [0, 45000) exactly: no gaps, no overlaps
    assert [(start, end) for start, end, _ in claimed] == [
        (i * 1000, i * 1000 + 999) for i in range(len(stores) * blocks_each)
    ]
    raw = json.loads(stores[0].client.get("/latest_producer_id_block")[0])
    assert raw["version"] == 1
    assert raw["block_end"] == str(len(stores) * blocks_each * 1000 - 1)


def test_store_rides_out_a_zookeeper_restart(
    zookeeper_server: ZooKeeperServer, new_store: StoreFactory
) -> None:
    zk = new_store()
    zk.register_broker(broker(1))
    session = zk.session_id

    zookeeper_server.stop()
    zookeeper_server.start()

    # the outage was shorter than the session timeout: same session, registration still there
    assert zk.get_live_broker_ids() == [1]
    assert zk.session_id == session
    zk.create_topic(orders(random_uuid_base64()))
    assert zk.get_all_topics() == ["orders"]
