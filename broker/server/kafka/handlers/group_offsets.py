"""OffsetCommit (8) v2-9, OffsetFetch (9) v1-9 and OffsetDelete (47) v0 on the Kafka
listener, on the GroupCoordinator the gRPC door uses too: the offsets are the same records in
``__consumer_offsets`` whichever door committed them, so a Kafka client resumes where a
minikafka consumer of its group stopped, and the reverse.

* OffsetCommit: ``generation_id`` -1 with no member id is a commit from outside group
  management (a "simple" consumer or an admin tool), accepted while the group has no members,
  as Kafka does; a member commits with its generation. ``retention_time`` (v2-v4) is not
  honoured: ``offsets.retention.minutes`` applies, as Kafka does from v5 on. A partition of
  a topic this broker does not know answers UNKNOWN_TOPIC_OR_PARTITION (core/groups.py).
  ``group_instance_id`` (v7+) names a static member (KIP-345, see groups.py): its old
  member id is FENCED_INSTANCE_ID. v9 is v8 for the new consumer protocol (KIP-848), which is
  not served: as Kafka 3.9's ZooKeeper-mode coordinator, ``generation_id_or_member_epoch`` is
  the classic group's generation.
* OffsetFetch: a null topic list (v2+) asks for every partition the group committed; a
  partition without a commit answers offset -1. Group-level errors go into each requested
  partition in v1, into ``error_code`` from v2 on (Kafka's layout). v8 batches groups.
  ``require_stable`` (v7+, KIP-447): a partition whose offset an open transaction may still
  commit answers UNSTABLE_OFFSET_COMMIT, and the consumer asks again.
  v9's ``member_id`` and ``member_epoch`` (KIP-848) are not checked, as Kafka 3.9's
  ZooKeeper-mode coordinator does not check them for a classic group.

* OffsetDelete (KIP-496): the coordinator's ``delete_offsets``; a group error (GROUP_ID_NOT_FOUND,
  NON_EMPTY_GROUP, the coordinator's own) leaves the partitions out of the answer, as Kafka's.

Authorization is the core's (GroupApi): GROUP_AUTHORIZATION_FAILED for a group the principal
may not use (Read to commit, Describe to fetch, Delete to delete offsets), then
TOPIC_AUTHORIZATION_FAILED per partition of a topic it may not Read (commit, delete) or Describe
(fetch; an all-partitions fetch leaves such topics out).

A broker without a group coordinator answers COORDINATOR_NOT_AVAILABLE.
"""

from __future__ import annotations

from typing import Any

from minikafka.broker.replication.requests import by_topic
from minikafka.broker.security.principal import Session
from minikafka.broker.server.core.groups import GroupApi
from minikafka.broker.server.kafka.broker import KafkaBroker
from minikafka.broker.server.kafka.registry import Request, handler
from minikafka.broker.server.kafka.schema import Entity
from minikafka.proto.common import OffsetAndMetadata, TopicPartition
from minikafka.proto.errors import ErrorCode

__all__ = ["offset_commit", "offset_delete", "offset_fetch"]

_NO_COORDINATOR = ErrorCode.COORDINATOR_NOT_AVAILABLE
_FIRST_TOP_LEVEL_ERROR_VERSION = 2
_FIRST_BATCHED_VERSION = 8


