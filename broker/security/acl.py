"""Kafka's ACL values and the Authorizer seam.

The codes are Kafka's wire codes (CreateAcls, DescribeAcls, DeleteAcls and the
``authorized_operations`` bit sets carry them), so ``int(AclOperation.READ)`` is what goes on
the wire and ``1 << AclOperation.READ`` is its bit in an ``authorized_operations`` field.

An ACL is a binding of a resource pattern (type, name, LITERAL or PREFIXED; the literal name
``*`` matches every resource of the type) to an access control entry (principal, host,
operation, ALLOW or DENY)::

    AclBinding(
        ResourcePattern(ResourceType.TOPIC, "orders", PatternType.LITERAL),
        AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW),
    )

The core asks an ``Authorizer`` before it acts, once per API, for every resource the request
names; ``None`` in its place (``authorizer.class.name`` unset) means every request is allowed,
as Kafka without an authorizer.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from minikafka.broker.security.principal import Session

__all__ = [
    "CLUSTER_NAME",
    "WILDCARD_RESOURCE",
    "AccessControlEntry",
    "AclBinding",
    "AclOperation",
    "AclPermissionType",
    "Action",
    "Authorizer",
    "PatternType",
    "ResourcePattern",
    "ResourceType",
]

WILDCARD_RESOURCE = "*"  # a LITERAL pattern named "*" matches every resource of its type
CLUSTER_NAME = "kafka-cluster"  # the one Cluster resource's name


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1  # filters only
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1  # filters only: either pattern type, matched literally
    MATCH = 2  # filters only: every pattern that would match the filter's name
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1  # filters only
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1  # filters only
    DENY = 2
    ALLOW = 3


@dataclass(frozen=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL


@dataclass(frozen=True)
class AccessControlEntry:
    principal: str  # "User:alice", or "User:*" for every principal
    host: str  # an IP address, or "*" for every host
    operation: AclOperation
    permission_type: AclPermissionType


@dataclass(frozen=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry


@dataclass(frozen=True)
class Action:
    """One thing a request wants to do: ``operation`` on the resource named literally.

    ``log_if_allowed`` / ``log_if_denied`` follow Kafka's audit rules: a denial the client
    asked for explicitly is logged, one the broker only probed (Metadata filtering topics the
    principal may not Describe, authorized_operations) is not.
    """

    operation: AclOperation
    resource_type: ResourceType
    name: str
    log_if_allowed: bool = False
    log_if_denied: bool = True


class Authorizer(Protocol):
    """Kafka's Authorizer, as the core calls it. Called on the broker's event loop; never
    blocks (it answers from its cache of the ACLs)."""

    def authorize(self, session: Session, actions: Sequence[Action]) -> list[bool]:
        """One answer per action, in order: True when allowed."""
        ...

    def authorize_by_resource_type(
        self, session: Session, operation: AclOperation, resource_type: ResourceType
    ) -> bool:
        """Whether ``operation`` is allowed on at least one resource of the type (KIP-679:
        an idempotent producer needs Write on some topic, or IdempotentWrite on the
        cluster)."""
        ...
