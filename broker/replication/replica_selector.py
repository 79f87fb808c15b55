"""Which replica a consumer should fetch from (KIP-392): Kafka's ReplicaSelector plug-in point.

A partition's leader asks its selector, for each consumer fetch, which replica that consumer
should read from; when it names another replica, the Fetch answer carries it as
``preferred_read_replica`` (and no records), and the consumer fetches from there until an error
or its metadata max age sends it back to the leader. ``replica.selector.class`` names one of
Kafka's two selectors (unset: no selector, every consumer reads from the leader):

* ``org.apache.kafka.common.replica.LeaderSelector``: always the leader.
* ``org.apache.kafka.common.replica.RackAwareReplicaSelector``: a client without a rack
  (``client.rack``, the Fetch's ``rack_id``) gets the leader; so does one whose rack holds no
  candidate replica, or holds the leader; otherwise the most caught-up replica in its rack
  (largest log end offset, then the shortest time since it was last caught up).

The leader offers only what Kafka's ReplicaManager.findPreferredReadReplica offers: itself and
the followers in the ISR whose log holds the fetch offset, reachable on the consumer's listener
(the caller builds the ``PartitionView``).

    selector = replica_selector_for("org.apache.kafka.common.replica.RackAwareReplicaSelector")
    chosen = selector.select(tp, ClientMetadata("r1", "PLAINTEXT"), view)

Value types and stateless selectors: safe from any thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from minikafka.broker.config import REPLICA_SELECTOR_CLASSES
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import InvalidConfigError

__all__ = [
    "LEADER_SELECTOR",
    "RACK_AWARE_REPLICA_SELECTOR",
    "ClientMetadata",
    "LeaderSelector",
    "PartitionView",
    "RackAwareReplicaSelector",
    "ReplicaSelector",
    "ReplicaView",
    "replica_selector_for",
]

LEADER_SELECTOR, RACK_AWARE_REPLICA_SELECTOR = REPLICA_SELECTOR_CLASSES


@dataclass(frozen=True)
class ClientMetadata:
    """Who fetches: the consumer's rack (``client.rack``; "" when it has none) and the listener
    its fetch came in on (the preferred replica must be reachable there)."""

    rack_id: str
    listener: str
    client_id: str = ""


@dataclass(frozen=True)
class ReplicaView:
    """One candidate replica as the leader sees it."""

    broker_id: int
    rack: str | None
    log_end_offset: int
    time_since_last_caught_up_ms: int


@dataclass(frozen=True)
class PartitionView:
    """The candidates (the leader among them) and the leader."""

    replicas: Sequence[ReplicaView]
    leader: ReplicaView


class ReplicaSelector(Protocol):
    def select(
        self, tp: TopicPartition, client: ClientMetadata, partition: PartitionView
    ) -> ReplicaView | None:
        """The replica ``client`` should read ``tp`` from; None: no preference (the leader)."""
        ...


class LeaderSelector:
    """Kafka's LeaderSelector: always the leader."""

    def select(
        self, tp: TopicPartition, client: ClientMetadata, partition: PartitionView
    ) -> ReplicaView | None:
        return partition.leader


class RackAwareReplicaSelector:
    """Kafka's RackAwareReplicaSelector (module docstring)."""

    def select(
        self, tp: TopicPartition, client: ClientMetadata, partition: PartitionView
    ) -> ReplicaView | None:
        if not client.rack_id:
            return partition.leader
        same_rack = [r for r in partition.replicas if r.rack == client.rack_id]
        if not same_rack or partition.leader in same_rack:
            return partition.leader
        # Kafka's ReplicaView.comparator, then the lowest broker id (a stable answer).
        return max(
            same_rack,
            key=lambda r: (r.log_end_offset, -r.time_since_last_caught_up_ms, -r.broker_id),
        )


_SELECTORS: dict[str, type[LeaderSelector] | type[RackAwareReplicaSelector]] = {
    LEADER_SELECTOR: LeaderSelector,
    RACK_AWARE_REPLICA_SELECTOR: RackAwareReplicaSelector,
}


def replica_selector_for(class_name: str | None) -> ReplicaSelector | None:
    """The selector ``replica.selector.class`` names (None when unset); InvalidConfigError for
    a class this broker does not have, as Kafka fails to start on a class it cannot load (the
    broker's config refuses one already when it is read)."""
    if not class_name:
        return None
    selector = _SELECTORS.get(class_name.strip())
    if selector is None:
        raise InvalidConfigError(
            f"Invalid value {class_name} for configuration replica.selector.class: class not "
            f"found (known: {', '.join(sorted(_SELECTORS))})"
        )
    return selector()
