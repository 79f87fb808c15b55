"""The value types both sides of the wire name: Kafka's ``org.apache.kafka.common`` ones.

The client (producer, consumer, admin), the broker and the controller all speak of partitions,
brokers and committed offsets, and the broker's config and the controller of listener
endpoints and of the brokers' internal topics. Each is defined once here, in ``proto``, the
one package both sides may import, so a value made on one side is the same type on the other
(not merely an equal tuple).

    TopicPartition("orders", 3)                  # str() -> "orders-3"
    Node(2, "10.0.0.7", 9092, rack="r1")         # .address -> "10.0.0.7:9092"
    OffsetAndMetadata(42, "checkpoint", leader_epoch=5)
    EndPoint.parse("INTERNAL://10.0.0.7:9093", {"INTERNAL": "PLAINTEXT"})   # a broker listener

Immutable values; safe from any thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

__all__ = [
    "GROUP_METADATA_TOPIC",
    "INTERNAL_TOPICS",
    "TRANSACTION_STATE_TOPIC",
    "EndPoint",
    "Node",
    "OffsetAndMetadata",
    "TopicPartition",
]

GROUP_METADATA_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"

# The brokers' own topics (Kafka's Topic.INTERNAL_TOPICS): no client creates or deletes one or
# changes its partition count, since groups and transactional ids hash over that count.
INTERNAL_TOPICS = frozenset({GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC})


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
class EndPoint:
    """One listener of a broker: ``LISTENER_NAME://host:port`` plus its security protocol."""

    listener_name: str
    host: str
    port: int
    security_protocol: str = "PLAINTEXT"

    @property
    def connection_string(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener_name}://{host}:{self.port}"

    @staticmethod
    def parse(connection_string: str, protocol_map: Mapping[str, str]) -> EndPoint:
        """Parse ``NAME://host:port``; the protocol comes from the map, else is the name."""
        name, sep, address = connection_string.partition("://")
        host, colon, port = address.rpartition(":")
        if not sep or not colon or not name:
            raise ValueError(f"not a listener endpoint: {connection_string!r}")
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        return EndPoint(name, host, int(port), protocol_map.get(name, name))


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
