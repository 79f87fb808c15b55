"""Transactions on plain values: what both front doors call (KIP-98).

The transaction coordinator (broker/transaction/coordinator.py) keeps each transactional id's
state in ``__transaction_state``; this module puts the authorizer in front of it and adds what
it does not know:

* FindCoordinator (key type 1): the coordinator of an id is the leader of partition
  ``abs(java_hash(id)) % partitions`` of ``__transaction_state``, created on first use as
  ``__consumer_offsets`` is (core/topic_creation.py).
* AddPartitionsToTxn: a partition of a topic the principal may not Write is
  TOPIC_AUTHORIZATION_FAILED, one the metadata does not know UNKNOWN_TOPIC_OR_PARTITION, and
  then, as Kafka answers, every other partition of the request OPERATION_NOT_ATTEMPTED: nothing
  is added.
* TxnOffsetCommit: the group coordinator's, after the checks of OffsetCommit.
* WriteTxnMarkers, on the leader of the partitions: the control batches are appended through
  the ReplicaManager (acks=all); once a marker is in ``__consumer_offsets``, the group
  coordinator makes that producer's pending offsets committed (or drops them).
* DescribeProducers: the producer state of partitions this broker leads.

Refusals come first and change nothing (core/authorization.py's table).

Runs on the broker's event loop.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from minikafka.broker.group.coordinator import GroupCoordinator
from minikafka.broker.replication.replica_manager import ReplicaManager
from minikafka.broker.replication.requests import (
    InitProducerIdRequest,
    InitProducerIdResult,
    TxnMarker,
)
from minikafka.broker.security.acl import ResourceType
from minikafka.broker.security.principal import ANONYMOUS, Session
from minikafka.broker.server.core.authorization import AuthHelper
from minikafka.broker.server.core.groups import FoundCoordinator, find_partition_leader
from minikafka.broker.server.core.topic_creation import TopicCreator
from minikafka.broker.server.metadata_cache import MetadataCache
from minikafka.broker.transaction.coordinator import (
    ListResult,
    TransactionCoordinator,
    TransactionDescription,
)
from minikafka.proto.common import (
    GROUP_METADATA_TOPIC,
    TRANSACTION_STATE_TOPIC,
    OffsetAndMetadata,
    TopicPartition,
)
from minikafka.proto.errors import ErrorCode

__all__ = ["ProducerDescription", "TransactionApi"]

_NO_SESSION = Session(ANONYMOUS, "")
_TXN_ID = ResourceType.TRANSACTIONAL_ID
_TOPIC = ResourceType.TOPIC
_GROUP = ResourceType.GROUP


@dataclass(frozen=True)
class ProducerDescription:
    """One producer of a partition, as DescribeProducers shows it."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int


