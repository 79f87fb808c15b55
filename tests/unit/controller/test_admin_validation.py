"""CreateTopics and CreatePartitions checks: Kafka's codes and messages, no ZooKeeper."""

from __future__ import annotations

import pytest

from minikafka.controller.admin_validation import (
    validate_create_partitions,
    validate_create_topic,
)
from minikafka.controller.controller import NewPartitions, NewTopic
from minikafka.proto.common import INTERNAL_TOPICS
from minikafka.proto.errors import ErrorCode, KafkaError


def _create(new_topic: NewTopic, existing: list[str] | None = None) -> dict[int, tuple[int, ...]]:
    return validate_create_topic(
        new_topic,
        existing or [],
        {1, 2, 3},
        [1, 2, 3],
        default_num_partitions=2,
        default_replication_factor=3,
    )


def test_defaults_fill_minus_one() -> None:
    assignment = _create(NewTopic("orders"))
    assert sorted(assignment) == [0, 1]
    assert {len(r) for r in assignment.values()} == {3}


def test_a_given_assignment_is_checked_and_kept() -> None:
    assert _create(NewTopic("orders", assignments={0: [2, 1], 1: [1, 3]})) == {
        0: (2, 1),
        1: (1, 3),
    }


@pytest.mark.parametrize(
    ("new_topic", "existing", "code", "message"),
    [
        (NewTopic("orders"), ["orders"], ErrorCode.TOPIC_ALREADY_EXISTS, "already exists"),
        (
            NewTopic("orders", 1, assignments={0: [1]}),
            [],
            ErrorCode.INVALID_REQUEST,
            "Both numPartitions or replicationFactor and replicasAssignments were set.",
        ),
        (NewTopic("orders", 0), [], ErrorCode.INVALID_PARTITIONS, "must be larger than 0."),
        (
            NewTopic("orders", 1, 4),
            [],
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "Replication factor: 4 larger than available brokers: 3.",
        ),
    ],
)
def test_create_topic_refusals(
    new_topic: NewTopic, existing: list[str], code: ErrorCode, message: str
) -> None:
    with pytest.raises(KafkaError) as info:
        _create(new_topic, existing)
    assert info.value.code == code
    assert message in info.value.message


def _add(
    request: NewPartitions, current: dict[int, tuple[int, ...]] | None, *, deleting: bool = False
) -> dict[int, tuple[int, ...]]:
    return validate_create_partitions(
        "orders", current, request, {1, 2, 3}, [1, 2, 3], queued_for_deletion=deleting
    )


def test_new_partitions_continue_the_topics_rule() -> None:
    assert _add(NewPartitions(4), {0: (2, 3), 1: (3, 1)}) == {2: (1, 2), 3: (2, 3)}


@pytest.mark.parametrize(
    ("request_", "current", "deleting", "code", "message"),
    [
        (NewPartitions(2), None, False, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "not found."),
        (NewPartitions(2), {0: (1,)}, True, ErrorCode.INVALID_TOPIC_EXCEPTION, "queued"),
        (NewPartitions(1), {0: (1,), 1: (2,)}, False, ErrorCode.INVALID_PARTITIONS, "higher"),
        (NewPartitions(1), {0: (1,)}, False, ErrorCode.INVALID_PARTITIONS, "already has 1"),
        (
            NewPartitions(3, [[1]]),
            {0: (1,)},
            False,
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "Increasing the number of partitions by 2 but 1 assignments provided.",
        ),
        (
            NewPartitions(2, [[1, 2]]),
            {0: (1,)},
            False,
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "Inconsistent replication factor",
        ),
    ],
)
def test_create_partitions_refusals(
    request_: NewPartitions,
    current: dict[int, tuple[int, ...]] | None,
    deleting: bool,
    code: ErrorCode,
    message: str,
) -> None:
    with pytest.raises(KafkaError) as info:
        _add(request_, current, deleting=deleting)
    assert info.value.code == code
    assert message in info.value.message


@pytest.mark.parametrize("topic", sorted(INTERNAL_TOPICS))
def test_an_internal_topic_keeps_its_partition_count(topic: str) -> None:
    # Groups hash over __consumer_offsets' partition count: one more partition moves them.
    with pytest.raises(KafkaError) as info:
        validate_create_partitions(
            topic,
            {0: (1,), 1: (2,)},
            NewPartitions(3),
            {1, 2, 3},
            [1, 2, 3],
            queued_for_deletion=False,
        )
    assert info.value.code == ErrorCode.INVALID_REQUEST
    assert info.value.message == (
        f"Topic {topic} is a kafka internal topic: its number of partitions cannot be changed."
    )
