"""Kafka's ConsumerProtocol byte formats: what a consumer puts in JoinGroup (Subscription)
and the group leader in SyncGroup (Assignment). The coordinator passes them through, and reads
a Subscription's topics only to answer OffsetDelete. Big-endian; string = int16 length +
UTF-8; bytes = int32 length, -1 for null; arrays = int32 count::

    Subscription                         Assignment
      version       int16  (0 written)     version             int16  (0 written)
      topics        [string]               assigned_partitions [topic string,
      user_data     bytes                                        partitions [int32]]
      (v1+ owned_partitions [topic,        user_data           bytes
       [int32]]; v2+ generation_id
       int32; v3+ rack_id string:
       read and ignored)

Pure values; safe from any thread.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from minikafka.proto.errors import InvalidRequestError
from minikafka.proto.wire import WireReader

__all__ = ["Assignment", "Subscription"]


@dataclass(frozen=True)
class Subscription:
    topics: tuple[str, ...]
    user_data: bytes | None = None
    version: int = 0

    def encode(self) -> bytes:
        out = [struct.pack(">hi", 0, len(self.topics))]
        out += [_string(t) for t in self.topics]
        out.append(_bytes(self.user_data))
        return b"".join(out)

    @classmethod
    def decode(cls, data: bytes) -> Subscription:
        reader = WireReader(data, InvalidRequestError, "consumer protocol data")
        version = reader.int16()
        topics = tuple(reader.string() for _ in range(reader.int32()))
        user_data = reader.nullable_bytes()
        return cls(topics, user_data, version)


@dataclass(frozen=True)
class Assignment:
    partitions: dict[str, list[int]] = field(default_factory=dict)  # topic -> partitions
    user_data: bytes | None = None
    version: int = 0

    def encode(self) -> bytes:
        out = [struct.pack(">hi", 0, len(self.partitions))]
        for topic in sorted(self.partitions):
            parts = self.partitions[topic]
            out.append(_string(topic))
            out.append(struct.pack(f">i{len(parts)}i", len(parts), *parts))
        out.append(_bytes(self.user_data))
        return b"".join(out)

    @classmethod
    def decode(cls, data: bytes) -> Assignment:
        if not data:
            return cls()  # a member the leader gave nothing (Kafka sends empty bytes)
        reader = WireReader(data, InvalidRequestError, "consumer protocol data")
        version = reader.int16()
        partitions: dict[str, list[int]] = {}
        for _ in range(reader.int32()):
            topic = reader.string()
            partitions[topic] = [reader.int32() for _ in range(reader.int32())]
        user_data = reader.nullable_bytes() if reader.remaining() else None
        return cls(partitions, user_data, version)

    def topic_partitions(self) -> list[tuple[str, int]]:
        return [(t, p) for t in sorted(self.partitions) for p in self.partitions[t]]


# --- bytes -------------------------------------------------------------------------------------


def _string(value: str) -> bytes:
    data = value.encode()
    return struct.pack(">h", len(data)) + data


def _bytes(value: bytes | None) -> bytes:
    if value is None:
        return struct.pack(">i", -1)
    return struct.pack(">i", len(value)) + value
