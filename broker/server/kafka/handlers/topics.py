"""CreateTopics (key 19), DeleteTopics (key 20), CreatePartitions (key 37) and ElectLeaders
(key 43): the controller's requests, answered by the TopicAdmin calls
(broker/server/core/topics.py) the gRPC door makes.

Kafka clients send these to the controller named in Metadata's ``controller_id``; any other
broker answers NOT_CONTROLLER per topic, and the client looks the controller up again. Name
checks, duplicate topics (INVALID_REQUEST), config validation (INVALID_CONFIG), internal topics
and the waits are TopicAdmin's, so both doors answer alike.

Versions:
- CreateTopics 2-7. ``num_partitions`` and ``replication_factor`` -1 mean num.partitions and
  default.replication.factor (sent by clients from v4); a manual assignment needs both at -1
  (else INVALID_REQUEST). ``validate_only`` checks without creating. The answer comes once the
  controller has written the topic and elected its leaders and this broker's metadata knows
  those leaders, at most ``timeout`` later (TopicAdmin's wait, Kafka's DelayedCreatePartitions:
  a topic whose leaders it does not know by then is answered REQUEST_TIMED_OUT, though created);
  other brokers learn of them through UpdateMetadata too, so a Metadata request to another
  broker may not know the topic for a moment (Kafka's clients wait for it). From v5 the answer
  carries the topic's partition count, replication factor and effective configs (overrides and
  broker defaults, with their sources), also for ``validate_only``; v7 adds the topic id. A
  config given without a value is INVALID_CONFIG, as in Kafka (the gRPC door cannot send one).
- DeleteTopics 1-6. ``timeout_ms`` > 0 waits for the deletion to complete, else
  REQUEST_TIMED_OUT; <= 0 answers at once. v6 names a topic by name or by topic id: an id this
  broker's metadata does not know is UNKNOWN_TOPIC_ID, both a name and an id INVALID_REQUEST.
- CreatePartitions 0-3: the new total count and, optionally, the replicas of each new
  partition; ``validate_only``. The answer waits for the new partitions' leaders as
  CreateTopics' does, at most ``timeout_ms``.
"""

from __future__ import annotations

import datetime
import uuid
from collections import Counter
from typing import Any

from minikafka.broker.replication.requests import by_topic
from minikafka.broker.server.core.topics import CreatePartitionsTopic, PartitionResult
from minikafka.broker.server.kafka.broker import KafkaBroker
from minikafka.broker.server.kafka.handlers.topic_ids import ZERO, to_uuid
from minikafka.broker.server.kafka.registry import Request, handler
from minikafka.broker.server.kafka.schema import Entity
from minikafka.controller.controller import NewTopic
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode

_ONE_MS = datetime.timedelta(milliseconds=1)


def _millis(value: datetime.timedelta) -> int:
    return value // _ONE_MS


