"""Fetching from a partition leader: a generic fetch loop with hooks, and the follower's hooks.

Kafka's shape (AbstractFetcherThread / ReplicaFetcherThread):

* ``AbstractFetcher`` owns one asyncio task per source broker and a small value type per
  partition (``PartitionFetchState``: fetch offset, the leader epoch it fetches under, TRUNCATING
  or FETCHING, and a back-off deadline). Each round it first resolves the partitions that must
  truncate (OffsetsForLeaderEpoch, KIP-101/279), then sends one Fetch for the others and hands
  each partition's answer to a hook. Errors back a partition off; RPC failures back off all.
* The leader is reached through ``LeaderEndpoint`` (leader_endpoint.py): plain values in and
  out, whatever the wire (the server's ``GrpcLeaderEndpoint`` over a grpc.aio channel or its
  Kafka-protocol endpoint; tests may pass any object with the same coroutines), and
  ``LeaderEndpointError`` when a request gets no answer.
* ``ReplicaFetcher`` is the follower: it appends what it fetched as it is (``append_as_follower``),
  takes min(leader HW, own LEO) as its HW, and truncates as the epochs say.
* A round's work follows what changed, not the partitions fetched: every change of a
  partition's fetch state (added, removed, a new fetch offset after an append, a truncation, a
  new epoch, an error and its back-off, an answer naming it) marks it *changed*; a round files
  only the changed ones (and the back-offs that ended) as truncating, fetching or waiting, and
  hands ``build_fetch_request`` only the changed ones, so an idle round touches no partition.
  A fetch state also carries the follower's log start offset and latest epoch: both move with
  an append, a truncation or the leader's log start offset, each of which marks the partition;
  a move of the follower's own (its retention) goes with the partition's next change, where
  Kafka's fetcher, which rebuilds every partition each round, sends it at once.
* Each ``ReplicaFetcher`` fetches in an incremental fetch session (KIP-227,
  fetch_session_handler.py): after one full fetch, a request lists only the partitions whose
  fetch offset or epochs changed, and the leader answers only those with news, so an idle
  partition costs neither side an entry per fetch.

Truncation (``truncation_offset``), as Kafka: the follower asks the leader for the end offset of
its own latest epoch. When the leader answers with that same epoch, the follower truncates to
min(the answer, its own end of that epoch, its LEO). When the leader answers with an older epoch
the follower does not know, it truncates to the end of its largest epoch below it and asks
again. It never truncates to its own high watermark: that is what lost acknowledged records
(KIP-101's two stories). A Fetch answer carrying ``diverging_epoch`` (KIP-320) is resolved the
same way.

Not thread-safe: everything runs on the broker's event loop.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import enum
import functools
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import NamedTuple

import structlog

from minikafka.broker.replication import hop_trace
from minikafka.broker.replication.fetch_session import FetchSessionResponse
from minikafka.broker.replication.fetch_session_handler import FetchSessionHandler
from minikafka.broker.replication.leader_endpoint import LeaderEndpoint, LeaderEndpointError
from minikafka.broker.replication.partition import Partition
from minikafka.broker.replication.replica_quota import UNTHROTTLED, ReplicaQuota
from minikafka.broker.replication.requests import (
    FetchPartition,
    FetchPartitionResult,
    FetchRequest,
    OffsetForLeaderPartition,
    OffsetsForLeaderEpochRequest,
)
from minikafka.broker.storage.log import UnexpectedAppendOffsetError
from minikafka.broker.storage.segment import FileRecords
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode, KafkaError

__all__ = [
    "AbstractFetcher",
    "FetchState",
    "FetcherStats",
    "OffsetTruncationState",
    "PartitionFetchState",
    "ReplicaFetcher",
    "ReplicaFetcherManager",
    "fetcher_id",
    "truncation_offset",
]

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1

_log = structlog.get_logger(__name__)

# Errors after which a partition waits for the controller (a new LeaderAndIsr) or the leader
# to catch up with it, retrying after the back-off.
_BACK_OFF_ERRORS = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.KAFKA_STORAGE_ERROR,
        # A fetch by topic id (KIP-516) that names an id the leader's metadata lacks, or no
        # longer holds: the topic was deleted or re-created, and a metadata update is coming.
        ErrorCode.UNKNOWN_TOPIC_ID,
        ErrorCode.INCONSISTENT_TOPIC_ID,
    }
)


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


class FetchState(enum.Enum):
    TRUNCATING = "truncating"
    FETCHING = "fetching"


@dataclass(frozen=True)
class PartitionFetchState:
    fetch_offset: int
    current_leader_epoch: int
    state: FetchState
    delayed_until: float = 0.0  # loop time before which the partition is not fetched

    def delayed(self, now: float) -> bool:
        return now < self.delayed_until


@dataclass
class FetcherStats:
    """Counters of one fetcher (tests and benchmarks read them; not exported as metrics)."""

    rounds: int = 0
    fetches: int = 0
    # Partitions a round filed again because their fetch state changed or their back-off
    # ended: the per-partition work of the rounds, none in an idle one.
    partitions_refiled: int = 0


class OffsetTruncationState(NamedTuple):
    offset: int
    truncation_completed: bool


def truncation_offset(
    leader_epoch: int,
    leader_end_offset: int,
    log_end_offset: int,
    end_offset_for_epoch: Callable[[int], tuple[int, int]],
) -> OffsetTruncationState:
    """Where a follower truncates, given the leader's (epoch, end offset) answer for the
    follower's latest epoch (Kafka's getOffsetTruncationState)."""
    if leader_end_offset == UNDEFINED_OFFSET:
        # The leader knows no epoch at or below ours: nothing can be trusted beyond what the
        # leader has; keep everything up to our LEO only if the leader is at least that long.
        return OffsetTruncationState(log_end_offset, True)
    if leader_epoch == UNDEFINED_EPOCH:
        return OffsetTruncationState(min(leader_end_offset, log_end_offset), True)
    follower_epoch, follower_end = end_offset_for_epoch(leader_epoch)
    if follower_epoch == UNDEFINED_EPOCH:
        return OffsetTruncationState(min(leader_end_offset, log_end_offset), True)
    if follower_epoch != leader_epoch:
        # We do not know the epoch the leader answered with: cut back to the end of our largest
        # epoch below it, and ask again with that one.
        return OffsetTruncationState(min(follower_end, log_end_offset), False)
    return OffsetTruncationState(min(follower_end, leader_end_offset, log_end_offset), True)


class AbstractFetcher(abc.ABC):
    """The fetch loop for the partitions led by one source broker (module docstring)."""

    def __init__(
        self,
        source_broker_id: int,
        endpoint: LeaderEndpoint,
        *,
        backoff_s: float,
        name: str,
    ) -> None:
        self.source_broker_id = source_broker_id
        self.endpoint = endpoint
        self.name = name
        self._backoff_s = backoff_s
        self._states: dict[TopicPartition, PartitionFetchState] = {}
        # Partitions whose state changed since a round last filed them, and the filing: ready
        # to truncate, ready to fetch (the state fetched under), or backed off until a time.
        self._changed: set[TopicPartition] = set()
        self._truncating: set[TopicPartition] = set()
        self._fetching: dict[TopicPartition, PartitionFetchState] = {}
        self._delayed: dict[TopicPartition, float] = {}
        # Partitions whose fetch state changed since the last fetch request was built.
        self._fetch_changed: set[TopicPartition] = set()
        self.stats = FetcherStats()
        # Per partition: the leader's high watermark minus the next offset to fetch, as of the
        # last answer (Kafka's FetcherLagMetrics, read by the metrics as MaxLag).
        self.lags: dict[TopicPartition, int] = {}
        # The failure the leader's fetches keep hitting, and how many since the last success:
        # one log line when it starts and one when it ends, not one per retry.
        self._failing: str | None = None
        self._failures = 0
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    # --- partitions -------------------------------------------------------------------------

    @property
    def partitions(self) -> dict[TopicPartition, PartitionFetchState]:
        """A copy of every partition's fetch state."""
        return dict(self._states)

    def partition_state(self, tp: TopicPartition) -> PartitionFetchState | None:
        return self._states.get(tp)

    @property
    def partition_count(self) -> int:
        return len(self._states)

    def add_partitions(self, states: dict[TopicPartition, PartitionFetchState]) -> None:
        self._states.update(states)
        self._changed.update(states)
        self._wakeup.set()

    def remove_partitions(self, tps: Iterable[TopicPartition]) -> None:
        for tp in tps:
            if self._states.pop(tp, None) is not None:
                self._changed.add(tp)
            self.lags.pop(tp, None)

    def _update(
        self, tp: TopicPartition, old: PartitionFetchState, new: PartitionFetchState
    ) -> None:
        # Only if nobody replaced the state (a new LeaderAndIsr) while the RPC was in flight.
        if new != old and self._states.get(tp) == old:
            self._states[tp] = new
            self._changed.add(tp)

    def _delay(self, tp: TopicPartition, old: PartitionFetchState) -> None:
        self._delay_all({tp: old})

    def _delay_all(self, states: Mapping[TopicPartition, PartitionFetchState]) -> None:
        """Back off partitions until one instant, so that partitions that failed together come
        back in one fetch (a clock read per partition spread them over several)."""
        until = asyncio.get_running_loop().time() + self._backoff_s
        for tp, old in states.items():
            self._update(tp, old, replace(old, delayed_until=until))

    # --- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name=self.name)

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.endpoint.close()

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                # A leader answering at once (max_wait_ms 0, or a local endpoint) must not
                # starve the loop, so a round that never gave the loop a turn yields one. A
                # round that waited for its answer goes straight on: its next fetch carries
                # the LEO the answer's append made, which is what moves the leader's HW.
                turned: list[bool] = []
                marker = loop.call_soon(turned.append, True)
                await self._do_work()
                if not turned:
                    marker.cancel()
                    await asyncio.sleep(0)
            except asyncio.CancelledError:
                raise
            except Exception:
                _log.exception("fetcher.error", fetcher=self.name)
                await asyncio.sleep(self._backoff_s)

    async def _do_work(self) -> None:
        self._wakeup.clear()
        self.stats.rounds += 1
        loop = asyncio.get_running_loop()
        self._refile(loop.time())
        if self._truncating:
            await self._truncate_to_epoch_end_offsets(
                {tp: self._states[tp] for tp in self._truncating}
            )
            self._refile(loop.time())
        if self._fetching:
            await self._fetch()
            return
        if self._truncating:
            return
        now = loop.time()
        timeout = min(self._delayed.values()) - now if self._delayed else None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wakeup.wait(), timeout)

    def _refile(self, now: float) -> None:
        """File the partitions whose state changed, or whose back-off ended, as truncating,
        fetching or backed off; the others stay where they are."""
        changed = self._changed
        if self._delayed:
            changed.update(tp for tp, until in self._delayed.items() if until <= now)
        if not changed:
            return
        self.stats.partitions_refiled += len(changed)
        self._fetch_changed.update(changed)
        for tp in changed:
            self._truncating.discard(tp)
            self._fetching.pop(tp, None)
            self._delayed.pop(tp, None)
            state = self._states.get(tp)
            if state is None:
                continue
            if state.delayed(now):
                self._delayed[tp] = state.delayed_until
            elif state.state is FetchState.TRUNCATING:
                self._truncating.add(tp)
            else:
                self._fetching[tp] = state
        changed.clear()

    # --- truncation -------------------------------------------------------------------------

    async def _truncate_to_epoch_end_offsets(
        self, states: dict[TopicPartition, PartitionFetchState]
    ) -> None:
        without_epoch: list[TopicPartition] = []
        asked: list[OffsetForLeaderPartition] = []
        for tp, state in states.items():
            epoch = self.latest_epoch(tp)
            if epoch is None:
                without_epoch.append(tp)
                continue
            asked.append(
                OffsetForLeaderPartition(tp.topic, tp.partition, epoch, state.current_leader_epoch)
            )
        for tp in without_epoch:
            # An empty epoch cache means an empty log here (every batch carries its epoch):
            # there is nothing to truncate.
            state = states[tp]
            self._finish_truncation(tp, state, self.log_end_offset(tp))
        if not asked:
            return
        try:
            results = await self.endpoint.offsets_for_leader_epoch(
                OffsetsForLeaderEpochRequest(self.replica_id, asked)
            )
        except LeaderEndpointError as exc:
            _log.warning(
                "fetcher.offsets_for_leader_epoch_failed",
                fetcher=self.name,
                code=exc.code,
                details=exc.details,
            )
            self._delay_all({tp: s for tp, s in states.items() if tp not in without_epoch})
            return
        for result in results:
            tp = TopicPartition(result.topic, result.partition)
            sent = states.get(tp)
            if sent is None or self._states.get(tp) != sent:
                continue
            if result.error_code != ErrorCode.NONE:
                self._on_partition_error(tp, sent, result.error_code, result.error_message)
                continue
            outcome = truncation_offset(
                result.leader_epoch,
                result.end_offset,
                self.log_end_offset(tp),
                functools.partial(self.end_offset_for_epoch, tp),
            )
            self.truncate(tp, outcome.offset, "leader_epoch")
            if outcome.truncation_completed:
                self._finish_truncation(tp, sent, self.log_end_offset(tp))

    def _finish_truncation(
        self, tp: TopicPartition, state: PartitionFetchState, offset: int
    ) -> None:
        self._update(tp, state, replace(state, fetch_offset=offset, state=FetchState.FETCHING))

    # --- fetching ---------------------------------------------------------------------------

    async def _fetch(self) -> None:
        # Not changed while the fetch is in flight: only a round refiles partitions.
        states = self._fetching
        changed, self._fetch_changed = self._fetch_changed, set()
        request = self.build_fetch_request(states, changed)
        if request is None:
            # Nothing to fetch now (every partition throttled): back off, as Kafka's fetcher
            # does when it builds no request.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), self._backoff_s)
            return
        self.stats.fetches += 1
        try:
            response = await self.endpoint.fetch(request)
        except LeaderEndpointError as exc:
            self.handle_fetch_error()
            code = exc.code
            self._failures += 1
            (_log.debug if code == self._failing else _log.warning)(
                "fetcher.fetch_failed",
                fetcher=self.name,
                code=code,
                details=exc.details,
                failures=self._failures,
            )
            self._failing = code
            self._delay_all(states)
            return
        if self._failing is not None:
            _log.info("fetcher.fetch_recovered", fetcher=self.name, failures=self._failures)
            self._failing, self._failures = None, 0
        if not self.handle_fetch_response(response):
            return  # a session error: the next round fetches in full
        for data in response.partitions:
            tp = TopicPartition(data.topic, data.partition)
            sent = states.get(tp)
            if sent is None or self._states.get(tp) != sent:
                continue  # removed or re-added while the fetch was in flight
            # Its fetch state is built again next round, whether the fetch offset moved or
            # not: the answer may have moved its log start offset or latest epoch.
            self._fetch_changed.add(tp)
            self._handle_partition_data(tp, sent, data)

    def _handle_partition_data(
        self, tp: TopicPartition, state: PartitionFetchState, data: FetchPartitionResult
    ) -> None:
        code = data.error_code
        if code == ErrorCode.NONE:
            diverging = data.diverging_epoch
            if diverging is not None and diverging[0] >= 0:
                outcome = truncation_offset(
                    diverging[0],
                    diverging[1],
                    self.log_end_offset(tp),
                    lambda epoch: self.end_offset_for_epoch(tp, epoch),
                )
                before = (self.log_end_offset(tp), self.latest_epoch(tp))
                self.truncate(tp, outcome.offset, "diverging_epoch")
                if (self.log_end_offset(tp), self.latest_epoch(tp)) == before:
                    # No progress: settle it through OffsetsForLeaderEpoch after the back-off
                    # rather than fetching the same divergence again.
                    delayed = replace(state, state=FetchState.TRUNCATING)
                    self._update(tp, state, delayed)
                    self._delay(tp, delayed)
                    return
                self._update(tp, state, replace(state, fetch_offset=self.log_end_offset(tp)))
                return
            try:
                next_offset = self.process_partition_data(tp, state, data)
            except UnexpectedAppendOffsetError as exc:
                _log.warning("fetcher.unexpected_offset", fetcher=self.name, error=exc.message)
                self._update(tp, state, replace(state, state=FetchState.TRUNCATING))
                return
            except Exception as exc:
                if self.handle_storage_error(tp, exc):
                    # Its log dir is offline (logged once there); the replica manager removes
                    # the partition from this fetcher.
                    self._delay(tp, state)
                    return
                if not isinstance(exc, KafkaError):
                    raise
                _log.warning(
                    "fetcher.append_failed",
                    fetcher=self.name,
                    topic=tp.topic,
                    partition=tp.partition,
                    error=str(exc),
                )
                self._delay(tp, state)
                return
            self.lags[tp] = max(0, data.high_watermark - next_offset)
            self._update(tp, state, replace(state, fetch_offset=next_offset))
        elif code == ErrorCode.OFFSET_OUT_OF_RANGE:
            start = self.handle_offset_out_of_range(tp, state, data)
            self._update(tp, state, replace(state, fetch_offset=start, state=FetchState.FETCHING))
        else:
            self._on_partition_error(tp, state, code, data.error_message)

    def _on_partition_error(
        self, tp: TopicPartition, state: PartitionFetchState, code: int, message: str
    ) -> None:
        name = _error_name(code)
        fenced = code == ErrorCode.FENCED_LEADER_EPOCH
        _log.info(
            "fetcher.partition_error",
            fetcher=self.name,
            topic=tp.topic,
            partition=tp.partition,
            leader_epoch=state.current_leader_epoch,
            error=name,
            message=message,
            retriable=code in _BACK_OFF_ERRORS,
        )
        if fenced and self._states.get(tp) == state:
            # The leader has a newer epoch: as Kafka's onPartitionFenced, stop fetching the
            # partition until the LeaderAndIsr that carries it arrives (and adds it again),
            # rather than being fenced again every back-off (thousands of partitions at once
            # after a failover, each a log line and a wasted slot per fetch).
            self.remove_partitions([tp])
            return
        self._delay(tp, state)

    # --- hooks --------------------------------------------------------------------------------

    @property
    @abc.abstractmethod
    def replica_id(self) -> int: ...

    @abc.abstractmethod
    def build_fetch_request(
        self,
        fetching: Mapping[TopicPartition, PartitionFetchState],
        changed: Collection[TopicPartition],
    ) -> FetchRequest | None:
        """A fetch of ``fetching`` (every partition to fetch now, not to be kept), where
        ``changed`` names the partitions whose fetch state changed, or which joined or left
        ``fetching``, since the last request built; None: nothing to send now (throttled),
        the round backs off."""

    def handle_fetch_response(self, response: FetchSessionResponse) -> bool:
        """Whether ``response``'s partitions may be used (fetch sessions check it here)."""
        return True

    def handle_fetch_error(self) -> None:  # noqa: B027 -- a hook, a no-op unless overridden
        """A fetch failed on the way (fetch sessions start over here)."""

    @abc.abstractmethod
    def process_partition_data(
        self, tp: TopicPartition, state: PartitionFetchState, data: FetchPartitionResult
    ) -> int:
        """Apply fetched data; returns the next fetch offset."""

    def handle_storage_error(self, tp: TopicPartition, exc: BaseException) -> bool:
        """An append failed: True when ``exc`` took the partition's log dir offline."""
        return False

    @abc.abstractmethod
    def handle_offset_out_of_range(
        self, tp: TopicPartition, state: PartitionFetchState, data: FetchPartitionResult
    ) -> int:
        """Repair the log after OFFSET_OUT_OF_RANGE; returns the offset to fetch from."""

    @abc.abstractmethod
    def truncate(self, tp: TopicPartition, offset: int, reason: str) -> None: ...

    @abc.abstractmethod
    def latest_epoch(self, tp: TopicPartition) -> int | None: ...

    @abc.abstractmethod
    def log_end_offset(self, tp: TopicPartition) -> int: ...

    @abc.abstractmethod
    def end_offset_for_epoch(self, tp: TopicPartition, epoch: int) -> tuple[int, int]: ...


