"""DescribeAcls, CreateAcls and DeleteAcls, for both front doors (Kafka's AclApis).

    api = AclApi(authorizer, store)        # both None: no authorizer.class.name
    await api.describe_acls(session, binding_filter)    -> DescribeAclsResult
    await api.create_acls(session, [binding, ...])      -> [AclError, ...]
    await api.delete_acls(session, [binding_filter, ...]) -> [DeleteAclsResult, ...]

Each door turns its wire values into bindings and filters with ``binding_from_wire`` and
``filter_from_wire`` (a code this broker does not know becomes UNKNOWN, which is refused here,
once). The rules, as Kafka's:

- The caller needs Describe (DescribeAcls) or Alter (CreateAcls, DeleteAcls) on the Cluster:
  CLUSTER_AUTHORIZATION_FAILED otherwise, for the whole request.
- No authorizer configured: SECURITY_DISABLED "No Authorizer is configured.".
- A binding is INVALID_REQUEST when an element is UNKNOWN or a filter value (ANY, MATCH), its
  name is empty or holds "/" (a znode name), a Cluster resource is not named
  ``kafka-cluster``, the principal is not ``<type>:<name>``, or a wildcard is not whole
  (``User:*`` and host ``*`` match everything; ``User:al*`` and ``10.0.*`` match nothing, so
  they are refused rather than stored). A filter is INVALID_REQUEST when an element is UNKNOWN.

Lives on the broker's event loop.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from minikafka.broker.security.acl import Action, Authorizer
from minikafka.broker.security.principal import Session
from minikafka.proto.acl import (
    CLUSTER_NAME,
    WILDCARD_HOST,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from minikafka.proto.errors import ErrorCode

__all__ = [
    "NO_AUTHORIZER",
    "AclApi",
    "AclError",
    "AclStore",
    "DeleteAclsResult",
    "DeletedAcl",
    "DescribeAclsResult",
    "binding_from_wire",
    "filter_from_wire",
    "validate_binding",
]

NO_AUTHORIZER = "No Authorizer is configured."


@dataclass(frozen=True)
class AclError:
    """The outcome of one creation, or of one filter's deletion: NONE or why not."""

    error_code: ErrorCode = ErrorCode.NONE
    error_message: str | None = None


_OK = AclError()


@dataclass(frozen=True)
class DescribeAclsResult:
    error: AclError
    bindings: tuple[AclBinding, ...] = ()


@dataclass(frozen=True)
class DeletedAcl:
    binding: AclBinding
    error: AclError = _OK


@dataclass(frozen=True)
class DeleteAclsResult:
    error: AclError
    deleted: tuple[DeletedAcl, ...] = ()


class AclStore(Protocol):
    """Where ACLs are kept: the broker's AclManager (broker/server/acl_manager.py)."""

    def acls(self, binding_filter: AclBindingFilter) -> list[AclBinding]: ...

    async def create_acls(self, bindings: Sequence[AclBinding]) -> list[Exception | None]: ...

    async def delete_acls(
        self, filters: Sequence[AclBindingFilter]
    ) -> list[list[tuple[AclBinding, Exception | None]]]: ...


_E = TypeVar("_E", ResourceType, PatternType, AclOperation, AclPermissionType)


def _code(enum_type: type[_E], value: int) -> _E:
    try:
        return enum_type(value)
    except ValueError:
        return enum_type(0)  # UNKNOWN: a code from a newer Kafka


def binding_from_wire(
    resource_type: int,
    name: str,
    pattern_type: int,
    principal: str,
    host: str,
    operation: int,
    permission_type: int,
) -> AclBinding:
    return AclBinding(
        ResourcePattern(_code(ResourceType, resource_type), name, _code(PatternType, pattern_type)),
        AccessControlEntry(
            principal,
            host,
            _code(AclOperation, operation),
            _code(AclPermissionType, permission_type),
        ),
    )


def filter_from_wire(
    resource_type: int,
    name: str | None,
    pattern_type: int,
    principal: str | None,
    host: str | None,
    operation: int,
    permission_type: int,
) -> AclBindingFilter:
    return AclBindingFilter(
        ResourcePatternFilter(
            _code(ResourceType, resource_type), name, _code(PatternType, pattern_type)
        ),
        AccessControlEntryFilter(
            principal,
            host,
            _code(AclOperation, operation),
            _code(AclPermissionType, permission_type),
        ),
    )


# Values a filter may hold and a stored binding may not (IntEnums of different types compare
# equal by number, so each field is checked against its own type's).
_NOT_STORABLE: tuple[tuple[type[enum.IntEnum], frozenset[int]], ...] = (
    (ResourceType, frozenset({ResourceType.UNKNOWN, ResourceType.ANY})),
    (PatternType, frozenset({PatternType.UNKNOWN, PatternType.ANY, PatternType.MATCH})),
    (AclOperation, frozenset({AclOperation.UNKNOWN, AclOperation.ANY})),
    (AclPermissionType, frozenset({AclPermissionType.UNKNOWN, AclPermissionType.ANY})),
)


