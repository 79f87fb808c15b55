"""The transaction coordinator: Kafka's TransactionCoordinator, in one broker.

The requests of a transactional producer (KIP-98, with KIP-360's epoch rules), each checked
against the id's state (``transaction_metadata.py``), written to ``__transaction_state`` with
acks=all (``state_manager.py``) before it is answered:

* InitProducerId: a new id gets a producer id at epoch 0; a known one the next epoch, which
  fences the producer that held the last (PRODUCER_FENCED from then on). An id with an Ongoing
  transaction has it aborted first under a bumped epoch (PrepareEpochFence, then PrepareAbort
  and its markers) and is answered CONCURRENT_TRANSACTIONS: the client's retry bumps again.
  A producer id and epoch in the request (KIP-360, a producer recovering) must be the current
  ones (or the last epoch: a retry whose answer was lost), else PRODUCER_FENCED. An exhausted
  epoch takes a new producer id. A timeout above ``transaction.max.timeout.ms`` (or not
  positive) is INVALID_TRANSACTION_TIMEOUT.
* AddPartitionsToTxn / AddOffsetsToTxn (the group's ``__consumer_offsets`` partition): Empty
  or Complete* → Ongoing, or more partitions for the Ongoing transaction.
* EndTxn: Ongoing → PrepareCommit / PrepareAbort, answered once that is in the log; then the
  markers (``marker_channel.py``) and CompleteCommit / CompleteAbort. A retry of an EndTxn that
  completed is answered NONE; the other outcome's, INVALID_TXN_STATE; an EndTxn while the
  markers are being written, CONCURRENT_TRANSACTIONS; one with no transaction (Empty),
  INVALID_TXN_STATE.
* Every ``transaction.abort.timed.out.transaction.cleanup.interval.ms`` an Ongoing transaction
  older than its timeout is aborted under a bumped epoch, so that its producer is fenced.
  Every ``transaction.remove.expired.transaction.cleanup.interval.ms`` ids idle in Empty or
  Complete* for ``transactional.id.expiration.ms`` are tombstoned.

Errors of the id's producer id and epoch are checked first: an unknown id or another producer
id is INVALID_PRODUCER_ID_MAPPING, another epoch PRODUCER_FENCED (the Kafka door answers
INVALID_PRODUCER_EPOCH to request versions that predate PRODUCER_FENCED, as Kafka's KafkaApis).

Leadership: this broker coordinates the ids of the ``__transaction_state`` partitions it leads.
On election it loads the partition (COORDINATOR_LOAD_IN_PROGRESS meanwhile) under the
partition's leader epoch as coordinator epoch, then finishes every PrepareCommit/PrepareAbort
found (markers, Complete*); on resignation it forgets the partition (NOT_COORDINATOR).

Not thread-safe: every method runs on the broker's event loop; timers are the loop's
``call_later`` (a fake in unit tests).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import structlog

from minikafka.broker.group.coordinator import partition_for
from minikafka.broker.replication.scheduler import BackgroundTasks
from minikafka.broker.transaction.marker_channel import (
    Cancellable,
    MarkerEntry,
    MarkerWriter,
    TransactionMarkerChannel,
)
from minikafka.broker.transaction.state_manager import (
    ListedTransaction,
    TransactionConfig,
    TransactionStateLog,
    TransactionStateManager,
)
from minikafka.broker.transaction.transaction_metadata import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TransactionMetadata,
    TxnTransitMetadata,
    is_epoch_exhausted,
)
from minikafka.proto.common import GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC, TopicPartition
from minikafka.proto.errors import ErrorCode, KafkaError
from minikafka.proto.transaction_log import TransactionState

__all__ = [
    "Cancellable",
    "InitPidResult",
    "ListResult",
    "ListedTransaction",
    "MarkerEntry",
    "MarkerWriter",
    "ProducerIdSource",
    "TransactionConfig",
    "TransactionCoordinator",
    "TransactionDescription",
    "TransactionStateLog",
]

_log = structlog.get_logger(__name__)

_S = TransactionState


class ProducerIdSource(Protocol):
    """Kafka's ProducerIdManager: blocks of ids from ``/latest_producer_id_block``."""

    async def generate_producer_id(self) -> int:
        """A producer id no other producer was given; raises KafkaError when none can be had."""
        ...


