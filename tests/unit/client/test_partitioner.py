"""Key -> partition must match the Java client, checked against kafka-python's murmur2."""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import given
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as kafka_murmur2

from minikafka.client.producer.partitioner import StickyPartitioner, murmur2, partition_for_key


def _kafka_partition(key: bytes, n: int) -> int:
    hashed: int = kafka_murmur2(key)  # kafka-python is untyped
    return (hashed & 0x7FFFFFFF) % n


def test_known_values_from_the_java_client() -> None:
    # Values from Kafka's UtilsTest.testMurmur2 (the Java client's own test vectors).
    assert murmur2(b"21") == -973932308
    assert murmur2(b"foobar") == -790332482
    assert murmur2(b"a-little-bit-long-string") == -985981536
    assert murmur2(b"a-little-bit-longer-string") == -1486304829
    assert murmur2(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8") == -58897971
    assert murmur2(b"abc") == 479470107


def test_many_keys_match_kafka_python() -> None:
    rng = random.Random(42)
    for _ in range(20_000):
        key = rng.randbytes(rng.randrange(0, 40))
        for n in (1, 3, 7, 50):
            assert partition_for_key(key, n) == _kafka_partition(key, n)


@given(st.binary(max_size=200), st.integers(min_value=1, max_value=1000))
def test_any_key_matches_kafka_python(key: bytes, n: int) -> None:
    assert partition_for_key(key, n) == _kafka_partition(key, n)


def test_keyed_records_ignore_availability() -> None:
    partitioner = StickyPartitioner()
    key = b"user-17"
    expected = _kafka_partition(key, 6)
    assert partitioner("t", key, list(range(6)), [p for p in range(6) if p != expected]) == expected


def test_unkeyed_records_stick_until_the_batch_is_full() -> None:
    partitioner = StickyPartitioner(rng=random.Random(1))
    partitions = list(range(4))
    first = partitioner("t", None, partitions, partitions)
    for _ in range(9):
        assert partitioner("t", None, partitions, partitions) == first
        assert partitioner.unkeyed("t", partitions, partitions) == first
    partitioner.batch_full("t", first, partitions, partitions)
    second = partitioner.unkeyed("t", partitions, partitions)
    assert second != first
    assert partitioner("t", None, partitions, partitions) == second
    partitioner.batch_full("t", first, partitions, partitions)  # an old batch: no move
    assert partitioner.unkeyed("t", partitions, partitions) == second
    assert partitioner.unkeyed("other", partitions, partitions) in partitions  # per topic


def test_unkeyed_records_only_go_to_available_partitions() -> None:
    partitioner = StickyPartitioner(rng=random.Random(3))
    seen: Counter[int] = Counter()
    for _ in range(200):
        p = partitioner.unkeyed("t", [0, 1, 2, 3], [1, 3])
        seen[p] += 1
        partitioner.batch_full("t", p, [0, 1, 2, 3], [1, 3])
    assert set(seen) == {1, 3}


def test_the_sticky_partition_is_left_when_it_loses_its_leader() -> None:
    partitioner = StickyPartitioner(rng=random.Random(5))
    partitions = list(range(4))
    current = partitioner.unkeyed("t", partitions, partitions)
    assert partitioner.unkeyed("t", partitions, partitions) == current
    # A new metadata list without the sticky partition: it is left at once.
    available = [p for p in partitions if p != current]
    moved = partitioner.unkeyed("t", partitions, available)
    assert moved in available
    assert partitioner.unkeyed("t", partitions, available) == moved
    # No partition has a leader: any partition, as Kafka.
    assert partitioner.unkeyed("t", partitions, []) in partitions
