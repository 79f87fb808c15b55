"""The transactional producer's state machine: Kafka's TransactionManager (KIP-98, -360, -447).

    producer = Producer(bootstrap_servers=..., transactional_id="orders-etl")
    producer.init_transactions()           # FindCoordinator(TRANSACTION) + InitProducerId
    producer.begin_transaction()
    producer.send("out", b"v")             # AddPartitionsToTxn before the partition's first batch
    producer.send_offsets_to_transaction(offsets, consumer.group_metadata())
    producer.commit_transaction()          # flush, then EndTxn(commit)

States, as Kafka's client names them::

    UNINITIALIZED --init_transactions--> INITIALIZING --> READY
    READY --begin_transaction--> IN_TRANSACTION
    IN_TRANSACTION --commit_transaction--> COMMITTING_TRANSACTION --> READY
    IN_TRANSACTION | ABORTABLE_ERROR --abort_transaction--> ABORTING_TRANSACTION --> READY
    any --abortable error--> ABORTABLE_ERROR      (only abort_transaction leaves it)
    any --fatal error--> FATAL_ERROR              (the producer can only be closed)

The coordinator: FindCoordinator with key_type 1 at any broker; NOT_COORDINATOR,
COORDINATOR_NOT_AVAILABLE or a broker that does not answer make it look again;
COORDINATOR_LOAD_IN_PROGRESS and CONCURRENT_TRANSACTIONS (the last transaction's markers are
still being written) are retried after ``retry.backoff.ms``. The calls of the application's
thread (init, send_offsets, commit, abort) retry until ``max.block.ms`` has passed, then raise
RequestTimedOutError; the call may be made again and goes on where it stopped, as Kafka's.

Which errors are which (Kafka's client):

* fatal: PRODUCER_FENCED, and INVALID_PRODUCER_EPOCH, which means the same (KIP-588, raised as
  ProducerFencedError); TRANSACTIONAL_ID_AUTHORIZATION_FAILED; INVALID_TXN_STATE;
  CLUSTER_AUTHORIZATION_FAILED; INVALID_TRANSACTION_TIMEOUT. Every later call raises the
  same error class again.
* abortable: anything else that fails a batch or a transactional request (TOPIC or GROUP
  authorization, a batch past delivery.timeout.ms, UNKNOWN_PRODUCER_ID, a rebalance that
  fenced the consumer's generation, ...). ``send``, ``send_offsets_to_transaction`` and
  ``commit_transaction`` raise TransactionAbortableError naming it until
  ``abort_transaction``. When a batch with a sequence number failed, whether it was written is
  not known, so the abort also bumps the epoch (InitProducerId with the producer id and epoch
  held, KIP-360) and the sequences start again at 0.

AddPartitionsToTxn is sent by the sender thread (``add_partitions_once``) before it drains a
partition's first batch of the transaction; a partition is drained only once the coordinator
has it (``sendable``), so no record of a transaction reaches a partition the coordinator will
not write a marker to.

Thread-safety: ``_lock`` guards the state and the partition sets, which the application's
threads and the sender thread share; ``_rpc_lock`` keeps the coordinator requests of the two
in order (an EndTxn never overtakes an AddPartitionsToTxn). Neither is held while the other is
taken.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, TypeVar

import grpc

from minikafka.client._bootstrap import ask_any_broker
from minikafka.client._channel import RETRIABLE_STATUS, ChannelPool
from minikafka.client._log import event_logger
from minikafka.client._retry import RetryLater, RetryPolicy
from minikafka.client.consumer.group_metadata import ConsumerGroupMetadata
from minikafka.client.metadata import ClusterMetadata
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.common import Node, OffsetAndMetadata, TopicPartition
from minikafka.proto.errors import ErrorCode, KafkaError, error_for_code
from minikafka.proto.records import NO_SEQUENCE

if TYPE_CHECKING:
    from minikafka.client.producer.accumulator import RecordAccumulator

__all__ = [
    "COORDINATOR_TRANSACTION",
    "TransactionAbortedError",
    "TransactionManager",
    "TxnState",
]

_log = event_logger(__name__)

R = TypeVar("R")

COORDINATOR_GROUP = 0
COORDINATOR_TRANSACTION = 1


class TxnState(enum.Enum):
    UNINITIALIZED = "UNINITIALIZED"
    INITIALIZING = "INITIALIZING"
    READY = "READY"
    IN_TRANSACTION = "IN_TRANSACTION"
    COMMITTING_TRANSACTION = "COMMITTING_TRANSACTION"
    ABORTING_TRANSACTION = "ABORTING_TRANSACTION"
    ABORTABLE_ERROR = "ABORTABLE_ERROR"
    FATAL_ERROR = "FATAL_ERROR"


_TransactionAbortable = type(error_for_code(ErrorCode.TRANSACTION_ABORTABLE))


class TransactionAbortedError(_TransactionAbortable):  # type: ignore[misc,valid-type]
    """A record that was not written because its transaction was aborted before it was sent
    (Kafka's TransactionAbortedException): what its future fails with."""


_FATAL = frozenset(
    {
        ErrorCode.PRODUCER_FENCED,
        ErrorCode.INVALID_PRODUCER_EPOCH,
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        ErrorCode.INVALID_TXN_STATE,
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        ErrorCode.INVALID_TRANSACTION_TIMEOUT,
        ErrorCode.UNSUPPORTED_VERSION,
        ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT,
    }
)
# The coordinator moved or is not there yet: look it up again.
_COORDINATOR_MOVED = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE})
# Worth the same request again after a back-off.
_RETRY = frozenset(
    {
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.UNSTABLE_OFFSET_COMMIT,
    }
)
_OPERATION_NOT_ATTEMPTED = 55  # AddPartitionsToTxn: another partition of the request failed


