"""Per-log configuration: Kafka's topic-level storage keys and their broker-level defaults.

Every field is one of Kafka's keys, under both of its names::

    field               topic key               broker key (default for every topic)
    segment_bytes       segment.bytes           log.segment.bytes             1 GiB
    segment_ms          segment.ms              log.roll.ms (/ .hours)        7 days
    segment_index_bytes segment.index.bytes     log.index.size.max.bytes      10 MiB
    index_interval_bytes index.interval.bytes   log.index.interval.bytes      4096
    retention_ms        retention.ms            log.retention.ms (/ .minutes / .hours) 7 days
    retention_bytes     retention.bytes         log.retention.bytes           -1 (unlimited)
    flush_messages      flush.messages          log.flush.interval.messages   Long.MAX (never)
    flush_ms            flush.ms                log.flush.interval.ms         Long.MAX (never)
    max_message_bytes   max.message.bytes       message.max.bytes             1048588
    cleanup_policy      cleanup.policy          log.cleanup.policy            delete
    delete_retention_ms delete.retention.ms     log.cleaner.delete.retention.ms 1 day
    min_compaction_lag_ms min.compaction.lag.ms log.cleaner.min.compaction.lag.ms 0
    max_compaction_lag_ms max.compaction.lag.ms log.cleaner.max.compaction.lag.ms Long.MAX
    min_cleanable_dirty_ratio min.cleanable.dirty.ratio log.cleaner.min.cleanable.ratio 0.5

A topic's config is its overrides laid over the broker's: ``LogConfig.from_properties(topic_props,
base=broker_config)``. Immutable; safe from any thread.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from minikafka.proto.errors import InvalidConfigError

__all__ = [
    "BROKER_STORAGE_KEYS",
    "LONG_MAX",
    "STORAGE_KEYS",
    "STORAGE_KEY_TYPES",
    "TOPIC_KEY_SYNONYMS",
    "ConfigType",
    "LogConfig",
]

LONG_MAX = 2**63 - 1
_INT_MAX = 2**31 - 1
_DAY_MS = 24 * 60 * 60 * 1000
_CLEANUP_POLICIES = frozenset({"delete", "compact"})


class ConfigType(enum.IntEnum):
    """The type of a key in Kafka's ConfigDef, as DescribeConfigs (v3+) reports it."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


@dataclass(frozen=True)
class LogConfig:
    """The storage settings of one log (fields and keys in the module docstring). Immutable:
    safe to share between threads."""

    segment_bytes: int = 1024 * 1024 * 1024
    segment_ms: int = 7 * _DAY_MS
    segment_index_bytes: int = 10 * 1024 * 1024
    index_interval_bytes: int = 4096
    retention_ms: int = 7 * _DAY_MS
    retention_bytes: int = -1
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    max_message_bytes: int = 1024 * 1024 + 12
    cleanup_policy: frozenset[str] = frozenset({"delete"})
    delete_retention_ms: int = _DAY_MS
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    min_cleanable_dirty_ratio: float = 0.5

    def __post_init__(self) -> None:
        # The same bounds Kafka's ConfigDef puts on these keys, so a dataclass built in code is
        # held to the rules a properties file is.
        for spec in _SPECS:
            value = getattr(self, spec.field)
            if spec.field in _NOT_INTEGERS:
                continue
            if not isinstance(value, int) or isinstance(value, bool):
                raise InvalidConfigError(f"{spec.topic_key} must be an integer, got {value!r}")
            if value < spec.minimum or value > spec.maximum:
                raise InvalidConfigError(
                    f"invalid value {value} for {spec.topic_key}: "
                    f"must be between {spec.minimum} and {spec.maximum}"
                )
        if not self.cleanup_policy or not self.cleanup_policy <= _CLEANUP_POLICIES:
            raise InvalidConfigError(
                f"invalid value {sorted(self.cleanup_policy)} for cleanup.policy: "
                "must be a non-empty subset of [compact, delete]"
            )
        ratio = self.min_cleanable_dirty_ratio
        if not isinstance(ratio, (int, float)) or isinstance(ratio, bool) or not 0 <= ratio <= 1:
            raise InvalidConfigError(
                f"invalid value {ratio!r} for min.cleanable.dirty.ratio: must be between 0 and 1"
            )

    @property
    def max_offset_index_entries(self) -> int:
        return self.segment_index_bytes // 8

    @property
    def max_time_index_entries(self) -> int:
        return self.segment_index_bytes // 12

    @property
    def delete_enabled(self) -> bool:
        """Whether retention may delete segments (``cleanup.policy`` includes ``delete``)."""
        return "delete" in self.cleanup_policy

    @property
    def compact(self) -> bool:
        """Whether the log cleaner compacts this log (``cleanup.policy`` includes ``compact``)."""
        return "compact" in self.cleanup_policy

    @classmethod
    def from_properties(
        cls, props: Mapping[str, str], *, base: LogConfig | None = None
    ) -> LogConfig:
        """Build from ``server.properties``-style keys, topic-level or broker-level.

        Keys that are not storage keys are ignored (a broker's whole properties file may be
        passed). A topic key beats the broker key for the same field; for the time keys, as in
        Kafka, ``.ms`` beats ``.minutes`` beats ``.hours``.
        """
        changes: dict[str, Any] = {}
        for spec in _SPECS:
            for key, scale in spec.keys_by_precedence():
                raw = props.get(key)
                if raw is None:
                    continue
                changes[spec.field] = spec.parse(key, raw, scale)
                break
        start = base if base is not None else cls()
        return dataclasses.replace(start, **changes)

    def to_properties(self) -> dict[str, str]:
        """Topic-level keys and values, as ``kafka-configs --describe`` would list them."""
        out: dict[str, str] = {}
        for spec in _SPECS:
            value = getattr(self, spec.field)
            if spec.field == "cleanup_policy":
                out[spec.topic_key] = ",".join(sorted(value))
            elif spec.field == "min_cleanable_dirty_ratio":
                out[spec.topic_key] = repr(float(value))
            else:
                out[spec.topic_key] = str(value)
        return out


