"""Fetch (key 1), versions 4-17, for consumers and followers: the core's ``FetchApi``
(broker/server/core/fetch.py), which the gRPC Fetch calls too, records as it returns them: left
in the segment files (``FileRecords``, asked for with ``file_records``), which the connection
sends with sendfile(2), never decoded or copied here.

``max_wait_ms``, ``min_bytes``, ``max_bytes`` and ``partition_max_bytes`` go to the core's
long-poll as they are; the first batch comes back even when larger than the limits, as in
Kafka. READ_COMMITTED (KIP-98) reads up to the last stable offset and gets the aborted
transactions (producer id, first offset) its records overlap, so that the client drops their
records; READ_UNCOMMITTED reads up to the high watermark and gets ``aborted_transactions``
null, as Kafka sends.

Fetch sessions (KIP-227), v7+: served from the broker's one session cache
(``ReplicaManager.fetch_sessions``, broker/replication/fetch_session.py), the one the followers'
gRPC fetches use. A full fetch with ``session_epoch`` 0 opens a session (or gets session id 0
when the cache has no slot for it); later fetches list only changed partitions plus
``forgotten_topics_data``, and their answers carry only partitions with news. Java clients and
kafka-python open sessions; librdkafka sends sessionless fetches (``session_epoch`` -1), and
fetches before v7 are sessionless too. An unknown session is FETCH_SESSION_ID_NOT_FOUND, a wrong
epoch INVALID_FETCH_SESSION_EPOCH, in the top-level ``error_code``, after which clients send a
full fetch.

Followers (``replica_id`` >= 0, the follower's broker id) fetch on the inter-broker listener
when inter.broker.listener.name names a Kafka listener (KIP-291's split: the controller's
requests stay on control.plane.listener.name, a gRPC one). Their fetch takes the path of the
gRPC follower fetch: the same session cache and ``fetch_messages``, whose fetch offset is the
follower's LEO (it moves the HW and the ISR); the answer adds ``diverging_epoch`` (KIP-320, a
tagged field) when the follower's ``last_fetched_epoch`` says its log diverged. v12 carries no
broker epoch (``replica_epoch``, KIP-903, comes with v15); the gRPC fetch's is not checked by
the leader either. On any other listener a fetch with ``replica_id`` >= 0 gets
TOPIC_AUTHORIZATION_FAILED on every partition (the core refuses it, as for gRPC).

Topic ids (KIP-516), v13+: the request and the answer name each topic by its id, resolved to
its name in the broker's metadata cache (Kafka's ``topicIdsToNames``). An id the cache does not
know (a topic deleted, or deleted and re-created under the same name, which gets a new id) is
UNKNOWN_TOPIC_ID on each of its partitions, as Kafka answers; a ``forgotten_topics_data`` entry
with such an id forgets the session's partitions held under it (Kafka keys sessions by id). A
fetch session keeps the id each partition was named by: when the topic is deleted and
re-created under the same name while a session holds it, the session's partition answers
INCONSISTENT_TOPIC_ID under the old id (Kafka's ReplicaManager check) until the fetcher names
the new id or forgets the old one. v14 adds only an error code of tiered storage (not
implemented); v15 moves the follower's id into the tagged ``replica_state`` (its
``replica_epoch`` is not checked, as for v12); v16 (KIP-951) adds, for a partition answered
NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH, the leader and epoch the metadata cache knows
(``current_leader``) and that leader's endpoint on the request's listener
(``node_endpoints``), so the client goes there without a Metadata round trip; v17 adds the
follower's ``replica_directory_id`` (KIP-853, KRaft's), ignored.

Fetching from the closest replica (KIP-392), v11+: the consumer's ``rack_id`` (its
``client.rack``, "" for none) and the listener are its client metadata. With it a follower
serves the consumer up to its own high watermark, and a leader whose broker has a
``replica.selector.class`` may answer ``preferred_read_replica`` (and no records) to send it
to a replica in its rack (broker/replication/replica_selector.py). Before v11 a consumer reads
from leaders only, as Kafka's fetchOnlyLeader says.
"""

from __future__ import annotations

import datetime
import uuid
from dataclasses import replace
from typing import Any

from minikafka.broker.replication.fetch_session import FINAL_EPOCH, INVALID_SESSION_ID
from minikafka.broker.replication.replica_selector import ClientMetadata
from minikafka.broker.replication.requests import (
    FetchedRecords,
    FetchPartition,
    FetchPartitionResult,
    FetchRequest,
    by_topic,
)
from minikafka.broker.server.kafka.broker import KafkaBroker
from minikafka.broker.server.kafka.handlers.topic_ids import from_uuid, to_uuid
from minikafka.broker.server.kafka.registry import Request, handler
from minikafka.broker.server.kafka.schema import Entity
from minikafka.broker.server.quotas import QuotaType, quota_user
from minikafka.broker.storage.segment import FileRecords
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode

_MS = datetime.timedelta(milliseconds=1)
_READ_COMMITTED = 1
_NO_DIVERGENCE: dict[str, Any] = {}  # the tagged field's default: not sent


