"""The value types both sides of the wire name: Kafka's ``org.apache.kafka.common`` ones.

The client (producer, consumer, admin), the broker and the controller all speak of partitions,
brokers and committed offsets; each defined once here, in ``proto``, the one package both sides
may import, so a value made on one side is the same type on the other (not merely an equal
tuple).

    TopicPartition("orders", 3)                  # str() -> "orders-3"
    Node(2, "10.0.0.7", 9092, rack="r1")         # .address -> "10.0.0.7:9092"
    OffsetAndMetadata(42, "checkpoint", leader_epoch=5)

Immutable values; safe from any thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

__all__ = ["Node", "OffsetAndMetadata", "TopicPartition"]


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class Node:
    """A broker as a client on one listener reaches it (Kafka's Node: id, host, port, rack)."""

    id: int
    host: str
    port: int
    rack: str | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class OffsetAndMetadata:
    """A committed offset: what a consumer commits and what the group coordinator keeps.

    The field order is kafka-python's (the client's public shape). ``leader_epoch`` -1 is
    unknown; ``commit_timestamp`` (ms, -1 = none) is the coordinator's, stored in
    ``__consumer_offsets`` (consumer_offsets.py), and clients leave it out.
    """

    offset: int
    metadata: str = ""
    leader_epoch: int = -1
    commit_timestamp: int = -1
