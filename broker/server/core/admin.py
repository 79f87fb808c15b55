"""Topic administration on plain values: topics, partitions, leader elections, configs, records.

    TopicAdmin(config: BrokerConfig, controller: KafkaController, zk: ZkStore,
               replica_manager: ReplicaManager | None = None, *,
               metadata_cache: MetadataCache | None = None)

Both front doors call it: the gRPC ``AdminService`` (broker/server/admin_service.py) and the
Kafka listener's handlers (broker/server/kafka/handlers/topics.py, configs.py, offsets.py). Each
turns its own messages into the values below and encodes what comes back, so the checks, the
waits and the errors are written once.

- ``create_topics``, ``delete_topics``, ``create_partitions``, ``elect_leaders`` are the
  controller's: they go to ``controller`` (this broker's KafkaController), which answers
  NOT_CONTROLLER per item when another broker is controller (clients find it through Metadata's
  controller id). Requests are checked here first, as Kafka's request handler does: a topic
  named twice in one request is INVALID_REQUEST, topic configs must be known keys with valid
  values (INVALID_CONFIG). An internal topic (``__consumer_offsets``) is the broker's own: a
  client may neither create nor delete it (INVALID_REQUEST, with the messages of Kafka's
  "Creation of internal topic ... is prohibited" and of its topic tool's refusal to delete
  one). Kafka in ZooKeeper mode leaves this to ACLs, which this broker does not have; a
  ``__consumer_offsets`` of a client's making (1 partition, RF 1, not compacted) would take
  the place of the one the broker creates on first use (core/topic_creation.py).
  ``create_topics`` with ``timeout_ms`` > 0 answers once this broker's metadata has a leader for
  every partition created, at most ``timeout_ms`` (Kafka's DelayedCreatePartitions): the
  controller elects them before it answers, but this broker learns of them from its
  UpdateMetadata a moment later, and a client's next request here (Metadata, DeleteTopics by
  topic id) must know the topic, under the id it was created with. Past the timeout a topic
  whose leaders are not all known is answered REQUEST_TIMED_OUT, as Kafka does: it was
  created all the same.
  ``delete_topics`` with ``timeout_ms`` > 0 waits until the topic is gone from ZooKeeper, else
  REQUEST_TIMED_OUT.
- ``describe_configs`` answers from ZooKeeper (``/config/topics/<t>``) and this broker's config;
  ``incremental_alter_configs`` writes topic overrides to ZooKeeper. Both work on any broker.
  Broker resources alter the dynamic broker configs (``/config/brokers/<id>``, or
  ``<default>`` for an empty name; the keys of broker.config.DYNAMIC_KEYS); each write adds a
  ``/config/changes`` notification that every broker applies (broker/server/dynamic_config.py).
  ``alter_configs`` is Kafka's older AlterConfigs: the same operations applied to an empty set
  of overrides, so keys it leaves out go back to their defaults.
- ``delete_records`` moves the log start offset of partitions this broker leads, then waits
  until the followers, which learn it from fetch responses, report theirs (Kafka's
  DelayedDeleteRecords, in the ReplicaManager); REQUEST_TIMED_OUT after ``timeout_ms``.

Topic-level keys (the broker key that gives the default in ``TOPIC_TO_BROKER_KEY``): the storage
keys of broker.storage.config.LogConfig, ``min.insync.replicas`` and
``unclean.leader.election.enable``.

The values are the dataclasses below and the controller's own (``NewTopic``, ``TopicPartition``).
Answers come one per distinct name in first-seen order (topics) or one per item in request
order (config resources, DeleteRecords partitions); error codes are Kafka's, messages "" for
none, numbers Kafka's (resource types, config sources, operations), so an adapter copies them.

Runs on the broker's event loop; ZooKeeper calls go through ``asyncio.to_thread`` and the
controller's futures are awaited with ``asyncio.wrap_future``.
"""

from __future__ import annotations

import asyncio
import enum
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

import structlog

