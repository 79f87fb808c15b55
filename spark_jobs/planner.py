"""Driver-side planning: which topic-partitions, which offsets, how many tasks.

    client = OffsetsClient(options.bootstrap_servers)       # a group-less minikafka Consumer
    tps = client.topic_partitions(options)                  # subscribe / pattern / assign
    start = resolve_offsets(client, tps, spec, options)     # {TopicPartition: offset}
    ranges = split_ranges(offset_ranges(start, end), options.min_partitions)

Offsets come from ListOffsets at the leaders: -2 is the log start offset, -1 the high watermark
(so a batch read never waits for records that are not committed yet). ``rate_limit`` is Spark's
maxOffsetsPerTrigger: the limit shared among partitions in proportion to what each has waiting.

The functions take any ``OffsetsView`` (tests pass a fake); ``OffsetsClient`` is the real one.
An OffsetsClient is not thread-safe (it wraps one Consumer); the functions are pure otherwise.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from minikafka.client.consumer.consumer import Consumer
from minikafka.proto.common import TopicPartition
from minikafka.spark.options import (
    EARLIEST,
    LATEST,
    OffsetSpec,
    SourceOptions,
    SourceOptionsError,
    require_partitions,
    require_topics,
)

__all__ = [
    "OffsetRange",
    "OffsetsClient",
    "OffsetsView",
    "offset_ranges",
    "rate_limit",
    "resolve_offsets",
    "split_ranges",
]


@dataclass(frozen=True, order=True)
class OffsetRange:
    """Offsets [from_offset, until_offset) of one partition: what one Spark task reads."""

    topic: str
    partition: int
    from_offset: int
    until_offset: int

    @property
    def size(self) -> int:
        return max(self.until_offset - self.from_offset, 0)


class OffsetsView(Protocol):
    def topic_partitions(
        self, options: SourceOptions, *, require_existing: bool = False
    ) -> list[TopicPartition]: ...
    def beginning_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]: ...
    def end_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]: ...
    def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, int | None]: ...


class OffsetsClient:
    """Metadata and ListOffsets through one group-less Consumer (not thread-safe)."""

    def __init__(self, bootstrap_servers: str, isolation_level: str = "read_uncommitted") -> None:
        """``isolation_level`` read_committed: "latest" is each partition's last stable
        offset (Spark's Kafka source with kafka.isolation.level=read_committed)."""
        self._consumer = Consumer(
            bootstrap_servers=bootstrap_servers,
            enable_auto_commit=False,
            request_timeout_ms=30_000,
            isolation_level=isolation_level,
        )

    def topic_partitions(
        self, options: SourceOptions, *, require_existing: bool = False
    ) -> list[TopicPartition]:
        """The partitions the options name. With ``require_existing`` (a query's first plan),
        a subscribed or assigned topic or partition that does not exist is
        UNKNOWN_TOPIC_OR_PARTITION, as Kafka's Admin.describeTopics answers Spark's Kafka
        source; a pattern that matches nothing is no partitions. Later plans of a stream let
        deleted topics through to the failOnDataLoss checks."""
        if options.assign and not require_existing:
            return [TopicPartition(t, p) for t, p in options.assign]
        existing = self._consumer.topics()
        if require_existing:
            require_topics([*options.subscribe, *(t for t, _ in options.assign)], existing)
        if options.assign:
            wanted = [TopicPartition(t, p) for t, p in options.assign]
            require_partitions(
                wanted,
                {
                    TopicPartition(topic, p)
                    for topic in {tp.topic for tp in wanted}
                    for p in self._consumer.partitions_for_topic(topic)
                },
            )
            return wanted
        topics = sorted(t for t in existing if options.topic_matches(t))
        return [
            TopicPartition(topic, p)
            for topic in topics
            for p in sorted(self._consumer.partitions_for_topic(topic))
        ]

    def topic_partitions_of(self, topics: Iterable[str]) -> list[TopicPartition]:
        """The partitions of those ``topics`` that exist now."""
        existing = set(self._consumer.topics())
        return [
            TopicPartition(topic, p)
            for topic in sorted(set(topics) & existing)
            for p in sorted(self._consumer.partitions_for_topic(topic))
        ]

    def beginning_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        wanted = list(tps)
        return self._consumer.beginning_offsets(wanted) if wanted else {}

    def end_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        wanted = list(tps)
        return self._consumer.end_offsets(wanted) if wanted else {}

    def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, int | None]:
        if not timestamps:
            return {}
        found = self._consumer.offsets_for_times(dict(timestamps))
        return {tp: None if v is None else v.offset for tp, v in found.items()}

    def close(self) -> None:
        self._consumer.close()

    def __enter__(self) -> OffsetsClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def resolve_offsets(
    view: OffsetsView,
    tps: Sequence[TopicPartition],
    spec: OffsetSpec,
    options: SourceOptions | None = None,
    *,
    use_timestamps: bool = False,
) -> dict[TopicPartition, int]:
    """Concrete offsets for ``tps``: "earliest"/"latest", or per-partition JSON where -2/-1
    mean earliest/latest. With ``use_timestamps`` the options' startingTimestamp or
    startingOffsetsByTimestamp win, as in Spark (timestamp > offsets)."""
    if use_timestamps and options is not None:
        by_ts = _timestamps_for(tps, options)
        if by_ts is not None:
            return _offsets_by_timestamp(view, tps, by_ts, options.timestamp_strategy)
    if spec == "earliest":
        return view.beginning_offsets(tps)
    if spec == "latest":
        return view.end_offsets(tps)
    wanted: dict[TopicPartition, int] = {}
    for tp in tps:
        value = spec.get(tp.topic, {}).get(tp.partition)
        if value is None:
            raise SourceOptionsError(
                f"the offsets JSON has no offset for {tp} (every partition needs one)"
            )
        wanted[tp] = value
    earliest = view.beginning_offsets([tp for tp, v in wanted.items() if v == EARLIEST])
    latest = view.end_offsets([tp for tp, v in wanted.items() if v == LATEST])
    return {tp: earliest.get(tp, latest.get(tp, v)) for tp, v in wanted.items()}


