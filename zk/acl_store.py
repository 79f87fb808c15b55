"""The ACLs in ZooKeeper, as Kafka's AclAuthorizer keeps them (layouts in zk.zk_data).

    store = AclZkStore(zk)
    store.ensure_paths()
    acls = store.load_all()                              # {ResourcePattern: entries}
    old, new = store.update_acls(pattern, lambda current: current | {entry})

``update_acls`` is Kafka's updateResourceAcls: read the resource's znode (data and version),
compute the new set, write it conditional on the version read (create it when absent, delete
it when the set is empty), and on a conflict (another broker wrote first) wait 100-150 ms,
read again and recompute, up to ten retries. A write that changed the set is followed by a
change notification (``/kafka-acl-changes`` or ``/kafka-acl-extended-changes``), which every
broker watches to reload that one resource.

Thread-safety: blocking round trips on the ZkStore's kazoo client, callable from any thread;
an asyncio loop calls them through an executor. Watch callbacks run on kazoo's thread.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import structlog
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, NotEmptyError
from kazoo.recipe.watchers import ChildrenWatch
from kazoo.retry import KazooRetry

from minikafka.proto.acl import (
    AccessControlEntry,
    PatternType,
    ResourcePattern,
    ResourceType,
    parse_kafka_name,
)
from minikafka.proto.cluster_state import Versioned
from minikafka.zk.errors import ZkStoreError
from minikafka.zk.zk_data import (
    acl_changes_path,
    acl_path,
    acl_resource_type_path,
    acl_store_path,
    decode_acl_change,
    decode_acls,
    encode_acl_change,
    encode_acls,
)
from minikafka.zk.zk_store import Watch, ZkStore

__all__ = ["ACL_PATTERN_TYPES", "AclUpdateFailedError", "AclZkStore"]

_log = structlog.get_logger(__name__)

# The pattern types ACLs are stored under, each with its own tree and change path.
ACL_PATTERN_TYPES = (PatternType.LITERAL, PatternType.PREFIXED)
R = TypeVar("R")
_ABSENT = -1  # the version of a znode that does not exist


class AclUpdateFailedError(ZkStoreError):
    """Every retry of a conditional write met a newer version (Kafka's safeguard)."""


class AclZkStore:
    """See the module docstring."""

    def __init__(
        self,
        zk: ZkStore,
        *,
        max_update_retries: int = 10,
        retry_backoff_s: float = 0.1,
        retry_jitter_s: float = 0.05,
    ) -> None:
        self._client = zk.client
        self._acls_for = zk.acls_for  # zookeeper.set.acl's ACLs, as the ZkStore's own znodes
        self._retry = KazooRetry(max_tries=-1, delay=0.05, backoff=2, max_delay=1.0, deadline=18)
        self.max_update_retries = max_update_retries
        self._backoff_s = retry_backoff_s
        self._jitter_s = retry_jitter_s

    def _call(self, func: Callable[..., R], *args: Any, **kwargs: Any) -> R:
        """``func`` retried through connection loss (ZkStore's policy)."""
        result: R = self._retry.copy()(func, *args, **kwargs)
        return result

    def ensure_paths(self) -> None:
        """The ACL trees and their change paths (Kafka's createAclPaths)."""
        for pattern_type in ACL_PATTERN_TYPES:
            for path in (acl_store_path(pattern_type), acl_changes_path(pattern_type)):
                self._call(self._client.ensure_path, path, acl=self._acls_for(path))

    # --- the ACLs ------------------------------------------------------------------------------

    def get_acls(self, pattern: ResourcePattern) -> Versioned[frozenset[AccessControlEntry]]:
        """A resource's ACLs and znode version (-1 and no ACLs when it has no znode)."""
        try:
            data, stat = self._call(self._client.get, acl_path(pattern))
        except NoNodeError:
            return Versioned(frozenset(), _ABSENT)
        return Versioned(decode_acls(pattern, bytes(data or b"")), int(stat.version))

    def load_all(self) -> dict[ResourcePattern, frozenset[AccessControlEntry]]:
        """Every stored ACL (Kafka's loadCache); resource types this broker does not know are
        skipped with a warning, as Kafka's."""
        found: dict[ResourcePattern, frozenset[AccessControlEntry]] = {}
        for pattern_type in ACL_PATTERN_TYPES:
            for type_name in self._children(acl_store_path(pattern_type)):
                try:
                    resource_type = parse_kafka_name(ResourceType, type_name)
                except ValueError:
                    _log.warning("acl_resource_type_unknown", resource_type=type_name)
                    continue
                path = acl_resource_type_path(pattern_type, resource_type)
                for name in self._children(path):
                    pattern = ResourcePattern(resource_type, name, pattern_type)
                    entries = self.get_acls(pattern).value
                    if entries:
                        found[pattern] = entries
        return found

    def update_acls(
        self,
        pattern: ResourcePattern,
        change: Callable[[frozenset[AccessControlEntry]], frozenset[AccessControlEntry]],
    ) -> tuple[frozenset[AccessControlEntry], frozenset[AccessControlEntry]]:
        """Apply ``change`` to the resource's ACLs (module docstring); ``(old, new)``.

        AclUpdateFailedError after ``max_update_retries`` conflicts.
        """
        path = acl_path(pattern)
        current = self.get_acls(pattern)
        for _ in range(self.max_update_retries + 1):
            new = change(current.value)
            if new == current.value:
                return current.value, new
            if self._write(path, new, current.zk_version):
                self.create_acl_change(pattern)
                _log.info(
                    "acls_updated",
                    resource=f"{pattern.resource_type.name}:{pattern.pattern_type.name}:"
                    f"{pattern.name}",
                    acls=len(new),
                )
                return current.value, new
            time.sleep(self._backoff_s + random.uniform(0, self._jitter_s))
            current = self.get_acls(pattern)
        raise AclUpdateFailedError(
            f"Failed to update ACLs for {path} after trying a maximum of "
            f"{self.max_update_retries} times"
        )

    def _write(self, path: str, entries: frozenset[AccessControlEntry], zk_version: int) -> bool:
        """One conditional write; False when another writer got there first."""
        try:
            if not entries:
                self._call(self._client.delete, path, zk_version)
            elif zk_version == _ABSENT:
                self._call(
                    self._client.create,
                    path,
                    encode_acls(entries),
                    acl=self._acls_for(path),
                    makepath=True,
                )
            else:
                self._call(self._client.set, path, encode_acls(entries), zk_version)
        except (BadVersionError, NodeExistsError, NoNodeError, NotEmptyError):
            return False
        return True

    # --- change notifications ------------------------------------------------------------------

    def create_acl_change(self, pattern: ResourcePattern) -> str:
        """Tell every broker ``pattern``'s ACLs changed; the notification's name."""
        path = acl_changes_path(pattern.pattern_type, "acl_changes_")
        created = self._call(
            self._client.create,
            path,
            encode_acl_change(pattern),
            acl=self._acls_for(path),
            sequence=True,
            makepath=True,
        )
        return str(created).rsplit("/", 1)[1]

    def get_acl_change(
        self, pattern_type: PatternType, node_name: str
    ) -> tuple[ResourcePattern, int] | None:
        """The resource a notification names and its creation time (ms); None when gone.
        ZkDataError when its data does not parse."""
        try:
            data, stat = self._call(self._client.get, acl_changes_path(pattern_type, node_name))
        except NoNodeError:
            return None
        return decode_acl_change(pattern_type, node_name, bytes(data or b"")), int(stat.ctime)

    def delete_acl_changes(self, pattern_type: PatternType, node_names: Iterable[str]) -> None:
        for name in node_names:
            with contextlib.suppress(NoNodeError):
                self._call(self._client.delete, acl_changes_path(pattern_type, name))

    def watch_acl_changes(
        self, pattern_type: PatternType, callback: Callable[[list[str]], None]
    ) -> Watch:
        """``callback(sorted notification names)`` now and after every change."""
        path = acl_changes_path(pattern_type)
        self._call(self._client.ensure_path, path)
        watch = Watch()

        def on_children(children: list[str]) -> bool | None:
            if watch.cancelled:
                return False
            callback(sorted(children))
            return None

        ChildrenWatch(self._client, path, on_children)
        return watch

    def _children(self, path: str) -> list[str]:
        try:
            return sorted(self._call(self._client.get_children, path))
        except NoNodeError:
            return []
