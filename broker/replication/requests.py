"""What the ReplicaManager takes and returns: plain values, not any wire's messages.

Kafka's ReplicaManager works on per-partition maps (appendRecords, fetchMessages) and each
front door (KafkaApis there; the gRPC servicer and the Kafka-protocol handlers here) adapts its
own messages to them. These are those values, one per request and one per partition answer,
flat rather than nested by topic: a front door regroups the answers the way its wire wants.

The controller's LeaderAndIsr and StopReplica are values here too; the gRPC Control service
adapts them (broker/server/grpc_adapters.py), as it does the data path's.

Records are ``bytes`` (or a ``memoryview`` of them) exactly as they came off a socket or out of
a segment: nothing here decodes or copies them. A fetch that asks for ``file_records`` may get
them left in their segment file instead (``FileRecords``, broker/storage/segment.py). Offsets
and epochs use Kafka's sentinels: -1 for "none" or "unknown". Error codes are Kafka's
(``ErrorCode``), 0 for none.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence, Sized
from dataclasses import dataclass
from typing import Protocol, TypeVar

from minikafka.broker.replication.producer_state import AppendOrigin
from minikafka.broker.replication.replica_selector import ClientMetadata
from minikafka.broker.storage.segment import FileRecords
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import RecordError

__all__ = [
    "READ_COMMITTED",
    "READ_UNCOMMITTED",
    "DeleteRecordsPartition",
    "DeleteRecordsPartitionResult",
    "EpochEndOffset",
    "FetchPartition",
    "FetchPartitionResult",
    "FetchRequest",
    "FetchedRecords",
    "InitProducerIdRequest",
    "InitProducerIdResult",
    "LeaderAndIsrPartitionState",
    "LeaderAndIsrRequest",
    "LeaderAndIsrResponse",
    "ListOffsetsPartition",
    "ListOffsetsPartitionResult",
    "ListOffsetsRequest",
    "LiveLeader",
    "OffsetForLeaderPartition",
    "OffsetsForLeaderEpochRequest",
    "PartitionError",
    "PartitionReplicaStatus",
    "ProducePartition",
    "ProducePartitionResult",
    "ProduceRequest",
    "Records",
    "RemoteReplicaStatus",
    "StopReplicaPartitionState",
    "StopReplicaRequest",
    "StopReplicaResponse",
    "TxnMarker",
    "by_request_topic",
    "by_topic",
]

Records = bytes | memoryview
FetchedRecords = Records | FileRecords


class _RequestTopic(Protocol):
    @property
    def partitions(self) -> Sized: ...


class _OfTopic(Protocol):
    @property
    def topic(self) -> str: ...


T = TypeVar("T", bound=_RequestTopic)
R = TypeVar("R")
P = TypeVar("P", bound=_OfTopic)


def by_topic(items: Iterable[P]) -> dict[str, list[P]]:
    """Partitions (anything with a ``topic``) grouped by topic, topics in the order they first
    appear: how a wire message lays out a flat list of partitions.

        for topic, partitions in by_topic(request.partitions).items(): ...
    """
    grouped: dict[str, list[P]] = {}
    for item in items:
        grouped.setdefault(item.topic, []).append(item)
    return grouped


def by_request_topic(topics: Iterable[T], results: Iterable[R]) -> list[tuple[T, list[R]]]:
    """Answers given one per partition in the request's order, each request topic (any wire's:
    it has ``partitions``) with its own: how a front door lays a flat answer out again.

        for topic, answers in by_request_topic(request.topics, results): ...
    """
    remaining = iter(results)
    return [(topic, list(itertools.islice(remaining, len(topic.partitions)))) for topic in topics]


# --- Produce ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProducePartition:
    """One partition's RecordBatch v2 bytes, appended as they are (the leader validates them)."""

    topic: str
    partition: int
    records: Records


@dataclass(frozen=True, slots=True)
class ProduceRequest:
    """``acks`` is 0, 1 or -1 (all); ``timeout_ms`` bounds the wait for the ISR with acks=-1.
    ``transactional_id``: the producer's, when it is transactional (a transactional batch
    needs one); ``origin``: a client's produce, or a coordinator's own append."""

    acks: int
    timeout_ms: int
    partitions: Sequence[ProducePartition]
    transactional_id: str | None = None
    origin: AppendOrigin = AppendOrigin.CLIENT


@dataclass(frozen=True, slots=True)
class ProducePartitionResult:
    """One partition's answer: the offset of the first appended record, or an error."""

    topic: str
    partition: int
    error_code: int
    error_message: str = ""
    base_offset: int = -1
    log_start_offset: int = -1
    record_errors: tuple[RecordError, ...] = ()  # KIP-467: which records INVALID_RECORD refused
    log_append_time: int = -1  # message.timestamp.type=LogAppendTime: the leader's time


