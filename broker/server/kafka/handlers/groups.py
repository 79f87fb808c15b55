"""Consumer group membership and administration on the Kafka listener, on the core's GroupApi
and GroupCoordinator that the gRPC door adapts too (so a group may mix minikafka's gRPC
consumers and Kafka clients):

    FindCoordinator (10) v0-6   JoinGroup (11) v0-9    Heartbeat (12) v0-4
    LeaveGroup (13) v0-5        SyncGroup (14) v0-5    DescribeGroups (15) v0-5
    ListGroups (16) v0-5        DeleteGroups (42) v0-2

The coordinator runs Kafka's classic (eager) group protocol; the bytes of subscriptions and
assignments pass through untouched. A broker without a group coordinator answers
COORDINATOR_NOT_AVAILABLE to all of these.

What differs from Kafka, and what a client sees:

* FindCoordinator serves key_type 0 (group) only. Transactions are not supported: key_type 1
  gets INVALID_REQUEST, Kafka's answer for a coordinator type it has no coordinator for (a
  transactional producer fails at once rather than retrying COORDINATOR_NOT_AVAILABLE until
  max.block.ms). v4 answers each key of ``coordinator_keys`` on its own. v5 only allows an
  error of KIP-890's transactions; v6 knows key_type 2 (share groups, KIP-932), which gets
  COORDINATOR_NOT_AVAILABLE as from Kafka 3.9, whose share coordinator does not exist yet
  either (INVALID_REQUEST before v6).
* JoinGroup v5+ and the APIs after it carry ``group_instance_id``: static membership
  (KIP-345). A static member joins in one round (no MEMBER_ID_REQUIRED), and when it comes
  back under a new member id within its session timeout (a restart) it takes its old place:
  in a Stable group it gets the current generation and, from SyncGroup, its old assignment,
  and the other members see no rebalance. Its old member id is then FENCED_INSTANCE_ID in
  JoinGroup, SyncGroup, Heartbeat, LeaveGroup and OffsetCommit. LeaveGroup v3+ may name a
  static member by its instance id alone. For v0-v3, which predate KIP-394, a first dynamic
  join gets its member id and joins in the same request, as Kafka does; from v4 it gets
  MEMBER_ID_REQUIRED with the id and joins again. JoinGroup v8's ``reason`` is logged by
  nobody; v9's ``skip_assignment`` is always false (a restarted leader is told the leader id
  it had, so it does not assign).
* ListGroups v5 ``types_filter``: every group here is of type ``classic``.
* DescribeGroups reports, when asked to (v3+), the bit set of the operations the principal
  has on each group (READ, DELETE, DESCRIBE without an authorizer, KIP-430).
* Authorization is the core's (GroupApi, core/authorization.py): a group the principal may not
  use is GROUP_AUTHORIZATION_FAILED and reaches no coordinator; ListGroups lists only the
  groups it may Describe, unless it may Describe the cluster.
"""

from __future__ import annotations

import datetime
import functools

from minikafka.broker.group.group_metadata import MemberIdentity
from minikafka.broker.server.core.authorization import AUTHORIZED_OPERATIONS_OMITTED
from minikafka.broker.server.core.groups import FoundCoordinator
from minikafka.broker.server.kafka.broker import KafkaBroker
from minikafka.broker.server.kafka.registry import Request, handler
from minikafka.broker.server.kafka.schema import Entity
from minikafka.proto.errors import ErrorCode

__all__ = [
    "delete_groups",
    "describe_groups",
    "find_coordinator",
    "heartbeat",
    "join_group",
    "leave_group",
    "list_groups",
    "sync_group",
]

_NO_COORDINATOR = ErrorCode.COORDINATOR_NOT_AVAILABLE
_FIRST_MEMBER_ID_REQUIRED_VERSION = 4  # KIP-394
_FIRST_BATCHED_LEAVE_VERSION = 3  # KIP-345
_CLASSIC = "classic"  # KIP-848's name for the group protocol served here
_SHARE_KEY_TYPE = 2  # KIP-932
_FIRST_SHARE_KEY_VERSION = 6


def _millis(value: datetime.timedelta) -> int:
    return value // datetime.timedelta(milliseconds=1)


# --- FindCoordinator ---------------------------------------------------------------------------


