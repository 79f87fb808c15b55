"""The Data and Control RPCs' messages to the core's values and back keep each message's shape.
Fetch and OffsetsForLeaderEpoch, which a follower writes and its leader reads, go both ways:
what one side writes, the other reads back equal (values -> protobuf -> values), partitions
grouped by topic on the wire.

Values are read back as lists, as the fetcher builds them, and grouped by topic: the values
here are, where a round trip is compared.
"""

from __future__ import annotations

from dataclasses import replace

from minikafka.broker.replication.fetch_session import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    INVALID_SESSION_ID,
    FetchSessionResponse,
)
from minikafka.broker.replication.replica_selector import ClientMetadata
from minikafka.broker.replication.requests import (
    EpochEndOffset,
    FetchPartition,
    FetchPartitionResult,
    FetchRequest,
    LeaderAndIsrPartitionState,
    LeaderAndIsrResponse,
    ListOffsetsPartitionResult,
    LiveLeader,
    OffsetForLeaderPartition,
    OffsetsForLeaderEpochRequest,
    PartitionError,
    ProducePartitionResult,
    StopReplicaPartitionState,
    StopReplicaResponse,
)
from minikafka.broker.server import grpc_adapters as adapt
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode
from minikafka.proto.raw_records import RawProduceRequest


def test_produce_request_is_flattened_and_answers_grouped_by_topic() -> None:
    request = pb.ProduceRequest(acks=-1, timeout_ms=100)
    request.topic_data.add(name="a").partition_data.add(index=0, records=b"x")
    request.topic_data.add(name="b").partition_data.add(index=1, records=b"y")
    values = adapt.produce_request(request)
    assert (values.acks, values.timeout_ms) == (-1, 100)
    assert [(p.topic, p.partition, p.records) for p in values.partitions] == [
        ("a", 0, b"x"),
        ("b", 1, b"y"),
    ]
    response = adapt.produce_response(
        [
            ProducePartitionResult("a", 0, 0, "", 5, 0),
            ProducePartitionResult("b", 1, 6, "not leader"),
            ProducePartitionResult("a", 2, 0, "", 9, 0),
        ]
    )
    assert [(t.name, [p.index for p in t.partition_responses]) for t in response.responses] == [
        ("a", [0, 2]),
        ("b", [1]),
    ]
    first = response.responses[0].partition_responses[0]
    assert (first.base_offset, first.log_append_time_ms) == (5, -1)


def test_list_offsets_answers_in_the_request_layout() -> None:
    request = pb.ListOffsetsRequest(replica_id=-1)
    request.topics.add(name="t").partitions.add(partition_index=0, timestamp=-1)
    request.topics.add(name="empty")
    request.topics.add(name="t").partitions.add(partition_index=1, timestamp=-2)
    values = adapt.list_offsets_request(request)
    assert [(p.topic, p.partition, p.timestamp) for p in values.partitions] == [
        ("t", 0, -1),
        ("t", 1, -2),
    ]
    response = adapt.list_offsets_response(
        request,
        [ListOffsetsPartitionResult("t", 0, 0, offset=7), ListOffsetsPartitionResult("t", 1, 0)],
    )
    assert [(t.name, [p.offset for p in t.partitions]) for t in response.topics] == [
        ("t", [7]),
        ("empty", []),
        ("t", [-1]),
    ]


def test_init_producer_id_request_keeps_an_empty_transactional_id() -> None:
    assert adapt.init_producer_id_request(pb.InitProducerIdRequest()).transactional_id is None
    empty = pb.InitProducerIdRequest(transactional_id="")
    assert adapt.init_producer_id_request(empty).transactional_id == ""