# --- Fetch ------------------------------------------------------------------------------------

READ_UNCOMMITTED = 0
READ_COMMITTED = 1


@dataclass(frozen=True, slots=True)
class FetchPartition:
    """One partition of a Fetch. ``last_fetched_epoch`` (KIP-320) and ``log_start_offset`` mean
    something only from a follower; ``partition_max_bytes`` 0 is the broker default (1 MiB).
    ``topic_id`` is the id a Kafka Fetch v13+ named the topic by (ZooKeeper's text form), kept
    by a fetch session so that the answer can tell a re-created topic from the one asked for;
    "" when the topic was named by name."""

    topic: str
    partition: int
    fetch_offset: int
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1
    log_start_offset: int = -1
    partition_max_bytes: int = 0
    topic_id: str = ""


@dataclass(frozen=True, slots=True)
class FetchRequest:
    """``replica_id`` is -1 for a consumer and the broker id for a follower, whose fetch offset
    is its LEO. The answer waits up to ``max_wait_ms`` for ``min_bytes``; ``max_bytes`` 0 is
    the broker default (50 MiB)."""

    replica_id: int
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    partitions: Sequence[FetchPartition]
    # The fetch session (KIP-227) as a fetcher sends it: session id and epoch (-1: none), and
    # the partitions it stops fetching. A leader's front door hands them to its session cache
    # (``ReplicaManager.fetch_sessions``), so ``fetch_messages`` never reads them.
    session_id: int = 0
    session_epoch: int = -1
    forgotten: Sequence[TopicPartition] = ()
    # Records may be left in their segment files (FileRecords) for a front door that sends
    # them with sendfile; the holder of the answer closes them.
    file_records: bool = False
    # The follower's broker epoch (KIP-903): carried by the gRPC Fetch; Kafka's Fetch has it
    # from v15 only. No leader checks it yet.
    replica_epoch: int = -1
    # READ_UNCOMMITTED (0): a consumer reads up to the high watermark; READ_COMMITTED (1): up
    # to the last stable offset, with the aborted transactions the answer overlaps (KIP-98).
    isolation_level: int = 0
    # KIP-392: the consumer's rack and listener (Kafka's Fetch v11+, every gRPC fetch). With it
    # a consumer may read from a follower (up to that follower's HW) and a leader with a
    # replica.selector.class may send it to a closer replica; without it (Kafka's Fetch
    # before v11) a consumer reads from leaders only.
    client_metadata: ClientMetadata | None = None


@dataclass(frozen=True, slots=True)
class FetchPartitionResult:
    """Whole batches from the one holding the fetch offset (a slice of a segment file), or an
    error. ``diverging_epoch`` is (epoch, end_offset) when a follower's log diverged from the
    leader's (KIP-320); ``records`` is then empty."""

    topic: str
    partition: int
    error_code: int
    error_message: str = ""
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: FetchedRecords = b""
    diverging_epoch: tuple[int, int] | None = None
    # read_committed: (producer_id, first_offset) of each aborted transaction the records
    # overlap, Kafka's AbortedTransaction; the consumer drops their records.
    aborted_transactions: tuple[tuple[int, int], ...] = ()
    # KIP-392: the replica the consumer should fetch from instead (records then empty); -1 none.
    preferred_read_replica: int = -1


# --- ListOffsets ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ListOffsetsPartition:
    """``timestamp``: -1 latest, -2 earliest, -3 the largest timestamp, -4 the earliest local
    offset (the earliest: no tiered storage), else a time in ms."""

    topic: str
    partition: int
    timestamp: int
    current_leader_epoch: int = -1


@dataclass(frozen=True, slots=True)
class ListOffsetsRequest:
    """``replica_id`` -1 is a consumer (sees up to the HW), -2 Kafka's debugging replica (may
    ask a follower), a broker id a replica (sees up to the LEO)."""

    replica_id: int
    partitions: Sequence[ListOffsetsPartition]
    isolation_level: int = 0  # READ_COMMITTED (1): "latest" is the last stable offset


@dataclass(frozen=True, slots=True)
class ListOffsetsPartitionResult:
    topic: str
    partition: int
    error_code: int
    error_message: str = ""
    timestamp: int = -1
    offset: int = -1
    leader_epoch: int = -1


# --- WriteTxnMarkers --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TxnMarker:
    """One WriteTxnMarkers entry: end ``producer_id``'s transaction on ``partitions`` (this
    broker leads them) with a COMMIT (``committed``) or ABORT control batch, as the
    transaction coordinator of ``coordinator_epoch`` asks."""

    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    committed: bool
    partitions: Sequence[TopicPartition]


