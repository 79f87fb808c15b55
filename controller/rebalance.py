"""Preferred-leader imbalance, as Kafka's auto.leader.rebalance.enable checks it.

For each broker b, the partitions "preferred by b" are those whose first assigned replica is b.
b's imbalance ratio is the share of those that another broker leads now. Every
leader.imbalance.check.interval.seconds the controller elects the preferred leader of b's
partitions when b's ratio exceeds leader.imbalance.per.broker.percentage / 100::

    assignments = {tp0: (1, 2), tp1: (1, 2), tp2: (2, 1)}
    leaders = {tp0: 2, tp1: 1, tp2: 2}
    imbalance_by_broker(assignments, leaders)[1].ratio      # 0.5: tp0 is led by broker 2

Only partitions whose preferred replica can take over are candidates (alive, in the ISR, not
shutting down, topic not being deleted); the caller filters with ``eligible``.

Pure functions: safe from any thread.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from minikafka.proto.common import TopicPartition

__all__ = ["BrokerImbalance", "imbalance_by_broker", "partitions_to_rebalance"]


@dataclass(frozen=True)
class BrokerImbalance:
    """The partitions preferred by one broker, and those of them another broker leads."""

    broker_id: int
    preferred: tuple[TopicPartition, ...]
    not_led: tuple[TopicPartition, ...]

    @property
    def ratio(self) -> float:
        return len(self.not_led) / len(self.preferred) if self.preferred else 0.0


def imbalance_by_broker(
    assignments: Mapping[TopicPartition, Sequence[int]],
    leaders: Mapping[TopicPartition, int],
) -> dict[int, BrokerImbalance]:
    """Imbalance of every broker that is the preferred replica of at least one partition."""
    preferred: dict[int, list[TopicPartition]] = {}
    not_led: dict[int, list[TopicPartition]] = {}
    for tp in sorted(assignments):
        replicas = assignments[tp]
        if not replicas:
            continue
        broker = replicas[0]
        preferred.setdefault(broker, []).append(tp)
        if leaders.get(tp) != broker:
            not_led.setdefault(broker, []).append(tp)
    return {
        broker: BrokerImbalance(broker, tuple(tps), tuple(not_led.get(broker, ())))
        for broker, tps in sorted(preferred.items())
    }


def partitions_to_rebalance(
    assignments: Mapping[TopicPartition, Sequence[int]],
    leaders: Mapping[TopicPartition, int],
    percentage: int,
    eligible: Callable[[TopicPartition], bool] = lambda tp: True,
) -> list[TopicPartition]:
    """Partitions to give back to their preferred leader, from brokers over the threshold."""
    threshold = percentage / 100
    result: list[TopicPartition] = []
    for imbalance in imbalance_by_broker(assignments, leaders).values():
        if imbalance.ratio > threshold:
            result.extend(tp for tp in imbalance.not_led if eligible(tp))
    return result
