"""Topics a broker creates on its own (auto-creation) get the rack-aware assignment when every
live broker has a rack (KIP-36), and are refused when only some have one."""

from __future__ import annotations

import asyncio
from pathlib import Path

from minikafka.broker.config import BrokerConfig
from minikafka.broker.server.core.topic_creation import TopicCreator
from minikafka.proto.cluster_state import Versioned
from minikafka.proto.errors import ErrorCode
from minikafka.zk.zk_data import BrokerRegistration, TopicAssignment


class _Store:
    """The ZooKeeper calls of TopicCreator, in memory, with brokers 0-3 on two racks."""

    def __init__(self, racks: dict[int, str | None]) -> None:
        self.racks = racks
        self.created: dict[str, TopicAssignment] = {}

    def get_topic(self, topic: str) -> Versioned[TopicAssignment] | None:
        return None

    def get_all_topics(self) -> list[str]:
        return list(self.created)

    def get_live_brokers(self) -> list[BrokerRegistration]:
        return [BrokerRegistration(b, (), rack=rack) for b, rack in self.racks.items()]

    def create_topic(
        self, assignment: TopicAssignment, config: dict[str, str] | None = None
    ) -> None:
        self.created[assignment.topic] = assignment


def test_auto_created_topics_are_rack_aware(tmp_path: Path) -> None:
    config = BrokerConfig.load(
        overrides=[
            "broker.id=0",
            f"log.dirs={tmp_path}",
            "zookeeper.connect=127.0.0.1:2181",
            "num.partitions=8",
            "default.replication.factor=2",
        ],
        environ={},
    )
    racks: dict[int, str | None] = {0: "a", 1: "a", 2: "b", 3: "b"}
    store = _Store(racks)
    assert asyncio.run(TopicCreator(config, store).create("auto")) is None
    partitions = store.created["auto"].partitions
    assert len(partitions) == 8
    assert all({racks[r] for r in replicas} == {"a", "b"} for replicas in partitions.values())
    store.racks[3] = None  # a broker without a rack: refused, nothing created
    error = asyncio.run(TopicCreator(config, store).create("mixed"))
    assert error is not None and error.code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert "mixed" not in store.created
