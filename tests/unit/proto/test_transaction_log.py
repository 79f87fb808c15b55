"""__transaction_state record formats: Kafka's TransactionLog key and value, byte for byte."""

from __future__ import annotations

import struct

import pytest

from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import CorruptRecordError
from minikafka.proto.transaction_log import (
    TransactionLogValue,
    TransactionState,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)


def test_key_v0_layout() -> None:
    data = encode_key("txn-1")
    assert data == b"\x00\x00" + b"\x00\x05txn-1"
    assert decode_key(data) == "txn-1"


def test_a_key_of_an_unknown_version_is_skipped_not_refused() -> None:
    # Kafka's loader warns and ignores it (a leftover of an aborted upgrade).
    assert decode_key(struct.pack(">h", 0x7FFF)) is None


def test_ongoing_value_v0_golden_bytes() -> None:
    value = TransactionLogValue(
        producer_id=1000,
        producer_epoch=5,
        transaction_timeout_ms=60_000,
        state=TransactionState.ONGOING,
        partitions=(TopicPartition("b", 1), TopicPartition("a", 2), TopicPartition("b", 0)),
        last_update_timestamp_ms=1_700_000_000_123,
        start_timestamp_ms=1_700_000_000_000,
    )
    expected = (
        b"\x00\x00"  # version 0
        + b"\x00\x00\x00\x00\x00\x00\x03\xe8"  # producer id 1000
        + b"\x00\x05"  # producer epoch
        + b"\x00\x00\xea\x60"  # timeout 60000
        + b"\x01"  # Ongoing
        + b"\x00\x00\x00\x02"  # two topics
        + b"\x00\x01a" + b"\x00\x00\x00\x01" + b"\x00\x00\x00\x02"
        + b"\x00\x01b" + b"\x00\x00\x00\x02" + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x01"
        + struct.pack(">q", 1_700_000_000_123)
        + struct.pack(">q", 1_700_000_000_000)
    )  # fmt: skip
    assert encode_value(value) == expected
    decoded = decode_value(expected)
    assert set(decoded.partitions) == set(value.partitions)
    assert decoded == TransactionLogValue(
        1000,
        5,
        60_000,
        TransactionState.ONGOING,
        (TopicPartition("a", 2), TopicPartition("b", 0), TopicPartition("b", 1)),
        1_700_000_000_123,
        1_700_000_000_000,
    )


def test_empty_value_has_a_null_partition_array() -> None:
    value = TransactionLogValue(7, 0, 1000, TransactionState.EMPTY, (), 10, -1)
    data = encode_value(value)
    assert data[2 + 8 + 2 + 4 + 1 :][:4] == b"\xff\xff\xff\xff"
    assert decode_value(data) == value
    with pytest.raises(ValueError):
        encode_value(
            TransactionLogValue(7, 0, 1, TransactionState.EMPTY, (TopicPartition("t", 0),), 1, -1)
        )


@pytest.mark.parametrize("state", list(TransactionState))
def test_every_state_round_trips(state: TransactionState) -> None:
    partitions = () if state is TransactionState.EMPTY else (TopicPartition("t", 3),)
    value = TransactionLogValue(2**40, 32_766, 900_000, state, partitions, 5, 4)
    assert decode_value(encode_value(value)) == value


def test_status_ids_and_names_are_kafkas() -> None:
    assert [(s.value, s.kafka_name) for s in TransactionState] == [
        (0, "Empty"),
        (1, "Ongoing"),
        (2, "PrepareCommit"),
        (3, "PrepareAbort"),
        (4, "CompleteCommit"),
        (5, "CompleteAbort"),
        (6, "Dead"),
        (7, "PrepareEpochFence"),
    ]
    assert TransactionState.from_kafka_name("PrepareAbort") is TransactionState.PREPARE_ABORT
    assert TransactionState.from_kafka_name("Aborting") is None


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def test_flexible_value_v1_with_unknown_tagged_fields_is_read() -> None:
    # Kafka's testDeserializeFutureTransactionLogValue: v1 with tags 0 and 1 at both levels.
    tags = _uvarint(2) + _uvarint(0) + _uvarint(4) + b"\x04foo" + _uvarint(1) + _uvarint(4)
    tags += struct.pack(">i", 4000)
    data = (
        struct.pack(">hqhib", 1, 1000, 100, 1000, 4)
        + _uvarint(2)  # one partitions entry
        + _uvarint(6) + b"topic"
        + _uvarint(2) + struct.pack(">i", 1)
        + tags
        + struct.pack(">qq", 2000, 3000)
        + tags
    )  # fmt: skip
    assert decode_value(data) == TransactionLogValue(
        1000, 100, 1000, TransactionState.COMPLETE_COMMIT, (TopicPartition("topic", 1),), 2000, 3000
    )


def test_flexible_value_with_null_partitions() -> None:
    data = struct.pack(">hqhib", 1, 5, 0, 100, 0) + b"\x00" + struct.pack(">qq", 1, -1) + b"\x00"
    assert decode_value(data) == TransactionLogValue(5, 0, 100, TransactionState.EMPTY, (), 1, -1)


@pytest.mark.parametrize(
    "data",
    [
        struct.pack(">h", 2) + bytes(40),  # unknown value version
        struct.pack(">hqhib", 0, 1, 0, 1, 9) + struct.pack(">iqq", -1, 0, 0),  # unknown status
        struct.pack(">hqhib", 0, 1, 0, 1, 1) + struct.pack(">i", 1),  # truncated
    ],
)
def test_bad_values_are_corrupt(data: bytes) -> None:
    with pytest.raises(CorruptRecordError):
        decode_value(data)
