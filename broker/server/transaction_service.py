"""The Transaction RPC family over gRPC: AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
DescribeTransactions and ListTransactions, translated to the core's TransactionApi
(broker/server/core/transactions.py), which the Kafka door's handlers call too and which asks
the authorizer. This servicer only translates: each call hands the core its Session
(``grpc_session``). The group's TxnOffsetCommit is in group_service.py and DescribeProducers in
admin_service.py, each beside its family; FindCoordinator (key type 1) and InitProducerId with
a transactional id reach the same core through GroupApi and DataApi.

    TransactionService(transactions, listener="CLIENT")

``TransactionCore`` is what this door needs of the core, so that the servicer can be tested
against a fake. Runs on the broker's event loop (grpc.aio).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

import grpc

from minikafka.broker.replication.requests import by_topic
from minikafka.broker.security.principal import Session
from minikafka.broker.server.grpc_session import grpc_session
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.common import OffsetAndMetadata, TopicPartition

__all__ = [
    "DescribedTransaction",
    "ListedTransactions",
    "ProducerView",
    "TransactionCore",
    "TransactionService",
]

_Context = grpc.aio.ServicerContext[Any, Any]


class DescribedTransaction(Protocol):
    """One transactional id as DescribeTransactions shows it (Kafka's TransactionState)."""

    @property
    def error_code(self) -> int: ...
    @property
    def transactional_id(self) -> str: ...
    @property
    def state(self) -> str: ...  # Kafka's names: Empty, Ongoing, PrepareCommit, ...
    @property
    def transaction_timeout_ms(self) -> int: ...
    @property
    def transaction_start_time_ms(self) -> int: ...
    @property
    def producer_id(self) -> int: ...
    @property
    def producer_epoch(self) -> int: ...
    @property
    def partitions(self) -> Iterable[TopicPartition]: ...


class ListedTransactions(Protocol):
    """ListTransactions' answer: an error, the state filters no state is named, and
    (transactional id, producer id, state) per transaction."""

    @property
    def error_code(self) -> int: ...
    @property
    def unknown_state_filters(self) -> Sequence[str]: ...
    @property
    def transaction_states(self) -> Iterable[tuple[str, int, str]]: ...


class ProducerView(Protocol):
    """One producer of a partition, as DescribeProducers shows it."""

    @property
    def producer_id(self) -> int: ...
    @property
    def producer_epoch(self) -> int: ...
    @property
    def last_sequence(self) -> int: ...
    @property
    def last_timestamp(self) -> int: ...
    @property
    def coordinator_epoch(self) -> int: ...
    @property
    def current_txn_start_offset(self) -> int: ...


class TransactionCore(Protocol):
    """The core's calls this door makes (TransactionApi)."""

    async def add_partitions_to_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Sequence[TopicPartition],
        session: Session = ...,
    ) -> dict[TopicPartition, int]: ...

    async def add_offsets_to_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        group_id: str,
        session: Session = ...,
    ) -> int: ...

    async def end_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        committed: bool,
        session: Session = ...,
    ) -> int: ...

    async def txn_offset_commit(
        self,
        transactional_id: str,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        member_id: str = ...,
        generation_id: int = ...,
        group_instance_id: str | None = ...,
        session: Session = ...,
    ) -> dict[TopicPartition, int]: ...

    def describe_producers(
        self, partitions: Sequence[TopicPartition], session: Session = ...
    ) -> Mapping[TopicPartition, tuple[int, str, Sequence[ProducerView]]]: ...

    def describe_transactions(
        self, transactional_ids: Sequence[str], session: Session = ...
    ) -> Sequence[DescribedTransaction]: ...

    def list_transactions(
        self,
        states: Sequence[str],
        producer_ids: Sequence[int],
        duration_filter_ms: int = ...,
        session: Session = ...,
    ) -> ListedTransactions: ...


class TransactionService(pb_grpc.TransactionServicer):
    """See the module docstring."""

    def __init__(self, transactions: TransactionCore, *, listener: str = "") -> None:
        self._core = transactions
        self._listener = listener

    def _session(self, context: _Context) -> Session:
        return grpc_session(context, self._listener)

    async def AddPartitionsToTxn(
        self, request: pb.AddPartitionsToTxnRequest, context: _Context
    ) -> pb.AddPartitionsToTxnResponse:
        partitions = [
            TopicPartition(topic.name, p) for topic in request.topics for p in topic.partitions
        ]
        results = await self._core.add_partitions_to_txn(
            request.transactional_id,
            request.producer_id,
            request.producer_epoch,
            partitions,
            self._session(context),
        )
        response = pb.AddPartitionsToTxnResponse()
        for name, tps in by_topic(results).items():
            topic = response.results.add(name=name)
            for tp in tps:
                topic.results.add(partition_index=tp.partition, partition_error_code=results[tp])
        return response

    async def AddOffsetsToTxn(
        self, request: pb.AddOffsetsToTxnRequest, context: _Context
    ) -> pb.AddOffsetsToTxnResponse:
        code = await self._core.add_offsets_to_txn(
            request.transactional_id,
            request.producer_id,
            request.producer_epoch,
            request.group_id,
            self._session(context),
        )
        return pb.AddOffsetsToTxnResponse(error_code=code)

    async def EndTxn(self, request: pb.EndTxnRequest, context: _Context) -> pb.EndTxnResponse:
        code = await self._core.end_txn(
            request.transactional_id,
            request.producer_id,
            request.producer_epoch,
            request.committed,
            self._session(context),
        )
        return pb.EndTxnResponse(error_code=code)

    async def DescribeTransactions(
        self, request: pb.DescribeTransactionsRequest, context: _Context
    ) -> pb.DescribeTransactionsResponse:
        described = self._core.describe_transactions(
            list(request.transactional_ids), self._session(context)
        )
        response = pb.DescribeTransactionsResponse()
        for txn in described:
            state = response.transaction_states.add(
                error_code=txn.error_code,
                transactional_id=txn.transactional_id,
                transaction_state=txn.state,
                transaction_timeout_ms=txn.transaction_timeout_ms,
                transaction_start_time_ms=txn.transaction_start_time_ms,
                producer_id=txn.producer_id,
                producer_epoch=txn.producer_epoch,
            )
            for name, tps in by_topic(sorted(txn.partitions)).items():
                state.topics.add(topic=name, partitions=[tp.partition for tp in tps])
        return response

    async def ListTransactions(
        self, request: pb.ListTransactionsRequest, context: _Context
    ) -> pb.ListTransactionsResponse:
        listed = self._core.list_transactions(
            list(request.state_filters),
            list(request.producer_id_filters),
            request.duration_filter if request.duration_filter > 0 else -1,
            self._session(context),
        )
        response = pb.ListTransactionsResponse(
            error_code=listed.error_code, unknown_state_filters=list(listed.unknown_state_filters)
        )
        for transactional_id, producer_id, state in listed.transaction_states:
            response.transaction_states.add(
                transactional_id=transactional_id, producer_id=producer_id, transaction_state=state
            )
        return response
