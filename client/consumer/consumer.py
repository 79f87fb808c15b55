"""``Consumer``: kafka-python's shape over minikafka's gRPC brokers.

    from minikafka import Consumer
    consumer = Consumer("orders", bootstrap_servers="127.0.0.1:9092",
                        auto_offset_reset="earliest")
    for record in consumer:              # ConsumerRecord(topic, partition, offset, ...)
        ...
    batch = consumer.poll(timeout_ms=1000)   # {TopicPartition: [ConsumerRecord, ...]}

Facade -> fetcher (positions, Fetch to leaders, prefetch). Consumer groups (``group_id``:
subscription managed by a coordinator, committed offsets) are not built yet: without a group, a
subscription means every partition of the topics, and positions start from
``auto_offset_reset``.

Not thread-safe, like Kafka's consumer: one thread polls; ``close`` from another is allowed.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from client._channel import ChannelPool, parse_bootstrap_servers
from client.consumer.fetcher import (
    EARLIEST,
    LATEST,
    ConsumerRecord,
    FetchConfig,
    Fetcher,
    OffsetAndTimestamp,
)
from client.metadata import ClusterMetadata, TopicPartition
from proto.errors import ErrorCode, InvalidConfigError, error_for_code

__all__ = ["Consumer"]

Deserializer = Callable[[bytes | None], Any]


class Consumer:
    def __init__(
        self,
        *topics: str,
        bootstrap_servers: str | Sequence[str] = "127.0.0.1:9092",
        group_id: str | None = None,
        auto_offset_reset: str = "latest",
        fetch_max_wait_ms: int = 500,
        fetch_min_bytes: int = 1,
        fetch_max_bytes: int = 52_428_800,
        max_partition_fetch_bytes: int = 1_048_576,
        max_poll_records: int = 500,
        request_timeout_ms: int = 30_000,
        consumer_timeout_ms: float = float("inf"),
        check_crcs: bool = True,
        key_deserializer: Deserializer | None = None,
        value_deserializer: Deserializer | None = None,
        client_id: str = "minikafka-consumer",
    ) -> None:
        if group_id is not None:
            raise InvalidConfigError("consumer groups (group_id) are not supported yet")
        if auto_offset_reset not in ("earliest", "latest", "none"):
            raise InvalidConfigError(
                f"auto_offset_reset must be earliest, latest or none, not {auto_offset_reset!r}"
            )
        self.client_id = client_id
        self._max_poll_records = max_poll_records
        self._consumer_timeout_s = consumer_timeout_ms / 1000
        self._key_deserializer = key_deserializer
        self._value_deserializer = value_deserializer
        self._pool = ChannelPool()
        self._metadata = ClusterMetadata(
            self._pool,
            parse_bootstrap_servers(bootstrap_servers),
            request_timeout_ms=request_timeout_ms,
        )
        self._fetcher = Fetcher(
            FetchConfig(
                fetch_max_wait_ms=fetch_max_wait_ms,
                fetch_min_bytes=fetch_min_bytes,
                fetch_max_bytes=fetch_max_bytes,
                max_partition_fetch_bytes=max_partition_fetch_bytes,
                request_timeout_ms=request_timeout_ms,
                auto_offset_reset=auto_offset_reset,
                check_crcs=check_crcs,
            ),
            self._metadata,
            self._pool,
        )
        self._subscription: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self._manual = False
        self._closed = False
        if topics:
            self.subscribe(topics)

    # --- what to consume ------------------------------------------------------------------

    def subscribe(self, topics: Iterable[str] = (), pattern: str | None = None) -> None:
        """Consume every partition of ``topics`` (or of topics matching ``pattern``)."""
        if self._manual:
            raise error_for_code(
                ErrorCode.INVALID_REQUEST, "subscribe after assign: call unsubscribe first"
            )
        topic_list = list(topics)
        if bool(topic_list) == bool(pattern):
            raise InvalidConfigError("subscribe needs topics or a pattern, not both")
        self._subscription = set(topic_list)
        self._pattern = re.compile(pattern) if pattern else None
        self._refresh_subscription()

    def subscription(self) -> set[str]:
        return set(self._subscription)

    def unsubscribe(self) -> None:
        self._subscription = set()
        self._pattern = None
        self._manual = False
        self._fetcher.assign([])

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        if self._subscription or self._pattern:
            raise error_for_code(
                ErrorCode.INVALID_REQUEST, "assign after subscribe: call unsubscribe first"
            )
        self._manual = True
        self._fetcher.assign(TopicPartition(*tp) for tp in partitions)

    def assignment(self) -> set[TopicPartition]:
        return self._fetcher.assignment()

    def partitions_for_topic(self, topic: str) -> set[int]:
        return set(self._metadata.wait_for_topic(topic, self._metadata_timeout()))

    def topics(self) -> set[str]:
        """Every topic in the cluster."""
        return set(self._metadata.list_topics())

    def _metadata_timeout(self) -> float:
        return 60.0

    def _refresh_subscription(self) -> None:
        if self._manual:
            return
        if self._pattern is not None:
            names = self._metadata.list_topics()
            self._subscription = {t for t in names if self._pattern.fullmatch(t)}
        partitions: list[TopicPartition] = []
        for topic in sorted(self._subscription):
            parts = self._metadata.wait_for_topic(topic, self._metadata_timeout())
            partitions.extend(TopicPartition(topic, p) for p in sorted(parts))
        self._fetcher.assign(partitions)

    # --- positions ------------------------------------------------------------------------

    def seek(self, partition: TopicPartition, offset: int) -> None:
        if offset < 0:
            raise InvalidConfigError(f"seek offset must be >= 0, not {offset}")
        self._fetcher.seek(TopicPartition(*partition), offset)

    def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        self._fetcher.reset_to(partitions or self.assignment(), EARLIEST)

    def seek_to_end(self, *partitions: TopicPartition) -> None:
        self._fetcher.reset_to(partitions or self.assignment(), LATEST)

    def position(self, partition: TopicPartition) -> int:
        return self._fetcher.position(TopicPartition(*partition))

    def beginning_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        answers = self._fetcher.list_offsets({TopicPartition(*tp): EARLIEST for tp in partitions})
        return {tp: offset for tp, (offset, _) in answers.items()}

    def end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        answers = self._fetcher.list_offsets({TopicPartition(*tp): LATEST for tp in partitions})
        return {tp: offset for tp, (offset, _) in answers.items()}

    def offsets_for_times(
        self, timestamps: dict[TopicPartition, int]
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        for tp, ts in timestamps.items():
            if ts < 0:
                raise InvalidConfigError(f"timestamp for {tp} must be >= 0, not {ts}")
        answers = self._fetcher.list_offsets(
            {TopicPartition(*tp): ts for tp, ts in timestamps.items()}
        )
        return {
            tp: None if offset < 0 else OffsetAndTimestamp(offset, ts)
            for tp, (offset, ts) in answers.items()
        }

    def pause(self, *partitions: TopicPartition) -> None:
        self._fetcher.pause(TopicPartition(*tp) for tp in partitions)

    def resume(self, *partitions: TopicPartition) -> None:
        self._fetcher.resume(TopicPartition(*tp) for tp in partitions)

    def paused(self) -> set[TopicPartition]:
        return self._fetcher.paused()

    # --- polling --------------------------------------------------------------------------

    def poll(
        self, timeout_ms: int = 0, max_records: int | None = None
    ) -> dict[TopicPartition, list[ConsumerRecord]]:
        """Records fetched since the last poll, waiting up to ``timeout_ms`` for some."""
        if self._closed:
            raise error_for_code(ErrorCode.INVALID_REQUEST, "poll on a closed consumer")
        budget = max_records or self._max_poll_records
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            records = self._fetcher.fetched_records(budget)
            if records:
                self._fetcher.send_fetches()  # prefetch while the caller works
                return self._deserialize(records)
            self._fetcher.send_fetches()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return {}
            self._fetcher.wait_for_fetches(remaining)

    def __iter__(self) -> Iterator[ConsumerRecord]:
        idle_since = time.monotonic()
        while not self._closed:
            batch = self.poll(timeout_ms=200)
            if not batch:
                if time.monotonic() - idle_since >= self._consumer_timeout_s:
                    return
                continue
            idle_since = time.monotonic()
            for records in batch.values():
                yield from records

    def _deserialize(
        self, records: dict[TopicPartition, list[ConsumerRecord]]
    ) -> dict[TopicPartition, list[ConsumerRecord]]:
        if self._key_deserializer is None and self._value_deserializer is None:
            return records
        kd = self._key_deserializer or (lambda b: b)
        vd = self._value_deserializer or (lambda b: b)
        return {
            tp: [r._replace(key=kd(r.key), value=vd(r.value)) for r in recs]
            for tp, recs in records.items()
        }

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._fetcher.close()
        self._pool.close()

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
