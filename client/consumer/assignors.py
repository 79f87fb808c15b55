"""Partition assignors (range, roundrobin) and Kafka's ConsumerProtocol byte formats.

The group leader receives every member's Subscription, runs the assignor named by the group's
protocol, and sends each member its Assignment through SyncGroup. Both travel as bytes the
broker never reads; the layouts are Kafka's (big-endian; string = int16 length + UTF-8;
bytes = int32 length, -1 for null; arrays = int32 count)::

    Subscription                         Assignment
      version       int16  (0 written)     version             int16  (0 written)
      topics        [string]               assigned_partitions [topic string,
      user_data     bytes                                        partitions [int32]]
      (v1+ owned_partitions [topic,        user_data           bytes
       [int32]]; v2+ generation_id
       int32; v3+ rack_id string:
       read and ignored)

Assignors, as Kafka's Java client does them:

* ``range``: per topic, partitions in order, consumers by member id; each consumer gets
  ``n // c`` consecutive partitions and the first ``n % c`` consumers one more. Two consumers
  C0, C1 over t0 and t1 with 3 partitions each: C0 = [t0p0, t0p1, t1p0, t1p1],
  C1 = [t0p2, t1p2].
* ``roundrobin``: every partition of every subscribed topic (topics sorted, then partition
  order) dealt in turn to the consumers sorted by member id, skipping consumers not
  subscribed to the topic. The same example: C0 = [t0p0, t0p2, t1p1], C1 = [t0p1, t1p0, t1p2].

Pure functions; safe from any thread.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from minikafka.proto.errors import InvalidRequestError
from minikafka.proto.wire import WireReader

__all__ = [
    "ASSIGNORS",
    "Assignment",
    "PartitionAssignor",
    "RangeAssignor",
    "RoundRobinAssignor",
    "Subscription",
]


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


class PartitionAssignor(Protocol):
    name: str

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        """``{topic: partition count}``, ``{member id: Subscription}`` -> assignments."""
        ...


class RangeAssignor:
    name = "range"

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        consumers_per_topic: dict[str, list[str]] = {}
        for member_id, subscription in subscriptions.items():
            for topic in subscription.topics:
                consumers_per_topic.setdefault(topic, []).append(member_id)
        result: dict[str, dict[str, list[int]]] = {m: {} for m in subscriptions}
        for topic, consumers in consumers_per_topic.items():
            count = partitions_per_topic.get(topic)
            if count is None:
                continue
            consumers.sort()
            per_consumer, extra = divmod(count, len(consumers))
            for i, member_id in enumerate(consumers):
                start = per_consumer * i + min(i, extra)
                length = per_consumer + (1 if i < extra else 0)
                if length:
                    result[member_id][topic] = list(range(start, start + length))
        return {m: Assignment(parts) for m, parts in result.items()}


class RoundRobinAssignor:
    name = "roundrobin"

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        topics = sorted(
            {t for s in subscriptions.values() for t in s.topics if t in partitions_per_topic}
        )
        consumers = sorted(subscriptions)
        result: dict[str, dict[str, list[int]]] = {m: {} for m in subscriptions}
        if not consumers:
            return {}
        position = 0
        for topic in topics:
            for partition in range(partitions_per_topic[topic]):
                while topic not in subscriptions[consumers[position % len(consumers)]].topics:
                    position += 1
                member_id = consumers[position % len(consumers)]
                position += 1
                result[member_id].setdefault(topic, []).append(partition)
        return {m: Assignment(parts) for m, parts in result.items()}


ASSIGNORS: dict[str, type[RangeAssignor] | type[RoundRobinAssignor]] = {
    "range": RangeAssignor,
    "roundrobin": RoundRobinAssignor,
}


# --- bytes -------------------------------------------------------------------------------------


def _string(value: str) -> bytes:
    data = value.encode()
    return struct.pack(">h", len(data)) + data


def _bytes(value: bytes | None) -> bytes:
    if value is None:
        return struct.pack(">i", -1)
    return struct.pack(">i", len(value)) + value
