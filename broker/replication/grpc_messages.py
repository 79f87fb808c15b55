"""The gRPC Data service's Fetch and OffsetsForLeaderEpoch messages to and from the plain values
of requests.py and fetch_session.py, both ways: a follower's ``GrpcLeaderEndpoint``
(grpc_endpoint.py) builds the requests and reads the answers, the leader's ``DataService``
(broker/server/data_service.py) reads the requests and builds the answers. One module, so what
one side writes is what the other reads.

    message = fetch_request_message(request)       # follower: FetchRequest -> pb.FetchRequest
    request = fetch_request_values(message)        # leader: the same FetchRequest back
    message = fetch_response_message(answer)       # leader: FetchSessionResponse -> protobuf
    answer = fetch_response_values(message)        # follower: the same FetchSessionResponse

Requests and answers are flat in the values (one per partition) and grouped by topic on the
wire: a FetchRequest's partitions and forgotten partitions, and a Fetch answer's partitions, by
topic in the order topics first appear; an OffsetsForLeaderEpoch answer in its request's own
topic layout. A request without ``session_epoch`` is a sessionless fetch (``FINAL_EPOCH``,
KIP-227). Record bytes are handed over as they are (one copy into or out of protobuf).
"""

from __future__ import annotations

from collections.abc import Iterable

from minikafka.broker.replication.fetch_session import FINAL_EPOCH, FetchSessionResponse
from minikafka.broker.replication.requests import (
    EpochEndOffset,
    FetchPartition,
    FetchPartitionResult,
    FetchRequest,
    OffsetForLeaderPartition,
    OffsetsForLeaderEpochRequest,
    by_request_topic,
    by_topic,
)
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto.common import TopicPartition

__all__ = [
    "fetch_request_message",
    "fetch_request_values",
    "fetch_response_message",
    "fetch_response_values",
    "offsets_for_leader_epoch_request_message",
    "offsets_for_leader_epoch_request_values",
    "offsets_for_leader_epoch_response_message",
    "offsets_for_leader_epoch_response_values",
]


# --- Fetch ------------------------------------------------------------------------------------


def fetch_request_message(request: FetchRequest) -> pb.FetchRequest:
    """A follower's fetch on the wire (partitions grouped by topic, in order)."""
    message = pb.FetchRequest(
        replica_id=request.replica_id,
        replica_epoch=request.replica_epoch,
        max_wait_ms=request.max_wait_ms,
        min_bytes=request.min_bytes,
        max_bytes=request.max_bytes,
        session_id=request.session_id,
        session_epoch=request.session_epoch,
    )
    for name, partitions in by_topic(request.partitions).items():
        topic = message.topics.add(topic=name)
        for fp in partitions:
            topic.partitions.add(
                partition=fp.partition,
                current_leader_epoch=fp.current_leader_epoch,
                fetch_offset=fp.fetch_offset,
                last_fetched_epoch=fp.last_fetched_epoch,
                log_start_offset=fp.log_start_offset,
                partition_max_bytes=fp.partition_max_bytes,
            )
    for name, forgotten in by_topic(request.forgotten).items():
        message.forgotten_topics_data.add(topic=name, partitions=[tp.partition for tp in forgotten])
    return message


def fetch_request_values(message: pb.FetchRequest) -> FetchRequest:
    """The fetch a leader serves, with its session (KIP-227): no ``session_epoch`` on the wire
    is a sessionless fetch."""
    return FetchRequest(
        message.replica_id,
        message.max_wait_ms,
        message.min_bytes,
        message.max_bytes,
        [
            FetchPartition(
                topic.topic,
                fp.partition,
                fp.fetch_offset,
                fp.current_leader_epoch,
                fp.last_fetched_epoch,
                fp.log_start_offset,
                fp.partition_max_bytes,
            )
            for topic in message.topics
            for fp in topic.partitions
        ],
        session_id=message.session_id,
        session_epoch=(message.session_epoch if message.HasField("session_epoch") else FINAL_EPOCH),
        forgotten=[
            TopicPartition(topic.topic, partition)
            for topic in message.forgotten_topics_data
            for partition in topic.partitions
        ],
        # absent (a consumer, an older sender) is unknown, not broker epoch 0
        replica_epoch=message.replica_epoch if message.HasField("replica_epoch") else -1,
    )


