"""Moving a replica between this broker's log dirs (KIP-113): Kafka's ReplicaAlterLogDirsManager,
ReplicaAlterLogDirsThread and LocalLeaderEndPoint.

AlterReplicaLogDirs names, per partition, the log dir its replica should be in. When the
replica is elsewhere, the LogManager creates a future log ``<topic>-<partition>.<id>-future``
in the target dir and a fetcher copies the current log into it. That fetcher is the generic
fetch loop of fetcher.py with a local "leader": ``LocalLeaderEndpoint`` answers Fetch and
OffsetsForLeaderEpoch from the current logs of this broker, as a leader answers a follower
(batches kept as they are, the leader epoch a follower's fetch diverged at, OFFSET_OUT_OF_RANGE
below the log start offset), so truncations of the current log (this broker became a follower
and cut its log back) reach the future log as they reach a follower: by KIP-320's diverging
epoch. The future replica is a ``Partition`` of its own (never hosted, never leader), so its
appends keep their producer state, ``.txnindex`` entries and snapshots as a follower's do.

When an answer leaves the future log at the current log's end, the swap runs at once, on the
loop that owns the partition, with no await in between, so that no append can come between
the check and the swap: the LogManager replaces the current log with the future one
(``replace_current_with_future``: renames, checkpoints of both dirs), and the hosted Partition
takes the new log (``Partition.replace_log``) with its role, ISR, high watermark and epochs.

    manager = ReplicaAlterLogDirsManager(broker_id, log_manager, hosted, ...)
    errors = manager.alter_replica_log_dirs({TopicPartition("t", 0): "/data/b"})
    manager.maybe_start_moves(partitions)   # after a LeaderAndIsr: resume futures found at load

Errors per partition, as Kafka's ReplicaManager.alterReplicaLogDirs answers them:
LOG_DIR_NOT_FOUND (the path is none of log.dirs), KAFKA_STORAGE_ERROR (the dir, the replica,
or any log dir is offline), REPLICA_NOT_AVAILABLE (this broker hosts no replica yet: the dir is
remembered for when the LeaderAndIsr creates it). A move to the dir the replica is in cancels
a move under way. The copy is throttled by ``replica.alter.log.dirs.io.max.bytes.per.second``
(replica_quota.py): no fetch while the bytes copied are over it. Not thread-safe: everything
runs on the broker's event loop.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import structlog

from minikafka.broker.replication.fetch_session import FetchSessionResponse
from minikafka.broker.replication.fetcher import (
    UNDEFINED_EPOCH,
    AbstractFetcher,
    FetchState,
    PartitionFetchState,
)
from minikafka.broker.replication.partition import Partition
from minikafka.broker.replication.replica_quota import UNTHROTTLED, ReplicaQuota
from minikafka.broker.replication.requests import (
    EpochEndOffset,
    FetchPartition,
    FetchPartitionResult,
    FetchRequest,
    OffsetsForLeaderEpochRequest,
)
from minikafka.broker.storage.log import UnexpectedAppendOffsetError
from minikafka.broker.storage.log_manager import LogManager
from minikafka.broker.storage.segment import FileRecords
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode, KafkaError, KafkaStorageError, OffsetOutOfRangeError

__all__ = [
    "LocalLeaderEndpoint",
    "LogDirPartition",
    "ReplicaAlterLogDirsFetcher",
    "ReplicaAlterLogDirsManager",
]

INVALID_OFFSET_LAG = -1  # Kafka's DescribeLogDirsResponse.INVALID_OFFSET_LAG

_log = structlog.get_logger(__name__)

# tp -> the hosted partition (its current log), or None.
HostedPartitions = Callable[[TopicPartition], Partition | None]


class LocalLeaderEndpoint:
    """The current logs of this broker as a leader endpoint (Kafka's LocalLeaderEndPoint):
    reads up to the log end offset, no waiting, no fetch session."""

    def __init__(self, hosted: HostedPartitions) -> None:
        self._hosted = hosted

    async def fetch(self, request: FetchRequest) -> FetchSessionResponse:
        return FetchSessionResponse(
            ErrorCode.NONE, 0, [self._read(fp, request.max_bytes) for fp in request.partitions]
        )

    def _read(self, fp: FetchPartition, max_bytes: int) -> FetchPartitionResult:
        partition = self._hosted(TopicPartition(fp.topic, fp.partition))
        if partition is None:
            return FetchPartitionResult(
                fp.topic, fp.partition, ErrorCode.NOT_LEADER_OR_FOLLOWER, "not hosted"
            )
        log = partition.log
        if fp.last_fetched_epoch >= 0:
            epoch, end_offset = log.end_offset_for_epoch(fp.last_fetched_epoch)
            if epoch >= 0 and (epoch < fp.last_fetched_epoch or end_offset < fp.fetch_offset):
                return FetchPartitionResult(
                    fp.topic,
                    fp.partition,
                    ErrorCode.NONE,
                    high_watermark=partition.high_watermark,
                    log_start_offset=log.log_start_offset,
                    diverging_epoch=(epoch, end_offset),
                )
        try:
            info = log.read(fp.fetch_offset, fp.partition_max_bytes or max_bytes)
        except OffsetOutOfRangeError as exc:
            return FetchPartitionResult(
                fp.topic,
                fp.partition,
                ErrorCode.OFFSET_OUT_OF_RANGE,
                exc.message,
                log_start_offset=log.log_start_offset,
            )
        except KafkaError as exc:
            return FetchPartitionResult(fp.topic, fp.partition, exc.code, exc.message)
        records = info.records
        if isinstance(records, FileRecords):
            records = records.read_and_close()
        return FetchPartitionResult(
            fp.topic,
            fp.partition,
            ErrorCode.NONE,
            high_watermark=partition.high_watermark,
            log_start_offset=log.log_start_offset,
            records=records,
        )

    async def offsets_for_leader_epoch(
        self, request: OffsetsForLeaderEpochRequest
    ) -> Sequence[EpochEndOffset]:
        results = []
        for p in request.partitions:
            partition = self._hosted(TopicPartition(p.topic, p.partition))
            if partition is None:
                results.append(
                    EpochEndOffset(p.topic, p.partition, ErrorCode.NOT_LEADER_OR_FOLLOWER)
                )
                continue
            epoch, end_offset = partition.log.end_offset_for_epoch(p.leader_epoch)
            results.append(
                EpochEndOffset(p.topic, p.partition, ErrorCode.NONE, "", epoch, end_offset)
            )
        return results

    async def close(self) -> None:
        return None


class ReplicaAlterLogDirsFetcher(AbstractFetcher):
    """Copies current logs into future logs (the follower's hooks, on the future replicas);
    ``on_caught_up(tp)`` runs when a future log reaches its current log's end."""

    def __init__(
        self,
        broker_id: int,
        hosted: HostedPartitions,
        future: Callable[[TopicPartition], Partition | None],
        *,
        on_caught_up: Callable[[TopicPartition], None],
        on_storage_error: Callable[[TopicPartition, BaseException], bool],
        partition_max_bytes: int,
        backoff_s: float,
        quota: ReplicaQuota = UNTHROTTLED,
    ) -> None:
        super().__init__(
            broker_id,
            LocalLeaderEndpoint(hosted),
            backoff_s=backoff_s,
            name=f"ReplicaAlterLogDirsThread-{broker_id}",
        )
        self._broker_id = broker_id
        self._hosted = hosted
        self._future = future
        self._on_caught_up = on_caught_up
        self._on_storage_error = on_storage_error
        self._partition_max_bytes = partition_max_bytes
        self._quota = quota

    @property
    def replica_id(self) -> int:
        return self._broker_id

    def _future_of(self, tp: TopicPartition) -> Partition:
        future = self._future(tp)
        if future is None:
            raise KafkaError(f"{tp} has no future replica here any more")
        return future

    def build_fetch_request(
        self,
        fetching: Mapping[TopicPartition, PartitionFetchState],
        changed: Collection[TopicPartition],
    ) -> FetchRequest | None:
        if self._quota.is_quota_exceeded():  # replica.alter.log.dirs.io.max.bytes.per.second
            return None
        partitions = []
        for tp, state in fetching.items():
            future = self._future(tp)
            if future is None:
                continue
            epoch = future.log.latest_epoch
            partitions.append(
                FetchPartition(
                    tp.topic,
                    tp.partition,
                    state.fetch_offset,
                    UNDEFINED_EPOCH,
                    UNDEFINED_EPOCH if epoch is None else epoch,
                    future.log.log_start_offset,
                    self._partition_max_bytes,
                )
            )
        return FetchRequest(self._broker_id, 0, 1, 0, partitions)

    def process_partition_data(
        self, tp: TopicPartition, state: PartitionFetchState, data: FetchPartitionResult
    ) -> int:
        future = self._future_of(tp)
        log = future.log
        if log.log_end_offset != state.fetch_offset:
            raise UnexpectedAppendOffsetError(
                f"{tp}: fetched at {state.fetch_offset} but the future log ends at "
                f"{log.log_end_offset}",
                state.fetch_offset,
                state.fetch_offset,
            )
        records = data.records
        if isinstance(records, FileRecords):
            records = records.read_and_close()
        if records:
            self._quota.record(len(records))
            try:
                future.append_records_as_follower(records)
            except UnexpectedAppendOffsetError as exc:
                if (
                    log.log_end_offset == log.log_start_offset
                    and log.log_end_offset < exc.first_offset
                ):
                    future.truncate_fully_and_start_at(exc.first_offset, "unexpected_offset")
                    future.append_records_as_follower(records)
                else:
                    raise
        start = data.log_start_offset
        if log.log_start_offset < start <= log.log_end_offset:
            log.maybe_increment_log_start_offset(start)
        current = self._hosted(tp)
        if current is not None and current.log.log_end_offset == log.log_end_offset:
            self._on_caught_up(tp)
        return log.log_end_offset

    def handle_storage_error(self, tp: TopicPartition, exc: BaseException) -> bool:
        return self._on_storage_error(tp, exc)

    def handle_offset_out_of_range(
        self, tp: TopicPartition, state: PartitionFetchState, data: FetchPartitionResult
    ) -> int:
        start = max(data.log_start_offset, 0)
        self._future_of(tp).truncate_fully_and_start_at(start, "offset_out_of_range")
        return start

    def truncate(self, tp: TopicPartition, offset: int, reason: str) -> None:
        self._future_of(tp).truncate_to(offset, reason)

    def latest_epoch(self, tp: TopicPartition) -> int | None:
        return self._future_of(tp).log.latest_epoch

    def log_end_offset(self, tp: TopicPartition) -> int:
        return self._future_of(tp).log.log_end_offset

    def end_offset_for_epoch(self, tp: TopicPartition, epoch: int) -> tuple[int, int]:
        return self._future_of(tp).log.end_offset_for_epoch(epoch)


@dataclass(frozen=True)
class LogDirPartition:
    """One log in a log dir, as DescribeLogDirs answers it."""

    topic: str
    partition: int
    size: int  # bytes in its segments
    # Current log: max(HW - LEO, 0); future log: the current log's LEO minus its own;
    # -1 when the partition is not hosted (Kafka's INVALID_OFFSET_LAG).
    offset_lag: int
    is_future: bool


class ReplicaAlterLogDirsManager:
    """Future replicas and their fetcher (module docstring). Lives on the broker's loop."""

    def __init__(
        self,
        broker_id: int,
        log_manager: LogManager,
        hosted: HostedPartitions,
        *,
        is_offline: Callable[[TopicPartition], bool],
        on_swapped: Callable[[TopicPartition], None],
        partition_max_bytes: int,
        backoff_s: float,
        quota: ReplicaQuota = UNTHROTTLED,
    ) -> None:
        self.broker_id = broker_id
        self._log_manager = log_manager
        self._hosted = hosted
        self._is_offline = is_offline
        self._on_swapped = on_swapped
        self._futures: dict[TopicPartition, Partition] = {}
        self.fetcher = ReplicaAlterLogDirsFetcher(
            broker_id,
            hosted,
            self._futures.get,
            on_caught_up=self._swap,
            on_storage_error=self._on_storage_error,
            partition_max_bytes=partition_max_bytes,
            backoff_s=backoff_s,
            quota=quota,
        )
        self.swaps = 0  # completed moves (tests read it)

    @property
    def moving(self) -> frozenset[TopicPartition]:
        return frozenset(self._futures)

    # --- AlterReplicaLogDirs ------------------------------------------------------------------

    def alter_replica_log_dirs(
        self, destinations: Mapping[TopicPartition, str]
    ) -> dict[TopicPartition, ErrorCode]:
        """Move each partition's replica to the log dir named (module docstring)."""
        return {tp: self._alter(tp, path) for tp, path in destinations.items()}

    def _alter(self, tp: TopicPartition, path: str) -> ErrorCode:
        try:
            log_dir = self._log_manager.check_log_dir(path)
            if self._is_offline(tp):
                raise KafkaStorageError(f"Partition {tp} is offline")
            future_dir = self._log_manager.future_log_dir_of(tp)
            if future_dir is not None and future_dir != log_dir and self._hosted(tp) is not None:
                self._stop(tp, delete=True)  # a new destination, or back where it is
            self._log_manager.maybe_update_preferred_log_dir(tp, log_dir)
            partition = self._hosted(tp)
            if partition is None:
                return ErrorCode.REPLICA_NOT_AVAILABLE
            log = self._log_manager.create_future_log(tp, log_dir)
            if log is not None and tp not in self._futures:
                self._start(tp, partition, log)
            return ErrorCode.NONE
        except KafkaError as exc:
            _log.warning(
                "alter_replica_log_dirs.refused",
                topic=tp.topic,
                partition=tp.partition,
                log_dir=path,
                error=exc.code.name,
                message=exc.message,
            )
            return exc.code

    def _start(self, tp: TopicPartition, partition: Partition, log: object) -> None:
        future_log = self._log_manager.get_future_log(tp)
        assert future_log is not None and future_log is log
        future = Partition(future_log, self.broker_id)
        self._futures[tp] = future
        self.fetcher.add_partitions(
            {
                tp: PartitionFetchState(
                    future_log.log_end_offset, partition.leader_epoch, FetchState.TRUNCATING
                )
            }
        )
        self.fetcher.start()
        _log.info(
            "replica_move.started",
            topic=tp.topic,
            partition=tp.partition,
            log_dir=str(self._log_manager.future_log_dir_of(tp)),
            future_log_end_offset=future_log.log_end_offset,
            log_end_offset=partition.log_end_offset,
        )

    def maybe_start_moves(self, partitions: Iterable[TopicPartition]) -> None:
        """Resume the moves of hosted partitions whose future log is here (found at the load,
        after a restart) but not being copied (Kafka's maybeAddLogDirFetchers)."""
        for tp in partitions:
            partition = self._hosted(tp)
            future_log = self._log_manager.get_future_log(tp)
            if partition is None or future_log is None or tp in self._futures:
                continue
            self._start(tp, partition, future_log)

    def _stop(self, tp: TopicPartition, *, delete: bool) -> None:
        self.fetcher.remove_partitions([tp])
        self._futures.pop(tp, None)
        if delete:
            self._log_manager.delete_future_log(tp)

    def remove_partitions(self, tps: Iterable[TopicPartition], *, delete: bool) -> None:
        """Stop moving ``tps`` (StopReplica; their future logs go with ``delete``)."""
        for tp in tps:
            if tp in self._futures or (delete and self._log_manager.get_future_log(tp)):
                self._stop(tp, delete=delete)

    def handle_log_dir_failure(self) -> None:
        """Forget the future replicas whose log (or current log) went with an offline dir."""
        for tp in list(self._futures):
            if self._log_manager.get_future_log(tp) is None or self._hosted(tp) is None:
                self._stop(tp, delete=False)

    def _on_storage_error(self, tp: TopicPartition, exc: BaseException) -> bool:
        log_dir = self._log_manager.future_log_dir_of(tp)
        if log_dir is None:
            return False
        return self._log_manager.failure_channel.maybe_add_offline_log_dir(
            log_dir, exc, f"error appending to the future log of {tp}"
        )

    def _swap(self, tp: TopicPartition) -> None:
        partition = self._hosted(tp)
        future = self._futures.get(tp)
        if partition is None or future is None:
            return
        source = self._log_manager.log_dir_of(tp.topic, tp.partition)
        log = self._log_manager.replace_current_with_future(tp)
        partition.replace_log(log)
        self.fetcher.remove_partitions([tp])
        del self._futures[tp]
        self.swaps += 1
        _log.info(
            "replica_move.completed",
            topic=tp.topic,
            partition=tp.partition,
            log_dir=str(self._log_manager.log_dir_of(tp.topic, tp.partition)),
            previous_log_dir=str(source),
            log_end_offset=log.log_end_offset,
            high_watermark=partition.high_watermark,
            leader_epoch=partition.leader_epoch,
        )
        self._on_swapped(tp)

    async def shutdown(self) -> None:
        await self.fetcher.stop()

    # --- DescribeLogDirs ----------------------------------------------------------------------

    def describe_log_dir(
        self, log_dir: Path, wanted: Callable[[TopicPartition], bool]
    ) -> list[LogDirPartition]:
        """The logs in ``log_dir`` (current and future) of the partitions ``wanted``."""
        result = []
        manager = self._log_manager
        for tp, log in sorted(manager.logs.items()):
            if manager.log_dir_of(tp.topic, tp.partition) != log_dir or not wanted(tp):
                continue
            partition = self._hosted(tp)
            lag = (
                INVALID_OFFSET_LAG
                if partition is None
                else max(partition.high_watermark - log.log_end_offset, 0)
            )
            result.append(LogDirPartition(tp.topic, tp.partition, log.size, lag, False))
        for tp, log in sorted(manager.future_logs.items()):
            if manager.future_log_dir_of(tp) != log_dir or not wanted(tp):
                continue
            partition = self._hosted(tp)
            lag = (
                INVALID_OFFSET_LAG
                if partition is None
                else partition.log_end_offset - log.log_end_offset
            )
            result.append(LogDirPartition(tp.topic, tp.partition, log.size, lag, True))
        return result
