"""The broker's partition replicas: role changes from the controller, produce, fetch, offsets.

``ReplicaManager`` is Kafka's class of the same name, cut to ZooKeeper mode: the replica
lifecycle and the data path. Beside it, as in Kafka: the ISR writes to ZooKeeper and the
controller's isr_change_notifications (alter_partition_manager.py), the wait of a DeleteRecords
(delayed_delete_records.py; the leader's part is ``Partition.delete_records_on_leader``) and
of an acks=all produce (delayed_produce.py). InitProducerId is not asked of it at all
(producer_id_manager.py).

* LeaderAndIsr makes hosted partitions leaders or followers. Requests from an older controller
  (controller_epoch) or for an older registration of this broker (broker_epoch) are refused
  whole; a partition state whose leader_epoch is not newer than the one held is ignored
  (STALE_CONTROLLER_EPOCH). A new leader records (epoch, LEO) in its epoch cache and stops
  fetching; a follower (re)starts fetching from its leader, after truncating as the epochs say
  (fetcher.py) -- or, with the test-only key ``minikafka.test.follower.truncation=high_watermark``,
  after truncating to its own checkpointed high watermark as Kafka did before KIP-101.
* Produce appends to leaders; acks=all waits (delayed.py) until the HW passes the append, for
  as long as this broker leads: a new leader epoch that keeps it leader (a smaller ISR from
  the controller) does not end the wait, becoming a follower answers NOT_LEADER_OR_FOLLOWER.
* Fetch serves consumers up to the HW and followers up to the LEO; a follower's fetch is also
  how the leader learns its LEO, which moves the HW and may put it back into the ISR.
* KIP-392: a consumer fetch that carries client metadata (Kafka's Fetch v11+, every gRPC
  fetch) is served by a follower too, up to that follower's HW (an offset between its HW and
  its LEO reads nothing, one past its LEO is OFFSET_OUT_OF_RANGE, as Kafka's follower answers).
  With ``replica.selector.class`` a leader asks its selector (replica_selector.py) where such a
  consumer should read; another replica (in the ISR, holding the fetch offset, reachable on the
  consumer's listener) is answered as ``preferred_read_replica`` with no records, at once.
  With a selector, a follower's parked fetch (in a fetch session) is also answered as soon as
  the HW moves past the one it was last sent, so that followers serve consumers a fresh HW.
* Replication throttles (KIP-73, replica_quota.py): a follower outside the ISR gets no records
  of a leader-throttled partition while the leader's quota is exceeded; the bytes answered for
  throttled partitions are counted. The follower's and the log-dir mover's quotas are handed to
  their fetchers.
* A log dir that goes offline (an I/O error, reported to the LogManager's
  LogDirFailureChannel) takes its partitions offline here (``handle_log_dir_failure``):
  produce, fetch, list offsets and LeaderAndIsr answer KAFKA_STORAGE_ERROR for them until the
  broker restarts, as Kafka's offline HostedPartition does.
* A periodic task removes followers that have not caught up for ``replica.lag.time.max.ms``
  from the ISR; another checkpoints the high watermarks. An ISR change, a shrink from that
  task or an expansion from a follower's fetch, is submitted to the AlterPartitionManager, which
  writes it to the partition's state znode (conditional on its version) and answers with the
  version ZooKeeper holds; the ReplicaManager applies the answer if the partition still has the
  leadership the change was proposed under (``_apply_isr_update``).
* DeleteRecords moves each led partition's log start offset and waits until the replicas
  followed.

Not thread-safe: every method runs on the broker's event loop. ZooKeeper calls and checkpoint
writes go to the default executor with ``asyncio.to_thread``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import structlog

from minikafka.broker.config import BrokerConfig
from minikafka.broker.replication import hop_trace
from minikafka.broker.replication.alter_log_dirs import ReplicaAlterLogDirsManager
from minikafka.broker.replication.alter_partition_manager import (
    AlterPartitionItem,
    AlterPartitionManager,
    IsrStore,
)
from minikafka.broker.replication.delayed import (
    Purgatory,
    WatchKey,
    complete_when,
    fetch_session_key,
    high_watermark_key,
    log_end_offset_key,
    low_watermark_key,
)
from minikafka.broker.replication.delayed_delete_records import DelayedDeleteRecords
from minikafka.broker.replication.delayed_produce import DelayedProduce, ProducePartitionStatus
from minikafka.broker.replication.fetch_session import (
    FetchContext,
    FetchManager,
    FetchSessionCache,
)
from minikafka.broker.replication.fetcher import (
    AbstractFetcher,
    FetchState,
    PartitionFetchState,
    ReplicaFetcher,
    ReplicaFetcherManager,
)
from minikafka.broker.replication.isr_change import IsrChangePropagationConfig
from minikafka.broker.replication.leader_endpoint import LeaderEndpointFactory
from minikafka.broker.replication.partition import LeaderState, Partition, PartitionRegistration
from minikafka.broker.replication.producer_state import AppendOrigin
from minikafka.broker.replication.replica_quota import NO_QUOTAS, ReplicaQuotas
from minikafka.broker.replication.replica_selector import (
    ClientMetadata,
    PartitionView,
    ReplicaView,
    replica_selector_for,
)
from minikafka.broker.replication.requests import (
    READ_COMMITTED,
    DeleteRecordsPartition,
    DeleteRecordsPartitionResult,
    EpochEndOffset,
    FetchedRecords,
    FetchPartition,
    FetchPartitionResult,
    FetchRequest,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    ListOffsetsPartitionResult,
    ListOffsetsRequest,
    OffsetsForLeaderEpochRequest,
    PartitionError,
    PartitionReplicaStatus,
    ProducePartitionResult,
    ProduceRequest,
    Records,
    RemoteReplicaStatus,
    StopReplicaRequest,
    StopReplicaResponse,
    TxnMarker,
)
from minikafka.broker.replication.scheduler import Scheduler
from minikafka.broker.replication.stats import BrokerTopicStats, ReplicaManagerStats
from minikafka.broker.storage.log import (
    EARLIEST_LOCAL_TIMESTAMP,
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    LogAppendInfo,
)
from minikafka.broker.storage.log_dir_failure import io_error_of
from minikafka.broker.storage.log_manager import LogManager
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import (
    ErrorCode,
    InvalidConfigError,
    KafkaError,
    KafkaStorageError,
    NotLeaderOrFollowerError,
    RecordValidationError,
    UnknownTopicOrPartitionError,
    error_for_code,
)
from minikafka.proto.records import ControlType
from minikafka.proto.topic_config import TOPIC_KEY_SPECS

__all__ = [
    "FOLLOWER_TRUNCATION_KEY",
    "LeadershipListener",
    "MetadataView",
    "PartitionStateStore",
    "ProduceStatuses",
    "ReplicaManager",
]

# Test-only fault injection (see the module docstring): leader_epoch (default) | high_watermark.
FOLLOWER_TRUNCATION_KEY = "minikafka.test.follower.truncation"
_DEBUGGING_REPLICA_ID = -2
_CONSUMER_REPLICA_ID = -1
_DEFAULT_FETCH_MAX_BYTES = 50 * 1024 * 1024
_DEFAULT_PARTITION_MAX_BYTES = 1024 * 1024
_MIN_INSYNC_REPLICAS = TOPIC_KEY_SPECS["min.insync.replicas"]

_log = structlog.get_logger(__name__)


class PartitionStateStore(IsrStore, Protocol):
    """The part of ZkStore the replica manager uses: its leaders' ISR writes
    (alter_partition_manager.py) and the topics' min.insync.replicas (ZkStore satisfies it)."""

    def get_topic_config(self, topic: str) -> dict[str, str]: ...


class MetadataView(Protocol):
    """The part of the MetadataCache the replica manager reads (broker/server implements it)."""

    def contains_partition(self, topic: str, partition: int) -> bool: ...

    def is_alive(self, broker_id: int) -> bool: ...

    def get_rack(self, broker_id: int) -> str | None: ...

    def get_listener_endpoint(
        self, broker_id: int, listener_name: str
    ) -> tuple[str, int] | None: ...


