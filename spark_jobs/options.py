"""Options of the ``minikafka`` source and sink, as Spark's Kafka source names them.

    bootstrap.servers (or kafka.bootstrap.servers)   "host:port,host:port"
    subscribe | subscribePattern | assign            exactly one; assign is JSON
                                                     {"topicA":[0,1],"topicB":[2]}
    startingOffsets / endingOffsets                  earliest | latest | JSON
                                                     {"topicA":{"0":23,"1":-2}} (-2 earliest,
                                                     -1 latest)
    startingTimestamp                                ms, for every partition
    startingOffsetsByTimestamp                       JSON {"topicA":{"0":1700000000000}}
    startingOffsetsByTimestampStrategy               error (default) | latest
    maxOffsetsPerTrigger                             streaming: offsets per micro-batch
    minPartitions                                    split offset ranges into this many tasks
    failOnDataLoss                                   true (default) | false
    includeHeaders                                   false (default) | true
    kafkaConsumer.pollTimeoutMs                      ms a task waits for data it planned to read
    kafka.isolation.level                            read_uncommitted (default) | read_committed:
                                                     "latest" is the last stable offset and
                                                     aborted transactions' records are skipped

Spark's option maps are case-insensitive; every lookup goes through ``get_option``.

Pure values and functions; safe from any thread.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from minikafka.proto.errors import UnknownTopicOrPartitionError

__all__ = [
    "EARLIEST",
    "LATEST",
    "OffsetSpec",
    "SourceOptions",
    "SourceOptionsError",
    "bootstrap_servers",
    "get_bool",
    "get_option",
    "parse_offset_spec",
    "parse_source_options",
    "require_partitions",
    "require_topics",
]

EARLIEST = -2
LATEST = -1

# "earliest" / "latest" for every partition, or {topic: {partition: offset or -2/-1}}
OffsetSpec = Literal["earliest", "latest"] | dict[str, dict[int, int]]


def require_topics(wanted: Iterable[str], existing: Iterable[str], where: str = "") -> None:
    """UNKNOWN_TOPIC_OR_PARTITION for the ``wanted`` topics not among ``existing``, worded as
    Kafka's Admin.describeTopics answers Spark's Kafka source ("Topic t not found."); ``where``
    (" in log dirs /d") says where the reader looked."""
    missing = sorted(set(wanted) - set(existing))
    if len(missing) == 1:
        raise UnknownTopicOrPartitionError(f"Topic {missing[0]} not found{where}.")
    if missing:
        raise UnknownTopicOrPartitionError(f"Topics {', '.join(missing)} not found{where}.")


def require_partitions(
    wanted: Iterable[tuple[str, int]], existing: Collection[tuple[str, int]], where: str = ""
) -> None:
    """UNKNOWN_TOPIC_OR_PARTITION for the ``wanted`` (topic, partition) pairs not among
    ``existing`` ("Partition t-3 not found.")."""
    missing = [tp for tp in wanted if tp not in existing]
    if missing:
        names = ", ".join(f"{topic}-{partition}" for topic, partition in missing)
        raise UnknownTopicOrPartitionError(f"Partition {names} not found{where}.")


class SourceOptionsError(ValueError):
    """An option is missing, contradictory or malformed (Spark reports it at analysis time)."""


@dataclass(frozen=True)
class SourceOptions:
    bootstrap_servers: str
    subscribe: tuple[str, ...] = ()
    subscribe_pattern: str | None = None
    assign: tuple[tuple[str, int], ...] = ()
    starting_offsets: OffsetSpec | None = None  # None: the mode's default
    ending_offsets: OffsetSpec = "latest"
    starting_timestamp: int | None = None
    starting_offsets_by_timestamp: dict[str, dict[int, int]] | None = None
    timestamp_strategy: str = "error"
    max_offsets_per_trigger: int | None = None
    min_partitions: int | None = None
    fail_on_data_loss: bool = True
    include_headers: bool = False
    poll_timeout_ms: int = 120_000
    isolation_level: str = "read_uncommitted"  # kafka.isolation.level

    def topic_matches(self, topic: str) -> bool:
        """Whether a subscription (names or pattern) covers ``topic``."""
        if self.subscribe:
            return topic in self.subscribe
        if self.subscribe_pattern is not None:
            return re.fullmatch(self.subscribe_pattern, topic) is not None
        return any(t == topic for t, _ in self.assign)


def get_option(options: Mapping[str, str], name: str) -> str | None:
    wanted = name.lower()
    for key, value in options.items():
        if key.lower() == wanted:
            return value
    return None


def get_bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    raw = get_option(options, name)
    if raw is None:
        return default
    if raw.strip().lower() not in ("true", "false"):
        raise SourceOptionsError(f"{name} must be true or false, not {raw!r}")
    return raw.strip().lower() == "true"


def _positive_int(options: Mapping[str, str], name: str) -> int | None:
    raw = get_option(options, name)
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise SourceOptionsError(f"{name} must be an integer, not {raw!r}") from None
    if value <= 0:
        raise SourceOptionsError(f"{name} must be positive, not {value}")
    return value


def bootstrap_servers(options: Mapping[str, str]) -> str:
    servers = get_option(options, "bootstrap.servers") or get_option(
        options, "kafka.bootstrap.servers"
    )
    if not servers:
        raise SourceOptionsError(
            "option bootstrap.servers (or kafka.bootstrap.servers) is required"
        )
    return servers


def _partition_json(raw: str, name: str) -> dict[str, dict[int, int]]:
    try:
        parsed = json.loads(raw)
        return {
            str(topic): {int(p): int(v) for p, v in parts.items()}
            for topic, parts in parsed.items()
        }
    except (ValueError, AttributeError, TypeError):
        raise SourceOptionsError(
            f'{name} must be earliest, latest or JSON like {{"topic":{{"0":23}}}}, not {raw!r}'
        ) from None


def parse_offset_spec(raw: str | None, name: str) -> OffsetSpec | None:
    if raw is None:
        return None
    word = raw.strip().lower()
    if word == "earliest" or word == "latest":
        return "earliest" if word == "earliest" else "latest"
    return _partition_json(raw, name)


def parse_source_options(options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """Check the options as Spark's KafkaSourceProvider does and return them typed."""
    strategies = [
        name for name in ("subscribe", "subscribePattern", "assign") if get_option(options, name)
    ]
    if len(strategies) != 1:
        raise SourceOptionsError(
            "exactly one of subscribe, subscribePattern or assign must be given, "
            f"not {strategies or 'none'}"
        )
    subscribe: tuple[str, ...] = ()
    pattern: str | None = None
    assign: tuple[tuple[str, int], ...] = ()
    if strategies[0] == "subscribe":
        subscribe = tuple(t.strip() for t in (get_option(options, "subscribe") or "").split(","))
        if not all(subscribe):
            raise SourceOptionsError(f"subscribe has an empty topic name: {subscribe}")
    elif strategies[0] == "subscribePattern":
        pattern = get_option(options, "subscribePattern")
        try:
            re.compile(pattern or "")
        except re.error as exc:
            raise SourceOptionsError(f"subscribePattern is not a regex: {exc}") from None
    else:
        raw = get_option(options, "assign") or ""
        try:
            assign = tuple(
                sorted((str(t), int(p)) for t, parts in json.loads(raw).items() for p in parts)
            )
        except (ValueError, AttributeError, TypeError):
            raise SourceOptionsError(
                f'assign must be JSON like {{"topicA":[0,1]}}, not {raw!r}'
            ) from None

    starting = parse_offset_spec(get_option(options, "startingOffsets"), "startingOffsets")
    ending = parse_offset_spec(get_option(options, "endingOffsets"), "endingOffsets")
    if streaming and ending is not None:
        raise SourceOptionsError("endingOffsets is for batch queries only")
    if not streaming:
        if starting == "latest":
            raise SourceOptionsError("startingOffsets=latest is for streaming queries only")
        if ending == "earliest":
            raise SourceOptionsError("endingOffsets=earliest is for streaming queries only")
        if isinstance(starting, dict) and any(
            v == LATEST for parts in starting.values() for v in parts.values()
        ):
            raise SourceOptionsError("startingOffsets for a batch query cannot use -1 (latest)")
        if isinstance(ending, dict) and any(
            v == EARLIEST for parts in ending.values() for v in parts.values()
        ):
            raise SourceOptionsError("endingOffsets cannot use -2 (earliest)")

    raw_ts = get_option(options, "startingTimestamp")
    starting_timestamp: int | None = None
    if raw_ts is not None:
        try:
            starting_timestamp = int(raw_ts)
        except ValueError:
            raise SourceOptionsError(f"startingTimestamp must be ms, not {raw_ts!r}") from None
    by_ts_raw = get_option(options, "startingOffsetsByTimestamp")
    by_ts = (
        _partition_json(by_ts_raw, "startingOffsetsByTimestamp") if by_ts_raw is not None else None
    )
    strategy = (get_option(options, "startingOffsetsByTimestampStrategy") or "error").lower()
    if strategy not in ("error", "latest"):
        raise SourceOptionsError(
            f"startingOffsetsByTimestampStrategy must be error or latest, not {strategy!r}"
        )
    poll_timeout = _positive_int(options, "kafkaConsumer.pollTimeoutMs")
    isolation = (get_option(options, "kafka.isolation.level") or "read_uncommitted").lower()
    if isolation not in ("read_uncommitted", "read_committed"):
        raise SourceOptionsError(
            f"kafka.isolation.level must be read_uncommitted or read_committed, not {isolation!r}"
        )
    return SourceOptions(
        bootstrap_servers=bootstrap_servers(options),
        subscribe=subscribe,
        subscribe_pattern=pattern,
        assign=assign,
        starting_offsets=starting,
        ending_offsets=ending or "latest",
        starting_timestamp=starting_timestamp,
        starting_offsets_by_timestamp=by_ts,
        timestamp_strategy=strategy,
        max_offsets_per_trigger=_positive_int(options, "maxOffsetsPerTrigger"),
        min_partitions=_positive_int(options, "minPartitions"),
        fail_on_data_loss=get_bool(options, "failOnDataLoss", True),
        include_headers=get_bool(options, "includeHeaders", False),
        poll_timeout_ms=poll_timeout or 120_000,
        isolation_level=isolation,
    )