def validate_binding(binding: AclBinding) -> str | None:
    """Why ``binding`` cannot be stored (module docstring), or None."""
    pattern, entry = binding.pattern, binding.entry
    values = (pattern.resource_type, pattern.pattern_type, entry.operation, entry.permission_type)
    for value, (enum_type, refused) in zip(values, _NOT_STORABLE, strict=True):
        if value in refused:
            return f"ACL binding has {enum_type.__name__} {value.name}, which is not storable"
    if not pattern.name:
        return "Invalid empty resource name"
    if "/" in pattern.name:
        return f"ACL binding contains invalid resource name: {pattern.name}"
    if pattern.resource_type is ResourceType.CLUSTER and pattern.name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    principal_type, sep, principal_name = entry.principal.partition(":")
    if not sep or not principal_type or not principal_name:
        return f"expected a string in format principalType:principalName but got {entry.principal}"
    if "*" in entry.principal and principal_name != "*":
        return f"Invalid principal {entry.principal}: a wildcard must be the whole name (User:*)"
    if not entry.host:
        return "Invalid empty host (* for every host)"
    if "*" in entry.host and entry.host != WILDCARD_HOST:
        return f"Invalid host {entry.host}: a wildcard must be the whole host (*)"
    return None


class AclApi:
    """See the module docstring. ``authorizer`` answers who may manage ACLs; ``store`` keeps
    them (both None, or both set)."""

    def __init__(self, authorizer: Authorizer | None, store: AclStore | None) -> None:
        self._authorizer = authorizer
        self._store = store

    def _cluster_allowed(self, session: Session, operation: AclOperation) -> bool:
        if self._authorizer is None:
            return True
        action = Action(operation, ResourceType.CLUSTER, CLUSTER_NAME)
        return self._authorizer.authorize(session, [action])[0]

    @staticmethod
    def _denied(operation: AclOperation) -> AclError:
        return AclError(
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            f"Cluster authorization failed: {operation.name} on the Cluster is required",
        )

    async def describe_acls(
        self, session: Session, binding_filter: AclBindingFilter
    ) -> DescribeAclsResult:
        if not self._cluster_allowed(session, AclOperation.DESCRIBE):
            return DescribeAclsResult(self._denied(AclOperation.DESCRIBE))
        if self._store is None:
            return DescribeAclsResult(AclError(ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER))
        if binding_filter.is_unknown():
            return DescribeAclsResult(
                AclError(ErrorCode.INVALID_REQUEST, "The filter contains UNKNOWN elements")
            )
        return DescribeAclsResult(_OK, tuple(self._store.acls(binding_filter)))

    async def create_acls(self, session: Session, bindings: Sequence[AclBinding]) -> list[AclError]:
        if not self._cluster_allowed(session, AclOperation.ALTER):
            return [self._denied(AclOperation.ALTER)] * len(bindings)
        if self._store is None:
            return [AclError(ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)] * len(bindings)
        results: list[AclError] = [_OK] * len(bindings)
        valid: list[int] = []
        for i, binding in enumerate(bindings):
            reason = validate_binding(binding)
            if reason is None:
                valid.append(i)
            else:
                results[i] = AclError(ErrorCode.INVALID_REQUEST, f"Failed to create ACL: {reason}")
        written = await self._store.create_acls([bindings[i] for i in valid])
        for i, error in zip(valid, written, strict=True):
            if error is not None:
                results[i] = _store_error(error)
        return results

    async def delete_acls(
        self, session: Session, filters: Sequence[AclBindingFilter]
    ) -> list[DeleteAclsResult]:
        if not self._cluster_allowed(session, AclOperation.ALTER):
            return [DeleteAclsResult(self._denied(AclOperation.ALTER))] * len(filters)
        if self._store is None:
            error = AclError(ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)
            return [DeleteAclsResult(error)] * len(filters)
        results = [_OK_DELETE] * len(filters)
        known = [i for i, f in enumerate(filters) if not f.is_unknown()]
        for i in set(range(len(filters))) - set(known):
            results[i] = DeleteAclsResult(
                AclError(ErrorCode.INVALID_REQUEST, "The filter contains UNKNOWN elements")
            )
        deleted = await self._store.delete_acls([filters[i] for i in known])
        for i, matches in zip(known, deleted, strict=True):
            results[i] = DeleteAclsResult(
                _OK,
                tuple(
                    DeletedAcl(binding, _OK if error is None else _store_error(error))
                    for binding, error in matches
                ),
            )
        return results


_OK_DELETE = DeleteAclsResult(_OK)


def _store_error(error: Exception) -> AclError:
    # ZooKeeper away or too many conflicting writers: Kafka wraps it as an ApiException,
    # which goes on the wire as UNKNOWN_SERVER_ERROR with its message.
    return AclError(ErrorCode.UNKNOWN_SERVER_ERROR, str(error) or type(error).__name__)