def fetch_response_message(response: FetchSessionResponse) -> pb.FetchResponse:
    """A leader's answer on the wire: partitions grouped by topic in the order topics first
    appear; ``diverging_epoch`` set only for a partition that has one."""
    message = pb.FetchResponse(error_code=response.error_code, session_id=response.session_id)
    for name, results in by_topic(response.partitions).items():
        topic_response = message.responses.add(topic=name)
        for result in results:
            data = topic_response.partitions.add(
                partition_index=result.partition,
                error_code=result.error_code,
                error_message=result.error_message,
                high_watermark=result.high_watermark,
                last_stable_offset=result.last_stable_offset,
                log_start_offset=result.log_start_offset,
                records=result.records,
            )
            if result.diverging_epoch is not None:
                data.diverging_epoch.epoch, data.diverging_epoch.end_offset = result.diverging_epoch
    return message


def fetch_response_values(message: pb.FetchResponse) -> FetchSessionResponse:
    """The plain answer; each partition's records read once (every read of a protobuf bytes
    field copies it)."""
    results: list[FetchPartitionResult] = []
    for topic in message.responses:
        name = topic.topic
        for data in topic.partitions:
            diverging = None
            if data.HasField("diverging_epoch") and data.diverging_epoch.epoch >= 0:
                diverging = (data.diverging_epoch.epoch, data.diverging_epoch.end_offset)
            results.append(
                FetchPartitionResult(
                    name,
                    data.partition_index,
                    data.error_code,
                    data.error_message,
                    data.high_watermark,
                    data.last_stable_offset,
                    data.log_start_offset,
                    data.records,
                    diverging,
                )
            )
    return FetchSessionResponse(message.error_code, message.session_id, results)


# --- OffsetsForLeaderEpoch --------------------------------------------------------------------


def offsets_for_leader_epoch_request_message(
    request: OffsetsForLeaderEpochRequest,
) -> pb.OffsetsForLeaderEpochRequest:
    """A follower's request on the wire (partitions grouped by topic, in order)."""
    message = pb.OffsetsForLeaderEpochRequest(replica_id=request.replica_id)
    for name, partitions in by_topic(request.partitions).items():
        topic = message.topics.add(topic=name)
        for p in partitions:
            topic.partitions.add(
                partition=p.partition,
                current_leader_epoch=p.current_leader_epoch,
                leader_epoch=p.leader_epoch,
            )
    return message


def offsets_for_leader_epoch_request_values(
    message: pb.OffsetsForLeaderEpochRequest,
) -> OffsetsForLeaderEpochRequest:
    return OffsetsForLeaderEpochRequest(
        message.replica_id,
        [
            OffsetForLeaderPartition(
                topic.topic, op.partition, op.leader_epoch, op.current_leader_epoch
            )
            for topic in message.topics
            for op in topic.partitions
        ],
    )


def offsets_for_leader_epoch_response_message(
    request: pb.OffsetsForLeaderEpochRequest, results: Iterable[EpochEndOffset]
) -> pb.OffsetsForLeaderEpochResponse:
    """``results`` are in request order, one per partition: laid out as the request's topics."""
    message = pb.OffsetsForLeaderEpochResponse()
    for topic, answers in by_request_topic(request.topics, results):
        topic_response = message.topics.add(topic=topic.topic)
        for result in answers:
            topic_response.partitions.add(
                partition=result.partition,
                error_code=result.error_code,
                error_message=result.error_message,
                leader_epoch=result.leader_epoch,
                end_offset=result.end_offset,
            )
    return message


def offsets_for_leader_epoch_response_values(
    message: pb.OffsetsForLeaderEpochResponse,
) -> list[EpochEndOffset]:
    return [
        EpochEndOffset(
            topic.topic, r.partition, r.error_code, r.error_message, r.leader_epoch, r.end_offset
        )
        for topic in message.topics
        for r in topic.partitions
    ]
