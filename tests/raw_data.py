"""Fake brokers' side of the RawData methods (proto/raw_records.py), for unit tests whose fake
servicers speak the protobuf messages: the framed messages to and from them, and a generic
handler that serves a servicer's ``ProduceStream``/``FetchStream`` as RawData's."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import grpc

from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import raw_records
from minikafka.proto.raw_records import RawFetchResponse, RawProduceRequest


def produce_message(raw: RawProduceRequest) -> pb.ProduceRequest:
    """The protobuf ProduceRequest a RawData one stands for (records in their fields)."""
    message = pb.ProduceRequest()
    message.CopyFrom(raw.header)
    records = iter(raw.records)
    for topic in message.topic_data:
        for part in topic.partition_data:
            part.records = bytes(next(records))
    return message


def raw_fetch_response(message: pb.FetchResponse) -> RawFetchResponse:
    """A protobuf FetchResponse as RawData carries it (records after the header)."""
    header = pb.FetchResponse()
    header.CopyFrom(message)
    records = []
    for topic in header.responses:
        for part in topic.partitions:
            records.append(part.records)
            part.records = b""
    return RawFetchResponse(header, records)


_Stream = Callable[[Iterator[Any], Any], Iterator[Any]]


def raw_data_handler(
    produce_stream: _Stream | None = None, fetch_stream: _Stream | None = None
) -> grpc.GenericRpcHandler:
    """RawData's streams for a synchronous fake server, served by protobuf-style servicer
    methods (``servicer.ProduceStream``: ProduceRequests in, ProduceResponses out)."""
    handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {}
    if produce_stream is not None:
        stream = produce_stream

        def produce(requests: Iterator[bytes], context: Any) -> Iterator[pb.ProduceResponse]:
            messages = (produce_message(raw_records.decode_produce_request(r)) for r in requests)
            return stream(messages, context)

        handlers["ProduceStream"] = grpc.stream_stream_rpc_method_handler(
            produce, response_serializer=pb.ProduceResponse.SerializeToString
        )
    if fetch_stream is not None:
        fetches = fetch_stream

        def fetch(requests: Iterator[pb.FetchRequest], context: Any) -> Iterator[bytes]:
            for answer in fetches(requests, context):
                yield raw_records.encode_fetch_response(raw_fetch_response(answer))

        handlers["FetchStream"] = grpc.stream_stream_rpc_method_handler(
            fetch, request_deserializer=pb.FetchRequest.FromString
        )
    return grpc.method_handlers_generic_handler(raw_records.SERVICE, handlers)