from minikafka.broker.config import (
    DYNAMIC_KEYS,
    BrokerConfig,
    ConfigSource,
    parse_compression_type,
    validate_dynamic_update,
)
from minikafka.broker.replication.replica_manager import ReplicaManager
from minikafka.broker.replication.requests import (
    DeleteRecordsPartition,
    DeleteRecordsPartitionResult,
)
from minikafka.broker.server.core.metadata import INTERNAL_TOPICS
from minikafka.broker.server.metadata_cache import MetadataCache
from minikafka.broker.storage.config import TOPIC_KEY_SYNONYMS, LogConfig
from minikafka.controller.controller import ElectionType, KafkaController, NewPartitions, NewTopic
from minikafka.controller.topics import validate_topic_name
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import (
    ErrorCode,
    InvalidConfigError,
    InvalidRequestError,
    KafkaError,
    error_for_code,
)
from minikafka.zk.zk_data import DEFAULT_BROKER_ENTITY
from minikafka.zk.zk_store import ZkStore

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
    "CreatableTopicResult",
    "CreatePartitionsTopic",
    "DeletableTopicResult",
    "DeleteRecordsPartition",
    "DeleteRecordsPartitionResult",
    "DescribeConfigsResult",
    "ElectLeadersResult",
    "PartitionResult",
    "TopicAdmin",
    "TopicResult",
    "validate_topic_configs",
]

log = structlog.get_logger(__name__)

# topic key -> the broker key whose value is the topic's default (Kafka's synonyms): the storage
# keys from LogConfig's own table, then the keys the replicas and the controller read.
TOPIC_TO_BROKER_KEY = {
    **{topic_key: broker_keys[0] for topic_key, broker_keys in TOPIC_KEY_SYNONYMS.items()},
    "compression.type": "compression.type",
    "min.insync.replicas": "min.insync.replicas",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
}
TOPIC_CONFIG_KEYS = frozenset(TOPIC_TO_BROKER_KEY)
_LIST_KEYS = frozenset({"cleanup.policy"})
_STORAGE_TOPIC_KEYS = frozenset(LogConfig().to_properties())


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


# --- values -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TopicResult:
    """A topic's answer that is only an error (CreatePartitions)."""

    name: str
    error_code: ErrorCode
    error_message: str = ""


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
class CreatableTopicResult:
    """A topic's CreateTopics answer: on success (also ``validate_only``) its id (empty when
    only validated), partition count, replication factor and effective configs; -1 and no
    configs on error."""

    name: str
    error_code: ErrorCode
    error_message: str = ""
    topic_id: str = ""
    num_partitions: int = -1
    replication_factor: int = -1
    configs: Sequence[ConfigEntry] = ()


@dataclass(frozen=True, slots=True)
class DeletableTopicResult:
    """A topic's DeleteTopics answer; ``topic_id`` is the deleted topic's, "" if none was read."""

    name: str
    error_code: ErrorCode
    error_message: str = ""
    topic_id: str = ""


@dataclass(frozen=True, slots=True)
class CreatePartitionsTopic:
    """CreatePartitions for one topic: the new total count and, optionally, the replicas of
    each new partition in partition order."""

    name: str
    count: int
    assignments: Sequence[Sequence[int]] | None = None


@dataclass(frozen=True, slots=True)
class PartitionResult:
    topic: str
    partition: int
    error_code: ErrorCode
    error_message: str = ""


@dataclass(frozen=True, slots=True)
class ElectLeadersResult:
    """A whole-request error (NOT_CONTROLLER, INVALID_REQUEST) with no partitions, or one result
    per partition, sorted by topic and partition (ELECTION_NOT_NEEDED when the preferred
    replica already leads)."""

    error_code: ErrorCode = ErrorCode.NONE
    partitions: Sequence[PartitionResult] = ()


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
    storage = {k: v for k, v in configs.items() if k in _STORAGE_TOPIC_KEYS}
    try:
        LogConfig.from_properties(storage)
    except (ValueError, KafkaError) as exc:
        raise InvalidConfigError(str(getattr(exc, "message", exc))) from None
    if "min.insync.replicas" in configs:
        raw = configs["min.insync.replicas"]
        if not raw.strip().lstrip("-").isdigit() or int(raw) < 1:
            raise InvalidConfigError(
                f"Invalid value {raw} for configuration min.insync.replicas: "
                "Value must be at least 1"
            )
    if "compression.type" in configs:
        try:
            parse_compression_type("compression.type", configs["compression.type"])
        except KafkaError as exc:
            raise InvalidConfigError(exc.message) from None
    if "unclean.leader.election.enable" in configs:
        raw = configs["unclean.leader.election.enable"]
        if raw.strip().lower() not in ("true", "false"):
            raise InvalidConfigError(
                f"Invalid value {raw} for configuration unclean.leader.election.enable: "
                "Expected value to be either true or false"
            )