def test_leader_and_isr_request_and_answer() -> None:
    request = pb.LeaderAndIsrRequest(controller_id=2, controller_epoch=7, broker_epoch=40)
    request.partition_states.add(
        topic_name="t",
        partition_index=1,
        controller_epoch=6,
        leader=2,
        leader_epoch=9,
        isr=[2, 3],
        partition_epoch=12,
        replicas=[3, 2, 1],
    )
    request.live_leaders.add(broker_id=2, host_name="h2", port=9093)
    values = adapt.leader_and_isr_request(request)
    assert (values.controller_id, values.controller_epoch, values.broker_epoch) == (2, 7, 40)
    assert list(values.partition_states) == [
        LeaderAndIsrPartitionState("t", 1, 6, 2, 9, (2, 3), 12, (3, 2, 1))
    ]
    assert list(values.live_leaders) == [LiveLeader(2, "h2", 9093)]

    response = adapt.leader_and_isr_response(
        LeaderAndIsrResponse(0, [PartitionError("t", 1, 0), PartitionError("u", 0, 3, "no")])
    )
    assert (response.error_code, response.error_message) == (0, "")
    assert [
        (e.topic_name, e.partition_index, e.error_code, e.error_message)
        for e in response.partition_errors
    ] == [("t", 1, 0, ""), ("u", 0, 3, "no")]
    refused = adapt.leader_and_isr_response(LeaderAndIsrResponse(11), "controller epoch 1 is old")
    assert (refused.error_code, refused.error_message) == (11, "controller epoch 1 is old")
    assert not refused.partition_errors


def test_stop_replica_request_and_answer() -> None:
    request = pb.StopReplicaRequest(controller_id=1, controller_epoch=3, broker_epoch=8)
    request.partition_states.add(topic_name="t", partition_index=0, leader_epoch=-2)
    request.partition_states.add(
        topic_name="t", partition_index=1, leader_epoch=4, delete_partition=True
    )
    values = adapt.stop_replica_request(request)
    assert (values.controller_id, values.controller_epoch, values.broker_epoch) == (1, 3, 8)
    assert list(values.partition_states) == [
        StopReplicaPartitionState("t", 0, -2, False),
        StopReplicaPartitionState("t", 1, 4, True),
    ]
    response = adapt.stop_replica_response(
        StopReplicaResponse(0, [PartitionError("t", 0, 0), PartitionError("t", 1, 76)])
    )
    assert [(e.partition_index, e.error_code) for e in response.partition_errors] == [
        (0, 0),
        (1, 76),
    ]


# --- Fetch and OffsetsForLeaderEpoch, both ways -----------------------------------------------


def _fetch_round_trip(request: FetchRequest) -> FetchRequest:
    # through the bytes too, as it crosses the wire
    wire = pb.FetchRequest.FromString(adapt.fetch_request_message(request).SerializeToString())
    return adapt.fetch_request_values(wire)


def _response_round_trip(response: FetchSessionResponse) -> FetchSessionResponse:
    wire = adapt.fetch_response_message(response).SerializeToString()
    return adapt.fetch_response_values(pb.FetchResponse.FromString(wire))


def test_an_incremental_fetch_of_several_topics_with_forgotten_partitions_round_trips() -> None:
    request = FetchRequest(
        2,
        500,
        1,
        10_000,
        [
            FetchPartition("a", 0, 10, 3, 2, 0, 4096),
            FetchPartition("a", 2, 7, 3, 3, 5, 0),
            FetchPartition("b", 1, 0),
        ],
        session_id=123,
        session_epoch=7,
        forgotten=[TopicPartition("c", 0), TopicPartition("c", 4), TopicPartition("a", 1)],
        replica_epoch=40,
    )
    assert _fetch_round_trip(request) == request

    # On the wire, grouped by topic in the order topics first appear.
    interleaved = replace(
        request,
        partitions=[request.partitions[0], request.partitions[2], request.partitions[1]],
        forgotten=[request.forgotten[0], request.forgotten[2], request.forgotten[1]],
    )
    message = adapt.fetch_request_message(interleaved)
    assert [(t.topic, [p.partition for p in t.partitions]) for t in message.topics] == [
        ("a", [0, 2]),
        ("b", [1]),
    ]
    assert [(t.topic, list(t.partitions)) for t in message.forgotten_topics_data] == [
        ("c", [0, 4]),
        ("a", [1]),
    ]
    assert _fetch_round_trip(interleaved) == request


def test_a_sessionless_fetch_round_trips_and_no_session_epoch_on_the_wire_is_final() -> None:
    sessionless = FetchRequest(-1, 0, 0, 0, [FetchPartition("t", 0, 5)], forgotten=[])
    assert sessionless.session_epoch == FINAL_EPOCH
    assert _fetch_round_trip(sessionless) == sessionless
    opening = FetchRequest(-1, 0, 0, 0, [], session_epoch=INITIAL_EPOCH, forgotten=[])
    assert _fetch_round_trip(opening) == opening

    # A client that never names a session sends no session_epoch at all.
    bare = pb.FetchRequest(replica_id=-1, max_wait_ms=100)
    bare.topics.add(topic="t").partitions.add(partition=0, fetch_offset=3)
    values = adapt.fetch_request_values(bare)
    assert (values.session_id, values.session_epoch) == (INVALID_SESSION_ID, FINAL_EPOCH)
    assert list(values.forgotten) == []
    assert list(values.partitions) == [FetchPartition("t", 0, 3, 0, 0, 0, 0)]


