"""Transactions on the Kafka listener (KIP-98), on the core's TransactionApi
(core/transactions.py) that the gRPC door adapts too:

    AddPartitionsToTxn (24) v0-4   AddOffsetsToTxn (25) v0-4   EndTxn (26) v0-4
    WriteTxnMarkers (27) v1        TxnOffsetCommit (28) v0-4   DescribeProducers (61) v0
    DescribeTransactions (65) v0   ListTransactions (66) v0-1

(InitProducerId and FindCoordinator with key type 1 are producer_ids.py's and groups.py's.)
A broker without a transaction coordinator answers COORDINATOR_NOT_AVAILABLE to the
coordinator's requests. AddPartitionsToTxn v4 is a partition leader's batched request (KIP-890;
ClusterAction): ``verify_only`` asks whether partitions are in a transaction
(TRANSACTION_ABORTABLE when not). This broker's own partition leaders do not verify, as Kafka
with ``transaction.partition.verification.enable=false``. WriteTxnMarkers v0 is gone from the
schemas this broker reads; Kafka's brokers send v1.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minikafka.broker.replication.requests import TxnMarker, by_topic
from minikafka.broker.server.core.transactions import TransactionApi
from minikafka.broker.server.kafka.broker import KafkaBroker
from minikafka.broker.server.kafka.registry import Request, handler
from minikafka.broker.server.kafka.schema import Entity
from minikafka.proto.common import OffsetAndMetadata, TopicPartition
from minikafka.proto.errors import ErrorCode

__all__ = [
    "add_offsets_to_txn",
    "add_partitions_to_txn",
    "describe_producers",
    "describe_transactions",
    "end_txn",
    "list_transactions",
    "txn_offset_commit",
    "write_txn_markers",
]

_NO_COORDINATOR = ErrorCode.COORDINATOR_NOT_AVAILABLE


def _partition_results(
    results: Mapping[TopicPartition, int], partition_key: str, code_key: str
) -> list[dict[str, Any]]:
    """Per-partition codes laid out by topic, as the answers of these APIs nest them."""
    return [
        {
            "name": topic,
            "partitions": [
                {partition_key: tp.partition, code_key: results[tp]} for tp in partitions
            ],
        }
        for topic, partitions in by_topic(results).items()
    ]


def _api(broker: KafkaBroker) -> TransactionApi | None:
    return broker.transactions


# KIP-588: PRODUCER_FENCED exists from these versions; older clients get INVALID_PRODUCER_EPOCH
# (as Kafka's KafkaApis answers them).
_FIRST_PRODUCER_FENCED_VERSION = {22: 4, 24: 2, 25: 2, 26: 2, 28: 3}


def fenced_for(request: Request, code: int) -> int:
    """``code`` as ``request``'s version knows it."""
    if (
        code == ErrorCode.PRODUCER_FENCED
        and request.api_version < _FIRST_PRODUCER_FENCED_VERSION.get(request.api_key, 0)
    ):
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return code


_FIRST_BROKER_ADD_PARTITIONS_VERSION = 4  # KIP-890: batched, from partition leaders


async def _add_partitions_for_brokers(request: Request, broker: KafkaBroker) -> Entity:
    api = _api(broker)
    answers = []
    for txn in request.body.transactions:
        partitions = [TopicPartition(t.name, p) for t in txn.topics for p in t.partitions]
        results = (
            dict.fromkeys(partitions, int(_NO_COORDINATOR))
            if api is None
            else await api.add_partitions_for_broker(
                txn.transactional_id,
                txn.producer_id,
                txn.producer_epoch,
                partitions,
                bool(txn.verify_only),
                request.session,
            )
        )
        answers.append(
            {
                "transactional_id": txn.transactional_id,
                "topic_results": [
                    {
                        "name": topic,
                        "results_by_partition": [
                            {"partition_index": tp.partition, "partition_error_code": results[tp]}
                            for tp in tps
                        ],
                    }
                    for topic, tps in by_topic(results).items()
                ],
            }
        )
    return request.response(
        {"throttle_time": 0, "error_code": 0, "results_by_transaction": answers}
    )


