"""__consumer_offsets record formats: Kafka's byte layouts, round trips, older versions."""

from __future__ import annotations

import struct

import pytest

from minikafka.proto.common import OffsetAndMetadata
from minikafka.proto.consumer_offsets import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberRecord,
    OffsetKey,
    decode_group_metadata_value,
    decode_key,
    decode_offset_value,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_key,
    encode_offset_value,
)
from minikafka.proto.errors import CorruptRecordError


def test_offset_commit_key_v1_layout() -> None:
    data = encode_offset_key("g", "orders", 7)
    assert data == b"\x00\x01" + b"\x00\x01g" + b"\x00\x06orders" + b"\x00\x00\x00\x07"
    assert decode_key(data) == OffsetKey("g", "orders", 7)


def test_offset_commit_value_v3_layout_and_round_trip() -> None:
    value = OffsetAndMetadata(offset=42, leader_epoch=3, metadata="m", commit_timestamp=1000)
    data = encode_offset_value(value)
    assert data == struct.pack(">hqi", 3, 42, 3) + b"\x00\x01m" + struct.pack(">q", 1000)
    assert decode_offset_value(data) == value


def test_offset_commit_value_v1_is_read() -> None:
    # v1: offset, metadata, commit_timestamp, expire_timestamp (no leader epoch)
    data = struct.pack(">hq", 1, 9) + b"\x00\x00" + struct.pack(">qq", 5, 6)
    assert decode_offset_value(data) == OffsetAndMetadata(
        9, "", leader_epoch=-1, commit_timestamp=5
    )


def test_group_metadata_key_v2_layout() -> None:
    data = encode_group_metadata_key("billing")
    assert data == b"\x00\x02\x00\x07billing"
    assert decode_key(data) == GroupMetadataKey("billing")


def test_group_metadata_value_v3_round_trip() -> None:
    value = GroupMetadataValue(
        protocol_type="consumer",
        generation=4,
        protocol="range",
        leader="m-1",
        current_state_timestamp=123,
        members=(
            MemberRecord("m-1", None, "c1", "/127.0.0.1", 300_000, 10_000, b"sub", b"asg"),
            MemberRecord("m-2", "static", "c2", "/127.0.0.1", 1, 2, b"", b""),
        ),
    )
    data = encode_group_metadata_value(value)
    assert data[:2] == b"\x00\x03"
    assert decode_group_metadata_value(data) == value


def test_empty_group_value_has_null_protocol_and_leader() -> None:
    value = GroupMetadataValue("consumer", 2, None, None, -1, ())
    data = encode_group_metadata_value(value)
    assert data == (
        b"\x00\x03"
        + b"\x00\x08consumer"
        + struct.pack(">i", 2)
        + b"\xff\xff\xff\xff"
        + struct.pack(">qi", -1, 0)
    )
    assert decode_group_metadata_value(data) == value


def test_unknown_key_version_and_truncation_are_corrupt() -> None:
    with pytest.raises(CorruptRecordError):
        decode_key(b"\x00\x09\x00\x01g")
    with pytest.raises(CorruptRecordError):
        decode_key(encode_offset_key("g", "t", 1)[:-2])