def _timestamps_for(
    tps: Sequence[TopicPartition], options: SourceOptions
) -> dict[TopicPartition, int] | None:
    if options.starting_offsets_by_timestamp is not None:
        spec = options.starting_offsets_by_timestamp
        missing = [tp for tp in tps if tp.partition not in spec.get(tp.topic, {})]
        if missing:
            raise SourceOptionsError(f"startingOffsetsByTimestamp has no timestamp for {missing}")
        return {tp: spec[tp.topic][tp.partition] for tp in tps}
    if options.starting_timestamp is not None:
        return dict.fromkeys(tps, options.starting_timestamp)
    return None


def _offsets_by_timestamp(
    view: OffsetsView,
    tps: Sequence[TopicPartition],
    timestamps: Mapping[TopicPartition, int],
    strategy: str,
) -> dict[TopicPartition, int]:
    found = view.offsets_for_times(timestamps)
    missing = [tp for tp in tps if found.get(tp) is None]
    if missing and strategy == "error":
        raise SourceOptionsError(
            f"no offset matches the starting timestamp for {sorted(map(str, missing))} "
            "(startingOffsetsByTimestampStrategy=latest starts them at the latest offset)"
        )
    latest = view.end_offsets(missing)
    chosen: dict[TopicPartition, int] = {}
    for tp in tps:
        offset = found.get(tp)
        chosen[tp] = latest[tp] if offset is None else offset  # offset 0 is an answer
    return chosen


def offset_ranges(
    start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int]
) -> list[OffsetRange]:
    """One range per partition present in both maps (empty ranges left out)."""
    ranges = [
        OffsetRange(tp.topic, tp.partition, start[tp], end[tp])
        for tp in sorted(end)
        if tp in start and end[tp] > start[tp]
    ]
    return ranges


def split_ranges(ranges: Sequence[OffsetRange], min_partitions: int | None) -> list[OffsetRange]:
    """Split ranges so there are at least ``min_partitions`` of them, each partition's share in
    proportion to its size (Spark's KafkaOffsetRangeCalculator)."""
    if not min_partitions or len(ranges) >= min_partitions:
        return list(ranges)
    total = sum(r.size for r in ranges)
    if total == 0:
        return list(ranges)
    out: list[OffsetRange] = []
    for r in ranges:
        parts = max(1, round(r.size / total * min_partitions))
        parts = min(parts, r.size)
        step = r.size / parts
        bounds = [r.from_offset + math.floor(step * i) for i in range(parts)] + [r.until_offset]
        out.extend(
            OffsetRange(r.topic, r.partition, lo, hi)
            for lo, hi in itertools.pairwise(bounds)
            if hi > lo
        )
    return out


def rate_limit(
    start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int], limit: int
) -> dict[TopicPartition, int]:
    """Spark's maxOffsetsPerTrigger: at most ``limit`` offsets in all, prorated by backlog.

    A partition whose share is below one offset still moves by one (ceil), so a slow partition
    is never starved; larger shares round down.
    """
    backlog = {tp: max(end[tp] - start.get(tp, end[tp]), 0) for tp in end}
    total = sum(backlog.values())
    if total <= limit:
        return dict(end)
    out: dict[TopicPartition, int] = {}
    for tp, until in end.items():
        begin = start.get(tp, until)
        prorate = limit * backlog[tp] / total
        step = math.ceil(prorate) if prorate < 1 else math.floor(prorate)
        out[tp] = min(begin + step, until)
    return out
