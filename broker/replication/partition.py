"""One hosted partition replica: its log, its role, its high watermark, and (as leader) what it
knows of the other replicas.

Roles are small value types, replaced whole on every change::

    LeaderState    leader_epoch, epoch_start_offset (the LEO when this epoch began),
                   led_since_epoch (the epoch in which this broker became leader: a new epoch
                   that keeps it leader keeps it), isr, replicas, partition_epoch (the state
                   znode's version), controller_epoch
    FollowerState  leader_id, leader_epoch, isr, replicas, partition_epoch, controller_epoch

A leader keeps one ``ReplicaState`` per other assigned replica (Kafka's remote replica): its log
end offset as of its last fetch (-1 = unknown until it fetches; a new leader forgets what it
knew, a new epoch of the same leader keeps it) and ``last_caught_up_time_ms``,
Kafka's definition: the last time the follower had fetched up to the leader's LEO, either at the
fetch itself or at the previous fetch (``fetch_offset >= the leader's LEO at the previous
fetch``). A follower whose last caught-up time is older than ``replica.lag.time.max.ms`` leaves
the ISR; one whose LEO reaches the high watermark (and the start of the current epoch) rejoins.

High watermark: on the leader, the smallest LEO over the ISR (the leader's own included) and over
an ISR expansion still being written to ZooKeeper (the "maximal" ISR, as Kafka's AlterIsr does:
a replica being added counts before the write lands, one being removed still counts until it
has). It only moves forward. On a follower it is min(leader's HW, own LEO).

The ISR itself changes only through ``apply_isr`` after the ZooKeeper write succeeded; this
class proposes changes (``isr_to_expand``, ``out_of_sync_replicas``), the ReplicaManager submits
them and the AlterPartitionManager writes them.

Producer state (idempotence) follows Kafka's snapshot cycle; the ``.snapshot`` format is in
producer_state.py. Through the Log's hooks a snapshot is taken when a segment rolls (at the new
segment's base offset) and when the log closes (at the LEO), and snapshots below a log start
offset that moved up are deleted (the newest is always kept). Opening the partition deletes
the snapshots above the LEO and the corrupt ones, loads the newest one left and replays the
batch headers from its offset to the LEO; then it takes a snapshot at the LEO if it replayed
anything, so that the next open replays nothing. Without any snapshot (a log written before
snapshots existed, or all of them lost) the replay starts at the oldest of the newest segments
that hold at least ``PRODUCER_STATE_SCAN_BYTES`` (64 MiB) — the whole log when it is smaller —
which covers every retry a producer can still make without reading a big log end to end.
Truncation reloads the same way (snapshots above the new LEO go first); truncating fully
deletes every snapshot.

Transactions (KIP-98): the producer state tracks open transactions (producer_state.py). When a
marker completes an aborted transaction, on the leader (``append_end_txn_marker``) as on a
follower (``append_records_as_follower``) and in the same batch-by-batch order, the entry goes
to the ``.txnindex`` of the segment the marker went to, with the last stable offset computed
from the log, so every replica writes the same files. When recovery re-read segments holding
transactional batches (``Log.txn_index_rebuild_offset``), opening the partition loads the
producer state as of the first of them (newest snapshot at or below it, then replay), resets
their ``.txnindex`` files and rewrites them while replaying to the LEO, as Kafka's
LogSegment.recover does. The last stable offset is min(first unstable offset, HW), on a leader
and on a follower alike; the producer state learns every HW move (``high_watermark``).

Not thread-safe: owned by the broker's event loop, like its Log.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import structlog

from minikafka.broker.replication import hop_trace
from minikafka.broker.replication.producer_state import (
    ActiveProducer,
    AppendOrigin,
    CompletedTxn,
    ProducerStateManager,
)
from minikafka.broker.storage.log import Log, LogAppendInfo, LogHooks
from minikafka.broker.storage.segment import BatchLocation, LogSegment
from minikafka.broker.storage.txn_index import AbortedTxn
from minikafka.proto.errors import (
    ErrorCode,
    FencedLeaderEpochError,
    InvalidRecordError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    OffsetOutOfRangeError,
    UnknownLeaderEpochError,
)
from minikafka.proto.records import (
    NO_PRODUCER_ID,
    NO_TIMESTAMP,
    BatchHeader,
    ControlType,
    EndTxnMarker,
    decode_end_txn_marker,
    encode_end_txn_marker,
    iter_batch_headers,
    read_header,
)

__all__ = [
    "UNKNOWN_OFFSET",
    "FollowerState",
    "LeaderState",
    "LogDeleteRecordsResult",
    "Partition",
    "PartitionRegistration",
    "ReplicaState",
]

UNKNOWN_OFFSET = -1
NO_EPOCH = -1
PRODUCER_STATE_SCAN_BYTES = 64 * 1024 * 1024

_log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class PartitionRegistration:
    """What a LeaderAndIsr request says about one partition."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    partition_epoch: int
    controller_epoch: int