def _fatal(error: KafkaError) -> KafkaError:
    """INVALID_PRODUCER_EPOCH from the coordinator or a leader means a newer producer with the
    same transactional id has fenced this one: raised as PRODUCER_FENCED (Kafka's KIP-588)."""
    if error.code == ErrorCode.INVALID_PRODUCER_EPOCH:
        return error_for_code(
            ErrorCode.PRODUCER_FENCED,
            f"there is a newer producer with the same transactional.id ({error.message})",
        )
    return error


class TransactionManager:
    """See the module docstring. One per transactional Producer."""

    def __init__(
        self,
        transactional_id: str,
        transaction_timeout_ms: int,
        metadata: ClusterMetadata,
        pool: ChannelPool,
        *,
        request_timeout_ms: int = 30_000,
        retry_backoff_ms: int = 100,
        max_block_ms: int = 60_000,
    ) -> None:
        self.transactional_id = transactional_id
        self._timeout_ms = transaction_timeout_ms
        self._metadata = metadata
        self._pool = pool
        self._request_timeout_s = request_timeout_ms / 1000
        self._backoff_s = retry_backoff_ms / 1000
        self._max_block_s = max_block_ms / 1000
        self._retry = RetryPolicy(backoff_s=self._backoff_s, overrun=True)
        self._lock = threading.Lock()
        self._rpc_lock = threading.Lock()
        self.state = TxnState.UNINITIALIZED
        self.producer_id = -1
        self.producer_epoch = -1
        self._coordinator: Node | None = None
        self._last_error: KafkaError | None = None
        self._epoch_bump_required = False
        # This transaction: partitions the coordinator has, partitions to add before their
        # first batch leaves, and whether the coordinator knows of the transaction at all
        # (a partition or the offsets of a group added: an EndTxn is needed).
        self._partitions: set[TopicPartition] = set()
        self._new_partitions: set[TopicPartition] = set()
        self._started = False
        self._add_retry_at = 0.0
        # Set by the Producer: installs a producer id and epoch in its sender (sequences
        # restart), and flushes or drops what the accumulator holds.
        self.on_new_epoch: Callable[[int, int], None] = lambda pid, epoch: None
        self.accumulator: RecordAccumulator | None = None

    # --- state ------------------------------------------------------------------------------

    def _transition(self, state: TxnState) -> None:
        _log.debug(
            "producer.transaction_state",
            transactional_id=self.transactional_id,
            previous=self.state.value,
            state=state.value,
        )
        self.state = state

    def _raise_if_failed(self, action: str) -> None:
        """Caller holds ``_lock``."""
        if self.state is TxnState.FATAL_ERROR:
            assert self._last_error is not None
            error = self._last_error
            raise type(error)(
                f"cannot {action}: the producer hit a fatal error and can only be closed "
                f"({error.message})"
            )
        if self.state is TxnState.ABORTABLE_ERROR:
            raise self._abortable(action)

    def _abortable(self, action: str) -> KafkaError:
        cause = self._last_error
        return error_for_code(
            ErrorCode.TRANSACTION_ABORTABLE,
            f"cannot {action}: the transaction must be aborted (abort_transaction) after an "
            f"earlier error: {cause}",
        )

    def _require(self, action: str, *allowed: TxnState) -> None:
        """Caller holds ``_lock``: raise unless the state is one of ``allowed``."""
        if self.state in allowed:
            return
        self._raise_if_failed(action)
        raise error_for_code(
            ErrorCode.INVALID_TXN_STATE,
            f"cannot {action} in state {self.state.value}"
            + (
                ": call init_transactions first"
                if self.state in (TxnState.UNINITIALIZED, TxnState.INITIALIZING)
                else ""
            ),
        )

    def fail(self, error: KafkaError, *, bump_epoch: bool = False) -> None:
        """A batch or a transactional request failed with ``error``: the transaction becomes
        abortable, or the producer unusable when the error is fatal (from any thread)."""
        with self._lock:
            if self.state is TxnState.FATAL_ERROR:
                return
            if error.code in _FATAL:
                self._last_error = _fatal(error)
                self._transition(TxnState.FATAL_ERROR)
                _log.warning(
                    "producer.transaction_fatal",
                    transactional_id=self.transactional_id,
                    error=str(self._last_error),
                )
                return
            self._epoch_bump_required = self._epoch_bump_required or bump_epoch
            if self.state in (TxnState.UNINITIALIZED, TxnState.INITIALIZING, TxnState.READY):
                return  # nothing to abort: the next call raises the error itself
            if self.state is not TxnState.ABORTABLE_ERROR:
                self._last_error = error
                self._transition(TxnState.ABORTABLE_ERROR)
                _log.warning(
                    "producer.transaction_abortable",
                    transactional_id=self.transactional_id,
                    error=str(error),
                )

    def batch_error(self) -> KafkaError | None:
        """What queued batches fail with now (the sender drops them): the fatal or abortable
        error, else None."""
        with self._lock:
            if self.state is TxnState.FATAL_ERROR:
                return self._last_error
            if self.state is TxnState.ABORTABLE_ERROR:
                return self._abortable("send")
            return None

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0

    # --- the application's calls --------------------------------------------------------------

    def init_transactions(self) -> None:
        with self._lock:
            self._require("init_transactions", TxnState.UNINITIALIZED, TxnState.INITIALIZING)
            self._transition(TxnState.INITIALIZING)
        self._init_producer_id(-1, -1, "InitProducerId")
        with self._lock:
            self._transition(TxnState.READY)

    def begin_transaction(self) -> None:
        with self._lock:
            self._require("begin_transaction", TxnState.READY)
            self._partitions.clear()
            self._new_partitions.clear()
            self._started = False
            self._transition(TxnState.IN_TRANSACTION)

    def maybe_add_partition(self, tp: TopicPartition) -> None:
        """Before a record for ``tp`` is queued (send): the partition joins the transaction."""
        with self._lock:
            if self.state is not TxnState.IN_TRANSACTION:
                self._raise_if_failed("send")
                raise error_for_code(
                    ErrorCode.INVALID_TXN_STATE,
                    "cannot send before init_transactions"
                    if self.state in (TxnState.UNINITIALIZED, TxnState.INITIALIZING)
                    else f"cannot send in state {self.state.value}: call begin_transaction first",
                )
            if tp not in self._partitions:
                self._new_partitions.add(tp)

    def send_offsets_to_transaction(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        group: ConsumerGroupMetadata,
    ) -> None:
        """AddOffsetsToTxn at the transaction coordinator, then TxnOffsetCommit at the group's
        coordinator: the offsets become the group's when the transaction commits."""
        with self._lock:
            self._require("send_offsets_to_transaction", TxnState.IN_TRANSACTION)
        deadline = time.monotonic() + self._max_block_s
        with self._rpc_lock:
            self._add_offsets(group.group_id, deadline)
            self._txn_offset_commit(offsets, group, deadline)

    def commit_transaction(self, flush: Callable[[float], None]) -> None:
        """``flush(timeout_s)`` sends every queued record and waits for the answers."""
        with self._lock:
            self._require(
                "commit_transaction", TxnState.IN_TRANSACTION, TxnState.COMMITTING_TRANSACTION
            )
            self._transition(TxnState.COMMITTING_TRANSACTION)
        deadline = time.monotonic() + self._max_block_s
        try:
            flush(self._max_block_s)
        except KafkaError as exc:
            if exc.code != ErrorCode.REQUEST_TIMED_OUT:
                raise
            raise error_for_code(
                ErrorCode.REQUEST_TIMED_OUT,
                f"Timeout expired after {self._max_block_s * 1000:.0f}ms while awaiting "
                "the transaction's records",
            ) from None
        with self._lock:
            # A batch that failed made the transaction abortable (or the producer fenced).
            self._raise_if_failed("commit_transaction")
        self._end_txn(committed=True, deadline=deadline)

    def abort_transaction(self, wait_in_flight: Callable[[float], None]) -> None:
        """Drop what was not sent yet, wait (``wait_in_flight(timeout_s)``) for what was, then
        EndTxn(abort); after a batch failed with a sequence, bump the epoch (KIP-360)."""
        with self._lock:
            if self.state is TxnState.FATAL_ERROR:
                self._raise_if_failed("abort_transaction")
            self._require(
                "abort_transaction",
                TxnState.IN_TRANSACTION,
                TxnState.ABORTABLE_ERROR,
                TxnState.ABORTING_TRANSACTION,
            )
            self._transition(TxnState.ABORTING_TRANSACTION)
            self._new_partitions.clear()
        deadline = time.monotonic() + self._max_block_s
        if self.accumulator is not None:
            dropped = self.accumulator.abort_all(
                TransactionAbortedError("Failing batch since transaction was aborted")
            )
            if any(b.builder.base_sequence != NO_SEQUENCE for b in dropped):
                with self._lock:  # a retried batch: it may have been written
                    self._epoch_bump_required = True
        wait_in_flight(self._max_block_s)
        with self._lock:
            if self.state is TxnState.FATAL_ERROR:
                self._raise_if_failed("abort_transaction")
        self._end_txn(committed=False, deadline=deadline)

    # --- the sender thread's part -------------------------------------------------------------

    def sendable(self, partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
        """The partitions whose batches may leave now: those the coordinator has."""
        with self._lock:
            return [tp for tp in partitions if tp in self._partitions]

    def add_partitions_once(self) -> float | None:
        """One AddPartitionsToTxn for the partitions waiting to join the transaction, if any.
        Returns how long to wait before trying again (None: nothing waits)."""
        with self._lock:
            if not self._new_partitions or self.state not in (
                TxnState.IN_TRANSACTION,
                TxnState.COMMITTING_TRANSACTION,
            ):
                return None
            wait = self._add_retry_at - time.monotonic()
            if wait > 0:
                return wait
            adding = sorted(self._new_partitions)
            pid, epoch = self.producer_id, self.producer_epoch
        with self._rpc_lock:
            retry = self._add_partitions(adding, pid, epoch)
        if retry:
            with self._lock:
                self._add_retry_at = time.monotonic() + self._backoff_s
            return self._backoff_s
        return None

    def _add_partitions(self, adding: list[TopicPartition], pid: int, epoch: int) -> bool:
        """True when the request should be tried again later."""
        request = pb.AddPartitionsToTxnRequest(
            transactional_id=self.transactional_id, producer_id=pid, producer_epoch=epoch
        )
        for topic, tps in _by_topic(adding).items():
            request.topics.add(name=topic, partitions=[tp.partition for tp in tps])
        try:
            response = self._once(
                lambda stub, timeout: stub.AddPartitionsToTxn(request, timeout=timeout)
            )
        except RetryLater:
            return True
        added: list[TopicPartition] = []
        retry = False
        failure: KafkaError | None = None
        for result in response.results:
            for part in result.results:
                tp = TopicPartition(result.name, part.partition_index)
                code = part.partition_error_code
                if code == ErrorCode.NONE:
                    added.append(tp)
                elif code in _COORDINATOR_MOVED:
                    self._coordinator = None
                    retry = True
                elif code in _RETRY or code == _OPERATION_NOT_ATTEMPTED:
                    retry = True
                else:
                    error = error_for_code(code, f"AddPartitionsToTxn for {tp}")
                    if failure is None or error.code in _FATAL:
                        failure = error
        with self._lock:
            self._partitions.update(added)
            self._new_partitions.difference_update(added)
            if added:
                self._started = True
        if added:
            _log.debug(
                "producer.partitions_added_to_transaction",
                transactional_id=self.transactional_id,
                partitions=[str(tp) for tp in added],
            )
        if failure is not None:
            bump = failure.code in (
                ErrorCode.UNKNOWN_PRODUCER_ID,
                ErrorCode.INVALID_PRODUCER_ID_MAPPING,
            )
            self.fail(failure, bump_epoch=bump)
            return False
        return retry

    # --- requests to the coordinators ---------------------------------------------------------

    def _find_coordinator(self, key: str, key_type: int) -> Node | None:
        """One FindCoordinator round over the known brokers; None when no answer was usable."""
        known = [n.address for n in self._metadata.brokers().values()]
        request = pb.FindCoordinatorRequest(key=key, key_type=key_type)

        def ask(address: str) -> pb.FindCoordinatorResponse:
            stub = pb_grpc.GroupStub(self._pool.get(address))
            return stub.FindCoordinator(request, timeout=self._request_timeout_s)

        try:
            response = ask_any_broker(known, self._metadata.bootstrap, ask)
        except RetryLater:
            self._metadata.request_update()
            return None
        if response.error_code != ErrorCode.NONE:
            error = error_for_code(response.error_code, response.error_message)
            if not error.retriable:
                raise _fatal(error) if error.code in _FATAL else error
            return None
        return Node(response.node_id, response.host, response.port)

    def _once(self, call: Callable[[pb_grpc.TransactionStub, float], R], error_code: int = 0) -> R:
        """One request to the transaction coordinator (found first if unknown). RetryLater
        when there is none or it did not answer."""
        node = self._coordinator
        if node is None:
            node = self._find_coordinator(self.transactional_id, COORDINATOR_TRANSACTION)
            if node is None:
                raise RetryLater(
                    f"no coordinator found for transactional id {self.transactional_id}"
                )
            self._coordinator = node
            _log.info(
                "producer.transaction_coordinator_found",
                transactional_id=self.transactional_id,
                node_id=node.id,
            )
        try:
            return call(
                pb_grpc.TransactionStub(self._pool.get(node.address)), self._request_timeout_s
            )
        except grpc.RpcError as exc:
            if exc.code() not in RETRIABLE_STATUS:
                raise error_for_code(
                    ErrorCode.UNKNOWN_SERVER_ERROR, f"{exc.code().name}: {exc.details()}"
                ) from None
            self._coordinator = None
            raise RetryLater(
                error_for_code(
                    ErrorCode.NETWORK_EXCEPTION,
                    f"transaction coordinator {node.id} ({node.address}): {exc.code().name}",
                )
            ) from None

    def _until(self, what: str, attempt: Callable[[], R], deadline: float) -> R:
        def timed_out(last: RetryLater) -> Exception:
            return error_for_code(
                ErrorCode.REQUEST_TIMED_OUT,
                f"Timeout expired after {self._max_block_s * 1000:.0f}ms while awaiting {what} "
                f"(last: {last.problem})",
            )

        return self._retry.call(attempt, deadline=deadline, timed_out=timed_out)

    def _checked(self, code: int, message: str, what: str) -> None:
        """A coordinator's whole-request error code: None, RetryLater, or raised (after the
        state moved to FATAL_ERROR or ABORTABLE_ERROR)."""
        if code == ErrorCode.NONE:
            return
        error = error_for_code(code, message or what)
        if code in _COORDINATOR_MOVED:
            self._coordinator = None
            raise RetryLater(error)
        if code in _RETRY:
            raise RetryLater(error)
        self.fail(error, bump_epoch=code in (ErrorCode.UNKNOWN_PRODUCER_ID,
                                             ErrorCode.INVALID_PRODUCER_ID_MAPPING))  # fmt: skip
        raise _fatal(error) if code in _FATAL else error

    def _init_producer_id(self, producer_id: int, producer_epoch: int, what: str) -> None:
        request = pb.InitProducerIdRequest(
            transactional_id=self.transactional_id,
            transaction_timeout_ms=self._timeout_ms,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
        )

        def attempt() -> pb.InitProducerIdResponse:
            node = self._coordinator
            if node is None:
                node = self._find_coordinator(self.transactional_id, COORDINATOR_TRANSACTION)
                if node is None:
                    raise RetryLater("no transaction coordinator found")
                self._coordinator = node
            try:
                response = pb_grpc.DataStub(self._pool.get(node.address)).InitProducerId(
                    request, timeout=self._request_timeout_s
                )
            except grpc.RpcError as exc:
                if exc.code() not in RETRIABLE_STATUS:
                    raise
                self._coordinator = None
                raise RetryLater(f"broker {node.id}: {exc.code().name}") from None
            self._checked(response.error_code, response.error_message, what)
            return response

        response = self._until(what, attempt, time.monotonic() + self._max_block_s)
        with self._lock:
            self.producer_id = response.producer_id
            self.producer_epoch = response.producer_epoch
            self._epoch_bump_required = False
        self.on_new_epoch(response.producer_id, response.producer_epoch)
        _log.info(
            "producer.transactional",
            transactional_id=self.transactional_id,
            producer_id=response.producer_id,
            producer_epoch=response.producer_epoch,
        )

    def _add_offsets(self, group_id: str, deadline: float) -> None:
        request = pb.AddOffsetsToTxnRequest(
            transactional_id=self.transactional_id,
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            group_id=group_id,
        )

        def attempt() -> None:
            response = self._once(lambda stub, t: stub.AddOffsetsToTxn(request, timeout=t))
            self._checked(response.error_code, response.error_message, "AddOffsetsToTxn")

        self._until("AddOffsetsToTxn", attempt, deadline)
        with self._lock:
            self._started = True

    def _txn_offset_commit(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        group: ConsumerGroupMetadata,
        deadline: float,
    ) -> None:
        pending = dict(offsets)
        coordinator: list[Node | None] = [None]

        def attempt() -> None:
            node = coordinator[0]
            if node is None:
                node = self._find_coordinator(group.group_id, COORDINATOR_GROUP)
                if node is None:
                    raise RetryLater(f"no coordinator found for group {group.group_id}")
                coordinator[0] = node
            request = pb.TxnOffsetCommitRequest(
                transactional_id=self.transactional_id,
                group_id=group.group_id,
                producer_id=self.producer_id,
                producer_epoch=self.producer_epoch,
                generation_id=group.generation_id,
                member_id=group.member_id,
            )
            if group.group_instance_id is not None:
                request.group_instance_id = group.group_instance_id
            for topic, tps in _by_topic(pending).items():
                entry = request.topics.add(name=topic)
                for tp in tps:
                    value = pending[tp]
                    entry.partitions.add(
                        partition_index=tp.partition,
                        committed_offset=value.offset,
                        committed_leader_epoch=value.leader_epoch,
                        committed_metadata=value.metadata,
                    )
            try:
                response = pb_grpc.GroupStub(self._pool.get(node.address)).TxnOffsetCommit(
                    request, timeout=self._request_timeout_s
                )
            except grpc.RpcError as exc:
                if exc.code() not in RETRIABLE_STATUS:
                    raise
                coordinator[0] = None
                raise RetryLater(f"group coordinator {node.id}: {exc.code().name}") from None
            retry: KafkaError | None = None
            for answer in response.topics:
                for part in answer.partitions:
                    tp = TopicPartition(answer.name, part.partition_index)
                    code = part.error_code
                    if code == ErrorCode.NONE:
                        pending.pop(tp, None)
                        continue
                    error = error_for_code(code, part.error_message or f"TxnOffsetCommit {tp}")
                    if code in _COORDINATOR_MOVED:
                        coordinator[0] = None
                        retry = error
                    elif code in _RETRY:
                        retry = error
                    else:
                        self.fail(error)
                        raise _fatal(error) if code in _FATAL else error
            if pending:
                raise RetryLater(retry or f"no answer for {sorted(map(str, pending))}")

        self._until("TxnOffsetCommit", attempt, deadline)

    def _end_txn(self, *, committed: bool, deadline: float) -> None:
        with self._rpc_lock:
            with self._lock:
                started = self._started
            if started:
                request = pb.EndTxnRequest(
                    transactional_id=self.transactional_id,
                    producer_id=self.producer_id,
                    producer_epoch=self.producer_epoch,
                    committed=committed,
                )

                def attempt() -> None:
                    response = self._once(lambda stub, t: stub.EndTxn(request, timeout=t))
                    self._checked(response.error_code, response.error_message, "EndTxn")

                self._until("EndTxn", attempt, deadline)
            with self._lock:
                bump = self._epoch_bump_required and not committed
            if bump:
                with self._lock:
                    self._transition(TxnState.INITIALIZING)
                self._init_producer_id(self.producer_id, self.producer_epoch, "InitProducerId")
            with self._lock:
                self._partitions.clear()
                self._new_partitions.clear()
                self._started = False
                self._last_error = None
                self._transition(TxnState.READY)
        _log.info(
            "producer.transaction_completed",
            transactional_id=self.transactional_id,
            result="COMMIT" if committed else "ABORT",
        )


def _by_topic(tps: Iterable[TopicPartition]) -> dict[str, list[TopicPartition]]:
    grouped: dict[str, list[TopicPartition]] = {}
    for tp in sorted(tps):
        grouped.setdefault(tp.topic, []).append(tp)
    return grouped