# ``listener(became_leader, no_longer_leader)`` after each LeaderAndIsr or StopReplica, as
# Kafka's onLeadershipChange callback (the group coordinator loads and unloads its groups).
LeadershipListener = Callable[[list[TopicPartition], list[TopicPartition]], None]


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


# A Produce request's outcome per (topic, partition), between the append and the answer.
ProduceStatuses = dict[tuple[str, int], ProducePartitionStatus]


@dataclass
class _FetchRead:
    responses: list[FetchPartitionResult]
    bytes: int
    errors: bool
    # Partitions a read now could answer again: records beyond what was read (or cut by the
    # response size), an error, a diverging epoch (fetch sessions read them again).
    unsettled: list[TopicPartition]
    # Some partition was answered a preferred read replica: the answer goes out at once.
    redirected: bool = False


def _check_fetch_request(
    partition: Partition, fp: FetchPartition, replica_id: int, max_bytes: int
) -> None:
    """What Kafka refuses in a fetch from a partition's leader, before reading.

    A follower fetch (replica_id >= 0) from a broker that is not one of the partition's
    followers: NOT_LEADER_OR_FOLLOWER, or UNKNOWN_LEADER_EPOCH when the fetch names a leader
    epoch (Kafka's Partition.followerReplicaOrThrow); nothing is read, so no client reads past
    the HW by claiming a broker id. A negative max_bytes or partition_max_bytes: Kafka's
    LogSegment.read throws "Invalid max size", which its fetch answers per partition as
    UNKNOWN_SERVER_ERROR; the same code and message here, for every partition asked (0
    stays "the default", what a protobuf request that leaves the field out carries).
    """
    if replica_id >= 0 and replica_id not in partition.remote_replicas:
        code = (
            ErrorCode.UNKNOWN_LEADER_EPOCH
            if fp.current_leader_epoch >= 0
            else ErrorCode.NOT_LEADER_OR_FOLLOWER
        )
        raise error_for_code(
            code,
            f"replica {replica_id} is not a follower of {partition.topic}-{partition.partition} "
            f"(assigned replicas {sorted([partition.broker_id, *partition.remote_replicas])})",
        )
    size = min(max_bytes, fp.partition_max_bytes)
    if size < 0:
        raise error_for_code(
            ErrorCode.UNKNOWN_SERVER_ERROR,
            f"Invalid max size {size} for log read from {partition.topic}-{partition.partition}: "
            "max_bytes and partition_max_bytes must not be negative",
        )


