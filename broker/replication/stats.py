"""Event counters of the replication layer: Kafka's BrokerTopicStats and ReplicaManager meters.

Plain integers, bumped where the event happens (an append, a fetch answer, an ISR change) and
read by whoever exports them: broker/server/metrics.py turns them into Prometheus counters at
scrape time. Nothing here imports a metrics library, so replication stays free of the server
layer and an increment costs an attribute add.

    stats = BrokerTopicStats()
    stats.record_messages_in("orders", messages=10, size=2048)
    stats.all.messages_in, stats.topics["orders"].bytes_in     # 10, 2048

Not thread-safe: bumped on the broker's event loop; read there too (the metrics collector hops
onto the loop to read them).
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["BrokerTopicStats", "ReplicaManagerStats", "TopicStats"]


@dataclass
class TopicStats:
    """One topic's meters (or every topic's, for ``BrokerTopicStats.all``), as Kafka's
    ``kafka.server:type=BrokerTopicMetrics`` counts: MessagesInPerSec, BytesInPerSec,
    BytesOutPerSec (to consumers), ReplicationBytesOutPerSec (to followers),
    TotalProduceRequestsPerSec, FailedProduceRequestsPerSec, TotalFetchRequestsPerSec."""

    messages_in: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    replication_bytes_out: int = 0
    produce_requests: int = 0
    failed_produce_requests: int = 0
    fetch_requests: int = 0


@dataclass
class BrokerTopicStats:
    """Per-topic meters and their sum over every topic, updated together."""

    all: TopicStats = field(default_factory=TopicStats)
    topics: dict[str, TopicStats] = field(default_factory=dict)

    def topic(self, name: str) -> TopicStats:
        stats = self.topics.get(name)
        if stats is None:
            stats = self.topics[name] = TopicStats()
        return stats

    def record_messages_in(self, topic: str, *, messages: int, size: int) -> None:
        """A produce appended ``messages`` records in ``size`` bytes to a leader."""
        for stats in (self.topic(topic), self.all):
            stats.produce_requests += 1
            stats.messages_in += messages
            stats.bytes_in += size

    def record_failed_produce(self, topic: str) -> None:
        for stats in (self.topic(topic), self.all):
            stats.produce_requests += 1
            stats.failed_produce_requests += 1

    def record_bytes_out(self, topic: str, size: int, *, to_follower: bool) -> None:
        """A fetch answer carried ``size`` bytes of the topic's records."""
        for stats in (self.topic(topic), self.all):
            stats.fetch_requests += 1
            if to_follower:
                stats.replication_bytes_out += size
            else:
                stats.bytes_out += size

    def remove_topic(self, name: str) -> None:
        """Forget a deleted topic's meters (the sum keeps what they counted)."""
        self.topics.pop(name, None)


@dataclass
class ReplicaManagerStats:
    """``kafka.server:type=ReplicaManager`` meters (IsrShrinksPerSec, IsrExpandsPerSec) and
    the operations parked in the purgatory now (Kafka's per-purgatory PurgatorySize)."""

    isr_shrinks: int = 0
    isr_expands: int = 0
    delayed_produce: int = 0  # acks=all produces waiting for their ISR
    delayed_fetch: int = 0  # long-poll fetches waiting for data (consumers and followers)
