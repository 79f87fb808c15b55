"""Transactions for the admin tools (KIP-664): list, describe, the producers of a partition, and
the abort of a hanging transaction.

    admin.list_transactions()                      # {broker id: [TransactionListing(...)]}
    admin.describe_transactions(["etl-1"])["etl-1"].state            # "Ongoing"
    admin.describe_producers([TopicPartition("out", 0)])             # {tp: [ProducerState]}
    admin.abort_transaction(AbortTransactionSpec(tp, producer_id, producer_epoch, 0))

ListTransactions goes to every broker (each lists the ids it coordinates); DescribeTransactions
to each id's coordinator (FindCoordinator key type 1, looked up again while the answer says
NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE or COORDINATOR_LOAD_IN_PROGRESS);
DescribeProducers to each partition's leader; an abort is Kafka's: WriteTxnMarkers with an
ABORT marker straight to the partition's leader (Control service; needs ClusterAction), for a
transaction whose coordinator will never write one.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import grpc

from minikafka.client._channel import RETRIABLE_STATUS
from minikafka.client._retry import RetryLater, retry_or_raise
from minikafka.client.admin._routing import _rpc_error, _rpc_problem, _timed_out
from minikafka.client.admin.records import RecordAdmin
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.common import Node, TopicPartition
from minikafka.proto.errors import ErrorCode, error_for_code

__all__ = [
    "AbortTransactionSpec",
    "ProducerState",
    "TransactionAdmin",
    "TransactionDescription",
    "TransactionListing",
]

_COORDINATOR_MOVED = frozenset(
    {
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    }
)


@dataclass(frozen=True)
class TransactionListing:
    transactional_id: str
    producer_id: int
    state: str  # Kafka's names: Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, ...


@dataclass(frozen=True)
class TransactionDescription:
    coordinator_id: int
    state: str
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_start_time_ms: int | None  # None: no transaction open
    topic_partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class ProducerState:
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int | None  # None: no marker seen yet
    current_transaction_start_offset: int | None  # None: no transaction open


@dataclass(frozen=True)
class AbortTransactionSpec:
    topic_partition: TopicPartition
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int


class TransactionAdmin(RecordAdmin):
    """See the module docstring."""

    def find_transaction_coordinator(
        self, transactional_id: str, *, timeout_ms: int | None = None
    ) -> Node:
        """The broker coordinating ``transactional_id`` (FindCoordinator key type 1)."""
        timeout_ms = self._timeout(timeout_ms)
        deadline = time.monotonic() + timeout_ms / 1000
        request = pb.FindCoordinatorRequest(key=transactional_id, key_type=1)

        def send(address: str, timeout_s: float) -> pb.FindCoordinatorResponse:
            return pb_grpc.GroupStub(self._pool.get(address)).FindCoordinator(
                request, timeout=timeout_s
            )

        def attempt() -> Node:
            remaining_ms = max(int((deadline - time.monotonic()) * 1000), 1)
            response = self._to_any_broker("findCoordinator", send, remaining_ms)
            if response.error_code == ErrorCode.NONE:
                return Node(response.node_id, response.host, response.port)
            raise retry_or_raise(error_for_code(response.error_code, response.error_message))

        return self._retry.call(attempt, deadline=deadline)

    def list_transactions(
        self,
        *,
        states: Sequence[str] = (),
        producer_ids: Sequence[int] = (),
        duration_filter_ms: int = -1,
        timeout_ms: int | None = None,
    ) -> dict[int, list[TransactionListing]]:
        """Every transactional id of the cluster by its coordinator's broker id (ListTransactions
        at every broker); ``duration_filter_ms`` >= 0: only transactions open longer."""
        timeout_ms = self._timeout(timeout_ms)
        deadline = time.monotonic() + timeout_ms / 1000
        request = pb.ListTransactionsRequest(
            state_filters=list(states),
            producer_id_filters=list(producer_ids),
            duration_filter=duration_filter_ms,
        )
        listings: dict[int, list[TransactionListing]] = {}
        for node in sorted(self._describe_cluster(timeout_ms).brokers.values(), key=lambda n: n.id):

            def attempt(node: Node = node) -> pb.ListTransactionsResponse:
                stub = pb_grpc.TransactionStub(self._pool.get(node.address))
                try:
                    response = stub.ListTransactions(
                        request, timeout=max(deadline - time.monotonic(), 0.001)
                    )
                except grpc.RpcError as exc:
                    raise RetryLater(f"broker {node.id}: {_rpc_problem(exc)}") from None
                if response.error_code != ErrorCode.NONE:
                    raise retry_or_raise(
                        error_for_code(response.error_code, response.error_message)
                    )
                return response

            response = self._retry.call(
                attempt, deadline=deadline, timed_out=_timed_out("listTransactions", timeout_ms)
            )
            listings[node.id] = [
                TransactionListing(t.transactional_id, t.producer_id, t.transaction_state)
                for t in response.transaction_states
            ]
        return listings

    def describe_transactions(
        self, transactional_ids: Iterable[str], *, timeout_ms: int | None = None
    ) -> dict[str, TransactionDescription]:
        """Each id's state at its coordinator. Raises the first error (TRANSACTIONAL_ID_NOT_FOUND
        for an id the coordinator does not know, TRANSACTIONAL_ID_AUTHORIZATION_FAILED, ...)."""
        timeout_ms = self._timeout(timeout_ms)
        described: dict[str, TransactionDescription] = {}
        for transactional_id in dict.fromkeys(transactional_ids):
            described[transactional_id] = self._describe_one(transactional_id, timeout_ms)
        return described

    def _describe_one(self, transactional_id: str, timeout_ms: int) -> TransactionDescription:
        deadline = time.monotonic() + timeout_ms / 1000
        request = pb.DescribeTransactionsRequest(transactional_ids=[transactional_id])

        def attempt() -> TransactionDescription:
            remaining_ms = max(int((deadline - time.monotonic()) * 1000), 1)
            node = self.find_transaction_coordinator(transactional_id, timeout_ms=remaining_ms)
            stub = pb_grpc.TransactionStub(self._pool.get(node.address))
            try:
                response = stub.DescribeTransactions(
                    request, timeout=max(deadline - time.monotonic(), 0.001)
                )
            except grpc.RpcError as exc:
                raise RetryLater(f"coordinator {node.id}: {_rpc_problem(exc)}") from None
            found = [
                t for t in response.transaction_states if t.transactional_id == transactional_id
            ]
            if not found:
                raise RetryLater(f"coordinator {node.id} did not describe {transactional_id}")
            state = found[0]
            if state.error_code in _COORDINATOR_MOVED:
                raise RetryLater(f"coordinator {node.id}: {ErrorCode(state.error_code).name}")
            if state.error_code != ErrorCode.NONE:
                raise error_for_code(state.error_code, f"transactional id {transactional_id}")
            return TransactionDescription(
                node.id,
                state.transaction_state,
                state.producer_id,
                state.producer_epoch,
                state.transaction_timeout_ms,
                state.transaction_start_time_ms if state.transaction_start_time_ms >= 0 else None,
                tuple(
                    TopicPartition(t.topic, p) for t in state.topics for p in sorted(t.partitions)
                ),
            )

        return self._retry.call(
            attempt, deadline=deadline, timed_out=_timed_out("describeTransactions", timeout_ms)
        )

    def describe_producers(
        self, partitions: Iterable[TopicPartition], *, timeout_ms: int | None = None
    ) -> dict[TopicPartition, list[ProducerState]]:
        """The producers each partition's leader knows (DescribeProducers); raises the first
        error that retrying at a new leader does not fix."""

        def send(
            address: str, items: Mapping[TopicPartition, None], timeout_s: float
        ) -> dict[TopicPartition, tuple[int, str, list[ProducerState]]]:
            request = pb.DescribeProducersRequest()
            by_topic: dict[str, list[int]] = {}
            for tp in items:
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            for topic, indexes in by_topic.items():
                request.topics.add(name=topic, partition_indexes=indexes)
            try:
                response = pb_grpc.AdminStub(self._pool.get(address)).DescribeProducers(
                    request, timeout=timeout_s
                )
            except grpc.RpcError as exc:
                if exc.code() in RETRIABLE_STATUS:
                    raise
                raise _rpc_error(exc) from None
            return {
                TopicPartition(t.name, p.partition_index): (
                    p.error_code,
                    p.error_message,
                    [
                        ProducerState(
                            s.producer_id,
                            s.producer_epoch,
                            s.last_sequence,
                            s.last_timestamp,
                            s.coordinator_epoch if s.coordinator_epoch >= 0 else None,
                            s.current_txn_start_offset if s.current_txn_start_offset >= 0 else None,
                        )
                        for s in p.active_producers
                    ],
                )
                for t in response.topics
                for p in t.partitions
            }

        return self._to_leaders("describeProducers", dict.fromkeys(partitions), send, timeout_ms)

    def abort_transaction(
        self, spec: AbortTransactionSpec, *, timeout_ms: int | None = None
    ) -> None:
        """Write an ABORT marker for ``spec``'s producer to its partition, at the partition's
        leader (Kafka's Admin.abortTransaction). Raises the partition's error, if any."""
        tp = spec.topic_partition

        def send(
            address: str, items: Mapping[TopicPartition, None], timeout_s: float
        ) -> dict[TopicPartition, tuple[int, str, None]]:
            request = pb.WriteTxnMarkersRequest()
            marker = request.markers.add(
                producer_id=spec.producer_id,
                producer_epoch=spec.producer_epoch,
                transaction_result=False,
                coordinator_epoch=spec.coordinator_epoch,
            )
            marker.topics.add(name=tp.topic, partition_indexes=[tp.partition])
            try:
                response = pb_grpc.ControlStub(self._pool.get(address)).WriteTxnMarkers(
                    request, timeout=timeout_s
                )
            except grpc.RpcError as exc:
                if exc.code() in RETRIABLE_STATUS:
                    raise
                raise _rpc_error(exc) from None
            return {
                TopicPartition(t.name, p.partition_index): (p.error_code, "", None)
                for m in response.markers
                for t in m.topics
                for p in t.partitions
            }

        self._to_leaders("abortTransaction", {tp: None}, send, timeout_ms)
