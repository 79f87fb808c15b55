"""Every gRPC channel and server comes from proto/transport.py, with limits from the config."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import grpc
import pytest

from minikafka.broker.config import BrokerConfig
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto import transport

REPO_ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("broker", "controller", "client", "proto", "spark_jobs", "minikafka", "bench")
_MADE_ELSEWHERE = re.compile(r"grpc\.(aio\.)?(insecure_channel|secure_channel|server)\(")


def test_limits_are_the_payload_plus_the_envelope() -> None:
    options = dict(transport.message_options(10 << 20))
    limit = (10 << 20) + transport.ENVELOPE_BYTES
    assert options == {
        "grpc.max_send_message_length": limit,
        "grpc.max_receive_message_length": limit,
    }
    assert dict(transport.message_options(2**31))["grpc.max_receive_message_length"] == 2**31 - 1
    with pytest.raises(ValueError, match="positive"):
        transport.message_options(0)


def test_no_module_makes_a_channel_or_server_itself() -> None:
    offenders = [
        f"{path.relative_to(REPO_ROOT)}:{number}"
        for package in PACKAGES
        for path in sorted((REPO_ROOT / package).rglob("*.py"))
        if path.name != "transport.py" or path.parent.name != "proto"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if _MADE_ELSEWHERE.search(line)
    ]
    assert offenders == []


def test_the_broker_limit_is_the_largest_message_its_config_allows() -> None:
    def limit(*overrides: str) -> int:
        config = BrokerConfig.load(
            overrides=["broker.id=1", "zookeeper.connect=zk:2181", *overrides], environ={}
        )
        return config.grpc_max_message_bytes

    assert limit() == 104_857_600  # socket.request.max.bytes, the largest default
    assert limit("fetch.max.bytes=209715200") == 209_715_200
    assert limit("replica.fetch.response.max.bytes=314572800") == 314_572_800
    assert limit("message.max.bytes=419430400") == 419_430_400
    assert limit("socket.request.max.bytes=1048576") == 57_671_680  # fetch.max.bytes then


class _EchoData(pb_grpc.DataServicer):
    """Answers Produce with one partition result naming the request's acks."""

    async def Produce(self, request: pb.ProduceRequest, context: object) -> pb.ProduceResponse:
        return pb.ProduceResponse(
            responses=[
                pb.ProduceResponse.TopicProduceResponse(
                    name="acks",
                    partition_responses=[
                        pb.ProduceResponse.PartitionProduceResponse(base_offset=request.acks)
                    ],
                )
            ]
        )


def test_an_undecodable_unary_body_is_invalid_argument_not_unknown() -> None:
    """Issue 16: random bytes as an RPC body answered UNKNOWN ("Unexpected <class
    DecodeError>"); the servers made here answer INVALID_ARGUMENT with the parser's message."""

    async def scenario() -> None:
        server = transport.aio_server(1 << 20)
        echo = _EchoData()  # type: ignore[abstract]  # the rest: UNIMPLEMENTED
        pb_grpc.add_DataServicer_to_server(echo, server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        try:
            async with transport.aio_channel(f"127.0.0.1:{port}", 1 << 20) as channel:
                raw: grpc.aio.UnaryUnaryMultiCallable[bytes, pb.ProduceResponse]
                raw = channel.unary_unary(
                    "/minikafka.v1.Data/Produce",
                    request_serializer=None,
                    response_deserializer=pb.ProduceResponse.FromString,
                )
                with pytest.raises(grpc.aio.AioRpcError) as info:
                    await raw(b"\xff\xfe random bytes \x00\x01", timeout=10)
                assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
                assert "minikafka.v1.ProduceRequest" in (info.value.details() or "")
                # a request that parses is served as before
                good = await raw(pb.ProduceRequest(acks=-1).SerializeToString(), timeout=10)
                assert good.responses[0].partition_responses[0].base_offset == -1
        finally:
            await server.stop(0)

    asyncio.run(asyncio.wait_for(scenario(), 20))
