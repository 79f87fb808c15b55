"""Partition assignors (range, roundrobin), as Kafka's Java client does them.

The group leader receives every member's Subscription, runs the assignor named by the group's
protocol, and sends each member its Assignment through SyncGroup (their byte layouts:
``proto/consumer_protocol.py``).

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

from collections.abc import Mapping
from typing import Protocol

from minikafka.proto.consumer_protocol import Assignment, Subscription

__all__ = [
    "ASSIGNORS",
    "Assignment",
    "PartitionAssignor",
    "RangeAssignor",
    "RoundRobinAssignor",
    "Subscription",
]


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