class ReplicaManager:
    """Hosted partitions and what clients, followers and the controller ask of them."""

    def __init__(
        self,
        config: BrokerConfig,
        log_manager: LogManager,
        zk: PartitionStateStore,
        metadata_cache: MetadataView,
        *,
        broker_epoch: Callable[[], int],
        time_ms: Callable[[], int] = _wall_clock_ms,
        isr_change_propagation: IsrChangePropagationConfig | None = None,
        leader_endpoint: LeaderEndpointFactory,
        quotas: ReplicaQuotas = NO_QUOTAS,
    ) -> None:
        """``leader_endpoint`` makes a follower's connection to a leader on the inter-broker
        listener: the server injects the one of the door that listener is (gRPC or Kafka).
        ``quotas``: the replication throttles (replica_quota.py), none unless given."""
        self.config = config
        self.quotas = quotas
        self._leader_endpoint = leader_endpoint
        self.broker_id = config.broker_id
        hop_trace.set_broker_id(config.broker_id)
        self._log_manager = log_manager
        self._zk = zk
        self._metadata = metadata_cache
        self._broker_epoch = broker_epoch
        self._time_ms = time_ms
        self._partitions: dict[TopicPartition, Partition] = {}
        # Replicas in offline log dirs: KAFKA_STORAGE_ERROR until the broker restarts.
        self._offline_partitions: set[TopicPartition] = set()
        self._controller_epoch = 0
        self._registered = asyncio.Event()  # set by ``registered``: the broker epoch is known
        self.purgatory = Purgatory(on_notify=self._offset_moved)
        # Incremental fetch sessions (KIP-227) of both front doors, followers' and consumers'.
        self.fetch_sessions = FetchManager(
            FetchSessionCache(
                config.max_incremental_fetch_session_cache_slots,
                config.min_incremental_fetch_session_eviction_ms,
                # A fetch parked on a session evicted or closed would hear of nothing more.
                on_removed=lambda session_id: self.purgatory.notify(fetch_session_key(session_id)),
            ),
            time_ms,
        )
        self.stats = ReplicaManagerStats()  # read by broker/server/metrics.py
        self.topic_stats = BrokerTopicStats()
        self._high_watermarks = log_manager.read_high_watermarks()
        # What the last checkpoint wrote; None until the first write after the start.
        self._checkpointed_high_watermarks: dict[TopicPartition, int] | None = None
        truncation = config.unknown.get(FOLLOWER_TRUNCATION_KEY, "leader_epoch")
        if truncation not in ("leader_epoch", "high_watermark"):
            raise InvalidConfigError(
                f"{FOLLOWER_TRUNCATION_KEY} must be leader_epoch or high_watermark, "
                f"not {truncation!r}"
            )
        self.truncate_to_high_watermark = truncation == "high_watermark"
        self._replica_selector = replica_selector_for(config.replica_selector_class)
        # Set once the broker asks the controller for a controlled shutdown (begin_shutdown).
        self._shutting_down = False
        self._fetch_backoff_s = config.replica_fetch_backoff_ms / 1000
        self.fetchers = ReplicaFetcherManager(self._make_fetcher, config.num_replica_fetchers)
        # Moves between this broker's log dirs (KIP-113, alter_log_dirs.py).
        self.alter_log_dirs = ReplicaAlterLogDirsManager(
            self.broker_id,
            log_manager,
            self._partitions.get,
            is_offline=lambda tp: tp in self._offline_partitions,
            on_swapped=self._log_moved,
            partition_max_bytes=config.replica_fetch_max_bytes,
            backoff_s=self._fetch_backoff_s,
            quota=quotas.alter_log_dirs,
        )
        self._background: set[asyncio.Task[None]] = set()
        self._scheduler = Scheduler()
        self._started = False
        self._leadership_listeners: list[LeadershipListener] = []
        self.alter_partition_manager = AlterPartitionManager(
            self.broker_id,
            zk,
            on_written=self._apply_isr_update,
            on_settled=self._isr_update_settled,
            time_ms=time_ms,
            isr_change_propagation=isr_change_propagation,
        )

    # --- lifecycle ----------------------------------------------------------------------------

    async def startup(self) -> None:
        if self._started:
            return
        self._started = True
        lag_ms = self.config.replica_lag_time_max_ms
        self._scheduler.schedule(
            f"isr-expiration-{self.broker_id}",
            self._maybe_shrink_isr,
            period_ms=max(lag_ms / 2, 10),
        )
        self._scheduler.schedule(
            f"highwatermark-checkpoint-{self.broker_id}",
            self.checkpoint_high_watermarks,
            period_ms=self.config.replica_high_watermark_checkpoint_interval_ms,
        )
        self.alter_partition_manager.start(self._scheduler)
        _log.info(
            "replica_manager.started",
            broker_id=self.broker_id,
            follower_truncation="high_watermark"
            if self.truncate_to_high_watermark
            else "leader_epoch",
        )

    async def shutdown(self) -> None:
        await self._scheduler.shutdown()
        await self.alter_partition_manager.shutdown()
        await self.fetchers.shutdown()
        await self.alter_log_dirs.shutdown()
        self.purgatory.notify_all()
        await self.checkpoint_high_watermarks()
        self._started = False
        _log.info("replica_manager.stopped", broker_id=self.broker_id)

    async def checkpoint_high_watermarks(self) -> None:
        """Write replication-offset-checkpoint with every hosted partition's HW, unless no HW
        moved and no partition came or went since the last write: an idle broker with
        thousands of partitions then writes and fsyncs nothing every interval."""
        # Logs not hosted yet (no LeaderAndIsr since the restart) keep their checkpointed HW.
        self._high_watermarks.update(self.high_watermarks())
        if self._high_watermarks == self._checkpointed_high_watermarks:
            return
        written = dict(self._high_watermarks)
        await asyncio.to_thread(self._log_manager.write_high_watermarks, written)
        self._checkpointed_high_watermarks = written

    # --- views --------------------------------------------------------------------------------

    @property
    def controller_epoch(self) -> int:
        return self._controller_epoch

    @property
    def log_manager(self) -> LogManager:
        return self._log_manager

    def get_partition(self, tp: TopicPartition) -> Partition | None:
        return self._partitions.get(tp)

    def add_leadership_listener(self, listener: LeadershipListener) -> None:
        """Call ``listener`` on the loop after every leadership change (see its type)."""
        self._leadership_listeners.append(listener)

    def _leadership_changed(
        self, leaders: Iterable[TopicPartition], others: Iterable[TopicPartition]
    ) -> None:
        became_leader, no_longer_leader = list(leaders), list(others)
        if not became_leader and not no_longer_leader:
            return
        for listener in self._leadership_listeners:
            try:
                listener(became_leader, no_longer_leader)
            except Exception:
                _log.exception("leadership_listener.failed")

    def reconfigure(self, config: BrokerConfig) -> None:
        """The broker's config after a dynamic broker config change (defaults such as
        min.insync.replicas for partitions that become leaders from now on)."""
        self.config = config

    def set_min_insync_replicas(self, topic: str, value: int) -> None:
        """A changed min.insync.replicas for the topic's partitions here: acks=all produces
        are checked against it from the next one on."""
        for tp, partition in self._partitions.items():
            if tp.topic == topic and partition.min_insync_replicas != value:
                partition.min_insync_replicas = value
                _log.info(
                    "min_insync_replicas_changed",
                    topic=tp.topic,
                    partition=tp.partition,
                    min_insync_replicas=value,
                )

    @property
    def partitions(self) -> dict[TopicPartition, Partition]:
        return dict(self._partitions)

    def high_watermarks(self) -> dict[TopicPartition, int]:
        """Every hosted partition's HW (for retention, which keeps what is above it)."""
        return {tp: p.high_watermark for tp, p in self._partitions.items()}

    def last_stable_offsets(self) -> dict[TopicPartition, int]:
        """Every hosted partition's LSO (the cleaner leaves open transactions alone)."""
        return {tp: p.last_stable_offset for tp, p in self._partitions.items()}

    def replica_statuses(self) -> list[PartitionReplicaStatus]:
        """Every hosted replica as it stands, by topic and partition (DescribeReplicas)."""
        statuses = []
        for tp, partition in sorted(self._partitions.items()):
            state = partition.state
            followers = tuple(
                RemoteReplicaStatus(broker_id, remote.log_end_offset, remote.last_caught_up_time_ms)
                for broker_id, remote in sorted(partition.remote_replicas.items())
            )
            statuses.append(
                PartitionReplicaStatus(
                    tp.topic,
                    tp.partition,
                    partition.is_leader,
                    partition.leader_id,
                    partition.leader_epoch,
                    () if state is None else state.replicas,
                    tuple(sorted(partition.isr)),
                    partition.high_watermark,
                    partition.log.log_start_offset,
                    partition.log_end_offset,
                    followers if partition.is_leader else (),
                )
            )
        return statuses

    def registered(self) -> None:
        """The broker registered in ZooKeeper: its broker epoch is known from now on."""
        self._registered.set()

    async def wait_until_registered(self, timeout_s: float) -> None:
        """Hold a controller request until this broker has registered (up to ``timeout_s``),
        as Kafka processes no request before: a restarted broker waiting for its previous
        session to expire would not know which registration a request is for. One for the
        registration being made (the controller may see it before ``registered``) is then
        obeyed, one for the previous registration refused as stale."""
        if self._broker_epoch() >= 0:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._registered.wait(), timeout_s)

    def check_controller_request(self, controller_epoch: int, broker_epoch: int) -> ErrorCode:
        """Fencing of LeaderAndIsr / UpdateMetadata / StopReplica; NONE records the epoch."""
        if controller_epoch < self._controller_epoch:
            _log.warning(
                "controller_request.stale",
                controller_epoch=controller_epoch,
                latest_controller_epoch=self._controller_epoch,
            )
            return ErrorCode.STALE_CONTROLLER_EPOCH
        current = self._broker_epoch()
        # Still not registered (``wait_until_registered`` timed out): which registration a
        # request is for cannot be told. Obeyed, a partial UpdateMetadata for the previous one
        # gave clients a topic with some of its partitions missing.
        if current < 0 or (broker_epoch != -1 and broker_epoch < current):
            _log.warning(
                "controller_request.stale_broker_epoch",
                broker_epoch=broker_epoch,
                current_broker_epoch=current,
            )
            return ErrorCode.STALE_BROKER_EPOCH
        self._controller_epoch = controller_epoch
        return ErrorCode.NONE

    def _get_or_create_partition(self, tp: TopicPartition) -> Partition:
        partition = self._partitions.get(tp)
        if partition is None:
            log = self._log_manager.get_or_create_log(tp.topic, tp.partition)
            partition = Partition(
                log,
                self.broker_id,
                high_watermark=self._high_watermarks.get(tp, 0),
                min_insync_replicas=self.config.min_insync_replicas,
                # Retention or DeleteRecords: fetch sessions answer the new log start offset.
                on_log_start_offset_moved=lambda: self.purgatory.notify(low_watermark_key(tp)),
            )
            self._partitions[tp] = partition
        return partition

    async def _create_logs(self, partitions: Iterable[TopicPartition]) -> None:
        """The logs of partitions new to this broker, made together before a LeaderAndIsr
        touches them: each topic's config read once and off the loop, and one fsync per log
        dir for all the new directories, awaited before any of them can be written to (the
        partitions get their roles after this returns)."""
        new = [
            tp
            for tp in partitions
            if tp not in self._partitions
            and tp not in self._offline_partitions
            and self._log_manager.get_log(tp.topic, tp.partition) is None
        ]
        if not new:
            return
        configs = await asyncio.to_thread(self._log_manager.log_configs, {tp.topic for tp in new})
        log_dirs = self._log_manager.create_logs(new, configs)
        await asyncio.to_thread(self._log_manager.sync_log_dirs, log_dirs)

    def _notify(self, tp: TopicPartition) -> None:
        self.purgatory.notify(high_watermark_key(tp))
        self.purgatory.notify(log_end_offset_key(tp))

    def _offset_moved(self, key: Hashable) -> None:
        """Every purgatory notification: a partition's HW, LEO, log start offset or leadership
        moved, so its fetch sessions read it at their next fetch, and a parked one now."""
        if isinstance(key, WatchKey):
            self._fetch_state_changed(key.topic_partition)

    def _fetch_state_changed(self, tp: TopicPartition) -> None:
        """Sessions read ``tp`` at their next fetch (and a parked one now)."""
        for session_id in self.fetch_sessions.cache.partition_changed(tp):
            self.purgatory.notify(fetch_session_key(session_id))

    # --- LeaderAndIsr -------------------------------------------------------------------------

    async def become_leader_or_follower(self, request: LeaderAndIsrRequest) -> LeaderAndIsrResponse:
        code = self.check_controller_request(request.controller_epoch, request.broker_epoch)
        if code != ErrorCode.NONE:
            return LeaderAndIsrResponse(error_code=code)
        partition_errors: list[PartitionError] = []
        leaders: dict[TopicPartition, PartitionRegistration] = {}
        followers: dict[TopicPartition, PartitionRegistration] = {}
        await self._create_logs(
            TopicPartition(ps.topic, ps.partition)
            for ps in request.partition_states
            if self.broker_id in ps.replicas
        )
        for ps in request.partition_states:
            tp = TopicPartition(ps.topic, ps.partition)
            code = ErrorCode.NONE
            message = ""
            existing = self._partitions.get(tp)
            if tp in self._offline_partitions:
                code = ErrorCode.KAFKA_STORAGE_ERROR
                message = f"{tp} is in an offline log dir on broker {self.broker_id}"
            elif self.broker_id not in ps.replicas:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                message = f"broker {self.broker_id} is not a replica of {tp}"
            elif (
                existing is not None
                and existing.state is not None
                and ps.leader_epoch == existing.leader_epoch
                and ps.leader == existing.leader_id
            ):
                # What this broker already follows, sent again: by a new controller, which
                # sends every partition's state to its replicas when it takes over (Kafka
                # answers STALE_CONTROLLER_EPOCH here, and its controller ignores that).
                pass
            elif (
                existing is not None
                and existing.state is not None
                and (ps.leader_epoch <= existing.leader_epoch)
            ):
                code = ErrorCode.STALE_CONTROLLER_EPOCH
                message = (
                    f"leader epoch {ps.leader_epoch} is not newer than the current leader "
                    f"epoch {existing.leader_epoch}"
                )
                _log.info(
                    "leader_and_isr.ignored",
                    topic=tp.topic,
                    partition=tp.partition,
                    leader_epoch=ps.leader_epoch,
                    current_leader_epoch=existing.leader_epoch,
                )
            else:
                registration = PartitionRegistration(
                    leader=ps.leader,
                    leader_epoch=ps.leader_epoch,
                    isr=ps.isr,
                    replicas=ps.replicas,
                    partition_epoch=ps.partition_epoch,
                    controller_epoch=ps.controller_epoch,
                )
                try:
                    self._get_or_create_partition(tp)
                except KafkaError as exc:
                    code, message = exc.code, exc.message
                else:
                    if ps.leader == self.broker_id:
                        leaders[tp] = registration
                    else:
                        followers[tp] = registration
            partition_errors.append(PartitionError(tp.topic, tp.partition, code, message))
        if leaders:
            await self._make_leaders(leaders)
        if followers:
            live = {leader.broker_id: (leader.host, leader.port) for leader in request.live_leaders}
            await self._make_followers(followers, live)
        self._leadership_changed(
            (tp for tp in leaders if tp in self._partitions),
            (tp for tp in followers if tp in self._partitions),
        )
        self.alter_log_dirs.maybe_start_moves([*leaders, *followers])
        return LeaderAndIsrResponse(ErrorCode.NONE, partition_errors)

    def _log_moved(self, tp: TopicPartition) -> None:
        """A replica's log moved to another log dir: the high watermark checkpoints of both
        dirs are rewritten now (the next periodic one would skip an unchanged HW map)."""
        self._checkpointed_high_watermarks = None
        task = asyncio.get_running_loop().create_task(self.checkpoint_high_watermarks())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _min_insync_replicas(self, topics: Iterable[str]) -> dict[str, int]:
        result: dict[str, int] = {}
        for topic in set(topics):
            value = self.config.min_insync_replicas
            try:
                overrides = await asyncio.to_thread(self._zk.get_topic_config, topic)
                raw = overrides.get(_MIN_INSYNC_REPLICAS.name)
                if raw is not None:
                    value = _MIN_INSYNC_REPLICAS.parse(_MIN_INSYNC_REPLICAS.name, raw)
            except Exception as exc:  # the broker default is a safe fallback
                _log.warning("topic_config.unreadable", topic=topic, error=str(exc))
            result[topic] = value
        return result

    async def _make_leaders(self, leaders: dict[TopicPartition, PartitionRegistration]) -> None:
        await self.fetchers.remove_partitions(leaders)
        min_isr = await self._min_insync_replicas(tp.topic for tp in leaders)
        now = self._time_ms()
        for tp, registration in leaders.items():
            partition = self._partitions.get(tp)
            if partition is None:
                continue  # stopped while the topic config was read
            partition.min_insync_replicas = min_isr[tp.topic]
            partition.make_leader(
                registration,
                now,
                flush_epoch=False,
                keep_follower_offsets=not self.truncate_to_high_watermark,
            )
            partition.maybe_increment_high_watermark()
            self._notify(tp)
        await self._write_epochs(leaders)

    async def _write_epochs(self, partitions: Iterable[TopicPartition]) -> None:
        """The new leaders' epoch files, written together in a worker thread rather than one
        fsync after another on the loop (each log writes its own before fsyncing data of the
        epoch anyway, see epoch_cache.py). A failed write takes its log dir offline."""
        writes = {}
        for tp in partitions:
            partition = self._partitions.get(tp)
            write = None if partition is None else partition.epochs_to_write()
            if write is not None:
                writes[tp] = write

        def write_all() -> dict[TopicPartition, Exception]:
            failed = {}
            for tp, write in writes.items():
                try:
                    write()
                except Exception as exc:
                    failed[tp] = exc
            return failed

        if writes:
            for tp, exc in (await asyncio.to_thread(write_all)).items():
                if not self._log_manager.maybe_handle_io_error(tp, exc, f"error leading {tp}"):
                    _log.error(
                        "leader_epoch.write_failed",
                        topic=tp.topic,
                        partition=tp.partition,
                        error=str(exc),
                    )

    def begin_shutdown(self) -> None:
        """The broker is leaving (its controlled shutdown starts): from now on a partition it
        becomes a follower of is not fetched.

        The controller moves leadership away and makes this broker a follower of the partitions
        it led. Caught up as it is, its first fetch would put it back in the new leader's ISR
        just as it stops, and the next produce would wait for it. Kafka's controller refuses
        such an ISR change for a shutting-down broker (AlterPartition); here leaders write the
        ISR themselves, so the leaving broker does not ask to join. Its restart catches up.
        """
        self._shutting_down = True

    async def _make_followers(
        self,
        followers: dict[TopicPartition, PartitionRegistration],
        live_leaders: dict[int, tuple[str, int]],
    ) -> None:
        await self.fetchers.remove_partitions(followers)
        by_leader: dict[tuple[int, str, int], dict[TopicPartition, PartitionFetchState]] = {}
        for tp, registration in followers.items():
            partition = self._partitions[tp]
            partition.make_follower(registration)
            self._notify(tp)  # parked produces and fetches see they lost leadership
            if registration.leader < 0 or self._shutting_down:
                continue
            endpoint = self._leader_address(tp, registration, live_leaders)
            if endpoint is None:
                _log.warning(
                    "follower.leader_unreachable",
                    topic=tp.topic,
                    partition=tp.partition,
                    leader=registration.leader,
                    leader_epoch=registration.leader_epoch,
                )
                continue
            if self.truncate_to_high_watermark:
                # Pre-KIP-101 behaviour, for the seed failure tests only.
                partition.truncate_to(partition.high_watermark, "high_watermark")
                state = FetchState.FETCHING
            else:
                state = FetchState.TRUNCATING
            by_leader.setdefault((registration.leader, *endpoint), {})[tp] = PartitionFetchState(
                fetch_offset=partition.log_end_offset,
                current_leader_epoch=registration.leader_epoch,
                state=state,
            )
        for (leader, host, port), states in by_leader.items():
            await self.fetchers.add_partitions(leader, host, port, states)

    def _leader_address(
        self,
        tp: TopicPartition,
        registration: PartitionRegistration,
        live_leaders: dict[int, tuple[str, int]],
    ) -> tuple[str, int] | None:
        """Where to fetch ``tp`` from: the leader's endpoint on this broker's own
        inter.broker.listener.name, as Kafka's makeFollowers resolves it, never another
        listener's (a gRPC port spoken to in the Kafka protocol, or the other way round). A
        leader this broker's metadata does not know yet (its first LeaderAndIsr comes before
        its first UpdateMetadata) is taken from the request's live leaders, which carry the
        controller's inter-broker listener: the same one when the brokers agree."""
        leader = registration.leader
        listener = self.config.inter_broker_listener_name
        if not self._metadata.is_alive(leader):
            return live_leaders.get(leader)
        endpoint = self._metadata.get_listener_endpoint(leader, listener)
        if endpoint is None:
            _log.error(
                "follower.leader_has_no_listener",
                topic=tp.topic,
                partition=tp.partition,
                leader=leader,
                leader_epoch=registration.leader_epoch,
                listener=listener,
                hint="every broker must name the same inter.broker.listener.name",
            )
        return endpoint

    def _make_fetcher(self, leader: int, host: str, port: int, fetcher_id: int) -> AbstractFetcher:
        config = self.config
        return ReplicaFetcher(
            self.broker_id,
            leader,
            self._leader_endpoint(host, port),
            get_partition=self._partitions.get,
            broker_epoch=self._broker_epoch,
            max_wait_ms=config.replica_fetch_wait_max_ms,
            min_bytes=config.replica_fetch_min_bytes,
            partition_max_bytes=config.replica_fetch_max_bytes,
            response_max_bytes=config.replica_fetch_response_max_bytes,
            backoff_s=self._fetch_backoff_s,
            use_epochs=not self.truncate_to_high_watermark,
            on_high_watermark=lambda tp: self.purgatory.notify(high_watermark_key(tp)),
            on_storage_error=self._on_fetcher_storage_error,
            fetcher_id=fetcher_id,
            quota=self.quotas.follower,
        )

    # --- StopReplica --------------------------------------------------------------------------

    async def stop_replicas(self, request: StopReplicaRequest) -> StopReplicaResponse:
        code = self.check_controller_request(request.controller_epoch, request.broker_epoch)
        if code != ErrorCode.NONE:
            return StopReplicaResponse(error_code=code)
        partition_errors: list[PartitionError] = []
        stopping: list[TopicPartition] = []
        for ps in request.partition_states:
            tp = TopicPartition(ps.topic, ps.partition)
            partition = self._partitions.get(tp)
            code = ErrorCode.NONE
            if (
                partition is not None
                and ps.leader_epoch >= 0
                and ps.leader_epoch < partition.leader_epoch
            ):
                code = ErrorCode.FENCED_LEADER_EPOCH
            else:
                stopping.append(tp)
            partition_errors.append(PartitionError(tp.topic, tp.partition, code))
        await self.fetchers.remove_partitions(stopping)
        self.alter_log_dirs.remove_partitions(stopping, delete=False)
        deletes = {
            TopicPartition(ps.topic, ps.partition)
            for ps in request.partition_states
            if ps.delete_partition
        }
        for tp in stopping:
            if tp not in deletes:
                continue
            partition = self._partitions.pop(tp, None)
            if partition is not None:
                partition.make_offline()
            self._high_watermarks.pop(tp, None)
            self._notify(tp)
            try:
                self._log_manager.delete_log(tp.topic, tp.partition)
            except Exception:
                _log.exception("replica.delete_failed", topic=tp.topic, partition=tp.partition)
            _log.info("replica.stopped", topic=tp.topic, partition=tp.partition, deleted=True)
        self._leadership_changed((), stopping)
        return StopReplicaResponse(ErrorCode.NONE, partition_errors)

    # --- Produce ------------------------------------------------------------------------------

    async def append_records(self, request: ProduceRequest) -> list[ProducePartitionResult]:
        return await self.produce_response(request, self.append_to_leaders(request))

    def append_to_leaders(self, request: ProduceRequest) -> ProduceStatuses:
        """Append a Produce request's batches, now (no await): a caller that calls this in the
        order requests arrived appends them in that order. ``produce_response`` answers."""
        acks = request.acks
        statuses: ProduceStatuses = {}
        for data in request.partitions:
            key = (data.topic, data.partition)
            if acks not in (0, 1, -1):
                statuses[key] = ProducePartitionStatus(
                    ErrorCode.INVALID_REQUIRED_ACKS, f"acks must be 0, 1 or -1, not {acks}"
                )
                continue
            statuses[key] = self._append_to_leader(
                TopicPartition(*key), data.records, acks, request.origin
            )
        return statuses

    async def produce_response(
        self, request: ProduceRequest, statuses: ProduceStatuses
    ) -> list[ProducePartitionResult]:
        """The answer to an appended request, one result per partition (none for acks=0): for
        acks=all, once the ISR has the appends (or the request's timeout passes)."""
        acks = request.acks
        if acks == 0:
            return []
        if acks == -1:
            await self._await_replication(statuses, request.timeout_ms)
        return [
            ProducePartitionResult(
                topic,
                index,
                status.code,
                status.message,
                status.base_offset,
                status.log_start_offset,
                status.record_errors,
                status.log_append_time,
            )
            for (topic, index), status in statuses.items()
        ]

    async def write_txn_markers(
        self, marker: TxnMarker, timeout_ms: int
    ) -> dict[TopicPartition, ProducePartitionStatus]:
        """Kafka's WriteTxnMarkers for one marker: append its COMMIT or ABORT control batch to
        each of its partitions this broker leads (the coordinator's own append, acks=all) and
        wait until the ISR has them, or ``timeout_ms``. One status per partition."""
        control_type = ControlType.COMMIT if marker.committed else ControlType.ABORT
        statuses: ProduceStatuses = {}
        for tp in marker.partitions:
            statuses[(tp.topic, tp.partition)] = self._leader_append(
                TopicPartition(*tp),
                -1,
                lambda partition: partition.append_end_txn_marker(
                    marker.producer_id,
                    marker.producer_epoch,
                    marker.coordinator_epoch,
                    control_type,
                ),
            )
        await self._await_replication(statuses, timeout_ms)
        return {TopicPartition(*key): status for key, status in statuses.items()}

    def _append_to_leader(
        self,
        tp: TopicPartition,
        records: Records,
        acks: int,
        origin: AppendOrigin = AppendOrigin.CLIENT,
    ) -> ProducePartitionStatus:
        return self._leader_append(
            tp, acks, lambda partition: partition.append_records_to_leader(records, acks, origin)
        )

    def _leader_append(
        self, tp: TopicPartition, acks: int, append: Callable[[Partition], LogAppendInfo]
    ) -> ProducePartitionStatus:
        partition = self._partitions.get(tp)
        if tp in self._offline_partitions:
            return ProducePartitionStatus(ErrorCode.KAFKA_STORAGE_ERROR, self._offline_message(tp))
        if partition is None or partition.state is None:
            if partition is None and not self._metadata.contains_partition(*tp):
                return ProducePartitionStatus(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{tp} is not known to this broker"
                )
            return ProducePartitionStatus(
                ErrorCode.NOT_LEADER_OR_FOLLOWER, f"broker {self.broker_id} does not lead {tp}"
            )
        began = time.monotonic_ns() if hop_trace.TRACE is not None else 0
        try:
            info = append(partition)
        except Exception as exc:
            return self._append_failed(tp, exc)
        if hop_trace.TRACE is not None:
            hop_trace.TRACE.appended(
                tp.topic, tp.partition, info.first_offset, info.last_offset + 1, began
            )
        self.topic_stats.record_messages_in(
            tp.topic, messages=info.record_count, size=info.valid_bytes
        )
        self.purgatory.notify(log_end_offset_key(tp))
        if partition.maybe_increment_high_watermark():
            self.purgatory.notify(high_watermark_key(tp))
        return ProducePartitionStatus(
            ErrorCode.NONE,
            base_offset=info.first_offset,
            log_start_offset=partition.log.log_start_offset,
            required_offset=info.last_offset + 1,
            leader_epoch=partition.leader_epoch,
            done=acks != -1,
            log_append_time=info.max_timestamp if partition.log.config.log_append_time else -1,
        )

    def _append_failed(self, tp: TopicPartition, exc: Exception) -> ProducePartitionStatus:
        self.topic_stats.record_failed_produce(tp.topic)
        if self._log_manager.maybe_handle_io_error(tp, exc, f"error appending to {tp}"):
            # The dir is offline now (one log line said so): the producer retries elsewhere.
            return ProducePartitionStatus(
                ErrorCode.KAFKA_STORAGE_ERROR, f"{self._offline_message(tp)}: {io_error_of(exc)}"
            )
        if isinstance(exc, KafkaError):
            _log.info(
                "produce.refused",
                topic=tp.topic,
                partition=tp.partition,
                error=exc.code.name,
                message=exc.message,
            )
            if isinstance(exc, RecordValidationError):
                return ProducePartitionStatus(exc.code, exc.message, exc.record_errors)
            return ProducePartitionStatus(exc.code, exc.message)
        _log.exception("produce.failed", topic=tp.topic, partition=tp.partition)
        return ProducePartitionStatus(ErrorCode.UNKNOWN_SERVER_ERROR, str(exc))

    async def _await_replication(self, statuses: ProduceStatuses, timeout_ms: int) -> None:
        """Kafka's DelayedProduce: done when every appended partition's HW passed its append."""
        waiting = {
            high_watermark_key(TopicPartition(*key)): s for key, s in statuses.items() if not s.done
        }
        if not waiting:
            return
        self.stats.delayed_produce += 1
        try:
            await DelayedProduce(waiting, self._produce_outcome, self.purgatory).wait(
                max(timeout_ms, 0) / 1000
            )
        finally:
            self.stats.delayed_produce -= 1
        if hop_trace.TRACE is not None:
            for key, status in waiting.items():
                hop_trace.TRACE.offsets(
                    "produce_answered",
                    *key.topic_partition,
                    status.base_offset,
                    status.required_offset,
                )
        for status in waiting.values():
            if not status.done:
                status.code = ErrorCode.REQUEST_TIMED_OUT
                status.message = f"the ISR did not replicate the append within {timeout_ms} ms"
                status.done = True

    def _produce_outcome(
        self, tp: TopicPartition, status: ProducePartitionStatus
    ) -> ErrorCode | None:
        """An acks=all append's outcome on ``tp`` (None while it waits for the HW)."""
        if tp in self._offline_partitions:
            return ErrorCode.KAFKA_STORAGE_ERROR
        partition = self._partitions.get(tp)
        if partition is None:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return partition.check_enough_replicas_reach_offset(
            status.required_offset, status.leader_epoch
        )

    # --- Fetch --------------------------------------------------------------------------------

    async def fetch_messages(
        self, request: FetchRequest, context: FetchContext | None = None
    ) -> list[FetchPartitionResult]:
        """One result per requested partition, in request order. With a fetch session's
        ``context`` (fetch_session.py; ``request.partitions`` are ``context.partitions``): a
        long poll reads what the context says changed after each wake-up, and the answer holds
        the latest result of every partition read."""
        from_follower = request.replica_id >= 0
        requested = request.partitions
        if from_follower:
            self._update_followers(
                request.replica_id,
                requested,
                None if context is None else context.previous_fetch_ms,
                frozenset() if context is None else context.added,
            )
        session_key = None if context is None else context.session_key
        results: dict[TopicPartition, FetchPartitionResult] = {}
        latest: list[_FetchRead] = []

        def read(partitions: Sequence[FetchPartition]) -> _FetchRead:
            current = self._read(
                partitions,
                request.replica_id,
                request.max_bytes,
                request.file_records,
                read_committed=request.isolation_level == READ_COMMITTED,
                client_metadata=request.client_metadata,
            )
            if context is not None:
                self.fetch_sessions.stats.partitions_read += len(partitions)
                context.after_read(current.responses, current.unsettled)
            if session_key is None:
                latest[:] = [current]  # every partition is read each time
            else:
                for answer in current.responses:
                    results[TopicPartition(answer.topic, answer.partition)] = answer
            return current

        def enough() -> bool:
            if session_key is None:
                current = latest[0]
                return current.errors or current.redirected or current.bytes >= request.min_bytes
            # Partitions with records or errors are unsettled: each read of the changed ones
            # reads them again, so the latest results hold every byte and error of the fetch.
            size = 0
            if (
                from_follower
                and self._replica_selector is not None
                and context is not None
                and context.high_watermark_moved(results.values())
            ):
                # KIP-392: followers serve consumers up to their own HW, so a follower's
                # parked fetch is answered when the HW moves past what it was last told.
                # Only with a replica selector, as Kafka did after KAFKA-9731: it costs a
                # fetch round trip per HW move.
                return True
            for answer in results.values():
                if answer.error_code != ErrorCode.NONE or answer.preferred_read_replica >= 0:
                    return True
                size += len(answer.records)
            return size >= request.min_bytes

        if request.max_wait_ms > 0 and request.min_bytes > 0 and (requested or session_key):
            loop = asyncio.get_running_loop()
            if session_key is not None:
                keys: list[Hashable] = [session_key]
            else:
                keys = [
                    (log_end_offset_key if from_follower else high_watermark_key)(
                        TopicPartition(fp.topic, fp.partition)
                    )
                    for fp in requested
                ]
            first = True

            def check() -> bool | None:
                nonlocal first
                read(requested if first or context is None else context.rereads())
                first = False
                if context is not None and context.session_removed:
                    return True  # nothing would wake it again
                return True if enough() else None

            self.stats.delayed_fetch += 1
            try:
                await complete_when(
                    check, keys, self.purgatory, loop.time() + request.max_wait_ms / 1000
                )
            finally:
                self.stats.delayed_fetch -= 1
        else:
            read(requested)
        responses = latest[0].responses if session_key is None else list(results.values())
        if hop_trace.TRACE is not None:
            self._trace_fetch(request, responses)
        throttled_bytes = 0
        leader_quota = self.quotas.leader
        for answer in responses:
            self.topic_stats.record_bytes_out(
                answer.topic, len(answer.records), to_follower=from_follower
            )
            if from_follower and leader_quota.is_throttled(
                TopicPartition(answer.topic, answer.partition)
            ):
                throttled_bytes += len(answer.records)
        # As Kafka: every throttled partition's bytes count, in-sync followers' too.
        leader_quota.record(throttled_bytes)
        return responses

    @staticmethod
    def _trace_fetch(request: FetchRequest, responses: Sequence[FetchPartitionResult]) -> None:
        trace = hop_trace.TRACE
        assert trace is not None
        offsets = {(fp.topic, fp.partition): fp.fetch_offset for fp in request.partitions}
        for answer in responses:
            start = offsets.get((answer.topic, answer.partition))
            if start is None or not len(answer.records):
                continue
            end = hop_trace.records_end(answer.records)
            trace.offsets(
                "fetch_answered", answer.topic, answer.partition, start, end, request.replica_id
            )

    def _leader_throttled(self, partition: Partition, tp: TopicPartition, replica_id: int) -> bool:
        """KIP-73 on the leader: a follower outside the ISR gets no records of a throttled
        partition while the leader's quota is exceeded (it fetches again)."""
        quota = self.quotas.leader
        return (
            replica_id not in partition.isr and quota.is_throttled(tp) and quota.is_quota_exceeded()
        )

    def _update_followers(
        self,
        replica_id: int,
        partitions: Sequence[FetchPartition],
        previous_fetch_ms: int | None = None,
        added: frozenset[TopicPartition] = frozenset(),
    ) -> None:
        """A follower's fetch offset is its LEO: record it, move the HW, maybe expand the ISR.
        In a fetch session (``previous_fetch_ms``: when its previous fetch came) ``partitions``
        are those listed, changed or to revisit; the others kept their fetch offset at that
        fetch, and so did these unless this fetch ``added`` them to the session (the previous
        fetch did not hold them)."""
        now = self._time_ms()
        for fp in partitions:
            tp = TopicPartition(fp.topic, fp.partition)
            partition = self._partitions.get(tp)
            if partition is None or not partition.is_leader:
                continue
            if fp.current_leader_epoch not in (-1, partition.leader_epoch):
                continue
            log = partition.log
            if not log.log_start_offset <= fp.fetch_offset <= log.log_end_offset:
                continue
            if self._diverging_epoch(partition, fp) is not None:
                continue
            if previous_fetch_ms is not None and tp not in added:
                partition.follower_fetched_again(replica_id, previous_fetch_ms)
            previous = partition.remote_replicas.get(replica_id)
            if not partition.update_follower_fetch_state(
                replica_id, fp.fetch_offset, fp.log_start_offset, now, log.log_end_offset
            ):
                continue
            if (
                hop_trace.TRACE is not None
                and previous is not None
                and previous.log_end_offset >= 0
            ):
                hop_trace.TRACE.offsets(
                    "follower_leo",
                    tp.topic,
                    tp.partition,
                    previous.log_end_offset,
                    fp.fetch_offset,
                    replica_id,
                )
            if previous is not None and previous.log_start_offset != fp.log_start_offset:
                self.purgatory.notify(low_watermark_key(tp))  # a DeleteRecords may complete
            if partition.maybe_increment_high_watermark():
                self.purgatory.notify(high_watermark_key(tp))
            new_isr = partition.isr_to_expand(replica_id)
            if new_isr is not None:
                self.alter_partition_manager.submit(partition, new_isr, "expand")

    @staticmethod
    def _diverging_epoch(partition: Partition, fp: FetchPartition) -> tuple[int, int] | None:
        """KIP-320: the follower's last fetched epoch ends before its fetch offset here."""
        if fp.last_fetched_epoch < 0:
            return None
        epoch, end_offset = partition.log.end_offset_for_epoch(fp.last_fetched_epoch)
        if epoch < 0:
            return None
        if epoch < fp.last_fetched_epoch or end_offset < fp.fetch_offset:
            return epoch, end_offset
        return None

    def _read(
        self,
        requested: Sequence[FetchPartition],
        replica_id: int,
        max_bytes: int,
        file_records: bool = False,
        *,
        read_committed: bool = False,
        client_metadata: ClientMetadata | None = None,
    ) -> _FetchRead:
        """A consumer reads up to the high watermark, or with ``read_committed`` up to the
        last stable offset with the aborted transactions its records may hold (KIP-98); a
        follower reads up to the LEO. A consumer with ``client_metadata`` may read from a
        follower, or be sent to another replica by the leader (KIP-392, the module docstring);
        Kafka's fetchOnlyLeader rule decides which fetches must come to the leader."""
        from_follower = replica_id >= 0
        only_leader = from_follower or (
            replica_id == _CONSUMER_REPLICA_ID and client_metadata is None
        )
        redirected = False
        # As Kafka: the answer is capped by replica.fetch.response.max.bytes for a follower and
        # fetch.max.bytes for a consumer, whatever the request asks (the first batch excepted).
        cap = (
            self.config.replica_fetch_response_max_bytes
            if from_follower
            else self.config.fetch_max_bytes
        )
        remaining = min(max_bytes if max_bytes > 0 else _DEFAULT_FETCH_MAX_BYTES, cap)
        min_one_message = True
        total = 0
        errors = False
        responses: list[FetchPartitionResult] = []
        unsettled: list[TopicPartition] = []
        for fp in requested:
            tp = TopicPartition(fp.topic, fp.partition)
            # Known before an error (say OFFSET_OUT_OF_RANGE) is still answered with it.
            high_watermark = last_stable_offset = log_start_offset = -1
            try:
                partition = self._hosted(tp)
                partition.check_leader_epoch(fp.current_leader_epoch, require_leader=only_leader)
                _check_fetch_request(partition, fp, replica_id, max_bytes)
                log = partition.log
                high_watermark = partition.high_watermark
                last_stable_offset = getattr(partition, "last_stable_offset", high_watermark)
                log_start_offset = log.log_start_offset
                preferred = (
                    self._preferred_read_replica(partition, client_metadata, fp.fetch_offset)
                    if client_metadata is not None and not from_follower
                    else None
                )
                if preferred is not None:
                    # Kafka skips the read: the consumer fetches from ``preferred`` next.
                    redirected = True
                    unsettled.append(tp)
                    responses.append(
                        FetchPartitionResult(
                            fp.topic,
                            fp.partition,
                            ErrorCode.NONE,
                            "",
                            high_watermark,
                            last_stable_offset,
                            log_start_offset,
                            preferred_read_replica=preferred,
                        )
                    )
                    continue
                if from_follower:
                    upper_bound = log.log_end_offset
                else:
                    upper_bound = last_stable_offset if read_committed else high_watermark
                diverging = self._diverging_epoch(partition, fp) if from_follower else None
                records: FetchedRecords = b""
                aborted: tuple[tuple[int, int], ...] = ()
                throttled = from_follower and self._leader_throttled(partition, tp, replica_id)
                if diverging is None and not throttled:
                    limit = (
                        fp.partition_max_bytes
                        if fp.partition_max_bytes > 0
                        else _DEFAULT_PARTITION_MAX_BYTES
                    )
                    records = log.read(
                        fp.fetch_offset,
                        min(limit, remaining),
                        None if from_follower else upper_bound,
                        min_one_message,
                        file_records=file_records,
                    ).records
                    if records:
                        min_one_message = False
                        remaining = max(remaining - len(records), 0)
                        total += len(records)
                        if read_committed and not from_follower:
                            aborted = tuple(
                                (txn.producer_id, txn.first_offset)
                                for txn in partition.aborted_transactions(
                                    fp.fetch_offset, upper_bound
                                )
                            )
                    if fp.fetch_offset < upper_bound:
                        unsettled.append(tp)
                else:
                    unsettled.append(tp)
                responses.append(
                    FetchPartitionResult(
                        fp.topic,
                        fp.partition,
                        ErrorCode.NONE,
                        "",
                        high_watermark,
                        last_stable_offset,
                        log_start_offset,
                        records,
                        diverging,
                        aborted,
                    )
                )
            except Exception as exc:
                if self._log_manager.maybe_handle_io_error(tp, exc, f"error reading {tp}"):
                    exc = KafkaStorageError(f"{self._offline_message(tp)}: {io_error_of(exc)}")
                elif not isinstance(exc, KafkaError):
                    raise
                responses.append(
                    FetchPartitionResult(
                        fp.topic,
                        fp.partition,
                        exc.code,
                        exc.message,
                        high_watermark,
                        last_stable_offset,
                        log_start_offset,
                    )
                )
                errors = True
                unsettled.append(tp)
        return _FetchRead(responses, total, errors, unsettled, redirected)

    def _preferred_read_replica(
        self, partition: Partition, client: ClientMetadata, fetch_offset: int
    ) -> int | None:
        """Where the leader's selector sends this consumer, when not to the leader itself
        (Kafka's ReplicaManager.findPreferredReadReplica): the candidates are the leader and
        the followers in the ISR whose log holds ``fetch_offset``, reachable on the client's
        listener. A lagging follower outside the ISR is never offered: the consumer would
        lag with it."""
        selector = self._replica_selector
        if selector is None or not partition.is_leader:
            return None
        now = self._time_ms()
        isr = partition.isr
        metadata = self._metadata
        candidates = [
            ReplicaView(
                broker_id,
                metadata.get_rack(broker_id),
                remote.log_end_offset,
                now - remote.last_caught_up_time_ms,
            )
            for broker_id, remote in partition.remote_replicas.items()
            if broker_id in isr
            and remote.log_start_offset <= fetch_offset <= remote.log_end_offset
            and metadata.get_listener_endpoint(broker_id, client.listener) is not None
        ]
        leader = ReplicaView(
            self.broker_id, self.config.broker_rack, partition.log.log_end_offset, 0
        )
        tp = TopicPartition(partition.topic, partition.partition)
        chosen = selector.select(tp, client, PartitionView((*candidates, leader), leader))
        if chosen is None or chosen.broker_id == self.broker_id:
            return None
        _log.debug(
            "fetch.preferred_read_replica",
            topic=partition.topic,
            partition=partition.partition,
            fetch_offset=fetch_offset,
            client_rack=client.rack_id,
            preferred_read_replica=chosen.broker_id,
        )
        return chosen.broker_id

    # --- ListOffsets and OffsetsForLeaderEpoch ------------------------------------------------

    async def list_offsets(self, request: ListOffsetsRequest) -> list[ListOffsetsPartitionResult]:
        """One result per requested partition, in request order."""
        consumer = request.replica_id == _CONSUMER_REPLICA_ID
        require_leader = request.replica_id != _DEBUGGING_REPLICA_ID
        read_committed = consumer and request.isolation_level == READ_COMMITTED
        results: list[ListOffsetsPartitionResult] = []
        for lp in request.partitions:
            timestamp = offset = leader_epoch = -1
            code, message = ErrorCode.NONE, ""
            try:
                partition = self._hosted(TopicPartition(lp.topic, lp.partition))
                partition.check_leader_epoch(lp.current_leader_epoch, require_leader=require_leader)
                log = partition.log
                cache = log.leader_epoch_cache
                # What this client may read: the LEO for a replica, else the HW, or the last
                # stable offset in read_committed.
                visible = (
                    log.log_end_offset
                    if not consumer
                    else getattr(partition, "last_stable_offset", partition.high_watermark)
                    if read_committed
                    else partition.high_watermark
                )
                if lp.timestamp == LATEST_TIMESTAMP:
                    offset = visible
                    epoch = cache.epoch_for_offset(max(offset - 1, 0))
                    leader_epoch = -1 if epoch is None else epoch
                elif lp.timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
                    offset = log.log_start_offset
                    epoch = cache.epoch_for_offset(log.log_start_offset)
                    leader_epoch = -1 if epoch is None else epoch
                else:
                    found = log.fetch_offset_by_timestamp(lp.timestamp)
                    if found is not None and found.offset < visible:
                        timestamp = found.timestamp
                        offset = found.offset
                        leader_epoch = -1 if found.leader_epoch is None else found.leader_epoch
            except KafkaError as exc:
                code, message = exc.code, exc.message
            results.append(
                ListOffsetsPartitionResult(
                    lp.topic, lp.partition, code, message, timestamp, offset, leader_epoch
                )
            )
        return results

    async def offsets_for_leader_epoch(
        self, request: OffsetsForLeaderEpochRequest
    ) -> list[EpochEndOffset]:
        """One result per requested partition, in request order."""
        require_leader = request.replica_id != _DEBUGGING_REPLICA_ID
        results: list[EpochEndOffset] = []
        for op in request.partitions:
            try:
                partition = self._hosted(TopicPartition(op.topic, op.partition))
                partition.check_leader_epoch(op.current_leader_epoch, require_leader=require_leader)
                epoch, end_offset = partition.log.end_offset_for_epoch(op.leader_epoch)
            except KafkaError as exc:
                results.append(EpochEndOffset(op.topic, op.partition, exc.code, exc.message))
            else:
                results.append(
                    EpochEndOffset(op.topic, op.partition, ErrorCode.NONE, "", epoch, end_offset)
                )
        return results

    # --- DeleteRecords --------------------------------------------------------------------------

    async def delete_records(
        self, partitions: Sequence[DeleteRecordsPartition], timeout_ms: int
    ) -> list[DeleteRecordsPartitionResult]:
        """Kafka's deleteRecords: each partition's leader moves its log start offset
        (``Partition.delete_records_on_leader``), then the answer waits until the replicas
        followed (delayed_delete_records.py). One result per partition, in request order."""
        results: list[DeleteRecordsPartitionResult] = []
        required: dict[int, int] = {}
        for i, request in enumerate(partitions):
            topic, index = request.topic, request.partition
            try:
                deleted = self._hosted(TopicPartition(topic, index)).delete_records_on_leader(
                    request.offset
                )
            except KafkaError as exc:
                results.append(
                    DeleteRecordsPartitionResult(topic, index, -1, exc.code, exc.message)
                )
                continue
            results.append(
                DeleteRecordsPartitionResult(topic, index, deleted.log_start_offset, ErrorCode.NONE)
            )
            required[i] = deleted.requested_offset
        return await DelayedDeleteRecords(
            results, required, self._low_watermark, self.purgatory
        ).wait(timeout_ms)

    def _low_watermark(self, tp: TopicPartition) -> int:
        return self._hosted(tp).low_watermark_if_leader(self._metadata.is_alive)

    def _offline_message(self, tp: TopicPartition) -> str:
        return f"{tp} is in an offline log dir on broker {self.broker_id}"

    def _hosted(self, tp: TopicPartition) -> Partition:
        partition = self._partitions.get(tp)
        if partition is not None:
            return partition
        if tp in self._offline_partitions:
            raise KafkaStorageError(self._offline_message(tp))
        if self._metadata.contains_partition(*tp):
            raise NotLeaderOrFollowerError(f"broker {self.broker_id} does not host {tp}")
        raise UnknownTopicOrPartitionError(f"{tp} is not known to this broker")

    # --- log dir failure (KIP-112) ------------------------------------------------------------

    @property
    def offline_partitions(self) -> frozenset[TopicPartition]:
        return frozenset(self._offline_partitions)

    async def handle_log_dir_failure(self, log_dir: Path) -> list[TopicPartition]:
        """Take the replicas in ``log_dir`` (offline now) offline: they stop leading and
        following, and answer KAFKA_STORAGE_ERROR until the broker restarts."""
        gone = self._log_manager.handle_log_dir_failure(log_dir)
        hosted = []
        for tp in gone:
            self._offline_partitions.add(tp)
            self._high_watermarks.pop(tp, None)
            partition = self._partitions.pop(tp, None)
            if partition is not None:
                partition.make_offline()
                hosted.append(tp)
            self._notify(tp)  # parked produces and fetches answer KAFKA_STORAGE_ERROR now
        _log.warning(
            "replicas_offline",
            broker_id=self.broker_id,
            log_dir=str(log_dir),
            partitions=[str(tp) for tp in gone],
            reason="log dir offline",
        )
        self.alter_log_dirs.handle_log_dir_failure()
        await self.fetchers.remove_partitions(gone)
        self._leadership_changed((), hosted)
        return gone

    def _on_fetcher_storage_error(self, tp: TopicPartition, exc: BaseException) -> bool:
        return self._log_manager.maybe_handle_io_error(
            tp, exc, f"error appending fetched data to {tp}"
        )

    # --- ISR ----------------------------------------------------------------------------------

    def _maybe_shrink_isr(self) -> None:
        now = self._time_ms()
        lag = self.config.replica_lag_time_max_ms
        sessions = self.fetch_sessions.cache
        for tp, partition in self._partitions.items():
            lagging = partition.out_of_sync_replicas(now, lag)
            if not lagging:
                continue
            # A follower whose fetch session holds the partition at the offset last recorded
            # fetched it again at each fetch of that session (fetch_session.py).
            for replica in lagging:
                remote = partition.remote_replicas.get(replica)
                if remote is not None:
                    fetched = sessions.follower_fetch_time(replica, tp, remote.log_end_offset)
                    partition.follower_fetched_again(replica, fetched)
            lagging = partition.out_of_sync_replicas(now, lag)
            if lagging:
                self.alter_partition_manager.submit(partition, partition.isr - lagging, "shrink")

    def _apply_isr_update(
        self, item: AlterPartitionItem, version: int, adopted: frozenset[int] | None
    ) -> bool:
        """The AlterPartitionManager's answer: the state znode holds our ISR (or ``adopted``)
        at ``version``. Applied if the partition still has the leadership it was proposed
        under; True when our ISR was applied (the controller is told of it)."""
        partition, state, new_isr, change = item
        topic, index = partition.topic, partition.partition
        current = partition.state
        if not (
            self._partitions.get(TopicPartition(topic, index)) is partition
            and isinstance(current, LeaderState)
            and current.leader_epoch == state.leader_epoch
        ):
            return False
        if adopted is not None:
            partition.apply_isr(adopted, version)
            _log.info(
                "isr_update.conflict",
                topic=topic,
                partition=index,
                leader_epoch=state.leader_epoch,
                proposed_isr=sorted(new_isr),
                isr=sorted(adopted),
                partition_epoch=version,
            )
            self.purgatory.notify(high_watermark_key(TopicPartition(topic, index)))
            return False
        old_isr = current.isr
        partition.apply_isr(new_isr, version)
        if change == "shrink":
            self.stats.isr_shrinks += 1
        else:
            self.stats.isr_expands += 1
        partition.maybe_increment_high_watermark()
        _log.info(
            "isr_shrunk" if change == "shrink" else "isr_expanded",
            topic=topic,
            partition=index,
            leader_epoch=state.leader_epoch,
            old_isr=sorted(old_isr),
            new_isr=sorted(new_isr),
            high_watermark=partition.high_watermark,
            log_end_offset=partition.log_end_offset,
            partition_epoch=version,
        )
        self.purgatory.notify(high_watermark_key(TopicPartition(topic, index)))
        return True

    def _isr_update_settled(self, tp: TopicPartition) -> None:
        # Each follower's next fetch records its fetch state here again, as when every fetch
        # visited every partition: an expansion refused while the write was in flight is
        # retried (a session's fetch visits only the partitions listed, changed or to revisit).
        self.fetch_sessions.cache.revisit(tp)
