"""One transactional id's state: Kafka's TransactionMetadata and its state machine.

States (``TransactionState``, ids as the log writes them) and what moves them::

    Empty, CompleteCommit, CompleteAbort
        ── AddPartitionsToTxn / AddOffsetsToTxn ──▶ Ongoing (more partitions: Ongoing again)
        ── InitProducerId ──▶ Empty (the epoch bumped, or a new producer id)
        ── transactional.id.expiration.ms ──▶ Dead (a tombstone: the id is forgotten)
    Ongoing
        ── EndTxn(commit) ──▶ PrepareCommit ── markers written ──▶ CompleteCommit
        ── EndTxn(abort) ───▶ PrepareAbort ─── markers written ──▶ CompleteAbort
        ── InitProducerId, or the transaction timed out ──▶ PrepareEpochFence ──▶ PrepareAbort

A change is made in two steps, as Kafka's: ``prepare_*`` checks the transition and sets
``pending_state`` (a request meeting a pending state gets CONCURRENT_TRANSACTIONS), returning
the target as a ``TxnTransitMetadata``; the record of that target is appended to
``__transaction_state`` with acks=all; only then ``complete_transition_to`` makes it the state
(or the caller clears ``pending_state`` when the append failed). PrepareEpochFence is never
completed: the abort that follows it takes its place.

Epochs (KIP-360): ``producer_epoch`` bumps on each InitProducerId; ``last_producer_epoch``
remembers the one before, so that a retried InitProducerId whose answer was lost gets the same
epoch again. An epoch of 32766 or more is exhausted: the next InitProducerId takes a new
producer id at epoch 0 (32767 stays free so that the coordinator can always fence).

Not thread-safe: owned by the broker's event loop, like everything in broker/transaction.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import NoReturn

from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode
from minikafka.proto.transaction_log import TransactionLogValue, TransactionState

__all__ = [
    "EXPIRATION_ALLOWED",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "TransactionMetadata",
    "TransactionStateError",
    "TxnTransitMetadata",
    "is_epoch_exhausted",
]

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
_MAX_EPOCH = 32767

_S = TransactionState

# Kafka's validPreviousStates: the states each state may be entered from.
_VALID_PREVIOUS: dict[TransactionState, frozenset[TransactionState]] = {
    _S.EMPTY: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.ONGOING: frozenset({_S.ONGOING, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_COMMIT: frozenset({_S.ONGOING}),
    _S.PREPARE_ABORT: frozenset({_S.ONGOING, _S.PREPARE_EPOCH_FENCE}),
    _S.COMPLETE_COMMIT: frozenset({_S.PREPARE_COMMIT}),
    _S.COMPLETE_ABORT: frozenset({_S.PREPARE_ABORT}),
    _S.DEAD: frozenset({_S.EMPTY, _S.COMPLETE_ABORT, _S.COMPLETE_COMMIT}),
    _S.PREPARE_EPOCH_FENCE: frozenset({_S.ONGOING}),
}

EXPIRATION_ALLOWED = frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT})


class TransactionStateError(Exception):
    """A transition the state machine forbids: a bug of the coordinator, never a client's."""


def is_epoch_exhausted(producer_epoch: int) -> bool:
    return producer_epoch >= _MAX_EPOCH - 1


@dataclass(frozen=True)
class TxnTransitMetadata:
    """The state a transactional id moves to once its record is in the log."""

    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState
    partitions: frozenset[TopicPartition]
    txn_start_timestamp: int
    txn_last_update_timestamp: int

    def to_log_value(self) -> TransactionLogValue:
        """The record value (v0 carries neither last producer id nor last epoch)."""
        return TransactionLogValue(
            self.producer_id,
            self.producer_epoch,
            self.txn_timeout_ms,
            self.state,
            () if self.state is _S.EMPTY else tuple(sorted(self.partitions)),
            self.txn_last_update_timestamp,
            self.txn_start_timestamp,
        )


