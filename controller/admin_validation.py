"""CreateTopics and CreatePartitions checked as Kafka's controller checks them, before anything
is written to ZooKeeper.

Each function answers the replicas of the partitions to create, or raises the KafkaError a
client gets for the request (its code and Kafka's message). The controller's event thread calls
them with what it knows (existing topics, registered and live brokers) and writes the result:

    assignment = validate_create_topic(new_topic, existing, registered, live,
                                       default_num_partitions=3, default_replication_factor=2)

Pure functions over their arguments: safe from any thread.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from minikafka.controller import topics
from minikafka.controller.errors import TopicAlreadyExistsError
from minikafka.proto.common import INTERNAL_TOPICS
from minikafka.proto.errors import ErrorCode, error_for_code

if TYPE_CHECKING:
    from minikafka.controller.controller import NewPartitions, NewTopic

__all__ = ["validate_create_partitions", "validate_create_topic"]


def validate_create_topic(
    new_topic: NewTopic,
    existing_topics: Collection[str],
    registered_brokers: Collection[int],
    live_broker_ids: Iterable[int],
    *,
    default_num_partitions: int,
    default_replication_factor: int,
    racks: Mapping[int, str] | None = None,
) -> dict[int, tuple[int, ...]]:
    """The replicas of each partition of ``new_topic``: its own assignment, checked against the
    registered brokers, or Kafka's rule over the live ones with the broker defaults for -1
    (rack-aware when every live broker has one of ``racks``, topics.py)."""
    name = new_topic.name
    topics.validate_topic_name(name)
    if name in existing_topics:
        raise TopicAlreadyExistsError(f"Topic '{name}' already exists.")
    topics.validate_new_topic(name, existing_topics)
    live = sorted(live_broker_ids)
    if new_topic.assignments:
        if new_topic.num_partitions != -1 or new_topic.replication_factor != -1:
            raise error_for_code(
                ErrorCode.INVALID_REQUEST,
                "Both numPartitions or replicationFactor and replicasAssignments were set. "
                "Both cannot be used at the same time.",
            )
        return topics.validate_replica_assignment(new_topic.assignments, registered_brokers)
    num_partitions = new_topic.num_partitions
    if num_partitions == -1:
        num_partitions = default_num_partitions
    replication_factor = new_topic.replication_factor
    if replication_factor == -1:
        replication_factor = default_replication_factor
    if num_partitions < 1:
        raise error_for_code(
            ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0."
        )
    if replication_factor < 1:
        raise error_for_code(
            ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0."
        )
    if replication_factor > len(live):
        raise error_for_code(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"Replication factor: {replication_factor} larger than available brokers: {len(live)}.",
        )
    return topics.assign_replicas(num_partitions, replication_factor, live, racks=racks)


def validate_create_partitions(
    topic: str,
    current: Mapping[int, Sequence[int]] | None,
    request: NewPartitions,
    registered_brokers: Collection[int],
    live_broker_ids: Iterable[int],
    *,
    queued_for_deletion: bool,
    racks: Mapping[int, str] | None = None,
) -> dict[int, tuple[int, ...]]:
    """The replicas of each partition ``request`` adds to ``topic`` (``current``: its
    assignment, None when it does not exist): the request's own, or the topic's rule
    continued over the live brokers.

    An internal topic keeps its partition count: the group coordinators hash group ids over it,
    so a partition added to ``__consumer_offsets`` would send most groups to a partition that
    holds none of their offsets. Kafka 3.9's broker takes the request (its kafka-topics tool
    refuses it); refused here, INVALID_REQUEST as for creating or deleting an internal topic,
    so every client and both front doors get the same answer."""
    if topic in INTERNAL_TOPICS:
        raise error_for_code(
            ErrorCode.INVALID_REQUEST,
            f"Topic {topic} is a kafka internal topic: its number of partitions cannot be changed.",
        )
    if current is None:
        raise error_for_code(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{topic}' not found.")
    if queued_for_deletion:
        raise error_for_code(
            ErrorCode.INVALID_TOPIC_EXCEPTION, f"The topic '{topic}' is queued for deletion."
        )
    if request.count < len(current):
        raise error_for_code(
            ErrorCode.INVALID_PARTITIONS,
            f"Topic currently has {len(current)} partitions, which is higher than the "
            f"requested {request.count}.",
        )
    if request.count == len(current):
        raise error_for_code(
            ErrorCode.INVALID_PARTITIONS, f"Topic already has {len(current)} partitions."
        )
    rf = len(current[0]) if 0 in current else len(next(iter(current.values())))
    first_new = len(current)
    if request.assignments:
        if len(request.assignments) != request.count - len(current):
            raise error_for_code(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Increasing the number of partitions by {request.count - len(current)} "
                f"but {len(request.assignments)} assignments provided.",
            )
        added = topics.validate_replica_assignment(
            {first_new + i: r for i, r in enumerate(request.assignments)},
            registered_brokers,
            first_partition=first_new,
        )
        if any(len(r) != rf for r in added.values()):
            raise error_for_code(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Inconsistent replication factor between partitions, partition 0 has "
                f"{rf} while the new partitions have another.",
            )
        return added
    live = sorted(live_broker_ids)
    if rf > len(live):
        raise error_for_code(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"Replication factor: {rf} larger than available brokers: {len(live)}.",
        )
    return topics.assign_new_partitions(current, request.count, live, racks=racks)
