"""The Authorizer seam, and the ACL values it speaks of (defined in ``proto.acl``).

The core asks an ``Authorizer`` before it acts, once per API, for every resource the request
names; ``None`` in its place (``authorizer.class.name`` unset) means every request is allowed,
as Kafka without an authorizer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from minikafka.broker.security.principal import Session
from minikafka.proto.acl import (
    CLUSTER_NAME,
    WILDCARD_RESOURCE,
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)

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
