"""The controller's errors: proto's classes for their Kafka error codes."""

from __future__ import annotations

from minikafka.controller import errors
from minikafka.proto.errors import ErrorCode, error_for_code


def test_kafka_coded_errors_are_protos_own_classes() -> None:
    # the same class the wire decoder produces, so one `except` catches both
    for cls, code in [
        (errors.TopicAlreadyExistsError, ErrorCode.TOPIC_ALREADY_EXISTS),
        (errors.InvalidPartitionsError, ErrorCode.INVALID_PARTITIONS),
        (errors.InvalidReplicationFactorError, ErrorCode.INVALID_REPLICATION_FACTOR),
        (errors.InvalidTopicError, ErrorCode.INVALID_TOPIC_EXCEPTION),
        (errors.UnknownTopicOrPartitionError, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ]:
        assert type(error_for_code(code)) is cls
        assert cls.code is code


def test_exports() -> None:
    assert set(errors.__all__) == {
        name
        for name in vars(errors)
        if name[0].isupper() and name not in {"ErrorCode", "KafkaError"}
    }
