"""The Data and Control RPCs' messages to the ReplicaManager's values and back keep each
message's shape (Fetch and OffsetsForLeaderEpoch: tests/unit/replication/test_grpc_messages.py)."""

from __future__ import annotations

from minikafka.broker.replication.requests import (
    LeaderAndIsrPartitionState,
    LeaderAndIsrResponse,
    ListOffsetsPartitionResult,
    LiveLeader,
    PartitionError,
    ProducePartitionResult,
    StopReplicaPartitionState,
    StopReplicaResponse,
)
from minikafka.broker.server import grpc_adapters as adapt
from minikafka.proto import minikafka_pb2 as pb


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
