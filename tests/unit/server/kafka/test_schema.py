"""schema.build: one set of values, every version of a message; what it writes, kio reads back."""

from __future__ import annotations

import datetime
import io
import uuid

import pytest

from minikafka.broker.server.kafka.handlers.topic_ids import from_uuid, to_uuid
from minikafka.broker.server.kafka.schema import (
    Entity,
    build,
    read_entity,
    request_class,
    response_class,
    write_entity,
)

METADATA = {
    "throttle_time": 5,
    "brokers": [{"node_id": 1, "host": "h1", "port": 19092, "rack": None}],
    "cluster_id": "c",
    "controller_id": 1,
    "topics": [
        {
            "error_code": 0,
            "name": "orders",
            "topic_id": uuid.UUID(int=7),
            "is_internal": False,
            "partitions": [
                {
                    "error_code": 0,
                    "partition_index": 0,
                    "leader_id": 1,
                    "leader_epoch": 3,
                    "replica_nodes": [1, 2],
                    "isr_nodes": [1],
                    "offline_replicas": [2],
                }
            ],
        }
    ],
}


def _round_trip(cls: type[Entity], entity: Entity) -> Entity:
    buffer = io.BytesIO()
    write_entity(cls, buffer, entity)
    decoded, size = read_entity(cls, buffer.getvalue(), 0)
    assert size == len(buffer.getvalue())
    return decoded


def test_one_set_of_values_answers_every_version() -> None:
    for version in range(0, 13):
        cls = response_class(3, version)
        response = build(cls, METADATA)
        assert _round_trip(cls, response) == response
        (topic,) = response.topics
        (partition,) = topic.partitions
        assert topic.name == "orders" and partition.leader_id == 1
        # fields the version does not carry are dropped, those it does are kept
        assert hasattr(partition, "leader_epoch") == (version >= 7)
        assert hasattr(response, "cluster_id") == (version >= 2)
        assert hasattr(topic, "topic_id") == (version >= 10)
        if version >= 1:
            assert response.controller_id == 1
        if version >= 3:
            assert response.throttle_time == datetime.timedelta(milliseconds=5)


def test_left_out_fields_get_defaults_or_zero_values() -> None:
    cls = response_class(3, 12)
    response = build(cls, {"topics": [{"name": "t"}]})
    assert response.brokers == ()
    assert response.controller_id == -1  # the schema's default
    (topic,) = response.topics
    assert int(topic.error_code) == 0 and topic.partitions == ()
    assert _round_trip(cls, response) == response


def test_error_codes_are_kafkas() -> None:
    response = build(response_class(18, 0), {"error_code": 35, "api_keys": []})
    assert int(response.error_code) == 35


def test_requests_decode_with_the_schema_of_their_version() -> None:
    cls = request_class(3, 1)
    request = build(cls, {"topics": [{"name": "a"}, {"name": "b"}]})
    decoded = _round_trip(cls, request)
    assert [t.name for t in decoded.topics] == ["a", "b"]


def test_topic_ids_between_zookeeper_text_and_uuid() -> None:
    value = uuid.UUID("3c1d5a4e-9f2b-4c7a-8d6e-0123456789ab")
    text = from_uuid(value)
    assert len(text) == 22 and "=" not in text
    assert to_uuid(text) == value
    assert to_uuid("") == uuid.UUID(int=0)
    assert to_uuid("not base64!") == uuid.UUID(int=0)
    assert from_uuid(uuid.UUID(int=0)) == ""


def test_a_key_of_no_version_is_refused_not_zero_filled() -> None:
    # A misspelt error_code must not answer NONE (issue 29).
    with pytest.raises(ValueError, match=r"PartitionProduceResponse .* no field 'eror_code'"):
        build(
            response_class(0, 9),
            {"responses": [{"name": "t", "partition_responses": [{"index": 0, "eror_code": 6}]}]},
        )


def test_a_key_of_another_version_is_dropped() -> None:
    # error_message comes with Produce v8: v3 drops it, as version down-conversion needs.
    response = build(
        response_class(0, 3),
        {
            "responses": [
                {
                    "name": "t",
                    "partition_responses": [{"index": 0, "error_code": 6, "error_message": "x"}],
                }
            ]
        },
    )
    (partition,) = response.responses[0].partition_responses
    assert int(partition.error_code) == 6 and not hasattr(partition, "error_message")
