"""Records over gRPC as raw bytes: the ``RawData`` methods and their one framing.

The ``Data`` service carries records in protobuf ``bytes`` fields: the sender copies each
partition's batches into the message and the message into its serialization, and the receiver
copies them out of the parsed message again. The ``RawData`` methods carry the same protobuf
message as a small header with every ``records`` field left empty, and the records after it as
they are; grpc sends and receives such a message as bytes (a generic handler with identity
serializers), so the records are joined once by the sender and read in place (memoryview
slices) by the receiver. Same server, port, interceptors, SASL/TLS identity, ACLs and quotas as
``Data``: only the framing differs.

Framing (big-endian), one per message that carries records::

    message  = header_length:uint32  header  section*
    header   = the protobuf message (ProduceRequest, FetchResponse), its ``records`` fields empty
    section  = records_length:uint32  records    # one per partition, in the header's order

A produce request's partitions are ``topic_data[i].partition_data[j]``, a fetch answer's
``responses[i].partitions[j]``, in that order. A ``records`` field set in the header is not
read. A message that is too short, whose lengths run past its end, that has bytes after its
last section, or whose header does not parse raises ``FrameError`` (the broker answers
INVALID_ARGUMENT and stores nothing).

The methods (paths under ``SERVICE``); what has no records is plain protobuf:

    ===============  =================================  ===========================
    method           request                            answer
    ===============  =================================  ===========================
    Produce          framed ProduceRequest              ProduceResponse
    ProduceStream    stream of framed ProduceRequest    stream of ProduceResponse
    Fetch            FetchRequest                       framed FetchResponse
    FetchStream      stream of FetchRequest             stream of framed FetchResponse
    ===============  =================================  ===========================

The streams are answered as ``Data``'s (in request order). The minikafka Producer and Consumer
(and so the Spark source) use these; tools, tests and followers keep ``Data``. A broker without
``RawData`` answers UNIMPLEMENTED: every broker of a cluster runs this version, so the clients
do not fall back.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import NamedTuple, TypeVar

from google.protobuf.message import DecodeError, Message

from minikafka.proto import minikafka_pb2 as pb

__all__ = [
    "FETCH",
    "FETCH_STREAM",
    "PRODUCE",
    "PRODUCE_STREAM",
    "SERVICE",
    "FrameError",
    "RawFetchResponse",
    "RawProduceRequest",
    "decode_fetch_response",
    "decode_produce_request",
    "encode_fetch_response",
    "encode_produce_request",
]

SERVICE = "minikafka.v1.RawData"
PRODUCE = f"/{SERVICE}/Produce"
PRODUCE_STREAM = f"/{SERVICE}/ProduceStream"
FETCH = f"/{SERVICE}/Fetch"
FETCH_STREAM = f"/{SERVICE}/FetchStream"

Buffer = bytes | memoryview
_LENGTH = struct.Struct(">I")
_M = TypeVar("_M", bound=Message)


class FrameError(ValueError):
    """A framed message that does not follow the layout in the module docstring."""


class RawProduceRequest(NamedTuple):
    """A produce request: ``header`` without records, ``records`` one per partition in the
    header's order."""

    header: pb.ProduceRequest
    records: Sequence[Buffer]


class RawFetchResponse(NamedTuple):
    """A fetch answer: ``header`` without records, ``records`` one per partition in the
    header's order (memoryview slices of the message when decoded)."""

    header: pb.FetchResponse
    records: Sequence[Buffer]


def _produce_partitions(header: pb.ProduceRequest) -> int:
    return sum(len(topic.partition_data) for topic in header.topic_data)


def _fetch_partitions(header: pb.FetchResponse) -> int:
    return sum(len(topic.partitions) for topic in header.responses)


def encode_produce_request(request: RawProduceRequest) -> bytes:
    return _encode(request.header, request.records, _produce_partitions(request.header))


def decode_produce_request(message: Buffer) -> RawProduceRequest:
    return RawProduceRequest(*_decode(message, pb.ProduceRequest, _produce_partitions))


def encode_fetch_response(response: RawFetchResponse) -> bytes:
    return _encode(response.header, response.records, _fetch_partitions(response.header))


def decode_fetch_response(message: Buffer) -> RawFetchResponse:
    return RawFetchResponse(*_decode(message, pb.FetchResponse, _fetch_partitions))


def _encode(header: Message, records: Sequence[Buffer], partitions: int) -> bytes:
    """The records are copied once, here, into the message grpc sends."""
    if len(records) != partitions:
        raise ValueError(f"{len(records)} records sections for {partitions} partitions")
    head = header.SerializeToString()
    parts: list[Buffer] = [_LENGTH.pack(len(head)), head]
    pack = _LENGTH.pack
    for section in records:
        parts.append(pack(len(section)))
        parts.append(section)
    return b"".join(parts)


def _decode(
    message: Buffer, header_type: type[_M], partitions: Callable[[_M], int]
) -> tuple[_M, list[memoryview]]:
    """The header, parsed, and each partition's records as a slice of ``message`` (no copy)."""
    view = memoryview(message)
    size = len(view)
    if size < _LENGTH.size:
        raise FrameError(f"a {size}-byte message is shorter than its header length")
    (header_size,) = _LENGTH.unpack_from(view, 0)
    pos = _LENGTH.size + header_size
    if pos > size:
        raise FrameError(f"header length {header_size} runs past the {size}-byte message")
    try:
        # a copy of the header only (protobuf's stubs take bytes); the records stay in place
        header = header_type.FromString(bytes(view[_LENGTH.size : pos]))
    except DecodeError as exc:
        raise FrameError(f"header: {exc}") from None
    count = partitions(header)
    records: list[memoryview] = []
    for i in range(count):
        if pos + _LENGTH.size > size:
            raise FrameError(f"the message ends before the records of partition {i + 1} of {count}")
        (length,) = _LENGTH.unpack_from(view, pos)
        pos += _LENGTH.size
        if pos + length > size:
            raise FrameError(
                f"records length {length} of partition {i + 1} of {count} runs past the "
                f"{size}-byte message"
            )
        records.append(view[pos : pos + length])
        pos += length
    if pos != size:
        raise FrameError(f"{size - pos} bytes after the records of the last of {count} partitions")
    return header, records
