"""The ACL store and its watcher against a real ZooKeeper, without brokers: conditional writes
that lose no update, change notifications that reload one resource on every watcher, and the
purge of notifications older than 15 minutes."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from minikafka.broker.security.authorizer import AclAuthorizer
from minikafka.broker.server.acl_manager import ACL_CHANGE_EXPIRATION_MS, AclManager
from minikafka.proto.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from minikafka.zk.acl_store import AclZkStore
from minikafka.zk.zk_store import ZkStore

pytestmark = pytest.mark.integration

ORDERS = ResourcePattern(ResourceType.TOPIC, "orders")
SALES = ResourcePattern(ResourceType.GROUP, "sales-", PatternType.PREFIXED)
ANY = AclBindingFilter(ResourcePatternFilter(ResourceType.ANY, None, PatternType.ANY))


def entry(principal: str, op: AclOperation = AclOperation.READ) -> AccessControlEntry:
    return AccessControlEntry(principal, "*", op, AclPermissionType.ALLOW)


@pytest.fixture
def stores(zk_connect: str) -> Iterator[Callable[[], AclZkStore]]:
    """New stores, each on a ZooKeeper session of its own (as two brokers)."""
    opened: list[ZkStore] = []

    def make() -> AclZkStore:
        zk = ZkStore.connect(zk_connect, session_timeout_ms=10_000)
        opened.append(zk)
        store = AclZkStore(zk, retry_backoff_s=0.005, retry_jitter_s=0.005)
        store.ensure_paths()
        return store

    yield make
    for zk in opened:
        zk.close()


def test_concurrent_writers_lose_no_update(stores: Callable[[], AclZkStore]) -> None:
    writers = [stores() for _ in range(4)]
    for writer in writers:
        writer.max_update_retries = 200  # 40 writes on one znode: conflicts are the point
    barrier = threading.Barrier(len(writers))
    principals = [[f"User:w{w}-{i}" for i in range(10)] for w in range(len(writers))]

    def write(index: int) -> None:
        barrier.wait()
        for principal in principals[index]:
            added = frozenset({entry(principal)})
            writers[index].update_acls(ORDERS, added.union)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(len(writers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    stored = writers[0].get_acls(ORDERS)
    assert {e.principal for e in stored.value} == {p for ps in principals for p in ps}
    assert stored.zk_version == 39  # created once, then 39 conditional sets


def test_empty_set_deletes_the_znode(stores: Callable[[], AclZkStore]) -> None:
    store = stores()
    old, new = store.update_acls(SALES, lambda cur: cur | {entry("User:a")})
    assert (old, new) == (frozenset(), frozenset({entry("User:a")}))
    assert store.load_all() == {SALES: frozenset({entry("User:a")})}
    old, new = store.update_acls(SALES, lambda cur: frozenset())
    assert new == frozenset()
    assert store.get_acls(SALES).zk_version == -1
    assert store.load_all() == {}
    # no change, no write and no notification
    before = store.get_acls(ORDERS)
    store.update_acls(ORDERS, lambda cur: cur)
    assert store.get_acls(ORDERS) == before


def test_managers_load_watch_and_purge(stores: Callable[[], AclZkStore]) -> None:
    async def scenario() -> None:
        writer = stores()
        writer.update_acls(ORDERS, lambda cur: cur | {entry("User:early")})
        clock = [time.time_ns() // 1_000_000]  # now: every notification is fresh
        watcher = AclManager(stores(), AclAuthorizer(), time_ms=lambda: clock[0])
        await watcher.startup()
        assert watcher.acls(ANY) == [AclBinding(ORDERS, entry("User:early"))]

        async def until(check: Callable[[], bool]) -> None:
            for _ in range(500):
                if check():
                    return
                await asyncio.sleep(0.01)
            raise AssertionError("the watcher did not catch up")

        # A change by another store (another broker) reaches this one's authorizer.
        await asyncio.to_thread(
            writer.update_acls, SALES, lambda cur: cur | {entry("User:late", AclOperation.ALL)}
        )
        await until(lambda: len(watcher.acls(ANY)) == 2)
        # So does a write through this manager, at once, and its deletion.
        deleted = await watcher.delete_acls([ANY])
        assert sorted(b.entry.principal for b, _ in deleted[0]) == ["User:early", "User:late"]
        assert watcher.acls(ANY) == []
        await until(lambda: writer.load_all() == {})

        # Notifications stay while fresh, and go when one is processed 15 minutes later.
        zk = writer._client
        assert len(zk.get_children("/kafka-acl-changes")) == 2
        assert len(zk.get_children("/kafka-acl-extended-changes")) == 2
        clock[0] += ACL_CHANGE_EXPIRATION_MS + 60_000
        await watcher.create_acls([AclBinding(ORDERS, entry("User:again"))])
        await asyncio.to_thread(writer.update_acls, ORDERS, lambda cur: cur | {entry("User:x")})
        await until(lambda: len(zk.get_children("/kafka-acl-changes")) == 0)
        await until(lambda: len(watcher.acls(ANY)) == 2)
        await watcher.shutdown()

    asyncio.run(scenario())
