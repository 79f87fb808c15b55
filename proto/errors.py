"""Kafka's error codes, and the exception tree that carries them.

Codes and names are Kafka's own (the protocol's error table), so a code seen in a log or on the
wire means what a Kafka user expects. Each exception class knows its code and whether the client
may retry the same request (``retriable``) and whether it should refresh metadata first
(``invalid_metadata``).

    KafkaError
     ├── CorruptRecordError            CORRUPT_MESSAGE (2)
     ├── InvalidRecordError            INVALID_RECORD (87)
     │    └── RecordValidationError    ... naming the refused records (KIP-467)
     ├── RecordTooLargeError           MESSAGE_TOO_LARGE (10)
     ├── UnsupportedCompressionTypeError UNSUPPORTED_COMPRESSION_TYPE (76)
     ├── OffsetOutOfRangeError         OFFSET_OUT_OF_RANGE (1)
     ├── KafkaStorageError             KAFKA_STORAGE_ERROR (56)
     ├── ... one class per code in ``ErrorCode``
     └── UnknownServerError            UNKNOWN_SERVER_ERROR (-1)

``error_for_code(code, message)`` turns a code from the wire back into the matching exception.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum
from typing import ClassVar, NamedTuple


class ErrorCode(IntEnum):
    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    SECURITY_DISABLED = 54
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    LOG_DIR_NOT_FOUND = 57
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    LISTENER_NOT_FOUND = 72
    TOPIC_DELETION_DISABLED = 73
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    STALE_BROKER_EPOCH = 77
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    PRODUCER_FENCED = 90
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    UNKNOWN_TOPIC_ID = 100
    INCONSISTENT_TOPIC_ID = 103
    TRANSACTIONAL_ID_NOT_FOUND = 105
    TRANSACTION_ABORTABLE = 120


_RETRIABLE = frozenset(
    {
        ErrorCode.CORRUPT_MESSAGE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.REPLICA_NOT_AVAILABLE,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.NOT_CONTROLLER,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
        ErrorCode.INVALID_FETCH_SESSION_EPOCH,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.OFFSET_NOT_AVAILABLE,
        ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
        ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
        ErrorCode.UNSTABLE_OFFSET_COMMIT,
        ErrorCode.CONCURRENT_TRANSACTIONS,
    }
)

_INVALID_METADATA = frozenset(
    {
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.REPLICA_NOT_AVAILABLE,
        ErrorCode.NOT_CONTROLLER,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
    }
)


class KafkaError(Exception):
    """Base of every error that maps to a Kafka error code."""

    code: ClassVar[ErrorCode] = ErrorCode.UNKNOWN_SERVER_ERROR

    def __init__(self, message: str = "") -> None:
        super().__init__(message or self.code.name)
        self.message = message or self.code.name

    @property
    def retriable(self) -> bool:
        return self.code in _RETRIABLE

    @property
    def invalid_metadata(self) -> bool:
        return self.code in _INVALID_METADATA

    def __str__(self) -> str:
        return f"{self.code.name} ({int(self.code)}): {self.message}"


_BY_CODE: dict[int, type[KafkaError]] = {}


def _define(name: str, code: ErrorCode) -> type[KafkaError]:
    cls = type(name, (KafkaError,), {"code": code, "__doc__": f"Kafka error {code.name}."})
    _BY_CODE[int(code)] = cls
    return cls


UnknownServerError = _define("UnknownServerError", ErrorCode.UNKNOWN_SERVER_ERROR)
OffsetOutOfRangeError = _define("OffsetOutOfRangeError", ErrorCode.OFFSET_OUT_OF_RANGE)
CorruptRecordError = _define("CorruptRecordError", ErrorCode.CORRUPT_MESSAGE)
UnknownTopicOrPartitionError = _define(
    "UnknownTopicOrPartitionError", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
)
LeaderNotAvailableError = _define("LeaderNotAvailableError", ErrorCode.LEADER_NOT_AVAILABLE)
NotLeaderOrFollowerError = _define("NotLeaderOrFollowerError", ErrorCode.NOT_LEADER_OR_FOLLOWER)
RequestTimedOutError = _define("RequestTimedOutError", ErrorCode.REQUEST_TIMED_OUT)
RecordTooLargeError = _define("RecordTooLargeError", ErrorCode.MESSAGE_TOO_LARGE)
StaleControllerEpochError = _define("StaleControllerEpochError", ErrorCode.STALE_CONTROLLER_EPOCH)
InvalidTopicError = _define("InvalidTopicError", ErrorCode.INVALID_TOPIC_EXCEPTION)
NotEnoughReplicasError = _define("NotEnoughReplicasError", ErrorCode.NOT_ENOUGH_REPLICAS)
NotEnoughReplicasAfterAppendError = _define(
    "NotEnoughReplicasAfterAppendError", ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
)
InvalidTimestampError = _define("InvalidTimestampError", ErrorCode.INVALID_TIMESTAMP)
InvalidConfigError = _define("InvalidConfigError", ErrorCode.INVALID_CONFIG)
InvalidRequestError = _define("InvalidRequestError", ErrorCode.INVALID_REQUEST)
OutOfOrderSequenceError = _define("OutOfOrderSequenceError", ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
KafkaStorageError = _define("KafkaStorageError", ErrorCode.KAFKA_STORAGE_ERROR)
FencedLeaderEpochError = _define("FencedLeaderEpochError", ErrorCode.FENCED_LEADER_EPOCH)
UnknownLeaderEpochError = _define("UnknownLeaderEpochError", ErrorCode.UNKNOWN_LEADER_EPOCH)
UnsupportedCompressionTypeError = _define(
    "UnsupportedCompressionTypeError", ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
)


class InvalidRecordError(KafkaError):
    """Kafka error INVALID_RECORD."""

    code = ErrorCode.INVALID_RECORD


_BY_CODE[int(ErrorCode.INVALID_RECORD)] = InvalidRecordError


class RecordError(NamedTuple):
    """One record a batch was refused for (KIP-467): its index in the batch and why."""

    batch_index: int
    message: str


class RecordValidationError(InvalidRecordError):
    """A batch refused because of some of its records, each named in ``record_errors`` so that
    Produce v8+ lets the client fail only those (Kafka's RecordValidationException). The
    message shows the first three, as Kafka's LogValidator words it."""

    def __init__(self, record_errors: Sequence[RecordError]) -> None:
        shown = ", ".join(
            f"RecordError(batchIndex={e.batch_index}, message='{e.message}')"
            for e in record_errors[:3]
        )
        super().__init__(
            f"One or more records have been rejected due to {len(record_errors)} record errors "
            f"in total, and only showing the first three errors at most: [{shown}]"
        )
        self.record_errors = tuple(record_errors)


for _code in ErrorCode:
    if _code is not ErrorCode.NONE and int(_code) not in _BY_CODE:
        _define("".join(p.title() for p in _code.name.split("_")) + "Error", _code)


def error_for_code(code: int, message: str = "") -> KafkaError:
    """The exception for a code received over the wire (unknown codes become UnknownServerError)."""
    cls = _BY_CODE.get(code, UnknownServerError)
    return cls(message)
