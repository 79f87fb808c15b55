"""Configs on plain values: DescribeConfigs, IncrementalAlterConfigs and AlterConfigs, for topics
and brokers (one part of TopicAdmin, broker/server/core/admin.py).

``describe_configs`` answers from ZooKeeper (``/config/topics/<t>``) and this broker's config;
``incremental_alter_configs`` writes topic overrides to ZooKeeper. Both work on any broker.
Broker resources alter the dynamic broker configs (``/config/brokers/<id>``, or ``<default>``
for an empty name; the keys of broker.config.DYNAMIC_KEYS); each write adds a
``/config/changes`` notification that every broker applies (broker/server/dynamic_config.py).
``alter_configs`` is Kafka's older AlterConfigs: the same operations applied to an empty set of
overrides, so keys it leaves out go back to their defaults.

Topic-level keys are the rows of proto/topic_config.py's table (``TOPIC_CONFIG_KEYS``; the
broker key that gives each its default in ``TOPIC_TO_BROKER_KEY``): a topic's configs are
checked by parsing them into a TopicConfig, so every door and every key has one parser and one
wording.

With an authorizer (core/authorization.py) a topic resource needs DescribeConfigs or
AlterConfigs on the topic (TOPIC_AUTHORIZATION_FAILED, asked before the topic is looked up), a
broker resource the same on the cluster (CLUSTER_AUTHORIZATION_FAILED); a refused resource is
neither read nor written.

Answers come one per resource in request order; error codes are Kafka's, messages "" for none,
numbers Kafka's (resource types, config sources, operations), so an adapter copies them.
Runs on the broker's event loop; ZooKeeper calls go through ``asyncio.to_thread``.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import structlog

from minikafka.broker.config import (
    DYNAMIC_KEYS,
    SENSITIVE_KEYS,
    BrokerConfig,
    ConfigSource,
    validate_dynamic_update,
)
from minikafka.broker.security.acl import CLUSTER_NAME, ResourceType
from minikafka.broker.security.principal import Session
from minikafka.broker.server.core._admin_base import NO_SESSION, AdminBase, duplicate_names
from minikafka.broker.server.core.authorization import denied_error
from minikafka.controller.topics import validate_topic_name
from minikafka.proto.errors import (
    ErrorCode,
    InvalidConfigError,
    InvalidRequestError,
    KafkaError,
    error_for_code,
)
from minikafka.proto.topic_config import (
    TOPIC_CONFIG_KEYS,
    TOPIC_KEY_SPECS,
    TOPIC_KEY_SYNONYMS,
    ConfigType,
    TopicConfig,
)
from minikafka.zk.zk_data import DEFAULT_BROKER_ENTITY

__all__ = [
    "TOPIC_CONFIG_KEYS",
    "TOPIC_TO_BROKER_KEY",
    "AlterConfigsResource",
    "AlterConfigsResult",
    "AlterableConfig",
    "ConfigEntry",
    "ConfigOperation",
    "ConfigResource",
    "ConfigResourceType",
    "ConfigSource",
    "ConfigSynonym",
    "ConfigsAdmin",
    "DescribeConfigsResult",
    "topic_config_entries",
    "validate_topic_configs",
]

log = structlog.get_logger(__name__)


# topic key -> the broker key whose value is the topic's default (the first of its synonyms);
# None for the keys Kafka gives no broker default (remote.storage.enable, the throttled replicas).
TOPIC_TO_BROKER_KEY: Mapping[str, str | None] = {
    key: synonyms[0] if synonyms else None for key, synonyms in TOPIC_KEY_SYNONYMS.items()
}
_TOPIC_DEFAULTS = TopicConfig().to_properties()
_LIST_KEYS = frozenset(k for k, spec in TOPIC_KEY_SPECS.items() if spec.type == ConfigType.LIST)


class ConfigResourceType(enum.IntEnum):
    """Kafka's ConfigResource.Type, the types served here. Requests carry the type as an int:
    any other number is answered INVALID_REQUEST and echoed as it came."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4


class ConfigOperation(enum.IntEnum):
    """Kafka's AlterConfigOp.OpType. Requests carry it as an int: any other number is
    INVALID_REQUEST."""

    SET = 0
    DELETE = 1  # back to the default
    APPEND = 2  # list-valued keys only
    SUBTRACT = 3  # list-valued keys only


