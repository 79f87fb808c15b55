"""The consumer's fetcher follows a leader's ``preferred_read_replica`` (KIP-392) and goes back
to the leader on an error, an unreachable replica or after metadata_max_age_ms."""

from __future__ import annotations

import time
from concurrent.futures import Future
from typing import Any

import grpc

from minikafka.client.consumer.fetcher import FetchConfig, Fetcher
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto.common import Node, TopicPartition
from minikafka.proto.errors import ErrorCode
from minikafka.proto.records import encode_batch
from tests.raw_data import raw_fetch_response

LEADER = Node(1, "127.0.0.1", 9001)
NEAR = Node(2, "127.0.0.1", 9002)
TP = TopicPartition("t", 0)


class FakeMetadata:
    def __init__(self) -> None:
        self.brokers = {1: LEADER, 2: NEAR}
        self.updates = 0

    def add_topics(self, topics: object) -> None:
        pass

    def maybe_update(self) -> None:
        pass

    def request_update(self) -> None:
        self.updates += 1

    def leader_for(self, tp: TopicPartition) -> Node:
        return LEADER

    def node(self, node_id: int) -> Node | None:
        return self.brokers.get(node_id)


class FakePool:
    """Each Fetch by the address it went to; the test answers them through their futures."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, pb.FetchRequest, Future[Any]]] = []

    def stream(self, address: str, method: str) -> FakePool:
        assert method == "FetchStream"
        self._address = address
        return self

    def send(self, request: pb.FetchRequest, timeout: float) -> Future[Any]:
        future: Future[Any] = Future()
        self.sent.append((self._address, request, future))
        return future


def part(**fields: Any) -> pb.FetchResponse:
    return pb.FetchResponse(
        responses=[
            pb.FetchResponse.FetchableTopicResponse(
                topic="t", partitions=[pb.FetchResponse.PartitionData(partition_index=0, **fields)]
            )
        ]
    )


def setup(max_age_ms: int = 300_000) -> tuple[Fetcher, FakePool, FakeMetadata]:
    pool, metadata = FakePool(), FakeMetadata()
    config = FetchConfig(client_rack="r2", metadata_max_age_ms=max_age_ms)
    fetcher = Fetcher(config, metadata, pool)  # type: ignore[arg-type]
    fetcher.assign([TP])
    fetcher.seek(TP, 0)
    return fetcher, pool, metadata


def round_trip(fetcher: Fetcher, pool: FakePool, response: pb.FetchResponse) -> str:
    """Send the next Fetch, answer it, return where it went."""
    fetcher.send_fetches()
    address, _, future = pool.sent[-1]
    future.set_result(raw_fetch_response(response))
    fetcher.wait_for_fetches(1)
    return address


def records() -> bytes:
    return encode_batch([(1_000, None, b"v", ())])


def test_fetches_follow_the_preferred_replica_and_carry_the_rack() -> None:
    fetcher, pool, _ = setup()
    assert round_trip(fetcher, pool, part(high_watermark=1, preferred_read_replica=2)) == (
        LEADER.address
    )
    assert pool.sent[0][1].rack_id == "r2"
    assert fetcher.fetched_records(10) == {}  # the redirect carries no records
    assert round_trip(fetcher, pool, part(high_watermark=1, records=records())) == NEAR.address
    assert [r.value for r in fetcher.fetched_records(10)[TP]] == [b"v"]
    # still there for the next fetch
    fetcher.send_fetches()
    assert pool.sent[-1][0] == NEAR.address


def test_an_error_from_the_replica_sends_the_partition_back_to_the_leader() -> None:
    fetcher, pool, metadata = setup()
    round_trip(fetcher, pool, part(high_watermark=1, preferred_read_replica=2))
    address = round_trip(fetcher, pool, part(error_code=ErrorCode.OFFSET_OUT_OF_RANGE))
    assert address == NEAR.address
    assert fetcher.position(TP) == 0  # not reset: the leader is asked at the same position
    fetcher.send_fetches()
    assert pool.sent[-1][0] == LEADER.address
    assert metadata.updates == 0


def test_an_unreachable_replica_or_the_age_limit_ends_the_preference() -> None:
    fetcher, pool, _ = setup()
    round_trip(fetcher, pool, part(high_watermark=1, preferred_read_replica=2))
    fetcher.send_fetches()
    address, _, future = pool.sent[-1]
    assert address == NEAR.address
    error = grpc.RpcError()
    error.code = lambda: grpc.StatusCode.UNAVAILABLE  # type: ignore[method-assign]
    future.set_exception(error)
    fetcher.wait_for_fetches(1)
    fetcher.send_fetches()
    assert pool.sent[-1][0] == LEADER.address

    aged, aged_pool, _ = setup(max_age_ms=50)
    round_trip(aged, aged_pool, part(high_watermark=1, preferred_read_replica=2))
    time.sleep(0.1)
    aged.send_fetches()
    assert aged_pool.sent[-1][0] == LEADER.address


def test_a_replica_gone_from_the_metadata_is_not_fetched_from() -> None:
    fetcher, pool, metadata = setup()
    round_trip(fetcher, pool, part(high_watermark=1, preferred_read_replica=2))
    del metadata.brokers[2]
    fetcher.send_fetches()
    assert pool.sent[-1][0] == LEADER.address


def test_without_a_client_rack_no_rack_id_is_sent() -> None:
    """No client metadata: brokers serve the consumer from leaders only (Fetch before v11)."""
    pool = FakePool()
    fetcher = Fetcher(FetchConfig(), FakeMetadata(), pool)  # type: ignore[arg-type]
    fetcher.assign([TP])
    fetcher.seek(TP, 0)
    fetcher.send_fetches()
    assert not pool.sent[-1][1].HasField("rack_id")