_FIRST_RACK_ID_VERSION = 11  # KIP-392
_FIRST_TOPIC_ID_VERSION = 13  # KIP-516
_FIRST_REPLICA_STATE_VERSION = 15  # KIP-903
_FIRST_NODE_ENDPOINTS_VERSION = 16  # KIP-951
# The errors after which a v16+ answer says where the leader is (Kafka's KafkaApis does so).
_LEADER_MOVED = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH})


def replica_id(request: Request) -> int:
    """The fetcher's broker id, -1 for a consumer: a field of its own up to v14, inside the
    tagged ``replica_state`` from v15 (KIP-903)."""
    if request.api_version >= _FIRST_REPLICA_STATE_VERSION:
        return int(request.body.replica_state.replica_id)
    return int(request.body.replica_id)


@handler(api_key=1, min_version=4, max_version=17)
async def fetch(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    by_id = request.api_version >= _FIRST_TOPIC_ID_VERSION
    names = broker.metadata_cache.topic_names_by_id() if by_id else {}
    unknown_ids: dict[uuid.UUID, list[int]] = {}
    partitions: list[FetchPartition] = []
    for topic in body.topics:
        name = names.get(from_uuid(topic.topic_id)) if by_id else topic.topic
        if name is None:
            unknown_ids.setdefault(topic.topic_id, []).extend(p.partition for p in topic.partitions)
            continue
        partitions.extend(
            FetchPartition(
                name,
                p.partition,
                p.fetch_offset,
                getattr(p, "current_leader_epoch", -1),
                getattr(p, "last_fetched_epoch", -1),
                getattr(p, "log_start_offset", -1),
                p.partition_max_bytes,
                from_uuid(topic.topic_id) if by_id else "",
            )
            for p in topic.partitions
        )
    forgotten: list[TopicPartition] = []
    unknown_forgotten: dict[str, set[int]] = {}
    for topic in getattr(body, "forgotten_topics_data", ()):
        name = names.get(from_uuid(topic.topic_id)) if by_id else topic.topic
        if name is not None:
            forgotten.extend(TopicPartition(name, partition) for partition in topic.partitions)
        else:
            unknown_forgotten.setdefault(from_uuid(topic.topic_id), set()).update(topic.partitions)
    if unknown_forgotten:
        forgotten.extend(_held_by_id(broker, getattr(body, "session_id", 0), unknown_forgotten))
    client_metadata = None
    if request.api_version >= _FIRST_RACK_ID_VERSION and replica_id(request) < 0:
        client_metadata = ClientMetadata(
            body.rack_id or "", request.listener, request.client_id or ""
        )
    answer = await broker.fetches.fetch(
        FetchRequest(
            replica_id(request),
            body.max_wait // _MS,
            body.min_bytes,
            body.max_bytes,
            partitions,
            file_records=True,
            # before v7 a fetch is sessionless
            session_id=getattr(body, "session_id", INVALID_SESSION_ID),
            session_epoch=getattr(body, "session_epoch", FINAL_EPOCH),
            forgotten=forgotten,
            isolation_level=body.isolation_level,
            client_metadata=client_metadata,
        ),
        listener=request.listener,
        session=request.session,
    )
    throttle_ms = 0
    if replica_id(request) < 0:  # followers are not held by client quotas
        throttle_ms = _consumer_quota(request, broker, answer.partitions)
        if throttle_ms:
            # Kafka answers a throttled fetch with no records (and takes their bytes back):
            # the consumer fetches them again once the throttle time is over.
            for result in answer.partitions:
                if isinstance(result.records, FileRecords):
                    result.records.close()
            answer = answer._replace(
                partitions=[replace(p, records=b"") for p in answer.partitions]
            )
    read_committed = body.isolation_level == _READ_COMMITTED
    leaders = request.api_version >= _FIRST_NODE_ENDPOINTS_VERSION
    node_endpoints: dict[int, dict[str, Any]] = {}
    responses = []
    grouped: dict[str, list[FetchPartitionResult]] = (
        _by_topic_id(broker, answer.session_id, partitions, answer.partitions)
        if by_id
        else by_topic(answer.partitions)
    )
    for topic_or_id, results in grouped.items():
        answered = [_partition(r, read_committed) for r in results]
        if leaders:
            for result, partition in zip(results, answered, strict=True):
                if result.error_code in _LEADER_MOVED:
                    _add_current_leader(broker, request.listener, result, partition, node_endpoints)
        responses.append(
            {"topic_id": to_uuid(topic_or_id), "partitions": answered}
            if by_id
            else {"topic": topic_or_id, "partitions": answered}
        )
    responses.extend(
        {
            "topic_id": topic_id,
            "partitions": [_unknown_topic_id(partition) for partition in unknown_partitions],
        }
        for topic_id, unknown_partitions in unknown_ids.items()
    )
    return request.response(
        {
            "throttle_time": throttle_ms,
            "error_code": answer.error_code,
            "session_id": answer.session_id,
            "responses": responses,
            "node_endpoints": list(node_endpoints.values()),
        }
    )


def _consumer_quota(
    request: Request, broker: KafkaBroker, results: list[FetchPartitionResult]
) -> int:
    """consumer_byte_rate: the answer's record bytes counted; the throttle time (0: within
    the quota), the bytes taken back when throttled."""
    quotas = broker.quotas
    if not quotas.active:
        return 0
    size = sum(_records_size(r.records) for r in results)
    user, client_id = quota_user(request.session), request.client_id or ""
    throttle_ms = quotas.record(QuotaType.FETCH, user, client_id, size)
    if throttle_ms:
        quotas.unrecord(QuotaType.FETCH, user, client_id, size)
        request.throttle(throttle_ms)
    return throttle_ms


def _records_size(records: FetchedRecords) -> int:
    return records.size if isinstance(records, FileRecords) else len(records)


def _by_topic_id(
    broker: KafkaBroker,
    session_id: int,
    listed: list[FetchPartition],
    results: list[FetchPartitionResult],
) -> dict[str, list[FetchPartitionResult]]:
    """The results grouped by the topic id the fetcher knows each partition by: the id this
    fetch listed it under, else the one its fetch session holds for it. A session's partition
    whose id is no longer its topic's (the topic was deleted and re-created under the same name
    since the session took it) answers INCONSISTENT_TOPIC_ID instead of the new topic's
    records, as Kafka's ReplicaManager answers a session's stale id."""
    cache = broker.metadata_cache
    ids = {(fp.topic, fp.partition): fp.topic_id for fp in listed}
    session = broker.replica_manager.fetch_sessions.cache.get(session_id) if session_id else None
    grouped: dict[str, list[FetchPartitionResult]] = {}
    for result in results:
        current = cache.topic_id(result.topic)
        known = ids.get((result.topic, result.partition))
        if known is None and session is not None:
            held = session.partitions.get(TopicPartition(result.topic, result.partition))
            known = held.topic_id if held is not None else None
        if not known:
            known = current
        elif current and known != current and result.error_code == ErrorCode.NONE:
            if isinstance(result.records, FileRecords):
                result.records.close()
            result = FetchPartitionResult(
                result.topic, result.partition, ErrorCode.INCONSISTENT_TOPIC_ID
            )
        grouped.setdefault(known, []).append(result)
    return grouped


def _held_by_id(
    broker: KafkaBroker, session_id: int, forgotten: dict[str, set[int]]
) -> list[TopicPartition]:
    """The partitions the fetch session holds under ids the metadata cache no longer knows
    (a deleted topic's) that the fetch forgets: Kafka's sessions are keyed by id, so forgetting
    one by an id the broker no longer knows still takes it out of the session."""
    session = broker.replica_manager.fetch_sessions.cache.get(session_id) if session_id else None
    if session is None:
        return []
    return [
        tp
        for tp, held in session.partitions.items()
        if tp.partition in forgotten.get(held.topic_id, ())
    ]


def _unknown_topic_id(partition: int) -> dict[str, Any]:
    return {
        "partition_index": partition,
        "error_code": ErrorCode.UNKNOWN_TOPIC_ID,
        "high_watermark": -1,
        "last_stable_offset": -1,
        "log_start_offset": -1,
        "preferred_read_replica": -1,
        "records": b"",
    }


def _add_current_leader(
    broker: KafkaBroker,
    listener: str,
    result: FetchPartitionResult,
    partition: dict[str, Any],
    node_endpoints: dict[int, dict[str, Any]],
) -> None:
    """KIP-951: the partition's leader as the metadata cache knows it, and its endpoint on
    ``listener`` (none when it is not alive or has no such listener)."""
    cache = broker.metadata_cache
    info = cache.get_partition(result.topic, result.partition)
    if info is None:
        return
    partition["current_leader"] = {"leader_id": info.leader, "leader_epoch": info.leader_epoch}
    endpoint = cache.get_listener_endpoint(info.leader, listener) if info.leader >= 0 else None
    alive = cache.get_alive_broker(info.leader)
    if endpoint is not None and alive is not None:
        host, port = endpoint
        node_endpoints[info.leader] = {
            "node_id": info.leader,
            "host": host,
            "port": port,
            "rack": alive.rack,
        }


def _partition(result: FetchPartitionResult, read_committed: bool) -> dict[str, Any]:
    aborted = (
        [{"producer_id": pid, "first_offset": first} for pid, first in result.aborted_transactions]
        if read_committed
        else None
    )
    return {
        "partition_index": result.partition,
        "error_code": result.error_code,
        "high_watermark": result.high_watermark,
        "last_stable_offset": result.last_stable_offset,
        "log_start_offset": result.log_start_offset,
        "aborted_transactions": aborted,
        "preferred_read_replica": result.preferred_read_replica,
        "records": result.records,
        **(
            _NO_DIVERGENCE
            if result.diverging_epoch is None
            else {
                "diverging_epoch": {
                    "epoch": result.diverging_epoch[0],
                    "end_offset": result.diverging_epoch[1],
                }
            }
        ),
    }
