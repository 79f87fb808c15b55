"""OffsetCommit (8) v2-8 and OffsetFetch (9) v1-8 on the Kafka listener, through the GroupService
the gRPC door uses: the offsets are the same records in ``__consumer_offsets`` whichever door
committed them, so a Kafka client resumes where a minikafka consumer of its group stopped, and
the reverse.

* OffsetCommit: ``generation_id`` -1 with no member id is a commit from outside group
  management (a "simple" consumer or an admin tool), accepted while the group has no members,
  as Kafka does; a member commits with its generation. ``retention_time`` (v2-v4) is not
  honoured: ``offsets.retention.minutes`` applies, as Kafka does from v5 on.
  ``group_instance_id`` (v7+) is ignored: the coordinator has no static members (see
  groups.py), which is how Kafka treats it while none is registered. v9 (KIP-848 member
  epochs) is not served.
* OffsetFetch: a null topic list (v2+) asks for every partition the group committed; a
  partition without a commit answers offset -1. Group-level errors go into each requested
  partition in v1, into ``error_code`` from v2 on (Kafka's layout). v8 batches groups.
  ``require_stable`` (v7+) needs nothing: without transactions no offset is ever pending.
  v9 (KIP-848 member epochs) is not served.

A broker without a group coordinator answers COORDINATOR_NOT_AVAILABLE.
"""

from __future__ import annotations

from typing import Any

from minikafka.broker.server.group_service import GroupService
from minikafka.broker.server.kafka.broker import KafkaBroker, peer_context
from minikafka.broker.server.kafka.registry import Request, handler
from minikafka.broker.server.kafka.schema import Entity
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto.errors import ErrorCode

__all__ = ["offset_commit", "offset_fetch"]

_NO_COORDINATOR = ErrorCode.COORDINATOR_NOT_AVAILABLE
_FIRST_TOP_LEVEL_ERROR_VERSION = 2
_FIRST_BATCHED_VERSION = 8


@handler(api_key=8, min_version=2, max_version=8)
async def offset_commit(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    service = broker.group(request.listener)
    if service is None:
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
    commit = pb.OffsetCommitRequest(
        group_id=body.group_id,
        generation_id=body.generation_id_or_member_epoch,
        member_id=body.member_id,
    )
    for topic in body.topics:
        entry = commit.topics.add(name=topic.name)
        for p in topic.partitions:
            partition = entry.partitions.add(
                partition_index=p.partition_index,
                committed_offset=p.committed_offset,
                committed_leader_epoch=getattr(p, "committed_leader_epoch", -1),  # v6+
            )
            if p.committed_metadata is not None:
                partition.committed_metadata = p.committed_metadata
    answer = await service.OffsetCommit(commit, peer_context(request))
    return request.response(
        {
            "throttle_time": 0,
            "topics": [
                {
                    "name": t.name,
                    "partitions": [
                        {"partition_index": p.partition_index, "error_code": p.error_code}
                        for p in t.partitions
                    ],
                }
                for t in answer.topics
            ],
        }
    )


@handler(api_key=9, min_version=1, max_version=8)
async def offset_fetch(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    service = broker.group(request.listener)
    if request.api_version >= _FIRST_BATCHED_VERSION:
        groups = [
            await _fetch_group(service, request, g.group_id, g.topics, body.require_stable)
            for g in body.groups
        ]
        return request.response({"throttle_time": 0, "groups": groups})
    answer = await _fetch_group(
        service, request, body.group_id, body.topics, getattr(body, "require_stable", False)
    )
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


async def _fetch_group(
    service: GroupService | None,
    request: Request,
    group_id: str,
    topics: Any,
    require_stable: bool,
) -> dict[str, Any]:
    """One group's committed offsets as the response's values (v8's group entry)."""
    if service is None:
        return {"group_id": group_id, "error_code": _NO_COORDINATOR, "topics": []}
    fetch = pb.OffsetFetchRequest(
        group_id=group_id, all_topics=topics is None, require_stable=require_stable
    )
    for topic in topics or ():
        fetch.topics.add(name=topic.name, partition_indexes=list(topic.partition_indexes))
    answer = await service.OffsetFetch(fetch, peer_context(request))
    return {
        "group_id": group_id,
        "error_code": answer.error_code,
        "topics": [
            {
                "name": t.name,
                "partitions": [
                    {
                        "partition_index": p.partition_index,
                        "committed_offset": p.committed_offset,
                        "committed_leader_epoch": p.committed_leader_epoch,
                        "metadata": p.metadata if p.HasField("metadata") else "",
                        "error_code": p.error_code,
                    }
                    for p in t.partitions
                ],
            }
            for t in answer.topics
        ],
    }


def _no_offset(partition: int, error_code: int) -> dict[str, Any]:
    return {
        "partition_index": partition,
        "committed_offset": -1,
        "committed_leader_epoch": -1,
        "metadata": "",
        "error_code": error_code,
    }
