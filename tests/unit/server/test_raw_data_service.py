"""The RawData methods (proto/raw_records.py) on a real grpc.aio server, beside Data: produce
and fetch with the records framed after a header, answered as Data answers them; a message that
does not follow the framing is INVALID_ARGUMENT and nothing of it is stored."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import raw_records
from minikafka.proto.common import TopicPartition
from minikafka.proto.raw_records import RawProduceRequest
from tests.unit.replication.harness import records, values_of
from tests.unit.server.test_services import Stubs, broker, run

TOPIC = "t"


async def lead(stubs: Stubs, partitions: int) -> None:
    stubs.znodes.controller_id = 1
    request = pb.LeaderAndIsrRequest(controller_id=1, controller_epoch=1, broker_epoch=10)
    for partition in range(partitions):
        request.partition_states.add(
            topic_name=TOPIC,
            partition_index=partition,
            controller_epoch=1,
            leader=1,
            leader_epoch=1,
            isr=[1],
            partition_epoch=0,
            replicas=[1],
        )
    response = await stubs.control.LeaderAndIsr(request)
    assert [e.error_code for e in response.partition_errors] == [0] * partitions


def produce(values: dict[int, list[bytes]]) -> bytes:
    """A framed produce of one batch per partition."""
    header = pb.ProduceRequest(acks=-1, timeout_ms=1000)
    topic = header.topic_data.add(name=TOPIC)
    for partition in values:
        topic.partition_data.add(index=partition)
    batches = [records(*v) for v in values.values()]
    return raw_records.encode_produce_request(RawProduceRequest(header, batches))


def fetch(*partitions: int) -> pb.FetchRequest:
    request = pb.FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20)
    topic = request.topics.add(topic=TOPIC)
    for partition in partitions:
        topic.partitions.add(
            partition=partition, fetch_offset=0, current_leader_epoch=1, partition_max_bytes=1 << 20
        )
    return request


def methods(stubs: Stubs) -> dict[str, Any]:
    channel: grpc.aio.Channel = stubs.extra["channel"]
    produce_answer = pb.ProduceResponse.FromString
    fetch_request = pb.FetchRequest.SerializeToString
    return {
        "Produce": channel.unary_unary(
            raw_records.PRODUCE, request_serializer=None, response_deserializer=produce_answer
        ),
        "ProduceStream": channel.stream_stream(
            raw_records.PRODUCE_STREAM,
            request_serializer=None,
            response_deserializer=produce_answer,
        ),
        "Fetch": channel.unary_unary(
            raw_records.FETCH,
            request_serializer=fetch_request,
            response_deserializer=raw_records.decode_fetch_response,
        ),
        "FetchStream": channel.stream_stream(
            raw_records.FETCH_STREAM,
            request_serializer=fetch_request,
            response_deserializer=raw_records.decode_fetch_response,
        ),
    }


def log_end(stubs: Stubs, partition: int) -> int:
    replica = stubs.rm.get_partition(TopicPartition(TOPIC, partition))
    assert replica is not None
    return replica.log_end_offset


def offsets(answer: pb.ProduceResponse) -> list[tuple[int, int, int]]:
    return [
        (p.index, p.error_code, p.base_offset)
        for t in answer.responses
        for p in t.partition_responses
    ]


def test_raw_produce_and_fetch_are_served_as_data_serves_them(tmp_path: Any) -> None:
    async def scenario() -> None:
        async with broker(tmp_path) as stubs:
            await lead(stubs, 2)
            raw = methods(stubs)
            answer = await raw["Produce"](produce({0: [b"a", b"b"], 1: [b"x"]}))
            assert offsets(answer) == [(0, 0, 0), (1, 0, 0)]

            stream = raw["ProduceStream"]()
            await stream.write(produce({1: [b"y"]}))
            await stream.write(produce({0: [b"c"], 1: [b"z"]}))
            await stream.done_writing()
            answers = [offsets(a) async for a in stream]
            assert answers == [[(1, 0, 1)], [(0, 0, 2), (1, 0, 2)]]

            fetched = await raw["Fetch"](fetch(0, 1))
            parts = [p for t in fetched.header.responses for p in t.partitions]
            assert [(p.partition_index, p.high_watermark) for p in parts] == [(0, 3), (1, 3)]
            assert not any(p.records for p in parts)  # the records come after the header
            assert [values_of(r) for r in fetched.records] == [
                [b"a", b"b", b"c"],
                [b"x", b"y", b"z"],
            ]

            # the same as Data's Fetch answers
            data = await stubs.data.Fetch(fetch(0, 1))
            assert [bytes(r) for r in fetched.records] == [
                p.records for t in data.responses for p in t.partitions
            ]

            fetches = raw["FetchStream"]()
            await fetches.write(fetch(1))
            answer = await fetches.read()
            assert values_of(answer.records[0]) == [b"x", b"y", b"z"]
            await fetches.done_writing()

    run(scenario)


@pytest.mark.parametrize(
    "mangle",
    [
        pytest.param(lambda m: m[:3], id="shorter-than-its-header-length"),
        pytest.param(lambda m: b"\xff\xff\x00\x00" + m[4:], id="header-length-past-the-end"),
        pytest.param(lambda m: m[:4] + b"\xff" * (len(m) - 4), id="header-does-not-parse"),
        pytest.param(lambda m: m[:-1], id="truncated-records"),
        pytest.param(lambda m: m + b"\x00", id="bytes-after-the-records"),
    ],
)
def test_a_message_off_the_framing_is_invalid_argument_and_stores_nothing(
    tmp_path: Any, mangle: Any
) -> None:
    async def scenario() -> None:
        async with broker(tmp_path) as stubs:
            await lead(stubs, 1)
            raw = methods(stubs)
            bad = mangle(produce({0: [b"a"]}))
            with pytest.raises(grpc.aio.AioRpcError) as unary:
                await raw["Produce"](bad)
            assert unary.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "request body" in (unary.value.details() or "")

            # on a stream: the good message before it is stored and answered, then the stream
            # ends INVALID_ARGUMENT
            stream = raw["ProduceStream"]()
            await stream.write(produce({0: [b"good"]}))
            assert offsets(await stream.read()) == [(0, 0, 0)]
            await stream.write(bad)
            with pytest.raises(grpc.aio.AioRpcError) as streamed:
                await stream.read()
            assert streamed.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert log_end(stubs, 0) == 1

    run(scenario)


def test_a_raw_fetch_request_that_does_not_parse_is_invalid_argument(tmp_path: Any) -> None:
    async def scenario() -> None:
        async with broker(tmp_path) as stubs:
            channel: grpc.aio.Channel = stubs.extra["channel"]
            call: Any = channel.unary_unary(raw_records.FETCH)
            with pytest.raises(grpc.aio.AioRpcError) as error:
                await call(b"\xff\xff\xff")
            assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT

    run(scenario)