@handler(api_key=24, min_version=0, max_version=4)
async def add_partitions_to_txn(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    if request.api_version >= _FIRST_BROKER_ADD_PARTITIONS_VERSION:
        return await _add_partitions_for_brokers(request, broker)
    partitions = [
        TopicPartition(topic.name, index)
        for topic in body.v3_and_below_topics
        for index in topic.partitions
    ]
    api = _api(broker)
    results = (
        dict.fromkeys(partitions, int(_NO_COORDINATOR))
        if api is None
        else await api.add_partitions_to_txn(
            body.v3_and_below_transactional_id,
            body.v3_and_below_producer_id,
            body.v3_and_below_producer_epoch,
            partitions,
            request.session,
        )
    )
    return request.response(
        {
            "throttle_time": 0,
            "results_by_topic_v3_and_below": [
                {
                    "name": topic,
                    "results_by_partition": [
                        {
                            "partition_index": tp.partition,
                            "partition_error_code": fenced_for(request, results[tp]),
                        }
                        for tp in tps
                    ],
                }
                for topic, tps in by_topic(results).items()
            ],
        }
    )


@handler(api_key=25, min_version=0, max_version=4)
async def add_offsets_to_txn(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    api = _api(broker)
    code = (
        _NO_COORDINATOR
        if api is None
        else await api.add_offsets_to_txn(
            body.transactional_id,
            body.producer_id,
            body.producer_epoch,
            body.group_id,
            request.session,
        )
    )
    return request.response({"throttle_time": 0, "error_code": fenced_for(request, code)})


@handler(api_key=26, min_version=0, max_version=4)
async def end_txn(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    api = _api(broker)
    code = (
        _NO_COORDINATOR
        if api is None
        else await api.end_txn(
            body.transactional_id,
            body.producer_id,
            body.producer_epoch,
            bool(body.committed),
            request.session,
        )
    )
    return request.response({"throttle_time": 0, "error_code": fenced_for(request, code)})


@handler(api_key=27, min_version=1, max_version=1)
async def write_txn_markers(request: Request, broker: KafkaBroker) -> Entity:
    markers = [
        TxnMarker(
            m.producer_id,
            m.producer_epoch,
            m.coordinator_epoch,
            bool(m.transaction_result),
            [TopicPartition(t.name, p) for t in m.topics for p in t.partition_indexes],
        )
        for m in request.body.markers
    ]
    api = _api(broker)
    results = (
        [dict.fromkeys(m.partitions, int(ErrorCode.NOT_LEADER_OR_FOLLOWER)) for m in markers]
        if api is None
        else await api.write_txn_markers(markers, request.session)
    )
    return request.response(
        {
            "markers": [
                {
                    "producer_id": marker.producer_id,
                    "topics": _partition_results(result, "partition_index", "error_code"),
                }
                for marker, result in zip(markers, results, strict=True)
            ]
        }
    )


@handler(api_key=28, min_version=0, max_version=4)
async def txn_offset_commit(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    offsets = {
        TopicPartition(topic.name, p.partition_index): OffsetAndMetadata(
            p.committed_offset,
            p.committed_metadata or "",
            getattr(p, "committed_leader_epoch", -1),  # v2+
        )
        for topic in body.topics
        for p in topic.partitions
    }
    api = _api(broker)
    results = (
        dict.fromkeys(offsets, int(_NO_COORDINATOR))
        if api is None
        else await api.txn_offset_commit(
            body.transactional_id,
            body.group_id,
            body.producer_id,
            body.producer_epoch,
            offsets,
            member_id=str(getattr(body, "member_id", "")),  # v3+ (KIP-447)
            generation_id=getattr(body, "generation_id", -1),
            group_instance_id=getattr(body, "group_instance_id", None),
            session=request.session,
        )
    )
    results = {tp: fenced_for(request, code) for tp, code in results.items()}
    return request.response(
        {
            "throttle_time": 0,
            "topics": _partition_results(results, "partition_index", "error_code"),
        }
    )


@handler(api_key=61, min_version=0, max_version=0)
async def describe_producers(request: Request, broker: KafkaBroker) -> Entity:
    partitions = [
        TopicPartition(topic.name, index)
        for topic in request.body.topics
        for index in topic.partition_indexes
    ]
    api = _api(broker)
    answers = (
        {tp: (int(ErrorCode.NOT_LEADER_OR_FOLLOWER), "", []) for tp in partitions}
        if api is None
        else api.describe_producers(partitions, request.session)
    )
    return request.response(
        {
            "throttle_time": 0,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {
                            "partition_index": tp.partition,
                            "error_code": answers[tp][0],
                            "error_message": answers[tp][1] or None,
                            "active_producers": [
                                {
                                    "producer_id": p.producer_id,
                                    "producer_epoch": p.producer_epoch,
                                    "last_sequence": p.last_sequence,
                                    "last_timestamp": p.last_timestamp,
                                    "coordinator_epoch": p.coordinator_epoch,
                                    "current_txn_start_offset": p.current_txn_start_offset,
                                }
                                for p in answers[tp][2]
                            ],
                        }
                        for tp in tps
                    ],
                }
                for topic, tps in by_topic(answers).items()
            ],
        }
    )


@handler(api_key=65, min_version=0, max_version=0)
async def describe_transactions(request: Request, broker: KafkaBroker) -> Entity:
    ids = list(request.body.transactional_ids)
    api = _api(broker)
    if api is None:
        states: list[dict[str, Any]] = [
            {"error_code": _NO_COORDINATOR, "transactional_id": i, "transaction_state": ""}
            for i in ids
        ]
    else:
        states = [
            {
                "error_code": d.error_code,
                "transactional_id": d.transactional_id,
                "transaction_state": d.state,
                "transaction_timeout": d.transaction_timeout_ms,
                "transaction_start_time": d.transaction_start_time_ms,
                "producer_id": d.producer_id,
                "producer_epoch": d.producer_epoch,
                "topics": [
                    {"topic": topic, "partitions": [tp.partition for tp in tps]}
                    for topic, tps in by_topic(d.partitions).items()
                ],
            }
            for d in api.describe_transactions(ids, request.session)
        ]
    return request.response({"throttle_time": 0, "transaction_states": states})


@handler(api_key=66, min_version=0, max_version=1)
async def list_transactions(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    api = _api(broker)
    if api is None:
        return request.response({"throttle_time": 0, "error_code": _NO_COORDINATOR})
    listed = api.list_transactions(
        list(body.state_filters),
        list(body.producer_id_filters),
        getattr(body, "duration_filter", -1),  # v1+ (KIP-994)
        request.session,
    )
    return request.response(
        {
            "throttle_time": 0,
            "error_code": listed.error_code,
            "unknown_state_filters": list(listed.unknown_state_filters),
            "transaction_states": [
                {
                    "transactional_id": t.transactional_id,
                    "producer_id": t.producer_id,
                    "transaction_state": t.state,
                }
                for t in listed.transaction_states
            ],
        }
    )
