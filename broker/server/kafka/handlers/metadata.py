"""Metadata (key 3) and DescribeCluster (key 60), from the core's MetadataApi as over gRPC,
with the brokers' endpoints on the Kafka listener the client came in on.

Versions: a null topic list (v1+) or an empty one (v0) asks for every topic; an empty list
from v1 on asks for none. ``allow_auto_topic_creation`` (v4+) is the client's; before v4 a
request always allows it, as Kafka reads those versions. Topic ids (v10+) are answered for
every topic; v12 may ask for topics by id instead of by name (KIP-516): ids are resolved in the
metadata cache, an unknown one answers UNKNOWN_TOPIC_ID with a null name, and a request by id
never creates a topic, as Kafka's. A v10 or v11 request that names a topic by id (or by a null
name) is refused as Kafka's KafkaApis refuses it: every topic asked answers INVALID_REQUEST,
with no brokers and no partitions.

Authorization is the core's (MetadataApi): topics the principal may not Describe are left out
of an all-topics answer and TOPIC_AUTHORIZATION_FAILED when named. Asked for (Metadata v8+,
DescribeCluster), ``topic_authorized_operations`` and ``cluster_authorized_operations`` are the
bit sets of Kafka's AclOperation codes the principal has (every operation of the resource type
without an authorizer), else the schemas' default, -2**31.
"""

from __future__ import annotations

import uuid

from minikafka.broker.server.core.metadata import ClusterMetadata
from minikafka.broker.server.kafka.broker import KafkaBroker
from minikafka.broker.server.kafka.handlers.topic_ids import ZERO, from_uuid, to_uuid
from minikafka.broker.server.kafka.registry import Request, handler
from minikafka.broker.server.kafka.schema import Entity
from minikafka.proto.errors import ErrorCode

_TOPIC_AUTH_FAILED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
_FIRST_BY_ID_VERSION = 12  # v10 and v11 carry the field, but Kafka refuses ids in them


@handler(api_key=3, min_version=0, max_version=12)
async def metadata(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    requested = body.topics
    every = requested is None or (request.api_version == 0 and not requested)

    async def ask(names: list[str] | None, auto_create: bool) -> ClusterMetadata:
        return await broker.metadata_api.metadata(
            names,
            listener=request.listener,
            allow_auto_topic_creation=auto_create,
            session=request.session,
            include_topic_authorized_operations=getattr(
                body, "include_topic_authorized_operations", False
            ),
            # v8-10 only: v11 moved the cluster's to DescribeCluster
            include_cluster_authorized_operations=getattr(
                body, "include_cluster_authorized_operations", False
            ),
        )

    if not every and request.api_version < _FIRST_BY_ID_VERSION and _asks_by_id(requested):
        return request.response(
            {"throttle_time": 0, "controller_id": -1, "topics": _refused(requested)}
        )
    by_id = request.api_version >= _FIRST_BY_ID_VERSION and not every
    wanted_ids = [t.topic_id for t in requested if t.topic_id is not None] if by_id else []
    wanted_ids = [topic_id for topic_id in wanted_ids if topic_id != ZERO]
    unknown_ids: list[dict[str, object]] = []
    # by id (v12): the ids asked, by name, so that a refused topic is answered by its id alone
    ids_by_name: dict[str, uuid.UUID] = {}
    if wanted_ids:  # by id (v12): Kafka then reads the ids only
        names_by_id = broker.metadata_cache.topic_names_by_id()
        for topic_id in dict.fromkeys(wanted_ids):
            name = names_by_id.get(from_uuid(topic_id))
            if name is None:
                unknown_ids.append(_unknown_topic_id(topic_id))
            else:
                ids_by_name[name] = topic_id
        answer = await ask(list(ids_by_name), False)
    else:
        answer = await ask(
            None if every else [t.name for t in requested if t.name is not None],
            getattr(body, "allow_auto_topic_creation", True),
        )
    # A topic asked by id that the principal may not Describe: its id without its name, as
    # Kafka answers (the name would tell what the id is).
    hidden = {
        t.name for t in answer.topics if t.name in ids_by_name and t.error == _TOPIC_AUTH_FAILED
    }
    topics = [
        {
            "error_code": topic.error,
            "name": None if topic.name in hidden else topic.name,
            "topic_id": ids_by_name[topic.name]
            if topic.name in hidden
            else to_uuid(topic.topic_id),
            "is_internal": topic.is_internal,
            "partitions": [
                {
                    "error_code": p.error,
                    "partition_index": p.partition_index,
                    "leader_id": p.leader_id,
                    "leader_epoch": p.leader_epoch,
                    "replica_nodes": list(p.replica_nodes),
                    "isr_nodes": list(p.isr_nodes),
                    "offline_replicas": list(p.offline_replicas),
                }
                for p in topic.partitions
            ],
            "topic_authorized_operations": topic.authorized_operations,
        }
        for topic in answer.topics
    ] + unknown_ids
    return request.response(
        {
            "throttle_time": 0,
            "brokers": [
                {"node_id": b.id, "host": b.host, "port": b.port, "rack": b.rack}
                for b in answer.brokers
            ],
            "cluster_id": answer.cluster_id or None,
            "controller_id": answer.controller_id,
            "topics": topics,
            "cluster_authorized_operations": answer.cluster_authorized_operations,
        }
    )


def _asks_by_id(requested: list[Entity]) -> bool:
    """Whether a v10-11 request names a topic by id or by a null name (only v12 may)."""
    return any(t.name is None or (getattr(t, "topic_id", None) or ZERO) != ZERO for t in requested)


def _refused(requested: list[Entity]) -> list[dict[str, object]]:
    """Kafka's error answer to a Metadata request: each topic asked, INVALID_REQUEST."""
    return [
        {
            "error_code": ErrorCode.INVALID_REQUEST,
            "name": t.name or "",
            "topic_id": getattr(t, "topic_id", None) or ZERO,
            "is_internal": False,
            "partitions": [],
        }
        for t in requested
    ]


def _unknown_topic_id(topic_id: object) -> dict[str, object]:
    return {
        "error_code": ErrorCode.UNKNOWN_TOPIC_ID,
        "name": None,
        "topic_id": topic_id,
        "is_internal": False,
        "partitions": [],
        "topic_authorized_operations": -2147483648,
    }


@handler(api_key=60, min_version=0, max_version=1)
async def describe_cluster(request: Request, broker: KafkaBroker) -> Entity:
    answer = await broker.metadata_api.describe_cluster(
        listener=request.listener,
        session=request.session,
        include_cluster_authorized_operations=request.body.include_cluster_authorized_operations,
    )
    return request.response(
        {
            "throttle_time": 0,
            "error_code": 0,
            "error_message": None,
            "endpoint_type": 1,
            "cluster_id": answer.cluster_id,
            "controller_id": answer.controller_id,
            "brokers": [
                {"broker_id": b.id, "host": b.host, "port": b.port, "rack": b.rack}
                for b in answer.brokers
            ],
            "cluster_authorized_operations": answer.cluster_authorized_operations,
        }
    )
