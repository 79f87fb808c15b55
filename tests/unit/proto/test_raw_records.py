"""RawData's framing (proto/raw_records.py): what is written is read back, the records in place
(slices of the message, not copies), and every message off the layout is a FrameError."""

from __future__ import annotations

import struct

import pytest

from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import raw_records
from minikafka.proto.raw_records import FrameError, RawFetchResponse, RawProduceRequest


def produce_request() -> RawProduceRequest:
    header = pb.ProduceRequest(acks=-1, timeout_ms=30_000, transactional_id="txn")
    a = header.topic_data.add(name="a")
    a.partition_data.add(index=0)
    a.partition_data.add(index=3)
    header.topic_data.add(name="b").partition_data.add(index=1)
    return RawProduceRequest(header, [b"batch-a0", b"", memoryview(b"--batch-b1--")[2:-2]])


def fetch_response() -> RawFetchResponse:
    header = pb.FetchResponse(throttle_time_ms=7, session_id=3)
    topic = header.responses.add(topic="a")
    topic.partitions.add(partition_index=0, high_watermark=10)
    topic.partitions.add(partition_index=1, error_code=6, error_message="not leader")
    return RawFetchResponse(header, [b"x" * 1000, b""])


def test_a_produce_request_round_trips() -> None:
    sent = produce_request()
    message = raw_records.encode_produce_request(sent)
    got = raw_records.decode_produce_request(message)
    assert got.header == sent.header
    assert [bytes(r) for r in got.records] == [b"batch-a0", b"", b"batch-b1"]


def test_a_fetch_response_round_trips_with_its_records_left_in_the_message() -> None:
    message = raw_records.encode_fetch_response(fetch_response())
    got = raw_records.decode_fetch_response(message)
    assert got.header == fetch_response().header
    assert [bytes(r) for r in got.records] == [b"x" * 1000, b""]
    assert all(isinstance(r, memoryview) and r.obj is message for r in got.records)


def test_the_layout_is_the_documented_one() -> None:
    header = pb.FetchResponse(session_id=1)
    header.responses.add(topic="t").partitions.add(partition_index=0)
    head = header.SerializeToString()
    message = raw_records.encode_fetch_response(RawFetchResponse(header, [b"rec"]))
    assert message == struct.pack(">I", len(head)) + head + struct.pack(">I", 3) + b"rec"


def test_records_for_a_partition_the_header_does_not_name_are_refused_when_writing() -> None:
    header = pb.FetchResponse()
    header.responses.add(topic="t").partitions.add(partition_index=0)
    with pytest.raises(ValueError, match="2 records sections for 1 partitions"):
        raw_records.encode_fetch_response(RawFetchResponse(header, [b"a", b"b"]))


def test_every_cut_of_a_message_is_a_frame_error() -> None:
    message = raw_records.encode_produce_request(produce_request())
    for end in range(len(message)):
        with pytest.raises(FrameError):
            raw_records.decode_produce_request(message[:end])


@pytest.mark.parametrize(
    ("message", "match"),
    [
        (b"", "shorter than its header length"),
        (b"\x00\x00\x01\x00abc", "header length 256 runs past the 7-byte message"),
        (b"\x00\x00\x00\x03\xff\xff\xff", "header: "),
        (b"\x00\x00\x00\x00junk", "4 bytes after the records of the last of 0 partitions"),
    ],
)
def test_a_bad_message_says_what_is_wrong(message: bytes, match: str) -> None:
    with pytest.raises(FrameError, match=match):
        raw_records.decode_fetch_response(message)


def test_a_records_length_past_the_end_is_a_frame_error() -> None:
    header = pb.ProduceRequest()
    header.topic_data.add(name="t").partition_data.add(index=0)
    head = header.SerializeToString()
    message = struct.pack(">I", len(head)) + head + struct.pack(">I", 100) + b"short"
    with pytest.raises(FrameError, match="records length 100 of partition 1 of 1 runs past"):
        raw_records.decode_produce_request(message)
