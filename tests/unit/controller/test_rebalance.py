"""Preferred-leader imbalance per broker and the partitions an auto rebalance moves."""

from __future__ import annotations

from minikafka.controller.rebalance import imbalance_by_broker, partitions_to_rebalance
from minikafka.proto.common import TopicPartition

T0, T1, T2, T3 = (TopicPartition("t", p) for p in range(4))


def test_imbalance_ratio_per_preferred_broker() -> None:
    assignments = {T0: (1, 2), T1: (1, 2), T2: (2, 1), T3: (3, 1)}
    leaders = {T0: 2, T1: 1, T2: 2, T3: -1}
    imbalance = imbalance_by_broker(assignments, leaders)
    assert imbalance[1].preferred == (T0, T1)
    assert imbalance[1].not_led == (T0,)
    assert imbalance[1].ratio == 0.5
    assert imbalance[2].ratio == 0.0
    assert imbalance[3].ratio == 1.0  # an offline partition counts as not led


def test_only_brokers_over_the_threshold_are_rebalanced() -> None:
    # broker 1: 1 of 10 preferred partitions led elsewhere = 10 %, not over 10 %
    assignments = {TopicPartition("a", p): (1, 2) for p in range(10)}
    leaders = {tp: 1 for tp in assignments}
    leaders[TopicPartition("a", 0)] = 2
    assert partitions_to_rebalance(assignments, leaders, 10) == []
    leaders[TopicPartition("a", 1)] = 2  # 20 %
    assert partitions_to_rebalance(assignments, leaders, 10) == [
        TopicPartition("a", 0),
        TopicPartition("a", 1),
    ]
    assert partitions_to_rebalance(assignments, leaders, 20) == []


def test_ineligible_partitions_are_left_alone() -> None:
    assignments = {T0: (1, 2), T1: (1, 2)}
    leaders = {T0: 2, T1: 2}
    result = partitions_to_rebalance(assignments, leaders, 0, eligible=lambda tp: tp != T1)
    assert result == [T0]


def test_empty_assignments_are_skipped() -> None:
    assert imbalance_by_broker({T0: ()}, {}) == {}