def test_a_fetch_without_replica_epoch_reads_minus_one_and_a_broker_epoch_0_survives() -> None:
    """KIP-903's broker epoch: a consumer (or any sender that leaves it out) has none, which the
    values say as -1; 0, a value like any other, comes back as 0."""
    bare = pb.FetchRequest(replica_id=-1, max_wait_ms=100)
    assert adapt.fetch_request_values(bare).replica_epoch == -1
    wire = pb.FetchRequest.FromString(bare.SerializeToString())
    assert adapt.fetch_request_values(wire).replica_epoch == -1
    zero = FetchRequest(2, 0, 0, 0, [], forgotten=[], replica_epoch=0)
    assert _fetch_round_trip(zero).replica_epoch == 0
    unknown = FetchRequest(2, 0, 0, 0, [], forgotten=[])
    assert _fetch_round_trip(unknown).replica_epoch == -1


def test_a_fetch_answer_round_trips() -> None:
    response = FetchSessionResponse(
        ErrorCode.NONE,
        99,
        [
            FetchPartitionResult("a", 0, ErrorCode.NONE, "", 10, 10, 0, b"batch-a0"),
            FetchPartitionResult("a", 1, ErrorCode.NONE, "", 8, 8, 0, b"", (4, 6)),  # diverged
            FetchPartitionResult("b", 3, ErrorCode.NONE, "", 5, 5, 2, b""),  # nothing new
            FetchPartitionResult(
                "c", 0, ErrorCode.NOT_LEADER_OR_FOLLOWER, "broker 2 leads c-0"
            ),  # -1 for every offset
        ],
    )
    assert _response_round_trip(response) == response

    # On the wire, grouped by topic in the order topics first appear.
    parts = response.partitions
    message = adapt.fetch_response_message(
        response._replace(partitions=[parts[0], parts[2], parts[1], parts[3]])
    )
    assert (message.error_code, message.session_id) == (ErrorCode.NONE, 99)
    assert [(t.topic, [p.partition_index for p in t.partitions]) for t in message.responses] == [
        ("a", [0, 1]),
        ("b", [3]),
        ("c", [0]),
    ]


def test_raw_data_carries_the_same_messages_with_the_records_beside_them() -> None:
    """RawData (proto/raw_records.py): the records travel beside the message in its partitions'
    order, the rest of the message as the protobuf framing has it."""
    header = pb.ProduceRequest(acks=1, timeout_ms=100, transactional_id="tx")
    header.topic_data.add(name="a").partition_data.add(index=0)
    header.topic_data.add(name="b").partition_data.add(index=1)
    raw = adapt.raw_produce_request(RawProduceRequest(header, [b"x", memoryview(b"y")]))
    whole = pb.ProduceRequest()
    whole.CopyFrom(header)
    whole.topic_data[0].partition_data[0].records = b"x"
    whole.topic_data[1].partition_data[0].records = b"y"
    assert raw == adapt.produce_request(whole)

    response = FetchSessionResponse(
        ErrorCode.NONE,
        7,
        [
            FetchPartitionResult("b", 0, ErrorCode.NONE, "", 3, 3, 0, b"b0"),
            FetchPartitionResult("a", 1, ErrorCode.NONE, "", 8, 8, 0, b"a1"),
            FetchPartitionResult("b", 2, ErrorCode.NOT_LEADER_OR_FOLLOWER, "moved"),
        ],
    )
    message = adapt.fetch_response_message(response)
    header_only, records = adapt.raw_fetch_response(response)
    assert records == [p.records for t in message.responses for p in t.partitions]
    assert records == [b"b0", b"", b"a1"]  # grouped by topic, as the message
    for topic in message.responses:
        for part in topic.partitions:
            part.records = b""
    assert header_only == message