class TopicAdmin:
    """See the module docstring. Lives on the broker's event loop."""

    def __init__(
        self,
        config: BrokerConfig,
        controller: KafkaController,
        zk: ZkStore,
        replica_manager: ReplicaManager | None = None,
        *,
        metadata_cache: MetadataCache | None = None,
    ) -> None:
        """Without ``metadata_cache``, ``create_topics`` answers without waiting for it."""
        self._config = config
        self._controller = controller
        self._zk = zk
        self._replica_manager = replica_manager
        self._metadata_cache = metadata_cache

    def reconfigure(self, config: BrokerConfig) -> None:
        """The broker's config after a dynamic broker config change."""
        self._config = config

    # --- the controller's requests -------------------------------------------------------------

    async def create_topics(
        self, topics: Sequence[NewTopic], *, validate_only: bool = False, timeout_ms: int = 0
    ) -> list[CreatableTopicResult]:
        """See the module docstring: with ``timeout_ms`` > 0 the answer waits, at most that
        long, until this broker's metadata has a leader for every partition created; the
        time counts from the request's arrival, the controller's work included."""
        deadline = asyncio.get_running_loop().time() + timeout_ms / 1000
        duplicates = _duplicates(t.name for t in topics)
        results: dict[str, CreatableTopicResult] = {}
        to_create: list[NewTopic] = []
        for topic in topics:
            if topic.name in duplicates:
                results[topic.name] = _create_error(
                    topic.name,
                    ErrorCode.INVALID_REQUEST,
                    "Create topics request contains multiple entries for the topic.",
                )
                continue
            if topic.name in INTERNAL_TOPICS:
                results[topic.name] = _create_error(
                    topic.name,
                    ErrorCode.INVALID_REQUEST,
                    f"Creation of internal topic {topic.name} is prohibited.",
                )
                log.warning("create_topic_refused", topic=topic.name, reason="internal topic")
                continue
            try:
                validate_topic_configs(topic.configs)
            except KafkaError as exc:
                results[topic.name] = _create_error(topic.name, exc.code, exc.message)
                continue
            to_create.append(topic)
        if to_create:
            created = await asyncio.wrap_future(
                self._controller.create_topics(to_create, validate_only=validate_only)
            )
            for new_topic in to_create:
                outcome = created[new_topic.name]
                if outcome.error != ErrorCode.NONE:
                    results[new_topic.name] = _create_error(
                        new_topic.name, outcome.error, outcome.message
                    )
                    continue
                results[new_topic.name] = CreatableTopicResult(
                    new_topic.name,
                    ErrorCode.NONE,
                    topic_id=outcome.topic_id,
                    num_partitions=outcome.num_partitions,
                    replication_factor=outcome.replication_factor,
                    configs=self._topic_config_entries(new_topic.configs, ()),
                )
                log.info(
                    "create_topic_request",
                    topic=new_topic.name,
                    validate_only=validate_only,
                    partitions=outcome.num_partitions,
                    replication_factor=outcome.replication_factor,
                )
        if not validate_only and timeout_ms > 0:
            created_ok = [r for r in results.values() if r.error_code == ErrorCode.NONE]
            late = await self._await_leaders(created_ok, deadline)
            for name in late:
                # Kafka's DelayedCreatePartitions on expiry: the topic exists, but the answer
                # says the wait for its leaders timed out (AdminClient: TimeoutException).
                results[name] = _create_error(
                    name,
                    ErrorCode.REQUEST_TIMED_OUT,
                    f"Topic '{name}' was created, but not every partition had a leader in "
                    f"broker {self._config.broker_id}'s metadata within {timeout_ms} ms.",
                )
        return [results[t.name] for t in _unique(topics)]

    async def _await_leaders(
        self, topics: Sequence[CreatableTopicResult], deadline: float
    ) -> set[str]:
        """Until this broker's metadata has a leader for every partition of ``topics`` (as
        created: name, id, partition count), at most until ``deadline`` (the loop's clock):
        woken by each UpdateMetadata it applies. Returns the names of the topics still missing
        a leader then. A partition counts only under the created topic's id, so the entries of
        a deleted topic of the same name, not yet removed here, do not satisfy the wait."""
        cache = self._metadata_cache
        if cache is None or not topics:
            return set()

        def missing() -> set[str]:
            late = set()
            for topic in topics:
                for partition in range(topic.num_partitions):
                    info = cache.get_partition(topic.name, partition)
                    if (
                        info is None
                        or info.leader < 0
                        or (topic.topic_id and info.topic_id != topic.topic_id)
                    ):
                        late.add(topic.name)
                        break
            return late

        remaining = deadline - asyncio.get_running_loop().time()
        if await cache.wait_until(lambda: not missing(), max(remaining, 0.0)):
            return set()
        late = missing()
        log.warning(
            "create_topic_leaders_unknown",
            topics=sorted(late),
            hint="answered REQUEST_TIMED_OUT: created, but this broker's metadata does not "
            "know every leader",
        )
        return late

    async def delete_topics(
        self, names: Sequence[str], *, timeout_ms: int = 0
    ) -> list[DeletableTopicResult]:
        unique = list(dict.fromkeys(names))
        duplicates = _duplicates(names)
        # A name no topic can have is not looked up: "" or ".." would name other znodes.
        invalid = {n for n in unique if not _is_valid_topic_name(n)}
        internal = {n for n in unique if n in INTERNAL_TOPICS}
        wanted = [n for n in unique if n not in duplicates | invalid | internal]
        topic_ids: dict[str, str] = {}
        for name in wanted:
            read = await asyncio.to_thread(self._zk.get_topic, name)
            if read is not None and read.value.topic_id:
                topic_ids[name] = read.value.topic_id
        outcome = (
            await asyncio.wrap_future(self._controller.delete_topics(wanted)) if wanted else {}
        )
        deadline = time.monotonic() + max(timeout_ms, 0) / 1000
        results = []
        for name in unique:
            topic_id = topic_ids.get(name, "")
            if name in duplicates:
                error, message = ErrorCode.INVALID_REQUEST, "Duplicate topic in the request."
            elif name in invalid:
                error, message = (
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    f"topic {name!r} does not exist",
                )
            elif name in internal:
                error, message = (
                    ErrorCode.INVALID_REQUEST,
                    f"Topic {name} is a kafka internal topic and is not allowed to be marked "
                    "for deletion.",
                )
                log.warning("delete_topic_refused", topic=name, reason="internal topic")
            else:
                error, message = outcome[name]
                # Kafka answers once the deletion completed, or REQUEST_TIMED_OUT.
                if (
                    error == ErrorCode.NONE
                    and timeout_ms > 0
                    and not await self._wait_topic_gone(name, deadline)
                ):
                    error, message = ErrorCode.REQUEST_TIMED_OUT, "Deletion is still in progress."
            results.append(DeletableTopicResult(name, error, message, topic_id))
        return results

    async def _wait_topic_gone(self, topic: str, deadline: float) -> bool:
        while True:
            if await asyncio.to_thread(self._zk.get_topic, topic) is None:
                return True
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(min(0.05, max(0.0, deadline - time.monotonic())))

    async def create_partitions(
        self, topics: Sequence[CreatePartitionsTopic], *, validate_only: bool = False
    ) -> list[TopicResult]:
        duplicates = _duplicates(t.name for t in topics)
        invalid = {t.name for t in topics if not _is_valid_topic_name(t.name)}
        wanted = {
            t.name: NewPartitions(t.count, t.assignments)
            for t in topics
            if t.name not in duplicates and t.name not in invalid
        }
        outcome = (
            await asyncio.wrap_future(
                self._controller.create_partitions(wanted, validate_only=validate_only)
            )
            if wanted
            else {}
        )
        results = []
        for topic in _unique(topics):
            if topic.name in duplicates:
                results.append(
                    TopicResult(
                        topic.name, ErrorCode.INVALID_REQUEST, "Duplicate topic in the request."
                    )
                )
            elif topic.name in invalid:
                results.append(
                    TopicResult(
                        topic.name,
                        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        f"Topic '{topic.name}' not found.",
                    )
                )
            else:
                error, message = outcome[topic.name]
                results.append(TopicResult(topic.name, error, message))
        return results

    async def elect_leaders(
        self, election_type: int, partitions: Sequence[TopicPartition] | None
    ) -> ElectLeadersResult:
        """``election_type`` is Kafka's number (ElectionType); ``partitions`` None means every
        partition."""
        if not self._controller.is_active:
            return ElectLeadersResult(ErrorCode.NOT_CONTROLLER)
        try:
            kind = ElectionType(election_type)
        except ValueError:
            return ElectLeadersResult(ErrorCode.INVALID_REQUEST)
        results = await asyncio.wrap_future(self._controller.elect_leaders(kind, partitions))
        if any(r.error == ErrorCode.NOT_CONTROLLER for r in results.values()) or (
            partitions is None and not self._controller.is_active
        ):
            return ElectLeadersResult(ErrorCode.NOT_CONTROLLER)
        return ElectLeadersResult(
            partitions=[
                PartitionResult(tp.topic, tp.partition, results[tp].error, results[tp].message)
                for tp in sorted(results)
            ]
        )

    # --- configs -------------------------------------------------------------------------------

    async def describe_configs(
        self, resources: Sequence[ConfigResource]
    ) -> list[DescribeConfigsResult]:
        return [await self._describe(resource) for resource in resources]

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
                kind, name, configs=self._topic_config_entries(overrides, keys)
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
                        synonyms=_synonyms(config, (key,)),
                    )
                    for key, (value, source) in config.describe().items()
                    if not keys or key in keys
                ],
            )
        return DescribeConfigsResult(
            kind, name, ErrorCode.INVALID_REQUEST, f"Unsupported resource type {kind}"
        )

    def _topic_config_entries(
        self, overrides: Mapping[str, str], keys: Iterable[str]
    ) -> list[ConfigEntry]:
        wanted = set(keys)
        config = self._config
        broker = config.describe()
        entries = []
        for key, broker_key in sorted(TOPIC_TO_BROKER_KEY.items()):
            if wanted and key not in wanted:
                continue
            synonyms = _synonyms(config, (broker_key,))
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
            else:
                value, source = broker.get(broker_key, (None, ConfigSource.DEFAULT_CONFIG))
                entries.append(ConfigEntry(key, value, source, synonyms=synonyms))
        return entries

    async def incremental_alter_configs(
        self, resources: Sequence[AlterConfigsResource], *, validate_only: bool = False
    ) -> list[AlterConfigsResult]:
        return [await self._alter(r, validate_only, replace=False) for r in resources]

    async def alter_configs(
        self, resources: Sequence[AlterConfigsResource], *, validate_only: bool = False
    ) -> list[AlterConfigsResult]:
        """Kafka's older AlterConfigs: the operations (SETs) apply to an empty set of overrides
        rather than the topic's current ones, so a topic's whole override set is replaced and
        keys left out go back to their defaults."""
        return [await self._alter(r, validate_only, replace=True) for r in resources]

    async def _alter(
        self, resource: AlterConfigsResource, validate_only: bool, replace: bool
    ) -> AlterConfigsResult:
        kind, name = resource.resource_type, resource.resource_name
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
        if _duplicates(names):
            raise InvalidRequestError(
                f"Error due to duplicate config keys: {sorted(_duplicates(names))}"
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
        if _duplicates(names):
            raise InvalidRequestError(
                f"Error due to duplicate config keys: {sorted(_duplicates(names))}"
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
                    current = defaults.get(TOPIC_TO_BROKER_KEY[op.name]) or ""
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

    # --- records -------------------------------------------------------------------------------

    async def delete_records(
        self, partitions: Sequence[DeleteRecordsPartition], timeout_ms: int
    ) -> list[DeleteRecordsPartitionResult]:
        """One result per partition, in request order, once every replica's log start offset
        reached the target or ``timeout_ms`` passed (ReplicaManager.delete_records)."""
        if self._replica_manager is None:
            return [
                DeleteRecordsPartitionResult(
                    p.topic, p.partition, -1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                )
                for p in partitions
            ]
        return await self._replica_manager.delete_records(partitions, timeout_ms)


class _Named(Protocol):
    @property
    def name(self) -> str: ...


_N = TypeVar("_N", bound=_Named)


def _duplicates(names: Iterable[str]) -> set[str]:
    return {name for name, n in Counter(names).items() if n > 1}


def _unique(items: Iterable[_N]) -> list[_N]:
    """The first item of each name, in order."""
    first: dict[str, _N] = {}
    for item in items:
        first.setdefault(item.name, item)
    return list(first.values())


def _is_valid_topic_name(name: str) -> bool:
    try:
        validate_topic_name(name)
    except KafkaError:
        return False
    return True


def _create_error(name: str, error: ErrorCode, message: str) -> CreatableTopicResult:
    return CreatableTopicResult(name, error, message if error != ErrorCode.NONE else "")


def _resource_type_name(kind: int) -> str:
    try:
        return ConfigResourceType(kind).name
    except ValueError:
        return str(kind)


def _synonyms(config: BrokerConfig, keys: Sequence[str]) -> tuple[ConfigSynonym, ...]:
    return tuple(ConfigSynonym(k, v, source) for k, v, source in config.synonyms(keys))
