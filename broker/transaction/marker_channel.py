"""Writing a finished transaction's markers: Kafka's TransactionMarkerChannelManager and its
TransactionMarkerRequestCompletionHandler.

Once PrepareCommit or PrepareAbort is in the log, the transaction's partitions each get a
COMMIT or ABORT control batch (WriteTxnMarkers to the partition's leader, through the
``MarkerWriter`` the server provides). Each partition whose marker is written leaves the
transaction; when none is left, CompleteCommit / CompleteAbort is appended. Per partition:

* NONE: done.
* NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION (the leader's metadata lags),
  NOT_ENOUGH_REPLICAS(_AFTER_APPEND), REQUEST_TIMED_OUT, KAFKA_STORAGE_ERROR, a leader not
  reachable (LEADER_NOT_AVAILABLE, BROKER_NOT_AVAILABLE, NETWORK_EXCEPTION), a group
  coordinator still loading or moving (COORDINATOR_*, NOT_COORDINATOR): sent again to the
  then current leader after ``marker_retry_backoff_ms``. A writer that raises instead of
  answering (a lost connection) has every partition of the round sent again.
* A partition the cluster no longer knows (``partition_exists`` false before a round: its topic
  was deleted) is dropped without a marker, as Kafka drops partitions with no leader.
* UNSUPPORTED_FOR_MESSAGE_FORMAT, UNSUPPORTED_VERSION: dropped (the producer could not have
  written there).
* INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED: a newer producer or coordinator owns
  the transaction; sending stops and the transaction is left to it.
* Anything else is a bug (Kafka throws): logged, sending stops.

Sending also stops when this broker stops coordinating the transaction's partition of
``__transaction_state`` or its coordinator epoch changes: the next coordinator finishes it
when it loads the PrepareCommit/PrepareAbort record. The Complete* append is retried while it
gets COORDINATOR_NOT_AVAILABLE (too few replicas, a timeout) and given up on NOT_COORDINATOR
and COORDINATOR_LOAD_IN_PROGRESS, for the same reason.

Not thread-safe: runs on the broker's event loop, one task per transaction being completed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import structlog

from minikafka.broker.replication.scheduler import BackgroundTasks
from minikafka.broker.transaction.state_manager import TransactionStateManager
from minikafka.broker.transaction.transaction_metadata import (
    TransactionMetadata,
    TxnTransitMetadata,
)
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode

__all__ = [
    "Cancellable",
    "MarkerEntry",
    "MarkerWriter",
    "TransactionMarkerChannel",
]

_log = structlog.get_logger(__name__)


class Cancellable(Protocol):
    def cancel(self) -> None: ...


class MarkerEntry(NamedTuple):
    """One producer's markers (Kafka's WritableTxnMarker)."""

    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    committed: bool
    partitions: tuple[TopicPartition, ...]


class MarkerWriter(Protocol):
    """WriteTxnMarkers to each partition's current leader (the server adapts its metadata and
    the inter-broker network; a local leader appends directly)."""

    async def write_markers(
        self, entries: Sequence[MarkerEntry]
    ) -> dict[tuple[int, TopicPartition], int]:
        """The error code per (producer id, partition); a partition left out counts as
        REQUEST_TIMED_OUT."""
        ...


_RETRIABLE = frozenset(
    {
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.BROKER_NOT_AVAILABLE,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
    }
)
_FENCED = frozenset({ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.TRANSACTION_COORDINATOR_FENCED})
_DROPPED = frozenset({ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT, ErrorCode.UNSUPPORTED_VERSION})


@dataclass(frozen=True, eq=False)
class _PendingCompleteTxn:
    transactional_id: str
    coordinator_epoch: int
    metadata: TransactionMetadata
    target: TxnTransitMetadata  # the Complete* state, prepared


class TransactionMarkerChannel:
    """Markers of transactions in PrepareCommit/PrepareAbort, then their Complete* record."""

    def __init__(
        self,
        state_manager: TransactionStateManager,
        writer: MarkerWriter,
        *,
        call_later: Callable[[float, Callable[[], None]], Cancellable],
        retry_backoff_ms: int,
        partition_exists: Callable[[TopicPartition], bool],
    ) -> None:
        self._state = state_manager
        self._writer = writer
        self._call_later = call_later
        self._backoff_ms = retry_backoff_ms
        self._partition_exists = partition_exists
        self._pending: dict[str, _PendingCompleteTxn] = {}
        self._tasks = BackgroundTasks("transaction_markers.task_failed")

    @property
    def pending_transactional_ids(self) -> list[str]:
        return sorted(self._pending)

    def add_txn_markers_to_send(
        self,
        coordinator_epoch: int,
        committed: bool,
        metadata: TransactionMetadata,
        target: TxnTransitMetadata,
    ) -> None:
        """Start writing the markers of ``metadata`` (in Prepare*, ``target`` its Complete*)."""
        pending = _PendingCompleteTxn(
            metadata.transactional_id, coordinator_epoch, metadata, target
        )
        self._pending[metadata.transactional_id] = pending
        entry = MarkerEntry(
            metadata.producer_id,
            metadata.producer_epoch,
            coordinator_epoch,
            committed,
            tuple(sorted(metadata.partitions)),
        )
        self._spawn(self._complete(pending, entry))

    def remove_markers_for_partition(self, partition: int) -> None:
        """Stop completing the transactions of a ``__transaction_state`` partition."""
        for transactional_id in [
            t for t in self._pending if self._state.partition_for(t) == partition
        ]:
            del self._pending[transactional_id]

    def shutdown(self) -> None:
        self._pending.clear()
        self._tasks.cancel_all()

    # --- the work -----------------------------------------------------------------------------

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        self._tasks.spawn(coroutine)

    def _is_current(self, pending: _PendingCompleteTxn) -> bool:
        """Still ours to finish: not removed, and the id is still coordinated here under the
        same coordinator epoch (Kafka cancels the markers otherwise)."""
        if self._pending.get(pending.transactional_id) is not pending:
            return False
        error, current = self._state.get_transaction_state(pending.transactional_id)
        if error != ErrorCode.NONE or current is None:
            self._forget(pending)
            return False
        if current.coordinator_epoch != pending.coordinator_epoch:
            self._forget(pending)
            return False
        return True

    def _forget(self, pending: _PendingCompleteTxn) -> None:
        if self._pending.get(pending.transactional_id) is pending:
            del self._pending[pending.transactional_id]

    async def _complete(self, pending: _PendingCompleteTxn, entry: MarkerEntry) -> None:
        if await self._write_markers(pending, entry):
            await self._write_completion(pending)

    async def _write_markers(self, pending: _PendingCompleteTxn, entry: MarkerEntry) -> bool:
        """True once every partition is done with; False when sending stopped."""
        metadata = pending.metadata
        remaining = set(entry.partitions)
        while True:
            if not self._is_current(pending):
                return False
            for tp in [tp for tp in remaining if not self._partition_exists(tp)]:
                _log.info(
                    "transaction_markers.partition_gone",
                    transactional_id=pending.transactional_id,
                    partition=str(tp),
                )
                metadata.remove_partition(tp)
                remaining.discard(tp)
            if not remaining:
                return True
            round_entry = entry._replace(partitions=tuple(sorted(remaining)))
            try:
                results = await self._writer.write_markers([round_entry])
            except asyncio.CancelledError:
                raise
            except Exception as e:
                _log.info(
                    "transaction_markers.send_failed",
                    transactional_id=pending.transactional_id,
                    error=repr(e),
                )
                results = {}
            if not self._is_current(pending):
                return False
            retry: set[TopicPartition] = set()
            for tp in sorted(remaining):
                code = results.get((entry.producer_id, tp), ErrorCode.REQUEST_TIMED_OUT)
                if code == ErrorCode.NONE or code in _DROPPED:
                    metadata.remove_partition(tp)
                elif code in _RETRIABLE:
                    retry.add(tp)
                else:
                    self._forget(pending)
                    log = _log.info if code in _FENCED else _log.error
                    log(
                        "transaction_markers.stopped",
                        transactional_id=pending.transactional_id,
                        producer_id=entry.producer_id,
                        producer_epoch=entry.producer_epoch,
                        partition=str(tp),
                        error=_name(code),
                    )
                    return False
            remaining = retry
            if not remaining:
                return True
            _log.debug(
                "transaction_markers.retrying",
                transactional_id=pending.transactional_id,
                partitions=sorted(str(tp) for tp in remaining),
            )
            await self._sleep(self._backoff_ms)

    async def _write_completion(self, pending: _PendingCompleteTxn) -> None:
        while self._is_current(pending):
            error = await self._state.append_transaction_to_log(
                pending.transactional_id,
                pending.coordinator_epoch,
                pending.target,
                retry_on_error=lambda e: e == ErrorCode.COORDINATOR_NOT_AVAILABLE,
            )
            if error != ErrorCode.COORDINATOR_NOT_AVAILABLE:
                if error not in (
                    ErrorCode.NONE,
                    ErrorCode.NOT_COORDINATOR,
                    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                ):
                    _log.error(
                        "transaction_markers.completion_failed",
                        transactional_id=pending.transactional_id,
                        error=error.name,
                    )
                break
            await self._sleep(self._backoff_ms)
        self._forget(pending)

    async def _sleep(self, ms: int) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not future.done():
                future.set_result(None)

        handle = self._call_later(ms / 1000, wake)
        try:
            await future
        finally:
            handle.cancel()


def _name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)
