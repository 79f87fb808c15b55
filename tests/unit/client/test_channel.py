"""ChannelPool.stream: requests over one stream, answered in order; failures and timeouts fail
every request waiting on the stream, and the next stream starts afresh. A real gRPC server on
127.0.0.1 plays the broker."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest

from minikafka.client._channel import ChannelPool
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto import transport
from minikafka.proto.raw_records import RawFetchResponse, RawProduceRequest
from tests.raw_data import raw_data_handler

# What the fake broker does with a request, by its timeout_ms.
ANSWER, HANG, FAIL = 0, 1, 2


class FakeData(pb_grpc.DataServicer):
    """Answers each ProduceStream request with a response naming the request's topic (served
    as RawData's by ``raw_data_handler``)."""

    def __init__(self) -> None:
        self.streams = 0
        self.client_ids: list[str] = []  # each call's, as the broker reads it
        self.records: list[list[bytes]] = []  # each produce's, partition by partition

    def Produce(self, request: pb.ProduceRequest, context: Any) -> pb.ProduceResponse:
        self.client_ids.append(transport.client_id_of(context.invocation_metadata()))
        return pb.ProduceResponse()

    def ProduceStream(
        self, requests: Iterator[pb.ProduceRequest], context: Any
    ) -> Iterator[pb.ProduceResponse]:
        self.streams += 1
        self.client_ids.append(transport.client_id_of(context.invocation_metadata()))
        for request in requests:
            if request.timeout_ms == HANG:
                while context.is_active():
                    time.sleep(0.01)
                return
            if request.timeout_ms == FAIL:
                context.abort(grpc.StatusCode.UNAVAILABLE, "broker going away")
            self.records.append([p.records for t in request.topic_data for p in t.partition_data])
            name = request.topic_data[0].name
            yield pb.ProduceResponse(responses=[pb.ProduceResponse.TopicProduceResponse(name=name)])

    def FetchStream(
        self, requests: Iterator[pb.FetchRequest], context: Any
    ) -> Iterator[pb.FetchResponse]:
        """Each partition answered with records naming its fetch offset."""
        for request in requests:
            response = pb.FetchResponse()
            for topic in request.topics:
                answer = response.responses.add(topic=topic.topic)
                for p in topic.partitions:
                    answer.partitions.add(
                        partition_index=p.partition, records=b"at-%d" % p.fetch_offset
                    )
            yield response


def request(name: str, behaviour: int = ANSWER) -> RawProduceRequest:
    """A produce request of no partitions, as the pool's ProduceStream takes it (RawData)."""
    header = pb.ProduceRequest(
        acks=1, timeout_ms=behaviour, topic_data=[pb.ProduceRequest.TopicProduceData(name=name)]
    )
    return RawProduceRequest(header, [])


