"""Manual replica assignments (Kafka's checks) and assignments for added partitions."""

from __future__ import annotations

import pytest

from minikafka.controller.topics import assign_new_partitions, validate_replica_assignment
from minikafka.proto.errors import ErrorCode, KafkaError


def test_a_valid_manual_assignment_keeps_the_given_order() -> None:
    result = validate_replica_assignment({1: [3, 1], 0: [2, 3]}, {1, 2, 3})
    assert result == {0: (2, 3), 1: (3, 1)}


@pytest.mark.parametrize(
    ("assignments", "reason"),
    [
        ({0: [1], 2: [2]}, "consecutive"),
        ({1: [1]}, "consecutive"),
        ({0: []}, "no replicas"),
        ({0: [1, 1]}, "Duplicate"),
        ({0: [1, 9]}, "Unknown broker"),
        ({0: [1, 2], 1: [1]}, "same number of replicas"),
    ],
)
def test_invalid_manual_assignments(assignments: dict[int, list[int]], reason: str) -> None:
    with pytest.raises(KafkaError) as info:
        validate_replica_assignment(assignments, {1, 2, 3})
    assert info.value.code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert reason in info.value.message


def test_added_partitions_may_start_after_the_existing_ones() -> None:
    result = validate_replica_assignment({3: [1], 4: [2]}, {1, 2}, first_partition=3)
    assert result == {3: (1,), 4: (2,)}


def test_new_partitions_continue_the_topic_rule() -> None:
    # partition 0 starts at broker 2 (index 1 of [1, 2, 3]): p -> (1 + p + j) mod 3
    assert assign_new_partitions({0: (2, 3), 1: (3, 1)}, 4, [3, 1, 2]) == {
        2: (1, 2),
        3: (2, 3),
    }


def test_new_partitions_when_the_first_replica_is_gone() -> None:
    added = assign_new_partitions({0: (9, 1)}, 3, [1, 2])
    assert sorted(added) == [1, 2]
    assert all(len(r) == 2 and set(r) == {1, 2} for r in added.values())