class TransactionApi:
    """See the module docstring. One per broker, shared by every listener of both doors."""

    def __init__(
        self,
        coordinator: TransactionCoordinator,
        replica_manager: ReplicaManager,
        group_coordinator: GroupCoordinator | None,
        metadata_cache: MetadataCache,
        topic_creator: TopicCreator,
        auth: AuthHelper | None = None,
        *,
        marker_timeout_ms: int = 30_000,
    ) -> None:
        self.coordinator = coordinator
        self._replica_manager = replica_manager
        self._groups = group_coordinator
        self._cache = metadata_cache
        self._creator = topic_creator
        self._auth = auth or AuthHelper()
        self._marker_timeout_ms = marker_timeout_ms

    def _may_write(self, session: Session, api: str, transactional_id: str) -> bool:
        return self._auth.allows(session, api, _TXN_ID, transactional_id)

    # --- the coordinator's requests -----------------------------------------------------------

    async def find_coordinator(
        self,
        transactional_id: str,
        *,
        listener: str | None = None,
        session: Session = _NO_SESSION,
    ) -> FoundCoordinator:
        """The leader of the id's ``__transaction_state`` partition (authorization: the
        caller's, GroupApi.find_coordinator)."""
        if not transactional_id:
            return FoundCoordinator(ErrorCode.INVALID_REQUEST, "the transactional id is empty")
        return await find_partition_leader(
            self._cache,
            self._creator,
            TRANSACTION_STATE_TOPIC,
            self.coordinator.partition_for(transactional_id),
            listener,
        )

    async def init_producer_id(
        self, request: InitProducerIdRequest, session: Session = _NO_SESSION
    ) -> InitProducerIdResult:
        """A transactional producer's id and epoch (DataApi authorized it and sends it here)."""
        assert request.transactional_id is not None
        result = await self.coordinator.init_producer_id(
            request.transactional_id,
            request.transaction_timeout_ms,
            request.producer_id,
            request.producer_epoch,
        )
        return InitProducerIdResult(
            ErrorCode(result.error_code), "", result.producer_id, result.producer_epoch
        )

    async def add_partitions_to_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Sequence[TopicPartition],
        session: Session = _NO_SESSION,
    ) -> dict[TopicPartition, int]:
        api = "AddPartitionsToTxn"
        if not self._may_write(session, api, transactional_id):
            return dict.fromkeys(partitions, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        writable = self._auth.allowed_names(session, api, _TOPIC, (tp.topic for tp in partitions))
        refused: dict[TopicPartition, int] = {}
        for tp in partitions:
            if tp.topic not in writable:
                refused[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif not self._cache.contains_partition(tp.topic, tp.partition):
                refused[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if refused:
            return {tp: refused.get(tp, ErrorCode.OPERATION_NOT_ATTEMPTED) for tp in partitions}
        answer = await self.coordinator.add_partitions_to_txn(
            transactional_id, producer_id, producer_epoch, list(partitions)
        )
        return {tp: int(code) for tp, code in answer.items()}

    async def add_partitions_for_broker(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Sequence[TopicPartition],
        verify_only: bool,
        session: Session = _NO_SESSION,
    ) -> dict[TopicPartition, int]:
        """AddPartitionsToTxn v4+ (KIP-890), a partition leader's batched request: needs
        ClusterAction; ``verify_only`` asks whether the partitions are in the transaction."""
        if not self._auth.allows(session, "WriteTxnMarkers", ResourceType.CLUSTER):
            return dict.fromkeys(partitions, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        if verify_only:
            return self.coordinator.verify_partitions_in_txn(
                transactional_id, producer_id, producer_epoch, partitions
            )
        answer = await self.coordinator.add_partitions_to_txn(
            transactional_id, producer_id, producer_epoch, list(partitions)
        )
        return {tp: int(code) for tp, code in answer.items()}

    async def add_offsets_to_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        group_id: str,
        session: Session = _NO_SESSION,
    ) -> int:
        api = "AddOffsetsToTxn"
        if not self._may_write(session, api, transactional_id):
            return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        if not self._auth.allows(session, api, _GROUP, group_id):
            return ErrorCode.GROUP_AUTHORIZATION_FAILED
        return int(
            await self.coordinator.add_offsets_to_txn(
                transactional_id, producer_id, producer_epoch, group_id
            )
        )

    async def end_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        committed: bool,
        session: Session = _NO_SESSION,
    ) -> int:
        if not self._may_write(session, "EndTxn", transactional_id):
            return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        return int(
            await self.coordinator.end_txn(transactional_id, producer_id, producer_epoch, committed)
        )

    # --- the group coordinator's ---------------------------------------------------------------

    async def txn_offset_commit(
        self,
        transactional_id: str,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        member_id: str = "",
        generation_id: int = -1,
        group_instance_id: str | None = None,
        session: Session = _NO_SESSION,
    ) -> dict[TopicPartition, int]:
        api = "TxnOffsetCommit"
        if not self._may_write(session, api, transactional_id):
            return dict.fromkeys(offsets, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        if not self._auth.allows(session, api, _GROUP, group_id):
            return dict.fromkeys(offsets, ErrorCode.GROUP_AUTHORIZATION_FAILED)
        if self._groups is None:
            return dict.fromkeys(offsets, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        readable = self._auth.allowed_names(session, api, _TOPIC, (tp.topic for tp in offsets))
        results: dict[TopicPartition, int] = {}
        known: dict[TopicPartition, OffsetAndMetadata] = {}
        for tp, committed in offsets.items():
            if tp.topic not in readable:
                results[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif self._cache.contains_partition(tp.topic, tp.partition):
                known[tp] = committed
            else:
                results[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if known:
            answer = await self._groups.txn_offset_commit(
                group_id,
                transactional_id,
                producer_id,
                producer_epoch,
                known,
                member_id=member_id,
                generation_id=generation_id,
                group_instance_id=group_instance_id,
            )
            results.update({TopicPartition(*tp): int(code) for tp, code in answer.items()})
        return results

    # --- the partition leaders' ----------------------------------------------------------------

    async def write_txn_markers(
        self, markers: Sequence[TxnMarker], session: Session = _NO_SESSION
    ) -> list[dict[TopicPartition, int]]:
        """Each marker's outcome per partition, in order (ClusterAction checked here too, for
        the Kafka door; the gRPC Control service checks it before)."""
        if not self._auth.allows(session, "WriteTxnMarkers", ResourceType.CLUSTER):
            return [
                dict.fromkeys(m.partitions, ErrorCode.CLUSTER_AUTHORIZATION_FAILED) for m in markers
            ]
        return await self.write_markers_locally(markers)

    async def write_markers_locally(
        self, markers: Sequence[TxnMarker]
    ) -> list[dict[TopicPartition, int]]:
        """This broker's own coordinator's markers for partitions it leads (no authorization:
        the call never left the broker)."""
        return list(await asyncio.gather(*(self._write_marker(m) for m in markers)))

    async def _write_marker(self, marker: TxnMarker) -> dict[TopicPartition, int]:
        statuses = await self._replica_manager.write_txn_markers(marker, self._marker_timeout_ms)
        results = {tp: int(status.code) for tp, status in statuses.items()}
        if self._groups is not None:
            for tp, code in results.items():
                if tp.topic == GROUP_METADATA_TOPIC and code == ErrorCode.NONE:
                    self._groups.complete_transactional_offsets(
                        tp.partition, marker.producer_id, marker.committed
                    )
        return results

    def describe_producers(
        self, partitions: Sequence[TopicPartition], session: Session = _NO_SESSION
    ) -> dict[TopicPartition, tuple[int, str, list[ProducerDescription]]]:
        """(error, message, producers) per partition: only its leader answers."""
        readable = self._auth.allowed_names(
            session, "DescribeProducers", _TOPIC, (tp.topic for tp in partitions)
        )
        answers: dict[TopicPartition, tuple[int, str, list[ProducerDescription]]] = {}
        for tp in partitions:
            if tp.topic not in readable:
                answers[tp] = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, "", [])
                continue
            partition = self._replica_manager.get_partition(tp)
            if partition is None:
                code = (
                    ErrorCode.NOT_LEADER_OR_FOLLOWER
                    if self._cache.contains_partition(tp.topic, tp.partition)
                    else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                )
                answers[tp] = (code, "", [])
            elif not partition.is_leader:
                answers[tp] = (ErrorCode.NOT_LEADER_OR_FOLLOWER, "", [])
            else:
                answers[tp] = (
                    ErrorCode.NONE,
                    "",
                    [ProducerDescription(*p) for p in partition.active_producers()],
                )
        return answers

    # --- the admin tools' ----------------------------------------------------------------------

    def describe_transactions(
        self, transactional_ids: Sequence[str], session: Session = _NO_SESSION
    ) -> list[TransactionDescription]:
        """Each id's description; TRANSACTIONAL_ID_AUTHORIZATION_FAILED for the ids the
        principal may not Describe, and the partitions of topics it may not Describe left
        out."""
        api = "DescribeTransactions"
        allowed = self._auth.allowed_names(session, api, _TXN_ID, transactional_ids)
        answers = {
            d.transactional_id: d
            for d in self.coordinator.describe_transactions(
                [i for i in transactional_ids if i in allowed]
            )
        }
        if self._auth.enabled:
            for txn_id, d in answers.items():
                topics = self._auth.allowed_names(
                    session, api, _TOPIC, (tp.topic for tp in d.partitions)
                )
                answers[txn_id] = dataclasses.replace(
                    d, partitions=tuple(tp for tp in d.partitions if tp.topic in topics)
                )
        return [
            answers.get(i)
            or TransactionDescription(i, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
            for i in transactional_ids
        ]

    def list_transactions(
        self,
        states: Sequence[str],
        producer_ids: Sequence[int],
        duration_filter_ms: int = -1,
        session: Session = _NO_SESSION,
    ) -> ListResult:
        """The transactions of this coordinator the principal may Describe."""
        listed = self.coordinator.list_transactions(states, producer_ids, duration_filter_ms)
        if not self._auth.enabled:
            return listed
        allowed = self._auth.allowed_names(
            session,
            "ListTransactions",
            _TXN_ID,
            (t.transactional_id for t in listed.transaction_states),
            log_if_denied=False,
        )
        return listed._replace(
            transaction_states=[
                t for t in listed.transaction_states if t.transactional_id in allowed
            ]
        )
