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

(Kafka's own assignment also shifts followers by a random amount per round of partitions; this
project uses the plainer rule of its design document.)

Pure functions: safe from any thread.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable

from controller.errors import (
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    InvalidTopicError,
)

__all__ = [
    "MAX_TOPIC_NAME_LENGTH",
    "assign_replicas",
    "find_collision",
    "has_collision_chars",
    "unify_collision_chars",
    "validate_new_topic",
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


def assign_replicas(
    num_partitions: int,
    replication_factor: int,
    live_broker_ids: Iterable[int],
    *,
    start_index: int | None = None,
    rng: random.Random | None = None,
) -> dict[int, tuple[int, ...]]:
    """Assigned replicas per partition id, by the rule in the module docstring.

    ``start_index`` fixes s (taken modulo n); otherwise s is drawn from ``rng`` (or the
    ``random`` module).
    """
    brokers = sorted(set(live_broker_ids))
    if num_partitions < 1:
        raise InvalidPartitionsError(
            f"number of partitions must be at least 1, got {num_partitions}"
        )
    if replication_factor < 1:
        raise InvalidReplicationFactorError(
            f"replication factor must be at least 1, got {replication_factor}"
        )
    if replication_factor > len(brokers):
        raise InvalidReplicationFactorError(
            f"replication factor {replication_factor} is larger than the number of "
            f"available brokers ({len(brokers)})"
        )
    n = len(brokers)
    if start_index is None:
        start_index = (rng or random).randrange(n)
    return {
        i: tuple(brokers[(start_index + i + j) % n] for j in range(replication_factor))
        for i in range(num_partitions)
    }
