"""Config changes applied to a running broker: Kafka's TopicConfigHandler and BrokerConfigHandler.

DynamicConfigManager (dynamic_config.py) reads a changed config from ZooKeeper and hands it
here; this module decides what each part of the broker gets::

    apply_topic_config(topic, overrides)   /config/topics/<t> changed: the topic's open logs
                                           get the TopicConfig of its overrides on the broker's
                                           defaults, its partitions here their
                                           min.insync.replicas, and the controller, when
                                           unclean.leader.election.enable turned on, elects
                                           the topic's leaderless partitions
    apply_broker_config(config)            /config/brokers/<default> or /<id> changed: every
                                           part that reads a dynamic key gets the new config,
                                           every open log its topic's config on the new
                                           defaults, the cleaner threads restart when a
                                           log.cleaner.* key changed

The overrides of every topic this broker has logs of are kept here: read from ZooKeeper once
when the LogManager opens or creates the topic's first log (``topic_log_config``, as Kafka
reads them then) and replaced by each config change notification after that. A broker-level
change lays the kept overrides on the new defaults, so its cost does not grow with the topics
hosted (a read per topic, the ZooKeeper round trips of a thousand topics, for one changed key);
only a log created while such a change dropped the overrides of topics without a log has its
topic's read again.

A config that cannot be applied (written to ZooKeeper by hand, past the admin's checks) is
logged and skipped; the broker keeps what it had.

Lives on the broker's event loop, but for ``topic_log_config``, which the LogManager also
calls in the executor (loading the logs at startup, reading the configs of new partitions):
the kept overrides are guarded by a lock for it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Protocol

import structlog

from minikafka.broker.config import BrokerConfig
from minikafka.broker.storage.log_manager import LogManager
from minikafka.proto.errors import KafkaError
from minikafka.proto.topic_config import TopicConfig

__all__ = ["ConfigHandler", "ConfigTargets", "ControllerTarget", "ReplicasTarget"]

_log = structlog.get_logger("broker.config_handler")


class ReplicasTarget(Protocol):
    """What a config change asks of the ReplicaManager."""

    def reconfigure(self, config: BrokerConfig) -> None: ...

    def set_min_insync_replicas(self, topic: str, value: int) -> None: ...


class ControllerTarget(Protocol):
    """What a config change asks of this broker's KafkaController."""

    def enable_unclean_leader_election(
        self, topic: str | None = None, *, default: bool | None = None
    ) -> None: ...


class CleanerTarget(Protocol):
    async def reconfigure(self, config: BrokerConfig) -> None: ...


@dataclass(frozen=True)
class ConfigTargets:
    """The parts a change is applied to, there once the broker has built them.
    ``reconfigured``: further holders of the broker config (the admin core, the server)."""

    log_manager: LogManager
    replicas: ReplicasTarget
    controller: ControllerTarget | None = None
    cleaner: CleanerTarget | None = None
    reconfigured: Sequence[Callable[[BrokerConfig], None]] = ()


class ConfigHandler:
    """See the module docstring. ``read_topic_config(topic)``: the topic's overrides in
    ZooKeeper (``/config/topics/<t>``), a blocking read. ``on_topic_overrides(topic,
    overrides)``: told every topic's overrides as read or changed, hosted here or not (the
    replication throttles, replication_quotas.py); called from any thread."""

    def __init__(
        self,
        config: BrokerConfig,
        read_topic_config: Callable[[str], Mapping[str, str]],
        *,
        on_topic_overrides: Callable[[str, Mapping[str, str]], None] | None = None,
    ) -> None:
        self.config = config
        self._read_topic_config = read_topic_config
        self._on_topic_overrides = on_topic_overrides
        self._overrides: dict[str, Mapping[str, str]] = {}  # guarded by _lock
        self._lock = threading.Lock()
        self._targets: ConfigTargets | None = None

    def attach(self, targets: ConfigTargets) -> None:
        """The broker's parts, built: changes from now on are applied to them."""
        self._targets = targets

    def topic_log_config(self, topic: str) -> TopicConfig | None:
        """The LogManager's ``topic_config``: the topic's overrides (read from ZooKeeper, and
        kept) on the broker's defaults; None when the topic has none."""
        overrides = MappingProxyType(dict(self._read_topic_config(topic)))
        with self._lock:
            self._overrides[topic] = overrides
        if self._on_topic_overrides is not None:
            self._on_topic_overrides(topic, overrides)
        if not overrides:
            return None
        return TopicConfig.from_properties(overrides, base=self.config.log)

    async def apply_topic_config(self, topic: str, overrides: Mapping[str, str]) -> None:
        with self._lock:
            self._overrides[topic] = MappingProxyType(dict(overrides))
        if self._on_topic_overrides is not None:
            # Throttles are set before the replicas they name exist here (a reassignment's).
            self._on_topic_overrides(topic, overrides)
        config = self._apply_topic(topic)
        if config is None or self._targets is None:
            return
        _log.info("topic_config_applied", topic=topic, config=dict(overrides))
        controller = self._targets.controller
        turned_on = "unclean.leader.election.enable" in overrides
        if turned_on and config.unclean_leader_election_enable and controller is not None:
            controller.enable_unclean_leader_election(topic)

    async def apply_broker_config(self, config: BrokerConfig) -> None:
        old, self.config = self.config, config
        targets = self._targets
        for reconfigured in targets.reconfigured if targets is not None else ():
            reconfigured(config)
        if targets is None:
            return
        _log.info(
            "broker_config_applied",
            dynamic_default=dict(config.dynamic_default),
            dynamic_broker=dict(config.dynamic_broker),
        )
        targets.replicas.reconfigure(config)
        targets.log_manager.default_config = config.log
        open_topics = {tp.topic for tp in targets.log_manager.logs}
        with self._lock:
            # A topic with no log here any more is read again when one is created.
            kept = {t: o for t, o in self._overrides.items() if t in open_topics}
            self._overrides = kept
        for topic in sorted(open_topics - kept.keys()):
            # Only a log whose creation in the executor overlapped the pruning above lacks
            # them: read as that creation did.
            overrides = MappingProxyType(
                dict(await asyncio.to_thread(self._read_topic_config, topic))
            )
            with self._lock:
                self._overrides.setdefault(topic, overrides)
        for topic in sorted(open_topics):
            self._apply_topic(topic)
        if (
            config.unclean_leader_election_enable != old.unclean_leader_election_enable
            and targets.controller is not None
        ):
            targets.controller.enable_unclean_leader_election(
                default=config.unclean_leader_election_enable
            )
        if targets.cleaner is not None:
            await targets.cleaner.reconfigure(config)

    def _apply_topic(self, topic: str) -> TopicConfig | None:
        """The kept overrides of ``topic`` on the current defaults, to its logs and partitions
        here; None (logged) when they do not parse."""
        targets = self._targets
        with self._lock:
            overrides = self._overrides.get(topic, {})
        try:
            config = TopicConfig.from_properties(overrides, base=self.config.log)
        except KafkaError as exc:
            _log.error(
                "topic_config_invalid", topic=topic, config=dict(overrides), error=exc.message
            )
            return None
        if targets is not None:
            targets.log_manager.update_topic_config(topic, config)
            targets.replicas.set_min_insync_replicas(topic, config.min_insync_replicas)
        return config
