"""minikafka: a Kafka-style event log cluster; this package is its Python client's public face.

    import minikafka

    with minikafka.Producer(bootstrap_servers="127.0.0.1:9092") as producer:
        producer.send("orders", b"payload", key=b"customer-7").result(timeout=10)
    with minikafka.Consumer("orders", bootstrap_servers="127.0.0.1:9092",
                            auto_offset_reset="earliest", consumer_timeout_ms=1000) as consumer:
        for record in consumer:
            print(record.offset, record.value)
    with minikafka.Admin("127.0.0.1:9092") as admin:
        admin.create_topics([minikafka.NewTopic("orders", 3, 3)])

The shapes follow kafka-python. Errors are Kafka's error codes as exceptions (``KafkaError`` and
its subclasses, each with ``code``, ``retriable`` and ``invalid_metadata``).

The client classes are loaded on first use (PEP 562 ``__getattr__``): ``import minikafka`` stays
cheap and loads neither grpc nor anything of the broker, so ``minikafka dump-log`` and
``minikafka broker`` pay only for what they use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from minikafka.proto.errors import (
    CorruptRecordError,
    ErrorCode,
    FencedLeaderEpochError,
    InvalidConfigError,
    InvalidRecordError,
    InvalidRequestError,
    InvalidTimestampError,
    InvalidTopicError,
    KafkaError,
    KafkaStorageError,
    LeaderNotAvailableError,
    NotEnoughReplicasAfterAppendError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    OffsetOutOfRangeError,
    OutOfOrderSequenceError,
    RecordTooLargeError,
    RecordValidationError,
    RequestTimedOutError,
    StaleControllerEpochError,
    UnknownLeaderEpochError,
    UnknownServerError,
    UnknownTopicOrPartitionError,
    UnsupportedCompressionTypeError,
    error_for_code,
)

if TYPE_CHECKING:
    from minikafka.client._security import ClientSecurity
    from minikafka.client.admin import AdminClient, NewTopic
    from minikafka.client.consumer.consumer import Consumer
    from minikafka.client.consumer.fetcher import ConsumerRecord, OffsetAndTimestamp
    from minikafka.client.producer.future import RecordMetadata
    from minikafka.client.producer.producer import Producer
    from minikafka.proto.common import TopicPartition

    Admin = AdminClient

__all__ = [
    "Admin",
    "AdminClient",
    "ClientSecurity",
    "Consumer",
    "ConsumerRecord",
    "CorruptRecordError",
    "ErrorCode",
    "FencedLeaderEpochError",
    "InvalidConfigError",
    "InvalidRecordError",
    "InvalidRequestError",
    "InvalidTimestampError",
    "InvalidTopicError",
    "KafkaError",
    "KafkaStorageError",
    "LeaderNotAvailableError",
    "NewTopic",
    "NotEnoughReplicasAfterAppendError",
    "NotEnoughReplicasError",
    "NotLeaderOrFollowerError",
    "OffsetAndTimestamp",
    "OffsetOutOfRangeError",
    "OutOfOrderSequenceError",
    "Producer",
    "RecordMetadata",
    "RecordTooLargeError",
    "RecordValidationError",
    "RequestTimedOutError",
    "StaleControllerEpochError",
    "TopicPartition",
    "UnknownLeaderEpochError",
    "UnknownServerError",
    "UnknownTopicOrPartitionError",
    "UnsupportedCompressionTypeError",
    "error_for_code",
]

# name -> (module, attribute): what __getattr__ loads on first use.
_LAZY: dict[str, tuple[str, str]] = {
    "Producer": ("minikafka.client.producer.producer", "Producer"),
    "RecordMetadata": ("minikafka.client.producer.future", "RecordMetadata"),
    "Consumer": ("minikafka.client.consumer.consumer", "Consumer"),
    "ConsumerRecord": ("minikafka.client.consumer.fetcher", "ConsumerRecord"),
    "OffsetAndTimestamp": ("minikafka.client.consumer.fetcher", "OffsetAndTimestamp"),
    "TopicPartition": ("minikafka.proto.common", "TopicPartition"),
    "AdminClient": ("minikafka.client.admin", "AdminClient"),
    "Admin": ("minikafka.client.admin", "AdminClient"),
    "NewTopic": ("minikafka.client.admin", "NewTopic"),
    "ClientSecurity": ("minikafka.client._security", "ClientSecurity"),
}


def __getattr__(name: str) -> Any:
    try:
        module_name, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'minikafka' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module_name), attribute)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
