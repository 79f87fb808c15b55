"""Errors of the zk package: what ZooKeeper's answers mean for the cluster's znodes.

A fenced write that finds another controller elected is Kafka's NOT_CONTROLLER, so the server
layer answers it with that code; the rest are ZooKeeper-state errors that never reach a client as
such: they tell the caller to re-read or to give up its role.

    KafkaError (proto.errors)
     └── ControllerMovedError          NOT_CONTROLLER (41)   /controller_epoch moved on:
                                                             another broker is controller
    ZkStoreError
     ├── ZNodeExistsError                 a znode to create is already there
     │    ├── BrokerIdAlreadyRegisteredError  /brokers/ids/<id>, held by another live session
     │    └── ElectionInProgressError         /admin/preferred_replica_election
     ├── ZkDataError                      a znode's bytes are not the JSON its layout says
     ├── ZkSecurityConfigError            the ZooKeeper client's JAAS / SASL / ACL settings are
     │                                    wrong (zk_auth): nothing was sent
     └── ZkAuthenticationError            ZooKeeper refused the SASL login (or cannot do SASL)

A conditional write that lost a race raises proto.cluster_state's BadZNodeVersionError (re-read,
decide again): a partition leader's ISR update catches it too, and imports nothing of here.
Where a znode answers for a Kafka error with a code of its own (a topic that exists, one that does
not), the store raises proto.errors' class for that code.
"""

from __future__ import annotations

from typing import ClassVar

from minikafka.proto.errors import ErrorCode, KafkaError

__all__ = [
    "BrokerIdAlreadyRegisteredError",
    "ControllerMovedError",
    "ElectionInProgressError",
    "ZNodeExistsError",
    "ZkAuthenticationError",
    "ZkDataError",
    "ZkSecurityConfigError",
    "ZkStoreError",
]


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


class ZkSecurityConfigError(ZkStoreError):
    """The JAAS file, the system properties or zookeeper.set.acl do not make a usable
    ZooKeeper login; the message is one line naming the setting, never a password."""


class ZkAuthenticationError(ZkStoreError):
    """ZooKeeper did not accept the SASL login: a wrong username or password, or a server
    without SASL. One line, never the password."""
