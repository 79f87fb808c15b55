"""Replica assignment of new partitions, Kafka's rules (the rules, with examples, are in
controller/topics.py's docstring): round-robin from a start index over the sorted live brokers,
or rack-aware (KIP-36, AdminUtils.assignReplicasToBrokersRackAware) when every broker has a
rack. The controller assigns new topics and partitions with them, and the reassignment tool
(``minikafka reassign-partitions --generate``) proposes moves with them, as Kafka's tool does.

    >>> assign_replicas(3, 2, [2, 0, 1], start_index=0)
    {0: (0, 1), 1: (1, 2), 2: (2, 0)}

Errors are proto.errors' (INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR; some brokers with a
rack and others without: UNKNOWN_SERVER_ERROR). Pure functions: safe from any thread.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence

from minikafka.proto.errors import ErrorCode, error_for_code

__all__ = [
    "assign_rack_aware",
    "assign_replicas",
    "checked_brokers",
    "is_rack_aware",
    "rack_alternated_brokers",
]


def assign_replicas(
    num_partitions: int,
    replication_factor: int,
    live_broker_ids: Iterable[int],
    *,
    racks: Mapping[int, str] | None = None,
    start_index: int | None = None,
    rng: random.Random | None = None,
) -> dict[int, tuple[int, ...]]:
    """Assigned replicas per partition id, by the rules in the module docstring.

    ``racks``: the rack of each broker that has one (``broker.rack``); rack-aware when every
    broker has one, refused when only some have. ``start_index`` fixes s (taken modulo n;
    rack-aware, it is also the first shift, as Kafka's fixed start index); otherwise s (and
    the shift) is drawn from ``rng`` (or the ``random`` module).
    """
    brokers = checked_brokers(num_partitions, replication_factor, live_broker_ids)
    n = len(brokers)
    if is_rack_aware(brokers, racks):
        assert racks is not None
        if start_index is None:
            draw = rng or random
            start_index, shift = draw.randrange(n), draw.randrange(n)
        else:
            shift = start_index
        return assign_rack_aware(
            num_partitions, replication_factor, {b: racks[b] for b in brokers}, start_index, shift
        )
    if start_index is None:
        start_index = (rng or random).randrange(n)
    return {
        i: tuple(brokers[(start_index + i + j) % n] for j in range(replication_factor))
        for i in range(num_partitions)
    }


def checked_brokers(
    num_partitions: int, replication_factor: int, live_broker_ids: Iterable[int]
) -> list[int]:
    brokers = sorted(set(live_broker_ids))
    if num_partitions < 1:
        raise error_for_code(
            ErrorCode.INVALID_PARTITIONS,
            f"number of partitions must be at least 1, got {num_partitions}",
        )
    if replication_factor < 1:
        raise error_for_code(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"replication factor must be at least 1, got {replication_factor}",
        )
    if replication_factor > len(brokers):
        raise error_for_code(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"replication factor {replication_factor} is larger than the number of "
            f"available brokers ({len(brokers)})",
        )
    return brokers


def is_rack_aware(brokers: Sequence[int], racks: Mapping[int, str] | None) -> bool:
    """True when every broker has a rack, False when none has; refused in between."""
    with_rack = [b for b in brokers if racks and racks.get(b) is not None]
    if not with_rack:
        return False
    if len(with_rack) < len(brokers):
        without = sorted(set(brokers) - set(with_rack))
        raise error_for_code(
            ErrorCode.UNKNOWN_SERVER_ERROR,
            "Not all brokers have rack information for replica rack aware assignment "
            f"(no broker.rack: {without}).",
        )
    return True


def rack_alternated_brokers(racks: Mapping[int, str]) -> list[int]:
    """The brokers of ``racks`` (broker id -> rack) alternating by rack: the first broker of
    each rack (racks in name order, brokers in id order), then the second of each, and so on
    (Kafka's getRackAlternatedBrokerList).

        >>> rack_alternated_brokers({0: "a", 1: "a", 2: "a", 3: "b", 4: "b", 5: "c"})
        [0, 3, 5, 1, 4, 2]
    """
    by_rack: dict[str, list[int]] = {}
    for broker in sorted(racks):
        by_rack.setdefault(racks[broker], []).append(broker)
    columns = [by_rack[rack] for rack in sorted(by_rack)]
    depth = max((len(column) for column in columns), default=0)
    return [column[i] for i in range(depth) for column in columns if i < len(column)]


def _replica_index(first: int, shift: int, k: int, n: int) -> int:
    return (first + 1 + (shift + k) % (n - 1)) % n


def assign_rack_aware(
    num_partitions: int,
    replication_factor: int,
    racks: Mapping[int, str],
    start_index: int,
    replica_shift: int,
    start_partition_id: int = 0,
) -> dict[int, tuple[int, ...]]:
    """Kafka's rack-aware rule (module docstring) for partitions ``start_partition_id`` on."""
    arranged = rack_alternated_brokers(racks)
    n = len(arranged)
    num_racks = len(set(racks.values()))
    result: dict[int, tuple[int, ...]] = {}
    shift = replica_shift
    for partition in range(start_partition_id, start_partition_id + num_partitions):
        if partition > 0 and partition % n == 0:
            shift += 1
        first = (partition + start_index) % n
        leader = arranged[first]
        replicas = [leader]
        racks_used = {racks[leader]}
        brokers_used = {leader}
        k = 0
        for _ in range(replication_factor - 1):
            while True:
                broker = arranged[_replica_index(first, shift * num_racks, k, n)]
                rack = racks[broker]
                k += 1
                # Skip a rack that has a replica while another has none, and a broker that
                # has one while another has none.
                if (rack not in racks_used or len(racks_used) == num_racks) and (
                    broker not in brokers_used or len(brokers_used) == n
                ):
                    replicas.append(broker)
                    racks_used.add(rack)
                    brokers_used.add(broker)
                    break
        result[partition] = tuple(replicas)
    return result
