"""The consumer's fetcher: positions per partition, Fetch requests to leaders, decoded records.

One Fetch per leader carries every assigned partition that leader has, over the client's
RawData fetch stream (``ChannelPool.stream``: the answer's records arrive as raw bytes after a
protobuf header and are decoded in place). It long-polls on the broker (``fetch.max.wait.ms``
/ ``fetch.min.bytes``). While the application handles a poll's records, the next fetch is
already in flight: it is sent from the previous position as soon as a response is consumed
(prefetch). Fetches go to leaders and read up to the high watermark, so only committed
records come back. With ``isolation_level`` read_committed they read up to the last stable
offset instead, and the records of aborted transactions are dropped (read_committed.py, as
Kafka's Fetcher); ListOffsets' "latest" is then the LSO too. On
NOT_LEADER_OR_FOLLOWER and its relatives, the metadata is refreshed and the partition is
fetched from its new leader at the same position.

Fetching from the closest replica (KIP-392): with a ``client_rack`` every Fetch carries it as
``rack_id``. A leader whose broker has a ``replica.selector.class`` may answer a partition with
``preferred_read_replica``: the partition is then fetched from that broker (up to its high
watermark) until ``metadata_max_age_ms`` has passed, the broker is no longer in the metadata,
or a fetch from it fails (an error, OFFSET_OUT_OF_RANGE included, or an unreachable broker);
then from the leader again, which may name a replica again, as Kafka's Fetcher does. Without a
``client_rack`` no ``rack_id`` is sent, and brokers serve the consumer from leaders only (what
Kafka does for a Fetch before v11): a follower never answers it from its own high watermark.

Not thread-safe: the consumer's one polling thread owns it (as in Kafka's client).
"""

from __future__ import annotations

import queue
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import grpc

from minikafka.client._channel import RETRIABLE_STATUS, ChannelPool
from minikafka.client._retry import RetryLater, RetryPolicy
from minikafka.client.consumer.read_committed import READ_COMMITTED, drop_aborted
from minikafka.client.metadata import ClusterMetadata
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.common import Node, TopicPartition
from minikafka.proto.errors import (
    CorruptRecordError,
    ErrorCode,
    KafkaError,
    OffsetOutOfRangeError,
    error_for_code,
)
from minikafka.proto.raw_records import RawFetchResponse
from minikafka.proto.records import Header, RecordsReader

__all__ = ["ConsumerRecord", "Fetcher", "OffsetAndTimestamp"]

EARLIEST = -2
LATEST = -1


class ConsumerRecord(NamedTuple):
    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: bytes | None
    value: bytes | None
    headers: Sequence[Header]  # a tuple as fetched


class OffsetAndTimestamp(NamedTuple):
    offset: int
    timestamp: int


@dataclass
class _PartitionState:
    position: int | None = None  # next offset to return; None = reset by policy
    paused: bool = False
    high_watermark: int = -1
    last_stable_offset: int = -1
    leader_epoch: int = -1
    fetched: RecordsReader[ConsumerRecord] | None = None  # fetched, not yet returned
    # read_committed: where the fetched records end, aborted batches (dropped) included
    fetched_end: int = -1
    # KIP-392: the broker a leader sent this partition's fetches to, until (monotonic) when
    preferred_read_replica: int = -1
    preferred_until: float = 0.0


@dataclass(frozen=True)
class FetchConfig:
    fetch_max_wait_ms: int = 500
    fetch_min_bytes: int = 1
    fetch_max_bytes: int = 52_428_800
    max_partition_fetch_bytes: int = 1_048_576
    request_timeout_ms: int = 30_000
    retry_backoff_ms: int = 100  # between ListOffsets attempts, Kafka's retry.backoff.ms
    auto_offset_reset: str = "latest"  # latest | earliest | none
    check_crcs: bool = True
    isolation_level: int = 0  # 0 read_uncommitted, 1 read_committed
    client_rack: str = ""  # KIP-392: sent as the Fetch's rack_id
    metadata_max_age_ms: int = 300_000  # how long a preferred read replica is followed