class ReplicaFetcher(AbstractFetcher):
    """A follower fetching the partitions one leader broker leads."""

    def __init__(
        self,
        broker_id: int,
        source_broker_id: int,
        endpoint: LeaderEndpoint,
        *,
        get_partition: Callable[[TopicPartition], Partition | None],
        broker_epoch: Callable[[], int],
        max_wait_ms: int,
        min_bytes: int,
        partition_max_bytes: int,
        response_max_bytes: int,
        backoff_s: float,
        use_epochs: bool = True,
        on_high_watermark: Callable[[TopicPartition], None] | None = None,
        on_storage_error: Callable[[TopicPartition, BaseException], bool] | None = None,
        fetcher_id: int = 0,
        quota: ReplicaQuota = UNTHROTTLED,
    ) -> None:
        super().__init__(
            source_broker_id,
            endpoint,
            backoff_s=backoff_s,
            name=f"ReplicaFetcher-{broker_id}-from-{source_broker_id}"
            + (f"-{fetcher_id}" if fetcher_id else ""),
        )
        self._broker_id = broker_id
        self._get_partition = get_partition
        self._broker_epoch = broker_epoch
        self._max_wait_ms = max_wait_ms
        self._min_bytes = min_bytes
        self._partition_max_bytes = partition_max_bytes
        self._response_max_bytes = response_max_bytes
        self._use_epochs = use_epochs
        self._on_high_watermark = on_high_watermark
        self._on_storage_error = on_storage_error
        self.session = FetchSessionHandler()
        self._quota = quota
        # Partitions left out of the session while the follower quota is exceeded (KIP-73).
        self._held_out: set[TopicPartition] = set()

    def handle_storage_error(self, tp: TopicPartition, exc: BaseException) -> bool:
        return self._on_storage_error is not None and self._on_storage_error(tp, exc)

    @property
    def replica_id(self) -> int:
        return self._broker_id

    def _partition(self, tp: TopicPartition) -> Partition:
        partition = self._get_partition(tp)
        if partition is None:
            raise KafkaError(f"{tp} is not hosted here any more")
        return partition

    def _throttled(
        self, fetching: Mapping[TopicPartition, PartitionFetchState]
    ) -> set[TopicPartition]:
        """KIP-73 on the follower: while its quota is exceeded, the throttled partitions that
        have not caught up with the leader's HW (Kafka's shouldFollowerThrottle)."""
        quota = self._quota
        if not quota.is_quota_exceeded():
            return set()
        return {tp for tp in fetching if quota.is_throttled(tp) and self.lags.get(tp, 1) > 0}

    def build_fetch_request(
        self,
        fetching: Mapping[TopicPartition, PartitionFetchState],
        changed: Collection[TopicPartition],
    ) -> FetchRequest | None:
        """A fetch in this fetcher's session (fetch_session_handler.py): every partition the
        first time, then only those whose fetch state changed, and the ones it stopped
        fetching as forgotten. Only the changed partitions' fetch states are built; a full
        fetch sends those the session handler holds. Throttled partitions leave the session
        while the quota is exceeded and come back after, as Kafka's follower leaves them out
        of its fetch; None when nothing is left to fetch."""
        session = self.session
        throttled = self._throttled(fetching)
        rebuild = set(changed) | (throttled ^ self._held_out)
        self._held_out = throttled
        for tp in rebuild:
            state = fetching.get(tp)
            partition = None if state is None else self._get_partition(tp)
            if state is None or partition is None or tp in throttled:
                session.remove(tp)
                continue
            last_epoch = partition.log.latest_epoch if self._use_epochs else None
            session.update(
                tp,
                FetchPartition(
                    tp.topic,
                    tp.partition,
                    state.fetch_offset,
                    state.current_leader_epoch,
                    UNDEFINED_EPOCH if last_epoch is None else last_epoch,
                    partition.log.log_start_offset,
                    self._partition_max_bytes,
                ),
            )
        data = session.build()
        if not data.session_partitions and not data.to_forget and throttled:
            return None
        return FetchRequest(
            self._broker_id,
            self._max_wait_ms,
            self._min_bytes,
            # replica.fetch.response.max.bytes, as Kafka: the answer's size does not grow with
            # the partitions this follower replicates (the leader still sends the first batch
            # even when it is larger, so a follower never stalls).
            self._response_max_bytes,
            data.to_send,
            session_id=data.metadata.session_id,
            session_epoch=data.metadata.epoch,
            forgotten=data.to_forget,
            replica_epoch=self._broker_epoch(),
        )

    def handle_fetch_response(self, response: FetchSessionResponse) -> bool:
        metadata = self.session.next_metadata
        ok = self.session.handle_response(
            response.error_code,
            response.session_id,
            (TopicPartition(data.topic, data.partition) for data in response.partitions),
        )
        if not ok:
            _log.info(
                "fetcher.fetch_session_error",
                fetcher=self.name,
                session_id=metadata.session_id,
                session_epoch=metadata.epoch,
                error=_error_name(response.error_code),
            )
        elif metadata.is_full and response.session_id not in (0, metadata.session_id):
            _log.info(
                "fetcher.fetch_session_opened",
                fetcher=self.name,
                session_id=response.session_id,
                partitions=self.partition_count,
            )
        return ok

    def handle_fetch_error(self) -> None:
        self.session.handle_error()

    def process_partition_data(
        self, tp: TopicPartition, state: PartitionFetchState, data: FetchPartitionResult
    ) -> int:
        partition = self._partition(tp)
        log = partition.log
        if log.log_end_offset != state.fetch_offset:
            raise UnexpectedAppendOffsetError(
                f"{tp}: fetched at {state.fetch_offset} but the log ends at {log.log_end_offset}",
                state.fetch_offset,
                state.fetch_offset,
            )
        records = data.records
        if isinstance(records, FileRecords):  # (a leader endpoint sends bytes: never today)
            records = records.read_and_close()
        if records:
            if self._quota.is_throttled(tp):
                self._quota.record(len(records))
            try:
                partition.append_records_as_follower(records)
            except UnexpectedAppendOffsetError as exc:
                if (
                    log.log_end_offset == log.log_start_offset
                    and log.log_end_offset < exc.first_offset
                ):
                    partition.truncate_fully_and_start_at(exc.first_offset, "unexpected_offset")
                    partition.append_records_as_follower(records)
                else:
                    raise
        if hop_trace.TRACE is not None and log.log_end_offset > state.fetch_offset:
            hop_trace.TRACE.offsets(
                "follower_appended",
                tp.topic,
                tp.partition,
                max(state.fetch_offset, log.log_start_offset),  # after a full truncation too
                log.log_end_offset,
                self.source_broker_id,
            )
        leader_start = data.log_start_offset
        if log.log_start_offset < leader_start <= log.log_end_offset:
            log.maybe_increment_log_start_offset(leader_start)
        old_hw = partition.high_watermark
        partition.update_follower_high_watermark(data.high_watermark)
        if partition.high_watermark != old_hw and self._on_high_watermark is not None:
            self._on_high_watermark(tp)
        return log.log_end_offset

    def handle_offset_out_of_range(
        self, tp: TopicPartition, state: PartitionFetchState, data: FetchPartitionResult
    ) -> int:
        partition = self._partition(tp)
        start = max(data.log_start_offset, 0)
        partition.truncate_fully_and_start_at(start, "offset_out_of_range")
        return start

    def truncate(self, tp: TopicPartition, offset: int, reason: str) -> None:
        partition = self._partition(tp)
        try:
            partition.truncate_to(offset, reason)
        except Exception as exc:
            # An I/O error takes the log dir offline, and the partition leaves this fetcher.
            self.handle_storage_error(tp, exc)
            raise

    def latest_epoch(self, tp: TopicPartition) -> int | None:
        return self._partition(tp).log.latest_epoch

    def log_end_offset(self, tp: TopicPartition) -> int:
        return self._partition(tp).log.log_end_offset

    def end_offset_for_epoch(self, tp: TopicPartition, epoch: int) -> tuple[int, int]:
        return self._partition(tp).log.end_offset_for_epoch(epoch)


