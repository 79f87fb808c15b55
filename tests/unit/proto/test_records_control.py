"""Transaction markers: Kafka's EndTransactionMarker in a control batch, byte for byte, and
what an independent decoder (kafka-python's record module) reads of it."""

from __future__ import annotations

import struct

import pytest
from kafka.record.default_records import DefaultRecordBatch

from minikafka.proto.errors import InvalidRecordError
from minikafka.proto.records import (
    ControlType,
    EndTxnMarker,
    decode_batch,
    decode_end_txn_marker,
    encode_batch,
    encode_end_txn_marker,
    validate_batch,
)


@pytest.mark.parametrize("control_type", list(ControlType), ids=lambda t: t.name)
def test_a_marker_round_trips(control_type: ControlType) -> None:
    data = encode_end_txn_marker(4001, 3, 17, control_type, 1_700_000_000_123)
    header = validate_batch(data)  # a whole, valid batch (CRC included)
    assert decode_end_txn_marker(data) == EndTxnMarker(control_type, 17)
    assert (header.is_control, header.is_transactional) == (True, True)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (4001, 3, -1)
    assert (header.base_offset, header.record_count, header.last_offset_delta) == (0, 1, 0)
    assert header.compression == 0 and header.max_timestamp == 1_700_000_000_123
    assert header.size == 78  # as Kafka's marker batches on disk


def test_the_key_and_value_are_kafkas_end_transaction_marker() -> None:
    data = encode_end_txn_marker(1, 0, 70000, ControlType.ABORT, 5)
    _, [record] = decode_batch(data)
    assert record.key == struct.pack(">hh", 0, 0)  # version 0, type ABORT
    assert record.value == struct.pack(">hi", 0, 70000)  # version 0, coordinator epoch
    assert record.headers == () and record.offset == 0 and record.timestamp == 5


def test_kafka_python_reads_our_marker() -> None:
    data = encode_end_txn_marker(77, 2, 9, ControlType.COMMIT, 1_000)
    batch = DefaultRecordBatch(data)
    assert batch.validate_crc()
    assert batch.is_control_batch and batch.is_transactional
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (77, 2, -1)
    [record] = list(batch)
    assert (record.version, record.type, record.commit) == (0, 1, True)
    assert struct.unpack(">hi", record.value) == (0, 9)


def test_a_data_batch_is_not_a_marker() -> None:
    with pytest.raises(InvalidRecordError):
        decode_end_txn_marker(encode_batch([(1, b"k", b"v", ())]))
