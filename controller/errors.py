"""Errors of the controller package: the topic errors it raises, each proto.errors' class for its
Kafka error code, so the server layer turns it into the same code on the wire.

    KafkaError (proto.errors)
     ├── InvalidTopicError             INVALID_TOPIC_EXCEPTION (17)  illegal or colliding topic name
     ├── TopicAlreadyExistsError       TOPIC_ALREADY_EXISTS (36)     /brokers/topics/<t> exists
     ├── InvalidPartitionsError        INVALID_PARTITIONS (37)       fewer than 1 partition
     ├── InvalidReplicationFactorError INVALID_REPLICATION_FACTOR (38) RF < 1 or > live brokers
     └── UnknownTopicOrPartitionError  UNKNOWN_TOPIC_OR_PARTITION (3) znode of the topic missing

ZooKeeper's own errors, and ControllerMovedError (a fenced write found another controller), are
zk.errors'.
"""

from __future__ import annotations

from minikafka.proto.errors import (
    ErrorCode,
    InvalidTopicError,
    KafkaError,
    UnknownTopicOrPartitionError,
    error_for_code,
)


def _kafka_error_class(code: ErrorCode) -> type[KafkaError]:
    # proto.errors creates the classes it does not name explicitly in a loop; fetch the very
    # class it registered for the code, so `except` clauses here and there catch the same thing.
    return type(error_for_code(code))


TopicAlreadyExistsError = _kafka_error_class(ErrorCode.TOPIC_ALREADY_EXISTS)
InvalidPartitionsError = _kafka_error_class(ErrorCode.INVALID_PARTITIONS)
InvalidReplicationFactorError = _kafka_error_class(ErrorCode.INVALID_REPLICATION_FACTOR)

__all__ = [
    "InvalidPartitionsError",
    "InvalidReplicationFactorError",
    "InvalidTopicError",
    "TopicAlreadyExistsError",
    "UnknownTopicOrPartitionError",
]
