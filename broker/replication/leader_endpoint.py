"""The leader as a follower's fetcher sees it: two requests and one error, in plain values.

Kafka's LeaderEndpoint: the fetch loop (fetcher.py) sends a ``FetchRequest`` and an
``OffsetsForLeaderEpochRequest`` (requests.py) and reads a ``FetchSessionResponse`` (the leader's
own answer type, fetch_session.py) and one ``EpochEndOffset`` per partition. Each front door
adapts them, and the server injects one as a ``LeaderEndpointFactory`` (replication knows no
wire): ``GrpcLeaderEndpoint`` (broker/server/grpc_leader_endpoint.py) to the gRPC Data service,
``KafkaLeaderEndpoint`` (broker/server/kafka/leader_endpoint.py) to Fetch v12 and
OffsetsForLeaderEpoch v4. A request that gets no
answer — the connection failed, closed, or the answer took longer than the timeout — raises
``LeaderEndpointError``, whatever the wire; per-partition errors come back as error codes.

    endpoint = factory(host, port)
    try:
        response = await endpoint.fetch(request)
    except LeaderEndpointError as exc:
        ...  # back off every partition; exc.code says what happened ("UNAVAILABLE", ...)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from minikafka.broker.replication.fetch_session import FetchSessionResponse
from minikafka.broker.replication.requests import (
    EpochEndOffset,
    FetchRequest,
    OffsetsForLeaderEpochRequest,
)

__all__ = [
    "DEADLINE_EXCEEDED",
    "UNAVAILABLE",
    "LeaderEndpoint",
    "LeaderEndpointError",
    "LeaderEndpointFactory",
]

# The codes a LeaderEndpointError carries from every wire (gRPC's status names, which the gRPC
# endpoint passes through as they are: INVALID_ARGUMENT, RESOURCE_EXHAUSTED, ...).
UNAVAILABLE = "UNAVAILABLE"  # no connection, or it failed or closed
DEADLINE_EXCEEDED = "DEADLINE_EXCEEDED"  # no answer within the timeout


class LeaderEndpointError(Exception):
    """A request to the leader got no answer. Retriable: the fetcher backs off and sends again
    (the endpoint connects again first)."""

    retriable = True

    def __init__(self, code: str, details: str) -> None:
        super().__init__(f"{code}: {details}")
        self.code = code
        self.details = details


class LeaderEndpoint(Protocol):
    """The leader broker of some partitions, reached over one connection of its own."""

    async def fetch(self, request: FetchRequest) -> FetchSessionResponse: ...

    async def offsets_for_leader_epoch(
        self, request: OffsetsForLeaderEpochRequest
    ) -> Sequence[EpochEndOffset]: ...

    async def close(self) -> None: ...


# (leader host, leader port) -> a new endpoint; one per fetcher.
LeaderEndpointFactory = Callable[[str, int], LeaderEndpoint]
