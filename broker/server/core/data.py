"""The data path's requests as the core serves them to both doors: Produce, ListOffsets,
OffsetsForLeaderEpoch and InitProducerId, each asked of the authorizer (core/authorization.py)
before it reaches the ReplicaManager or the ProducerIdManager.

    data = DataApi(replica_manager, producer_ids, auth)
    statuses = data.append_to_leaders(request, session)   # now, in arrival order
    results = await data.produce_response(request, statuses)

Partitions of topics the principal may not use are answered TOPIC_AUTHORIZATION_FAILED and
never reach the ReplicaManager (no append, no read), so the answer does not say whether the
topic exists; the other partitions of the same request go on. Answers keep the request's order.
Fetch is ``FetchApi``'s (core/fetch.py).

Runs on the broker's event loop.
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

from minikafka.broker.replication.delayed_produce import ProducePartitionStatus
from minikafka.broker.replication.producer_id_manager import ProducerIdManager
from minikafka.broker.replication.replica_manager import ProduceStatuses, ReplicaManager
from minikafka.broker.replication.requests import (
    EpochEndOffset,
    InitProducerIdRequest,
    InitProducerIdResult,
    ListOffsetsPartitionResult,
    ListOffsetsRequest,
    OffsetsForLeaderEpochRequest,
    ProducePartitionResult,
    ProduceRequest,
)
from minikafka.broker.security.acl import ResourceType
from minikafka.broker.security.principal import Session
from minikafka.broker.server.core.authorization import AuthHelper
from minikafka.proto.errors import ErrorCode
from minikafka.proto.records import iter_batch_headers

__all__ = ["TOPIC_DENIED", "DataApi"]

TOPIC_DENIED = "Not authorized to access topics: [{topic}]"


class TransactionalProducerIds(Protocol):
    async def init_producer_id(
        self, request: InitProducerIdRequest, session: Session
    ) -> InitProducerIdResult: ...


def _holds_transactional_batches(request: ProduceRequest) -> bool:
    return any(
        header.is_transactional
        for p in request.partitions
        for _, header in iter_batch_headers(p.records)
    )


class DataApi:
    """See the module docstring. One per broker, shared by every listener of both doors."""

    def __init__(
        self,
        replica_manager: ReplicaManager,
        producer_ids: ProducerIdManager,
        auth: AuthHelper | None = None,
    ) -> None:
        self._replica_manager = replica_manager
        self._producer_ids = producer_ids
        self._auth = auth or AuthHelper()
        # A transactional id's InitProducerId: the broker sets it once its transaction
        # coordinator exists (core/transactions.py).
        self.transactions: TransactionalProducerIds | None = None

    # --- Produce ------------------------------------------------------------------------------

    def append_to_leaders(self, request: ProduceRequest, session: Session) -> ProduceStatuses:
        """The ReplicaManager's append of the partitions the principal may Write, now (no
        await); the others TOPIC_AUTHORIZATION_FAILED. Keyed in request order.

        A request with a transactional id needs Write on it, and transactional batches need
        a transactional id (a producer that is not transactional cannot end a transaction):
        else, as Kafka, every partition is TRANSACTIONAL_ID_AUTHORIZATION_FAILED and nothing
        is appended."""
        transactional_id = request.transactional_id
        if (transactional_id is None and _holds_transactional_batches(request)) or (
            transactional_id is not None
            and not self._auth.allows(
                session, "Produce", ResourceType.TRANSACTIONAL_ID, transactional_id
            )
        ):
            return {
                (p.topic, p.partition): ProducePartitionStatus(
                    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                    "Transactional Id authorization failed."
                    if transactional_id is not None
                    else "transactional records need the producer's transactional id",
                )
                for p in request.partitions
            }
        if not self._auth.enabled:  # the hot path pays nothing without an authorizer
            return self._replica_manager.append_to_leaders(request)
        allowed = self._auth.allowed_names(
            session, "Produce", ResourceType.TOPIC, (p.topic for p in request.partitions)
        )
        if len(allowed) == len({p.topic for p in request.partitions}):
            return self._replica_manager.append_to_leaders(request)
        appended = self._replica_manager.append_to_leaders(
            dataclasses.replace(
                request, partitions=[p for p in request.partitions if p.topic in allowed]
            )
        )
        statuses: ProduceStatuses = {}
        for p in request.partitions:
            key = (p.topic, p.partition)
            statuses[key] = appended.get(key) or ProducePartitionStatus(
                ErrorCode.TOPIC_AUTHORIZATION_FAILED, TOPIC_DENIED.format(topic=p.topic)
            )
        return statuses

    async def produce_response(
        self, request: ProduceRequest, statuses: ProduceStatuses
    ) -> list[ProducePartitionResult]:
        """The answer to ``append_to_leaders`` (acks=all: once the ISR has the appends)."""
        return await self._replica_manager.produce_response(request, statuses)

    async def produce(
        self, request: ProduceRequest, session: Session
    ) -> list[ProducePartitionResult]:
        return await self.produce_response(request, self.append_to_leaders(request, session))

    # --- Offsets ------------------------------------------------------------------------------

    async def list_offsets(
        self, request: ListOffsetsRequest, session: Session
    ) -> list[ListOffsetsPartitionResult]:
        """One result per partition, in request order."""
        allowed = self._auth.allowed_names(
            session, "ListOffsets", ResourceType.TOPIC, (p.topic for p in request.partitions)
        )
        asked = [p for p in request.partitions if p.topic in allowed]
        answers = iter(
            await self._replica_manager.list_offsets(dataclasses.replace(request, partitions=asked))
            if asked
            else ()
        )
        return [
            next(answers)
            if p.topic in allowed
            else ListOffsetsPartitionResult(
                p.topic,
                p.partition,
                ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                TOPIC_DENIED.format(topic=p.topic),
            )
            for p in request.partitions
        ]

    async def offsets_for_leader_epoch(
        self, request: OffsetsForLeaderEpochRequest, session: Session
    ) -> list[EpochEndOffset]:
        """A replica's ClusterAction covers every topic; a consumer needs Describe on each
        (KIP-320 made it a consumer's request too). One result per partition, in order."""
        auth = self._auth
        api = "OffsetsForLeaderEpoch"
        topics = [p.topic for p in request.partitions]
        if auth.allows(session, api, ResourceType.CLUSTER, log_if_denied=False):
            allowed = set(topics)
        else:
            allowed = auth.allowed_names(session, api, ResourceType.TOPIC, topics)
        asked = [p for p in request.partitions if p.topic in allowed]
        answers = iter(
            await self._replica_manager.offsets_for_leader_epoch(
                OffsetsForLeaderEpochRequest(request.replica_id, asked)
            )
            if asked
            else ()
        )
        return [
            next(answers)
            if p.topic in allowed
            else EpochEndOffset(
                p.topic,
                p.partition,
                ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                TOPIC_DENIED.format(topic=p.topic),
            )
            for p in request.partitions
        ]

    # --- InitProducerId -----------------------------------------------------------------------

    async def init_producer_id(
        self, request: InitProducerIdRequest, session: Session
    ) -> InitProducerIdResult:
        """Write on the transactional id when one is given; else IdempotentWrite on the
        cluster, or Write on some topic (KIP-679: an idempotent producer that may write
        anywhere needs no cluster-wide ACL)."""
        auth = self._auth
        api = "InitProducerId"
        if request.transactional_id is not None:
            if not auth.allows(
                session, api, ResourceType.TRANSACTIONAL_ID, request.transactional_id
            ):
                return InitProducerIdResult(
                    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                    "Transactional Id authorization failed.",
                )
            if self.transactions is None:
                return InitProducerIdResult(
                    ErrorCode.COORDINATOR_NOT_AVAILABLE, "this broker runs no transactions"
                )
            return await self.transactions.init_producer_id(request, session)
        elif not auth.allows(
            session, api, ResourceType.CLUSTER, log_if_denied=False
        ) and not auth.allows_any(session, api, ResourceType.TOPIC):
            return InitProducerIdResult(
                ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."
            )
        return await self._producer_ids.init_producer_id(request)
