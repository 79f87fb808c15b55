"""Topic names and replica assignment for new topics.

Names follow Kafka's rules: 1 to 249 characters from ``[a-zA-Z0-9._-]``, and neither ``.`` nor
``..`` (they would be directory names in every log dir). Because metric names turn ``.`` into
``_``, two topics that differ only there collide; creating the second one is refused.

Assignment: with the live broker ids sorted as ``brokers`` (n of them) and a start index s,
replica j of partition i goes to ``brokers[(s + i + j) % n]``. The first replica of each
partition is its preferred leader, so leaders spread round-robin over the brokers from s. The
start index is random by default so that many small topics do not all lead on one broker.

    >>> assign_replicas(3, 2, [2, 0, 1], start_index=0)
    {0: (0, 1), 1: (1, 2), 2: (2, 0)}

(Kafka's own rack-unaware assignment also shifts followers by a random amount per round of
partitions; without racks this project uses the plainer rule of its design document.)

Racks (KIP-36): when every broker has a ``broker.rack``, Kafka's rack-aware assignment
(AdminUtils.assignReplicasToBrokersRackAware) is used instead. The brokers are ordered
alternating by rack (racks sorted by name, each rack's brokers by id), the first replica of each
partition goes round-robin over that list from a start index, and each other replica walks on
from it by a shift, skipping a broker whose rack already holds a replica while some rack holds
none, and a broker already holding one while some broker holds none. After each full round of
partitions the shift grows by one, so rounds do not repeat. Kafka's example: brokers 0..5 on
racks 1, 3, 3, 2, 2, 1 alternate as 0, 3, 1, 5, 4, 2, and from start index 0:

    >>> racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    >>> rack_alternated_brokers(racks)
    [0, 3, 1, 5, 4, 2]
    >>> assign_replicas(7, 3, racks, racks=racks, start_index=0)[6]
    (0, 4, 2)

Some brokers with a rack and others without is refused, as Kafka refuses it (its
AdminOperationException, which Kafka's ZooKeeper-mode CreateTopics answers
UNKNOWN_SERVER_ERROR): give every broker a rack, or none.

The assignment functions live in proto/replica_assignment.py, shared with the reassignment
tool's --generate (the client side imports only proto). Pure functions: safe from any thread.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence

from minikafka.controller.errors import (
    InvalidTopicError,
)
from minikafka.proto.errors import ErrorCode, KafkaError, error_for_code
from minikafka.proto.replica_assignment import assign_rack_aware as _assign_rack_aware
from minikafka.proto.replica_assignment import assign_replicas, rack_alternated_brokers
from minikafka.proto.replica_assignment import checked_brokers as _checked_brokers
from minikafka.proto.replica_assignment import is_rack_aware as _rack_aware

__all__ = [
    "MAX_TOPIC_NAME_LENGTH",
    "assign_new_partitions",
    "assign_replicas",
    "find_collision",
    "has_collision_chars",
    "rack_alternated_brokers",
    "unify_collision_chars",
    "validate_new_topic",
    "validate_replica_assignment",
    "validate_topic_name",
]

MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")


def validate_topic_name(topic: str) -> None:
    """Raise InvalidTopicError when ``topic`` cannot be a Kafka topic name."""
    if not topic:
        raise InvalidTopicError("topic name must not be empty")
    if topic in (".", ".."):
        raise InvalidTopicError(f"topic name must not be {topic!r}")
    if len(topic) > MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopicError(
            f"topic name is {len(topic)} characters long, the limit is "
            f"{MAX_TOPIC_NAME_LENGTH}: {topic!r}"
        )
    if not _LEGAL_TOPIC_NAME.fullmatch(topic):
        raise InvalidTopicError(
            f"topic name {topic!r} may only contain ASCII letters and digits, '.', '_' and '-'"
        )


def has_collision_chars(topic: str) -> bool:
    """True when the name holds '.' or '_' (worth a warning: it may collide with another)."""
    return "." in topic or "_" in topic


def unify_collision_chars(topic: str) -> str:
    return topic.replace(".", "_")


def find_collision(topic: str, existing_topics: Iterable[str]) -> str | None:
    """An existing topic, other than ``topic`` itself, whose name collides with it."""
    unified = unify_collision_chars(topic)
    for other in existing_topics:
        if other != topic and unify_collision_chars(other) == unified:
            return other
    return None


def validate_new_topic(topic: str, existing_topics: Iterable[str]) -> None:
    """Name rules plus the '.'/'_' collision check, as done before creating a topic."""
    validate_topic_name(topic)
    other = find_collision(topic, existing_topics)
    if other is not None:
        raise InvalidTopicError(f"topic {topic!r} collides with existing topic {other!r}")


def _invalid_assignment(message: str) -> KafkaError:
    return error_for_code(ErrorCode.INVALID_REPLICA_ASSIGNMENT, message)


def validate_replica_assignment(
    assignments: Mapping[int, Sequence[int]],
    registered_brokers: Collection[int],
    *,
    first_partition: int = 0,
) -> dict[int, tuple[int, ...]]:
    """Kafka's checks of an assignment given by the user; INVALID_REPLICA_ASSIGNMENT if bad.

    Partition ids must run from ``first_partition`` without gaps, every partition needs at
    least one replica, no broker twice, only registered brokers, and one replication factor.
    """
    expected = list(range(first_partition, first_partition + len(assignments)))
    if sorted(assignments) != expected:
        raise _invalid_assignment(
            f"Partitions should be a consecutive sequence from {first_partition}, "
            f"got {sorted(assignments)}"
        )
    result: dict[int, tuple[int, ...]] = {}
    for partition, given in sorted(assignments.items()):
        replicas = tuple(given)
        if not replicas:
            raise _invalid_assignment(f"Partition {partition} has no replicas")
        if len(set(replicas)) != len(replicas):
            raise _invalid_assignment(
                f"Duplicate brokers not allowed in replica assignment: {list(replicas)} "
                f"for partition {partition}"
            )
        unknown = sorted(set(replicas) - set(registered_brokers))
        if unknown:
            raise _invalid_assignment(
                f"Unknown broker(s) in replica assignment: {unknown} for partition {partition}"
            )
        result[partition] = replicas
    if len({len(r) for r in result.values()}) > 1:
        raise _invalid_assignment("All partitions should have the same number of replicas")
    return result


def assign_new_partitions(
    current: Mapping[int, Sequence[int]],
    new_count: int,
    live_broker_ids: Iterable[int],
    *,
    racks: Mapping[int, str] | None = None,
) -> dict[int, tuple[int, ...]]:
    """Replicas for partitions ``len(current)`` .. ``new_count - 1`` of an existing topic.

    The rule of ``assign_replicas`` continues where the topic started: s is the position of
    partition 0's first replica among the sorted live brokers (random when it is not live),
    and the replication factor is the topic's.

        >>> assign_new_partitions({0: (2, 3), 1: (3, 1)}, 4, [1, 2, 3])
        {2: (1, 2), 3: (2, 3)}

    Rack-aware (every broker has a rack), as Kafka's AdminZkClient adds partitions: the start
    index (and first shift) is the position among the brokers sorted by id of the first one
    whose id is at least partition 0's first replica (0 when there is none), used on the
    rack-alternated list, and the partitions are numbered from ``len(current)``.
    """
    brokers = sorted(set(live_broker_ids))
    first = current.get(0) or next(iter(current.values()))
    rf = len(first)
    if _rack_aware(brokers, racks):
        assert racks is not None
        _checked_brokers(new_count - len(current), rf, brokers)
        fixed = next((i for i, b in enumerate(brokers) if first and b >= first[0]), 0)
        return _assign_rack_aware(
            new_count - len(current), rf, {b: racks[b] for b in brokers}, fixed, fixed, len(current)
        )
    start = brokers.index(first[0]) if first and first[0] in brokers else None
    full = assign_replicas(new_count, rf, brokers, start_index=start)
    return {p: r for p, r in full.items() if p >= len(current)}
