"""The records of ``__consumer_offsets``: Kafka's GroupMetadataManager key and value schemas.

Every record has a key; the key's version says what the record is. All integers are
big-endian; ``string`` is an int16 length then UTF-8 bytes (length -1 = null for a nullable
string); ``bytes`` is an int32 length then the bytes; an array is an int32 count then items.

Offset commit (one record per committed partition)::

    OffsetCommitKey v1                OffsetCommitValue v3
      version    int16  = 1             version           int16  = 3
      group      string                 offset            int64
      topic      string                 leader_epoch      int32  (-1 = unknown)
      partition  int32                  metadata          string
                                        commit_timestamp  int64  (ms)

    (value v1 adds expire_timestamp int64 after commit_timestamp; v0 has neither leader_epoch
    nor expire_timestamp -- all three are read, v3 is written)

Group metadata (one record per group, the whole group each time)::

    GroupMetadataKey v2               GroupMetadataValue v3
      version    int16  = 2             version                  int16  = 3
      group      string                 protocol_type            string
                                        generation               int32
                                        protocol                 nullable string
                                        leader                   nullable string
                                        current_state_timestamp  int64  (-1 = none)
                                        members                  array of
                                          member_id            string
                                          group_instance_id    nullable string
                                          client_id            string
                                          client_host          string
                                          rebalance_timeout    int32
                                          session_timeout      int32
                                          subscription         bytes
                                          assignment           bytes

A record with a null value is a tombstone: the offset (or the whole group) is gone. The topic
is compacted, so the last record per key is what survives; loading keeps the last record per
key in log order and drops tombstoned keys.

A TxnOffsetCommit writes the same offset records, in a transactional batch of the producer
(KIP-98); they count only once a COMMIT marker of that producer follows them in the log (an
ABORT marker discards them). The markers are control batches (proto/records.py).

Pure functions and frozen values; safe from any thread.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import NamedTuple

from minikafka.proto.common import OffsetAndMetadata
from minikafka.proto.errors import CorruptRecordError
from minikafka.proto.wire import WireReader

__all__ = [
    "GROUP_METADATA_KEY_VERSION",
    "OFFSET_COMMIT_KEY_VERSION",
    "GroupMetadataKey",
    "GroupMetadataValue",
    "MemberRecord",
    "OffsetKey",
    "decode_group_metadata_value",
    "decode_key",
    "decode_offset_value",
    "encode_group_metadata_key",
    "encode_group_metadata_value",
    "encode_offset_key",
    "encode_offset_value",
]

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
_OFFSET_VALUE_VERSION = 3
_GROUP_VALUE_VERSION = 3


class OffsetKey(NamedTuple):
    group: str
    topic: str
    partition: int


class GroupMetadataKey(NamedTuple):
    group: str


@dataclass(frozen=True)
class MemberRecord:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    members: tuple[MemberRecord, ...]


# --- writing -----------------------------------------------------------------------------------


def _string(value: str) -> bytes:
    data = value.encode()
    return struct.pack(">h", len(data)) + data


def _nullable_string(value: str | None) -> bytes:
    return struct.pack(">h", -1) if value is None else _string(value)


def _bytes(value: bytes) -> bytes:
    return struct.pack(">i", len(value)) + value


def encode_offset_key(group: str, topic: str, partition: int) -> bytes:
    return (
        struct.pack(">h", OFFSET_COMMIT_KEY_VERSION)
        + _string(group)
        + _string(topic)
        + struct.pack(">i", partition)
    )


def encode_offset_value(value: OffsetAndMetadata) -> bytes:
    return (
        struct.pack(">hqi", _OFFSET_VALUE_VERSION, value.offset, value.leader_epoch)
        + _string(value.metadata)
        + struct.pack(">q", value.commit_timestamp)
    )


def encode_group_metadata_key(group: str) -> bytes:
    return struct.pack(">h", GROUP_METADATA_KEY_VERSION) + _string(group)


def encode_group_metadata_value(value: GroupMetadataValue) -> bytes:
    parts = [
        struct.pack(">h", _GROUP_VALUE_VERSION),
        _string(value.protocol_type),
        struct.pack(">i", value.generation),
        _nullable_string(value.protocol),
        _nullable_string(value.leader),
        struct.pack(">qi", value.current_state_timestamp, len(value.members)),
    ]
    for member in value.members:
        parts += [
            _string(member.member_id),
            _nullable_string(member.group_instance_id),
            _string(member.client_id),
            _string(member.client_host),
            struct.pack(">ii", member.rebalance_timeout_ms, member.session_timeout_ms),
            _bytes(member.subscription),
            _bytes(member.assignment),
        ]
    return b"".join(parts)


# --- reading -----------------------------------------------------------------------------------


def _reader(data: bytes) -> WireReader:
    return WireReader(data, CorruptRecordError, "a __consumer_offsets record")


def decode_key(data: bytes) -> OffsetKey | GroupMetadataKey:
    """The key of a __consumer_offsets record: an offset commit (v0/v1) or a group (v2)."""
    reader = _reader(data)
    version = reader.int16()
    if version in (0, 1):
        return OffsetKey(reader.string(), reader.string(), reader.int32())
    if version == GROUP_METADATA_KEY_VERSION:
        return GroupMetadataKey(reader.string())
    raise CorruptRecordError(f"unknown __consumer_offsets key version {version}")


def decode_offset_value(data: bytes) -> OffsetAndMetadata:
    reader = _reader(data)
    version = reader.int16()
    if not 0 <= version <= 3:
        raise CorruptRecordError(f"unknown offset commit value version {version}")
    offset = reader.int64()
    leader_epoch = reader.int32() if version >= 3 else -1
    metadata = reader.string()
    commit_timestamp = reader.int64()
    return OffsetAndMetadata(
        offset, metadata, leader_epoch=leader_epoch, commit_timestamp=commit_timestamp
    )


def decode_group_metadata_value(data: bytes) -> GroupMetadataValue:
    reader = _reader(data)
    version = reader.int16()
    if not 0 <= version <= 3:
        raise CorruptRecordError(f"unknown group metadata value version {version}")
    protocol_type = reader.string()
    generation = reader.int32()
    protocol = reader.nullable_string()
    leader = reader.nullable_string()
    timestamp = reader.int64() if version >= 2 else -1
    members = []
    for _ in range(reader.int32()):
        member_id = reader.string()
        instance_id = reader.nullable_string() if version >= 3 else None
        client_id = reader.string()
        client_host = reader.string()
        rebalance_timeout = reader.int32() if version >= 1 else 0
        session_timeout = reader.int32()
        subscription = reader.nullable_bytes() or b""
        assignment = reader.nullable_bytes() or b""
        members.append(
            MemberRecord(
                member_id,
                instance_id,
                client_id,
                client_host,
                rebalance_timeout or session_timeout,
                session_timeout,
                subscription,
                assignment,
            )
        )
    return GroupMetadataValue(
        protocol_type, generation, protocol, leader, timestamp, tuple(members)
    )
