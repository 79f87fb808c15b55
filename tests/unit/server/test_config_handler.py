"""ConfigHandler: topic and broker config changes applied to real logs, with the ZooKeeper read
of a topic's overrides passed in and counted.

The replicas and the controller are recorders of the two calls a change makes of each (the
ReplicaManager's and KafkaController's own handling is tested with them); the logs are a real
LogManager's in tmp_path.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path

from minikafka.broker.config import BrokerConfig
from minikafka.broker.server.config_handler import ConfigHandler, ConfigTargets
from minikafka.broker.storage.log_manager import LogManager
from minikafka.proto.common import TopicPartition
from minikafka.proto.topic_config import TopicConfig

_MIB = 1024 * 1024


class CountingZk:
    """/config/topics/<t> as a dict; ``reads`` counts the reads of it."""

    def __init__(self, overrides: Mapping[str, Mapping[str, str]]) -> None:
        self.overrides = {topic: dict(o) for topic, o in overrides.items()}
        self.reads = 0

    def get_topic_config(self, topic: str) -> Mapping[str, str]:
        self.reads += 1
        return dict(self.overrides.get(topic, {}))


class Replicas:
    def __init__(self) -> None:
        self.config: BrokerConfig | None = None
        self.min_insync_replicas: dict[str, int] = {}

    def reconfigure(self, config: BrokerConfig) -> None:
        self.config = config

    def set_min_insync_replicas(self, topic: str, value: int) -> None:
        self.min_insync_replicas[topic] = value


class Controller:
    def __init__(self) -> None:
        self.calls: list[tuple[str | None, bool | None]] = []

    def enable_unclean_leader_election(
        self, topic: str | None = None, *, default: bool | None = None
    ) -> None:
        self.calls.append((topic, default))


class Broker:
    """A handler attached to a real LogManager holding topics ``a`` (with overrides), ``b``
    (without), two partitions each."""

    def __init__(self, tmp_path: Path, topics: int = 2) -> None:
        self.config = BrokerConfig.from_properties(
            {"broker.id": "1", "zookeeper.connect": "127.0.0.1:1", "log.dirs": str(tmp_path)}
        )
        names = ["a", "b", *(f"t{i}" for i in range(topics - 2))]
        self.zk = CountingZk({"a": {"retention.ms": "60000", "min.insync.replicas": "2"}})
        self.handler = ConfigHandler(self.config, self.zk.get_topic_config)
        self.logs = LogManager(
            [tmp_path],
            self.config.log,
            broker_id=1,
            topic_config=self.handler.topic_log_config,
        )
        self.logs.create_logs(
            [tp for name in names for tp in _partitions(name)],
            self.logs.log_configs(names),  # one read per topic, as the ReplicaManager does
        )
        self.replicas = Replicas()
        self.controller = Controller()
        self.reconfigured: list[BrokerConfig] = []
        self.handler.attach(
            ConfigTargets(
                self.logs,
                self.replicas,
                self.controller,
                reconfigured=(self.reconfigured.append,),
            )
        )

    def log_config(self, topic: str, partition: int = 0) -> TopicConfig:
        log = self.logs.get_log(topic, partition)
        assert log is not None
        return log.config

    def close(self) -> None:
        self.logs.close()


def _partitions(topic: str) -> list[TopicPartition]:
    return [TopicPartition(topic, 0), TopicPartition(topic, 1)]


def test_a_broker_level_change_reads_no_topic_config_from_zookeeper(tmp_path: Path) -> None:
    # The old BrokerServer._apply_broker_config read /config/topics/<t> of every topic with a
    # log here on each broker-level change: 50 reads here for one changed key.
    broker = Broker(tmp_path, topics=50)
    try:
        assert broker.zk.reads == 50  # once per topic, when its logs were created
        changed = broker.config.with_dynamic({"log.segment.bytes": str(2 * _MIB)}, {})
        asyncio.run(broker.handler.apply_broker_config(changed))
        assert broker.zk.reads == 50
        # ... and every log still has its topic's overrides, on the new defaults.
        a = broker.logs.get_log("a", 1)
        b = broker.logs.get_log("t7", 0)
        assert a is not None and b is not None
        assert (a.config.segment_bytes, a.config.retention_ms) == (2 * _MIB, 60_000)
        assert (b.config.segment_bytes, b.config.retention_ms) == (2 * _MIB, 7 * 86_400_000)
        assert broker.replicas.min_insync_replicas["a"] == 2
        assert broker.replicas.config is changed and broker.reconfigured == [changed]
    finally:
        broker.close()


def test_a_topic_change_is_kept_for_the_next_broker_level_change(tmp_path: Path) -> None:
    broker = Broker(tmp_path)
    try:
        asyncio.run(broker.handler.apply_topic_config("b", {"segment.bytes": str(_MIB)}))
        log = broker.logs.get_log("b", 1)
        assert log is not None and log.config.segment_bytes == _MIB
        # The override given by the notification, not ZooKeeper's (unchanged) copy, stays.
        changed = broker.config.with_dynamic({"log.retention.ms": "1000"}, {})
        asyncio.run(broker.handler.apply_broker_config(changed))
        assert (log.config.segment_bytes, log.config.retention_ms) == (_MIB, 1000)
        assert broker.zk.reads == 2
    finally:
        broker.close()


def test_broker_min_insync_replicas_reaches_topics_without_an_override(tmp_path: Path) -> None:
    broker = Broker(tmp_path)
    try:
        changed = broker.config.with_dynamic({"min.insync.replicas": "3"}, {})
        asyncio.run(broker.handler.apply_broker_config(changed))
        assert broker.replicas.min_insync_replicas == {"a": 2, "b": 3}
    finally:
        broker.close()


def test_unclean_election_turned_on_asks_the_controller(tmp_path: Path) -> None:
    broker = Broker(tmp_path)
    try:
        handler = broker.handler
        asyncio.run(handler.apply_topic_config("a", {"unclean.leader.election.enable": "false"}))
        assert broker.controller.calls == []
        asyncio.run(handler.apply_topic_config("a", {"unclean.leader.election.enable": "TRUE"}))
        assert broker.controller.calls == [("a", None)]
        changed = broker.config.with_dynamic({"unclean.leader.election.enable": "true"}, {})
        asyncio.run(handler.apply_broker_config(changed))
        assert broker.controller.calls == [("a", None), (None, True)]
    finally:
        broker.close()


def test_overrides_that_do_not_parse_leave_the_logs_as_they_were(tmp_path: Path) -> None:
    broker = Broker(tmp_path)
    try:
        before = broker.log_config("a")
        asyncio.run(broker.handler.apply_topic_config("a", {"segment.bytes": "big"}))
        assert broker.log_config("a") == before
        assert broker.replicas.min_insync_replicas == {}
    finally:
        broker.close()


def test_a_log_whose_overrides_were_not_kept_has_them_read_once(tmp_path: Path) -> None:
    # A log created while the handler pruned its overrides (by a LeaderAndIsr in the executor,
    # say) is open without them: the broker-level change reads them, once, rather than
    # dropping them.
    broker = Broker(tmp_path)
    try:
        broker.zk.overrides["c"] = {"retention.ms": "5000"}
        log = broker.logs.get_or_create_log("c", 0, broker.config.log)  # no topic_config call
        changed = broker.config.with_dynamic({"log.segment.bytes": str(2 * _MIB)}, {})
        asyncio.run(broker.handler.apply_broker_config(changed))
        assert (log.config.segment_bytes, log.config.retention_ms) == (2 * _MIB, 5000)
        assert broker.zk.reads == 3
        asyncio.run(broker.handler.apply_broker_config(broker.config))
        assert broker.zk.reads == 3 and log.config.retention_ms == 5000
    finally:
        broker.close()
