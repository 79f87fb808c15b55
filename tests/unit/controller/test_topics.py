"""Topic-name rules and the replica assignment rule of docs/design.md."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikafka.controller.errors import (
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    InvalidTopicError,
)
from minikafka.controller.topics import (
    assign_replicas,
    find_collision,
    has_collision_chars,
    validate_new_topic,
    validate_topic_name,
)
from minikafka.proto.errors import ErrorCode


@pytest.mark.parametrize(
    "name", ["orders", "a", "__consumer_offsets", "Orders.v2-eu_west", "0", "...", "a" * 249]
)
def test_legal_names(name: str) -> None:
    validate_topic_name(name)


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("", "must not be empty"),
        (".", "must not be '.'"),
        ("..", "must not be '..'"),
        ("a" * 250, "250 characters long, the limit is 249"),
        ("orders/eu", "may only contain"),
        ("orders eu", "may only contain"),
        ("ördërs", "may only contain"),
        ("orders\n", "may only contain"),
    ],
)
def test_illegal_names_raise_invalid_topic(name: str, reason: str) -> None:
    with pytest.raises(InvalidTopicError, match=reason) as info:
        validate_topic_name(name)
    assert info.value.code is ErrorCode.INVALID_TOPIC_EXCEPTION


def test_dot_and_underscore_collide() -> None:
    assert has_collision_chars("a.b") and has_collision_chars("a_b")
    assert not has_collision_chars("a-b")
    assert find_collision("metrics.eu", ["orders", "metrics_eu"]) == "metrics_eu"
    assert find_collision("metrics.eu", ["metrics.eu"]) is None  # itself is not a collision
    with pytest.raises(InvalidTopicError, match="collides with existing topic 'metrics_eu'"):
        validate_new_topic("metrics.eu", ["metrics_eu"])
    validate_new_topic("metrics-eu", ["metrics_eu"])


def test_assignment_follows_start_plus_i_plus_j_mod_n() -> None:
    # sorted live brokers [0, 1, 2]; replica j of partition i on brokers[(s + i + j) % 3]
    assert assign_replicas(4, 3, [2, 0, 1], start_index=1) == {
        0: (1, 2, 0),
        1: (2, 0, 1),
        2: (0, 1, 2),
        3: (1, 2, 0),
    }
    # ids need not be contiguous: positions in the sorted list count, not ids
    assert assign_replicas(3, 2, [7, 3, 11], start_index=0) == {
        0: (3, 7),
        1: (7, 11),
        2: (11, 3),
    }


def test_start_index_is_random_unless_given() -> None:
    starts = {assign_replicas(1, 1, range(5), rng=random.Random(seed))[0][0] for seed in range(50)}
    assert starts == {0, 1, 2, 3, 4}
    assert assign_replicas(6, 2, range(3), rng=random.Random(7)) == assign_replicas(
        6, 2, range(3), rng=random.Random(7)
    )
    assert assign_replicas(2, 1, [1, 2], start_index=5) == {0: (2,), 1: (1,)}  # taken mod n


@given(
    brokers=st.sets(st.integers(0, 100), min_size=1, max_size=8),
    num_partitions=st.integers(1, 40),
    data=st.data(),
)
def test_assignment_properties(brokers: set[int], num_partitions: int, data: st.DataObject) -> None:
    rf = data.draw(st.integers(1, len(brokers)))
    start = data.draw(st.integers(0, len(brokers) - 1))
    assignment = assign_replicas(num_partitions, rf, brokers, start_index=start)
    ordered = sorted(brokers)
    assert sorted(assignment) == list(range(num_partitions))
    for partition, replicas in assignment.items():
        assert len(replicas) == rf
        assert len(set(replicas)) == rf  # never two replicas on one broker
        assert set(replicas) <= brokers
        assert replicas[0] == ordered[(start + partition) % len(ordered)]  # leaders round-robin


def test_assignment_errors_carry_kafka_codes() -> None:
    with pytest.raises(InvalidReplicationFactorError, match="larger than the number") as info:
        assign_replicas(3, 4, [0, 1, 2])
    assert info.value.code is ErrorCode.INVALID_REPLICATION_FACTOR
    with pytest.raises(InvalidReplicationFactorError, match="at least 1"):
        assign_replicas(3, 0, [0, 1, 2])
    with pytest.raises(InvalidReplicationFactorError):
        assign_replicas(1, 1, [])
    with pytest.raises(InvalidPartitionsError, match="at least 1") as partitions_info:
        assign_replicas(0, 1, [0])
    assert partitions_info.value.code is ErrorCode.INVALID_PARTITIONS
