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
from minikafka.proto.records import Compression, Recompression
from minikafka.proto.topic_config import (
    BROKER_TOPIC_KEYS,
    TOPIC_CONFIG_KEYS,
    TOPIC_KEY_SPECS,
    ConfigType,
    TopicConfig,
    throttled_partitions,
)
from minikafka.zk.zk_store import ZkStore


def _broker(props: dict[str, str]) -> BrokerConfig:
    return BrokerConfig.from_properties({"broker.id": "1", "zookeeper.connect": "zk:1", **props})


def test_every_topic_config_field_has_one_row_and_every_row_a_field() -> None:
    fields = [f.name for f in dataclasses.fields(TopicConfig)]
    assert sorted(spec.field for spec in TOPIC_KEY_SPECS.values()) == sorted(fields)
    assert set(TOPIC_KEY_SPECS) == TOPIC_CONFIG_KEYS
    # a broker default each, but for the keys Kafka gives none
    without = {name for name, spec in TOPIC_KEY_SPECS.items() if not spec.synonyms}
    assert without == {
        "remote.storage.enable",
        "remote.log.copy.disable",
        "remote.log.delete.on.disable",
        "leader.replication.throttled.replicas",
        "follower.replication.throttled.replicas",
    }


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


# Kafka 3.9's topic keys (the docs' "Topic-Level Configs", LogConfig's ConfigDef).
KAFKA_39_TOPIC_KEYS = frozenset(
    [
        "cleanup.policy",
        "compression.gzip.level",
        "compression.lz4.level",
        "compression.type",
        "compression.zstd.level",
        "delete.retention.ms",
        "file.delete.delay.ms",
        "flush.messages",
        "flush.ms",
        "follower.replication.throttled.replicas",
        "index.interval.bytes",
        "leader.replication.throttled.replicas",
        "local.retention.bytes",
        "local.retention.ms",
        "max.compaction.lag.ms",
        "max.message.bytes",
        "message.downconversion.enable",
        "message.format.version",
        "message.timestamp.after.max.ms",
        "message.timestamp.before.max.ms",
        "message.timestamp.difference.max.ms",
        "message.timestamp.type",
        "min.cleanable.dirty.ratio",
        "min.compaction.lag.ms",
        "min.insync.replicas",
        "preallocate",
        "remote.log.copy.disable",
        "remote.log.delete.on.disable",
        "remote.storage.enable",
        "retention.bytes",
        "retention.ms",
        "segment.bytes",
        "segment.index.bytes",
        "segment.jitter.ms",
        "segment.ms",
        "unclean.leader.election.enable",
    ]
)


def test_every_kafka_topic_key_is_known() -> None:
    assert TOPIC_CONFIG_KEYS == KAFKA_39_TOPIC_KEYS


def test_the_new_keys_have_kafkas_defaults() -> None:
    defaults = TopicConfig().to_properties()
    assert {k: defaults[k] for k in KAFKA_39_TOPIC_KEYS - _OLD_KEYS} == {
        "compression.gzip.level": "-1",
        "compression.lz4.level": "9",
        "compression.zstd.level": "3",
        "file.delete.delay.ms": "60000",
        "follower.replication.throttled.replicas": "",
        "leader.replication.throttled.replicas": "",
        "local.retention.bytes": "-2",
        "local.retention.ms": "-2",
        "message.downconversion.enable": "true",
        "message.format.version": "3.0-IV1",
        "message.timestamp.after.max.ms": "9223372036854775807",
        "message.timestamp.before.max.ms": "9223372036854775807",
        "message.timestamp.difference.max.ms": "9223372036854775807",
        "message.timestamp.type": "CreateTime",
        "preallocate": "false",
        "remote.log.copy.disable": "false",
        "remote.log.delete.on.disable": "false",
        "remote.storage.enable": "false",
        "segment.jitter.ms": "0",
    }


_OLD_KEYS = frozenset(
    [
        "segment.bytes",
        "segment.ms",
        "segment.index.bytes",
        "index.interval.bytes",
        "retention.ms",
        "retention.bytes",
        "flush.messages",
        "flush.ms",
        "max.message.bytes",
        "cleanup.policy",
        "delete.retention.ms",
        "min.compaction.lag.ms",
        "max.compaction.lag.ms",
        "min.cleanable.dirty.ratio",
        "compression.type",
        "min.insync.replicas",
        "unclean.leader.election.enable",
    ]
)


