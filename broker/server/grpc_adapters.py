"""The gRPC door's protobuf messages to and from the core's plain values (replication/requests.py,
fetch_session.py): the Data RPCs, and the Control RPCs' LeaderAndIsr and StopReplica
(UpdateMetadata goes to the MetadataCache as protobuf). Only the gRPC door imports protobuf;
replication works on the values alone.

Fetch and OffsetsForLeaderEpoch, which followers send, are mapped both ways: a follower's
``GrpcLeaderEndpoint`` (grpc_leader_endpoint.py) builds the requests and reads the answers, the
leader's ``DataService`` (data_service.py) reads the requests and builds the answers, so what
one side writes is what the other reads:

    message = fetch_request_message(request)       # follower: FetchRequest -> pb.FetchRequest
    request = fetch_request_values(message)        # leader: the same FetchRequest back
    message = fetch_response_message(answer)       # leader: FetchSessionResponse -> protobuf
    answer = fetch_response_values(message)        # follower: the same FetchSessionResponse

The others are the leader's side only: ``produce_request`` reads a request, ``produce_response``
builds its answer, and so on. The RawData methods (proto/raw_records.py) carry the same messages
with the records beside them: ``raw_produce_request`` reads one, ``raw_fetch_response`` builds
one, each partition's records in the header's order.

Requests are flattened to one value per partition; answers are put back the way each response
message is shaped: Produce and Fetch answers (and a follower's requests) grouped by topic in the
order topics first appear, ListOffsets and OffsetsForLeaderEpoch answers in the request's own
topic layout. A Fetch request without ``session_epoch`` is a sessionless fetch (``FINAL_EPOCH``,
KIP-227). Record bytes are handed over as they are (one copy into or out of protobuf; none
for the RawData framing, which slices them out of the message).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from minikafka.broker.replication.fetch_session import FINAL_EPOCH, FetchSessionResponse
from minikafka.broker.replication.replica_selector import ClientMetadata
from minikafka.broker.replication.requests import (
    EpochEndOffset,
    FetchPartition,
    FetchPartitionResult,
    FetchRequest,
    InitProducerIdRequest,
    InitProducerIdResult,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    ListOffsetsPartition,
    ListOffsetsPartitionResult,
    ListOffsetsRequest,
    LiveLeader,
    OffsetForLeaderPartition,
    OffsetsForLeaderEpochRequest,
    PartitionError,
    ProducePartition,
    ProducePartitionResult,
    ProduceRequest,
    Records,
    StopReplicaPartitionState,
    StopReplicaRequest,
    StopReplicaResponse,
    by_request_topic,
    by_topic,
)
from minikafka.broker.storage.segment import FileRecords
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto.common import TopicPartition
from minikafka.proto.raw_records import RawFetchResponse, RawProduceRequest

__all__ = [
    "fetch_request_message",
    "fetch_request_values",
    "fetch_response_message",
    "fetch_response_values",
    "init_producer_id_request",
    "init_producer_id_response",
    "leader_and_isr_request",
    "leader_and_isr_response",
    "list_offsets_request",
    "list_offsets_response",
    "offsets_for_leader_epoch_request_message",
    "offsets_for_leader_epoch_request_values",
    "offsets_for_leader_epoch_response_message",
    "offsets_for_leader_epoch_response_values",
    "produce_request",
    "produce_response",
    "raw_fetch_response",
    "raw_produce_request",
    "stop_replica_request",
    "stop_replica_response",
]


# --- Produce ----------------------------------------------------------------------------------


def produce_request(request: pb.ProduceRequest) -> ProduceRequest:
    return _produce_request(
        request, (data.records for t in request.topic_data for data in t.partition_data)
    )


def raw_produce_request(request: RawProduceRequest) -> ProduceRequest:
    """A RawData produce: the header's partitions with the records framed after it."""
    return _produce_request(request.header, iter(request.records))


def _produce_request(request: pb.ProduceRequest, records: Iterator[Records]) -> ProduceRequest:
    return ProduceRequest(
        request.acks,
        request.timeout_ms,
        [
            ProducePartition(topic.name, data.index, next(records))
            for topic in request.topic_data
            for data in topic.partition_data
        ],
        transactional_id=(
            request.transactional_id if request.HasField("transactional_id") else None
        ),
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


def fetch_request_values(message: pb.FetchRequest, listener: str = "") -> FetchRequest:
    """The fetch a leader serves, with its session (KIP-227): no ``session_epoch`` on the wire
    is a sessionless fetch. A consumer's ``rack_id`` (KIP-392), when sent, is its client
    metadata, with the ``listener`` the fetch came in on."""
    client_metadata = None
    if message.replica_id < 0 and message.HasField("rack_id"):
        client_metadata = ClientMetadata(message.rack_id, listener)
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
        isolation_level=message.isolation_level,
        client_metadata=client_metadata,
    )


def fetch_response_message(response: FetchSessionResponse) -> pb.FetchResponse:
    """A leader's answer on the wire: partitions grouped by topic in the order topics first
    appear; ``diverging_epoch`` set only for a partition that has one."""
    return _fetch_response(response, None)


def raw_fetch_response(response: FetchSessionResponse) -> RawFetchResponse:
    """A leader's answer for RawData: ``fetch_response_message`` without the records, and the
    records of its partitions in the same order. Records must be in memory (not asked for as
    ``file_records``)."""
    records: list[Records] = []
    return RawFetchResponse(_fetch_response(response, records), records)


def _fetch_response(
    response: FetchSessionResponse, records_out: list[Records] | None
) -> pb.FetchResponse:
    """In the message, or (``records_out`` given) appended there in the message's order."""
    message = pb.FetchResponse(error_code=response.error_code, session_id=response.session_id)
    for name, results in by_topic(response.partitions).items():
        topic_response = message.responses.add(topic=name)
        for result in results:
            records = result.records
            assert not isinstance(records, FileRecords), "gRPC fetches read records to memory"
            if records_out is not None:
                records_out.append(records)
                records = b""
            data = topic_response.partitions.add(
                partition_index=result.partition,
                error_code=result.error_code,
                error_message=result.error_message,
                high_watermark=result.high_watermark,
                last_stable_offset=result.last_stable_offset,
                log_start_offset=result.log_start_offset,
                records=records,
            )
            if result.diverging_epoch is not None:
                data.diverging_epoch.epoch, data.diverging_epoch.end_offset = result.diverging_epoch
            if result.preferred_read_replica >= 0:
                data.preferred_read_replica = result.preferred_read_replica
            for producer_id, first_offset in result.aborted_transactions:
                data.aborted_transactions.add(producer_id=producer_id, first_offset=first_offset)
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
                    tuple((a.producer_id, a.first_offset) for a in data.aborted_transactions),
                    (
                        data.preferred_read_replica
                        if data.HasField("preferred_read_replica")
                        else -1
                    ),
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


# --- ListOffsets, InitProducerId --------------------------------------------------------------


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
        isolation_level=request.isolation_level,
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


# --- LeaderAndIsr, StopReplica (the Control service) ------------------------------------------


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
