"""The transactional Producer against an in-process fake broker (gRPC): the requests Kafka's
client sends and in what order (FindCoordinator TRANSACTION, InitProducerId, AddPartitionsToTxn
before a partition's first batch, transactional batches, AddOffsetsToTxn + TxnOffsetCommit,
EndTxn after the flush), its retries, and its fatal and abortable errors."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest

from minikafka.client.consumer.group_metadata import ConsumerGroupMetadata
from minikafka.client.producer.producer import Producer
from minikafka.client.producer.transaction_manager import TransactionAbortedError, TxnState
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.common import OffsetAndMetadata, TopicPartition
from minikafka.proto.errors import ErrorCode, InvalidConfigError, KafkaError
from minikafka.proto.records import iter_batch_headers
from tests.raw_data import raw_data_handler

TID = "etl-1"
T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


class FakeBroker(pb_grpc.MetadataServicer, pb_grpc.GroupServicer, pb_grpc.DataServicer,
                 pb_grpc.TransactionServicer):  # fmt: skip
    """One broker that leads everything and coordinates every id and group. ``log`` holds
    each request's name and message in arrival order; ``fail`` maps an RPC name to error
    codes its next answers carry, one each."""

    def __init__(self) -> None:
        self.port = 0
        self.lock = threading.Lock()
        self.log: list[tuple[str, Any]] = []
        self.fail: dict[str, list[int]] = {}
        self.epoch = -1

    def _note(self, name: str, request: Any) -> int:
        with self.lock:
            self.log.append((name, request))
            errors = self.fail.get(name)
            return errors.pop(0) if errors else ErrorCode.NONE

    def names(self) -> list[str]:
        with self.lock:
            return [name for name, _ in self.log]

    def requests(self, name: str) -> list[Any]:
        with self.lock:
            return [r for n, r in self.log if n == name]

    def Metadata(self, request: Any, context: Any) -> pb.MetadataResponse:
        response = pb.MetadataResponse(cluster_id="fake", controller_id=0)
        response.brokers.add(node_id=0, host="127.0.0.1", port=self.port)
        for t in request.topics:
            topic = response.topics.add(name=t.name)
            for p in range(2):
                topic.partitions.add(partition_index=p, leader_id=0, replica_nodes=[0])
        return response

    def FindCoordinator(self, request: Any, context: Any) -> pb.FindCoordinatorResponse:
        code = self._note("FindCoordinator", request)
        return pb.FindCoordinatorResponse(
            error_code=code, node_id=0, host="127.0.0.1", port=self.port
        )

    def InitProducerId(self, request: Any, context: Any) -> pb.InitProducerIdResponse:
        code = self._note("InitProducerId", request)
        if code:
            return pb.InitProducerIdResponse(error_code=code)
        self.epoch += 1
        return pb.InitProducerIdResponse(producer_id=1000, producer_epoch=self.epoch)

    def ProduceStream(self, requests: Iterator[Any], context: Any) -> Iterator[Any]:
        for request in requests:
            code = self._note("Produce", request)
            response = pb.ProduceResponse()
            for topic in request.topic_data:
                entry = response.responses.add(name=topic.name)
                for part in topic.partition_data:
                    entry.partition_responses.add(index=part.index, error_code=code, base_offset=0)
            yield response

    def AddPartitionsToTxn(self, request: Any, context: Any) -> pb.AddPartitionsToTxnResponse:
        code = self._note("AddPartitionsToTxn", request)
        response = pb.AddPartitionsToTxnResponse()
        for topic in request.topics:
            entry = response.results.add(name=topic.name)
            for p in topic.partitions:
                entry.results.add(partition_index=p, partition_error_code=code)
        return response

    def AddOffsetsToTxn(self, request: Any, context: Any) -> pb.AddOffsetsToTxnResponse:
        return pb.AddOffsetsToTxnResponse(error_code=self._note("AddOffsetsToTxn", request))

    def EndTxn(self, request: Any, context: Any) -> pb.EndTxnResponse:
        return pb.EndTxnResponse(error_code=self._note("EndTxn", request))

    def TxnOffsetCommit(self, request: Any, context: Any) -> pb.TxnOffsetCommitResponse:
        code = self._note("TxnOffsetCommit", request)
        response = pb.TxnOffsetCommitResponse()
        for topic in request.topics:
            entry = response.topics.add(name=topic.name)
            for p in topic.partitions:
                entry.partitions.add(partition_index=p.partition_index, error_code=code)
        return response


@pytest.fixture
def broker() -> Iterator[FakeBroker]:
    broker = FakeBroker()  # type: ignore[abstract]  # the rest: UNIMPLEMENTED
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    pb_grpc.add_MetadataServicer_to_server(broker, server)
    pb_grpc.add_GroupServicer_to_server(broker, server)
    pb_grpc.add_DataServicer_to_server(broker, server)
    server.add_generic_rpc_handlers((raw_data_handler(produce_stream=broker.ProduceStream),))
    pb_grpc.add_TransactionServicer_to_server(broker, server)
    broker.port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield broker
    server.stop(None)


def producer(broker: FakeBroker, **config: Any) -> Producer:
    settings: dict[str, Any] = {
        "transactional_id": TID,
        "retry_backoff_ms": 10,
        "max_block_ms": 3_000,
        "request_timeout_ms": 2_000,
        "delivery_timeout_ms": 5_000,
        "linger_ms": 0,
    }
    settings.update(config)
    return Producer(f"127.0.0.1:{broker.port}", **settings)


def batches(request: pb.ProduceRequest) -> list[Any]:
    return [
        header
        for topic in request.topic_data
        for part in topic.partition_data
        for _, header in iter_batch_headers(part.records)
    ]


def test_a_committed_transaction_sends_kafkas_requests_in_kafkas_order(
    broker: FakeBroker,
) -> None:
    with producer(broker, transaction_timeout_ms=7_000) as p:
        p.init_transactions()
        find, init = broker.requests("FindCoordinator")[0], broker.requests("InitProducerId")[0]
        assert (find.key, find.key_type) == (TID, 1)
        assert (init.transactional_id, init.transaction_timeout_ms) == (TID, 7_000)
        assert (init.producer_id, init.producer_epoch) == (-1, -1)

        p.begin_transaction()
        assert broker.names() == ["FindCoordinator", "InitProducerId"]  # begin sends nothing
        p.send("t", b"a", partition=0)
        p.send("t", b"b", partition=1)
        p.send_offsets_to_transaction(
            {TopicPartition("in", 0): 43}, ConsumerGroupMetadata("g", 5, "m-1", None)
        )
        p.commit_transaction()

    names = broker.names()
    assert names[-1] == "EndTxn"
    # Every partition was added before a batch went to it, and every batch was answered
    # before EndTxn.
    first_produce = names.index("Produce")
    added = {
        TopicPartition(t.name, i)
        for r in broker.requests("AddPartitionsToTxn")
        for t in r.topics
        for i in t.partitions
    }
    assert added == {T0, T1}
    assert names.index("AddPartitionsToTxn") < first_produce
    for request in broker.requests("Produce"):
        assert request.transactional_id == TID
        for header in batches(request):
            assert header.is_transactional
            assert (header.producer_id, header.producer_epoch) == (1000, 0)
    (add_offsets,) = broker.requests("AddOffsetsToTxn")
    assert (add_offsets.group_id, add_offsets.producer_id) == ("g", 1000)
    (commit,) = broker.requests("TxnOffsetCommit")
    assert (commit.group_id, commit.generation_id, commit.member_id) == ("g", 5, "m-1")
    assert commit.topics[0].partitions[0].committed_offset == 43
    assert names.index("AddOffsetsToTxn") < names.index("TxnOffsetCommit")
    (end,) = broker.requests("EndTxn")
    assert (end.transactional_id, end.committed, end.producer_epoch) == (TID, True, 0)


def test_init_retries_a_coordinator_that_moved_or_is_busy(broker: FakeBroker) -> None:
    broker.fail = {
        "FindCoordinator": [ErrorCode.COORDINATOR_NOT_AVAILABLE],
        "InitProducerId": [ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.NOT_COORDINATOR],
    }
    with producer(broker) as p:
        p.init_transactions()
    assert broker.names() == [
        "FindCoordinator",  # not available yet
        "FindCoordinator",
        "InitProducerId",  # CONCURRENT_TRANSACTIONS: the same coordinator again
        "InitProducerId",  # NOT_COORDINATOR: look it up again
        "FindCoordinator",
        "InitProducerId",
    ]


def test_add_partitions_is_retried_while_the_last_transaction_completes(
    broker: FakeBroker,
) -> None:
    broker.fail = {"AddPartitionsToTxn": [ErrorCode.CONCURRENT_TRANSACTIONS] * 2}
    with producer(broker) as p:
        p.init_transactions()
        p.begin_transaction()
        p.send("t", b"a", partition=0).result(timeout=5)
        p.commit_transaction()
    names = broker.names()
    assert names.count("AddPartitionsToTxn") == 3
    assert names.index("Produce") > len(names) - 1 - names[::-1].index("AddPartitionsToTxn")


def test_abort_drops_unsent_records_and_ends_the_transaction(broker: FakeBroker) -> None:
    with producer(broker, linger_ms=60_000, delivery_timeout_ms=90_000) as p:
        p.init_transactions()
        p.begin_transaction()
        sent = p.send("t", b"a", partition=0)
        p.flush()
        sent.result(timeout=5)
        waiting = p.send("t", b"b", partition=1)  # lingers: never sent
        p.abort_transaction()
        with pytest.raises(TransactionAbortedError):
            waiting.result(timeout=5)
        assert broker.requests("EndTxn")[-1].committed is False
        assert len(broker.requests("Produce")) == 1
        p.begin_transaction()  # the producer goes on
        p.send("t", b"c", partition=0)
        p.commit_transaction()
    assert [r.committed for r in broker.requests("EndTxn")] == [False, True]


def test_a_commit_without_records_sends_no_end_txn(broker: FakeBroker) -> None:
    with producer(broker) as p:
        p.init_transactions()
        p.begin_transaction()
        p.commit_transaction()
    assert "EndTxn" not in broker.names()


def test_a_fenced_producer_is_unusable(broker: FakeBroker) -> None:
    broker.fail = {"EndTxn": [ErrorCode.PRODUCER_FENCED]}
    with producer(broker) as p:
        p.init_transactions()
        p.begin_transaction()
        p.send("t", b"a", partition=0)
        with pytest.raises(KafkaError) as info:
            p.commit_transaction()
        assert info.value.code == ErrorCode.PRODUCER_FENCED
        for call in (p.begin_transaction, p.abort_transaction, lambda: p.send("t", b"x")):
            with pytest.raises(KafkaError) as again:
                call()
            assert again.value.code == ErrorCode.PRODUCER_FENCED
            assert "fatal" in again.value.message


def test_invalid_producer_epoch_on_produce_is_fatal_as_fenced(broker: FakeBroker) -> None:
    broker.fail = {"Produce": [ErrorCode.INVALID_PRODUCER_EPOCH]}
    with producer(broker) as p:
        p.init_transactions()
        p.begin_transaction()
        future = p.send("t", b"a", partition=0)
        with pytest.raises(KafkaError):
            future.result(timeout=5)
        with pytest.raises(KafkaError) as info:
            p.commit_transaction()
        assert info.value.code == ErrorCode.PRODUCER_FENCED
        assert p._txn is not None and p._txn.state is TxnState.FATAL_ERROR


def test_an_abortable_error_needs_an_abort_which_bumps_the_epoch(broker: FakeBroker) -> None:
    broker.fail = {"Produce": [ErrorCode.TOPIC_AUTHORIZATION_FAILED]}
    with producer(broker) as p:
        p.init_transactions()
        p.begin_transaction()
        with pytest.raises(KafkaError):
            p.send("t", b"a", partition=0).result(timeout=5)
        for call in (p.commit_transaction, lambda: p.send("t", b"x", partition=0)):
            with pytest.raises(KafkaError) as info:
                call()
            assert info.value.code == ErrorCode.TRANSACTION_ABORTABLE
            assert "TOPIC_AUTHORIZATION_FAILED" in info.value.message
        p.abort_transaction()
        # A batch with a sequence number failed: the abort bumped the epoch (KIP-360).
        bump = broker.requests("InitProducerId")[-1]
        assert (bump.producer_id, bump.producer_epoch) == (1000, 0)
        p.begin_transaction()
        p.send("t", b"b", partition=0).result(timeout=5)
        p.commit_transaction()
    last = broker.requests("Produce")[-1]
    assert [(h.producer_epoch, h.base_sequence) for h in batches(last)] == [(1, 0)]
    assert broker.requests("EndTxn")[-1].producer_epoch == 1


def test_transactional_calls_in_the_wrong_state(broker: FakeBroker) -> None:
    with producer(broker) as p:
        with pytest.raises(KafkaError, match="before init_transactions") as info:
            p.send("t", b"a")
        assert info.value.code == ErrorCode.INVALID_TXN_STATE
        p.init_transactions()
        with pytest.raises(KafkaError, match="call begin_transaction first"):
            p.send("t", b"a")
        with pytest.raises(KafkaError, match="cannot commit_transaction in state READY"):
            p.commit_transaction()
        with pytest.raises(KafkaError, match="cannot init_transactions in state READY"):
            p.init_transactions()
    with (
        producer(broker, transactional_id=None) as plain,
        pytest.raises(KafkaError, match="non-transactional producer"),
    ):
        plain.begin_transaction()


def test_a_transactional_id_needs_idempotence() -> None:
    with pytest.raises(InvalidConfigError, match="enabling idempotence"):
        Producer("127.0.0.1:9", transactional_id=TID, enable_idempotence=False)


def test_send_offsets_takes_a_group_id_and_plain_offsets(broker: FakeBroker) -> None:
    with producer(broker) as p:
        p.init_transactions()
        p.begin_transaction()
        p.send_offsets_to_transaction({TopicPartition("in", 1): OffsetAndMetadata(9, "m")}, "g2")
        p.commit_transaction()
    (commit,) = broker.requests("TxnOffsetCommit")
    assert (commit.group_id, commit.generation_id, commit.member_id) == ("g2", -1, "")
    part = commit.topics[0].partitions[0]
    assert (part.committed_offset, part.committed_metadata) == (9, "m")
    assert [r.committed for r in broker.requests("EndTxn")] == [True]