class _Source(NamedTuple):
    broker_id: int
    host: str
    port: int


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def fetcher_id(tp: TopicPartition, num_fetchers: int) -> int:
    """Which of a source broker's ``num.replica.fetchers`` fetchers fetches ``tp``: Kafka's
    ``Utils.abs(31 * topic.hashCode + partition) % numFetchers`` (Java's String.hashCode over
    the name's UTF-16 code units, 32-bit arithmetic), so a partition lands where Kafka puts it."""
    units = tp.topic.encode("utf-16-be")
    h = 0
    for i in range(0, len(units), 2):
        h = _int32(31 * h + (units[i] << 8 | units[i + 1]))
    value = _int32(31 * h + tp.partition)
    return (0 if value == -(1 << 31) else abs(value)) % num_fetchers


class ReplicaFetcherManager:
    """``num.replica.fetchers`` ReplicaFetchers per source broker (Kafka's
    AbstractFetcherManager): each partition goes to the one ``fetcher_id`` names, so a
    follower has as many fetches in flight to one leader, each on a stream and in a fetch
    session of its own, while the partitions of one fetcher still share its fetches.
    Partitions move between fetchers on leader changes."""

    def __init__(
        self, make_fetcher: Callable[[int, str, int, int], AbstractFetcher], num_fetchers: int = 1
    ) -> None:
        """``make_fetcher(source broker id, host, port, fetcher id)``."""
        if num_fetchers < 1:
            raise ValueError(f"num.replica.fetchers must be at least 1, not {num_fetchers}")
        self._make_fetcher = make_fetcher
        self._num_fetchers = num_fetchers
        self._fetchers: dict[tuple[_Source, int], AbstractFetcher] = {}

    @property
    def fetchers(self) -> dict[int, AbstractFetcher]:
        """Source broker id -> its fetcher with fetcher id 0 (its only one by default)."""
        return {source.broker_id: f for (source, i), f in self._fetchers.items() if i == 0}

    @property
    def all_fetchers(self) -> list[AbstractFetcher]:
        return list(self._fetchers.values())

    def fetchers_of(self, broker_id: int) -> dict[int, AbstractFetcher]:
        """Fetcher id -> fetcher, for one source broker."""
        return {i: f for (source, i), f in self._fetchers.items() if source.broker_id == broker_id}

    def fetch_state(self, tp: TopicPartition) -> PartitionFetchState | None:
        for fetcher in self._fetchers.values():
            state = fetcher.partition_state(tp)
            if state is not None:
                return state
        return None

    async def add_partitions(
        self, leader: int, host: str, port: int, states: dict[TopicPartition, PartitionFetchState]
    ) -> None:
        source = _Source(leader, host, port)
        for key, fetcher in list(self._fetchers.items()):
            if key[0].broker_id == leader and key[0] != source:
                # The leader moved to a new endpoint: its partitions come along.
                states = {**fetcher.partitions, **states}
                del self._fetchers[key]
                await fetcher.stop()
        by_fetcher: dict[int, dict[TopicPartition, PartitionFetchState]] = {}
        for tp, state in states.items():
            by_fetcher.setdefault(fetcher_id(tp, self._num_fetchers), {})[tp] = state
        for i, some in sorted(by_fetcher.items()):
            existing = self._fetchers.get((source, i))
            if existing is None:
                existing = self._make_fetcher(leader, host, port, i)
                self._fetchers[(source, i)] = existing
                existing.start()
            existing.add_partitions(some)

    async def remove_partitions(self, tps: Iterable[TopicPartition]) -> None:
        tps = list(tps)
        for key, fetcher in list(self._fetchers.items()):
            fetcher.remove_partitions(tps)
            if not fetcher.partition_count:
                del self._fetchers[key]
                await fetcher.stop()

    async def shutdown(self) -> None:
        fetchers = list(self._fetchers.values())
        self._fetchers.clear()
        for fetcher in fetchers:
            await fetcher.stop()
