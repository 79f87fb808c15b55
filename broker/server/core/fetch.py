"""Fetch on plain values: the one path both front doors take, for consumers and followers.

A fetch with ``replica_id`` >= 0 comes from a follower: its fetch offset is its log end offset,
which moves the high watermark and the ISR. Followers fetch on inter.broker.listener.name only
(KIP-291's split); on any other listener, gRPC or Kafka, such a fetch gets
TOPIC_AUTHORIZATION_FAILED on every partition, what Kafka answers a follower fetch from a
principal without ClusterAction, so no client can pose as a follower and move a HW. A refused
follower retries every back-off, so the broker warns once per (listener, replica).

With an authorizer (core/authorization.py), a follower also needs ClusterAction on the cluster
and a consumer Read on each topic; either refusal is TOPIC_AUTHORIZATION_FAILED for the
partitions concerned, as Kafka answers, and nothing of them is read. A consumer's session may
hold partitions of a topic whose ACLs changed since it listed them: every read of the session
asks again, so they are answered the error rather than read.

Every other fetch goes through the broker's one session cache (KIP-227,
``ReplicaManager.fetch_sessions``): a full fetch opens a session, later ones name only what
changed and are answered only with partitions that have news; the ReplicaManager's
``fetch_messages`` (long poll included) reads what the session says to read.

    fetches = FetchApi(replica_manager, config.inter_broker_listener_name)
    answer = await fetches.fetch(request, listener="CLIENT", session=session)
    # a FetchSessionResponse

Runs on the broker's event loop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
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
from minikafka.broker.replication.requests import (
    FetchPartition,
    FetchPartitionResult,
    FetchRequest,
)
from minikafka.broker.security.acl import ResourceType
from minikafka.broker.security.principal import ANONYMOUS, Session
from minikafka.broker.server.core.authorization import AuthHelper
from minikafka.broker.server.core.data import TOPIC_DENIED
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode

__all__ = ["REPLICA_FETCH_REFUSED", "FetchApi", "FetchSource"]

REPLICA_FETCH_REFUSED = (
    "replicas fetch on the inter-broker listener (inter.broker.listener.name) only; "
    "every broker must name the same one"
)

_log = structlog.get_logger(__name__)

# Requests built without one (tests, tools) are ANONYMOUS from nowhere.
_NO_SESSION = Session(ANONYMOUS, "")


class FetchSource(Protocol):
    """The part of the ReplicaManager a fetch reads (the ReplicaManager satisfies it)."""

    @property
    def fetch_sessions(self) -> FetchManager: ...

    async def fetch_messages(
        self, request: FetchRequest, context: FetchContext | None = None
    ) -> Sequence[FetchPartitionResult]: ...


class FetchApi:
    """See the module docstring. One per broker, shared by every listener of both doors."""

    def __init__(
        self,
        replica_manager: FetchSource,
        inter_broker_listener: str,
        auth: AuthHelper | None = None,
    ) -> None:
        self._replica_manager = replica_manager
        self._inter_broker_listener = inter_broker_listener
        self._auth = auth or AuthHelper()
        # (listener, replica id) already warned of: once each, not once per back-off.
        self._refused: set[tuple[str, int]] = set()

    async def fetch(
        self, request: FetchRequest, *, listener: str, session: Session = _NO_SESSION
    ) -> FetchSessionResponse:
        """``listener``: the name of the listener the request came in on; ``session``: who
        sent it (what the authorizer is asked about)."""
        if request.replica_id >= 0 and listener != self._inter_broker_listener:
            return self._refuse_replica(request, listener)
        auth = self._auth
        if request.replica_id >= 0 and not auth.allows(
            session, "Fetch (follower)", ResourceType.CLUSTER
        ):
            # Refused before its session is made or its fetch state recorded: a forged
            # follower moves no HW and no ISR.
            return FetchSessionResponse(
                ErrorCode.NONE,
                INVALID_SESSION_ID,
                [_denied(p.topic, p.partition) for p in request.partitions],
            )
        replica_manager = self._replica_manager

        async def read_all(context: FetchContext) -> Sequence[FetchPartitionResult]:
            return await replica_manager.fetch_messages(
                replace(request, partitions=context.partitions), context
            )

        read: _Reader = read_all
        if request.replica_id < 0 and auth.enabled:
            read = _ReadableTopics(auth, session).reader(replica_manager, request)

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


def _denied(topic: str, partition: int) -> FetchPartitionResult:
    return FetchPartitionResult(
        topic,
        partition,
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        TOPIC_DENIED.format(topic=topic),
    )


class _ReadableTopics:
    """A consumer fetch's answers of the authorizer, one per topic for the whole fetch (a
    long poll re-reads the session's partitions; the answer holds while it waits)."""

    def __init__(self, auth: AuthHelper, session: Session) -> None:
        self._auth = auth
        self._session = session
        self._answers: dict[str, bool] = {}

    def allowed(self, topics: Iterable[str]) -> set[str]:
        new = [t for t in dict.fromkeys(topics) if t not in self._answers]
        if new:
            allowed = self._auth.allowed_names(self._session, "Fetch", ResourceType.TOPIC, new)
            self._answers.update((t, t in allowed) for t in new)
        return {t for t, ok in self._answers.items() if ok}

    def reader(self, replica_manager: FetchSource, request: FetchRequest) -> _Reader:
        async def read(context: FetchContext) -> Sequence[FetchPartitionResult]:
            allowed = self.allowed(p.topic for p in context.partitions)
            readable = [p for p in context.partitions if p.topic in allowed]
            denied = [
                _denied(p.topic, p.partition) for p in context.partitions if p.topic not in allowed
            ]
            if denied and not readable:  # nothing to wait for: answer now, as Kafka does
                return denied
            results = await replica_manager.fetch_messages(
                replace(request, partitions=readable), _AuthorizedContext(context, self)
            )
            return [*results, *denied]

        return read


_Reader = Callable[[FetchContext], Awaitable[Sequence[FetchPartitionResult]]]


class _AuthorizedContext(FetchContext):
    """``context`` with the partitions the principal may not Read left out of every read (a
    parked fetch's re-reads included); everything else is the context's."""

    def __init__(self, context: FetchContext, topics: _ReadableTopics) -> None:
        self._context = context
        self._topics = topics
        self.session_key = context.session_key
        self.previous_fetch_ms = context.previous_fetch_ms
        self.added = context.added
        self.partitions = self._readable(context.partitions)

    def _readable(self, partitions: Sequence[FetchPartition]) -> list[FetchPartition]:
        allowed = self._topics.allowed(p.topic for p in partitions)
        return [p for p in partitions if p.topic in allowed]

    @property
    def error_code(self) -> int:
        return self._context.error_code

    def rereads(self) -> list[FetchPartition]:
        return self._readable(self._context.rereads())

    @property
    def session_removed(self) -> bool:
        return self._context.session_removed

    def after_read(
        self, results: Sequence[FetchPartitionResult], unsettled: Iterable[TopicPartition]
    ) -> None:
        self._context.after_read(results, unsettled)

    def respond(self, results: Sequence[FetchPartitionResult]) -> FetchSessionResponse:
        return self._context.respond(results)
