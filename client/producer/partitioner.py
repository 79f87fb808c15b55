"""Which partition a record goes to: Kafka's Java client rules.

- A record with a key goes to ``toPositive(murmur2(key)) % numPartitions``, over all partitions
  of the topic (available or not), so that the same key lands on the same partition as with the
  Java client.
- A record without a key uses the sticky partitioner (KIP-480, refined by KIP-794): the producer
  keeps sending to one partition until about ``batch.size`` bytes have gone there, then picks
  another at random among the partitions that have a leader. Batches fill up, so there are fewer
  requests than with round-robin.
- A custom partitioner is any callable ``(topic, key, partitions, available) -> int``.

Not thread-safe: the producer calls it under its own lock.
"""

from __future__ import annotations

import random
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

    ``batch_size`` is the producer's ``batch.size``: after that many bytes have been sent to
    the sticky partition of a topic, the next unkeyed record picks a new one.
    """

    def __init__(self, batch_size: int = 16_384, rng: random.Random | None = None) -> None:
        self._batch_size = batch_size
        self._rng = rng or random.Random()
        self._sticky: dict[str, int] = {}
        self._bytes: dict[str, int] = {}
        self._checked: dict[str, Sequence[int]] = {}  # candidates the sticky one was found in

    def __call__(
        self,
        topic: str,
        key: bytes | None,
        partitions: Sequence[int],
        available: Sequence[int],
    ) -> int:
        if key is not None:
            return partitions[partition_for_key(key, len(partitions))]
        return self.unkeyed(topic, 0, partitions, available)  # the sticky one, nothing counted

    def unkeyed(
        self, topic: str, size: int, partitions: Sequence[int], available: Sequence[int]
    ) -> int:
        """The partition of an unkeyed record of ``size`` bytes, counted towards the switch."""
        candidates = available or partitions
        current = self._sticky.get(topic)
        if current is None or (
            candidates is not self._checked.get(topic) and current not in candidates
        ):
            current = self._next(topic, candidates, current)
        self._checked[topic] = candidates  # the same list next time: no need to look again
        sent = self._bytes[topic] + size
        if sent >= self._batch_size:
            self._next(topic, candidates, current)  # the next record goes elsewhere
        else:
            self._bytes[topic] = sent
        return current

    def _next(self, topic: str, candidates: Sequence[int], previous: int | None) -> int:
        choices = [p for p in candidates if p != previous] or list(candidates)
        chosen = self._rng.choice(choices)
        self._sticky[topic] = chosen
        self._bytes[topic] = 0
        return chosen
