"""Client quotas administration: DescribeClientQuotas and AlterClientQuotas on plain values,
with Kafka's checks and errors (ZooKeeper mode, ZkAdminManager). Both front doors call it.

An entity is a set of ``(entity type, name)`` components, the type ``user`` or ``client-id``,
the name None for the default (``<default>`` in ZooKeeper, zk/zk_data.py ``QuotaEntity``).

Alter, each entry answered by the first rule it breaks, all with INVALID_REQUEST:
an empty entity, a type given twice, an ``ip`` entity (not supported here), an unknown type;
a key given twice, a key that is no quota key (``Invalid configuration key <k>``), a byte
rate that is not a whole number (``must be a Long value``), a value that is not positive or
not finite. ``validate_only`` checks and writes nothing. A valid entry rewrites the quota keys
of its znode (a user's SCRAM keys stay) and notifies every broker (``users/<u>/clients/<c>``).

Describe: each component matches its type ``exact`` (match type 0, a name), ``default`` (1,
no name) or ``any`` (2, no name, any entity with that type); a type given twice, a match
type unknown or given the wrong arguments is INVALID_REQUEST. ``strict``: the entity has no
other types than the components'. Entities without any quota value are not listed.

Authorization, Kafka's: DescribeConfigs on the Cluster for describe (not allowed: the
response's CLUSTER_AUTHORIZATION_FAILED), AlterConfigs on the Cluster for alter (not allowed:
every entry answered CLUSTER_AUTHORIZATION_FAILED). Lives on the broker's event loop;
ZooKeeper is reached in a worker thread.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from minikafka.broker.security.acl import (
    CLUSTER_NAME,
    AclOperation,
    Action,
    Authorizer,
    ResourceType,
)
from minikafka.broker.security.principal import Session
from minikafka.proto.errors import ErrorCode, KafkaError, error_for_code
from minikafka.zk.zk_data import DEFAULT_QUOTA_ENTITY, QuotaEntity

__all__ = [
    "ClientQuotaAdmin",
    "QuotaAlterResult",
    "QuotaAlteration",
    "QuotaComponent",
    "QuotaEntry",
    "QuotaFilterComponent",
    "QuotaOp",
]

USER = "user"
CLIENT_ID = "client-id"
MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY = 0, 1, 2
_LONG_KEYS = frozenset({"producer_byte_rate", "consumer_byte_rate"})
_DOUBLE_KEYS = frozenset({"request_percentage"})
QUOTA_CONFIG_KEYS = _LONG_KEYS | _DOUBLE_KEYS


class QuotaConfigStore(Protocol):
    """The quota znodes as ZkStore reads and writes them (blocking calls)."""

    def list_quota_entities(self) -> list[QuotaEntity]: ...

    def get_quota_config(self, entity: QuotaEntity) -> dict[str, str]: ...

    def update_quota_configs(
        self, changes: Mapping[QuotaEntity, Callable[[dict[str, str]], dict[str, str]]]
    ) -> None: ...


@dataclass(frozen=True)
class QuotaComponent:
    """One part of an entity: ``entity_type`` user or client-id, ``name`` None = default."""

    entity_type: str
    name: str | None


@dataclass(frozen=True)
class QuotaOp:
    key: str
    value: float
    remove: bool = False


@dataclass(frozen=True)
class QuotaAlteration:
    entity: tuple[QuotaComponent, ...]
    ops: tuple[QuotaOp, ...]


@dataclass(frozen=True)
class QuotaAlterResult:
    entity: tuple[QuotaComponent, ...]
    error_code: ErrorCode = ErrorCode.NONE
    error_message: str | None = None


@dataclass(frozen=True)
class QuotaFilterComponent:
    entity_type: str
    match_type: int
    match: str | None = None


@dataclass(frozen=True)
class QuotaEntry:
    entity: tuple[QuotaComponent, ...]
    values: tuple[tuple[str, float], ...]


def _invalid(message: str) -> KafkaError:
    return error_for_code(ErrorCode.INVALID_REQUEST, message)


def to_quota_entity(components: Sequence[QuotaComponent]) -> QuotaEntity:
    """KafkaError (INVALID_REQUEST) when the components name no entity this broker keeps."""
    if not components:
        raise _invalid("Invalid empty client quota entity")
    names: dict[str, str] = {}
    for c in components:
        if c.entity_type in names:
            raise _invalid(f"Duplicate entity type {c.entity_type}")
        if c.entity_type == "ip":
            raise _invalid("IP quotas are not supported by this broker")
        if c.entity_type not in (USER, CLIENT_ID):
            raise _invalid(f"Unhandled client quota entity type: {c.entity_type}")
        if c.name is not None and not c.name and c.entity_type == USER:
            raise _invalid("User name must not be empty")
        names[c.entity_type] = DEFAULT_QUOTA_ENTITY if c.name is None else c.name
    return QuotaEntity(names.get(USER), names.get(CLIENT_ID))


def from_quota_entity(entity: QuotaEntity) -> tuple[QuotaComponent, ...]:
    def name(value: str) -> str | None:
        return None if value == DEFAULT_QUOTA_ENTITY else value

    parts = []
    if entity.user is not None:
        parts.append(QuotaComponent(USER, name(entity.user)))
    if entity.client_id is not None:
        parts.append(QuotaComponent(CLIENT_ID, name(entity.client_id)))
    return tuple(parts)


def format_quota_value(key: str, value: float) -> str:
    """The znode's string: a byte rate as a whole number, a percentage as a double."""
    return str(int(value)) if key in _LONG_KEYS else repr(float(value))