@dataclass(frozen=True)
class LeaderState:
    leader_epoch: int
    epoch_start_offset: int
    led_since_epoch: int
    isr: frozenset[int]
    replicas: tuple[int, ...]
    partition_epoch: int
    controller_epoch: int


@dataclass(frozen=True)
class FollowerState:
    leader_id: int
    leader_epoch: int
    isr: frozenset[int]
    replicas: tuple[int, ...]
    partition_epoch: int
    controller_epoch: int


class LogDeleteRecordsResult(NamedTuple):
    """A DeleteRecords done on the leader's log: the offset the replicas' low watermark must
    reach, and the leader's log start offset now."""

    requested_offset: int
    log_start_offset: int


class ReplicaState(NamedTuple):
    """A follower as the leader sees it, replaced on each of its fetches."""

    log_end_offset: int = UNKNOWN_OFFSET
    log_start_offset: int = UNKNOWN_OFFSET
    last_caught_up_time_ms: int = 0
    last_fetch_leader_log_end_offset: int = UNKNOWN_OFFSET
    last_fetch_time_ms: int = 0


class Partition:
    """A partition replica hosted by this broker (see the module docstring)."""

    def __init__(
        self,
        log: Log,
        broker_id: int,
        *,
        high_watermark: int = 0,
        min_insync_replicas: int = 1,
        on_log_start_offset_moved: Callable[[], None] | None = None,
    ) -> None:
        self.log = log
        self.topic = log.topic
        self.partition = log.partition
        self.broker_id = broker_id
        self.min_insync_replicas = min_insync_replicas
        self.state: LeaderState | FollowerState | None = None
        self.remote_replicas: dict[int, ReplicaState] = {}
        self.pending_isr: frozenset[int] | None = None  # an ISR write in flight
        self._high_watermark = 0
        self.producer_state = self._attach(log)
        self._on_log_start_offset_moved = on_log_start_offset_moved
        self.high_watermark = self._bounded(high_watermark)

    def _attach(self, log: Log) -> ProducerStateManager:
        """Make ``log`` this replica's log: its producer state (loaded from its dir) and hooks."""
        self.log = log
        self.producer_state = ProducerStateManager(
            log.dir, topic=self.topic, partition=self.partition
        )
        if self._load_producer_state():
            self._take_producer_snapshot(log.log_end_offset)
        log.set_hooks(
            LogHooks(
                segment_rolled=self._take_producer_snapshot,
                log_start_offset_moved=self._log_start_offset_moved,
                closing=lambda: self._take_producer_snapshot(self.log.log_end_offset),
            )
        )
        return self.producer_state

    def replace_log(self, log: Log) -> None:
        """A future log swapped in for the current one (AlterReplicaLogDirs, KIP-113): the same
        batches in another log dir. Its producer state loads from the snapshot the future
        replica took at the LEO when it closed (nothing to replay); role, ISR, remote replicas
        and the high watermark stay, so the LSO and leader epochs are what they were."""
        if log.log_end_offset != self.log.log_end_offset:
            raise ValueError(
                f"{log} does not end where {self.log} does: a future log must catch up first"
            )
        self._attach(log)
        self.high_watermark = self._bounded(self._high_watermark)

    def _log_start_offset_moved(self, offset: int) -> None:
        self.producer_state.delete_snapshots_below(offset)
        if self._on_log_start_offset_moved is not None:
            self._on_log_start_offset_moved()

    def __repr__(self) -> str:
        return (
            f"Partition({self.topic}-{self.partition}, state={self.state}, "
            f"log_end_offset={self.log.log_end_offset}, high_watermark={self.high_watermark})"
        )

    def _load_producer_state(self) -> bool:
        """Rebuild the producer state from the newest snapshot and the log after it, and the
        ``.txnindex`` files recovery asks for (see the module docstring). True when batches
        were replayed."""
        log = self.log
        rebuild_from = log.txn_index_rebuild_offset
        snapshot_offset = self.producer_state.truncate_and_reload(
            log.log_start_offset, log.log_end_offset if rebuild_from is None else rebuild_from
        )
        segments = log.segments
        if snapshot_offset is not None:
            start = max(snapshot_offset, segments[0].base_offset)
        else:
            first = len(segments) - 1
            scanned = segments[first].size
            while first > 0 and scanned < PRODUCER_STATE_SCAN_BYTES:
                first -= 1
                scanned += segments[first].size
            start = segments[first].base_offset
        if rebuild_from is not None:
            start = min(start, rebuild_from)
            for segment in segments:
                if segment.base_offset >= rebuild_from:
                    segment.txn_index.reset()
        if start >= log.log_end_offset:
            if rebuild_from is not None:
                log.complete_txn_index_rebuild()
            return False
        for index, segment in enumerate(segments):
            end = segments[index + 1].base_offset if index + 1 < len(segments) else None
            if end is not None and end <= start:
                continue
            position = (
                0 if segment.base_offset >= start else segment.position_of_first_batch_from(start)
            )
            markers: dict[int, EndTxnMarker] = {}
            completed = self.producer_state.update(
                self._replayed_headers(segment, segment.iter_batches(position), markers), markers
            )
            if rebuild_from is not None and segment.base_offset >= rebuild_from:
                self._index_aborted(segment, completed)
        if rebuild_from is not None:
            log.complete_txn_index_rebuild()
        _log.info(
            "producer_state.loaded",
            **self._log_fields(),
            snapshot_offset=snapshot_offset,
            replayed_from=start,
            log_end_offset=log.log_end_offset,
            producers=len(self.producer_state),
            txn_index_rebuilt_from=rebuild_from,
        )
        return True

    @staticmethod
    def _replayed_headers(
        segment: LogSegment, locations: Iterator[BatchLocation], markers: dict[int, EndTxnMarker]
    ) -> Iterator[BatchHeader]:
        """The producers' batch headers of ``locations``; a marker's content is put in
        ``markers`` before its header is yielded (``update`` looks it up then)."""
        for location in locations:
            header = location.header
            if header.producer_id == NO_PRODUCER_ID:
                continue
            if header.is_control:
                marker = _marker_of(segment.read_batch(location))
                if marker is not None:
                    markers[header.base_offset] = marker
            yield header

    @staticmethod
    def _index_aborted(segment: LogSegment, completed: Sequence[CompletedTxn]) -> None:
        for txn in completed:
            if txn.is_aborted:
                segment.append_aborted_txn(
                    AbortedTxn(
                        txn.producer_id, txn.first_offset, txn.last_offset, txn.last_stable_offset
                    )
                )

    def _record_appended(
        self, headers: Sequence[BatchHeader], markers: Mapping[int, EndTxnMarker] | None = None
    ) -> None:
        """Batches just appended to the active segment: into the producer state, and the
        transactions their markers aborted into that segment's ``.txnindex``."""
        completed = self.producer_state.update(headers, markers)
        if completed:
            self._index_aborted(self.log.active_segment, completed)

    def _take_producer_snapshot(self, offset: int) -> None:
        # A lost snapshot only costs a longer replay at the next open: never fail an append
        # or a shutdown for it.
        try:
            self.producer_state.take_snapshot(offset)
        except OSError as exc:
            _log.warning(
                "producer_snapshot.write_failed",
                **self._log_fields(),
                offset=offset,
                error=str(exc),
            )

    # --- views ----------------------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        return isinstance(self.state, LeaderState)

    @property
    def leader_epoch(self) -> int:
        return NO_EPOCH if self.state is None else self.state.leader_epoch

    @property
    def leader_id(self) -> int:
        if isinstance(self.state, LeaderState):
            return self.broker_id
        if isinstance(self.state, FollowerState):
            return self.state.leader_id
        return -1

    @property
    def isr(self) -> frozenset[int]:
        """The ISR as last written to ZooKeeper (or received from the controller)."""
        return frozenset() if self.state is None else self.state.isr

    @property
    def maximal_isr(self) -> frozenset[int]:
        """The ISR for the high watermark: includes a pending expansion or shrink."""
        if self.pending_isr is None:
            return self.isr
        return self.isr | self.pending_isr

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @high_watermark.setter
    def high_watermark(self, value: int) -> None:
        self._high_watermark = value
        self.producer_state.on_high_watermark_updated(value)

    @property
    def last_stable_offset(self) -> int:
        """Kafka's LSO: the first offset of the oldest transaction still open (or completed
        by a marker not yet below the HW), else the HW; never above the HW. What a
        read_committed fetch reads up to; meaningful on a follower too, for its own log."""
        first_unstable = self.producer_state.first_unstable_offset
        if first_unstable is not None and first_unstable < self._high_watermark:
            return max(first_unstable, self.log.log_start_offset)
        return self._high_watermark

    def aborted_transactions(self, fetch_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """The aborted transactions overlapping [``fetch_offset``, ``upper_bound_offset``),
        for a read_committed fetch answer (from the ``.txnindex`` files)."""
        return self.log.collect_aborted_transactions(fetch_offset, upper_bound_offset)

    def active_producers(self) -> list[ActiveProducer]:
        """The producers this replica knows, for DescribeProducers: (producer_id,
        producer_epoch, last_sequence, last_timestamp, coordinator_epoch,
        current_txn_start_offset) each."""
        return self.producer_state.active_producers()

    def _log_fields(self) -> dict[str, object]:
        return {"topic": self.topic, "partition": self.partition}

    def _bounded(self, high_watermark: int) -> int:
        return max(min(high_watermark, self.log.log_end_offset), self.log.log_start_offset)

    def check_leader_epoch(self, current_leader_epoch: int, *, require_leader: bool) -> None:
        """Fencing of a request that names the epoch it expects (-1 = no fencing)."""
        if self.state is None:
            raise NotLeaderOrFollowerError(f"{self.topic}-{self.partition} has no leader state")
        if current_leader_epoch != NO_EPOCH:
            if current_leader_epoch < self.state.leader_epoch:
                raise FencedLeaderEpochError(
                    f"leader epoch {current_leader_epoch} of the request is older than the "
                    f"current leader epoch {self.state.leader_epoch}"
                )
            if current_leader_epoch > self.state.leader_epoch:
                raise UnknownLeaderEpochError(
                    f"leader epoch {current_leader_epoch} of the request is newer than the "
                    f"current leader epoch {self.state.leader_epoch}"
                )
        if require_leader and not self.is_leader:
            raise NotLeaderOrFollowerError(
                f"broker {self.broker_id} is not the leader of {self.topic}-{self.partition}"
            )

    # --- role changes ---------------------------------------------------------------------

    def make_leader(
        self,
        registration: PartitionRegistration,
        now_ms: int,
        *,
        flush_epoch: bool = True,
        keep_follower_offsets: bool = True,
    ) -> bool:
        """Become (or stay, with a new epoch) leader. True when this is a new leadership.

        ``flush_epoch=False`` leaves the write of the epoch file to the caller, who writes
        many at once (``write_epochs``); the log writes it before any data anyway.
        ``keep_follower_offsets=False`` forgets the followers' LEOs on a new epoch of the same
        leadership too, as Kafka did before KIP-101: its followers truncated to their HW on
        every epoch change, so what the leader knew of them may be above their logs."""
        was_leader = self.is_leader
        old_epoch = self.leader_epoch
        log = self.log
        if registration.leader_epoch != old_epoch:
            log.maybe_assign_epoch_start_offset(
                registration.leader_epoch, log.log_end_offset, flush=flush_epoch
            )
        epoch_start = (
            self.state.epoch_start_offset
            if isinstance(self.state, LeaderState)
            and self.state.leader_epoch == registration.leader_epoch
            else log.log_end_offset
        )
        isr = frozenset(registration.isr)
        self.state = LeaderState(
            leader_epoch=registration.leader_epoch,
            epoch_start_offset=epoch_start,
            led_since_epoch=(
                self.state.led_since_epoch
                if isinstance(self.state, LeaderState)
                else registration.leader_epoch
            ),
            isr=isr,
            replicas=registration.replicas,
            partition_epoch=registration.partition_epoch,
            controller_epoch=registration.controller_epoch,
        )
        self.pending_isr = None
        self.remote_replicas = self._reset_remote_replicas(
            registration,
            now_ms,
            keep=self.remote_replicas if was_leader and keep_follower_offsets else None,
            new_epoch=registration.leader_epoch != old_epoch,
            epoch_start=epoch_start,
        )
        self.high_watermark = self._bounded(self.high_watermark)
        _log.info(
            "became_leader",
            **self._log_fields(),
            leader_epoch=registration.leader_epoch,
            previous_leader_epoch=old_epoch,
            log_end_offset=log.log_end_offset,
            high_watermark=self.high_watermark,
            isr=sorted(isr),
            replicas=list(registration.replicas),
        )
        return not was_leader

    def _reset_remote_replicas(
        self,
        registration: PartitionRegistration,
        now_ms: int,
        *,
        keep: dict[int, ReplicaState] | None,
        new_epoch: bool,
        epoch_start: int,
    ) -> dict[int, ReplicaState]:
        """The followers' states for a leadership (Kafka's Replica.resetReplicaState): an ISR
        member counts as caught up now, so that it is not removed before it had a chance to
        fetch; any other as never caught up. A new leadership (``keep`` None) knows no
        follower's LEO until it fetches: what this broker knew when it last led may be stale.
        A new epoch of the same leadership keeps what it knows of them (Kafka's isNewLeader
        false): the HW moves on without waiting for each follower's next fetch; their last
        fetch counts as made now at the epoch's start (ISR members) or never. A replica newly
        assigned starts unknown; one no longer assigned is forgotten."""
        states = {}
        for replica in registration.replicas:
            if replica == self.broker_id:
                continue
            in_sync = replica in registration.isr
            known = None if keep is None else keep.get(replica)
            if known is not None and not new_epoch:
                states[replica] = known
            elif keep is None:
                states[replica] = ReplicaState(last_caught_up_time_ms=now_ms if in_sync else 0)
            else:
                states[replica] = (known or ReplicaState())._replace(
                    last_caught_up_time_ms=now_ms if in_sync else 0,
                    last_fetch_leader_log_end_offset=epoch_start,
                    last_fetch_time_ms=now_ms if in_sync else 0,
                )
        return states

    def epochs_to_write(self) -> Callable[[], None] | None:
        """The write of this partition's epoch file if a change is not in it yet, to run in
        a worker thread (LeaderEpochFileCache.write); None when there is nothing to write."""
        cache = self.log.leader_epoch_cache
        if not cache.dirty:
            return None
        snapshot = cache.snapshot()
        return lambda: cache.write(snapshot)

    def make_follower(self, registration: PartitionRegistration) -> bool:
        """Become a follower of ``registration.leader``. True when the leader or epoch changed."""
        previous = self.state
        self.state = FollowerState(
            leader_id=registration.leader,
            leader_epoch=registration.leader_epoch,
            isr=frozenset(registration.isr),
            replicas=registration.replicas,
            partition_epoch=registration.partition_epoch,
            controller_epoch=registration.controller_epoch,
        )
        self.pending_isr = None
        self.remote_replicas = {}
        changed = not (
            isinstance(previous, FollowerState)
            and previous.leader_id == registration.leader
            and previous.leader_epoch == registration.leader_epoch
        )
        _log.info(
            "became_follower",
            **self._log_fields(),
            leader=registration.leader,
            leader_epoch=registration.leader_epoch,
            previous_leader_epoch=NO_EPOCH if previous is None else previous.leader_epoch,
            log_end_offset=self.log.log_end_offset,
            high_watermark=self.high_watermark,
        )
        return changed

    def make_offline(self) -> None:
        """Stop leading or following (StopReplica)."""
        self.state = None
        self.pending_isr = None
        self.remote_replicas = {}

    # --- leader: appends ------------------------------------------------------------------

    def _leader_state_for_append(self, required_acks: int) -> LeaderState:
        state = self.state
        if not isinstance(state, LeaderState):
            raise NotLeaderOrFollowerError(
                f"broker {self.broker_id} is not the leader of {self.topic}-{self.partition}"
            )
        if required_acks == -1 and len(state.isr) < self.min_insync_replicas:
            raise NotEnoughReplicasError(
                f"the ISR {sorted(state.isr)} of {self.topic}-{self.partition} is smaller than "
                f"min.insync.replicas ({self.min_insync_replicas})"
            )
        return state

    def append_records_to_leader(
        self,
        data: bytes | memoryview,
        required_acks: int,
        origin: AppendOrigin = AppendOrigin.CLIENT,
    ) -> LogAppendInfo:
        """Validate and append a produce request's batches (raises a KafkaError on refusal).
        ``origin`` COORDINATOR: a coordinator's own batches, not checked for sequence order."""
        state = self._leader_state_for_append(required_acks)
        headers = [header for _, header in iter_batch_headers(data)]
        idempotent = any(h.producer_id != NO_PRODUCER_ID for h in headers)
        if idempotent:
            duplicate = self.producer_state.check_append(headers, origin)
            if duplicate is not None:
                # A retry of a batch already appended: answer with its offsets, append nothing.
                return LogAppendInfo(
                    duplicate.first_offset,
                    duplicate.last_offset,
                    NO_TIMESTAMP,
                    -1,
                    0,
                    0,
                )
        info = self.log.append_as_leader(data, state.leader_epoch)
        if idempotent:
            offset = info.first_offset
            appended = []
            for header in headers:
                appended.append(header._replace(base_offset=offset))
                offset += header.last_offset_delta + 1
            self._record_appended(appended)
        return info

    def append_end_txn_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        control_type: ControlType,
        required_acks: int = -1,
        *,
        timestamp_ms: int | None = None,
    ) -> LogAppendInfo:
        """Leader: append a COMMIT or ABORT marker of ``producer_id`` (WriteTxnMarkers).

        Raises NotLeaderOrFollower / NotEnoughReplicas as a produce, INVALID_PRODUCER_EPOCH
        when ``producer_epoch`` is older than the producer's, TRANSACTION_COORDINATOR_FENCED
        when ``coordinator_epoch`` is older than the last marker's. Completes the producer's
        transaction; an aborted one gets its ``.txnindex`` entry. ``timestamp_ms``: the
        marker's timestamp (default: now, as Kafka's broker stamps it)."""
        state = self._leader_state_for_append(required_acks)
        self.producer_state.check_end_txn_marker(producer_id, producer_epoch, coordinator_epoch)
        now = time.time_ns() // 1_000_000 if timestamp_ms is None else timestamp_ms
        data = encode_end_txn_marker(
            producer_id, producer_epoch, coordinator_epoch, control_type, now
        )
        info = self.log.append_as_leader(data, state.leader_epoch, allow_control=True)
        header = read_header(data)._replace(
            base_offset=info.first_offset,
            partition_leader_epoch=state.leader_epoch,
            max_timestamp=info.max_timestamp,
        )
        self._record_appended(
            [header], {info.first_offset: EndTxnMarker(control_type, coordinator_epoch)}
        )
        _log.debug(
            "txn_marker.appended",
            **self._log_fields(),
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            coordinator_epoch=coordinator_epoch,
            control_type=control_type.name,
            offset=info.first_offset,
        )
        return info

    def append_records_as_follower(self, data: bytes | bytearray | memoryview) -> LogAppendInfo:
        """Follower: append fetched batches as they are, and note their producers (as each
        piece is written: a roll between pieces snapshots them) and the transactions their
        markers complete, as the leader did."""
        markers = _markers_in(data)
        return self.log.append_as_follower(
            data, on_appended=lambda headers: self._record_appended(headers, markers)
        )

    def check_enough_replicas_reach_offset(
        self, required_offset: int, append_leader_epoch: int
    ) -> ErrorCode | None:
        """For an acks=all produce appended in ``append_leader_epoch``: None while waiting,
        else its outcome.

        As Kafka's (Partition.checkEnoughReplicasReachOffset), it waits for as long as this
        broker leads, across new leader epochs that keep it leader (the controller taking a
        dead follower out of the ISR): the append is still in the log, only a follower
        truncates. A broker that stopped leading since the append may have truncated it away,
        even if it leads again now: NOT_LEADER_OR_FOLLOWER (Kafka's makeFollowers completes
        the produce at once; here the epochs say it even if no check ran in between)."""
        state = self.state
        if not (
            isinstance(state, LeaderState)
            and state.led_since_epoch <= append_leader_epoch <= state.leader_epoch
        ):
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if self.high_watermark < required_offset:
            return None
        # The ISR now, not at the append; the maximal one, as for the HW: a replica whose
        # expansion is being written has the records (the HW counted it), one being removed
        # counts until the write lands (Kafka's maximalIsr).
        if len(self.maximal_isr) < self.min_insync_replicas:
            return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return ErrorCode.NONE

    # --- leader: followers' fetches, HW, ISR ------------------------------------------------

    def update_follower_fetch_state(
        self,
        replica_id: int,
        fetch_offset: int,
        log_start_offset: int,
        fetch_time_ms: int,
        leader_end_offset: int,
    ) -> bool:
        """Record a follower's fetch; False if ``replica_id`` is not an assigned replica."""
        current = self.remote_replicas.get(replica_id)
        if current is None:
            return False
        caught_up = current.last_caught_up_time_ms
        if fetch_offset >= leader_end_offset:
            caught_up = max(caught_up, fetch_time_ms)
        elif fetch_offset >= current.last_fetch_leader_log_end_offset >= 0:
            caught_up = max(caught_up, current.last_fetch_time_ms)
        self.remote_replicas[replica_id] = ReplicaState(
            log_end_offset=fetch_offset,
            log_start_offset=log_start_offset,
            last_caught_up_time_ms=caught_up,
            last_fetch_leader_log_end_offset=leader_end_offset,
            last_fetch_time_ms=fetch_time_ms,
        )
        return True

    def follower_fetched_again(self, replica_id: int, fetch_time_ms: int) -> None:
        """A fetch of ``replica_id`` at ``fetch_time_ms`` that did not list this partition (a
        fetch session): its fetch offset is what it was. Caught up then if it was caught up at
        its last recorded fetch -- the leader's LEO has not moved since, or the partition would
        have been listed or read as changed -- as ``update_follower_fetch_state`` would say."""
        current = self.remote_replicas.get(replica_id)
        if (
            current is None
            or fetch_time_ms <= current.last_fetch_time_ms
            or not current.log_end_offset >= current.last_fetch_leader_log_end_offset >= 0
        ):
            return
        self.remote_replicas[replica_id] = current._replace(
            last_caught_up_time_ms=max(current.last_caught_up_time_ms, fetch_time_ms),
            last_fetch_time_ms=fetch_time_ms,
        )

    def delete_records_on_leader(self, offset: int) -> LogDeleteRecordsResult:
        """Leader: move the log start offset up to ``offset`` (-1: the high watermark), as
        Kafka's deleteRecordsOnLeader; never above the HW (OFFSET_OUT_OF_RANGE). The followers
        follow at their next fetches (``low_watermark_if_leader`` tells how far they are)."""
        if not self.is_leader:
            raise NotLeaderOrFollowerError(
                f"broker {self.broker_id} is not the leader of {self.topic}-{self.partition}"
            )
        high_watermark = int(self.high_watermark)
        target = high_watermark if offset == -1 else offset
        if target < 0 or target > high_watermark:
            raise OffsetOutOfRangeError(
                f"Cannot delete records below {target}: the high watermark is {high_watermark}"
            )
        log = self.log
        log.maybe_increment_log_start_offset(target, high_watermark)
        _log.info(
            "records_deleted",
            **self._log_fields(),
            required_offset=target,
            log_start_offset=log.log_start_offset,
        )
        return LogDeleteRecordsResult(target, log.log_start_offset)

    def low_watermark_if_leader(self, is_alive: Callable[[int], bool]) -> int:
        """Leader: the lowest log start offset over this log and the replicas on live brokers
        (Kafka's lowWatermarkIfLeader); -1 while a live replica has not fetched yet."""
        if not self.is_leader:
            raise NotLeaderOrFollowerError(
                f"broker {self.broker_id} is not the leader of {self.topic}-{self.partition}"
            )
        low_watermark = self.log.log_start_offset
        for replica_id, remote in self.remote_replicas.items():
            if is_alive(replica_id):
                low_watermark = min(low_watermark, remote.log_start_offset)
        return low_watermark

    def maybe_increment_high_watermark(self) -> bool:
        """Leader: move the HW to the smallest LEO over the (maximal) ISR; True if it moved."""
        if not self.is_leader:
            return False
        new_hw = self.log.log_end_offset
        for replica in self.maximal_isr:
            if replica == self.broker_id:
                continue
            remote = self.remote_replicas.get(replica)
            leo = UNKNOWN_OFFSET if remote is None else remote.log_end_offset
            new_hw = min(new_hw, leo)
        if new_hw > self.high_watermark:
            old = self.high_watermark
            self.high_watermark = new_hw
            if hop_trace.TRACE is not None:
                hop_trace.TRACE.offsets("hw", self.topic, self.partition, max(old, 0), new_hw)
            _log.debug(
                "hw_advanced",
                **self._log_fields(),
                leader_epoch=self.leader_epoch,
                previous_high_watermark=old,
                high_watermark=new_hw,
            )
            return True
        return False

    def isr_to_expand(self, replica_id: int) -> frozenset[int] | None:
        """The ISR with ``replica_id`` added, when it qualifies (Kafka's rule: an assigned
        replica whose LEO reached the HW and the start of the current leader epoch)."""
        state = self.state
        if not isinstance(state, LeaderState) or self.pending_isr is not None:
            return None
        if replica_id in state.isr or replica_id not in state.replicas:
            return None
        remote = self.remote_replicas.get(replica_id)
        if remote is None:
            return None
        if remote.log_end_offset >= self.high_watermark and (
            remote.log_end_offset >= state.epoch_start_offset
        ):
            return state.isr | {replica_id}
        return None

    def out_of_sync_replicas(self, now_ms: int, max_lag_ms: int) -> frozenset[int]:
        """ISR followers that have not caught up with the leader within ``max_lag_ms``."""
        state = self.state
        if not isinstance(state, LeaderState) or self.pending_isr is not None:
            return frozenset()
        lagging = set()
        for replica in state.isr:
            if replica == self.broker_id:
                continue
            remote = self.remote_replicas.get(replica)
            caught_up = 0 if remote is None else remote.last_caught_up_time_ms
            if now_ms - caught_up > max_lag_ms:
                lagging.add(replica)
        return frozenset(lagging)

    def apply_isr(self, isr: frozenset[int], partition_epoch: int) -> None:
        """The ISR write landed in ZooKeeper at znode version ``partition_epoch``."""
        state = self.state
        if not isinstance(state, LeaderState):
            return
        self.state = LeaderState(
            leader_epoch=state.leader_epoch,
            epoch_start_offset=state.epoch_start_offset,
            led_since_epoch=state.led_since_epoch,
            isr=isr,
            replicas=state.replicas,
            partition_epoch=partition_epoch,
            controller_epoch=state.controller_epoch,
        )

    # --- follower ---------------------------------------------------------------------------

    def update_follower_high_watermark(self, leader_high_watermark: int) -> None:
        """Follower: HW = min(leader's HW, own LEO)."""
        self.high_watermark = self._bounded(leader_high_watermark)

    def truncate_to(self, offset: int, reason: str) -> None:
        """Follower: drop every offset >= ``offset`` (no-op at or beyond the LEO)."""
        old_leo = self.log.log_end_offset
        if not self.log.truncate_to(offset):
            # As Kafka: an epoch this replica started as leader but wrote nothing in sits at
            # the log end; it must go, or the follower keeps presenting an epoch the leader
            # never had.
            self.log.leader_epoch_cache.truncate_from_end(old_leo)
        else:
            self._load_producer_state()
            self.high_watermark = min(self.high_watermark, self.log.log_end_offset)
            _log.info(
                "truncated",
                **self._log_fields(),
                leader_epoch=self.leader_epoch,
                previous_log_end_offset=old_leo,
                truncation_offset=offset,
                log_end_offset=self.log.log_end_offset,
                high_watermark=self.high_watermark,
                reason=reason,
            )

    def truncate_fully_and_start_at(self, offset: int, reason: str) -> None:
        old_leo = self.log.log_end_offset
        self.log.truncate_fully_and_start_at(offset)
        self.producer_state.truncate_fully()
        self.high_watermark = offset
        _log.info(
            "truncated",
            **self._log_fields(),
            leader_epoch=self.leader_epoch,
            previous_log_end_offset=old_leo,
            truncation_offset=offset,
            log_end_offset=offset,
            high_watermark=offset,
            reason=reason,
            fully=True,
        )


def _marker_of(batch: bytes | bytearray | memoryview, position: int = 0) -> EndTxnMarker | None:
    """The COMMIT/ABORT marker of the control batch at ``position``; None for another control
    type (or a marker that does not decode: then it completes nothing, on every replica)."""
    try:
        return decode_end_txn_marker(batch, position)
    except InvalidRecordError:
        return None


def _markers_in(data: bytes | bytearray | memoryview) -> dict[int, EndTxnMarker]:
    """The markers among ``data``'s batches, by base offset (control batches are rare: only
    those are decoded)."""
    markers: dict[int, EndTxnMarker] = {}
    for position, header in iter_batch_headers(data):
        if header.is_control and header.producer_id != NO_PRODUCER_ID:
            marker = _marker_of(data, position)
            if marker is not None:
                markers[header.base_offset] = marker
    return markers