class Fetcher:
    def __init__(self, config: FetchConfig, metadata: ClusterMetadata, pool: ChannelPool) -> None:
        self._config = config
        self._metadata = metadata
        self._pool = pool
        # overrun: ListOffsets is tried until its deadline has passed, as it always was
        self._retry = RetryPolicy(backoff_s=config.retry_backoff_ms / 1000, overrun=True)
        self._states: dict[TopicPartition, _PartitionState] = {}
        # leader id -> (the Fetch in flight, the position each partition was fetched from)
        self._in_flight: dict[int, tuple[Any, dict[TopicPartition, int | None]]] = {}
        # Per broker: until when (monotonic) a client quota throttles us (the answer's
        # throttle_time_ms): no fetch goes to it before then, as Kafka's consumer backs off.
        self._throttled_until: dict[int, float] = {}
        self._completed: queue.SimpleQueue[int] = queue.SimpleQueue()  # leader ids

    # --- assignment and positions ---------------------------------------------------------

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        wanted = set(partitions)
        self._states = {tp: self._states.get(tp) or _PartitionState() for tp in wanted}
        self._metadata.add_topics({tp.topic for tp in wanted})

    def assignment(self) -> set[TopicPartition]:
        return set(self._states)

    def _state(self, tp: TopicPartition) -> _PartitionState:
        state = self._states.get(tp)
        if state is None:
            raise error_for_code(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{tp} is not assigned to this consumer"
            )
        return state

    def seek(self, tp: TopicPartition, offset: int) -> None:
        state = self._state(tp)
        state.position = offset
        state.fetched = None

    def reset_to(self, partitions: Iterable[TopicPartition], timestamp: int) -> None:
        """Position at the earliest (-2) or latest (-1) offset, asking the leaders now."""
        parts = list(partitions)
        for tp, (offset, _) in self.list_offsets({tp: timestamp for tp in parts}).items():
            self.seek(tp, offset)

    def position(self, tp: TopicPartition) -> int:
        state = self._state(tp)
        if state.position is None:
            self._reset_missing([tp])
        assert state.position is not None
        return state.position

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self._state(tp).paused = True

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self._state(tp).paused = False

    def paused(self) -> set[TopicPartition]:
        return {tp for tp, s in self._states.items() if s.paused}

    def positions(self) -> dict[TopicPartition, int]:
        """The position of every assigned partition that has one (what a commit stores)."""
        return {tp: s.position for tp, s in self._states.items() if s.position is not None}

    def has_in_flight(self) -> bool:
        return bool(self._in_flight)

    def _reset_missing(self, partitions: Iterable[TopicPartition]) -> None:
        missing = [tp for tp in partitions if self._states[tp].position is None]
        if not missing:
            return
        policy = self._config.auto_offset_reset
        if policy not in ("earliest", "latest"):
            raise error_for_code(
                ErrorCode.OFFSET_OUT_OF_RANGE,
                f"no position for {', '.join(map(str, missing))} and auto.offset.reset=none",
            )
        self.reset_to(missing, EARLIEST if policy == "earliest" else LATEST)

    # --- ListOffsets ----------------------------------------------------------------------

    def list_offsets(
        self, query: dict[TopicPartition, int], timeout_s: float | None = None
    ) -> dict[TopicPartition, tuple[int, int]]:
        """``{tp: timestamp}`` -> ``{tp: (offset, timestamp)}`` from the leaders (-1, -1 when
        nothing matches), retrying leader moves every ``retry_backoff_ms`` until ``timeout_s``
        (request.timeout.ms by default) has passed; then the last retriable error is raised."""
        timeout_s = timeout_s if timeout_s is not None else self._config.request_timeout_ms / 1000
        deadline = time.monotonic() + timeout_s
        remaining = dict(query)
        answers: dict[TopicPartition, tuple[int, int]] = {}
        if not remaining:
            return answers
        self._metadata.add_topics({tp.topic for tp in query})

        def attempt() -> dict[TopicPartition, tuple[int, int]]:
            self._metadata.maybe_update()
            last_error = self._list_offsets_once(remaining, answers)
            if remaining:
                self._metadata.request_update()
                raise RetryLater(
                    last_error
                    or f"no leader answered ListOffsets for {sorted(map(str, remaining))}"
                )
            return answers

        return self._retry.call(attempt, deadline=deadline)

    def _list_offsets_once(
        self,
        remaining: dict[TopicPartition, int],
        answers: dict[TopicPartition, tuple[int, int]],
    ) -> KafkaError | None:
        """One ListOffsets to the leader of each partition in ``remaining``: each answer moves
        from ``remaining`` to ``answers``. Returns the last retriable error; raises any other."""
        by_node: dict[Node, list[TopicPartition]] = defaultdict(list)
        for tp in remaining:
            leader = self._metadata.leader_for(tp)
            if leader is not None:
                by_node[leader].append(tp)
        last_error: KafkaError | None = None
        for node, tps in by_node.items():
            by_topic: dict[str, list[TopicPartition]] = defaultdict(list)
            for tp in tps:
                by_topic[tp.topic].append(tp)
            request = pb.ListOffsetsRequest(
                replica_id=-1,
                isolation_level=self._config.isolation_level,
                topics=[
                    pb.ListOffsetsRequest.ListOffsetsTopic(
                        name=topic,
                        partitions=[
                            pb.ListOffsetsRequest.ListOffsetsPartition(
                                partition_index=tp.partition,
                                current_leader_epoch=-1,
                                timestamp=remaining[tp],
                            )
                            for tp in parts
                        ],
                    )
                    for topic, parts in by_topic.items()
                ],
            )
            try:
                response = pb_grpc.DataStub(self._pool.get(node.address)).ListOffsets(
                    request, timeout=self._config.request_timeout_ms / 1000
                )
            except grpc.RpcError as exc:
                if exc.code() not in RETRIABLE_STATUS:
                    raise
                self._metadata.request_update()
                continue
            for topic in response.topics:
                for part in topic.partitions:
                    tp = TopicPartition(topic.name, part.partition_index)
                    if part.error_code == ErrorCode.NONE:
                        answers[tp] = (part.offset, part.timestamp)
                        remaining.pop(tp, None)
                        continue
                    error = error_for_code(part.error_code, part.error_message)
                    if not error.retriable:
                        raise error
                    last_error = error
                    self._metadata.request_update()
        return last_error

    # --- fetching -------------------------------------------------------------------------

    def fetched_records(self, max_records: int) -> dict[TopicPartition, list[ConsumerRecord]]:
        out: dict[TopicPartition, list[ConsumerRecord]] = {}
        undecodable: KafkaError | None = None
        budget = max_records
        for tp, state in self._states.items():
            if budget <= 0:
                break
            fetched = state.fetched
            if state.paused or fetched is None:
                continue
            try:
                taken = fetched.read(budget)  # decoded now, a poll's worth at a time
            except KafkaError as exc:
                # Raised once no partition has records to give: the reader keeps the error,
                # so nothing is skipped and other partitions' records are not held back.
                undecodable = undecodable or _undecodable(tp, state.position, exc)
                continue
            if taken:
                out[tp] = taken
                state.position = taken[-1].offset + 1
                budget -= len(taken)
            try:
                exhausted = fetched.exhausted
            except KafkaError:
                exhausted = False  # the reader keeps the error: the next poll raises it
            if exhausted:
                state.fetched = None
                # Past batches without records too (a compacted log has them, and aborted
                # transactions), as Kafka's consumer moves to the next batch's offset.
                state.position = max(state.position or 0, fetched.next_offset, state.fetched_end)
        if undecodable is not None and not out:
            raise undecodable
        return out

    def send_fetches(self) -> None:
        """One Fetch per leader for its fetchable partitions, unless one is already in flight."""
        fetchable = [tp for tp, s in self._states.items() if not s.paused and s.fetched is None]
        self._reset_missing(fetchable)
        self._metadata.maybe_update()
        by_node: dict[Node, list[TopicPartition]] = defaultdict(list)
        for tp in fetchable:
            target = self._fetch_target(tp)
            if target is None:
                self._metadata.request_update()
            elif target.id not in self._in_flight and not self._throttled(target.id):
                by_node[target].append(tp)
        for node, tps in by_node.items():
            if all(self._caught_up(tp) for tp in tps) and self._holds_records_from(node):
                # Only partitions with nothing new: the broker would park this fetch for
                # fetch.max.wait.ms, and the next fetch of the node's partitions that still
                # hold records would wait behind it. They go together once those are drained.
                continue
            by_topic: dict[str, list[TopicPartition]] = defaultdict(list)
            for tp in tps:
                by_topic[tp.topic].append(tp)
            request = pb.FetchRequest(
                replica_id=-1,
                replica_epoch=-1,
                rack_id=self._config.client_rack or None,
                isolation_level=self._config.isolation_level,
                max_wait_ms=self._config.fetch_max_wait_ms,
                min_bytes=self._config.fetch_min_bytes,
                max_bytes=self._config.fetch_max_bytes,
                topics=[
                    pb.FetchRequest.FetchTopic(
                        topic=topic,
                        partitions=[
                            pb.FetchRequest.FetchPartition(
                                partition=tp.partition,
                                current_leader_epoch=-1,
                                fetch_offset=self._states[tp].position or 0,
                                last_fetched_epoch=-1,
                                log_start_offset=-1,
                                partition_max_bytes=self._config.max_partition_fetch_bytes,
                            )
                            for tp in parts
                        ],
                    )
                    for topic, parts in by_topic.items()
                ],
            )
            timeout = (self._config.request_timeout_ms + self._config.fetch_max_wait_ms) / 1000
            future = self._pool.stream(node.address, "FetchStream").send(request, timeout=timeout)
            self._in_flight[node.id] = (future, {tp: self._states[tp].position for tp in tps})
            future.add_done_callback(self._on_done(node.id))

    def _fetch_target(self, tp: TopicPartition) -> Node | None:
        """Where ``tp`` is fetched from: its preferred read replica while that holds (module
        docstring), else its leader (None: unknown for now)."""
        state = self._states[tp]
        if state.preferred_read_replica >= 0:
            node = self._metadata.node(state.preferred_read_replica)
            if node is not None and time.monotonic() < state.preferred_until:
                return node
            state.preferred_read_replica = -1
        return self._metadata.leader_for(tp)

    def _throttled(self, node_id: int) -> bool:
        return self._throttled_until.get(node_id, 0.0) > time.monotonic()

    def _caught_up(self, tp: TopicPartition) -> bool:
        """Fetched up to the high watermark (read_committed: the last stable offset) of the last
        response: nothing new to fetch yet."""
        state = self._states[tp]
        end = (
            state.last_stable_offset
            if self._config.isolation_level == READ_COMMITTED
            else state.high_watermark
        )
        return state.position is not None and 0 <= end <= state.position

    def _holds_records_from(self, node: Node) -> bool:
        """Some partition led by ``node`` has fetched records the application has not had."""
        return any(
            state.fetched is not None
            and not state.paused
            and (target := self._fetch_target(tp)) is not None
            and target.id == node.id
            for tp, state in self._states.items()
        )

    def _on_done(self, node_id: int) -> Callable[[object], None]:
        def done(_: object) -> None:
            self._completed.put(node_id)

        return done

    def wait_for_fetches(self, timeout_s: float) -> None:
        """Handle fetch responses that arrive within ``timeout_s`` (at least the first one)."""
        if not self._in_flight:
            return
        try:
            node_id = self._completed.get(timeout=max(timeout_s, 0))
        except queue.Empty:
            return
        while True:
            if node_id in self._in_flight:
                self._handle(node_id)
            try:
                node_id = self._completed.get_nowait()
            except queue.Empty:
                return

    def _handle(self, node_id: int) -> None:
        future, sent = self._in_flight.pop(node_id)
        try:
            response: RawFetchResponse = future.result()
        except grpc.RpcError as exc:
            if exc.code() not in RETRIABLE_STATUS:
                raise
            for tp in sent:  # back to the leader: a preferred replica may be down
                if tp in self._states:
                    self._states[tp].preferred_read_replica = -1
            self._metadata.request_update()
            return
        # RawData's framing (proto/raw_records.py): each partition's records are a slice of
        # the answer, in the header's order.
        header, all_records = response
        if header.throttle_time_ms > 0:
            self._throttled_until[node_id] = time.monotonic() + header.throttle_time_ms / 1000
        records_of = iter(all_records)
        for topic in header.responses:
            for part in topic.partitions:
                records = next(records_of)
                tp = TopicPartition(topic.topic, part.partition_index)
                state = self._states.get(tp)
                if state is None or tp not in sent or state.position != sent[tp]:
                    continue  # unassigned or sought meanwhile: drop what was fetched
                if part.error_code != ErrorCode.NONE:
                    self._partition_error(
                        tp, error_for_code(part.error_code, part.error_message), node_id
                    )
                    continue
                state.high_watermark = part.high_watermark
                state.last_stable_offset = part.last_stable_offset
                if part.HasField("preferred_read_replica") and part.preferred_read_replica >= 0:
                    state.preferred_read_replica = part.preferred_read_replica
                    state.preferred_until = (
                        time.monotonic() + self._config.metadata_max_age_ms / 1000
                    )
                    continue  # no records: the next fetch goes there
                state.fetched_end = -1
                if self._config.isolation_level == READ_COMMITTED and part.aborted_transactions:
                    records, state.fetched_end = drop_aborted(
                        records,
                        [(a.producer_id, a.first_offset) for a in part.aborted_transactions],
                    )
                fetched = RecordsReader(
                    records,
                    ConsumerRecord,
                    (tp.topic, tp.partition),
                    from_offset=state.position or 0,
                    verify_crc=self._config.check_crcs,
                )
                try:
                    exhausted = fetched.exhausted
                except KafkaError:
                    exhausted = False  # the reader keeps the error: the poll raises it
                if exhausted:
                    state.fetched = None
                    state.position = max(
                        state.position or 0, fetched.next_offset, state.fetched_end
                    )
                else:
                    state.fetched = fetched

    def _partition_error(self, tp: TopicPartition, error: KafkaError, node_id: int) -> None:
        state = self._states[tp]
        leader = self._metadata.leader_for(tp)
        if state.preferred_read_replica >= 0 or leader is None or leader.id != node_id:
            # As Kafka's Fetcher: any error from a preferred read replica (OFFSET_OUT_OF_RANGE
            # included: a follower may lag the leader) sends the partition back to its leader,
            # and so does one from a broker that no longer leads it.
            state.preferred_read_replica = -1
            if (
                isinstance(error, OffsetOutOfRangeError)
                or error.retriable
                or error.invalid_metadata
            ):
                if leader is None or leader.id == node_id:
                    self._metadata.request_update()
                return
        if isinstance(error, OffsetOutOfRangeError):
            if self._config.auto_offset_reset in ("earliest", "latest"):
                self._states[tp].position = None
                return
            raise error
        if isinstance(error, CorruptRecordError):
            # Retriable for a producer, not for a reader: fetching again reads the same
            # damaged batch. As Kafka's consumer: raised, position left at the bad offset.
            raise _undecodable(tp, self._states[tp].position, error)
        if error.retriable or error.invalid_metadata:
            self._metadata.request_update()
            return
        raise error

    def close(self) -> None:
        for future, _ in self._in_flight.values():
            future.cancel()
        self._in_flight.clear()


def _undecodable(tp: TopicPartition, position: int | None, error: KafkaError) -> KafkaError:
    """A fetched batch that does not decode (a bad CRC, an unknown codec, broken records):
    the same error, naming the partition and offset, as Kafka's consumer says where it stopped.
    The records before the batch have been returned and the position stays at the batch, so
    every poll raises this again until a seek past it."""
    return type(error)(
        f"cannot read {tp.topic}-{tp.partition} at offset {position}: {error.message}; "
        "seek past the record to continue consumption"
    )
