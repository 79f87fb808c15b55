"""LogConfig: Kafka's defaults, both key spellings, validation."""

from __future__ import annotations

import dataclasses

import pytest

from minikafka.broker.storage.config import LONG_MAX, LogConfig
from minikafka.proto.errors import InvalidConfigError
from minikafka.proto.topic_config import TOPIC_KEY_TYPES


def test_defaults_are_kafkas() -> None:
    config = LogConfig()
    assert config.segment_bytes == 1 << 30
    assert config.segment_ms == 7 * 24 * 3600 * 1000
    assert config.segment_index_bytes == 10 * 1024 * 1024
    assert config.index_interval_bytes == 4096
    assert config.retention_ms == 7 * 24 * 3600 * 1000
    assert config.retention_bytes == -1
    assert config.flush_messages == LONG_MAX
    assert config.flush_ms == LONG_MAX
    assert config.max_message_bytes == 1048588
    assert config.cleanup_policy == frozenset({"delete"})
    assert config.max_offset_index_entries == 10 * 1024 * 1024 // 8
    assert config.max_time_index_entries == 10 * 1024 * 1024 // 12


def test_broker_keys() -> None:
    config = LogConfig.from_properties(
        {
            "log.segment.bytes": "1048576",
            "log.roll.hours": "1",
            "log.index.size.max.bytes": "4096",
            "log.index.interval.bytes": "100",
            "log.retention.minutes": "5",
            "log.retention.bytes": "5000000",
            "log.flush.interval.messages": "10",
            "log.flush.interval.ms": "1000",
            "message.max.bytes": "2000000",
            "log.cleanup.policy": "compact,delete",
            "broker.id": "3",  # not a storage key: ignored
        }
    )
    assert config == LogConfig(
        segment_bytes=1048576,
        segment_ms=3_600_000,
        segment_index_bytes=4096,
        index_interval_bytes=100,
        retention_ms=300_000,
        retention_bytes=5_000_000,
        flush_messages=10,
        flush_ms=1000,
        max_message_bytes=2_000_000,
        cleanup_policy=frozenset({"compact", "delete"}),
    )


def test_ms_beats_minutes_beats_hours() -> None:
    props = {"log.retention.hours": "1", "log.retention.minutes": "2"}
    assert LogConfig.from_properties(props).retention_ms == 120_000
    props["log.retention.ms"] = "7"
    assert LogConfig.from_properties(props).retention_ms == 7
    assert LogConfig.from_properties({"log.retention.hours": "-1"}).retention_ms == -1


def test_topic_overrides_on_broker_defaults() -> None:
    broker = LogConfig.from_properties({"log.segment.bytes": "5000", "log.retention.ms": "10"})
    topic = LogConfig.from_properties(
        {"retention.ms": "99", "cleanup.policy": "compact"}, base=broker
    )
    assert topic == dataclasses.replace(
        broker, retention_ms=99, cleanup_policy=frozenset({"compact"})
    )
    assert not topic.delete_enabled
    assert LogConfig.from_properties(topic.to_properties()) == topic


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("segment.bytes", "abc"),
        ("segment.bytes", "13"),
        ("segment.ms", "0"),
        ("retention.ms", "-2"),
        ("flush.messages", "0"),
        ("segment.index.bytes", "3"),
        ("cleanup.policy", "shred"),
        ("log.segment.bytes", str(2**31)),
    ],
)
def test_bad_values_are_refused_with_the_key_named(key: str, value: str) -> None:
    with pytest.raises(InvalidConfigError, match=key.replace(".", r"\.")):
        LogConfig.from_properties({key: value})


def test_dataclass_checks_bounds_too() -> None:
    with pytest.raises(InvalidConfigError):
        LogConfig(segment_bytes=0)


def test_topic_key_types_list_both_spellings() -> None:
    assert {"segment.bytes", "log.segment.bytes", "log.roll.hours", "message.max.bytes"} <= set(
        TOPIC_KEY_TYPES
    )
    assert "broker.id" not in TOPIC_KEY_TYPES
