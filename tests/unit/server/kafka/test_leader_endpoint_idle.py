"""The follower's Kafka-protocol endpoint (KafkaLeaderEndpoint) when the leader closes an idle
connection, against a scripted leader (the scaffolding of test_leader_endpoint.py)."""

from __future__ import annotations

import asyncio
import struct

import pytest

from minikafka.broker.server.kafka.schema import Entity, read_entity, request_class
from tests.unit.server.kafka.test_leader_endpoint import (
    FETCH,
    RECORDS,
    endpoint,
    fetch_answer,
)

# The broker runs this endpoint on uvloop (conftest.py).
pytestmark = pytest.mark.usefixtures("either_event_loop")


def test_a_connection_the_leader_closed_while_idle_is_replaced_not_failed() -> None:
    """The leader answers one fetch, then closes the connection between requests (its
    connections.max.idle.ms, a restart of its listener, a load balancer...). Kafka's
    ReplicaFetcherBlockingSend/NetworkClientUtils.awaitReady sees the node disconnected and
    connects again before sending; the next request is not failed (which would back off every
    partition of the fetcher for replica.fetch.backoff.ms)."""

    connections = 0

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        try:
            (size,) = struct.unpack(">i", await reader.readexactly(4))
            frame = await reader.readexactly(size)
            api_key, version, correlation_id = struct.unpack_from(">hhi", frame)
            cls = request_class(api_key, version)
            _, offset = read_entity(cls.__header_schema__, frame, 0)
            body: Entity
            body, _ = read_entity(cls, frame, offset)
            data = await fetch_answer(api_key, version, correlation_id, body)
            writer.write(struct.pack(">i", len(data)) + data)
            await writer.drain()
        finally:
            writer.close()  # answered one request; the connection then goes idle and closes

    async def scenario() -> None:
        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        follower = endpoint(port)
        try:
            first = await follower.fetch(FETCH)
            assert first.partitions[0].records == RECORDS
            await asyncio.sleep(0.2)  # the leader's close reaches the follower while idle
            second = await follower.fetch(FETCH)  # raises LeaderEndpointError today
            assert second.partitions[0].records == RECORDS
            assert connections == 2
        finally:
            await follower.close()
            server.close()

    asyncio.run(scenario())
