"""The gRPC door's transaction RPCs translate to the core's TransactionApi and back: per-partition
answers by topic, the consumer's membership and a static member's instance id on
TxnOffsetCommit, DescribeProducers' producers, DescribeTransactions' partitions by topic."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from minikafka.broker.server.admin_service import AdminService
from minikafka.broker.server.group_service import GroupService
from minikafka.broker.server.transaction_service import TransactionService
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto.common import OffsetAndMetadata, TopicPartition
from minikafka.proto.errors import ErrorCode
from tests.unit.grpc_context import PeerContext

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


@dataclass(frozen=True)
class Described:
    transactional_id: str
    error_code: int
    state: str = "Ongoing"
    transaction_timeout_ms: int = 60_000
    transaction_start_time_ms: int = 5
    producer_id: int = 7
    producer_epoch: int = 2
    partitions: tuple[TopicPartition, ...] = (B0, A1, A0)


@dataclass(frozen=True)
class Listed:
    error_code: int
    unknown_state_filters: list[str]
    transaction_states: list[tuple[str, int, str]]


@dataclass(frozen=True)
class Producer:
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int


class FakeCore:
    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    async def add_partitions_to_txn(self, *args: Any, **kwargs: Any) -> dict[TopicPartition, int]:
        self.calls.append(("add_partitions", args, kwargs))
        return {A0: ErrorCode.NONE, B0: ErrorCode.TOPIC_AUTHORIZATION_FAILED}

    async def add_offsets_to_txn(self, *args: Any, **kwargs: Any) -> int:
        self.calls.append(("add_offsets", args, kwargs))
        return ErrorCode.CONCURRENT_TRANSACTIONS

    async def end_txn(self, *args: Any, **kwargs: Any) -> int:
        self.calls.append(("end_txn", args, kwargs))
        return ErrorCode.PRODUCER_FENCED

    async def txn_offset_commit(self, *args: Any, **kwargs: Any) -> dict[TopicPartition, int]:
        self.calls.append(("txn_offset_commit", args, kwargs))
        offsets: Mapping[TopicPartition, OffsetAndMetadata] = args[4]
        return dict.fromkeys(offsets, ErrorCode.NONE)

    def describe_producers(
        self, partitions: Sequence[TopicPartition], session: Any = None
    ) -> dict[TopicPartition, tuple[int, str, list[Producer]]]:
        return {
            tp: (ErrorCode.NONE, "", [Producer(7, 2, 11, 99, 3, 40)])
            if tp == A0
            else (ErrorCode.NOT_LEADER_OR_FOLLOWER, "", [])
            for tp in partitions
        }

    def describe_transactions(self, ids: Sequence[str], session: Any = None) -> list[Described]:
        return [Described(i, ErrorCode.NONE) for i in ids]

    def list_transactions(self, *args: Any, **kwargs: Any) -> Listed:
        self.calls.append(("list", args, kwargs))
        return Listed(ErrorCode.NONE, ["Nope"], [("t1", 7, "Ongoing")])


def call(method: Any, request: Any) -> Any:
    return asyncio.run(method(request, PeerContext()))


def test_add_partitions_and_end_txn_pass_through() -> None:
    core = FakeCore()
    service = TransactionService(core)
    request = pb.AddPartitionsToTxnRequest(transactional_id="t1", producer_id=7, producer_epoch=2)
    request.topics.add(name="a", partitions=[0])
    request.topics.add(name="b", partitions=[0])
    response = call(service.AddPartitionsToTxn, request)
    assert core.calls[0][1][:4] == ("t1", 7, 2, [A0, B0])
    assert [(t.name, [(r.partition_index, r.partition_error_code) for r in t.results])
            for t in response.results] == [
        ("a", [(0, ErrorCode.NONE)]),
        ("b", [(0, ErrorCode.TOPIC_AUTHORIZATION_FAILED)]),
    ]  # fmt: skip
    offsets = call(service.AddOffsetsToTxn, pb.AddOffsetsToTxnRequest(group_id="g"))
    assert offsets.error_code == ErrorCode.CONCURRENT_TRANSACTIONS
    end = call(service.EndTxn, pb.EndTxnRequest(transactional_id="t1", committed=True))
    assert end.error_code == ErrorCode.PRODUCER_FENCED
    assert core.calls[-1][1][3] is True


def test_describe_and_list_transactions() -> None:
    core = FakeCore()
    service = TransactionService(core)
    described = call(
        service.DescribeTransactions, pb.DescribeTransactionsRequest(transactional_ids=["t1"])
    )
    (state,) = described.transaction_states
    assert (state.transactional_id, state.transaction_state, state.producer_epoch) == (
        "t1",
        "Ongoing",
        2,
    )
    assert [(t.topic, list(t.partitions)) for t in state.topics] == [("a", [0, 1]), ("b", [0])]
    listed = call(service.ListTransactions, pb.ListTransactionsRequest(state_filters=["Nope"]))
    assert list(listed.unknown_state_filters) == ["Nope"]
    assert [(t.transactional_id, t.producer_id) for t in listed.transaction_states] == [("t1", 7)]
    assert core.calls[-1][1][2] == -1  # no duration filter


def test_txn_offset_commit_carries_the_membership() -> None:
    core = FakeCore()
    service = GroupService(None, transactions=core)  # type: ignore[arg-type]
    request = pb.TxnOffsetCommitRequest(
        transactional_id="t1",
        group_id="g",
        producer_id=7,
        producer_epoch=2,
        generation_id=4,
        member_id="m-1",
        group_instance_id="i-1",
    )
    topic = request.topics.add(name="a")
    topic.partitions.add(partition_index=1, committed_offset=43, committed_leader_epoch=5)
    response = call(service.TxnOffsetCommit, request)
    _, args, kwargs = core.calls[0]
    assert args[:4] == ("t1", "g", 7, 2)
    assert args[4] == {A1: OffsetAndMetadata(43, "", 5)}
    assert (kwargs["member_id"], kwargs["generation_id"], kwargs["group_instance_id"]) == (
        "m-1",
        4,
        "i-1",
    )
    assert response.topics[0].partitions[0].error_code == ErrorCode.NONE


def test_describe_producers_answers_per_partition() -> None:
    service = AdminService(None, transactions=FakeCore())  # type: ignore[arg-type]
    request = pb.DescribeProducersRequest()
    request.topics.add(name="a", partition_indexes=[0, 1])
    response = call(service.DescribeProducers, request)
    p0, p1 = response.topics[0].partitions
    (found,) = p0.active_producers
    assert (found.producer_id, found.coordinator_epoch) == (7, 3)
    assert found.current_txn_start_offset == 40
    assert (p1.error_code, list(p1.active_producers)) == (ErrorCode.NOT_LEADER_OR_FOLLOWER, [])
