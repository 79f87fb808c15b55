"""Fetch on plain values: the one path both front doors take, for consumers and followers.

A fetch with ``replica_id`` >= 0 comes from a follower: its fetch offset is its log end offset,
which moves the high watermark and the ISR. Followers fetch on inter.broker.listener.name only
(KIP-291's split); on any other listener, gRPC or Kafka, such a fetch gets
TOPIC_AUTHORIZATION_FAILED on every partition, what Kafka answers a follower fetch from a
principal without ClusterAction, so no client can pose as a follower and move a HW. A refused
follower retries every back-off, so the broker warns once per (listener, replica).

Every other fetch goes through the broker's one session cache (KIP-227,
``ReplicaManager.fetch_sessions``): a full fetch opens a session, later ones name only what
changed and are answered only with partitions that have news; the ReplicaManager's
``fetch_messages`` (long poll included) reads what the session says to read.

    fetches = FetchApi(replica_manager, config.inter_broker_listener_name)
    answer = await fetches.fetch(request, listener="CLIENT")  # a FetchSessionResponse

Runs on the broker's event loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

import structlog

from minikafka.broker.replication.fetch_session import (
    INVALID_SESSION_ID,
    FetchContext,
    FetchManager,
    FetchMetadata,
    FetchSessionResponse,
)
from minikafka.broker.replication.requests import FetchPartitionResult, FetchRequest
from minikafka.proto.errors import ErrorCode

__all__ = ["REPLICA_FETCH_REFUSED", "FetchApi", "FetchSource"]

REPLICA_FETCH_REFUSED = (
    "replicas fetch on the inter-broker listener (inter.broker.listener.name) only; "
    "every broker must name the same one"
)

_log = structlog.get_logger(__name__)


class FetchSource(Protocol):
    """The part of the ReplicaManager a fetch reads (the ReplicaManager satisfies it)."""

    @property
    def fetch_sessions(self) -> FetchManager: ...

    async def fetch_messages(
        self, request: FetchRequest, context: FetchContext | None = None
    ) -> Sequence[FetchPartitionResult]: ...


class FetchApi:
    """See the module docstring. One per broker, shared by every listener of both doors."""

    def __init__(self, replica_manager: FetchSource, inter_broker_listener: str) -> None:
        self._replica_manager = replica_manager
        self._inter_broker_listener = inter_broker_listener
        # (listener, replica id) already warned of: once each, not once per back-off.
        self._refused: set[tuple[str, int]] = set()

    async def fetch(self, request: FetchRequest, *, listener: str) -> FetchSessionResponse:
        """``listener``: the name of the listener the request came in on."""
        if request.replica_id >= 0 and listener != self._inter_broker_listener:
            return self._refuse_replica(request, listener)
        replica_manager = self._replica_manager

        async def read(context: FetchContext) -> Sequence[FetchPartitionResult]:
            return await replica_manager.fetch_messages(
                replace(request, partitions=context.partitions), context
            )

        return await replica_manager.fetch_sessions.fetch(
            FetchMetadata(request.session_id, request.session_epoch),
            request.partitions,
            request.forgotten,
            replica_id=request.replica_id,
            read=read,
        )

    def _refuse_replica(self, request: FetchRequest, listener: str) -> FetchSessionResponse:
        if (listener, request.replica_id) not in self._refused:
            self._refused.add((listener, request.replica_id))
            _log.warning(
                "fetch.replica_refused",
                replica=request.replica_id,
                listener=listener,
                inter_broker_listener=self._inter_broker_listener,
                hint=REPLICA_FETCH_REFUSED,
            )
        return FetchSessionResponse(
            ErrorCode.NONE,
            INVALID_SESSION_ID,
            [
                FetchPartitionResult(
                    p.topic,
                    p.partition,
                    ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    REPLICA_FETCH_REFUSED,
                )
                for p in request.partitions
            ],
        )
