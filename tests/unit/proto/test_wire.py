"""Kafka's big-endian protocol primitives, read back."""

from __future__ import annotations

import struct

import pytest

from minikafka.proto.errors import CorruptRecordError, InvalidRequestError
from minikafka.proto.wire import WireReader


def test_reads_each_primitive_in_order() -> None:
    data = (
        struct.pack(">hiq", -2, 70_000, -(2**40))
        + struct.pack(">h", 3)
        + b"abc"
        + struct.pack(">h", -1)
        + struct.pack(">i", 2)
        + b"\x00\xff"
        + struct.pack(">i", -1)
    )
    reader = WireReader(data, InvalidRequestError, "test data")
    assert (reader.int16(), reader.int32(), reader.int64()) == (-2, 70_000, -(2**40))
    assert reader.string() == "abc"
    assert reader.nullable_string() is None
    assert reader.nullable_bytes() == b"\x00\xff"
    assert reader.nullable_bytes() is None
    assert reader.remaining() == 0


def test_truncation_and_required_nulls_raise_the_callers_error() -> None:
    with pytest.raises(CorruptRecordError, match="a record is truncated"):
        WireReader(b"\x00", CorruptRecordError, "a record").int16()
    with pytest.raises(InvalidRequestError, match="truncated"):
        WireReader(struct.pack(">h", 5) + b"ab", InvalidRequestError, "x").string()
    with pytest.raises(InvalidRequestError, match="a null string in x"):
        WireReader(struct.pack(">h", -1), InvalidRequestError, "x").string()
