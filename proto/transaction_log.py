"""The records of ``__transaction_state``: Kafka's TransactionLog key and value schemas.

One record per change of a transactional id's state, keyed by the id; the topic is compacted,
so the last record per key is the id's state, and a null value (a tombstone) means the id
expired. All integers are big-endian; ``string`` is an int16 length then UTF-8 bytes; an
array is an int32 count then items (-1 = null)::

    TransactionLogKey v0
      version           int16  = 0
      transactional_id  string

    TransactionLogValue v0 (what Kafka 3.9 writes: v1 only once transaction.version >= 1,
    a KRaft feature)
      version                              int16  = 0
      producer_id                          int64
      producer_epoch                       int16
      transaction_timeout_ms               int32
      transaction_status                   int8   (TransactionState below)
      transaction_partitions               nullable array of   (null when Empty)
        topic                              string
        partition_ids                      array of int32
      transaction_last_update_timestamp_ms int64
      transaction_start_timestamp_ms       int64  (-1 = no transaction started)

    TransactionLogValue v1 is v0 made flexible (KIP-482): the array counts and the string
    length become unsigned varints holding n + 1 (0 = null), and each partitions entry and the
    value end with a tagged-field section (varint count, then per field varint tag, varint
    size, bytes). It is read (unknown tags skipped), never written.

The status ids are Kafka's: Empty 0, Ongoing 1, PrepareCommit 2, PrepareAbort 3,
CompleteCommit 4, CompleteAbort 5, Dead 6, PrepareEpochFence 7. A key of a version this broker
does not know decodes to None: loading skips it, as Kafka does (a leftover of an aborted
upgrade); a value of an unknown version or status is a CorruptRecordError.

Example::

    key = encode_key("payments-1")
    value = encode_value(TransactionLogValue(4000, 0, 60_000, TransactionState.EMPTY, (), t, -1))
    decode_key(key) == "payments-1"; decode_value(value).state is TransactionState.EMPTY

Pure functions and frozen values; safe from any thread.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum

from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import CorruptRecordError
from minikafka.proto.wire import WireReader

__all__ = [
    "TRANSACTION_LOG_KEY_VERSION",
    "TRANSACTION_LOG_VALUE_VERSION",
    "TransactionLogValue",
    "TransactionState",
    "decode_key",
    "decode_value",
    "encode_key",
    "encode_value",
]

TRANSACTION_LOG_KEY_VERSION = 0
TRANSACTION_LOG_VALUE_VERSION = 0
_FLEXIBLE_VALUE_VERSION = 1


class TransactionState(IntEnum):
    """A transaction's state; the value is the status id of the log, ``kafka_name`` the name
    DescribeTransactions and ListTransactions use."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        return "".join(part.title() for part in self.name.split("_"))

    @classmethod
    def from_kafka_name(cls, name: str) -> TransactionState | None:
        """The state Kafka calls ``name`` ("PrepareCommit"), None for a name it does not use."""
        for state in cls:
            if state.kafka_name == name:
                return state
        return None


@dataclass(frozen=True)
class TransactionLogValue:
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    state: TransactionState
    partitions: tuple[TopicPartition, ...]
    last_update_timestamp_ms: int
    start_timestamp_ms: int


# --- writing -----------------------------------------------------------------------------------


def _string(value: str) -> bytes:
    data = value.encode()
    return struct.pack(">h", len(data)) + data


def encode_key(transactional_id: str) -> bytes:
    return struct.pack(">h", TRANSACTION_LOG_KEY_VERSION) + _string(transactional_id)


def _by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = {}
    for topic, partition in sorted(set(partitions)):
        grouped.setdefault(topic, []).append(partition)
    return grouped


def encode_value(value: TransactionLogValue) -> bytes:
    """Value v0. An Empty transaction has no partitions (written as a null array)."""
    if value.state is TransactionState.EMPTY and value.partitions:
        raise ValueError(f"an Empty transaction has no partitions: {value}")
    parts = [
        struct.pack(
            ">hqhib",
            TRANSACTION_LOG_VALUE_VERSION,
            value.producer_id,
            value.producer_epoch,
            value.transaction_timeout_ms,
            int(value.state),
        )
    ]
    if value.state is TransactionState.EMPTY:
        parts.append(struct.pack(">i", -1))
    else:
        grouped = _by_topic(value.partitions)
        parts.append(struct.pack(">i", len(grouped)))
        for topic, ids in grouped.items():
            parts.append(_string(topic))
            parts.append(struct.pack(f">i{len(ids)}i", len(ids), *ids))
    parts.append(struct.pack(">qq", value.last_update_timestamp_ms, value.start_timestamp_ms))
    return b"".join(parts)


# --- reading -----------------------------------------------------------------------------------


class _Reader(WireReader):
    """WireReader plus the primitives of Kafka's flexible versions."""

    def int8(self) -> int:
        return self._take(_INT8)

    def unsigned_varint(self) -> int:
        value = shift = 0
        while True:
            byte = self._take(_UINT8)
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise CorruptRecordError(f"a varint longer than 5 bytes in {self._what}")

    def compact_string(self) -> str:
        length = self.unsigned_varint() - 1
        if length < 0:
            raise CorruptRecordError(f"a null string in {self._what}")
        return self._raw(length).decode()

    def skip_tagged_fields(self) -> None:
        for _ in range(self.unsigned_varint()):
            self.unsigned_varint()  # tag
            self._raw(self.unsigned_varint())


_INT8 = struct.Struct(">b")
_UINT8 = struct.Struct(">B")


def _reader(data: bytes) -> _Reader:
    return _Reader(bytes(data), CorruptRecordError, "a __transaction_state record")


def decode_key(data: bytes) -> str | None:
    """The transactional id of a key; None for a key version Kafka's loader would skip."""
    reader = _reader(data)
    version = reader.int16()
    if version != TRANSACTION_LOG_KEY_VERSION:
        return None
    return reader.string()


def decode_value(data: bytes) -> TransactionLogValue:
    """A value of version 0 or 1 (the partitions of an Empty transaction are ignored)."""
    reader = _reader(data)
    version = reader.int16()
    if version not in (TRANSACTION_LOG_VALUE_VERSION, _FLEXIBLE_VALUE_VERSION):
        raise CorruptRecordError(f"unknown __transaction_state value version {version}")
    flexible = version == _FLEXIBLE_VALUE_VERSION
    producer_id = reader.int64()
    producer_epoch = reader.int16()
    timeout_ms = reader.int32()
    status = reader.int8()
    try:
        state = TransactionState(status)
    except ValueError:
        raise CorruptRecordError(f"unknown transaction status {status}") from None
    partitions: list[TopicPartition] = []
    count = reader.unsigned_varint() - 1 if flexible else reader.int32()
    for _ in range(max(count, 0)):
        topic = reader.compact_string() if flexible else reader.string()
        ids = reader.unsigned_varint() - 1 if flexible else reader.int32()
        partitions += [TopicPartition(topic, reader.int32()) for _ in range(max(ids, 0))]
        if flexible:
            reader.skip_tagged_fields()
    last_update = reader.int64()
    start = reader.int64()
    if flexible:
        reader.skip_tagged_fields()
    if state is TransactionState.EMPTY:
        partitions = []
    return TransactionLogValue(
        producer_id,
        producer_epoch,
        timeout_ms,
        state,
        tuple(dict.fromkeys(partitions)),
        last_update,
        start,
    )
