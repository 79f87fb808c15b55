"""Kafka's rack-aware replica assignment (KIP-36, AdminUtils.assignReplicasToBrokersRackAware):
the example of its documentation, the spread over racks, and the all-or-none rule."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikafka.controller.admin_validation import (
    validate_create_partitions,
    validate_create_topic,
)
from minikafka.controller.controller import NewPartitions, NewTopic
from minikafka.controller.topics import (
    assign_new_partitions,
    assign_replicas,
    rack_alternated_brokers,
)
from minikafka.proto.errors import ErrorCode, KafkaError

# Kafka's example (AdminUtils' documentation): broker -> rack.
KAFKA_RACKS = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}


def test_brokers_alternate_by_rack_as_kafkas_example() -> None:
    assert rack_alternated_brokers(KAFKA_RACKS) == [0, 3, 1, 5, 4, 2]
    nine = {b: f"rack{b // 3 + 1}" for b in range(9)}  # rack1: 0,1,2  rack2: 3,4,5 ...
    assert rack_alternated_brokers(nine) == [0, 3, 6, 1, 4, 7, 2, 5, 8]
    # Kafka's test: an uneven rack is used up, the others go on alternating.
    without_5 = {b: r for b, r in KAFKA_RACKS.items() if b != 5}
    assert rack_alternated_brokers(without_5) == [0, 3, 1, 4, 2]


def test_kafkas_documented_assignment_and_the_shift_after_a_round() -> None:
    assignment = assign_replicas(7, 3, KAFKA_RACKS, racks=KAFKA_RACKS, start_index=0)
    assert assignment == {
        0: (0, 3, 1),
        1: (3, 1, 5),
        2: (1, 5, 4),
        3: (5, 4, 2),
        4: (4, 2, 0),
        5: (2, 0, 3),
        6: (0, 4, 2),  # "instead of repeating 0,3,1 as partition 0"
    }


def test_three_racks_three_brokers_each_partition_on_every_rack() -> None:
    racks = {0: "r0", 1: "r1", 2: "r2"}
    assignment = assign_replicas(6, 3, racks, racks=racks, start_index=1)
    assert assignment[0] == (1, 0, 2)  # the first shift is the start index too, as in Kafka
    leaders = Counter(replicas[0] for replicas in assignment.values())
    assert leaders == {0: 2, 1: 2, 2: 2}
    assert all(sorted(r) == [0, 1, 2] for r in assignment.values())


@given(
    racks=st.dictionaries(
        st.integers(0, 50), st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=10
    ),
    num_partitions=st.integers(1, 30),
    data=st.data(),
)
def test_replicas_span_as_many_racks_as_they_can(
    racks: dict[int, str], num_partitions: int, data: st.DataObject
) -> None:
    rf = data.draw(st.integers(1, len(racks)))
    seed = data.draw(st.integers(0, 1000))
    assignment = assign_replicas(num_partitions, rf, racks, racks=racks, rng=random.Random(seed))
    num_racks = len(set(racks.values()))
    assert sorted(assignment) == list(range(num_partitions))
    for replicas in assignment.values():
        assert len(replicas) == rf and len(set(replicas)) == rf
        assert len({racks[b] for b in replicas}) == min(rf, num_racks)


def test_some_brokers_without_a_rack_are_refused() -> None:
    with pytest.raises(KafkaError, match="Not all brokers have rack information") as info:
        assign_replicas(3, 2, [0, 1, 2], racks={0: "r0", 1: "r1"})
    assert info.value.code == ErrorCode.UNKNOWN_SERVER_ERROR
    # none with a rack: the rack-unaware rule, racks of brokers not asked for do not count
    assert assign_replicas(2, 1, [0, 1], racks={7: "r7"}, start_index=0) == {0: (0,), 1: (1,)}


def test_added_partitions_continue_as_kafkas_admin_client() -> None:
    current = assign_replicas(6, 3, KAFKA_RACKS, racks=KAFKA_RACKS, start_index=0)
    added = assign_new_partitions(current, 8, KAFKA_RACKS, racks=KAFKA_RACKS)
    # start index = position of broker 0 (partition 0's leader) among the ids: 0; the
    # partitions numbered from 6, so the shift of the second round applies.
    assert added == {6: (0, 4, 2), 7: (3, 2, 0)}


def test_create_topic_and_partitions_use_the_racks() -> None:
    racks = {1: "r1", 2: "r2", 3: "r3", 4: "r1"}
    assignment = validate_create_topic(
        NewTopic("t", 8, 2),
        [],
        racks,
        racks,
        default_num_partitions=1,
        default_replication_factor=1,
        racks=racks,
    )
    assert all(racks[a] != racks[b] for a, b in assignment.values())
    added = validate_create_partitions(
        "t", assignment, NewPartitions(12), racks, racks, queued_for_deletion=False, racks=racks
    )
    assert sorted(added) == [8, 9, 10, 11]
    assert all(racks[a] != racks[b] for a, b in added.values())
    with pytest.raises(KafkaError, match="rack"):
        validate_create_topic(
            NewTopic("u", 1, 1),
            [],
            racks,
            [1, 2, 3, 4, 5],
            default_num_partitions=1,
            default_replication_factor=1,
            racks=racks,
        )