def test_diverging_epoch_is_set_only_when_there_is_one() -> None:
    message = adapt.fetch_response_message(
        FetchSessionResponse(
            ErrorCode.NONE,
            INVALID_SESSION_ID,
            [
                FetchPartitionResult("t", 0, 0, "", 3, 3, 0, b"batch"),
                FetchPartitionResult("t", 1, 0, "", 3, 3, 0, b"", (1, 2)),
            ],
        )
    )
    plain, diverged = message.responses[0].partitions
    assert plain.records == b"batch" and not plain.HasField("diverging_epoch")
    assert (diverged.diverging_epoch.epoch, diverged.diverging_epoch.end_offset) == (1, 2)


def test_a_whole_request_error_round_trips_without_partitions() -> None:
    refused = FetchSessionResponse(ErrorCode.FETCH_SESSION_ID_NOT_FOUND, INVALID_SESSION_ID, [])
    assert _response_round_trip(refused) == refused


def test_offsets_for_leader_epoch_round_trips_in_the_request_layout() -> None:
    request = OffsetsForLeaderEpochRequest(
        3,
        [
            OffsetForLeaderPartition("a", 0, 4, 5),
            OffsetForLeaderPartition("b", 2, 1, 1),
            OffsetForLeaderPartition("a", 1, 0, 5),
        ],
    )
    wire = adapt.offsets_for_leader_epoch_request_message(request)
    assert [(t.topic, [p.partition for p in t.partitions]) for t in wire.topics] == [
        ("a", [0, 1]),
        ("b", [2]),
    ]
    read = adapt.offsets_for_leader_epoch_request_values(
        pb.OffsetsForLeaderEpochRequest.FromString(wire.SerializeToString())
    )
    # grouped by topic on the wire, so the leader reads (and answers) a's partitions first
    assert read == OffsetsForLeaderEpochRequest(
        3,
        [
            OffsetForLeaderPartition("a", 0, 4, 5),
            OffsetForLeaderPartition("a", 1, 0, 5),
            OffsetForLeaderPartition("b", 2, 1, 1),
        ],
    )

    results = [
        EpochEndOffset("a", 0, ErrorCode.NONE, "", 4, 120),
        EpochEndOffset("a", 1, ErrorCode.FENCED_LEADER_EPOCH, "epoch 5 is old"),
        EpochEndOffset("b", 2, ErrorCode.NONE, "", 1, 33),
    ]
    answer = adapt.offsets_for_leader_epoch_response_message(wire, results)
    assert [(t.topic, [p.partition for p in t.partitions]) for t in answer.topics] == [
        ("a", [0, 1]),
        ("b", [2]),
    ]
    assert (
        adapt.offsets_for_leader_epoch_response_values(
            pb.OffsetsForLeaderEpochResponse.FromString(answer.SerializeToString())
        )
        == results
    )


def test_a_consumers_rack_is_its_client_metadata_and_a_preferred_replica_round_trips() -> None:
    """KIP-392 on the gRPC wire: ``rack_id`` sent (even "") is client metadata with the
    listener; absent, or from a follower, none. ``preferred_read_replica`` 0 is a broker id,
    absent is -1."""
    consumer = pb.FetchRequest(replica_id=-1, rack_id="r1")
    values = adapt.fetch_request_values(consumer, "CLIENT")
    assert values.client_metadata == ClientMetadata("r1", "CLIENT")
    no_rack = pb.FetchRequest(replica_id=-1, rack_id="")
    assert adapt.fetch_request_values(no_rack, "CLIENT").client_metadata == ClientMetadata(
        "", "CLIENT"
    )
    assert adapt.fetch_request_values(pb.FetchRequest(replica_id=-1)).client_metadata is None
    follower = pb.FetchRequest(replica_id=2, rack_id="r1")
    assert adapt.fetch_request_values(follower).client_metadata is None
    response = FetchSessionResponse(
        ErrorCode.NONE,
        INVALID_SESSION_ID,
        [
            FetchPartitionResult("t", 0, ErrorCode.NONE, "", 3, 3, 0, preferred_read_replica=0),
            FetchPartitionResult("t", 1, ErrorCode.NONE, "", 3, 3, 0, b"batch"),
        ],
    )
    assert _response_round_trip(response) == response
    first, second = adapt.fetch_response_message(response).responses[0].partitions
    assert first.preferred_read_replica == 0
    assert not second.HasField("preferred_read_replica")