@pytest.mark.parametrize(
    ("key", "raw", "reason"),
    [
        ("remote.storage.enable", "true", "tiered storage .* is not supported"),
        ("remote.log.copy.disable", "true", "tiered storage .* is not supported"),
        ("remote.log.delete.on.disable", "true", "tiered storage .* is not supported"),
        ("leader.replication.throttled.replicas", "0-1", "leader.replication.throttled.rep"),
        ("follower.replication.throttled.replicas", "*,0:1", ".* must be the literal '\\*'"),
        ("message.timestamp.type", "createtime", "String must be one of: CreateTime"),
        ("compression.gzip.level", "0", "must be -1 or between 1 and 9"),
        ("compression.lz4.level", "18", "must be between 1 and 17"),
        ("compression.zstd.level", "23", "must be between -131072 and 22"),
        ("local.retention.ms", "-3", "must be at least -2"),
        ("segment.jitter.ms", "-1", "must be at least 0"),
        ("message.format.version", "latest", "not a Kafka version"),
        ("preallocate", "yes", "expected true or false"),
    ],
)
def test_a_refusal_names_the_key_and_the_reason(key: str, raw: str, reason: str) -> None:
    with pytest.raises(InvalidConfigError, match=f"configuration {key}: {reason}"):
        validate_topic_configs({key: raw})


def test_the_off_value_of_a_missing_feature_is_accepted() -> None:
    validate_topic_configs(
        {
            "remote.storage.enable": "false",
            "remote.log.copy.disable": "false",
            "remote.log.delete.on.disable": "false",
        }
    )


@pytest.mark.parametrize(
    ("raw", "kept", "on_broker_1"),
    [
        ("", "", frozenset()),
        ("*", "*", None),
        (" * ", "*", None),
        ("0:1, 1:2 ,2:1", "0:1,1:2,2:1", frozenset({0, 2})),
        ("0:1,,3:1", "0:1,3:1", frozenset({0, 3})),
    ],
)
def test_throttled_replicas_are_star_or_partition_broker_pairs(
    raw: str, kept: str, on_broker_1: frozenset[int] | None
) -> None:
    for key in ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas"):
        config = TopicConfig.from_properties({key: raw})
        value = getattr(config, key.replace(".", "_"))
        assert value == kept
        assert throttled_partitions(value, 1) == on_broker_1


def test_cleanup_policy_may_be_empty_neither_delete_nor_compact() -> None:
    config = TopicConfig.from_properties({"cleanup.policy": ""})
    assert config.cleanup_policy == frozenset()
    assert not config.delete_enabled and not config.compact
    assert config.to_properties()["cleanup.policy"] == ""


@pytest.mark.parametrize("codec", ["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"])
def test_compression_type_takes_kafkas_values(codec: str) -> None:
    assert TopicConfig.from_properties({"compression.type": codec}).compression_type == codec


def test_the_broker_log_keys_are_the_new_keys_defaults() -> None:
    config = _broker(
        {
            "log.message.timestamp.type": "LogAppendTime",
            "log.roll.jitter.hours": "2",
            "log.segment.delete.delay.ms": "5",
            "log.preallocate": "true",
            "log.message.timestamp.before.max.ms": "1000",
            "compression.zstd.level": "7",
            "log.local.retention.ms": "100",
        }
    )
    assert config.log.message_timestamp_type == "LogAppendTime"
    assert config.log.segment_jitter_ms == 2 * 3_600_000
    assert config.log.file_delete_delay_ms == 5
    assert config.log.preallocate is True
    assert config.log.message_timestamp_before_max_ms == 1000
    assert config.log.compression_zstd_level == 7
    assert config.log.local_retention_ms == 100
    # log.roll.jitter.ms beats log.roll.jitter.hours, as log.roll.ms beats log.roll.hours
    both = _broker({"log.roll.jitter.ms": "7", "log.roll.jitter.hours": "2"})
    assert both.log.segment_jitter_ms == 7


def test_compression_type_and_its_level_give_the_leaders_codec() -> None:
    def target(props: dict[str, str]) -> object:
        return TopicConfig.from_properties(props).recompression

    assert target({}) is None  # producer
    assert target({"compression.type": "uncompressed"}) == Recompression(Compression.NONE)
    assert target({"compression.type": "zstd"}) == Recompression(Compression.ZSTD, 3)
    assert target({"compression.type": "lz4", "compression.lz4.level": "4"}) == Recompression(
        Compression.LZ4, 4
    )
    assert target({"compression.type": "gzip"}) == Recompression(Compression.GZIP, None)
    assert target({"compression.type": "snappy"}) == Recompression(Compression.SNAPPY, None)


def test_min_compaction_lag_above_max_is_a_conflict_kafka_refuses() -> None:
    with pytest.raises(
        InvalidConfigError,
        match=r"conflict topic config setting min.compaction.lag.ms \(60000\) > "
        r"max.compaction.lag.ms \(1000\)",
    ):
        validate_topic_configs({"min.compaction.lag.ms": "60000", "max.compaction.lag.ms": "1000"})
    # Against Kafka's default for the unset one (Long.MAX_VALUE and 0), never the broker's.
    validate_topic_configs({"min.compaction.lag.ms": "60000"})
    with pytest.raises(InvalidConfigError, match="conflict topic config setting"):
        validate_topic_configs({"max.compaction.lag.ms": "5", "min.compaction.lag.ms": "6"})
    validate_topic_configs({"min.compaction.lag.ms": "1000", "max.compaction.lag.ms": "1000"})
