"""Kafka's AclAuthorizer: who may do what, answered from an in-memory copy of the ACLs.

The rules, as Kafka's (``authorizer.class.name=kafka.security.authorizer.AclAuthorizer``):

1. A principal named in ``super.users`` (``User:admin;User:broker``) may do anything.
2. The ACLs that apply to a resource are those of its literal name, of the literal wildcard
   ``*`` of its type, and of every PREFIXED pattern its name starts with.
3. No ACL applies at all: allowed only with ``allow.everyone.if.no.acl.found=true``.
4. Otherwise a matching DENY wins: an entry matches when its principal is the session's or
   ``User:*``, its host the session's address or ``*``, its operation the one asked or ALL.
5. Otherwise a matching ALLOW allows. Describe is allowed by an ALLOW of Read, Write, Delete or
   Alter; DescribeConfigs by one of AlterConfigs (Kafka's implied operations).

``authorize_by_resource_type`` (KIP-679) asks whether the operation is allowed on *some*
resource of a type: a DENY on the literal ``*`` refuses; ``allow.everyone.if.no.acl.found``
allows; otherwise some ALLOW (literal or prefixed) whose name no matching DENY covers (the same
literal name, or a DENY prefix of it) allows. Implied operations do not count there, as Kafka's.

Layout of the cache (the index is the cost of ``authorize``: the core asks for every partition
of every produce and fetch)::

    _literal   {(resource_type, name): frozenset[AccessControlEntry]}  one dict lookup each for
                                                                      the name and for "*"
    _prefixed  {(resource_type, prefix): frozenset[AccessControlEntry]}
    _prefix_lengths {resource_type: tuple of the distinct prefix lengths}: a name is looked up
               once per distinct length, not once per pattern
    _by_entry  {(entry, resource_type, pattern_type): frozenset[name]}: KIP-679's index

Threads: ``authorize`` and ``authorize_by_resource_type`` run on the broker's event loop and
never block or take a lock: they read dict entries, which writers replace whole (one
assignment each) rather than mutate, so a writer on another thread is safe too. Writers hold
``_lock``; ``acls`` takes it too, for a snapshot. A change costs a copy of the names that
share one of its entries (cheap for one resource); ``load`` builds a whole cache in one pass,
so a broker's startup with many ACLs is linear, not quadratic.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence

import structlog

from minikafka.broker.config import ACL_AUTHORIZER_CLASS, BrokerConfig
from minikafka.broker.security.acl import (
    WILDCARD_RESOURCE,
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    Action,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from minikafka.broker.security.principal import KafkaPrincipal, Session
from minikafka.proto.acl import WILDCARD_HOST, WILDCARD_PRINCIPAL, AclBindingFilter, kafka_name

__all__ = ["AclAuthorizer", "authorizer_from_config", "parse_super_users"]

# Kafka's implied operations: an ALLOW of any operation on the right grants the one on the left.
_IMPLIED_BY: Mapping[AclOperation, tuple[AclOperation, ...]] = {
    AclOperation.DESCRIBE: (
        AclOperation.DESCRIBE,
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.DELETE,
        AclOperation.ALTER,
    ),
    AclOperation.DESCRIBE_CONFIGS: (AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS),
}

# Kafka's audit logger's name, so a reader who grepped Kafka's logs finds the same lines.
_audit = structlog.get_logger("kafka.authorizer.logger")
_log = structlog.get_logger(__name__)

_NO_ENTRIES: frozenset[AccessControlEntry] = frozenset()
_NO_NAMES: frozenset[str] = frozenset()


def parse_super_users(text: str) -> frozenset[KafkaPrincipal]:
    """``super.users``: principals separated by ``;`` (``User:admin;User:broker``).

    ValueError naming the bad entry when one is not ``<type>:<name>``.
    """
    return frozenset(KafkaPrincipal.parse(part.strip()) for part in text.split(";") if part.strip())


def _resource_text(resource_type: ResourceType, pattern_type: PatternType, name: str) -> str:
    # Kafka's audit line names a resource "Topic:LITERAL:orders".
    return f"{kafka_name(resource_type)}:{pattern_type.name}:{name}"


def authorizer_from_config(config: BrokerConfig) -> AclAuthorizer | None:
    """The authorizer ``authorizer.class.name`` asks for: None when it is empty."""
    if config.authorizer_class_name != ACL_AUTHORIZER_CLASS:
        return None
    return AclAuthorizer(
        parse_super_users(";".join(config.super_users)),
        allow_everyone_if_no_acl_found=config.allow_everyone_if_no_acl_found,
    )


class AclAuthorizer:
    """The ACLs of the cluster, in memory, and Kafka's rules over them (module docstring).

    It knows nothing of ZooKeeper: the broker loads it (``load``) from the ACL store at startup
    and sets one resource's ACLs (``set_acls``) for each change notification and each write.
    """

    def __init__(
        self,
        super_users: Iterable[KafkaPrincipal] = (),
        *,
        allow_everyone_if_no_acl_found: bool = False,
    ) -> None:
        self.super_users = frozenset(str(p) for p in super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self._lock = threading.Lock()
        self._literal: dict[tuple[ResourceType, str], frozenset[AccessControlEntry]] = {}
        self._prefixed: dict[tuple[ResourceType, str], frozenset[AccessControlEntry]] = {}
        self._prefix_lengths: dict[ResourceType, tuple[int, ...]] = {}
        self._by_entry: dict[
            tuple[AccessControlEntry, ResourceType, PatternType], frozenset[str]
        ] = {}

    # -- the cache ---------------------------------------------------------------------------

    def load(self, acls: Mapping[ResourcePattern, Iterable[AccessControlEntry]]) -> None:
        """Replace every ACL with ``acls`` (the store's whole content, at startup)."""
        literal: dict[tuple[ResourceType, str], frozenset[AccessControlEntry]] = {}
        prefixed: dict[tuple[ResourceType, str], frozenset[AccessControlEntry]] = {}
        by_entry: dict[tuple[AccessControlEntry, ResourceType, PatternType], set[str]] = {}
        for pattern, entries in acls.items():
            _check_storable(pattern)
            frozen = frozenset(entries)
            if not frozen:
                continue
            table = literal if pattern.pattern_type is PatternType.LITERAL else prefixed
            table[(pattern.resource_type, pattern.name)] = frozen
            for entry in frozen:
                index = (entry, pattern.resource_type, pattern.pattern_type)
                by_entry.setdefault(index, set()).add(pattern.name)
        lengths: dict[ResourceType, set[int]] = {}
        for rtype, name in prefixed:
            lengths.setdefault(rtype, set()).add(len(name))
        with self._lock:
            self._literal = literal
            self._prefixed = prefixed
            self._prefix_lengths = {rtype: tuple(sorted(ls)) for rtype, ls in lengths.items()}
            self._by_entry = {index: frozenset(names) for index, names in by_entry.items()}

    def set_acls(self, pattern: ResourcePattern, entries: Iterable[AccessControlEntry]) -> None:
        """Make ``entries`` the ACLs of ``pattern`` (none: the pattern has no ACLs left)."""
        new = frozenset(entries)
        _check_storable(pattern)
        key = (pattern.resource_type, pattern.name)
        with self._lock:
            literal = pattern.pattern_type is PatternType.LITERAL
            table = self._literal if literal else self._prefixed  # a load may have replaced them
            old = table.get(key, _NO_ENTRIES)
            if old == new:
                return
            for entry in new - old:
                index = (entry, pattern.resource_type, pattern.pattern_type)
                self._by_entry[index] = self._by_entry.get(index, _NO_NAMES) | {pattern.name}
            for entry in old - new:
                index = (entry, pattern.resource_type, pattern.pattern_type)
                names = self._by_entry.get(index, _NO_NAMES) - {pattern.name}
                if names:
                    self._by_entry[index] = names
                else:
                    self._by_entry.pop(index, None)
            if new:
                table[key] = new
            else:
                table.pop(key, None)
            if pattern.pattern_type is PatternType.PREFIXED and (not old or not new):
                self._prefix_lengths[pattern.resource_type] = tuple(
                    sorted(
                        {
                            len(name)
                            for rtype, name in self._prefixed
                            if rtype == pattern.resource_type
                        }
                    )
                )

    def acls_of(self, pattern: ResourcePattern) -> frozenset[AccessControlEntry]:
        """The ACLs stored on exactly ``pattern``."""
        table = self._literal if pattern.pattern_type is PatternType.LITERAL else self._prefixed
        return table.get((pattern.resource_type, pattern.name), _NO_ENTRIES)

    def patterns(self) -> list[ResourcePattern]:
        """Every pattern that has ACLs."""
        with self._lock:
            return [
                ResourcePattern(rtype, name, PatternType.LITERAL) for rtype, name in self._literal
            ] + [
                ResourcePattern(rtype, name, PatternType.PREFIXED) for rtype, name in self._prefixed
            ]

    def acls(self, binding_filter: AclBindingFilter) -> list[AclBinding]:
        """Every binding the filter matches (DescribeAcls), in a stable order."""
        with self._lock:
            tables = (
                (PatternType.LITERAL, list(self._literal.items())),
                (PatternType.PREFIXED, list(self._prefixed.items())),
            )
        found = []
        for pattern_type, items in tables:
            for (rtype, name), entries in items:
                pattern = ResourcePattern(rtype, name, pattern_type)
                if not binding_filter.pattern_filter.matches(pattern):
                    continue
                for entry in entries:
                    if binding_filter.entry_filter.matches(entry):
                        found.append(AclBinding(pattern, entry))
        found.sort(key=_binding_order)
        return found

    # -- the Authorizer protocol -------------------------------------------------------------

    def authorize(self, session: Session, actions: Sequence[Action]) -> list[bool]:
        principal = str(session.principal)
        if principal in self.super_users:
            for action in actions:
                if action.log_if_allowed:
                    _audit.debug(
                        "authorization_allowed",
                        super_user=True,
                        **self._audit_fields(session, action),
                    )
            return [True] * len(actions)
        return [self._authorize_action(session, principal, action) for action in actions]

    def authorize_by_resource_type(
        self, session: Session, operation: AclOperation, resource_type: ResourceType
    ) -> bool:
        if resource_type in (ResourceType.ANY, ResourceType.UNKNOWN) or operation in (
            AclOperation.ANY,
            AclOperation.UNKNOWN,
        ):
            raise ValueError(
                f"authorize_by_resource_type needs a concrete type and operation, "
                f"not {resource_type.name} / {operation.name}"
            )
        principal = str(session.principal)
        if principal in self.super_users:
            return True
        host = session.client_host
        deny_literals = self._names(
            principal, host, operation, AclPermissionType.DENY, resource_type, PatternType.LITERAL
        )
        if any(WILDCARD_RESOURCE in names for names in deny_literals):
            return self._audit_type(session, operation, resource_type, allowed=False)
        if self.allow_everyone_if_no_acl_found:
            return self._audit_type(session, operation, resource_type, allowed=True)
        deny_prefixes = self._names(
            principal, host, operation, AclPermissionType.DENY, resource_type, PatternType.PREFIXED
        )
        allow_literals = self._names(
            principal, host, operation, AclPermissionType.ALLOW, resource_type, PatternType.LITERAL
        )
        allow_prefixes = self._names(
            principal, host, operation, AclPermissionType.ALLOW, resource_type, PatternType.PREFIXED
        )

        def denied_by_prefix(name: str) -> bool:
            return any(
                name[:i] in names for names in deny_prefixes for i in range(1, len(name) + 1)
            )

        allowed = any(
            not denied_by_prefix(prefix) for names in allow_prefixes for prefix in names
        ) or any(
            literal == WILDCARD_RESOURCE
            or (
                not any(literal in names for names in deny_literals)
                and not denied_by_prefix(literal)
            )
            for names in allow_literals
            for literal in names
        )
        return self._audit_type(session, operation, resource_type, allowed=allowed)

    # -- matching ----------------------------------------------------------------------------

    def _authorize_action(self, session: Session, principal: str, action: Action) -> bool:
        rtype, name = action.resource_type, action.name
        literal = self._literal.get((rtype, name), _NO_ENTRIES)
        wildcard = self._literal.get((rtype, WILDCARD_RESOURCE), _NO_ENTRIES)
        prefixed: list[frozenset[AccessControlEntry]] = []
        for length in self._prefix_lengths.get(rtype, ()):
            if length > len(name):
                break
            entries = self._prefixed.get((rtype, name[:length]))
            if entries is not None:
                prefixed.append(entries)
        if not literal and not wildcard and not prefixed:
            allowed = self.allow_everyone_if_no_acl_found
        else:
            groups = (literal, wildcard, *prefixed)
            host = session.client_host
            allowed = not _any_match(
                groups, principal, host, (action.operation,), AclPermissionType.DENY
            ) and _any_match(
                groups,
                principal,
                host,
                _IMPLIED_BY.get(action.operation, (action.operation,)),
                AclPermissionType.ALLOW,
            )
        if allowed:
            if action.log_if_allowed:
                _audit.debug("authorization_allowed", **self._audit_fields(session, action))
        elif action.log_if_denied:
            _audit.info("authorization_denied", **self._audit_fields(session, action))
        return allowed

    @staticmethod
    def _audit_fields(session: Session, action: Action) -> dict[str, str]:
        return {
            "principal": str(session.principal),
            "operation": kafka_name(action.operation),
            "host": session.client_host,
            "resource": _resource_text(action.resource_type, PatternType.LITERAL, action.name),
        }

    def _names(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        permission: AclPermissionType,
        resource_type: ResourceType,
        pattern_type: PatternType,
    ) -> list[frozenset[str]]:
        found = []
        for p in {principal, WILDCARD_PRINCIPAL}:
            for h in {host, WILDCARD_HOST}:
                for op in {operation, AclOperation.ALL}:
                    names = self._by_entry.get(
                        (AccessControlEntry(p, h, op, permission), resource_type, pattern_type)
                    )
                    if names:
                        found.append(names)
        return found

    @staticmethod
    def _audit_type(
        session: Session, operation: AclOperation, resource_type: ResourceType, *, allowed: bool
    ) -> bool:
        fields = {
            "principal": str(session.principal),
            "operation": kafka_name(operation),
            "host": session.client_host,
            "resource": f"{kafka_name(resource_type)}:UNKNOWN:NONE",
        }
        if allowed:
            _audit.debug("authorization_allowed", **fields)
        else:
            _audit.info("authorization_denied", **fields)
        return allowed


def _check_storable(pattern: ResourcePattern) -> None:
    if pattern.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise ValueError(f"ACLs are stored on LITERAL or PREFIXED patterns, not {pattern}")


def _any_match(
    groups: Iterable[frozenset[AccessControlEntry]],
    principal: str,
    host: str,
    operations: tuple[AclOperation, ...],
    permission: AclPermissionType,
) -> bool:
    for entries in groups:
        for entry in entries:
            if (
                entry.permission_type is permission
                and (entry.principal == principal or entry.principal == WILDCARD_PRINCIPAL)
                and (entry.host == host or entry.host == WILDCARD_HOST)
                and (entry.operation is AclOperation.ALL or entry.operation in operations)
            ):
                return True
    return False


def _binding_order(binding: AclBinding) -> tuple[int, int, str, str, str, int, int]:
    p, e = binding.pattern, binding.entry
    return (
        p.resource_type,
        p.pattern_type,
        p.name,
        e.principal,
        e.host,
        e.operation,
        e.permission_type,
    )