@pytest.fixture
def broker() -> Iterator[tuple[str, FakeData]]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    data = FakeData()  # type: ignore[abstract]  # the rest: UNIMPLEMENTED
    pb_grpc.add_DataServicer_to_server(data, server)
    server.add_generic_rpc_handlers(
        (raw_data_handler(produce_stream=data.ProduceStream, fetch_stream=data.FetchStream),)
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield f"127.0.0.1:{port}", data
    server.stop(grace=None)


@pytest.fixture
def pool() -> Iterator[ChannelPool]:
    pool = ChannelPool()
    yield pool
    pool.close()


def answered(future: futures.Future[Any]) -> str:
    return str(future.result(timeout=10).responses[0].name)


def test_answers_come_back_to_their_requests_in_order(
    broker: tuple[str, FakeData], pool: ChannelPool
) -> None:
    address, data = broker
    stream = pool.stream(address, "ProduceStream")
    sent = [stream.send(request(f"t{i}"), timeout=10) for i in range(50)]
    assert [answered(f) for f in sent] == [f"t{i}" for i in range(50)]
    assert pool.stream(address, "ProduceStream") is stream
    assert data.streams == 1


def test_streams_carry_records_as_raw_bytes_after_the_header(
    broker: tuple[str, FakeData], pool: ChannelPool
) -> None:
    """RawData (proto/raw_records.py): a produce's records reach the broker partition by
    partition; a fetch answer's come back as slices of the answer, in the header's order."""
    address, data = broker
    header = pb.ProduceRequest(acks=1, timeout_ms=ANSWER)
    topic = header.topic_data.add(name="t")
    topic.partition_data.add(index=0)
    topic.partition_data.add(index=1)
    sent = RawProduceRequest(header, [b"batch-0", b"batch-1"])
    assert answered(pool.stream(address, "ProduceStream").send(sent, timeout=10)) == "t"
    assert data.records == [[b"batch-0", b"batch-1"]]

    fetch = pb.FetchRequest(replica_id=-1)
    fetch.topics.add(topic="t").partitions.add(partition=0, fetch_offset=7)
    fetch.topics.add(topic="u").partitions.add(partition=0, fetch_offset=9)
    answer = pool.stream(address, "FetchStream").send(fetch, timeout=10).result(timeout=10)
    assert isinstance(answer, RawFetchResponse)
    assert [t.topic for t in answer.header.responses] == ["t", "u"]
    assert not any(p.records for t in answer.header.responses for p in t.partitions)
    assert [bytes(r) for r in answer.records] == [b"at-7", b"at-9"]
    assert all(isinstance(r, memoryview) for r in answer.records)


def test_senders_on_many_threads_each_get_their_own_answer(
    broker: tuple[str, FakeData], pool: ChannelPool
) -> None:
    address, _ = broker
    results: dict[str, str] = {}

    def send(prefix: str) -> None:
        for i in range(20):
            name = f"{prefix}-{i}"
            results[name] = answered(
                pool.stream(address, "ProduceStream").send(request(name), timeout=10)
            )

    threads = [threading.Thread(target=send, args=(f"s{n}",)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 80
    assert all(name == answer for name, answer in results.items())


def test_a_failed_stream_fails_every_waiting_request_and_the_next_stream_is_new(
    broker: tuple[str, FakeData], pool: ChannelPool
) -> None:
    address, data = broker
    stream = pool.stream(address, "ProduceStream")
    first = stream.send(request("a"), timeout=10)
    failing = stream.send(request("b", FAIL), timeout=10)
    behind = stream.send(request("c"), timeout=10)
    assert answered(first) == "a"
    for future in (failing, behind):
        error = future.exception(timeout=10)
        assert isinstance(error, grpc.RpcError)
        assert error.code() == grpc.StatusCode.UNAVAILABLE
    late = stream.send(request("d"), timeout=10)  # on the failed stream: fails at once
    assert isinstance(late.exception(timeout=0), grpc.RpcError)

    again = pool.stream(address, "ProduceStream")
    assert again is not stream
    assert answered(again.send(request("e"), timeout=10)) == "e"
    assert data.streams == 2


def test_a_request_past_its_timeout_fails_with_deadline_exceeded(
    broker: tuple[str, FakeData], pool: ChannelPool
) -> None:
    address, _ = broker
    stream = pool.stream(address, "ProduceStream")
    started = time.monotonic()
    hanging = stream.send(request("a", HANG), timeout=0.3)
    behind = stream.send(request("b"), timeout=30)
    error = hanging.exception(timeout=10)
    assert isinstance(error, grpc.RpcError)
    assert error.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert 0.3 <= time.monotonic() - started < 5
    assert isinstance(behind.exception(timeout=10), grpc.RpcError)
    assert answered(pool.stream(address, "ProduceStream").send(request("c"), timeout=10)) == "c"


def test_a_stream_ended_for_a_timeout_is_failed_at_once_and_not_handed_out_again(
    broker: tuple[str, FakeData], pool: ChannelPool
) -> None:
    address, _ = broker
    stream = pool.stream(address, "ProduceStream")
    hanging = stream.send(request("a", HANG), timeout=30)
    stream.expire(time.monotonic() + 60)  # as the watcher does once the timeout has passed
    # Failed before its reader has seen the cancellation: new requests go to a new stream.
    assert stream.failed
    assert pool.stream(address, "ProduceStream") is not stream
    error = hanging.exception(timeout=10)
    assert isinstance(error, grpc.RpcError)
    assert error.code() == grpc.StatusCode.DEADLINE_EXCEEDED


def test_close_fails_the_requests_in_flight(broker: tuple[str, FakeData]) -> None:
    address, _ = broker
    pool = ChannelPool()
    hanging = pool.stream(address, "ProduceStream").send(request("a", HANG), timeout=30)
    pool.close()
    error = hanging.exception(timeout=10)
    assert isinstance(error, grpc.RpcError)
    assert error.code() == grpc.StatusCode.CANCELLED
    with pytest.raises(RuntimeError, match="closed"):
        pool.stream(address, "ProduceStream")


def test_an_unreachable_broker_fails_the_request(pool: ChannelPool) -> None:
    # Nothing listens on port 1 of 127.0.0.1.
    future = pool.stream("127.0.0.1:1", "ProduceStream").send(request("a"), timeout=10)
    error = future.exception(timeout=10)
    assert isinstance(error, grpc.RpcError)
    assert error.code() == grpc.StatusCode.UNAVAILABLE


@pytest.mark.parametrize("client_id", ["app-1", "café ☕", ""])
def test_every_call_names_the_client_by_its_client_id(
    broker: tuple[str, FakeData], client_id: str
) -> None:
    """Kafka's client.id in each call's metadata, streams and unary calls alike (the broker's
    client quotas go by it); one that is not ASCII travels as UTF-8 bytes; "" sends none."""
    address, data = broker
    pool = ChannelPool(client_id=client_id)
    try:
        answered(pool.stream(address, "ProduceStream").send(request("t"), timeout=10))
        pb_grpc.DataStub(pool.get(address)).Produce(request("t").header, timeout=10)
    finally:
        pool.close()
    assert data.client_ids == [client_id, client_id]