@handler(api_key=19, min_version=2, max_version=7)
async def create_topics(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    counts = Counter(t.name for t in body.topics)
    refused: dict[str, str] = {}
    creatable = []
    for topic in body.topics:
        nulls = [c.name for c in topic.configs if c.value is None]
        # A topic named twice goes on: TopicAdmin answers INVALID_REQUEST for the pair.
        if nulls and counts[topic.name] == 1:
            refused[topic.name] = f"Null value not supported for topic configs: {','.join(nulls)}"
            continue
        creatable.append(
            NewTopic(
                topic.name,
                topic.num_partitions,
                topic.replication_factor,
                {a.partition_index: list(a.broker_ids) for a in topic.assignments} or None,
                {c.name: c.value for c in topic.configs if c.value is not None},
            )
        )
    answer = (
        await broker.admin.create_topics(
            creatable,
            validate_only=body.validate_only,
            timeout_ms=_millis(body.timeout),
            session=request.session,
        )
        if creatable
        else []
    )
    by_name = {t.name: t for t in answer}
    results = []
    for name in dict.fromkeys(t.name for t in body.topics):
        if name in refused:
            results.append(
                {
                    "name": name,
                    "topic_id": ZERO,
                    "error_code": ErrorCode.INVALID_CONFIG,
                    "error_message": refused[name],
                    "num_partitions": -1,
                    "replication_factor": -1,
                    "configs": [],
                }
            )
            continue
        result = by_name[name]
        results.append(
            {
                "name": name,
                "topic_id": to_uuid(result.topic_id),
                "error_code": result.error_code,
                "error_message": result.error_message or None,
                "num_partitions": result.num_partitions,
                "replication_factor": result.replication_factor,
                "configs": [
                    {
                        "name": c.name,
                        "value": c.value,
                        "read_only": c.read_only,
                        "config_source": int(c.source),
                        "is_sensitive": c.is_sensitive,
                    }
                    for c in result.configs
                ],
                # v5+ (tagged): the configs are left out for want of DescribeConfigs
                **(
                    {}
                    if result.configs_authorized
                    else {"topic_config_error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
                ),
            }
        )
    return request.response({"throttle_time": 0, "topics": results})


@handler(api_key=20, min_version=1, max_version=6)
async def delete_topics(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    if request.api_version < 6:
        wanted: list[tuple[str | None, uuid.UUID]] = [(name, ZERO) for name in body.topic_names]
    else:
        wanted = [(t.name, t.topic_id or ZERO) for t in body.topics]
    names_by_id = _names_by_topic_id(broker) if any(i != ZERO for _, i in wanted) else {}

    results: dict[tuple[str | None, uuid.UUID], dict[str, Any]] = {}
    to_delete: list[str] = []
    for name, topic_id in wanted:
        result: dict[str, Any] = {"name": name, "topic_id": topic_id}
        if name is not None and topic_id != ZERO:
            result["error_code"] = ErrorCode.INVALID_REQUEST
            result["error_message"] = "Topic name and topic ID can not both be specified."
        elif topic_id != ZERO:
            result["name"] = names_by_id.get(topic_id)
            if result["name"] is None:
                result["error_code"] = ErrorCode.UNKNOWN_TOPIC_ID
                result["error_message"] = f"Topic id {topic_id} does not exist."
        elif name is None:
            result["error_code"] = ErrorCode.INVALID_REQUEST
            result["error_message"] = "Topic name or topic ID must be specified."
        if "error_code" not in result:
            # Repeats go too: TopicAdmin answers INVALID_REQUEST for a topic named twice.
            to_delete.append(result["name"])
        results.setdefault((name, topic_id), result)

    answer = (
        await broker.admin.delete_topics(
            to_delete, timeout_ms=_millis(body.timeout), session=request.session
        )
        if to_delete
        else []
    )
    by_name = {r.name: r for r in answer}
    for result in results.values():
        if "error_code" in result:
            continue
        outcome = by_name[result["name"]]
        if result["topic_id"] == ZERO:
            result["topic_id"] = to_uuid(outcome.topic_id)
        result["error_code"] = outcome.error_code
        result["error_message"] = outcome.error_message or None
        refused = outcome.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        if refused and result["topic_id"] != ZERO:
            # Named by id: a principal refused does not learn the topic's name (Kafka hides
            # it from one without Describe; this hides it from every refusal).
            result["name"] = None
    return request.response({"throttle_time": 0, "responses": list(results.values())})


def _names_by_topic_id(broker: KafkaBroker) -> dict[uuid.UUID, str]:
    """Topic id -> name from this broker's metadata, as Kafka resolves DeleteTopics' ids."""
    return {to_uuid(i): name for i, name in broker.metadata_cache.topic_names_by_id().items()}


@handler(api_key=37, min_version=0, max_version=3)
async def create_partitions(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    answer = await broker.admin.create_partitions(
        [
            CreatePartitionsTopic(
                t.name, t.count, [list(a.broker_ids) for a in t.assignments or ()] or None
            )
            for t in body.topics
        ],
        validate_only=body.validate_only,
        timeout_ms=_millis(body.timeout),
        session=request.session,
    )
    return request.response(
        {
            "throttle_time": 0,
            "results": [
                {
                    "name": r.name,
                    "error_code": r.error_code,
                    "error_message": r.error_message or None,
                }
                for r in answer
            ],
        }
    )


# --- ElectLeaders ------------------------------------------------------------------------------

_FIRST_TOP_LEVEL_ELECT_ERROR_VERSION = 1  # KIP-460: v1 adds election_type and a top-level error


@handler(api_key=43, min_version=0, max_version=2)
async def elect_leaders(request: Request, broker: KafkaBroker) -> Entity:
    """ElectLeaders (KIP-183, KIP-460): preferred (0) or unclean (1) leader election on the
    named partitions, or every partition when ``topic_partitions`` is null, by the controller
    (TopicAdmin.elect_leaders, as the gRPC ElectLeaders and ``minikafka elect-leaders``); any
    other broker answers NOT_CONTROLLER. v0 knows preferred elections only and has no
    top-level error: a whole-request error is each named partition's."""
    body = request.body
    named = body.topic_partitions
    partitions = (
        None if named is None else [TopicPartition(t.topic, p) for t in named for p in t.partitions]
    )
    answer = await broker.admin.elect_leaders(
        int(getattr(body, "election_type", 0)), partitions, session=request.session
    )
    results = list(answer.partitions)
    if (
        answer.error_code != ErrorCode.NONE
        and request.api_version < _FIRST_TOP_LEVEL_ELECT_ERROR_VERSION
    ):
        results = [
            PartitionResult(tp.topic, tp.partition, answer.error_code) for tp in partitions or ()
        ]
    return request.response(
        {
            "throttle_time": 0,
            "error_code": answer.error_code,
            "replica_election_results": [
                {
                    "topic": topic,
                    "partition_result": [
                        {
                            "partition_id": r.partition,
                            "error_code": r.error_code,
                            "error_message": r.error_message or None,
                        }
                        for r in rs
                    ],
                }
                for topic, rs in by_topic(results).items()
            ],
        }
    )