@dataclass(frozen=True)
class _Spec:
    field: str
    topic_key: str
    broker_keys: tuple[tuple[str, int], ...]  # (key, multiplier to the field's unit)
    minimum: int = 0
    maximum: int = LONG_MAX
    parser: Callable[[str, str], Any] | None = None
    # Kafka's ConfigDef type of the topic key and its broker keys (hours and minutes keys: INT).
    config_type: ConfigType = dataclasses.field(kw_only=True)

    def keys_by_precedence(self) -> tuple[tuple[str, int], ...]:
        return ((self.topic_key, 1), *self.broker_keys)

    def parse(self, key: str, raw: str, scale: int) -> Any:
        if self.parser is not None:
            return self.parser(key, raw)
        text = raw.strip()
        try:
            value = int(text)
        except ValueError:
            raise InvalidConfigError(
                f"invalid value {raw!r} for configuration {key}: not an integer"
            ) from None
        if value >= 0:  # -1 means "unlimited" and must not be scaled
            value *= scale
        if value < self.minimum or value > self.maximum:
            raise InvalidConfigError(
                f"invalid value {raw!r} for configuration {key}: "
                f"must be between {self.minimum} and {self.maximum}"
                + (f" (in units of {scale} ms)" if scale != 1 else "")
            )
        return value


def _parse_policy(key: str, raw: str) -> frozenset[str]:
    policies = frozenset(p.strip().lower() for p in raw.split(",") if p.strip())
    if not policies or not policies <= _CLEANUP_POLICIES:
        raise InvalidConfigError(
            f"invalid value {raw!r} for configuration {key}: "
            "expected a comma-separated list of 'delete' and 'compact'"
        )
    return policies


def _parse_ratio(key: str, raw: str) -> float:
    try:
        value = float(raw.strip())
    except ValueError:
        raise InvalidConfigError(
            f"invalid value {raw!r} for configuration {key}: not a number"
        ) from None
    if not 0 <= value <= 1:
        raise InvalidConfigError(
            f"invalid value {raw!r} for configuration {key}: must be between 0 and 1"
        )
    return value


_NOT_INTEGERS = frozenset({"cleanup_policy", "min_cleanable_dirty_ratio"})
_MINUTE_MS = 60 * 1000
_HOUR_MS = 60 * _MINUTE_MS

