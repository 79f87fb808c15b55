"""Which partition a record goes to: Kafka's Java client rules.

- A record with a key goes to ``toPositive(murmur2(key)) % numPartitions``, over all partitions
  of the topic (available or not), so that the same key lands on the same partition as with the
  Java client.
- A record without a key uses the sticky partitioner (KIP-480, refined by KIP-794): the producer
  keeps sending to one partition until its batch has ``batch.size`` bytes, then picks another
  at random among the partitions that have a leader. Batches fill up, so there are fewer
  requests than with round-robin.
- A custom partitioner is any callable ``(topic, key, partitions, available) -> int``.

``StickyPartitioner`` is thread-safe; a custom partitioner is called under the producer's lock.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Sequence

__all__ = ["Partitioner", "StickyPartitioner", "murmur2", "partition_for_key"]

Partitioner = Callable[[str, bytes | None, Sequence[int], Sequence[int]], int]

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK32 = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """MurmurHash2, 32-bit, as Kafka's ``Utils.murmur2`` computes it (a signed int32)."""
    length = len(data)
    h = (_SEED ^ length) & _MASK32
    whole = length & ~3
    for i in range(0, whole, 4):
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * _M) & _MASK32
        k ^= k >> 24
        k = (k * _M) & _MASK32
        h = ((h * _M) & _MASK32) ^ k
    tail = length & 3
    if tail == 3:
        h ^= data[whole + 2] << 16
    if tail >= 2:
        h ^= data[whole + 1] << 8
    if tail >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK32
    h ^= h >> 13
    h = (h * _M) & _MASK32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The partition the Java client picks for ``key``: ``toPositive(murmur2(key)) % n``."""
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions


class StickyPartitioner:
    """Kafka's default partitioner: murmur2 for keys, sticky for records without one.

    The producer asks ``unkeyed(topic, ...)`` for each record without a key, and calls
    ``batch_full(topic, partition, ...)`` when a record fills the sticky partition's batch to
    ``batch.size`` (the accumulator says so): the next unkeyed record then goes to another
    partition. So nothing is counted per record, and the batches it fills are full ones.

    Thread-safe: the sticky partition of a topic is read without a lock (one dict lookup) and
    changed under one.
    """

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.Random()
        self._lock = threading.Lock()
        # topic -> (its sticky partition, the candidate list it was last found in): while
        # send passes the same list (one per metadata version), nothing is looked up again
        self._sticky: dict[str, tuple[int, Sequence[int]]] = {}

    def __call__(
        self,
        topic: str,
        key: bytes | None,
        partitions: Sequence[int],
        available: Sequence[int],
    ) -> int:
        if key is not None:
            return partitions[partition_for_key(key, len(partitions))]
        return self.unkeyed(topic, partitions, available)

    def unkeyed(self, topic: str, partitions: Sequence[int], available: Sequence[int]) -> int:
        """The sticky partition of ``topic``: a new one if there is none yet or it has no
        leader in ``available`` (checked once per metadata list)."""
        candidates = available or partitions
        sticky = self._sticky.get(topic)  # (partition, the candidates it was found in)
        if sticky is not None and sticky[1] is candidates:
            return sticky[0]
        with self._lock:
            return self._move(topic, candidates, None if sticky is None else sticky[0])

    def batch_full(
        self, topic: str, partition: int, partitions: Sequence[int], available: Sequence[int]
    ) -> None:
        """``partition``'s batch reached batch.size: the next unkeyed record goes elsewhere."""
        with self._lock:
            sticky = self._sticky.get(topic)
            if sticky is not None and sticky[0] == partition:
                self._move(topic, available or partitions, partition, leave=True)

    def _move(
        self, topic: str, candidates: Sequence[int], previous: int | None, *, leave: bool = False
    ) -> int:
        """Under the lock: the sticky partition among ``candidates``. ``previous`` stays if it
        is one of them, unless ``leave``; otherwise another is picked at random."""
        sticky = self._sticky.get(topic)
        current = None if sticky is None else sticky[0]
        if current is not None and current in candidates and (not leave or current != previous):
            # still has a leader (only the candidate list is new), or another thread moved it
            chosen = current
        else:
            choices = [p for p in candidates if p != current] or list(candidates)
            chosen = self._rng.choice(choices)
        self._sticky[topic] = (chosen, candidates)
        return chosen