# --- OffsetsForLeaderEpoch --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OffsetForLeaderPartition:
    topic: str
    partition: int
    leader_epoch: int
    current_leader_epoch: int = -1


@dataclass(frozen=True, slots=True)
class OffsetsForLeaderEpochRequest:
    replica_id: int
    partitions: Sequence[OffsetForLeaderPartition]


@dataclass(frozen=True, slots=True)
class EpochEndOffset:
    """The largest epoch at or below the one asked for, and the offset where it ends."""

    topic: str
    partition: int
    error_code: int
    error_message: str = ""
    leader_epoch: int = -1
    end_offset: int = -1


# --- InitProducerId ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class InitProducerIdRequest:
    """A new id (``producer_id`` -1), or the next epoch of the id held (KIP-360). A
    ``transactional_id`` (transactions) is refused."""

    transactional_id: str | None = None
    transaction_timeout_ms: int = -1
    producer_id: int = -1
    producer_epoch: int = -1


@dataclass(frozen=True, slots=True)
class InitProducerIdResult:
    error_code: int
    error_message: str = ""
    producer_id: int = -1
    producer_epoch: int = -1


# --- DescribeReplicas (what a broker knows of its replicas, for `minikafka watch`) ------------


@dataclass(frozen=True, slots=True)
class RemoteReplicaStatus:
    """A follower as its leader sees it (Kafka's replica state on the leader)."""

    broker_id: int
    log_end_offset: int  # as of its last fetch; -1 = none since this leader's epoch began
    last_caught_up_time_ms: int  # 0 = never


@dataclass(frozen=True, slots=True)
class PartitionReplicaStatus:
    """One hosted replica now: its role, its offsets and, on a leader, its followers'."""

    topic: str
    partition: int
    is_leader: bool
    leader_id: int  # -1 = offline here
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    followers: tuple[RemoteReplicaStatus, ...] = ()


# --- DeleteRecords ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DeleteRecordsPartition:
    """Delete everything below ``offset`` in one partition; -1 means the high watermark."""

    topic: str
    partition: int
    offset: int


@dataclass(frozen=True, slots=True)
class DeleteRecordsPartitionResult:
    """``low_watermark`` is the lowest log start offset over the partition's replicas on live
    brokers (the leader's own on REQUEST_TIMED_OUT), -1 on other errors."""

    topic: str
    partition: int
    low_watermark: int
    error_code: int
    error_message: str = ""


# --- LeaderAndIsr and StopReplica (from the controller) ---------------------------------------


@dataclass(frozen=True, slots=True)
class LeaderAndIsrPartitionState:
    """A partition's leader, epochs and replicas as the controller decided them.
    ``partition_epoch`` is the version of the partition's state znode, which the leader's ISR
    writes are conditional on."""

    topic: str
    partition: int
    controller_epoch: int
    leader: int  # -1 = none
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int
    replicas: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class LiveLeader:
    """Where a leader named in the request is reached (the inter-broker listener)."""

    broker_id: int
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class LeaderAndIsrRequest:
    """``broker_epoch`` is the registration of this broker the controller saw; requests from an
    older controller or for an older registration are refused whole."""

    controller_id: int
    controller_epoch: int
    broker_epoch: int
    partition_states: Sequence[LeaderAndIsrPartitionState]
    live_leaders: Sequence[LiveLeader] = ()


@dataclass(frozen=True, slots=True)
class PartitionError:
    """One partition's answer to LeaderAndIsr or StopReplica; ``error_code`` 0 for none."""

    topic: str
    partition: int
    error_code: int
    error_message: str = ""


@dataclass(frozen=True, slots=True)
class LeaderAndIsrResponse:
    """``error_code`` refuses the whole request (STALE_CONTROLLER_EPOCH, STALE_BROKER_EPOCH):
    nothing was applied; otherwise one answer per partition, in request order."""

    error_code: int
    partition_errors: Sequence[PartitionError] = ()


@dataclass(frozen=True, slots=True)
class StopReplicaPartitionState:
    """``leader_epoch`` -1: do not fence; -2: the topic is being deleted; else a replica that
    holds a newer epoch refuses (FENCED_LEADER_EPOCH). ``delete_partition`` also deletes the
    log."""

    topic: str
    partition: int
    leader_epoch: int
    delete_partition: bool


@dataclass(frozen=True, slots=True)
class StopReplicaRequest:
    controller_id: int
    controller_epoch: int
    broker_epoch: int
    partition_states: Sequence[StopReplicaPartitionState]


@dataclass(frozen=True, slots=True)
class StopReplicaResponse:
    """As LeaderAndIsrResponse: a whole-request refusal, or one answer per partition."""

    error_code: int
    partition_errors: Sequence[PartitionError] = ()
