"""``Consumer``: kafka-python's shape over minikafka's gRPC brokers.

    from minikafka import Consumer
    consumer = Consumer("orders", bootstrap_servers="127.0.0.1:9092",
                        auto_offset_reset="earliest")
    for record in consumer:              # ConsumerRecord(topic, partition, offset, ...)
        ...                              # consumer.commit() here stores offset + 1
    batch = consumer.poll(timeout_ms=1000)   # {TopicPartition: [ConsumerRecord, ...]}

    group = Consumer("orders", bootstrap_servers=..., group_id="billing",
                     enable_auto_commit=False)
    for tp, records in group.poll(1000).items(): ...
    group.commit()                       # the positions of every assigned partition
    group.committed(TopicPartition("orders", 0))

    Consumer("out", isolation_level="read_committed")   # only committed transactions' records
    Consumer("orders", client_rack="eu-west-1a")  # fetch from a replica in this rack (KIP-392)

Facade -> fetcher (positions, Fetch to leaders, prefetch) and, with ``group_id``, the group
coordinator (coordinator.py: membership, heartbeats, commits). Without a group, a subscription
means every partition of the topics. With one, the group's assignor decides which partitions
this member gets; each rebalance revokes them all first (committing when auto commit is on,
then ``listener.on_partitions_revoked``), and new ones start from the group's committed
offsets, else from ``auto_offset_reset``. Auto commit (``enable_auto_commit``) commits the
positions every ``auto_commit_interval_ms`` from ``poll``, and on revoke and close. A position
is the offset after the last record given to the application: the end of what ``poll``
returned, or, while iterating, the record just handed out (``__iter__``). ``assign``
with a ``group_id`` also starts from committed offsets, and commits outside the group
(generation -1), as Kafka allows while the group has no members. Every
``metadata_max_age_ms`` a pattern subscription is matched again and the group's leader compares
partition counts with its last assignment; a change starts a rebalance.

Not thread-safe, like Kafka's consumer: one thread polls; ``close`` from another is allowed.
The group's heartbeat thread is internal.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from minikafka.client._channel import ChannelPool, parse_bootstrap_servers
from minikafka.client._log import event_logger
from minikafka.client._security import ClientSecurity
from minikafka.client.consumer.coordinator import (
    ConsumerCoordinator,
    ConsumerRebalanceListener,
    GroupSettings,
)
from minikafka.client.consumer.fetcher import (
    EARLIEST,
    LATEST,
    ConsumerRecord,
    FetchConfig,
    Fetcher,
    OffsetAndTimestamp,
)
from minikafka.client.consumer.group_metadata import ConsumerGroupMetadata
from minikafka.client.consumer.read_committed import isolation_level as parse_isolation_level
from minikafka.client.metadata import ClusterMetadata
from minikafka.proto.common import OffsetAndMetadata, TopicPartition
from minikafka.proto.errors import ErrorCode, InvalidConfigError, KafkaError, error_for_code

__all__ = ["Consumer", "ConsumerRebalanceListener", "OffsetAndMetadata"]

Deserializer = Callable[[bytes | None], Any]
CommitCallback = Callable[[dict[TopicPartition, OffsetAndMetadata], Exception | None], None]

_log = event_logger(__name__)


class Consumer:
    def __init__(
        self,
        *topics: str,
        bootstrap_servers: str | Sequence[str] = "127.0.0.1:9092",
        group_id: str | None = None,
        auto_offset_reset: str = "latest",
        enable_auto_commit: bool = True,
        auto_commit_interval_ms: int = 5_000,
        session_timeout_ms: int = 10_000,
        heartbeat_interval_ms: int = 3_000,
        max_poll_interval_ms: int = 300_000,
        partition_assignment_strategy: Sequence[str] = ("range",),
        retry_backoff_ms: int = 100,
        metadata_max_age_ms: int = 300_000,
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
        group_instance_id: str | None = None,
        security: ClientSecurity | Mapping[str, str] | None = None,
        isolation_level: str = "read_uncommitted",
        client_rack: str = "",
    ) -> None:
        """``isolation_level``: read_uncommitted (every record up to the high watermark) or
        read_committed (up to the last stable offset, without aborted transactions' records;
        end offsets are then last stable offsets), as Kafka's ``isolation.level``.
        ``client_rack``: this consumer's rack, Kafka's ``client.rack`` (KIP-392): brokers with
        a ``replica.selector.class`` send its fetches to a replica in that rack."""
        try:
            level = parse_isolation_level(isolation_level)
        except ValueError as exc:
            raise InvalidConfigError(str(exc)) from None
        if group_id == "":
            raise InvalidConfigError("group_id must not be empty (None for no group)")
        if auto_offset_reset not in ("earliest", "latest", "none"):
            raise InvalidConfigError(
                f"auto_offset_reset must be earliest, latest or none, not {auto_offset_reset!r}"
            )
        self.client_id = client_id
        self._max_poll_records = max_poll_records
        self._consumer_timeout_s = consumer_timeout_ms / 1000
        self._key_deserializer = key_deserializer
        self._value_deserializer = value_deserializer
        self._pool = ChannelPool(ClientSecurity.of(security), client_id)
        self._metadata = ClusterMetadata(
            self._pool,
            parse_bootstrap_servers(bootstrap_servers),
            request_timeout_ms=request_timeout_ms,
            metadata_max_age_ms=metadata_max_age_ms,
        )
        self._metadata_max_age_s = metadata_max_age_ms / 1000
        self._next_group_metadata_check = time.monotonic() + self._metadata_max_age_s
        self._fetcher = Fetcher(
            FetchConfig(
                fetch_max_wait_ms=fetch_max_wait_ms,
                fetch_min_bytes=fetch_min_bytes,
                fetch_max_bytes=fetch_max_bytes,
                max_partition_fetch_bytes=max_partition_fetch_bytes,
                request_timeout_ms=request_timeout_ms,
                retry_backoff_ms=retry_backoff_ms,
                auto_offset_reset=auto_offset_reset,
                check_crcs=check_crcs,
                isolation_level=level,
                client_rack=client_rack,
                metadata_max_age_ms=metadata_max_age_ms,
            ),
            self._metadata,
            self._pool,
        )
        self._subscription: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self._manual = False
        self._closed = False
        self._request_timeout_s = request_timeout_ms / 1000
        self.group_id = group_id
        self._group_instance_id = group_instance_id
        self._enable_auto_commit = enable_auto_commit and group_id is not None
        self._auto_commit_interval_s = auto_commit_interval_ms / 1000
        self._next_auto_commit = time.monotonic() + self._auto_commit_interval_s
        self._auto_commit_future: Future[None] | None = None
        self._listener: ConsumerRebalanceListener | None = None
        self._need_committed: set[TopicPartition] = set()  # positions still to initialize
        # While ``for record in consumer`` is handing out a polled batch: per partition, the
        # offset after the last record handed out (see __iter__).
        self._handed_out: dict[TopicPartition, int] = {}
        self._commit_executor: ThreadPoolExecutor | None = None
        self._coordinator: ConsumerCoordinator | None = None
        if group_id is not None:
            self._coordinator = ConsumerCoordinator(
                group_id,
                self._metadata,
                self._pool,
                GroupSettings(
                    session_timeout_ms=session_timeout_ms,
                    heartbeat_interval_ms=heartbeat_interval_ms,
                    max_poll_interval_ms=max_poll_interval_ms,
                    request_timeout_ms=request_timeout_ms,
                    retry_backoff_ms=retry_backoff_ms,
                    partition_assignment_strategy=tuple(partition_assignment_strategy),
                    client_id=client_id,
                    group_instance_id=group_instance_id,
                ),
                _Hooks(self),
            )
        if topics:
            self.subscribe(topics)

    # --- what to consume ------------------------------------------------------------------

    def subscribe(
        self,
        topics: Iterable[str] = (),
        pattern: str | None = None,
        listener: ConsumerRebalanceListener | None = None,
    ) -> None:
        """Consume ``topics`` (or topics matching ``pattern``): every partition without a
        group, the partitions the group assigns with one (``listener`` hears of changes)."""
        if self._manual:
            raise error_for_code(
                ErrorCode.INVALID_REQUEST, "subscribe after assign: call unsubscribe first"
            )
        topic_list = list(topics)
        if bool(topic_list) == bool(pattern):
            raise InvalidConfigError("subscribe needs topics or a pattern, not both")
        self._subscription = set(topic_list)
        self._pattern = re.compile(pattern) if pattern else None
        self._listener = listener
        self._refresh_subscription()
        if self._coordinator is not None:
            self._coordinator.request_rejoin()

    def subscription(self) -> set[str]:
        return set(self._subscription)

    def unsubscribe(self) -> None:
        if self._coordinator is not None and not self._manual:
            self._revoke()
            self._coordinator.maybe_leave_group("unsubscribe")
        self._subscription = set()
        self._pattern = None
        self._manual = False
        self._handed_out.clear()
        self._fetcher.assign([])

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        if self._subscription or self._pattern:
            raise error_for_code(
                ErrorCode.INVALID_REQUEST, "assign after subscribe: call unsubscribe first"
            )
        self._manual = True
        wanted = [TopicPartition(*tp) for tp in partitions]
        before = self._fetcher.assignment()
        self._forget_handed_out(set(before) - set(wanted))
        self._fetcher.assign(wanted)
        if self.group_id is not None:
            self._need_committed = {tp for tp in wanted if tp not in before} | (
                self._need_committed & set(wanted)
            )

    def assignment(self) -> set[TopicPartition]:
        return self._fetcher.assignment()

    def partitions_for_topic(self, topic: str, timeout_ms: int | None = None) -> set[int]:
        """The topic's partitions, waiting for its metadata up to ``timeout_ms`` (Kafka's
        default.api.timeout.ms, 60 s, when None)."""
        timeout_s = self._metadata_timeout() if timeout_ms is None else timeout_ms / 1000
        return set(self._metadata.wait_for_topic(topic, timeout_s))

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
        if self._coordinator is not None:
            self._metadata.add_topics(self._subscription)
            return  # the group assigns partitions
        partitions: list[TopicPartition] = []
        for topic in sorted(self._subscription):
            parts = self._metadata.wait_for_topic(topic, self._metadata_timeout())
            partitions.extend(TopicPartition(topic, p) for p in sorted(parts))
        self._fetcher.assign(partitions)

    # --- positions ------------------------------------------------------------------------

    def seek(self, partition: TopicPartition, offset: int) -> None:
        if offset < 0:
            raise InvalidConfigError(f"seek offset must be >= 0, not {offset}")
        tp = TopicPartition(*partition)
        self._fetcher.seek(tp, offset)
        self._forget_handed_out([tp])

    def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        chosen = [TopicPartition(*tp) for tp in partitions] or list(self.assignment())
        self._fetcher.reset_to(chosen, EARLIEST)
        self._forget_handed_out(chosen)

    def seek_to_end(self, *partitions: TopicPartition) -> None:
        chosen = [TopicPartition(*tp) for tp in partitions] or list(self.assignment())
        self._fetcher.reset_to(chosen, LATEST)
        self._forget_handed_out(chosen)

    def position(self, partition: TopicPartition) -> int:
        """The offset of the next record this consumer will give the application."""
        tp = TopicPartition(*partition)
        if tp in self._handed_out:
            return self._handed_out[tp]
        self._init_committed_positions()
        return self._fetcher.position(tp)

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
            if self._coordinator is not None:
                subscribed = not self._manual and (self._subscription or self._pattern)
                if subscribed:
                    self._maybe_check_group_metadata()
                joining = subscribed and bool(self._subscription)
                if joining and not self._coordinator.poll(deadline):
                    return {}
                self._maybe_auto_commit()
            self._init_committed_positions()
            records = self._fetcher.fetched_records(budget)
            if records:
                self._fetcher.send_fetches()  # prefetch while the caller works
                return self._deserialize(records)
            self._fetcher.send_fetches()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return {}
            if self._coordinator is not None:
                remaining = min(remaining, 0.2)  # notice a rebalance soon
            if self._fetcher.has_in_flight():
                self._fetcher.wait_for_fetches(remaining)
            else:
                time.sleep(min(remaining, 0.05))

    # --- groups: offsets and rebalances ---------------------------------------------------

    def _group(self) -> ConsumerCoordinator:
        if self._coordinator is None:
            raise InvalidConfigError("this needs a group_id")
        return self._coordinator

    def _current_offsets(self) -> dict[TopicPartition, OffsetAndMetadata]:
        """What a commit stores: every assigned partition's position after the last record
        given to the application (by poll, or one by one by the iterator)."""
        positions = self._fetcher.positions()
        positions.update((tp, o) for tp, o in self._handed_out.items() if tp in positions)
        return {tp: OffsetAndMetadata(offset) for tp, offset in positions.items()}

    def commit(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None
    ) -> None:
        """Commit ``offsets`` (default: the position of every assigned partition); blocks."""
        group = self._group()
        chosen = self._current_offsets() if offsets is None else _offsets(offsets)
        group.commit_sync(chosen, self._request_timeout_s)

    def commit_async(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
        callback: CommitCallback | None = None,
    ) -> Future[None]:
        """Commit in the background; ``callback(offsets, exception_or_None)`` when done."""
        group = self._group()
        chosen = self._current_offsets() if offsets is None else _offsets(offsets)
        if self._commit_executor is None:
            self._commit_executor = ThreadPoolExecutor(1, thread_name_prefix="commit")

        def run() -> None:
            error: Exception | None = None
            try:
                group.commit_sync(chosen, self._request_timeout_s)
            except Exception as exc:
                error = exc
            if callback is not None:
                callback(chosen, error)
            if error is not None:
                raise error

        return self._commit_executor.submit(run)

    def group_metadata(self) -> ConsumerGroupMetadata:
        """This member's group id, generation and member id, for a transactional producer's
        ``send_offsets_to_transaction`` (KIP-447: a member fenced by a rebalance cannot commit
        its transaction's offsets)."""
        group = self._group()
        return ConsumerGroupMetadata(
            group.group_id,
            group.generation,
            group.member_id,
            self._group_instance_id,
        )

    def committed(self, partition: TopicPartition) -> int | None:
        """The group's committed offset of ``partition``; None when it has none."""
        found = self._group().fetch_committed([TopicPartition(*partition)])
        value = found.get(TopicPartition(*partition))
        return None if value is None else value.offset

    def _maybe_check_group_metadata(self) -> None:
        """Every metadata.max.age.ms: topics newly matching the pattern, or a partition count
        that changed under the leader's assignment, start a rebalance (as Kafka's)."""
        if time.monotonic() < self._next_group_metadata_check:
            return
        self._next_group_metadata_check = time.monotonic() + self._metadata_max_age_s
        coordinator = self._group()
        try:
            if self._pattern is not None:
                before = set(self._subscription)
                self._refresh_subscription()
                if self._subscription != before:
                    _log.info(
                        "group.subscription_changed",
                        group_id=self.group_id,
                        topics=sorted(self._subscription),
                    )
                    coordinator.request_rejoin()
            self._metadata.update()
        except KafkaError as exc:  # try again at the next check
            _log.info("group.metadata_check_failed", error=str(exc))
            return
        coordinator.check_partition_counts()

    def _maybe_auto_commit(self) -> None:
        if not self._enable_auto_commit or time.monotonic() < self._next_auto_commit:
            return
        if self._auto_commit_future is not None and not self._auto_commit_future.done():
            return
        self._next_auto_commit = time.monotonic() + self._auto_commit_interval_s
        offsets = self._current_offsets()
        if offsets:
            self._auto_commit_future = self.commit_async(offsets, _log_auto_commit)

    def _init_committed_positions(self) -> None:
        """Positions of newly assigned partitions from the group's committed offsets."""
        if not self._need_committed or self._coordinator is None:
            return
        wanted = self._need_committed & self._fetcher.assignment()
        committed = self._coordinator.fetch_committed(wanted)
        for tp, value in committed.items():
            if value is not None:
                self._fetcher.seek(tp, value.offset)
        self._need_committed = set()

    def _revoke(self) -> None:
        """Before a rebalance: commit (auto commit), tell the listener, drop the partitions."""
        owned = self._fetcher.assignment()
        if self._enable_auto_commit and self._coordinator is not None:
            self._wait_auto_commit()
            offsets = self._current_offsets()
            try:
                self._coordinator.commit_sync(offsets, self._request_timeout_s)
            except Exception as exc:  # the rebalance goes on; the new owner rereads a little
                _log.warning(
                    "group.commit_on_revoke_failed", group_id=self.group_id, error=str(exc)
                )
        if self._listener is not None:
            self._listener.on_partitions_revoked(owned)
        self._handed_out.clear()
        self._fetcher.assign([])
        self._need_committed = set()

    def _assign_from_group(self, partitions: set[TopicPartition]) -> None:
        self._fetcher.assign(partitions)
        self._need_committed = set(partitions)
        self._init_committed_positions()
        if self._listener is not None:
            self._listener.on_partitions_assigned(set(partitions))

    def _wait_auto_commit(self) -> None:
        future = self._auto_commit_future
        if future is not None:
            with contextlib.suppress(Exception):  # logged by its callback
                future.result(timeout=self._request_timeout_s)

    def __iter__(self) -> Iterator[ConsumerRecord]:
        """Records one at a time, as kafka-python's iterator: each poll's records are handed
        out one by one, and the position (what ``commit`` and auto commit store) moves past a
        record when the record is handed out, not when the batch was polled. So a commit in
        the middle of a batch covers exactly the records the application has been given, and
        a crash after it loses none. Stopped early (``break``), the consumer goes back to the
        first record not handed out, for the next poll. Ends after ``consumer_timeout_ms``
        without records, or when the consumer is closed."""
        idle_since = time.monotonic()
        while not self._closed:
            batch = self.poll(timeout_ms=200)
            if not batch:
                if time.monotonic() - idle_since >= self._consumer_timeout_s:
                    return
                continue
            idle_since = time.monotonic()
            self._handed_out = {tp: records[0].offset for tp, records in batch.items()}
            try:
                for tp, records in batch.items():
                    for record in records:
                        if tp not in self._handed_out:
                            break  # sought, or no longer assigned: drop the rest
                        self._handed_out[tp] = record.offset + 1
                        yield record
                    self._handed_out.pop(tp, None)
            finally:
                if not self._closed:
                    assigned = self._fetcher.assignment()
                    for tp, offset in self._handed_out.items():
                        if tp in assigned:
                            self._fetcher.seek(tp, offset)
                self._handed_out = {}

    def _forget_handed_out(self, partitions: Iterable[TopicPartition]) -> None:
        """The iterator hands out no more of these partitions' polled records."""
        for tp in partitions:
            self._handed_out.pop(tp, None)

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

    def close(self, autocommit: bool = True) -> None:
        """Commit (auto commit), leave the group, release the connections."""
        if self._closed:
            return
        try:
            if self._coordinator is not None:
                if autocommit and self._enable_auto_commit:
                    self._wait_auto_commit()
                    try:
                        self._coordinator.commit_sync(
                            self._current_offsets(), self._request_timeout_s
                        )
                    except Exception as exc:
                        _log.warning("group.commit_on_close_failed", error=str(exc))
                self._coordinator.close(leave=not self._manual)
            if self._commit_executor is not None:
                self._commit_executor.shutdown(wait=True)
        finally:
            self._closed = True
            self._fetcher.close()
            self._pool.close()

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class _Hooks:
    """The coordinator's view of its Consumer (see MembershipHooks)."""

    def __init__(self, consumer: Consumer) -> None:
        self._consumer = consumer

    def subscribed_topics(self) -> set[str]:
        consumer = self._consumer
        return set() if consumer._manual else set(consumer._subscription)

    def on_revoke(self) -> None:
        self._consumer._revoke()

    def on_assign(self, partitions: set[TopicPartition]) -> None:
        self._consumer._assign_from_group(partitions)


def _offsets(
    offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
) -> dict[TopicPartition, OffsetAndMetadata]:
    return {
        TopicPartition(*tp): value
        if isinstance(value, OffsetAndMetadata)
        else OffsetAndMetadata(value)
        for tp, value in offsets.items()
    }


def _log_auto_commit(
    offsets: dict[TopicPartition, OffsetAndMetadata], error: Exception | None
) -> None:
    if error is not None:
        _log.warning("group.auto_commit_failed", error=str(error))
