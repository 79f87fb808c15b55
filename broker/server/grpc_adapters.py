"""The Data RPCs' protobuf messages to and from the ReplicaManager's values (replication/requests),
and the Control RPCs' LeaderAndIsr and StopReplica (UpdateMetadata goes to the MetadataCache as
protobuf). Fetch and OffsetsForLeaderEpoch, which followers send too, are mapped both ways in
broker/replication/grpc_messages.py, shared with the follower's GrpcLeaderEndpoint.

Requests are flattened to one value per partition; answers are put back the way each response
message has always been shaped: Produce answers grouped by topic in the order topics first
appear, ListOffsets answers in the request's own topic layout. Record bytes are handed over as
they are (one copy into or out of protobuf, as before).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from minikafka.broker.replication.requests import (
    InitProducerIdRequest,
    InitProducerIdResult,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    ListOffsetsPartition,
    ListOffsetsPartitionResult,
    ListOffsetsRequest,
    LiveLeader,
    PartitionError,
    ProducePartition,
    ProducePartitionResult,
    ProduceRequest,
    StopReplicaPartitionState,
    StopReplicaRequest,
    StopReplicaResponse,
    by_request_topic,
    by_topic,
)
from minikafka.proto import minikafka_pb2 as pb

__all__ = [
    "init_producer_id_request",
    "init_producer_id_response",
    "leader_and_isr_request",
    "leader_and_isr_response",
    "list_offsets_request",
    "list_offsets_response",
    "produce_request",
    "produce_response",
    "stop_replica_request",
    "stop_replica_response",
]


def produce_request(request: pb.ProduceRequest) -> ProduceRequest:
    return ProduceRequest(
        request.acks,
        request.timeout_ms,
        [
            ProducePartition(topic.name, data.index, data.records)
            for topic in request.topic_data
            for data in topic.partition_data
        ],
    )


def produce_response(results: Iterable[ProducePartitionResult]) -> pb.ProduceResponse:
    response = pb.ProduceResponse()
    for name, answers in by_topic(results).items():
        topic_response = response.responses.add(name=name)
        for result in answers:
            topic_response.partition_responses.add(
                index=result.partition,
                error_code=result.error_code,
                error_message=result.error_message,
                base_offset=result.base_offset,
                log_append_time_ms=result.log_append_time,
                log_start_offset=result.log_start_offset,
            )
    return response


def list_offsets_request(request: pb.ListOffsetsRequest) -> ListOffsetsRequest:
    return ListOffsetsRequest(
        request.replica_id,
        [
            ListOffsetsPartition(
                topic.name, lp.partition_index, lp.timestamp, lp.current_leader_epoch
            )
            for topic in request.topics
            for lp in topic.partitions
        ],
    )


def list_offsets_response(
    request: pb.ListOffsetsRequest, results: Iterable[ListOffsetsPartitionResult]
) -> pb.ListOffsetsResponse:
    """``results`` are in request order, one per partition: laid out as the request's topics."""
    response = pb.ListOffsetsResponse()
    for topic, answers in by_request_topic(request.topics, results):
        topic_response = response.topics.add(name=topic.name)
        for result in answers:
            topic_response.partitions.add(
                partition_index=result.partition,
                error_code=result.error_code,
                error_message=result.error_message,
                timestamp=result.timestamp,
                offset=result.offset,
                leader_epoch=result.leader_epoch,
            )
    return response


def init_producer_id_request(request: pb.InitProducerIdRequest) -> InitProducerIdRequest:
    return InitProducerIdRequest(
        request.transactional_id if request.HasField("transactional_id") else None,
        request.transaction_timeout_ms,
        request.producer_id,
        request.producer_epoch,
    )


def init_producer_id_response(result: InitProducerIdResult) -> pb.InitProducerIdResponse:
    return pb.InitProducerIdResponse(
        error_code=result.error_code,
        error_message=result.error_message,
        producer_id=result.producer_id,
        producer_epoch=result.producer_epoch,
    )


def leader_and_isr_request(request: pb.LeaderAndIsrRequest) -> LeaderAndIsrRequest:
    return LeaderAndIsrRequest(
        request.controller_id,
        request.controller_epoch,
        request.broker_epoch,
        [
            LeaderAndIsrPartitionState(
                ps.topic_name,
                ps.partition_index,
                ps.controller_epoch,
                ps.leader,
                ps.leader_epoch,
                tuple(ps.isr),
                ps.partition_epoch,
                tuple(ps.replicas),
            )
            for ps in request.partition_states
        ],
        [LiveLeader(live.broker_id, live.host_name, live.port) for live in request.live_leaders],
    )


def _add_partition_errors(add: Callable[..., object], errors: Iterable[PartitionError]) -> None:
    # LeaderAndIsr's and StopReplica's answers carry partition errors of the same fields.
    for e in errors:
        add(
            topic_name=e.topic,
            partition_index=e.partition,
            error_code=e.error_code,
            error_message=e.error_message,
        )


def leader_and_isr_response(
    result: LeaderAndIsrResponse, error_message: str = ""
) -> pb.LeaderAndIsrResponse:
    """``error_message`` says why ``error_code`` refused the whole request (the servicer knows)."""
    response = pb.LeaderAndIsrResponse(error_code=result.error_code, error_message=error_message)
    _add_partition_errors(response.partition_errors.add, result.partition_errors)
    return response


def stop_replica_request(request: pb.StopReplicaRequest) -> StopReplicaRequest:
    return StopReplicaRequest(
        request.controller_id,
        request.controller_epoch,
        request.broker_epoch,
        [
            StopReplicaPartitionState(
                ps.topic_name, ps.partition_index, ps.leader_epoch, ps.delete_partition
            )
            for ps in request.partition_states
        ],
    )


def stop_replica_response(
    result: StopReplicaResponse, error_message: str = ""
) -> pb.StopReplicaResponse:
    """``error_message`` as in leader_and_isr_response."""
    response = pb.StopReplicaResponse(error_code=result.error_code, error_message=error_message)
    _add_partition_errors(response.partition_errors.add, result.partition_errors)
    return response
