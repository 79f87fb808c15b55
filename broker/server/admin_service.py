"""The Admin RPC family: topics, partitions, leader elections and topic configs.

    AdminService(config: BrokerConfig, controller: KafkaController, zk: ZkStore,
                 replica_manager: ReplicaManager | None = None)

- CreateTopics, DeleteTopics, CreatePartitions, ElectLeaders are the controller's: they go to
  ``controller`` (this broker's KafkaController), which answers NOT_CONTROLLER per item when
  another broker is controller (clients find it through Metadata.controller_id). Requests are
  checked here first as Kafka's request handler does: a topic named twice in one request is
  INVALID_REQUEST, topic configs must be known keys with valid values (INVALID_CONFIG).
- DescribeConfigs answers from ZooKeeper (``/config/topics/<t>``) and this broker's config;
  IncrementalAlterConfigs writes topic overrides to ZooKeeper. Both work on any broker. Broker
  configs are static (server.properties): they can be described, not altered. ``alter_configs``
  with ``replace`` is the same path for Kafka's older AlterConfigs (Kafka front door only).
- DeleteRecords moves the log start offset of partitions this broker leads (Kafka's leader
  side); followers catch up through the log start offset in fetch responses.

Topic-level keys (the broker key that gives the default in parentheses): the storage keys of
broker.storage.config.LogConfig, ``min.insync.replicas`` and
``unclean.leader.election.enable``.

Runs on the broker's event loop (grpc.aio); ZooKeeper calls go through ``asyncio.to_thread`` and
the controller's futures are awaited with ``asyncio.wrap_future``.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import grpc
import structlog

from minikafka.broker.config import BrokerConfig
from minikafka.broker.replication.replica_manager import ReplicaManager
from minikafka.broker.storage.checkpoints import TopicPartition as StorageTopicPartition
from minikafka.broker.storage.config import LogConfig
from minikafka.controller.controller import ElectionType, KafkaController, NewPartitions, NewTopic
from minikafka.controller.topics import validate_topic_name
from minikafka.controller.zk_data import TopicPartition
from minikafka.controller.zk_store import ZkStore
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.errors import (
    ErrorCode,
    InvalidConfigError,
    InvalidRequestError,
    KafkaError,
    error_for_code,
)

__all__ = ["TOPIC_CONFIG_KEYS", "TOPIC_TO_BROKER_KEY", "AdminService", "validate_topic_configs"]

_Context = grpc.aio.ServicerContext[Any, Any]

log = structlog.get_logger(__name__)

# topic key -> the broker key whose value is the topic's default (Kafka's synonyms)
TOPIC_TO_BROKER_KEY = {
    "cleanup.policy": "log.cleanup.policy",
    "flush.messages": "log.flush.interval.messages",
    "flush.ms": "log.flush.interval.ms",
    "index.interval.bytes": "log.index.interval.bytes",
    "max.message.bytes": "message.max.bytes",
    "min.insync.replicas": "min.insync.replicas",
    "retention.bytes": "log.retention.bytes",
    "retention.ms": "log.retention.ms",
    "segment.bytes": "log.segment.bytes",
    "segment.index.bytes": "log.index.size.max.bytes",
    "segment.ms": "log.roll.ms",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
}
TOPIC_CONFIG_KEYS = frozenset(TOPIC_TO_BROKER_KEY)
_LIST_KEYS = frozenset({"cleanup.policy"})
_STORAGE_TOPIC_KEYS = frozenset(LogConfig().to_properties())

_TOPIC = pb.ConfigResourceType.CONFIG_RESOURCE_TYPE_TOPIC
_BROKER = pb.ConfigResourceType.CONFIG_RESOURCE_TYPE_BROKER


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
    if "unclean.leader.election.enable" in configs:
        raw = configs["unclean.leader.election.enable"]
        if raw.strip().lower() not in ("true", "false"):
            raise InvalidConfigError(
                f"Invalid value {raw} for configuration unclean.leader.election.enable: "
                "Expected value to be either true or false"
            )


def _duplicates(names: Iterable[str]) -> set[str]:
    return {name for name, n in Counter(names).items() if n > 1}


class AdminService(pb_grpc.AdminServicer):
    """See the module docstring."""

    def __init__(
        self,
        config: BrokerConfig,
        controller: KafkaController,
        zk: ZkStore,
        replica_manager: ReplicaManager | None = None,
    ) -> None:
        self._config = config
        self._controller = controller
        self._zk = zk
        self._replica_manager = replica_manager

    # --- the controller's requests -------------------------------------------------------------

    async def CreateTopics(
        self, request: pb.CreateTopicsRequest, context: _Context
    ) -> pb.CreateTopicsResponse:
        duplicates = _duplicates(t.name for t in request.topics)
        results: dict[str, pb.CreateTopicsResponse.CreatableTopicResult] = {}
        to_create: list[NewTopic] = []
        for topic in request.topics:
            if topic.name in duplicates:
                results[topic.name] = _create_error(
                    topic.name,
                    ErrorCode.INVALID_REQUEST,
                    "Create topics request contains multiple entries for the topic.",
                )
                continue
            try:
                validate_topic_configs(dict(topic.configs))
            except KafkaError as exc:
                results[topic.name] = _create_error(topic.name, exc.code, exc.message)
                continue
            to_create.append(
                NewTopic(
                    topic.name,
                    topic.num_partitions,
                    topic.replication_factor,
                    {a.partition_index: list(a.broker_ids) for a in topic.assignments} or None,
                    dict(topic.configs),
                )
            )
        if to_create:
            created = await asyncio.wrap_future(
                self._controller.create_topics(to_create, validate_only=request.validate_only)
            )
            for new_topic in to_create:
                outcome = created[new_topic.name]
                result = _create_error(new_topic.name, outcome.error, outcome.message)
                if outcome.error == ErrorCode.NONE:
                    result.topic_id = outcome.topic_id
                    result.num_partitions = outcome.num_partitions
                    result.replication_factor = outcome.replication_factor
                    for entry in self._topic_config_entries(new_topic.configs, ()):
                        result.configs.append(
                            pb.CreateTopicsResponse.CreatableTopicConfigs(
                                name=entry.name,
                                value=entry.value if entry.HasField("value") else None,
                                read_only=entry.read_only,
                                config_source=entry.config_source,
                                is_sensitive=entry.is_sensitive,
                            )
                        )
                    log.info(
                        "create_topic_request",
                        topic=new_topic.name,
                        validate_only=request.validate_only,
                        partitions=outcome.num_partitions,
                        replication_factor=outcome.replication_factor,
                    )
                results[new_topic.name] = result
        return pb.CreateTopicsResponse(topics=[results[t.name] for t in _unique(request.topics)])

    async def DeleteTopics(
        self, request: pb.DeleteTopicsRequest, context: _Context
    ) -> pb.DeleteTopicsResponse:
        names = list(dict.fromkeys(request.topic_names))
        duplicates = _duplicates(request.topic_names)
        # A name no topic can have is not looked up: "" or ".." would name other znodes.
        invalid = {n for n in names if not _is_valid_topic_name(n)}
        wanted = [n for n in names if n not in duplicates and n not in invalid]
        topic_ids: dict[str, str] = {}
        for name in wanted:
            read = await asyncio.to_thread(self._zk.get_topic, name)
            if read is not None and read.value.topic_id:
                topic_ids[name] = read.value.topic_id
        outcome = (
            await asyncio.wrap_future(self._controller.delete_topics(wanted)) if wanted else {}
        )
        deadline = time.monotonic() + max(request.timeout_ms, 0) / 1000
        response = pb.DeleteTopicsResponse()
        for name in names:
            result = response.responses.add(name=name, topic_id=topic_ids.get(name, ""))
            if name in duplicates:
                result.error_code = ErrorCode.INVALID_REQUEST
                result.error_message = "Duplicate topic in the request."
                continue
            if name in invalid:
                result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                result.error_message = f"topic {name!r} does not exist"
                continue
            error, message = outcome[name]
            # Kafka answers once the deletion completed, or REQUEST_TIMED_OUT.
            if (
                error == ErrorCode.NONE
                and request.timeout_ms > 0
                and not await self._wait_topic_gone(name, deadline)
            ):
                error, message = ErrorCode.REQUEST_TIMED_OUT, "Deletion is still in progress."
            result.error_code = error
            result.error_message = message
        return response

    async def _wait_topic_gone(self, topic: str, deadline: float) -> bool:
        while True:
            if await asyncio.to_thread(self._zk.get_topic, topic) is None:
                return True
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(min(0.05, max(0.0, deadline - time.monotonic())))

    async def CreatePartitions(
        self, request: pb.CreatePartitionsRequest, context: _Context
    ) -> pb.CreatePartitionsResponse:
        duplicates = _duplicates(t.name for t in request.topics)
        invalid = {t.name for t in request.topics if not _is_valid_topic_name(t.name)}
        wanted = {
            t.name: NewPartitions(t.count, [list(a.broker_ids) for a in t.assignments] or None)
            for t in request.topics
            if t.name not in duplicates and t.name not in invalid
        }
        outcome = (
            await asyncio.wrap_future(
                self._controller.create_partitions(wanted, validate_only=request.validate_only)
            )
            if wanted
            else {}
        )
        response = pb.CreatePartitionsResponse()
        for topic in _unique(request.topics):
            if topic.name in duplicates:
                response.results.add(
                    name=topic.name,
                    error_code=ErrorCode.INVALID_REQUEST,
                    error_message="Duplicate topic in the request.",
                )
            elif topic.name in invalid:
                response.results.add(
                    name=topic.name,
                    error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    error_message=f"Topic '{topic.name}' not found.",
                )
            else:
                error, message = outcome[topic.name]
                response.results.add(name=topic.name, error_code=error, error_message=message)
        return response

    async def ElectLeaders(
        self, request: pb.ElectLeadersRequest, context: _Context
    ) -> pb.ElectLeadersResponse:
        if not self._controller.is_active:
            return pb.ElectLeadersResponse(error_code=ErrorCode.NOT_CONTROLLER)
        try:
            kind = ElectionType(int(request.election_type))
        except ValueError:
            return pb.ElectLeadersResponse(error_code=ErrorCode.INVALID_REQUEST)
        partitions = None
        if request.topic_partitions:
            partitions = [
                TopicPartition(t.topic, p) for t in request.topic_partitions for p in t.partitions
            ]
        results = await asyncio.wrap_future(self._controller.elect_leaders(kind, partitions))
        if any(r.error == ErrorCode.NOT_CONTROLLER for r in results.values()) or (
            partitions is None and not self._controller.is_active
        ):
            return pb.ElectLeadersResponse(error_code=ErrorCode.NOT_CONTROLLER)
        response = pb.ElectLeadersResponse()
        by_topic: dict[str, pb.ElectLeadersResponse.ReplicaElectionResult] = {}
        for tp in sorted(results):
            error, message = results[tp]
            topic_result = by_topic.get(tp.topic)
            if topic_result is None:
                topic_result = response.replica_election_results.add(topic=tp.topic)
                by_topic[tp.topic] = topic_result
            topic_result.partition_result.add(
                partition_id=tp.partition, error_code=error, error_message=message
            )
        return response

    # --- configs -------------------------------------------------------------------------------

    async def DescribeConfigs(
        self, request: pb.DescribeConfigsRequest, context: _Context
    ) -> pb.DescribeConfigsResponse:
        response = pb.DescribeConfigsResponse()
        for resource in request.resources:
            result = response.results.add(
                resource_type=resource.resource_type, resource_name=resource.resource_name
            )
            keys = tuple(resource.configuration_keys)
            if resource.resource_type == _TOPIC:
                topic = resource.resource_name
                try:
                    validate_topic_name(topic)
                except KafkaError as exc:
                    result.error_code = exc.code
                    result.error_message = exc.message
                    continue
                if await asyncio.to_thread(self._zk.get_topic, topic) is None:
                    result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    result.error_message = f"Topic '{topic}' does not exist."
                    continue
                overrides = await asyncio.to_thread(self._zk.get_topic_config, topic)
                result.configs.extend(self._topic_config_entries(overrides, keys))
            elif resource.resource_type == _BROKER:
                if resource.resource_name not in ("", str(self._config.broker_id)):
                    result.error_code = ErrorCode.INVALID_REQUEST
                    result.error_message = (
                        f"Unexpected broker id, expected {self._config.broker_id} or empty "
                        f"string, but received {resource.resource_name}"
                    )
                    continue
                for name, (value, is_default) in self._config.describe().items():
                    if keys and name not in keys:
                        continue
                    result.configs.add(
                        name=name,
                        value=value,
                        read_only=True,
                        is_default=is_default,
                        config_source=_source(is_default),
                    )
            else:
                result.error_code = ErrorCode.INVALID_REQUEST
                result.error_message = f"Unsupported resource type {resource.resource_type}"
        return response

    def _topic_config_entries(
        self, overrides: Mapping[str, str], keys: Iterable[str]
    ) -> list[pb.DescribeConfigsResponse.DescribeConfigsResourceResult]:
        wanted = set(keys)
        broker = self._config.describe()
        entries = []
        for key, broker_key in sorted(TOPIC_TO_BROKER_KEY.items()):
            if wanted and key not in wanted:
                continue
            if key in overrides:
                value: str | None = overrides[key]
                source = pb.ConfigSource.CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG
                is_default = False
            else:
                value, is_default = broker.get(broker_key, (None, True))
                source = _source(is_default)
            entries.append(
                pb.DescribeConfigsResponse.DescribeConfigsResourceResult(
                    name=key,
                    value=value,
                    read_only=False,
                    is_default=is_default,
                    config_source=source,
                    is_sensitive=False,
                )
            )
        return entries

    async def IncrementalAlterConfigs(
        self, request: pb.IncrementalAlterConfigsRequest, context: _Context
    ) -> pb.IncrementalAlterConfigsResponse:
        return await self.alter_configs(request)

    async def alter_configs(
        self, request: pb.IncrementalAlterConfigsRequest, *, replace: bool = False
    ) -> pb.IncrementalAlterConfigsResponse:
        """IncrementalAlterConfigs; with ``replace`` the operations apply to an empty set of
        overrides rather than the topic's current ones. That is Kafka's older AlterConfigs
        (the Kafka front door's), which sets a topic's whole override set: keys it leaves out
        go back to their defaults."""
        response = pb.IncrementalAlterConfigsResponse()
        for resource in request.resources:
            result = response.responses.add(
                resource_type=resource.resource_type, resource_name=resource.resource_name
            )
            if resource.resource_type != _TOPIC:
                result.error_code = ErrorCode.INVALID_REQUEST
                result.error_message = (
                    "only topic configs can be altered: broker configs are static "
                    "(server.properties)"
                )
                continue
            try:
                await self._alter_topic_config(resource, request.validate_only, replace)
            except KafkaError as exc:
                result.error_code = exc.code
                result.error_message = exc.message
        return response

    async def _alter_topic_config(
        self,
        resource: pb.IncrementalAlterConfigsRequest.AlterConfigsResource,
        validate_only: bool,
        replace: bool,
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
            kind = op.config_operation
            if kind == pb.ConfigOperation.CONFIG_OPERATION_SET:
                if not op.HasField("value"):
                    raise InvalidRequestError(f"Null value not supported for {op.name}")
                config[op.name] = op.value
            elif kind == pb.ConfigOperation.CONFIG_OPERATION_DELETE:
                config.pop(op.name, None)
            elif kind in (
                pb.ConfigOperation.CONFIG_OPERATION_APPEND,
                pb.ConfigOperation.CONFIG_OPERATION_SUBTRACT,
            ):
                if op.name not in _LIST_KEYS:
                    raise InvalidConfigError(
                        f"Config value append is not allowed for config key: {op.name}"
                    )
                current = config.get(op.name)
                if current is None:
                    current = defaults.get(TOPIC_TO_BROKER_KEY[op.name]) or ""
                items = [i.strip() for i in current.split(",") if i.strip()]
                given = [i.strip() for i in op.value.split(",") if i.strip()]
                if kind == pb.ConfigOperation.CONFIG_OPERATION_APPEND:
                    items += [i for i in given if i not in items]
                else:
                    items = [i for i in items if i not in given]
                config[op.name] = ",".join(items)
            else:
                raise InvalidRequestError(f"Unknown config operation {kind}")
        validate_topic_configs(config)
        if validate_only:
            return
        await asyncio.to_thread(self._zk.set_topic_config, topic, config)
        log.info("topic_config_altered", topic=topic, config=config)

    # --- records -------------------------------------------------------------------------------

    async def DeleteRecords(
        self, request: pb.DeleteRecordsRequest, context: _Context
    ) -> pb.DeleteRecordsResponse:
        response = pb.DeleteRecordsResponse()
        for topic in request.topics:
            topic_result = response.topics.add(name=topic.name)
            for item in topic.partitions:
                low_watermark, error, message = self._delete_records(
                    TopicPartition(topic.name, item.partition_index), item.offset
                )
                topic_result.partitions.add(
                    partition_index=item.partition_index,
                    low_watermark=low_watermark,
                    error_code=error,
                    error_message=message,
                )
        return response

    def _delete_records(self, tp: TopicPartition, offset: int) -> tuple[int, ErrorCode, str]:
        manager = self._replica_manager
        partition = (
            manager.get_partition(StorageTopicPartition(tp.topic, tp.partition))
            if manager is not None
            else None
        )
        if partition is None:
            return -1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ""
        if not partition.is_leader:
            return -1, ErrorCode.NOT_LEADER_OR_FOLLOWER, ""
        log_ = partition.log
        high_watermark = int(partition.high_watermark)
        target = high_watermark if offset == -1 else offset
        if target < 0 or target > high_watermark:
            return (
                -1,
                ErrorCode.OFFSET_OUT_OF_RANGE,
                f"Cannot delete records below {target}: the high watermark is {high_watermark}",
            )
        log_.maybe_increment_log_start_offset(target, high_watermark)
        log.info(
            "records_deleted",
            topic=tp.topic,
            partition=tp.partition,
            log_start_offset=log_.log_start_offset,
        )
        return int(log_.log_start_offset), ErrorCode.NONE, ""


def _is_valid_topic_name(name: str) -> bool:
    try:
        validate_topic_name(name)
    except KafkaError:
        return False
    return True


def _unique(items: Iterable[Any]) -> list[Any]:
    seen: set[str] = set()
    out = []
    for item in items:
        if item.name not in seen:
            seen.add(item.name)
            out.append(item)
    return out


def _create_error(
    name: str, error: ErrorCode, message: str
) -> pb.CreateTopicsResponse.CreatableTopicResult:
    return pb.CreateTopicsResponse.CreatableTopicResult(
        name=name,
        error_code=error,
        error_message=message if error != ErrorCode.NONE else "",
        num_partitions=-1,
        replication_factor=-1,
    )


def _source(is_default: bool) -> pb.ConfigSource:
    if is_default:
        return pb.ConfigSource.CONFIG_SOURCE_DEFAULT_CONFIG
    return pb.ConfigSource.CONFIG_SOURCE_STATIC_BROKER_CONFIG