@handler(api_key=10, min_version=0, max_version=6)
async def find_coordinator(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    batched = request.api_version >= 4
    keys = list(body.coordinator_keys) if batched else [body.key]
    key_type = int(getattr(body, "key_type", 0))  # v0 knows groups only
    groups = broker.groups
    coordinators = []
    for key in keys:
        found = (
            FoundCoordinator(_NO_COORDINATOR, "this broker has no group coordinator")
            if groups is None
            else FoundCoordinator(_NO_COORDINATOR, "share groups are not supported")
            if key_type == _SHARE_KEY_TYPE and request.api_version >= _FIRST_SHARE_KEY_VERSION
            else await groups.find_coordinator(
                key, key_type, listener=request.listener, session=request.session
            )
        )
        coordinators.append(
            {
                "key": key,
                "node_id": found.node_id,
                "host": found.host,
                "port": found.port,
                "error_code": found.error,
                "error_message": found.error_message or None,
            }
        )
    if batched:
        return request.response({"throttle_time": 0, "coordinators": coordinators})
    (coordinator,) = coordinators
    del coordinator["key"]  # v0-3 answer one coordinator at the top level, which has no key
    return request.response({"throttle_time": 0, **coordinator})


# --- JoinGroup and SyncGroup -------------------------------------------------------------------


@handler(api_key=11, min_version=0, max_version=9)
async def join_group(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    if broker.groups is None:
        return _join_error(request, _NO_COORDINATOR, body.member_id)
    # v0 has no rebalance timeout (kio's default -1): the coordinator then uses the session
    # timeout, as Kafka does.
    rebalance_timeout = getattr(body, "rebalance_timeout", None)
    join = functools.partial(
        broker.groups.join_group,
        body.group_id,
        client_id=request.client_id or "",
        client_host=f"/{request.client_host}",
        session_timeout_ms=_millis(body.session_timeout),
        rebalance_timeout_ms=-1 if rebalance_timeout is None else _millis(rebalance_timeout),
        protocol_type=body.protocol_type,
        protocols=[(p.name, p.metadata) for p in body.protocols],
        group_instance_id=getattr(body, "group_instance_id", None),  # v5+
        session=request.session,
    )
    answer = await join(body.member_id)
    if (
        answer.error == ErrorCode.MEMBER_ID_REQUIRED
        and request.api_version < _FIRST_MEMBER_ID_REQUIRED_VERSION
    ):
        # The client cannot know MEMBER_ID_REQUIRED: join with the id it was just given.
        answer = await join(answer.member_id)
    if answer.error != ErrorCode.NONE:  # MEMBER_ID_REQUIRED included: the id goes back
        return _join_error(request, answer.error, answer.member_id or body.member_id)
    return request.response(
        {
            "throttle_time": 0,
            "error_code": ErrorCode.NONE,
            "generation_id": answer.generation_id,
            "protocol_type": answer.protocol_type or None,
            "protocol_name": answer.protocol_name,
            "leader": answer.leader,
            "member_id": answer.member_id,
            "members": [
                {"member_id": member_id, "group_instance_id": instance_id, "metadata": metadata}
                for member_id, instance_id, metadata in answer.members
            ],
        }
    )


def _join_error(request: Request, code: int, member_id: str) -> Entity:
    """Kafka's JoinGroup error answer: no generation, no protocol, no leader."""
    return request.response(
        {
            "throttle_time": 0,
            "error_code": code,
            "generation_id": -1,
            "protocol_name": "",
            "leader": "",
            "member_id": member_id,
            "members": [],
        }
    )


@handler(api_key=14, min_version=0, max_version=5)
async def sync_group(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    if broker.groups is None:
        return request.response({"throttle_time": 0, "error_code": _NO_COORDINATOR})
    answer = await broker.groups.sync_group(
        body.group_id,
        body.generation_id,
        body.member_id,
        {a.member_id: a.assignment for a in body.assignments},
        # v5: the client's view of the group's protocol, checked by the coordinator.
        protocol_type=getattr(body, "protocol_type", None) or "",
        protocol_name=getattr(body, "protocol_name", None) or "",
        group_instance_id=getattr(body, "group_instance_id", None),  # v3+
        session=request.session,
    )
    return request.response(
        {
            "throttle_time": 0,
            "error_code": answer.error,
            "protocol_type": answer.protocol_type or None,
            "protocol_name": answer.protocol_name or None,
            "assignment": answer.assignment,
        }
    )


# --- Heartbeat and LeaveGroup ------------------------------------------------------------------


@handler(api_key=12, min_version=0, max_version=4)
async def heartbeat(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    if broker.groups is None:
        return request.response({"throttle_time": 0, "error_code": _NO_COORDINATOR})
    code = broker.groups.heartbeat(
        body.group_id,
        body.member_id,
        body.generation_id,
        getattr(body, "group_instance_id", None),  # v3+
        session=request.session,
    )
    return request.response({"throttle_time": 0, "error_code": code})


@handler(api_key=13, min_version=0, max_version=5)
async def leave_group(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    batched = request.api_version >= _FIRST_BATCHED_LEAVE_VERSION
    leaving = (
        [
            (m.member_id, m.group_instance_id, getattr(m, "reason", None) or "")  # reason: v5
            for m in body.members
        ]
        if batched
        else [(body.member_id, None, "")]
    )
    if broker.groups is None:
        return request.response({"throttle_time": 0, "error_code": _NO_COORDINATOR})
    code, results = broker.groups.leave_group(
        body.group_id,
        [MemberIdentity(member_id, instance_id) for member_id, instance_id, _ in leaving],
        session=request.session,
    )
    if not batched:
        # One member: its error is the answer's (Kafka's LeaveGroupResponse before v3).
        return request.response(
            {"throttle_time": 0, "error_code": code or next((c for _, c in results), 0)}
        )
    return request.response(
        {
            "throttle_time": 0,
            "error_code": code,
            "members": [
                {
                    "member_id": member_id,
                    "group_instance_id": instance_id,
                    "error_code": member_code,
                }
                for (member_id, instance_id, _), (_, member_code) in zip(
                    leaving, results, strict=False
                )
            ],
        }
    )


# --- DescribeGroups, ListGroups, DeleteGroups --------------------------------------------------


@handler(api_key=15, min_version=0, max_version=5)
async def describe_groups(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    if broker.groups is None:
        groups = [
            {
                "error_code": _NO_COORDINATOR,
                "group_id": g,
                "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
            }
            for g in body.groups
        ]
        return request.response({"throttle_time": 0, "groups": groups})
    return request.response(
        {
            "throttle_time": 0,
            "groups": [
                {
                    "error_code": g.error,
                    "group_id": g.group_id,
                    "group_state": g.state,
                    "protocol_type": g.protocol_type,
                    "protocol_data": g.protocol_data,
                    "members": [
                        {
                            "member_id": m.member_id,
                            "group_instance_id": m.group_instance_id,
                            "client_id": m.client_id,
                            "client_host": m.client_host,
                            "member_metadata": m.metadata,
                            "member_assignment": m.assignment,
                        }
                        for m in g.members
                    ],
                    "authorized_operations": g.authorized_operations,
                }
                for g in broker.groups.describe_groups(
                    body.groups,
                    session=request.session,
                    include_authorized_operations=getattr(
                        body, "include_authorized_operations", False
                    ),
                )
            ],
        }
    )


@handler(api_key=16, min_version=0, max_version=5)
async def list_groups(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    if broker.groups is None:
        return request.response({"throttle_time": 0, "error_code": _NO_COORDINATOR})
    types = {t.lower() for t in getattr(body, "types_filter", ())}
    if types and _CLASSIC not in types:
        return request.response({"throttle_time": 0, "error_code": 0, "groups": []})
    code, groups = broker.groups.list_groups(
        list(getattr(body, "states_filter", ())), session=request.session
    )
    return request.response(
        {
            "throttle_time": 0,
            "error_code": code,
            "groups": [
                {
                    "group_id": group_id,
                    "protocol_type": protocol_type,
                    "group_state": state,
                    "group_type": _CLASSIC,
                }
                for group_id, protocol_type, state in groups
            ],
        }
    )


@handler(api_key=42, min_version=0, max_version=2)
async def delete_groups(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    if broker.groups is None:
        results = [{"group_id": g, "error_code": _NO_COORDINATOR} for g in body.groups_names]
        return request.response({"throttle_time": 0, "results": results})
    deleted = await broker.groups.delete_groups(body.groups_names, session=request.session)
    return request.response(
        {
            "throttle_time": 0,
            "results": [
                {"group_id": group_id, "error_code": code} for group_id, code in deleted.items()
            ],
        }
    )
