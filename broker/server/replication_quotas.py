"""Replication throttles (KIP-73): Kafka's ReplicationQuotaManager and the config that feeds it.

Which replicas are throttled comes from the topic configs, per broker::

    leader.replication.throttled.replicas    = 0:101,0:102,1:101   partition:broker, or *
    follower.replication.throttled.replicas  = 0:103

A broker throttles, on its leader side, the partitions the first key lists with its own id
(``*``: all of the topic's), and on its follower side those the second lists with its id
(Kafka's QuotaConfigHandler). The rates are the dynamic broker configs
``leader.replication.throttled.rate``, ``follower.replication.throttled.rate`` and
``replica.alter.log.dirs.io.max.bytes.per.second`` (bytes/s; Long.MAX_VALUE, the default, is
none), each measured with the client quotas' ``Rate`` (quotas.py) over
``replication.quota.window.num`` samples of ``replication.quota.window.size.seconds`` (the
alter-log-dirs quota: ``alter.log.dirs.replication.quota.window.*``). Every move between log
dirs is throttled by the third. How the fetch paths use them: broker/replication/replica_quota.py.

    quotas = ReplicationQuotas(config)
    replica_manager = ReplicaManager(..., quotas=quotas.replica_quotas)
    quotas.reconfigure(new_config)            # a dynamic broker config changed
    quotas.update_topic("t", overrides)       # /config/topics/t read or changed

The throttled replicas are updated from any thread (the LogManager reads a topic's config in
its executor when it opens the topic's first log), under a lock, by replacing the topic's
entry; everything else lives on the broker's event loop.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping

import structlog

from minikafka.broker.config import BrokerConfig
from minikafka.broker.replication.replica_quota import ReplicaQuotas
from minikafka.broker.server.quotas import Rate
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import KafkaError
from minikafka.proto.topic_config import LONG_MAX, TopicConfig, throttled_partitions

__all__ = ["ReplicationQuotaManager", "ReplicationQuotas"]

_log = structlog.get_logger(__name__)

LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"


def _monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class ReplicationQuotaManager:
    """One replication quota (broker/replication/replica_quota.py's ``ReplicaQuota``).
    ``throttle_all``: every replica counts (the alter-log-dirs quota)."""

    def __init__(
        self,
        samples: int,
        window_seconds: int,
        *,
        throttle_all: bool = False,
        time_ms: Callable[[], int] = _monotonic_ms,
    ) -> None:
        self._rate = Rate(samples, window_seconds * 1000)
        self._time_ms = time_ms
        self._throttle_all = throttle_all
        self.quota = math.inf  # bytes/s
        # topic -> its throttled partitions here, None for all (``*``); replaced, never mutated.
        self._throttled: dict[str, frozenset[int] | None] = {}
        self._lock = threading.Lock()

    def update_quota(self, bytes_per_second: float) -> None:
        self.quota = math.inf if bytes_per_second >= LONG_MAX else float(bytes_per_second)

    def mark_throttled(self, topic: str, partitions: frozenset[int] | None) -> None:
        """``partitions`` of ``topic`` count from now on (None: all); an empty set: none."""
        with self._lock:
            throttled = dict(self._throttled)
            if partitions is not None and not partitions:
                throttled.pop(topic, None)
            else:
                throttled[topic] = partitions
            self._throttled = throttled

    def is_throttled(self, tp: TopicPartition) -> bool:
        if self._throttle_all:
            return True
        throttled = self._throttled
        if tp.topic not in throttled:
            return False
        partitions = throttled[tp.topic]
        return partitions is None or tp.partition in partitions

    def is_quota_exceeded(self) -> bool:
        if math.isinf(self.quota):
            return False
        return self._rate.measure(self._time_ms()) > self.quota

    def record(self, value: int) -> None:
        if value:
            self._rate.record(value, self._time_ms())

    def rate(self) -> float:
        """The measured rate, bytes/s."""
        return self._rate.measure(self._time_ms())


class ReplicationQuotas:
    """This broker's three replication quotas and what sets them (the module docstring)."""

    def __init__(self, config: BrokerConfig, time_ms: Callable[[], int] = _monotonic_ms) -> None:
        self._broker_id = config.broker_id
        samples = config.replication_quota_window_num
        window = config.replication_quota_window_size_seconds
        self.leader = ReplicationQuotaManager(samples, window, time_ms=time_ms)
        self.follower = ReplicationQuotaManager(samples, window, time_ms=time_ms)
        self.alter_log_dirs = ReplicationQuotaManager(
            config.alter_log_dirs_replication_quota_window_num,
            config.alter_log_dirs_replication_quota_window_size_seconds,
            throttle_all=True,
            time_ms=time_ms,
        )
        self.replica_quotas = ReplicaQuotas(self.leader, self.follower, self.alter_log_dirs)
        self.reconfigure(config)

    def reconfigure(self, config: BrokerConfig) -> None:
        """The rates of a (new) broker config."""
        rates = (
            (self.leader, config.leader_replication_throttled_rate),
            (self.follower, config.follower_replication_throttled_rate),
            (self.alter_log_dirs, config.replica_alter_log_dirs_io_max_bytes_per_second),
        )
        changed = False
        for manager, rate in rates:
            before = manager.quota
            manager.update_quota(rate)
            changed |= manager.quota != before
        if changed:
            _log.info(
                "replication_quotas_updated",
                leader=config.leader_replication_throttled_rate,
                follower=config.follower_replication_throttled_rate,
                alter_log_dirs=config.replica_alter_log_dirs_io_max_bytes_per_second,
            )

    def update_topic(self, topic: str, overrides: Mapping[str, str]) -> None:
        """``topic``'s overrides as read from ZooKeeper: its throttled replicas on this broker.
        Values that do not parse (a znode written by hand) throttle nothing (logged)."""
        keys = {k: v for k, v in overrides.items() if k in (LEADER_REPLICAS, FOLLOWER_REPLICAS)}
        try:
            config = TopicConfig.from_properties(keys)
        except KafkaError as exc:
            _log.error("throttled_replicas_invalid", topic=topic, error=exc.message)
            config = TopicConfig()
        leader = throttled_partitions(config.leader_replication_throttled_replicas, self._broker_id)
        follower = throttled_partitions(
            config.follower_replication_throttled_replicas, self._broker_id
        )
        self.leader.mark_throttled(topic, leader)
        self.follower.mark_throttled(topic, follower)
