"""Config changes that take effect while brokers run: Kafka's DynamicConfigManager, ZooKeeper mode.

Whoever changes a config (TopicAdmin on any broker, for AlterConfigs and
IncrementalAlterConfigs) writes it, then adds a notification::

    /config/topics/<topic>                     {"version":1,"config":{...}}  a topic's overrides
    /config/brokers/<id> and /<default>        {"version":1,"config":{...}}  dynamic broker configs
    /config/changes/config_change_<seq>        {"version":2,"entity_path":"topics/<topic>"}

Every broker watches ``/config/changes``. For each notification newer than the last one it
processed it reads the entity's config again and hands it over:

- ``topics/<t>``: ``on_topic_config(topic, overrides)``.
- ``users/<user>``: ``on_user_config(user, config)`` (SCRAM credentials: the broker's
  credential cache reloads the user), then ``on_quota_config``.
- ``users/<user>``, ``users/<user>/clients/<c>``, ``clients/<c>`` (``<default>`` forms too):
  ``on_quota_config(entity, config)`` (client quotas, broker/server/quotas.py).
- ``brokers/<default>`` and ``brokers/<this id>``: ``on_broker_config(config)`` with the static
  config and both dynamic sets laid over it (``BrokerConfig.with_dynamic``). Other brokers'
  entries are skipped.

A config that cannot be applied (written to ZooKeeper by hand, say) is logged and skipped; the
broker keeps what it had. Notifications older than 15 minutes are deleted by the broker that
sees them, as Kafka does. At startup ``load`` reads the dynamic broker configs before the
broker opens its logs, and ``startup`` then processes the notifications present (applying a
config again changes nothing).

Lives on the broker's event loop: the watch hops onto it, ZooKeeper reads go through
``asyncio.to_thread``, and notifications are processed one at a time, in sequence order.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping

import structlog

from minikafka.broker.config import BrokerConfig
from minikafka.proto.errors import KafkaError
from minikafka.zk.errors import ZkDataError
from minikafka.zk.zk_data import (
    CONFIG_CHANGE_PREFIX,
    DEFAULT_BROKER_ENTITY,
    DEFAULT_QUOTA_ENTITY,
    QuotaEntity,
)
from minikafka.zk.zk_store import Watch, ZkStore

__all__ = ["CHANGE_EXPIRATION_MS", "DynamicConfigManager"]

_log = structlog.get_logger("broker.dynamic_config")

CHANGE_EXPIRATION_MS = 15 * 60 * 1000  # Kafka's ZkNodeChangeNotificationListener default


def _sequence(node_name: str) -> int:
    return int(node_name.removeprefix(CONFIG_CHANGE_PREFIX))


class DynamicConfigManager:
    """See the module docstring."""

    def __init__(
        self,
        zk: ZkStore,
        static: BrokerConfig,
        *,
        on_topic_config: Callable[[str, Mapping[str, str]], Awaitable[None]],
        on_broker_config: Callable[[BrokerConfig], Awaitable[None]],
        on_user_config: Callable[[str, Mapping[str, str]], Awaitable[None]] | None = None,
        on_quota_config: Callable[[QuotaEntity, Mapping[str, str]], Awaitable[None]] | None = None,
        time_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
    ) -> None:
        self._zk = zk
        self._static = static
        self._entity = str(static.broker_id)
        self._on_topic_config = on_topic_config
        self._on_broker_config = on_broker_config
        self._on_user_config = on_user_config
        self._on_quota_config = on_quota_config
        self._time_ms = time_ms
        self._last_sequence = -1
        self._pending: list[str] | None = None
        self._worker: asyncio.Task[None] | None = None
        self._watch: Watch | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def load(self) -> BrokerConfig:
        """The static config with the dynamic broker configs now in ZooKeeper laid over it."""
        config = await self._read_broker_config()
        return config if config is not None else self._static

    async def startup(self) -> None:
        """Watch /config/changes (and process what is there now)."""
        self._loop = asyncio.get_running_loop()
        loop = self._loop

        def on_children(names: list[str]) -> None:
            loop.call_soon_threadsafe(self._changed, names)

        self._watch = await asyncio.to_thread(self._zk.watch_config_changes, on_children)

    async def shutdown(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)

    # --- on the loop -----------------------------------------------------------------------

    def _changed(self, names: list[str]) -> None:
        self._pending = names
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._drain())

    async def _drain(self) -> None:
        while self._pending is not None:
            names, self._pending = self._pending, None
            try:
                await self._process(names)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # ZooKeeper away: the next change or restart retries
                _log.warning("config_changes_failed", error=str(exc))

    async def _process(self, names: list[str]) -> None:
        now = self._time_ms()
        expired = []
        for name in sorted(n for n in names if n.startswith(CONFIG_CHANGE_PREFIX)):
            sequence = _sequence(name)
            change = None
            try:
                change = await asyncio.to_thread(self._zk.get_config_change, name)
            except ZkDataError as exc:  # a notification we cannot read: skip it
                _log.warning("config_change_unreadable", notification=name, error=str(exc))
            if change is not None:
                entity_type, entity_name, created_ms = change
                if sequence > self._last_sequence:
                    await self._apply(entity_type, entity_name, name)
                if now - created_ms > CHANGE_EXPIRATION_MS:
                    expired.append(name)
            self._last_sequence = max(self._last_sequence, sequence)
        if expired:
            await asyncio.to_thread(self._zk.delete_config_changes, expired)

    async def _apply(self, entity_type: str, entity_name: str, notification: str) -> None:
        if entity_type == "topics":
            overrides = await asyncio.to_thread(self._zk.get_topic_config, entity_name)
            await self._on_topic_config(entity_name, overrides)
        elif entity_type == "brokers":
            if entity_name not in (DEFAULT_BROKER_ENTITY, self._entity):
                return
            config = await self._read_broker_config()
            if config is not None:
                await self._on_broker_config(config)
        elif entity_type in ("users", "clients"):
            await self._apply_client_entity(entity_type, entity_name, notification)
        else:  # ips: connection quotas, which this broker does not have
            _log.info(
                "config_change_ignored",
                notification=notification,
                entity_type=entity_type,
                entity_name=entity_name,
            )

    async def _apply_client_entity(
        self, entity_type: str, entity_name: str, notification: str
    ) -> None:
        """users/<u> (SCRAM credentials and quotas), users/<u>/clients/<c> and clients/<c>
        (quotas)."""
        try:
            entity = QuotaEntity.from_entity_path(f"{entity_type}/{entity_name}")
        except ValueError:
            _log.warning("config_change_ignored", notification=notification)
            return
        try:
            config = await asyncio.to_thread(self._zk.get_quota_config, entity)
        except ZkDataError:  # its message quotes the znode: credentials; the entity only
            _log.error(
                "user_config_unreadable", entity=entity.entity_path, notification=notification
            )
            return
        user = entity.user
        if (
            entity.client_id is None
            and user is not None
            and user != DEFAULT_QUOTA_ENTITY
            and self._on_user_config is not None
        ):
            await self._on_user_config(user, config)
        if self._on_quota_config is not None:
            await self._on_quota_config(entity, config)

    async def _read_broker_config(self) -> BrokerConfig | None:
        try:
            default = await asyncio.to_thread(self._zk.get_broker_config, DEFAULT_BROKER_ENTITY)
            mine = await asyncio.to_thread(self._zk.get_broker_config, self._entity)
        except ZkDataError as exc:
            _log.error("dynamic_broker_config_unreadable", error=str(exc))
            return None
        try:
            return self._static.with_dynamic(default, mine)
        except KafkaError as exc:
            _log.error(
                "dynamic_broker_config_invalid",
                default=dict(default),
                broker=dict(mine),
                error=exc.message,
                detail="keeping the configs in force",
            )
            return None
