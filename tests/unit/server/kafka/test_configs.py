"""The Kafka door's DescribeConfigs table: a Kafka ConfigDef type for every key we describe."""

from __future__ import annotations

from minikafka.broker.config import CONFIG_TYPES, BrokerConfig
from minikafka.broker.server.core.configs import TOPIC_CONFIG_KEYS


def test_every_described_key_has_a_kafka_type() -> None:
    broker_keys = BrokerConfig(broker_id=0, zookeeper_connect="127.0.0.1:2181").describe()
    assert set(broker_keys) | TOPIC_CONFIG_KEYS <= set(CONFIG_TYPES)


def test_types_are_kafkas() -> None:
    assert CONFIG_TYPES["retention.ms"] == 5  # LONG
    assert CONFIG_TYPES["segment.bytes"] == 3  # INT
    assert CONFIG_TYPES["cleanup.policy"] == 7  # LIST
    assert CONFIG_TYPES["unclean.leader.election.enable"] == 1  # BOOLEAN
    assert CONFIG_TYPES["offsets.topic.replication.factor"] == 4  # SHORT
