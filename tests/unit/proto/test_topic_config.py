"""The one table of topic keys: a row per key, and every reader of a key parsing it alike.

The admin core (CreateTopics, AlterConfigs), the broker's server.properties and dynamic broker
configs, the ReplicaManager and the controller each read min.insync.replicas or
unclean.leader.election.enable; before the table each had its own parser, which disagreed
(``+2`` was a valid broker min.insync.replicas and an invalid topic one) and worded the same
error differently.
"""

from __future__ import annotations

import dataclasses
from typing import cast

import pytest

from minikafka.broker.config import CONFIG_TYPES, BrokerConfig
from minikafka.broker.server.core.configs import TOPIC_TO_BROKER_KEY, validate_topic_configs
from minikafka.controller.config import ControllerConfig
from minikafka.controller.partition_state_machine import PartitionStateMachine
from minikafka.controller.state import ControllerContext
from minikafka.proto.errors import InvalidConfigError, KafkaError
from minikafka.proto.topic_config import (
    BROKER_TOPIC_KEYS,
    TOPIC_CONFIG_KEYS,
    TOPIC_KEY_SPECS,
    ConfigType,
    TopicConfig,
)
from minikafka.zk.zk_store import ZkStore


def _broker(props: dict[str, str]) -> BrokerConfig:
    return BrokerConfig.from_properties({"broker.id": "1", "zookeeper.connect": "zk:1", **props})


def test_every_topic_config_field_has_one_row_and_every_row_a_field() -> None:
    fields = [f.name for f in dataclasses.fields(TopicConfig)]
    assert sorted(spec.field for spec in TOPIC_KEY_SPECS.values()) == sorted(fields)
    assert set(TOPIC_KEY_SPECS) == TOPIC_CONFIG_KEYS
    assert all(spec.synonyms for spec in TOPIC_KEY_SPECS.values())  # a broker default each


def test_the_admin_serves_and_describes_every_row() -> None:
    assert set(TOPIC_TO_BROKER_KEY) == TOPIC_CONFIG_KEYS
    assert set(CONFIG_TYPES) >= TOPIC_CONFIG_KEYS | BROKER_TOPIC_KEYS
    assert CONFIG_TYPES["min.insync.replicas"] == ConfigType.INT
    assert CONFIG_TYPES["unclean.leader.election.enable"] == ConfigType.BOOLEAN
    assert CONFIG_TYPES["log.retention.hours"] == ConfigType.INT


def test_the_broker_defaults_are_the_rows_read_through_their_broker_keys() -> None:
    config = _broker(
        {
            "min.insync.replicas": "2",
            "unclean.leader.election.enable": "true",
            "log.retention.minutes": "3",
        }
    )
    assert config.log == TopicConfig(
        min_insync_replicas=2, unclean_leader_election_enable=True, retention_ms=180_000
    )
    assert config.min_insync_replicas == 2 and config.unclean_leader_election_enable
    described = config.describe()
    assert described["min.insync.replicas"][0] == "2"
    assert described["unclean.leader.election.enable"][0] == "true"


def _errors(key: str, raw: str) -> list[str]:
    """The message of each door that reads ``key`` as a topic key or its broker default."""
    messages = []
    for parse in (
        lambda: validate_topic_configs({key: raw}),
        lambda: TopicConfig.from_properties({key: raw}),
        lambda: _broker({key: raw}),
        lambda: _broker({}).with_dynamic({key: raw}, {}),
    ):
        with pytest.raises(InvalidConfigError) as info:
            parse()
        messages.append(info.value.message)
    return messages


@pytest.mark.parametrize(
    ("key", "raw", "message"),
    [
        ("min.insync.replicas", "0", "must be at least 1"),
        ("min.insync.replicas", "two", "not a number of type INT"),
        ("min.insync.replicas", "2147483648", "not a number of type INT"),
        ("unclean.leader.election.enable", "yes", "expected true or false"),
    ],
)
def test_one_key_one_parser_one_wording_on_every_door(key: str, raw: str, message: str) -> None:
    expected = f"invalid value {raw!r} for configuration {key}: {message}"
    assert _errors(key, raw) == [expected] * 4


@pytest.mark.parametrize("raw", ["+2", " 2 ", "2"])
def test_a_value_valid_for_the_broker_is_valid_for_a_topic(raw: str) -> None:
    validate_topic_configs({"min.insync.replicas": raw})
    assert TopicConfig.from_properties({"min.insync.replicas": raw}).min_insync_replicas == 2
    assert _broker({"min.insync.replicas": raw}).min_insync_replicas == 2


def test_digits_of_other_scripts_are_no_number() -> None:
    # str.isdigit and int() take "٣" (Arabic-Indic three); Kafka's Integer.parseInt-like rule
    # here takes ASCII digits only, on every door.
    with pytest.raises(KafkaError):
        validate_topic_configs({"min.insync.replicas": "\u0663"})


class _ZkWithTopicConfig:
    def __init__(self, overrides: dict[str, str]) -> None:
        self.overrides = overrides

    def get_topic_config(self, topic: str) -> dict[str, str]:
        return self.overrides


@pytest.mark.parametrize(
    ("raw", "allowed"),
    [(None, False), ("true", True), (" TRUE ", True), ("false", False), ("yes", False)],
)
def test_the_controller_reads_unclean_election_through_the_row(
    raw: str | None, allowed: bool
) -> None:
    overrides = {} if raw is None else {"unclean.leader.election.enable": raw}
    machine = PartitionStateMachine(
        ControllerContext(epoch=1, epoch_zk_version=0),
        cast(ZkStore, _ZkWithTopicConfig(overrides)),
        ControllerConfig,
    )
    assert machine._unclean_allowed("t") is allowed
