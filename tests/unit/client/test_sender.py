"""The producer's Sender against a fake broker connection: which batches go in each Produce
request (Kafka's RecordAccumulator.drain)."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any, cast

from minikafka.client._channel import ChannelPool
from minikafka.client.metadata import ClusterMetadata
from minikafka.client.producer.accumulator import RecordAccumulator
from minikafka.client.producer.sender import Sender, SenderConfig
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto.common import Node, TopicPartition
from minikafka.proto.raw_records import RawProduceRequest
from minikafka.proto.records import Compression, RecordBatchBuilder
from tests.raw_data import produce_message

LEADER = Node(0, "127.0.0.1", 9092)
MAX_REQUEST_SIZE = 4096


class FakeMetadata:
    """Every partition led by LEADER."""

    bootstrap: tuple[str, ...] = ()

    def needs_update(self) -> bool:
        return False

    def leader_for(self, tp: TopicPartition) -> Node:
        return LEADER

    def request_update(self) -> None:
        pass

    def brokers(self) -> dict[int, Node]:
        return {LEADER.id: LEADER}


class FakeStream:
    """Keeps each Produce request and its future, for the test to answer."""

    def __init__(self) -> None:
        self.sent: list[tuple[pb.ProduceRequest, Future[pb.ProduceResponse]]] = []

    def send(self, request: RawProduceRequest, *, timeout: float) -> Future[pb.ProduceResponse]:
        future: Future[pb.ProduceResponse] = Future()
        self.sent.append((produce_message(request), future))
        return future

    def answer_all(self) -> None:
        """Every partition of every request not yet answered: appended."""
        for request, future in self.sent:
            if future.done():
                continue
            future.set_result(
                pb.ProduceResponse(
                    responses=[
                        pb.ProduceResponse.TopicProduceResponse(
                            name=topic.name,
                            partition_responses=[
                                pb.ProduceResponse.PartitionProduceResponse(
                                    index=p.index, base_offset=0
                                )
                                for p in topic.partition_data
                            ],
                        )
                        for topic in request.topic_data
                    ]
                )
            )


class FakePool:
    def __init__(self) -> None:
        self.stream_of_leader = FakeStream()

    def stream(self, address: str, method: str) -> FakeStream:
        return self.stream_of_leader


def partitions_of(request: pb.ProduceRequest) -> list[int]:
    return [p.index for topic in request.topic_data for p in topic.partition_data]


def records_bytes(request: pb.ProduceRequest) -> list[int]:
    return [len(p.records) for topic in request.topic_data for p in topic.partition_data]


def test_a_partition_behind_others_that_fill_each_request_is_not_starved() -> None:
    # Kafka's drainIndex: each request to a leader starts where the last one stopped. Without
    # it, partitions 0 and 1, whose batches grow while their request is in flight, went first
    # in every request (overrunning max.request.size) and partition 2 waited until its
    # batches expired.
    acc = RecordAccumulator(
        batch_size=1000,
        linger_ms=0,
        buffer_memory=1 << 20,
        compression=Compression.NONE,
        delivery_timeout_ms=120_000,
        max_request_size=MAX_REQUEST_SIZE,
    )
    pool = FakePool()
    config = SenderConfig(
        acks=1,
        retries=3,
        retry_backoff_ms=100,
        request_timeout_ms=30_000,
        max_in_flight=1,
        max_request_size=MAX_REQUEST_SIZE,
    )
    sender = Sender(
        config, acc, cast(ClusterMetadata, FakeMetadata()), cast(ChannelPool, cast(Any, pool))
    )
    tps = [TopicPartition("t", p) for p in range(3)]
    value = bytes(90)
    size = RecordBatchBuilder.estimate_record_size(None, value, ())

    def send(tp: TopicPartition, records: int) -> None:
        for _ in range(records):
            acc.append(tp, 1_700_000_000_000, None, value, (), size, 1.0)

    send(tps[0], 1)
    send(tps[1], 1)
    sender._run_once()
    sent_with_2 = 0
    for _ in range(6):
        # While a request is in flight, its partitions' batches grow to about 2.5 KB each.
        send(tps[0], 24)
        send(tps[1], 24)
        send(tps[2], 1)
        pool.stream_of_leader.answer_all()
        sender._run_once()
        request, _ = pool.stream_of_leader.sent[-1]
        sent_with_2 += 2 in partitions_of(request)
        sizes = records_bytes(request)
        assert len(sizes) == 1 or sum(sizes) <= MAX_REQUEST_SIZE  # the first whatever its size
    assert sent_with_2 >= 2