@dataclass(frozen=True, slots=True)
class ConfigSynonym:
    """One of the values a key has at some level (Kafka's DescribeConfigs synonyms)."""

    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One key as DescribeConfigs (and CreateTopics from v5) describes it. ``value`` is None for
    a key without one. ``synonyms``: its values at every level, highest precedence first."""

    name: str
    value: str | None
    source: ConfigSource
    read_only: bool = False
    is_sensitive: bool = False
    synonyms: tuple[ConfigSynonym, ...] = ()

    @property
    def is_default(self) -> bool:
        return self.source == ConfigSource.DEFAULT_CONFIG


@dataclass(frozen=True, slots=True)
class ConfigResource:
    """A DescribeConfigs resource: ``resource_type`` is Kafka's number (ConfigResourceType),
    ``resource_name`` a topic or the broker id in decimal (or "" for this broker); no
    ``configuration_keys`` means every key."""

    resource_type: int
    resource_name: str
    configuration_keys: Sequence[str] = ()


@dataclass(frozen=True, slots=True)
class DescribeConfigsResult:
    resource_type: int
    resource_name: str
    error_code: ErrorCode = ErrorCode.NONE
    error_message: str = ""
    configs: Sequence[ConfigEntry] = ()


@dataclass(frozen=True, slots=True)
class AlterableConfig:
    """One operation on one key; ``operation`` is Kafka's number (ConfigOperation), ``value``
    None for DELETE."""

    name: str
    operation: int
    value: str | None = None


@dataclass(frozen=True, slots=True)
class AlterConfigsResource:
    resource_type: int
    resource_name: str
    configs: Sequence[AlterableConfig] = ()


@dataclass(frozen=True, slots=True)
class AlterConfigsResult:
    resource_type: int
    resource_name: str
    error_code: ErrorCode = ErrorCode.NONE
    error_message: str = ""


def validate_topic_configs(configs: Mapping[str, str]) -> None:
    """Raise InvalidConfigError (INVALID_CONFIG) unless every key is a topic key with a valid
    value."""
    for key, value in configs.items():
        if key not in TOPIC_CONFIG_KEYS:
            raise InvalidConfigError(f"Unknown topic config name: {key}")
        if value is None:
            raise InvalidConfigError(f"Null value not supported for topic config {key}")
    parsed = TopicConfig.from_properties(configs)  # each key's row: InvalidConfigError naming it
    # Kafka's LogConfig.validateValues: against Kafka's defaults for an unset key, not the
    # broker's, so setting only one of the two is checked against the other's default.
    if parsed.min_compaction_lag_ms > parsed.max_compaction_lag_ms:
        raise InvalidConfigError(
            f"conflict topic config setting min.compaction.lag.ms "
            f"({parsed.min_compaction_lag_ms}) > max.compaction.lag.ms "
            f"({parsed.max_compaction_lag_ms})"
        )


def topic_config_entries(
    config: BrokerConfig, overrides: Mapping[str, str], keys: Iterable[str]
) -> list[ConfigEntry]:
    """Every topic key (or those of ``keys``) as DescribeConfigs and CreateTopics describe it:
    the topic's override, else the broker's value, with the synonyms of both."""
    wanted = set(keys)
    broker = config.describe()
    entries = []
    for key, broker_key in sorted(TOPIC_TO_BROKER_KEY.items()):
        if wanted and key not in wanted:
            continue
        synonyms = _synonyms(config, (broker_key,)) if broker_key else ()
        if key in overrides:
            override = ConfigSynonym(key, overrides[key], ConfigSource.DYNAMIC_TOPIC_CONFIG)
            entries.append(
                ConfigEntry(
                    key,
                    overrides[key],
                    ConfigSource.DYNAMIC_TOPIC_CONFIG,
                    synonyms=(override, *synonyms),
                )
            )
        elif broker_key is None:
            entries.append(ConfigEntry(key, _TOPIC_DEFAULTS[key], ConfigSource.DEFAULT_CONFIG))
        else:
            value, source = broker.get(broker_key, (None, ConfigSource.DEFAULT_CONFIG))
            entries.append(ConfigEntry(key, value, source, synonyms=synonyms))
    return entries


_ACL_RESOURCE_TYPES: Mapping[int, ResourceType] = {
    ConfigResourceType.TOPIC: ResourceType.TOPIC,
    ConfigResourceType.BROKER: ResourceType.CLUSTER,
}


class ConfigsAdmin(AdminBase):
    """See the module docstring. Lives on the broker's event loop."""

    def _refusal(self, session: Session, api: str, kind: int, name: str) -> ErrorCode | None:
        """The error for a resource ``api`` may not act on, else None (types this broker does
        not serve are refused later, INVALID_REQUEST)."""
        resource_type = _ACL_RESOURCE_TYPES.get(kind)
        if resource_type is None:
            return None
        acl_name = name if resource_type == ResourceType.TOPIC else CLUSTER_NAME
        if self._auth.allows(session, api, resource_type, acl_name):
            return None
        return denied_error(resource_type)

    async def describe_configs(
        self, resources: Sequence[ConfigResource], *, session: Session = NO_SESSION
    ) -> list[DescribeConfigsResult]:
        results = []
        for resource in resources:
            kind, name = resource.resource_type, resource.resource_name
            refused = self._refusal(session, "DescribeConfigs", kind, name)
            if refused is not None:
                results.append(DescribeConfigsResult(kind, name, refused, _DENIED[refused]))
                continue
            results.append(await self._describe(resource))
        return results

    async def _describe(self, resource: ConfigResource) -> DescribeConfigsResult:
        kind, name = resource.resource_type, resource.resource_name
        keys = tuple(resource.configuration_keys)
        if kind == ConfigResourceType.TOPIC:
            try:
                validate_topic_name(name)
            except KafkaError as exc:
                return DescribeConfigsResult(kind, name, exc.code, exc.message)
            if await asyncio.to_thread(self._zk.get_topic, name) is None:
                return DescribeConfigsResult(
                    kind,
                    name,
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    f"Topic '{name}' does not exist.",
                )
            overrides = await asyncio.to_thread(self._zk.get_topic_config, name)
            return DescribeConfigsResult(
                kind, name, configs=topic_config_entries(self._config, overrides, keys)
            )
        if kind == ConfigResourceType.BROKER:
            config = self._config
            if name == "":  # Kafka: the cluster-wide dynamic defaults only
                return DescribeConfigsResult(
                    kind,
                    name,
                    configs=[
                        ConfigEntry(
                            key,
                            value,
                            ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
                            synonyms=(
                                ConfigSynonym(
                                    key, value, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
                                ),
                            ),
                        )
                        for key, value in sorted(config.dynamic_default.items())
                        if not keys or key in keys
                    ],
                )
            if name != str(config.broker_id):
                return DescribeConfigsResult(
                    kind,
                    name,
                    ErrorCode.INVALID_REQUEST,
                    f"Unexpected broker id, expected {config.broker_id} or empty "
                    f"string, but received {name}",
                )
            return DescribeConfigsResult(
                kind,
                name,
                configs=[
                    ConfigEntry(
                        key,
                        value,
                        source,
                        read_only=key not in DYNAMIC_KEYS,
                        is_sensitive=key in SENSITIVE_KEYS,
                        synonyms=_synonyms(config, (key,)),
                    )
                    for key, (value, source) in config.describe().items()
                    if not keys or key in keys
                ],
            )
        return DescribeConfigsResult(
            kind, name, ErrorCode.INVALID_REQUEST, f"Unsupported resource type {kind}"
        )

    async def incremental_alter_configs(
        self,
        resources: Sequence[AlterConfigsResource],
        *,
        validate_only: bool = False,
        session: Session = NO_SESSION,
    ) -> list[AlterConfigsResult]:
        return [await self._alter(r, validate_only, False, session) for r in resources]

    async def alter_configs(
        self,
        resources: Sequence[AlterConfigsResource],
        *,
        validate_only: bool = False,
        session: Session = NO_SESSION,
    ) -> list[AlterConfigsResult]:
        """Kafka's older AlterConfigs: the operations (SETs) apply to an empty set of overrides
        rather than the topic's current ones, so a topic's whole override set is replaced and
        keys left out go back to their defaults."""
        return [await self._alter(r, validate_only, True, session) for r in resources]

    async def _alter(
        self,
        resource: AlterConfigsResource,
        validate_only: bool,
        replace: bool,
        session: Session,
    ) -> AlterConfigsResult:
        kind, name = resource.resource_type, resource.resource_name
        refused = self._refusal(session, "AlterConfigs", kind, name)
        if refused is not None:
            return AlterConfigsResult(kind, name, refused, _DENIED[refused])
        try:
            if kind == ConfigResourceType.TOPIC:
                await self._alter_topic_config(resource, validate_only, replace)
            elif kind == ConfigResourceType.BROKER:
                await self._alter_broker_config(resource, validate_only, replace)
            else:
                raise InvalidRequestError(
                    "AlterConfigs is only supported for topics and brokers, but resource type "
                    f"is {_resource_type_name(kind)}"
                )
        except KafkaError as exc:
            return AlterConfigsResult(kind, name, exc.code, exc.message)
        return AlterConfigsResult(kind, name)

    async def _alter_broker_config(
        self, resource: AlterConfigsResource, validate_only: bool, replace: bool
    ) -> None:
        """Dynamic broker configs, as Kafka's ZooKeeper mode: ``/config/brokers/<id>``, or
        ``<default>`` for an empty name, and a change notification every broker acts on."""
        name = resource.resource_name
        described = f"ConfigResource(type=BROKER, name='{name}')"
        if name == "":
            entity = DEFAULT_BROKER_ENTITY
        elif name.isdigit():
            entity = str(int(name))
        else:
            raise InvalidRequestError(f"Invalid broker id {name}: not a number")
        names = [c.name for c in resource.configs]
        if duplicate_names(names):
            raise InvalidRequestError(
                f"Error due to duplicate config keys: {sorted(duplicate_names(names))}"
            )
        current = await asyncio.to_thread(self._zk.get_broker_config, entity)
        config = {} if replace else dict(current)
        for op in resource.configs:
            if op.operation == ConfigOperation.SET:
                if op.value is None:
                    raise InvalidRequestError(f"Null value not supported for {op.name}")
                config[op.name] = op.value
            elif op.operation == ConfigOperation.DELETE:
                config.pop(op.name, None)
            elif op.operation in (ConfigOperation.APPEND, ConfigOperation.SUBTRACT):
                raise InvalidConfigError(
                    f"Config value append is not allowed for config key: {op.name}"
                )
            else:
                raise InvalidRequestError(f"Unknown config operation {int(op.operation)}")
        try:
            validate_dynamic_update(config)
        except KafkaError as exc:
            # Kafka answers a bad broker config INVALID_REQUEST, naming the resource.
            raise InvalidRequestError(
                f"Invalid config value for resource {described}: {exc.message}"
            ) from None
        if validate_only:
            return
        await asyncio.to_thread(self._zk.set_broker_config, entity, config)
        log.info("broker_config_altered", entity=entity, config=config)

    async def _alter_topic_config(
        self, resource: AlterConfigsResource, validate_only: bool, replace: bool
    ) -> None:
        topic = resource.resource_name
        validate_topic_name(topic)  # INVALID_TOPIC_EXCEPTION
        if await asyncio.to_thread(self._zk.get_topic, topic) is None:
            raise error_for_code(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{topic}' does not exist."
            )
        names = [c.name for c in resource.configs]
        if duplicate_names(names):
            raise InvalidRequestError(
                f"Error due to duplicate config keys: {sorted(duplicate_names(names))}"
            )
        config = {} if replace else dict(await asyncio.to_thread(self._zk.get_topic_config, topic))
        defaults = {k: v for k, (v, _) in self._config.describe().items()}
        for op in resource.configs:
            if op.name not in TOPIC_CONFIG_KEYS:
                raise InvalidConfigError(f"Unknown topic config name: {op.name}")
            kind = op.operation
            if kind == ConfigOperation.SET:
                if op.value is None:
                    raise InvalidRequestError(f"Null value not supported for {op.name}")
                config[op.name] = op.value
            elif kind == ConfigOperation.DELETE:
                config.pop(op.name, None)
            elif kind in (ConfigOperation.APPEND, ConfigOperation.SUBTRACT):
                if op.name not in _LIST_KEYS:
                    raise InvalidConfigError(
                        f"Config value append is not allowed for config key: {op.name}"
                    )
                current = config.get(op.name)
                if current is None:
                    broker_key = TOPIC_TO_BROKER_KEY[op.name]
                    current = (defaults.get(broker_key) if broker_key else None) or ""
                items = [i.strip() for i in current.split(",") if i.strip()]
                given = [i.strip() for i in (op.value or "").split(",") if i.strip()]
                if kind == ConfigOperation.APPEND:
                    items += [i for i in given if i not in items]
                else:
                    items = [i for i in items if i not in given]
                config[op.name] = ",".join(items)
            else:
                raise InvalidRequestError(f"Unknown config operation {int(kind)}")
        validate_topic_configs(config)
        if validate_only:
            return
        await asyncio.to_thread(self._zk.set_topic_config, topic, config)
        log.info("topic_config_altered", topic=topic, config=config)


_DENIED: Mapping[ErrorCode, str] = {
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: "Topic authorization failed.",
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed.",
}


def _resource_type_name(kind: int) -> str:
    try:
        return ConfigResourceType(kind).name
    except ValueError:
        return str(kind)


def _synonyms(config: BrokerConfig, keys: Sequence[str]) -> tuple[ConfigSynonym, ...]:
    return tuple(ConfigSynonym(k, v, source) for k, v, source in config.synonyms(keys))