# Minimums are Kafka's: segment.bytes at least 14 (the smallest legacy record), segment.ms and
# flush.messages at least 1, segment.index.bytes at least one entry's worth (4).
_SPECS: tuple[_Spec, ...] = (
    _Spec(
        "segment_bytes",
        "segment.bytes",
        (("log.segment.bytes", 1),),
        14,
        _INT_MAX,
        config_type=ConfigType.INT,
    ),
    _Spec(
        "segment_ms",
        "segment.ms",
        (("log.roll.ms", 1), ("log.roll.hours", _HOUR_MS)),
        1,
        config_type=ConfigType.LONG,
    ),
    _Spec(
        "segment_index_bytes",
        "segment.index.bytes",
        (("log.index.size.max.bytes", 1),),
        4,
        _INT_MAX,
        config_type=ConfigType.INT,
    ),
    _Spec(
        "index_interval_bytes",
        "index.interval.bytes",
        (("log.index.interval.bytes", 1),),
        0,
        _INT_MAX,
        config_type=ConfigType.INT,
    ),
    _Spec(
        "retention_ms",
        "retention.ms",
        (
            ("log.retention.ms", 1),
            ("log.retention.minutes", _MINUTE_MS),
            ("log.retention.hours", _HOUR_MS),
        ),
        -1,
        config_type=ConfigType.LONG,
    ),
    _Spec(
        "retention_bytes",
        "retention.bytes",
        (("log.retention.bytes", 1),),
        -1,
        config_type=ConfigType.LONG,
    ),
    _Spec(
        "flush_messages",
        "flush.messages",
        (("log.flush.interval.messages", 1),),
        1,
        config_type=ConfigType.LONG,
    ),
    _Spec("flush_ms", "flush.ms", (("log.flush.interval.ms", 1),), 0, config_type=ConfigType.LONG),
    _Spec(
        "max_message_bytes",
        "max.message.bytes",
        (("message.max.bytes", 1),),
        0,
        _INT_MAX,
        config_type=ConfigType.INT,
    ),
    _Spec(
        "cleanup_policy",
        "cleanup.policy",
        (("log.cleanup.policy", 1),),
        parser=_parse_policy,
        config_type=ConfigType.LIST,
    ),
    _Spec(
        "delete_retention_ms",
        "delete.retention.ms",
        (("log.cleaner.delete.retention.ms", 1),),
        0,
        config_type=ConfigType.LONG,
    ),
    _Spec(
        "min_compaction_lag_ms",
        "min.compaction.lag.ms",
        (("log.cleaner.min.compaction.lag.ms", 1),),
        0,
        config_type=ConfigType.LONG,
    ),
    _Spec(
        "max_compaction_lag_ms",
        "max.compaction.lag.ms",
        (("log.cleaner.max.compaction.lag.ms", 1),),
        1,
        config_type=ConfigType.LONG,
    ),
    _Spec(
        "min_cleanable_dirty_ratio",
        "min.cleanable.dirty.ratio",
        (("log.cleaner.min.cleanable.ratio", 1),),
        parser=_parse_ratio,
        config_type=ConfigType.DOUBLE,
    ),
)

# Every key ``LogConfig.from_properties`` reads, topic-level and broker-level.
STORAGE_KEYS: frozenset[str] = frozenset(
    key for spec in _SPECS for key, _ in spec.keys_by_precedence()
)
# topic key -> its broker keys, highest precedence first (Kafka's synonyms):
# "retention.ms" -> ("log.retention.ms", "log.retention.minutes", "log.retention.hours").
TOPIC_KEY_SYNONYMS: Mapping[str, tuple[str, ...]] = {
    spec.topic_key: tuple(key for key, _ in spec.broker_keys) for spec in _SPECS
}
# key -> its ConfigDef type, for every key in STORAGE_KEYS; Kafka's hours and minutes keys
# (log.roll.hours, log.retention.minutes, ...) are INTs.
STORAGE_KEY_TYPES: Mapping[str, ConfigType] = {
    key: spec.config_type if scale == 1 else ConfigType.INT
    for spec in _SPECS
    for key, scale in spec.keys_by_precedence()
}
# The broker-level keys only (server.properties and dynamic broker configs).
BROKER_STORAGE_KEYS: frozenset[str] = frozenset(
    key for keys in TOPIC_KEY_SYNONYMS.values() for key in keys
)