class TransactionMetadata:
    """A transactional id's current state (module docstring)."""

    def __init__(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        txn_timeout_ms: int,
        state: TransactionState,
        txn_last_update_timestamp: int,
        *,
        last_producer_id: int = NO_PRODUCER_ID,
        last_producer_epoch: int = NO_PRODUCER_EPOCH,
        partitions: Iterable[TopicPartition] = (),
        txn_start_timestamp: int = -1,
    ) -> None:
        self.transactional_id = transactional_id
        self.producer_id = producer_id
        self.last_producer_id = last_producer_id
        self.producer_epoch = producer_epoch
        self.last_producer_epoch = last_producer_epoch
        self.txn_timeout_ms = txn_timeout_ms
        self.state = state
        self.partitions: set[TopicPartition] = set(partitions)
        self.txn_start_timestamp = txn_start_timestamp
        self.txn_last_update_timestamp = txn_last_update_timestamp
        self.pending_state: TransactionState | None = None
        # An epoch fence whose record failed to reach the log already bumped producer_epoch
        # in memory (never told to a client): the next fence must not bump it again.
        self.has_failed_epoch_fence = False

    @classmethod
    def from_log_value(
        cls, transactional_id: str, value: TransactionLogValue
    ) -> TransactionMetadata:
        """The state a loaded record describes (the last producer id and epoch are unknown)."""
        return cls(
            transactional_id,
            value.producer_id,
            value.producer_epoch,
            value.transaction_timeout_ms,
            value.state,
            value.last_update_timestamp_ms,
            partitions=value.partitions,
            txn_start_timestamp=value.start_timestamp_ms,
        )

    def __repr__(self) -> str:
        return (
            f"TransactionMetadata(transactional_id={self.transactional_id!r}, "
            f"producer_id={self.producer_id}, producer_epoch={self.producer_epoch}, "
            f"state={self.state.kafka_name}, pending_state={self.pending_state}, "
            f"partitions={sorted(self.partitions)})"
        )

    @property
    def pending_transition_in_progress(self) -> bool:
        return self.pending_state is not None

    @property
    def is_producer_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    @property
    def has_pending_transaction(self) -> bool:
        return self.state in (_S.ONGOING, _S.PREPARE_ABORT, _S.PREPARE_COMMIT)

    def remove_partition(self, partition: TopicPartition) -> None:
        """A partition whose marker is written (or need not be)."""
        if self.state not in (_S.PREPARE_COMMIT, _S.PREPARE_ABORT):
            raise TransactionStateError(
                f"{self}: removing {partition} whose marker was sent, outside Prepare*"
            )
        self.partitions.discard(partition)

    # --- preparing transitions ---------------------------------------------------------------

    def prepare_fence_producer_epoch(self) -> TxnTransitMetadata:
        """Ongoing → PrepareEpochFence under a bumped epoch (fences the producer)."""
        if self.producer_epoch == _MAX_EPOCH:
            raise TransactionStateError(f"{self}: cannot fence an epoch of {_MAX_EPOCH}")
        bumped = self.producer_epoch if self.has_failed_epoch_fence else self.producer_epoch + 1
        return self._prepare(
            _S.PREPARE_EPOCH_FENCE,
            self.producer_id,
            bumped,
            NO_PRODUCER_EPOCH,
            self.txn_timeout_ms,
            frozenset(self.partitions),
            self.txn_start_timestamp,
            self.txn_last_update_timestamp,
        )

    def prepare_increment_producer_epoch(
        self, new_txn_timeout_ms: int, expected_producer_epoch: int | None, now_ms: int
    ) -> TxnTransitMetadata | ErrorCode:
        """→ Empty under the next epoch, or PRODUCER_FENCED (KIP-360 rules: no expected
        epoch bumps; the current one bumps and remembers it; the last one is a retry of a
        bump that happened, answered with the same epoch)."""
        if self.is_producer_epoch_exhausted:
            raise TransactionStateError(f"{self}: no producer epoch left")
        bumped = self.producer_epoch + 1
        if expected_producer_epoch is None:
            next_epoch, last_epoch = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or (
            expected_producer_epoch == self.producer_epoch
        ):
            next_epoch, last_epoch = bumped, self.producer_epoch
        elif expected_producer_epoch == self.last_producer_epoch:
            next_epoch, last_epoch = self.producer_epoch, self.last_producer_epoch
        else:
            return ErrorCode.PRODUCER_FENCED
        return self._prepare(
            _S.EMPTY,
            self.producer_id,
            next_epoch,
            last_epoch,
            new_txn_timeout_ms,
            frozenset(),
            -1,
            now_ms,
        )

    def prepare_producer_id_rotation(
        self, new_producer_id: int, new_txn_timeout_ms: int, now_ms: int, record_last_epoch: bool
    ) -> TxnTransitMetadata:
        """→ Empty under a new producer id at epoch 0 (the epochs of this one are spent)."""
        if self.has_pending_transaction:
            raise TransactionStateError(f"{self}: rotating the producer id mid-transaction")
        return self._prepare(
            _S.EMPTY,
            new_producer_id,
            0,
            self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
            new_txn_timeout_ms,
            frozenset(),
            -1,
            now_ms,
        )

    def prepare_add_partitions(
        self, added: Iterable[TopicPartition], now_ms: int
    ) -> TxnTransitMetadata:
        start = (
            now_ms
            if self.state in (_S.EMPTY, _S.COMPLETE_ABORT, _S.COMPLETE_COMMIT)
            else self.txn_start_timestamp
        )
        return self._prepare(
            _S.ONGOING,
            self.producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.txn_timeout_ms,
            frozenset(self.partitions) | frozenset(added),
            start,
            now_ms,
        )

    def prepare_abort_or_commit(
        self, new_state: TransactionState, now_ms: int
    ) -> TxnTransitMetadata:
        return self._prepare(
            new_state,
            self.producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.txn_timeout_ms,
            frozenset(self.partitions),
            self.txn_start_timestamp,
            now_ms,
        )

    def prepare_complete(self, now_ms: int) -> TxnTransitMetadata:
        new_state = _S.COMPLETE_COMMIT if self.state is _S.PREPARE_COMMIT else _S.COMPLETE_ABORT
        # The Prepare* record is in the log: a failed fence before it no longer matters.
        self.has_failed_epoch_fence = False
        return self._prepare(
            new_state,
            self.producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.txn_timeout_ms,
            frozenset(),
            self.txn_start_timestamp,
            now_ms,
        )

    def prepare_dead(self) -> TxnTransitMetadata:
        return self._prepare(
            _S.DEAD,
            self.producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.txn_timeout_ms,
            frozenset(),
            self.txn_start_timestamp,
            self.txn_last_update_timestamp,
        )

    def _prepare(
        self,
        new_state: TransactionState,
        producer_id: int,
        producer_epoch: int,
        last_producer_epoch: int,
        txn_timeout_ms: int,
        partitions: frozenset[TopicPartition],
        txn_start_timestamp: int,
        now_ms: int,
    ) -> TxnTransitMetadata:
        if self.pending_state is not None:
            raise TransactionStateError(
                f"{self}: preparing {new_state.kafka_name} while {self.pending_state} is pending"
            )
        if producer_id < 0:
            raise TransactionStateError(f"{self}: illegal producer id {producer_id}")
        if new_state is not _S.DEAD and producer_epoch < 0:
            raise TransactionStateError(f"{self}: illegal producer epoch {producer_epoch}")
        if self.state not in _VALID_PREVIOUS[new_state]:
            raise TransactionStateError(
                f"{self}: {new_state.kafka_name} cannot follow {self.state.kafka_name}"
            )
        self.pending_state = new_state
        return TxnTransitMetadata(
            producer_id,
            self.producer_id,
            producer_epoch,
            last_producer_epoch,
            txn_timeout_ms,
            new_state,
            partitions,
            txn_start_timestamp,
            now_ms,
        )

    # --- completing ---------------------------------------------------------------------------

    def complete_transition_to(self, target: TxnTransitMetadata) -> None:
        """Make ``target`` the state: its record is in the log (replicated)."""
        if self.pending_state is None or self.pending_state is not target.state:
            self._refuse(target)
        same_producer = (
            target.producer_epoch == self.producer_epoch and target.producer_id == self.producer_id
        )
        if target.state is _S.EMPTY:
            bump = target.producer_epoch == self.producer_epoch + 1 or (
                target.producer_epoch == 0 and target.producer_id != self.producer_id
            )
            if (
                (target.producer_epoch != self.producer_epoch and not bump)
                or target.partitions
                or target.txn_start_timestamp != -1
            ):
                self._refuse(target)
            self.txn_timeout_ms = target.txn_timeout_ms
            self.producer_epoch = target.producer_epoch
            self.last_producer_epoch = target.last_producer_epoch
            self.producer_id = target.producer_id
            self.last_producer_id = target.last_producer_id
        elif target.state is _S.ONGOING:
            if (
                not same_producer
                or not self.partitions <= target.partitions
                or self.txn_timeout_ms != target.txn_timeout_ms
            ):
                self._refuse(target)
            self.txn_start_timestamp = target.txn_start_timestamp
            self.partitions |= target.partitions
        elif target.state in (_S.PREPARE_ABORT, _S.PREPARE_COMMIT):
            if (
                not same_producer
                or self.partitions != target.partitions
                or self.txn_timeout_ms != target.txn_timeout_ms
                or self.txn_start_timestamp != target.txn_start_timestamp
            ):
                self._refuse(target)
        elif target.state in (_S.COMPLETE_ABORT, _S.COMPLETE_COMMIT):
            if (
                not same_producer
                or self.txn_timeout_ms != target.txn_timeout_ms
                or target.txn_start_timestamp == -1
            ):
                self._refuse(target)
            self.txn_start_timestamp = target.txn_start_timestamp
            self.partitions.clear()
        else:
            # PrepareEpochFence gives way to PrepareAbort before any record is written; Dead
            # ends in removal from the cache, never in a state.
            self._refuse(target)
        self.txn_last_update_timestamp = target.txn_last_update_timestamp
        self.pending_state = None
        self.state = target.state

    def _refuse(self, target: TxnTransitMetadata) -> NoReturn:
        raise TransactionStateError(f"{self}: cannot complete the transition to {target}")