def _check_ops(ops: Sequence[QuotaOp]) -> None:
    seen: set[str] = set()
    for op in ops:
        if op.key in seen:
            raise _invalid(f"Duplicate quota key {op.key} not updating quota for entity")
        seen.add(op.key)
        if op.key not in QUOTA_CONFIG_KEYS:
            raise _invalid(f"Invalid configuration key {op.key}")
        if op.remove:
            continue
        if not math.isfinite(op.value) or op.value <= 0:
            raise _invalid(f"Configuration {op.key} must be a positive number")
        if op.key in _LONG_KEYS and not float(op.value).is_integer():
            raise _invalid(f"Configuration {op.key} must be a Long value")


def quota_values(config: Mapping[str, str]) -> tuple[tuple[str, float], ...]:
    values = []
    for key in sorted(QUOTA_CONFIG_KEYS & config.keys()):
        try:
            values.append((key, float(config[key])))
        except ValueError:
            continue  # a hand-written znode: the broker skips it too
    return tuple(values)


class ClientQuotaAdmin:
    def __init__(self, store: QuotaConfigStore, authorizer: Authorizer | None = None) -> None:
        self._store = store
        self._authorizer = authorizer

    def _allowed(self, session: Session | None, operation: AclOperation) -> bool:
        if self._authorizer is None or session is None:
            return True
        action = Action(operation, ResourceType.CLUSTER, CLUSTER_NAME)
        return self._authorizer.authorize(session, [action])[0]

    async def describe(
        self,
        components: Sequence[QuotaFilterComponent],
        strict: bool,
        session: Session | None = None,
    ) -> list[QuotaEntry]:
        """KafkaError for the whole request (its top-level error)."""
        if not self._allowed(session, AclOperation.DESCRIBE_CONFIGS):
            raise error_for_code(
                ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."
            )
        seen: set[str] = set()
        for c in components:
            if c.entity_type in seen:
                raise _invalid(f"Duplicate filter component entity type {c.entity_type}")
            seen.add(c.entity_type)
            if c.entity_type not in (USER, CLIENT_ID, "ip"):
                raise _invalid(f"Unhandled client quota entity type: {c.entity_type}")
            if c.match_type == MATCH_EXACT:
                if c.match is None:
                    raise _invalid("Missing match name for exact match filter component")
            elif c.match_type in (MATCH_DEFAULT, MATCH_ANY):
                if c.match is not None:
                    raise _invalid("Unexpected match name for default or any filter component")
            else:
                raise _invalid(f"Unknown match type {c.match_type}")
        return await asyncio.to_thread(self._describe, components, strict)

    def _describe(
        self, components: Sequence[QuotaFilterComponent], strict: bool
    ) -> list[QuotaEntry]:
        entries = []
        for entity in self._store.list_quota_entities():
            parts = {c.entity_type: c.name for c in from_quota_entity(entity)}
            if strict and set(parts) != {c.entity_type for c in components}:
                continue
            if not all(_matches(c, parts) for c in components):
                continue
            values = quota_values(self._store.get_quota_config(entity))
            if values:
                entries.append(QuotaEntry(from_quota_entity(entity), values))
        return entries

    async def alter(
        self,
        alterations: Sequence[QuotaAlteration],
        validate_only: bool,
        session: Session | None = None,
    ) -> list[QuotaAlterResult]:
        if not self._allowed(session, AclOperation.ALTER_CONFIGS):
            return [
                QuotaAlterResult(
                    a.entity,
                    ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                    "Cluster authorization failed.",
                )
                for a in alterations
            ]
        results: list[QuotaAlterResult] = []
        changes: dict[QuotaEntity, Callable[[dict[str, str]], dict[str, str]]] = {}
        for alteration in alterations:
            try:
                entity = to_quota_entity(alteration.entity)
                _check_ops(alteration.ops)
            except KafkaError as exc:
                results.append(QuotaAlterResult(alteration.entity, exc.code, exc.message))
                continue
            results.append(QuotaAlterResult(alteration.entity))
            changes[entity] = _applier(alteration.ops)
        if changes and not validate_only:
            await asyncio.to_thread(self._store.update_quota_configs, changes)
        return results


def _applier(ops: Sequence[QuotaOp]) -> Callable[[dict[str, str]], dict[str, str]]:
    def apply(config: dict[str, str]) -> dict[str, str]:
        for op in ops:
            if op.remove:
                config.pop(op.key, None)
            else:
                config[op.key] = format_quota_value(op.key, op.value)
        return config

    return apply


def _matches(component: QuotaFilterComponent, parts: Mapping[str, str | None]) -> bool:
    if component.entity_type not in parts:
        return False
    name = parts[component.entity_type]
    if component.match_type == MATCH_EXACT:
        return name == component.match
    if component.match_type == MATCH_DEFAULT:
        return name is None
    return True
