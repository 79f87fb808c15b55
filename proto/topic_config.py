"""Kafka's topic-level config keys: one table row per key, parsed once into a TopicConfig.

Each row of ``TOPIC_KEY_SPECS`` is one topic key: its name, the TopicConfig field it fills (whose
default is Kafka's), its Kafka ConfigDef type, its range or parser, and the broker keys that give
every topic its default (Kafka's synonyms, highest precedence first, with the multiplier of the
hours and minutes keys)::

    ConfigKey("retention.ms", "retention_ms", LONG, -1,
              synonyms=(("log.retention.ms", 1), ("log.retention.minutes", 60_000),
                        ("log.retention.hours", 3_600_000)))

A topic's config is its overrides laid over the broker's defaults: ``TopicConfig.from_properties(
overrides, base=broker_config.log)``; the broker's defaults are ``TopicConfig.from_properties`` of
server.properties (the broker keys). Storage reads the log fields (broker.storage.config's
``LogConfig`` is this class), the replicas ``min_insync_replicas``, the controller
``unclean_leader_election_enable``, the admin core validates and describes every key from the
table. It lives in proto because the controller, which may import only proto, reads a topic key
too: one table below the broker and the controller instead of one in each.

``ConfigKey`` is the one spec class of every config key, topic-level here and broker-level in
broker/config.py, with the one integer and boolean parser and their wording::

    invalid value 'big' for configuration segment.bytes: not a number of type INT
    invalid value '2147483648' for configuration segment.bytes: not a number of type INT
    invalid value '13' for configuration segment.bytes: must be at least 14
    invalid value '0' for configuration min.insync.replicas: must be at least 1

Adding a topic key is one row in ``TOPIC_KEY_SPECS`` and one field in ``TopicConfig``.
Immutable values and pure functions: safe from any thread.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from minikafka.proto.errors import InvalidConfigError, KafkaError
from minikafka.proto.records import Compression, Recompression

__all__ = [
    "ALL_REPLICAS",
    "BROKER_TOPIC_KEYS",
    "INT_MAX",
    "LONG_MAX",
    "SHORT_MAX",
    "TOPIC_CONFIG_KEYS",
    "TOPIC_KEY_SPECS",
    "TOPIC_KEY_SYNONYMS",
    "TOPIC_KEY_TYPES",
    "ConfigKey",
    "ConfigType",
    "TopicConfig",
    "parse_compression_type",
    "throttled_partitions",
]

SHORT_MAX = 2**15 - 1
INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
_DAY_MS = 24 * 60 * 60 * 1000
_MINUTE_MS = 60 * 1000
_HOUR_MS = 60 * _MINUTE_MS
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


_INTEGER = re.compile(r"[+-]?[0-9]+")
_INTEGER_LIMITS = {ConfigType.SHORT: SHORT_MAX, ConfigType.INT: INT_MAX, ConfigType.LONG: LONG_MAX}


def _invalid(key: str, raw: object, reason: str) -> KafkaError:
    return InvalidConfigError(f"invalid value {raw!r} for configuration {key}: {reason}")


def _parse_integer(key: str, raw: str, config_type: ConfigType) -> int:
    limit = _INTEGER_LIMITS[config_type]
    text = raw.strip()
    if not _INTEGER.fullmatch(text) or not -limit - 1 <= int(text) <= limit:
        raise _invalid(key, raw, f"not a number of type {config_type.name}")
    return int(text)


def _parse_boolean(key: str, raw: str) -> bool:
    text = raw.strip().lower()
    if text not in ("true", "false"):
        raise _invalid(key, raw, "expected true or false")
    return text == "true"


@dataclass(frozen=True)
class ConfigKey:
    """One config key: its name, the field it fills, its ConfigDef type, its range and its
    synonyms. Integers and booleans are parsed by type; any other key by its ``parser`` (text
    as given, stripped, without one). ``synonyms``: (key, multiplier to the field's unit) read
    when ``name`` is absent, in that order: a topic key's broker keys, or a broker key's older
    spelling (log.dir for log.dirs)."""

    name: str
    field: str
    type: ConfigType
    minimum: int | None = None
    maximum: int | None = None
    parser: Callable[[str, str], Any] | None = None
    synonyms: tuple[tuple[str, int], ...] = ()
    required: bool = False

    @property
    def synonym_names(self) -> tuple[str, ...]:
        return tuple(key for key, _ in self.synonyms)

    def keys_by_precedence(self) -> tuple[tuple[str, int], ...]:
        return ((self.name, 1), *self.synonyms)

    def lookup(self, props: Mapping[str, str]) -> tuple[str, int, str | None]:
        """The key that is set (``name`` first, then the synonyms), its multiplier and its raw
        value (None when none is set)."""
        for key, scale in self.keys_by_precedence():
            if key in props:
                return key, scale, props[key]
        return self.name, 1, None

    def type_of(self, key: str) -> ConfigType:
        """The ConfigDef type of ``key`` (this key or a synonym): Kafka's hours and minutes
        keys (log.roll.hours, log.retention.minutes, ...) are INTs."""
        scale = dict(self.keys_by_precedence()).get(key, 1)
        return self.type if scale == 1 else ConfigType.INT

    def parse(self, key: str, raw: str, scale: int = 1) -> Any:
        """The typed value of ``raw`` given for ``key`` (this key or a synonym with multiplier
        ``scale``), range checked; InvalidConfigError naming the key otherwise."""
        if self.parser is not None:
            return self.parser(key, raw)
        if self.type == ConfigType.BOOLEAN:
            return _parse_boolean(key, raw)
        if self.type not in _INTEGER_LIMITS:
            return raw.strip()
        value = _parse_integer(key, raw, self.type_of(key))
        if value >= 0:  # -1 means "unlimited" and must not be scaled
            value *= scale
        self.check(value, key, raw)
        return value

    def check(self, value: object, key: str | None = None, raw: object = None) -> None:
        """InvalidConfigError unless an integer ``value`` is within the key's range."""
        if not isinstance(value, int) or isinstance(value, bool):
            return
        limit = _INTEGER_LIMITS.get(self.type)
        if limit is not None and not -limit - 1 <= value <= limit:
            raise _invalid(key or self.name, value, f"not a number of type {self.type.name}")
        low, high = self.minimum, self.maximum
        if (low is None or value >= low) and (high is None or value <= high):
            return
        if high is None:
            reason = f"must be at least {low}"
        elif low is None:
            reason = f"must be at most {high}"
        else:
            reason = f"must be between {low} and {high}"
        raise _invalid(key or self.name, value if raw is None else raw, reason)


def _parse_policy(key: str, raw: str) -> frozenset[str]:
    # Kafka allows the empty list: neither deleted by retention nor compacted, kept forever.
    policies = frozenset(p.strip().lower() for p in raw.split(",") if p.strip())
    if not policies <= _CLEANUP_POLICIES:
        raise _invalid(key, raw, "expected a comma-separated list of 'delete' and 'compact'")
    return policies


def _parse_ratio(key: str, raw: str) -> float:
    try:
        value = float(raw.strip())
    except ValueError:
        raise _invalid(key, raw, "not a number of type DOUBLE") from None
    if not 0 <= value <= 1:
        raise _invalid(key, raw, "must be between 0 and 1")
    return value


_COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")


def parse_compression_type(key: str, raw: str) -> str:
    """Kafka's compression.type: a codec the leader recompresses every batch to, ``producer``
    to keep the producer's, ``uncompressed`` for none."""
    value = raw.strip().lower()
    if value not in _COMPRESSION_TYPES:
        raise InvalidConfigError(
            f"Invalid value {raw} for configuration {key}: String must be one of: "
            + ", ".join(_COMPRESSION_TYPES)
        )
    return value


TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")


def _parse_timestamp_type(key: str, raw: str) -> str:
    value = raw.strip()
    if value not in TIMESTAMP_TYPES:
        raise _invalid(key, raw, "String must be one of: " + ", ".join(TIMESTAMP_TYPES))
    return value


# Kafka's MetadataVersion names (0.8.0 ... 3.9-IV0): the key is deprecated and ignored from
# 3.0 on, so any well-formed version is kept as given, as Kafka keeps it.
_METADATA_VERSION = re.compile(r"[0-9]+\.[0-9]+(\.[0-9]+)?(-IV[0-9]+)?")


def _parse_message_format_version(key: str, raw: str) -> str:
    value = raw.strip()
    if not _METADATA_VERSION.fullmatch(value):
        raise _invalid(key, raw, "not a Kafka version (for example 3.0-IV1)")
    return value


def _parse_gzip_level(key: str, raw: str) -> int:
    # gzip's levels are 1..9, or -1 for the codec's own default (zlib's 6)
    value = _parse_integer(key, raw, ConfigType.INT)
    if value != -1 and not 1 <= value <= 9:
        raise _invalid(key, raw, "must be -1 or between 1 and 9")
    return value


def _off_only(off: bool, feature: str) -> Callable[[str, str], bool]:
    """The parser of a boolean key of a feature this broker does not have: only ``off`` (the
    value that leaves the feature unused) is accepted."""

    def parse(key: str, raw: str) -> bool:
        value = _parse_boolean(key, raw)
        if value != off:
            raise _invalid(
                key, raw, f"{feature} is not supported by this broker; only {str(off).lower()}"
            )
        return value

    return parse


_THROTTLED_REPLICA = re.compile(r"([0-9]+:[0-9]+)?")
ALL_REPLICAS = "*"


def _parse_throttled_replicas(key: str, raw: str) -> str:
    # Kafka's ThrottledReplicaListValidator: ``*`` or ``partition:broker`` items (empty ones
    # too); kept as text, normalised, and read by ``throttled_partitions``.
    items = [item.strip() for item in raw.split(",")]
    if "".join(items) == ALL_REPLICAS:
        return ALL_REPLICAS
    if not all(_THROTTLED_REPLICA.fullmatch(item) for item in items):
        raise _invalid(
            key,
            raw,
            f"{key} must be the literal '*' or a list of replicas in the following format: "
            "[partitionId]:[brokerId],[partitionId]:[brokerId],...",
        )
    return ",".join(item for item in items if item)


def throttled_partitions(value: str, broker_id: int) -> frozenset[int] | None:
    """The partitions a ``*.replication.throttled.replicas`` value throttles on ``broker_id``:
    None for ``*`` (every partition), else those listed with that broker (Kafka's
    QuotaConfigHandler.parseThrottledPartitions). ``value`` is one the key's parser accepted.

    >>> sorted(throttled_partitions("0:1,1:2,2:1", 1))
    [0, 2]
    >>> throttled_partitions("*", 3) is None
    True
    """
    if value.strip() == ALL_REPLICAS:
        return None
    out = set()
    for item in value.split(","):
        if item.strip():
            partition, broker = item.strip().split(":")
            if int(broker) == broker_id:
                out.add(int(partition))
    return frozenset(out)


_NO_TIERED_STORAGE = "tiered storage (remote log storage)"

# Minimums are Kafka's: segment.bytes at least 14 (the smallest legacy record), segment.ms and
# flush.messages at least 1, segment.index.bytes at least one entry's worth (4). The largest
# value is the type's (an INT's 2147483647, a LONG's), as in Kafka's ConfigDef.
_INT, _LONG = ConfigType.INT, ConfigType.LONG
TOPIC_KEY_SPECS: Mapping[str, ConfigKey] = {
    key.name: key
    for key in (
        ConfigKey(
            "segment.bytes",
            "segment_bytes",
            _INT,
            14,
            synonyms=(("log.segment.bytes", 1),),
        ),
        ConfigKey(
            "segment.ms",
            "segment_ms",
            _LONG,
            1,
            synonyms=(("log.roll.ms", 1), ("log.roll.hours", _HOUR_MS)),
        ),
        ConfigKey(
            "segment.index.bytes",
            "segment_index_bytes",
            _INT,
            4,
            synonyms=(("log.index.size.max.bytes", 1),),
        ),
        ConfigKey(
            "index.interval.bytes",
            "index_interval_bytes",
            _INT,
            0,
            synonyms=(("log.index.interval.bytes", 1),),
        ),
        ConfigKey(
            "retention.ms",
            "retention_ms",
            _LONG,
            -1,
            synonyms=(
                ("log.retention.ms", 1),
                ("log.retention.minutes", _MINUTE_MS),
                ("log.retention.hours", _HOUR_MS),
            ),
        ),
        ConfigKey(
            "retention.bytes",
            "retention_bytes",
            _LONG,
            -1,
            synonyms=(("log.retention.bytes", 1),),
        ),
        ConfigKey(
            "flush.messages",
            "flush_messages",
            _LONG,
            1,
            synonyms=(("log.flush.interval.messages", 1),),
        ),
        ConfigKey("flush.ms", "flush_ms", _LONG, 0, synonyms=(("log.flush.interval.ms", 1),)),
        ConfigKey(
            "max.message.bytes",
            "max_message_bytes",
            _INT,
            0,
            synonyms=(("message.max.bytes", 1),),
        ),
        ConfigKey(
            "cleanup.policy",
            "cleanup_policy",
            ConfigType.LIST,
            parser=_parse_policy,
            synonyms=(("log.cleanup.policy", 1),),
        ),
        ConfigKey(
            "delete.retention.ms",
            "delete_retention_ms",
            _LONG,
            0,
            synonyms=(("log.cleaner.delete.retention.ms", 1),),
        ),
        ConfigKey(
            "min.compaction.lag.ms",
            "min_compaction_lag_ms",
            _LONG,
            0,
            synonyms=(("log.cleaner.min.compaction.lag.ms", 1),),
        ),
        ConfigKey(
            "max.compaction.lag.ms",
            "max_compaction_lag_ms",
            _LONG,
            1,
            synonyms=(("log.cleaner.max.compaction.lag.ms", 1),),
        ),
        ConfigKey(
            "min.cleanable.dirty.ratio",
            "min_cleanable_dirty_ratio",
            ConfigType.DOUBLE,
            parser=_parse_ratio,
            synonyms=(("log.cleaner.min.cleanable.ratio", 1),),
        ),
        ConfigKey(
            "compression.type",
            "compression_type",
            ConfigType.STRING,
            parser=parse_compression_type,
            synonyms=(("compression.type", 1),),
        ),
        ConfigKey(
            "min.insync.replicas",
            "min_insync_replicas",
            _INT,
            1,
            synonyms=(("min.insync.replicas", 1),),
        ),
        ConfigKey(
            "unclean.leader.election.enable",
            "unclean_leader_election_enable",
            ConfigType.BOOLEAN,
            synonyms=(("unclean.leader.election.enable", 1),),
        ),
        ConfigKey(
            "compression.gzip.level",
            "compression_gzip_level",
            _INT,
            parser=_parse_gzip_level,
            synonyms=(("compression.gzip.level", 1),),
        ),
        ConfigKey(
            "compression.lz4.level",
            "compression_lz4_level",
            _INT,
            1,
            17,
            synonyms=(("compression.lz4.level", 1),),
        ),
        ConfigKey(
            "compression.zstd.level",
            "compression_zstd_level",
            _INT,
            -131072,
            22,
            synonyms=(("compression.zstd.level", 1),),
        ),
        ConfigKey(
            "segment.jitter.ms",
            "segment_jitter_ms",
            _LONG,
            0,
            synonyms=(("log.roll.jitter.ms", 1), ("log.roll.jitter.hours", _HOUR_MS)),
        ),
        ConfigKey(
            "file.delete.delay.ms",
            "file_delete_delay_ms",
            _LONG,
            0,
            synonyms=(("log.segment.delete.delay.ms", 1),),
        ),
        # Accepted and kept, with no effect: Kafka's preallocation makes a new segment file
        # segment.bytes long and trims it at the roll, but the offline readers here (dump-log,
        # the Spark source) take a .log file's size as its end.
        ConfigKey(
            "preallocate",
            "preallocate",
            ConfigType.BOOLEAN,
            synonyms=(("log.preallocate", 1),),
        ),
        ConfigKey(
            "message.format.version",
            "message_format_version",
            ConfigType.STRING,
            parser=_parse_message_format_version,
            synonyms=(("log.message.format.version", 1),),
        ),
        ConfigKey(
            "message.timestamp.type",
            "message_timestamp_type",
            ConfigType.STRING,
            parser=_parse_timestamp_type,
            synonyms=(("log.message.timestamp.type", 1),),
        ),
        ConfigKey(
            "message.timestamp.difference.max.ms",
            "message_timestamp_difference_max_ms",
            _LONG,
            0,
            synonyms=(("log.message.timestamp.difference.max.ms", 1),),
        ),
        ConfigKey(
            "message.timestamp.before.max.ms",
            "message_timestamp_before_max_ms",
            _LONG,
            0,
            synonyms=(("log.message.timestamp.before.max.ms", 1),),
        ),
        ConfigKey(
            "message.timestamp.after.max.ms",
            "message_timestamp_after_max_ms",
            _LONG,
            0,
            synonyms=(("log.message.timestamp.after.max.ms", 1),),
        ),
        # Down-conversion turns magic-2 batches into magic 0/1 for fetches older than v4; the
        # Kafka door serves no such fetch, so either value leaves nothing to do.
        ConfigKey(
            "message.downconversion.enable",
            "message_downconversion_enable",
            ConfigType.BOOLEAN,
            synonyms=(("log.message.downconversion.enable", 1),),
        ),
        # The local.retention keys bound the local copy of a tiered log; Kafka accepts and
        # ignores them on a topic without remote storage, as every topic here is.
        ConfigKey(
            "local.retention.ms",
            "local_retention_ms",
            _LONG,
            -2,
            synonyms=(("log.local.retention.ms", 1),),
        ),
        ConfigKey(
            "local.retention.bytes",
            "local_retention_bytes",
            _LONG,
            -2,
            synonyms=(("log.local.retention.bytes", 1),),
        ),
        ConfigKey(
            "remote.storage.enable",
            "remote_storage_enable",
            ConfigType.BOOLEAN,
            parser=_off_only(False, _NO_TIERED_STORAGE),
        ),
        ConfigKey(
            "remote.log.copy.disable",
            "remote_log_copy_disable",
            ConfigType.BOOLEAN,
            parser=_off_only(False, _NO_TIERED_STORAGE),
        ),
        ConfigKey(
            "remote.log.delete.on.disable",
            "remote_log_delete_on_disable",
            ConfigType.BOOLEAN,
            parser=_off_only(False, _NO_TIERED_STORAGE),
        ),
        ConfigKey(
            "leader.replication.throttled.replicas",
            "leader_replication_throttled_replicas",
            ConfigType.LIST,
            parser=_parse_throttled_replicas,
        ),
        ConfigKey(
            "follower.replication.throttled.replicas",
            "follower_replication_throttled_replicas",
            ConfigType.LIST,
            parser=_parse_throttled_replicas,
        ),
    )
}


@dataclass(frozen=True)
class TopicConfig:
    """The settings of one topic (fields and keys in the module docstring), or, as a broker's
    ``log``, the defaults of every topic. Immutable: safe to share between threads."""

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
    compression_type: str = "producer"
    min_insync_replicas: int = 1
    unclean_leader_election_enable: bool = False
    compression_gzip_level: int = -1
    compression_lz4_level: int = 9
    compression_zstd_level: int = 3
    segment_jitter_ms: int = 0
    file_delete_delay_ms: int = 60_000
    preallocate: bool = False
    message_format_version: str = "3.0-IV1"
    message_timestamp_type: str = "CreateTime"
    message_timestamp_difference_max_ms: int = LONG_MAX
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_after_max_ms: int = LONG_MAX
    message_downconversion_enable: bool = True
    local_retention_ms: int = -2
    local_retention_bytes: int = -2
    remote_storage_enable: bool = False
    remote_log_copy_disable: bool = False
    remote_log_delete_on_disable: bool = False
    leader_replication_throttled_replicas: str = ""
    follower_replication_throttled_replicas: str = ""

    def __post_init__(self) -> None:
        # The table's bounds hold for a value built in code as for one read from properties.
        for key in TOPIC_KEY_SPECS.values():
            value = getattr(self, key.field)
            if key.type in _INTEGER_LIMITS and (
                not isinstance(value, int) or isinstance(value, bool)
            ):
                raise _invalid(key.name, value, f"not a number of type {key.type.name}")
            key.check(value)
        if not self.cleanup_policy <= _CLEANUP_POLICIES:
            raise _invalid(
                "cleanup.policy",
                sorted(self.cleanup_policy),
                "must be a subset of [compact, delete]",
            )
        ratio = self.min_cleanable_dirty_ratio
        if not isinstance(ratio, (int, float)) or isinstance(ratio, bool) or not 0 <= ratio <= 1:
            raise _invalid("min.cleanable.dirty.ratio", ratio, "must be between 0 and 1")

    @property
    def max_offset_index_entries(self) -> int:
        return self.segment_index_bytes // 8

    @property
    def max_time_index_entries(self) -> int:
        return self.segment_index_bytes // 12

    @property
    def recompression(self) -> Recompression | None:
        """The codec (and its compression.*.level) the leader rewrites produced batches in;
        None for ``producer``, which keeps the producer's."""
        if self.compression_type == "producer":
            return None
        if self.compression_type == "uncompressed":
            return Recompression(Compression.NONE)
        codec = Compression.parse(self.compression_type)
        level = {
            Compression.GZIP: None
            if self.compression_gzip_level == -1
            else self.compression_gzip_level,
            Compression.LZ4: self.compression_lz4_level,
            Compression.ZSTD: self.compression_zstd_level,
        }.get(codec)
        return Recompression(codec, level)

    @property
    def log_append_time(self) -> bool:
        """Whether the leader stamps batches with its clock (message.timestamp.type)."""
        return self.message_timestamp_type == "LogAppendTime"

    def timestamp_range(self, now_ms: int) -> tuple[int, int] | None:
        """The CreateTime timestamps a leader accepts at ``now_ms``, None for any. As Kafka, a
        before/after key left at its default falls back to the deprecated
        message.timestamp.difference.max.ms."""
        before = self.message_timestamp_before_max_ms
        if before == LONG_MAX:
            before = self.message_timestamp_difference_max_ms
        after = self.message_timestamp_after_max_ms
        if after == LONG_MAX:
            after = self.message_timestamp_difference_max_ms
        if before == LONG_MAX and after == LONG_MAX:
            return None
        return max(now_ms - before, -LONG_MAX - 1), min(now_ms + after, LONG_MAX)

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
        cls, props: Mapping[str, str], *, base: TopicConfig | None = None
    ) -> TopicConfig:
        """Build from ``server.properties``-style keys, topic-level or broker-level.

        Other keys are ignored (a broker's whole properties file may be passed). A topic key
        beats the broker key for the same field; for the time keys, as in Kafka, ``.ms`` beats
        ``.minutes`` beats ``.hours``. InvalidConfigError naming the key for a bad value.
        """
        changes: dict[str, Any] = {}
        for key in TOPIC_KEY_SPECS.values():
            name, scale, raw = key.lookup(props)
            if raw is not None:
                changes[key.field] = key.parse(name, raw, scale)
        return dataclasses.replace(base if base is not None else cls(), **changes)

    def to_properties(self) -> dict[str, str]:
        """Topic-level keys and values, as ``kafka-configs --describe`` would list them."""
        out: dict[str, str] = {}
        for key in TOPIC_KEY_SPECS.values():
            value = getattr(self, key.field)
            if isinstance(value, frozenset):
                out[key.name] = ",".join(sorted(value))
            elif isinstance(value, bool):
                out[key.name] = "true" if value else "false"
            elif key.type == ConfigType.DOUBLE:
                out[key.name] = repr(float(value))
            else:
                out[key.name] = str(value)
        return out


# Every topic key's name.
TOPIC_CONFIG_KEYS: frozenset[str] = frozenset(TOPIC_KEY_SPECS)
# topic key -> its broker keys, highest precedence first (Kafka's synonyms):
# "retention.ms" -> ("log.retention.ms", "log.retention.minutes", "log.retention.hours").
TOPIC_KEY_SYNONYMS: Mapping[str, tuple[str, ...]] = {
    name: key.synonym_names for name, key in TOPIC_KEY_SPECS.items()
}
# The broker-level keys that give topics their defaults (server.properties, dynamic configs).
BROKER_TOPIC_KEYS: frozenset[str] = frozenset(
    name for names in TOPIC_KEY_SYNONYMS.values() for name in names
)
# Every topic key and broker synonym -> its ConfigDef type.
TOPIC_KEY_TYPES: Mapping[str, ConfigType] = {
    name: key.type_of(name)
    for key in TOPIC_KEY_SPECS.values()
    for name, _ in key.keys_by_precedence()
}
