"""Errors of the controller package.

Where Kafka has an error code for the situation, the error is proto.errors' class for that code,
so the server layer turns it into the same code on the wire. The rest are ZooKeeper-state errors
that never reach a client as such; they tell the caller to re-read or to give up its role.

    KafkaError (proto.errors)
     ├── InvalidTopicError             INVALID_TOPIC_EXCEPTION (17)  illegal or colliding topic name
     ├── TopicAlreadyExistsError       TOPIC_ALREADY_EXISTS (36)     /brokers/topics/<t> exists
     ├── InvalidPartitionsError        INVALID_PARTITIONS (37)       fewer than 1 partition
     ├── InvalidReplicationFactorError INVALID_REPLICATION_FACTOR (38) RF < 1 or > live brokers
     ├── UnknownTopicOrPartitionError  UNKNOWN_TOPIC_OR_PARTITION (3) znode of the topic missing
     └── ControllerMovedError          NOT_CONTROLLER (41)           /controller_epoch moved on:
                                                                     another broker is controller
    ZkStoreError
     ├── ZNodeExistsError                 a znode to create is already there
     │    ├── BrokerIdAlreadyRegisteredError  /brokers/ids/<id>, held by another live session
     │    └── ElectionInProgressError         /admin/preferred_replica_election
     └── ZkDataError                      a znode's bytes are not the JSON its layout says

A conditional write that lost a race raises proto.cluster_state's BadZNodeVersionError (re-read,
decide again): a partition leader's ISR update catches it too, and imports nothing of here.
"""

from __future__ import annotations

from typing import ClassVar

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


class ControllerMovedError(KafkaError):
    """This broker acted as controller, but /controller_epoch changed under it: it is a zombie."""

    code: ClassVar[ErrorCode] = ErrorCode.NOT_CONTROLLER


class ZkStoreError(Exception):
    """ZooKeeper holds something the store cannot accept; no Kafka error code applies."""


class ZNodeExistsError(ZkStoreError):
    def __init__(self, path: str, message: str = "") -> None:
        super().__init__(message or f"{path} already exists")
        self.path = path


class BrokerIdAlreadyRegisteredError(ZNodeExistsError):
    """``/brokers/ids/<id>`` is held by another session: ``owner_session`` (its ephemeral owner)
    and ``endpoints`` (what that registration advertises) say whose it is, when known."""

    def __init__(
        self, broker_id: int, owner_session: int | None = None, endpoints: tuple[str, ...] = ()
    ) -> None:
        holder = "another live session"
        if owner_session is not None:
            holder = f"session 0x{owner_session:x}"
        if endpoints:
            holder += f" ({', '.join(endpoints)})"
        super().__init__(
            f"/brokers/ids/{broker_id}",
            f"broker id {broker_id} is already registered at /brokers/ids/{broker_id} "
            f"by {holder}; pick another broker.id or stop the other broker",
        )
        self.broker_id = broker_id
        self.owner_session = owner_session
        self.endpoints = endpoints


class ElectionInProgressError(ZNodeExistsError):
    def __init__(self) -> None:
        super().__init__(
            "/admin/preferred_replica_election",
            "a preferred replica election is already in progress "
            "(/admin/preferred_replica_election exists)",
        )


class ZkDataError(ZkStoreError):
    """The bytes of a znode do not decode to the layout documented for its path."""

    def __init__(self, path: str, reason: str, data: bytes) -> None:
        shown = data[:200].decode("utf-8", "replace")
        super().__init__(f"cannot decode {path}: {reason}: {shown!r}")
        self.path = path


__all__ = [
    "BrokerIdAlreadyRegisteredError",
    "ControllerMovedError",
    "ElectionInProgressError",
    "InvalidPartitionsError",
    "InvalidReplicationFactorError",
    "InvalidTopicError",
    "TopicAlreadyExistsError",
    "UnknownTopicOrPartitionError",
    "ZNodeExistsError",
    "ZkDataError",
    "ZkStoreError",
]
