"""The ZooKeeper half of Kafka's AclAuthorizer: load, watch, create and delete ACLs.

The AclAuthorizer (broker/security/authorizer.py) answers from memory; this keeps its copy
equal to ZooKeeper's (layouts in zk/zk_data.py, conditional writes in zk/acl_store.py):

- ``startup``: watch both change paths, then load every ACL (Kafka's order: a change made
  while the load runs is not missed, it is only read twice).
- A change notification names one resource: that resource's ACLs are read again and replace
  the authorizer's, so a CreateAcls on one broker reaches every broker in one ZooKeeper round
  trip after the watch fires. Each notification is processed once (by sequence number);
  those older than 15 minutes are deleted by the broker that sees them, as Kafka's
  ZkNodeChangeNotificationListener does.
- ``create_acls`` / ``delete_acls`` (the core's CreateAcls and DeleteAcls) write through the
  store, one resource at a time, and update the authorizer at once.

Lives on the broker's event loop: the watches hop onto it, ZooKeeper calls go through
``asyncio.to_thread``, and every read-then-update of the authorizer for one resource holds
``_lock``, so that an older read never replaces a newer one.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

import structlog

from minikafka.broker.security.authorizer import AclAuthorizer
from minikafka.proto.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    PatternType,
    ResourcePattern,
)
from minikafka.zk.acl_store import ACL_PATTERN_TYPES, AclZkStore
from minikafka.zk.errors import ZkDataError
from minikafka.zk.zk_data import ACL_CHANGE_PREFIX
from minikafka.zk.zk_store import Watch

__all__ = ["ACL_CHANGE_EXPIRATION_MS", "AclManager", "DeletedAcl"]

_log = structlog.get_logger("broker.acl_manager")

ACL_CHANGE_EXPIRATION_MS = 15 * 60 * 1000  # Kafka's ZkNodeChangeNotificationListener default

# (binding deleted, the error that kept it, or None)
DeletedAcl = tuple[AclBinding, Exception | None]


class AclManager:
    """See the module docstring."""

    def __init__(
        self,
        store: AclZkStore,
        authorizer: AclAuthorizer,
        *,
        time_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
    ) -> None:
        self.store = store
        self.authorizer = authorizer
        self._time_ms = time_ms
        self._lock = asyncio.Lock()
        self._last_sequence = dict.fromkeys(ACL_PATTERN_TYPES, -1)
        self._pending: dict[PatternType, list[str]] = {}
        self._worker: asyncio.Task[None] | None = None
        self._watches: list[Watch] = []

    async def startup(self) -> None:
        loop = asyncio.get_running_loop()
        await asyncio.to_thread(self.store.ensure_paths)
        for pattern_type in ACL_PATTERN_TYPES:

            def on_children(names: list[str], pattern_type: PatternType = pattern_type) -> None:
                loop.call_soon_threadsafe(self._changed, pattern_type, names)

            self._watches.append(
                await asyncio.to_thread(self.store.watch_acl_changes, pattern_type, on_children)
            )
        async with self._lock:
            loaded = await asyncio.to_thread(self.store.load_all)
            self.authorizer.load(loaded)
        _log.info("acls_loaded", resources=len(loaded), acls=sum(map(len, loaded.values())))

    async def shutdown(self) -> None:
        for watch in self._watches:
            watch.cancel()
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)

    # --- the core's AclStore -----------------------------------------------------------------

    def acls(self, binding_filter: AclBindingFilter) -> list[AclBinding]:
        """DescribeAcls: what this broker's copy holds."""
        return self.authorizer.acls(binding_filter)

    async def create_acls(self, bindings: Sequence[AclBinding]) -> list[Exception | None]:
        """Add each binding; one result per binding (None: created, or already there)."""
        results: list[Exception | None] = [None] * len(bindings)
        by_pattern: dict[ResourcePattern, list[int]] = {}
        for i, binding in enumerate(bindings):
            by_pattern.setdefault(binding.pattern, []).append(i)
        for pattern, indexes in by_pattern.items():
            added = frozenset(bindings[i].entry for i in indexes)

            def add(
                current: frozenset[AccessControlEntry],
                added: frozenset[AccessControlEntry] = added,
            ) -> frozenset[AccessControlEntry]:
                return current | added

            try:
                await self._update(pattern, add)
            except Exception as exc:  # ZooKeeper away or too many conflicts: said per binding
                _log.warning("acls_create_failed", resource=_text(pattern), error=str(exc))
                for i in indexes:
                    results[i] = exc
        return results

    async def delete_acls(self, filters: Sequence[AclBindingFilter]) -> list[list[DeletedAcl]]:
        """Delete what each filter matches; per filter the bindings it deleted (a binding two
        filters match is counted for the first). Kafka's rule for what a filter can reach: the
        patterns this broker knows of, and the one a filter names exactly."""
        results: list[list[DeletedAcl]] = [[] for _ in filters]
        patterns = set(self.authorizer.patterns())
        for binding_filter in filters:
            if binding_filter.pattern_filter.indefinite_field() is None:
                patterns.update(binding_filter.pattern_filter.exact_patterns())
        for pattern in sorted(patterns, key=_pattern_order):
            matching = [(i, f) for i, f in enumerate(filters) if f.pattern_filter.matches(pattern)]
            if not matching:
                continue
            removed: dict[AccessControlEntry, int] = {}

            def remove(
                current: frozenset[AccessControlEntry],
                matching: list[tuple[int, AclBindingFilter]] = matching,
                removed: dict[AccessControlEntry, int] = removed,
            ) -> frozenset[AccessControlEntry]:
                removed.clear()  # a retry after a conflict computes again
                for entry in current:
                    for i, binding_filter in matching:
                        if binding_filter.entry_filter.matches(entry):
                            removed[entry] = i
                            break
                return current - removed.keys()

            error: Exception | None = None
            try:
                await self._update(pattern, remove)
            except Exception as exc:
                _log.warning("acls_delete_failed", resource=_text(pattern), error=str(exc))
                error = exc
            for entry, i in sorted(removed.items(), key=lambda item: _entry_order(item[0])):
                results[i].append((AclBinding(pattern, entry), error))
        return results

    async def _update(
        self,
        pattern: ResourcePattern,
        change: Callable[[frozenset[AccessControlEntry]], frozenset[AccessControlEntry]],
    ) -> None:
        async with self._lock:
            _, new = await asyncio.to_thread(self.store.update_acls, pattern, change)
            self.authorizer.set_acls(pattern, new)

    # --- change notifications -----------------------------------------------------------------

    def _changed(self, pattern_type: PatternType, names: list[str]) -> None:
        self._pending[pattern_type] = names
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._drain())

    async def _drain(self) -> None:
        while self._pending:
            pattern_type = next(iter(self._pending))
            names = self._pending.pop(pattern_type)
            try:
                await self._process(pattern_type, names)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # ZooKeeper away: the next change or restart retries
                _log.warning("acl_changes_failed", error=str(exc))

    async def _process(self, pattern_type: PatternType, names: list[str]) -> None:
        now = self._time_ms()
        expired = []
        for name in sorted(n for n in names if n.startswith(ACL_CHANGE_PREFIX)):
            sequence = int(name.removeprefix(ACL_CHANGE_PREFIX))
            change = None
            try:
                change = await asyncio.to_thread(self.store.get_acl_change, pattern_type, name)
            except ZkDataError as exc:  # a notification we cannot read: skip it
                _log.warning("acl_change_unreadable", notification=name, error=str(exc))
            if change is not None:
                pattern, created_ms = change
                if sequence > self._last_sequence[pattern_type]:
                    await self._reload(pattern)
                if now - created_ms > ACL_CHANGE_EXPIRATION_MS:
                    expired.append(name)
            self._last_sequence[pattern_type] = max(self._last_sequence[pattern_type], sequence)
        if expired:
            await asyncio.to_thread(self.store.delete_acl_changes, pattern_type, expired)

    async def _reload(self, pattern: ResourcePattern) -> None:
        async with self._lock:
            try:
                read = await asyncio.to_thread(self.store.get_acls, pattern)
            except ZkDataError as exc:
                _log.error("acls_unreadable", resource=_text(pattern), error=str(exc))
                return
            self.authorizer.set_acls(pattern, read.value)
        _log.info("acl_change_processed", resource=_text(pattern), acls=len(read.value))


def _text(pattern: ResourcePattern) -> str:
    return f"{pattern.resource_type.name}:{pattern.pattern_type.name}:{pattern.name}"


def _pattern_order(pattern: ResourcePattern) -> tuple[int, int, str]:
    return pattern.resource_type, pattern.pattern_type, pattern.name


def _entry_order(entry: AccessControlEntry) -> tuple[str, str, int, int]:
    return entry.principal, entry.host, entry.operation, entry.permission_type
