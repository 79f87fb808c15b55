"""Kafka's ACL values and filters, as both sides of the wire name them.

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

A filter has the shape of a binding whose fields may be left open: ANY for a type, operation,
permission or pattern type, None for a name, principal or host. PatternType.MATCH selects every
stored pattern that would apply to the filter's name (the literal name, the literal ``*``, each
PREFIXED pattern the name starts with), as ``authorize`` would gather them::

    AclBindingFilter(
        ResourcePatternFilter(ResourceType.TOPIC, "orders", PatternType.MATCH),
        AccessControlEntryFilter(None, None, AclOperation.ANY, AclPermissionType.ANY),
    )

A filter's principal and host are compared as text: ``User:*`` selects the ACLs stored for
``User:*``, not every principal's (Kafka's rule).

They live in ``proto`` because the broker (its authorizer and ACL APIs), ZooKeeper access (the
``/kafka-acl`` znodes) and the client (AdminClient, ``minikafka acls``) all speak of them.
Immutable values; safe from any thread.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TypeVar

__all__ = [
    "ANY_ENTRY",
    "CLUSTER_NAME",
    "WILDCARD_HOST",
    "WILDCARD_PRINCIPAL",
    "WILDCARD_RESOURCE",
    "AccessControlEntry",
    "AccessControlEntryFilter",
    "AclBinding",
    "AclBindingFilter",
    "AclOperation",
    "AclPermissionType",
    "PatternType",
    "ResourcePattern",
    "ResourcePatternFilter",
    "ResourceType",
    "kafka_name",
    "parse_kafka_name",
]

WILDCARD_RESOURCE = "*"  # a LITERAL pattern named "*" matches every resource of its type
CLUSTER_NAME = "kafka-cluster"  # the one Cluster resource's name
WILDCARD_PRINCIPAL = "User:*"  # an entry for every principal
WILDCARD_HOST = "*"  # an entry for every host


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
class ResourcePatternFilter:
    resource_type: ResourceType
    name: str | None
    pattern_type: PatternType

    def is_unknown(self) -> bool:
        return (
            self.resource_type is ResourceType.UNKNOWN or self.pattern_type is PatternType.UNKNOWN
        )

    def matches(self, pattern: ResourcePattern) -> bool:
        if (
            self.resource_type is not ResourceType.ANY
            and self.resource_type != pattern.resource_type
        ):
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH) and (
            self.pattern_type != pattern.pattern_type
        ):
            return False
        if self.name is None:
            return True
        if self.pattern_type in (PatternType.ANY, pattern.pattern_type):
            return self.name == pattern.name
        # MATCH against a stored pattern of the other kind: would it apply to the name?
        if pattern.pattern_type is PatternType.LITERAL:
            return pattern.name in (self.name, WILDCARD_RESOURCE)
        return self.name.startswith(pattern.name)

    def indefinite_field(self) -> str | None:
        """Why the filter may match more than one pattern (None: it names exactly one)."""
        if self.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN):
            return f"Resource type is {self.resource_type.name}."
        if self.name is None:
            return "Resource name is NULL."
        if self.pattern_type in (PatternType.MATCH, PatternType.UNKNOWN):
            return f"Resource pattern type is {self.pattern_type.name}."
        return None

    def exact_patterns(self) -> list[ResourcePattern]:
        """The stored patterns a filter with no indefinite field but ANY may name."""
        assert self.name is not None
        if self.pattern_type is PatternType.ANY:
            return [
                ResourcePattern(self.resource_type, self.name, PatternType.LITERAL),
                ResourcePattern(self.resource_type, self.name, PatternType.PREFIXED),
            ]
        return [ResourcePattern(self.resource_type, self.name, self.pattern_type)]


@dataclass(frozen=True)
class AccessControlEntryFilter:
    principal: str | None
    host: str | None
    operation: AclOperation
    permission_type: AclPermissionType

    def is_unknown(self) -> bool:
        return (
            self.operation is AclOperation.UNKNOWN
            or self.permission_type is AclPermissionType.UNKNOWN
        )

    def matches(self, entry: AccessControlEntry) -> bool:
        return (
            (self.principal is None or self.principal == entry.principal)
            and (self.host is None or self.host == entry.host)
            and (self.operation is AclOperation.ANY or self.operation == entry.operation)
            and (
                self.permission_type is AclPermissionType.ANY
                or self.permission_type == entry.permission_type
            )
        )


ANY_ENTRY = AccessControlEntryFilter(None, None, AclOperation.ANY, AclPermissionType.ANY)


@dataclass(frozen=True)
class AclBindingFilter:
    pattern_filter: ResourcePatternFilter
    entry_filter: AccessControlEntryFilter = ANY_ENTRY

    def is_unknown(self) -> bool:
        return self.pattern_filter.is_unknown() or self.entry_filter.is_unknown()

    def matches(self, binding: AclBinding) -> bool:
        return self.pattern_filter.matches(binding.pattern) and self.entry_filter.matches(
            binding.entry
        )


_NamedEnum = ResourceType | PatternType | AclOperation | AclPermissionType
_E = TypeVar("_E", ResourceType, PatternType, AclOperation, AclPermissionType)


def kafka_name(value: _NamedEnum) -> str:
    """Kafka's camel-case spelling, as ZooKeeper, the CLI and audit lines write it:
    ``Topic``, ``TransactionalId``, ``Read``, ``ClusterAction``, ``Allow``, ``Prefixed``.

    >>> kafka_name(AclOperation.IDEMPOTENT_WRITE)
    'IdempotentWrite'
    """
    return "".join(part.capitalize() for part in value.name.split("_"))


def parse_kafka_name(enum_type: type[_E], text: str) -> _E:
    """The member named ``text`` in any case, with or without underscores (Kafka's
    ``fromString`` is as lenient): ``Topic``, ``TOPIC``, ``transactional_id``,
    ``TransactionalId`` all name TRANSACTIONAL_ID / TOPIC. ValueError naming the valid names.

    >>> parse_kafka_name(AclOperation, "describeconfigs")
    <AclOperation.DESCRIBE_CONFIGS: 10>
    """
    wanted = text.replace("_", "").replace("-", "").upper()
    for member in enum_type:
        if member.name.replace("_", "") == wanted:
            return member
    names = ", ".join(kafka_name(m) for m in enum_type if m.name not in ("UNKNOWN", "ANY", "MATCH"))
    raise ValueError(f"unknown {enum_type.__name__} {text!r} (one of {names})")