class InitPidResult(NamedTuple):
    error_code: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True)
class TransactionDescription:
    """One transactional id in DescribeTransactions (Kafka's defaults when ``error_code`` is
    set)."""

    transactional_id: str
    error_code: ErrorCode
    state: str = ""  # Kafka's name: "Ongoing"
    transaction_timeout_ms: int = 0
    transaction_start_time_ms: int = 0
    producer_id: int = 0
    producer_epoch: int = 0
    partitions: tuple[TopicPartition, ...] = ()


class ListResult(NamedTuple):
    error_code: ErrorCode
    unknown_state_filters: list[str]
    transaction_states: list[ListedTransaction]


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class TransactionCoordinator:
    """Transactional ids whose ``__transaction_state`` partition this broker leads."""

    def __init__(
        self,
        broker_id: int,
        config: TransactionConfig,
        state_log: TransactionStateLog,
        producer_ids: ProducerIdSource,
        markers: MarkerWriter,
        *,
        call_later: Callable[[float, Callable[[], None]], Cancellable],
        now_ms: Callable[[], int] = _wall_clock_ms,
        partition_exists: Callable[[TopicPartition], bool],
        partition_count: Callable[[], int] | None = None,
    ) -> None:
        """``partition_exists``: whether this broker's metadata knows a partition (checked
        before each round of markers: a partition of a deleted topic is dropped, as Kafka
        drops one without a leader; an UNKNOWN_TOPIC_OR_PARTITION answer alone is retried, a
        leader's metadata may lag). ``partition_count``: the partition count of
        ``__transaction_state`` (default: the configured one)."""
        self.broker_id = broker_id
        self.config = config
        self._log = state_log
        self._producer_ids = producer_ids
        self._call_later = call_later
        self._now_ms = now_ms
        self.state = TransactionStateManager(
            config, state_log, time_ms=now_ms, partition_count=partition_count
        )
        self.markers = TransactionMarkerChannel(
            self.state,
            markers,
            call_later=call_later,
            retry_backoff_ms=config.marker_retry_backoff_ms,
            partition_exists=partition_exists,
        )
        self._tasks = BackgroundTasks("transaction_coordinator.task_failed")
        self._active = True
        self._abort_timer: Cancellable | None = None
        self._expire_timer: Cancellable | None = None

    def partition_for(self, transactional_id: str) -> int:
        """Kafka's ``Utils.abs(transactionalId.hashCode) % transactionTopicPartitionCount``."""
        return self.state.partition_for(transactional_id)

    # --- InitProducerId -----------------------------------------------------------------------

    async def init_producer_id(
        self,
        transactional_id: str | None,
        transaction_timeout_ms: int,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
    ) -> InitPidResult:
        """A producer id and epoch for the id (module docstring); without a transactional id
        (an idempotent producer), a fresh producer id at epoch 0."""
        if transactional_id is None:
            error, new_id = await self._generate_producer_id()
            if error != ErrorCode.NONE:
                return InitPidResult(error)
            return InitPidResult(ErrorCode.NONE, new_id, 0)
        if not transactional_id:
            return InitPidResult(ErrorCode.INVALID_REQUEST)
        if (producer_id == NO_PRODUCER_ID) != (producer_epoch == NO_PRODUCER_EPOCH):
            return InitPidResult(ErrorCode.INVALID_REQUEST)  # KafkaApis: both or neither
        expected = None if producer_id == NO_PRODUCER_ID else (producer_id, producer_epoch)
        if not 0 < transaction_timeout_ms <= self.config.transaction_max_timeout_ms:
            return InitPidResult(ErrorCode.INVALID_TRANSACTION_TIMEOUT)

        error, current = self.state.get_transaction_state(transactional_id)
        if error == ErrorCode.NONE and current is None:
            error, new_id = await self._generate_producer_id()
            if error != ErrorCode.NONE:
                return InitPidResult(error)
            created = TransactionMetadata(
                transactional_id,
                new_id,
                NO_PRODUCER_EPOCH,
                transaction_timeout_ms,
                _S.EMPTY,
                self._now_ms(),
            )
            error, current = self.state.get_transaction_state(transactional_id, create=created)
        if error != ErrorCode.NONE:
            return InitPidResult(error)
        assert current is not None
        coordinator_epoch, metadata = current
        transit = await self._prepare_init_producer_id(metadata, transaction_timeout_ms, expected)
        if isinstance(transit, ErrorCode):
            return InitPidResult(transit)
        if transit.state is _S.PREPARE_EPOCH_FENCE:
            _log.info(
                "transaction.fencing_ongoing",
                transactional_id=transactional_id,
                producer_id=transit.producer_id,
                producer_epoch=transit.producer_epoch,
                partitions=sorted(str(tp) for tp in metadata.partitions),
            )
            error = await self._end_transaction(
                transactional_id,
                transit.producer_id,
                transit.producer_epoch,
                committed=False,
                from_client=False,
            )
            return InitPidResult(
                ErrorCode.CONCURRENT_TRANSACTIONS if error == ErrorCode.NONE else error
            )
        error = await self.state.append_transaction_to_log(
            transactional_id, coordinator_epoch, transit
        )
        if error != ErrorCode.NONE:
            return InitPidResult(error)
        return InitPidResult(ErrorCode.NONE, transit.producer_id, transit.producer_epoch)

    async def _prepare_init_producer_id(
        self,
        metadata: TransactionMetadata,
        timeout_ms: int,
        expected: tuple[int, int] | None,
    ) -> TxnTransitMetadata | ErrorCode:
        if metadata.pending_transition_in_progress:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if expected is not None and not (
            # A just created id (epoch -1: the producer recovers from UNKNOWN_PRODUCER_ID),
            # the current producer id (its epoch checked below), or the last one with an
            # exhausted epoch (a retry of the rotation whose answer was lost).
            metadata.producer_epoch == NO_PRODUCER_EPOCH
            or expected[0] == metadata.producer_id
            or (expected[0] == metadata.last_producer_id and is_epoch_exhausted(expected[1]))
        ):
            return ErrorCode.PRODUCER_FENCED
        if metadata.state in (_S.PREPARE_ABORT, _S.PREPARE_COMMIT):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if metadata.state is _S.ONGOING:
            # This epoch is never told to the client: the abort runs under it, the client is
            # answered CONCURRENT_TRANSACTIONS and its retry bumps again (or rotates the id).
            return metadata.prepare_fence_producer_epoch()
        if metadata.state not in (_S.EMPTY, _S.COMPLETE_ABORT, _S.COMPLETE_COMMIT):
            raise AssertionError(f"{metadata}: InitProducerId meets a state never entered")
        if metadata.is_producer_epoch_exhausted and (
            expected is None or expected[1] == metadata.producer_epoch
        ):
            error, new_id = await self._generate_producer_id()
            if error != ErrorCode.NONE:
                return error
            if metadata.pending_transition_in_progress or metadata.state not in (
                _S.EMPTY,
                _S.COMPLETE_ABORT,
                _S.COMPLETE_COMMIT,
            ):  # another request got in while the id was generated
                return ErrorCode.CONCURRENT_TRANSACTIONS
            return metadata.prepare_producer_id_rotation(
                new_id, timeout_ms, self._now_ms(), record_last_epoch=expected is not None
            )
        return metadata.prepare_increment_producer_epoch(
            timeout_ms, None if expected is None else expected[1], self._now_ms()
        )

    async def _generate_producer_id(self) -> tuple[ErrorCode, int]:
        try:
            return ErrorCode.NONE, await self._producer_ids.generate_producer_id()
        except KafkaError as e:
            return e.code, NO_PRODUCER_ID
        except Exception:
            _log.exception("transaction.producer_id_failed")
            return ErrorCode.UNKNOWN_SERVER_ERROR, NO_PRODUCER_ID

    # --- AddPartitionsToTxn and AddOffsetsToTxn -----------------------------------------------

    async def add_partitions_to_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> dict[TopicPartition, int]:
        """Add partitions to the transaction (one error for all of them, as Kafka's)."""
        wanted = list(dict.fromkeys(partitions))
        error = await self._add_partitions(transactional_id, producer_id, producer_epoch, wanted)
        return dict.fromkeys(wanted, int(error))

    async def add_offsets_to_txn(
        self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str
    ) -> int:
        """Add the group's ``__consumer_offsets`` partition to the transaction."""
        offsets_partition = TopicPartition(
            GROUP_METADATA_TOPIC,
            partition_for(group_id, self.config.offsets_topic_num_partitions),
        )
        return int(
            await self._add_partitions(
                transactional_id, producer_id, producer_epoch, [offsets_partition]
            )
        )

    async def _add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: list[TopicPartition],
    ) -> ErrorCode:
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        error, current = self.state.get_transaction_state(transactional_id)
        if error != ErrorCode.NONE:
            return error
        if current is None:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        coordinator_epoch, metadata = current
        if metadata.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if metadata.producer_epoch != producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        if metadata.pending_transition_in_progress:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if metadata.state in (_S.PREPARE_COMMIT, _S.PREPARE_ABORT):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if metadata.state is _S.ONGOING and set(partitions) <= metadata.partitions:
            return ErrorCode.NONE
        transit = metadata.prepare_add_partitions(partitions, self._now_ms())
        return await self.state.append_transaction_to_log(
            transactional_id, coordinator_epoch, transit
        )

    def verify_partitions_in_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> dict[TopicPartition, int]:
        """AddPartitionsToTxn v4 ``verify_only`` (KIP-890): NONE for a partition in the
        Ongoing transaction, TRANSACTION_ABORTABLE for one that is not."""
        wanted = list(dict.fromkeys(partitions))
        if not transactional_id:
            return dict.fromkeys(wanted, int(ErrorCode.INVALID_REQUEST))
        error, current = self.state.get_transaction_state(transactional_id)
        if error == ErrorCode.NONE:
            if current is None or current.metadata.producer_id != producer_id:
                error = ErrorCode.INVALID_PRODUCER_ID_MAPPING
            elif current.metadata.producer_epoch != producer_epoch:
                error = ErrorCode.PRODUCER_FENCED
            elif current.metadata.state in (_S.PREPARE_COMMIT, _S.PREPARE_ABORT):
                error = ErrorCode.CONCURRENT_TRANSACTIONS
        if error != ErrorCode.NONE or current is None:
            return dict.fromkeys(wanted, int(error))
        return {
            tp: int(
                ErrorCode.NONE
                if tp in current.metadata.partitions
                else ErrorCode.TRANSACTION_ABORTABLE
            )
            for tp in wanted
        }

    # --- EndTxn -------------------------------------------------------------------------------

    async def end_txn(
        self, transactional_id: str, producer_id: int, producer_epoch: int, committed: bool
    ) -> int:
        """Commit or abort the Ongoing transaction: answered once PrepareCommit/PrepareAbort
        is in the log; the markers and Complete* follow."""
        return int(
            await self._end_transaction(
                transactional_id, producer_id, producer_epoch, committed, from_client=True
            )
        )

    async def _end_transaction(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        committed: bool,
        *,
        from_client: bool,
    ) -> ErrorCode:
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        error, current = self.state.get_transaction_state(transactional_id)
        if error != ErrorCode.NONE:
            return error
        if current is None:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        coordinator_epoch, metadata = current
        if metadata.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        # A client never bumps the epoch; the coordinator's own abort (fence, timeout) does.
        if (from_client and producer_epoch != metadata.producer_epoch) or (
            producer_epoch < metadata.producer_epoch
        ):
            return ErrorCode.PRODUCER_FENCED
        if metadata.pending_transition_in_progress and (
            metadata.pending_state is not _S.PREPARE_EPOCH_FENCE
        ):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        state = metadata.state
        outcome = _S.PREPARE_COMMIT if committed else _S.PREPARE_ABORT
        if state in (_S.COMPLETE_COMMIT, _S.COMPLETE_ABORT):
            done = _S.COMPLETE_COMMIT if committed else _S.COMPLETE_ABORT
            return ErrorCode.NONE if state is done else self._invalid(metadata, committed)
        if state in (_S.PREPARE_COMMIT, _S.PREPARE_ABORT):
            if state is outcome:
                return ErrorCode.CONCURRENT_TRANSACTIONS
            return self._invalid(metadata, committed)
        if state is _S.EMPTY:
            return self._invalid(metadata, committed)
        if state is not _S.ONGOING:
            raise AssertionError(f"{metadata}: EndTxn meets a state never entered")

        is_epoch_fence = False
        if outcome is _S.PREPARE_ABORT and metadata.pending_state is _S.PREPARE_EPOCH_FENCE:
            # The fence becomes this abort, written under the bumped epoch.
            is_epoch_fence = True
            metadata.pending_state = None
            metadata.producer_epoch = producer_epoch
            metadata.last_producer_epoch = NO_PRODUCER_EPOCH
        transit = metadata.prepare_abort_or_commit(outcome, self._now_ms())
        error = await self.state.append_transaction_to_log(
            transactional_id, coordinator_epoch, transit
        )
        if error != ErrorCode.NONE:
            if is_epoch_fence:
                _, now = self.state.get_transaction_state(transactional_id)
                if now is not None and now.coordinator_epoch == coordinator_epoch:
                    now.metadata.has_failed_epoch_fence = True
            return error

        error, current = self.state.get_transaction_state(transactional_id)
        if error != ErrorCode.NONE:
            return error
        if current is None or current.coordinator_epoch != coordinator_epoch:
            return ErrorCode.NOT_COORDINATOR
        metadata = current.metadata
        if metadata.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if metadata.producer_epoch != producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        if metadata.pending_transition_in_progress:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if metadata.state is not outcome:
            return self._invalid(metadata, committed)
        complete = metadata.prepare_complete(self._now_ms())
        self.markers.add_txn_markers_to_send(coordinator_epoch, committed, metadata, complete)
        return ErrorCode.NONE

    @staticmethod
    def _invalid(metadata: TransactionMetadata, committed: bool) -> ErrorCode:
        _log.debug(
            "transaction.end_txn_refused",
            transactional_id=metadata.transactional_id,
            state=metadata.state.kafka_name,
            committed=committed,
        )
        return ErrorCode.INVALID_TXN_STATE

    # --- timeouts and expiration --------------------------------------------------------------

    async def abort_timed_out_transactions(self) -> None:
        """Abort, under a bumped epoch, every Ongoing transaction older than its timeout."""
        aborts = []
        for timed_out in self.state.timed_out_transactions():
            _, current = self.state.get_transaction_state(timed_out.transactional_id)
            if current is None:
                continue
            metadata = current.metadata
            if metadata.producer_id != timed_out.producer_id or (
                metadata.pending_transition_in_progress
            ):
                continue
            transit = metadata.prepare_fence_producer_epoch()
            _log.info(
                "transaction.timed_out",
                transactional_id=metadata.transactional_id,
                producer_id=metadata.producer_id,
                producer_epoch=transit.producer_epoch,
                partitions=sorted(str(tp) for tp in metadata.partitions),
                transaction_timeout_ms=metadata.txn_timeout_ms,
            )
            aborts.append(self._abort_timed_out(metadata.transactional_id, transit))
        await asyncio.gather(*aborts)

    async def _abort_timed_out(self, transactional_id: str, transit: TxnTransitMetadata) -> None:
        error = await self._end_transaction(
            transactional_id,
            transit.producer_id,
            transit.producer_epoch,
            committed=False,
            from_client=False,
        )
        if error not in (
            ErrorCode.NONE,
            ErrorCode.INVALID_PRODUCER_ID_MAPPING,
            ErrorCode.PRODUCER_FENCED,
            ErrorCode.CONCURRENT_TRANSACTIONS,
        ):
            _log.warning(
                "transaction.timeout_abort_failed",
                transactional_id=transactional_id,
                error=error.name,
            )

    async def remove_expired_transactional_ids(self) -> None:
        await self.state.remove_expired_transactional_ids()

    def _schedule_timers(self) -> None:
        def abort() -> None:
            self._abort_timer = None
            if self._active:
                self._spawn(self.abort_timed_out_transactions())
                self._abort_timer = self._call_later(abort_s, abort)

        def expire() -> None:
            self._expire_timer = None
            if self._active:
                self._spawn(self.remove_expired_transactional_ids())
                self._expire_timer = self._call_later(expire_s, expire)

        abort_s = self.config.transaction_abort_timed_out_transaction_cleanup_interval_ms / 1000
        expire_s = self.config.transaction_remove_expired_transaction_cleanup_interval_ms / 1000
        if self._abort_timer is None:
            self._abort_timer = self._call_later(abort_s, abort)
        if self._expire_timer is None:
            self._expire_timer = self._call_later(expire_s, expire)

    # --- admin --------------------------------------------------------------------------------

    def describe_transactions(
        self, transactional_ids: Sequence[str]
    ) -> list[TransactionDescription]:
        return [self._describe(t) for t in transactional_ids]

    def _describe(self, transactional_id: str) -> TransactionDescription:
        if not self._active:
            return TransactionDescription(transactional_id, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if not transactional_id:
            return TransactionDescription(transactional_id, ErrorCode.INVALID_REQUEST)
        error, current = self.state.get_transaction_state(transactional_id)
        if error != ErrorCode.NONE:
            return TransactionDescription(transactional_id, error)
        if current is None or current.metadata.state is _S.DEAD:
            return TransactionDescription(transactional_id, ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)
        m = current.metadata
        return TransactionDescription(
            transactional_id,
            ErrorCode.NONE,
            m.state.kafka_name,
            m.txn_timeout_ms,
            m.txn_start_timestamp,
            m.producer_id,
            m.producer_epoch,
            tuple(sorted(m.partitions)),
        )

    def list_transactions(
        self,
        states: Iterable[str] = (),
        producer_ids: Iterable[int] = (),
        duration_filter_ms: int = -1,
    ) -> ListResult:
        """ListTransactions (v1's ``duration_filter_ms``: only those running longer)."""
        if not self._active:
            return ListResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, [], [])
        error, unknown, rows = self.state.list_transaction_states(
            producer_ids, states, duration_filter_ms
        )
        return ListResult(error, unknown, sorted(rows))

    # --- leadership ---------------------------------------------------------------------------

    def on_leadership_change(
        self, leaders: Sequence[tuple[str, int]], followers: Sequence[tuple[str, int]]
    ) -> None:
        """The ReplicaManager's listener: load partitions it leads, unload the others."""
        for topic, partition in leaders:
            if topic == TRANSACTION_STATE_TOPIC:
                self.on_elected(partition)
        for topic, partition in followers:
            if topic == TRANSACTION_STATE_TOPIC:
                self.on_resigned(partition)

    def on_elected(self, partition: int) -> None:
        coordinator_epoch = self._log.leader_epoch(partition)
        if coordinator_epoch is None or not self._active:
            return
        self._schedule_timers()
        if self.state.coordinator_epoch(partition) == coordinator_epoch:
            return  # loaded (or loading) under this epoch already
        # Under a new epoch even a partition led before is loaded again: markers carry the
        # coordinator epoch, and the load restarts those of prepared transactions.
        self.markers.remove_markers_for_partition(partition)
        self.state.start_loading(partition, coordinator_epoch)
        _log.info(
            "transaction_partition.loading",
            partition=partition,
            coordinator_epoch=coordinator_epoch,
        )
        self._spawn(self._load(partition, coordinator_epoch))

    async def _load(self, partition: int, coordinator_epoch: int) -> None:
        prepared = await self.state.load_partition(partition, coordinator_epoch)
        for epoch, metadata in prepared or ():
            committed = metadata.state is _S.PREPARE_COMMIT
            complete = metadata.prepare_complete(self._now_ms())
            _log.info(
                "transaction.completing_after_load",
                transactional_id=metadata.transactional_id,
                producer_id=metadata.producer_id,
                producer_epoch=metadata.producer_epoch,
                state=metadata.state.kafka_name,
                partitions=sorted(str(tp) for tp in metadata.partitions),
            )
            self.markers.add_txn_markers_to_send(epoch, committed, metadata, complete)

    def on_resigned(self, partition: int) -> None:
        self.markers.remove_markers_for_partition(partition)
        if self.state.remove_partition(partition):
            _log.info("transaction_partition.unloaded", partition=partition)

    def shutdown(self) -> None:
        self._active = False
        for timer in (self._abort_timer, self._expire_timer):
            if timer is not None:
                timer.cancel()
        self._abort_timer = self._expire_timer = None
        self.markers.shutdown()
        self.state.clear()
        self._tasks.cancel_all()

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        self._tasks.spawn(coroutine)