@handler(api_key=8, min_version=2, max_version=9)
async def offset_commit(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    if broker.groups is None:
        return request.response(
            {
                "throttle_time": 0,
                "topics": [
                    {
                        "name": t.name,
                        "partitions": [
                            {"partition_index": p.partition_index, "error_code": _NO_COORDINATOR}
                            for p in t.partitions
                        ],
                    }
                    for t in body.topics
                ],
            }
        )
    offsets = {
        (topic.name, p.partition_index): OffsetAndMetadata(
            p.committed_offset,
            p.committed_metadata or "",
            leader_epoch=getattr(p, "committed_leader_epoch", -1),  # v6+
        )
        for topic in body.topics
        for p in topic.partitions
    }
    results = await broker.groups.commit_offsets(
        body.group_id,
        body.member_id,
        body.generation_id_or_member_epoch,
        offsets,
        getattr(body, "group_instance_id", None),  # v7+
        session=request.session,
    )
    return request.response(
        {
            "throttle_time": 0,
            "topics": [
                {
                    "name": name,
                    "partitions": [
                        {"partition_index": tp.partition, "error_code": results[tp]} for tp in tps
                    ],
                }
                for name, tps in by_topic(map(TopicPartition._make, results)).items()
            ],
        }
    )


@handler(api_key=9, min_version=1, max_version=9)
async def offset_fetch(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    stable = bool(getattr(body, "require_stable", False))  # v7+
    if request.api_version >= _FIRST_BATCHED_VERSION:
        groups = [
            _fetch_group(broker.groups, g.group_id, g.topics, request.session, stable)
            for g in body.groups
        ]
        return request.response({"throttle_time": 0, "groups": groups})
    answer = _fetch_group(broker.groups, body.group_id, body.topics, request.session, stable)
    del answer["group_id"]  # v1-7 answer the one group at the top level, which has no group_id
    if request.api_version < _FIRST_TOP_LEVEL_ERROR_VERSION and answer["error_code"]:
        # v1 has no group-level error: each requested partition carries it.
        answer["topics"] = [
            {
                "name": t.name,
                "partitions": [_no_offset(p, answer["error_code"]) for p in t.partition_indexes],
            }
            for t in body.topics
        ]
    return request.response({"throttle_time": 0, **answer})


def _fetch_group(
    groups: GroupApi | None,
    group_id: str,
    topics: Any,
    session: Session,
    require_stable: bool = False,
) -> dict[str, Any]:
    """One group's committed offsets as the response's values (v8's group entry)."""
    if groups is None:
        return {"group_id": group_id, "error_code": _NO_COORDINATOR, "topics": []}
    wanted = None if topics is None else [(t.name, p) for t in topics for p in t.partition_indexes]
    code, offsets, refused = groups.fetch_offsets(
        group_id, wanted, session=session, require_stable=require_stable
    )
    return {
        "group_id": group_id,
        "error_code": code,
        "topics": [
            {
                "name": name,
                "partitions": [
                    _no_offset(tp.partition, refused[tp])
                    if tp in refused
                    else _offset(tp.partition, offsets[tp])
                    for tp in tps
                ],
            }
            for name, tps in by_topic(map(TopicPartition._make, sorted(offsets))).items()
        ],
    }


def _offset(partition: int, committed: OffsetAndMetadata | None) -> dict[str, Any]:
    entry = _no_offset(partition, ErrorCode.NONE)
    if committed is not None:
        entry["committed_offset"] = committed.offset
        entry["committed_leader_epoch"] = committed.leader_epoch
        entry["metadata"] = committed.metadata
    return entry


def _no_offset(partition: int, error_code: int) -> dict[str, Any]:
    return {
        "partition_index": partition,
        "committed_offset": -1,
        "committed_leader_epoch": -1,
        "metadata": "",
        "error_code": error_code,
    }


@handler(api_key=47, min_version=0, max_version=0)
async def offset_delete(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    if broker.groups is None:
        return request.response({"error_code": _NO_COORDINATOR, "throttle_time": 0, "topics": []})
    code, results = await broker.groups.delete_offsets(
        body.group_id,
        [(t.name, p.partition_index) for t in body.topics for p in t.partitions],
        session=request.session,
    )
    by_topic: dict[str, list[dict[str, int]]] = {}
    for (topic, partition), partition_code in results.items():
        by_topic.setdefault(topic, []).append(
            {"partition_index": partition, "error_code": partition_code}
        )
    return request.response(
        {
            "error_code": code,
            "throttle_time": 0,
            "topics": [{"name": name, "partitions": parts} for name, parts in by_topic.items()],
        }
    )
