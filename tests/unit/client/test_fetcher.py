"""The consumer's fetcher against a fake leader: which Fetch requests it sends, and when."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import pytest

from minikafka.client.consumer.fetcher import ConsumerRecord, FetchConfig, Fetcher
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto.common import Node, TopicPartition
from minikafka.proto.errors import (
    ErrorCode,
    InvalidRequestError,
    NotLeaderOrFollowerError,
    UnsupportedCompressionTypeError,
)
from minikafka.proto.records import encode_batch
from tests.batches import poison_batch
from tests.raw_data import raw_fetch_response

LEADER = Node(1, "127.0.0.1", 9092)
P0, P1 = TopicPartition("t", 0), TopicPartition("t", 1)


class FakeMetadata:
    def add_topics(self, topics: object) -> None:
        pass

    def maybe_update(self) -> None:
        pass

    def request_update(self) -> None:
        raise AssertionError("no metadata refresh expected")

    def leader_for(self, tp: TopicPartition) -> Node:
        return LEADER


class FakeStream:
    """Records each Fetch; the test answers them through their futures."""

    def __init__(self) -> None:
        self.sent: list[tuple[pb.FetchRequest, Future[Any]]] = []

    def send(self, request: pb.FetchRequest, timeout: float) -> Future[Any]:
        future: Future[Any] = Future()
        self.sent.append((request, future))
        return future


class FakePool:
    def __init__(self) -> None:
        self.fetch_stream = FakeStream()

    def stream(self, address: str, method: str) -> FakeStream:
        assert (address, method) == (LEADER.address, "FetchStream")
        return self.fetch_stream


def fetched_partitions(request: pb.FetchRequest) -> dict[int, int]:
    return {p.partition: p.fetch_offset for t in request.topics for p in t.partitions}


def answer(future: Future[Any], parts: dict[int, tuple[bytes, int]]) -> None:
    """Complete a Fetch with (records, high watermark) per partition of topic t."""
    future.set_result(
        raw_fetch_response(
            pb.FetchResponse(
                responses=[
                    pb.FetchResponse.FetchableTopicResponse(
                        topic="t",
                        partitions=[
                            pb.FetchResponse.PartitionData(
                                partition_index=p, high_watermark=hw, records=records
                            )
                            for p, (records, hw) in parts.items()
                        ],
                    )
                ]
            )
        )
    )


def fetcher_at_zero() -> tuple[Fetcher, FakeStream]:
    pool = FakePool()
    fetcher = Fetcher(FetchConfig(), FakeMetadata(), pool)  # type: ignore[arg-type]
    fetcher.assign([P0, P1])
    fetcher.seek(P0, 0)
    fetcher.seek(P1, 0)
    return fetcher, pool.fetch_stream


def three_records() -> bytes:
    return encode_batch([(1_000 + i, None, b"v%d" % i, ()) for i in range(3)])


def test_no_fetch_of_caught_up_partitions_parks_behind_records_still_held() -> None:
    fetcher, stream = fetcher_at_zero()
    fetcher.send_fetches()
    ((request, future),) = stream.sent
    assert fetched_partitions(request) == {0: 0, 1: 0}
    answer(future, {0: (three_records(), 3), 1: (b"", 0)})  # p1 is empty: caught up
    fetcher.wait_for_fetches(1)

    # p0 still holds its records and p1 has nothing new: a Fetch of p1 alone would be parked
    # by the broker for fetch.max.wait.ms, and p0's next one would wait behind it.
    fetcher.send_fetches()
    assert len(stream.sent) == 1

    records = fetcher.fetched_records(500)
    assert [r.offset for r in records[P0]] == [0, 1, 2]
    assert all(type(r) is ConsumerRecord for r in records[P0])
    fetcher.send_fetches()  # p0 drained: both partitions go in one Fetch
    assert [fetched_partitions(r) for r, _ in stream.sent[1:]] == [{0: 3, 1: 0}]


def test_a_partition_with_new_records_is_fetched_while_another_holds_records() -> None:
    fetcher, stream = fetcher_at_zero()
    fetcher.send_fetches()
    ((_, future),) = stream.sent
    # p1 came back empty although its high watermark is 5 (the broker's size limit, say)
    answer(future, {0: (three_records(), 3), 1: (b"", 5)})
    fetcher.wait_for_fetches(1)
    fetcher.send_fetches()
    assert [fetched_partitions(r) for r, _ in stream.sent[1:]] == [{1: 0}]


def test_a_batch_that_does_not_decode_raises_after_the_records_before_it() -> None:
    """Issue 16: a stored batch with codec 5 made poll raise ``ValueError: 5 is not a valid
    Compression`` and dropped the good records fetched with it."""
    fetcher, stream = fetcher_at_zero()
    fetcher.send_fetches()
    ((_, future),) = stream.sent
    answer(future, {0: (three_records() + poison_batch(5, base_offset=3), 5), 1: (b"", 0)})
    fetcher.wait_for_fetches(1)
    assert [r.offset for r in fetcher.fetched_records(500)[P0]] == [0, 1, 2]
    for _ in range(2):  # every poll says so, until the application seeks past the batch
        with pytest.raises(UnsupportedCompressionTypeError) as info:
            fetcher.fetched_records(500)
        assert str(info.value) == (
            "UNSUPPORTED_COMPRESSION_TYPE (76): cannot read t-0 at offset 3: record batch at "
            "offset 3 names compression codec 5, which Kafka does not define (0 none, 1 gzip, "
            "2 snappy, 3 lz4, 4 zstd); seek past the record to continue consumption"
        )
    assert fetcher.position(P0) == 3
    fetcher.seek(P0, 5)
    assert fetcher.fetched_records(500) == {}


def test_records_of_other_partitions_are_not_lost_to_a_poison_batch() -> None:
    fetcher, stream = fetcher_at_zero()
    fetcher.send_fetches()
    ((_, future),) = stream.sent
    answer(future, {0: (three_records(), 3), 1: (poison_batch(7), 2)})
    fetcher.wait_for_fetches(1)
    assert [r.offset for r in fetcher.fetched_records(500)[P0]] == [0, 1, 2]
    with pytest.raises(UnsupportedCompressionTypeError, match="t-1 at offset 0"):
        fetcher.fetched_records(500)
    assert (fetcher.position(P0), fetcher.position(P1)) == (3, 0)


# --- ListOffsets ----------------------------------------------------------------------------


class CountingMetadata(FakeMetadata):
    def __init__(self) -> None:
        self.updates = 0

    def request_update(self) -> None:
        self.updates += 1


class FakeLeader:
    """A channel whose ListOffsets answers each partition with the next code scripted for it
    (offset 10 + partition once NONE); the requests are kept."""

    def __init__(self, codes: dict[int, list[ErrorCode]]) -> None:
        self.codes = codes
        self.requests: list[pb.ListOffsetsRequest] = []

    def unary_unary(self, method: str, **_: object) -> Callable[..., object]:
        return self._list_offsets

    unary_stream = stream_unary = stream_stream = unary_unary

    def get(self, address: str) -> FakeLeader:
        assert address == LEADER.address
        return self

    def _list_offsets(
        self, request: pb.ListOffsetsRequest, timeout: float
    ) -> pb.ListOffsetsResponse:
        self.requests.append(request)
        (topic,) = request.topics
        answers = []
        for part in topic.partitions:
            codes = self.codes[part.partition_index]
            code = codes.pop(0) if len(codes) > 1 else codes[0]
            answers.append(
                pb.ListOffsetsResponse.ListOffsetsPartitionResponse(
                    partition_index=part.partition_index,
                    error_code=code,
                    timestamp=-1,
                    offset=10 + part.partition_index if code == ErrorCode.NONE else -1,
                )
            )
        return pb.ListOffsetsResponse(
            topics=[pb.ListOffsetsResponse.ListOffsetsTopicResponse(name="t", partitions=answers)]
        )


def list_offsets_fetcher(
    leader: FakeLeader, retry_backoff_ms: int
) -> tuple[Fetcher, CountingMetadata]:
    metadata = CountingMetadata()
    config = FetchConfig(retry_backoff_ms=retry_backoff_ms)
    return Fetcher(config, metadata, leader), metadata  # type: ignore[arg-type]


def test_list_offsets_asks_again_for_a_moved_leader_after_retry_backoff_ms() -> None:
    moved = [ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NONE]
    leader = FakeLeader({0: moved, 1: [ErrorCode.NONE]})
    fetcher, metadata = list_offsets_fetcher(leader, retry_backoff_ms=300)
    started = time.monotonic()
    assert fetcher.list_offsets({P0: -1, P1: -1}, timeout_s=10) == {P0: (10, -1), P1: (11, -1)}
    assert time.monotonic() - started >= 0.3  # the consumer's retry.backoff.ms, not a fixed 0.1 s
    asked = [[p.partition_index for p in r.topics[0].partitions] for r in leader.requests]
    assert asked == [[0, 1], [0]]  # only what is still unanswered
    assert metadata.updates >= 1  # the leader moved: metadata is refreshed before asking again


def test_list_offsets_raises_the_last_retriable_error_once_its_time_has_passed() -> None:
    leader = FakeLeader({0: [ErrorCode.NOT_LEADER_OR_FOLLOWER]})
    fetcher, _ = list_offsets_fetcher(leader, retry_backoff_ms=50)
    started = time.monotonic()
    with pytest.raises(NotLeaderOrFollowerError):
        fetcher.list_offsets({P0: -1}, timeout_s=0.2)
    assert time.monotonic() - started >= 0.2
    assert len(leader.requests) >= 2


def test_list_offsets_raises_an_error_retrying_will_not_fix_at_once() -> None:
    leader = FakeLeader({0: [ErrorCode.INVALID_REQUEST]})
    fetcher, _ = list_offsets_fetcher(leader, retry_backoff_ms=50)
    with pytest.raises(InvalidRequestError):
        fetcher.list_offsets({P0: -1}, timeout_s=10)
    assert len(leader.requests) == 1
