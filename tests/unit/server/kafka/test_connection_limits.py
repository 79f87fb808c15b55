"""ConnectionQuotas (max.connections, max.connections.per.ip and its overrides) and the pool of
request bytes (queued.max.request.bytes), on their own."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Awaitable
from types import SimpleNamespace
from typing import Any

import pytest

from minikafka.broker.config import BrokerConfig
from minikafka.broker.server.kafka import handlers, registry  # noqa: F401  (fills the registry)
from minikafka.broker.server.kafka.connection import KafkaConnection
from minikafka.broker.server.kafka.connection_quotas import ConnectionQuotas
from minikafka.broker.server.kafka.memory_pool import MemoryPool
from minikafka.broker.server.kafka.schema import Entity
from minikafka.broker.server.metrics import RequestMetrics
from minikafka.broker.server.quotas import ClientQuotaManager
from tests.integration.kafka_protocol.raw import encode_request, read_frame

API_VERSIONS = 18
DESCRIBE_CLUSTER = 60


def _config(**props: str) -> BrokerConfig:
    return BrokerConfig.from_properties({"broker.id": "1", "zookeeper.connect": "zk:2181", **props})


@contextlib.asynccontextmanager
async def _serving(pool: MemoryPool) -> AsyncIterator[int]:
    """A Kafka listener's connections on 127.0.0.1 sharing ``pool``; yields its port, and on
    the way out waits for every connection to end (the clients close theirs first)."""
    broker: Any = SimpleNamespace(
        config=SimpleNamespace(socket_request_max_bytes=1 << 20, connections_max_idle_ms=10_000),
        requests=RequestMetrics(),
        quotas=ClientQuotaManager(),
    )
    served: list[asyncio.Future[None]] = []

    def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = KafkaConnection(reader, writer, broker, "CLIENT", memory_pool=pool)
        served.append(asyncio.ensure_future(connection.serve()))

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        await asyncio.wait_for(asyncio.gather(*served), 5)
        server.close()
        await server.wait_closed()


def test_per_ip_limit_and_its_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    resolved = [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.9", 0))]
    monkeypatch.setattr(socket, "getaddrinfo", lambda *args, **kwargs: resolved)
    quotas = ConnectionQuotas(
        _config(
            **{
                "max.connections.per.ip": "2",
                "max.connections.per.ip.overrides": "127.0.0.1:3,trusted.example.com:0",
            }
        )
    )
    assert [quotas.inc("CLIENT", "10.1.1.1") for _ in range(3)][:2] == [None, None]
    assert quotas.inc("CLIENT", "10.1.1.1") == (
        "address already has the configured maximum of 2 connections"
    )
    assert [quotas.inc("CLIENT", "127.0.0.1") for _ in range(3)] == [None, None, None]
    assert quotas.inc("CLIENT", "127.0.0.1") is not None
    assert quotas.inc("CLIENT", "10.0.0.9") is not None  # the host name's address: 0
    quotas.dec("10.1.1.1")
    assert quotas.count("10.1.1.1") == 1
    assert quotas.inc("CLIENT", "10.1.1.1") is None


def test_max_connections_spares_the_inter_broker_listener() -> None:
    quotas = ConnectionQuotas(
        _config(**{"max.connections": "2", "inter.broker.listener.name": "PLAINTEXT"})
    )
    assert quotas.inc("CLIENT", "10.0.0.1") is None
    assert quotas.inc("CLIENT", "10.0.0.2") is None
    assert quotas.inc("CLIENT", "10.0.0.3") == (
        "broker already has the configured maximum of 2 connections"
    )
    assert quotas.inc("PLAINTEXT", "10.0.0.4") is None  # followers always get in
    quotas.dec("10.0.0.1")
    quotas.dec("10.0.0.2")
    assert quotas.inc("CLIENT", "10.0.0.3") is None


def test_the_pool_lets_a_request_in_while_any_byte_is_free() -> None:
    assert MemoryPool.of(-1) is None and MemoryPool.of(0) is None

    async def scenario() -> list[str]:
        pool = MemoryPool(100)
        order: list[str] = []
        await pool.allocate(60)
        await pool.allocate(60)  # not strict: 40 were free
        assert pool.available == -20

        async def third() -> None:
            await pool.allocate(10)
            order.append("third in")

        waiting = asyncio.ensure_future(third())
        await asyncio.sleep(0.01)
        order.append("released 10")
        pool.release(10)  # still none free
        await asyncio.sleep(0.01)
        order.append("released 60")
        pool.release(60)
        await asyncio.wait_for(waiting, 1)
        assert pool.available == 40
        return order

    assert asyncio.run(scenario()) == ["released 10", "released 60", "third in"]


def test_a_spent_pool_stops_other_connections_reading_until_an_answer_frees_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """queued.max.request.bytes across connections: the first request takes the pool (and
    more), so the second connection does not read its request until the first is answered."""
    handled: list[int] = []

    async def scenario() -> None:
        release = asyncio.Event()

        async def describe_cluster(request: registry.Request, broker: Any) -> Entity | None:
            handled.append(request.correlation_id)
            if request.correlation_id == 1:
                await release.wait()
            return request.response({})

        monkeypatch.setitem(
            registry.HANDLERS,
            DESCRIBE_CLUSTER,
            registry.Handler(DESCRIBE_CLUSTER, "describe_cluster", 0, 1, describe_cluster),
        )
        pool = MemoryPool(10)  # less than one request
        async with _serving(pool) as port:
            first = socket.create_connection(("127.0.0.1", port))
            second = socket.create_connection(("127.0.0.1", port))
            try:
                first.sendall(encode_request(DESCRIBE_CLUSTER, 0, {}, correlation_id=1))
                await asyncio.sleep(0.2)
                second.sendall(encode_request(DESCRIBE_CLUSTER, 0, {}, correlation_id=2))
                await asyncio.sleep(0.3)
                assert handled == [1] and pool.available < 0
                release.set()
                await asyncio.to_thread(read_frame, first)
                await asyncio.to_thread(read_frame, second)
                assert handled == [1, 2]
            finally:
                first.close()
                second.close()
        assert pool.available == 10  # every request's bytes back once its connection closed

    asyncio.run(scenario())


def test_a_pipelined_request_gives_its_bytes_back_once_handled_not_when_answered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As Kafka releases a request's buffer after KafkaApis.handle: a produce appended and
    waiting for acks=all holds no pool bytes, or a spent pool would keep the follower's fetch
    (the one thing that ends the wait) from being read. Here the first connection's pipelined
    request is answered only once the second connection's request is handled."""

    async def scenario() -> None:
        fetched = asyncio.Event()

        def produce(request: registry.Request, broker: Any) -> Awaitable[Entity | None]:
            async def acks_all() -> Entity | None:
                await fetched.wait()  # the follower's fetch moves the high watermark
                return request.response({})

            return asyncio.ensure_future(acks_all())

        async def follower_fetch(request: registry.Request, broker: Any) -> Entity | None:
            fetched.set()
            return request.response({})

        monkeypatch.setitem(
            registry.HANDLERS,
            API_VERSIONS,
            registry.Handler(API_VERSIONS, "api_versions", 0, 3, produce, pipelined=True),
        )
        monkeypatch.setitem(
            registry.HANDLERS,
            DESCRIBE_CLUSTER,
            registry.Handler(DESCRIBE_CLUSTER, "describe_cluster", 0, 1, follower_fetch),
        )
        pool = MemoryPool(10)  # less than one request
        async with _serving(pool) as port:
            producer = socket.create_connection(("127.0.0.1", port))
            follower = socket.create_connection(("127.0.0.1", port))
            producer.settimeout(5)
            follower.settimeout(5)
            try:
                producer.sendall(encode_request(API_VERSIONS, 0, {}, correlation_id=1))
                await asyncio.sleep(0.2)
                assert pool.available == 10  # appended: its bytes are back while it waits
                follower.sendall(encode_request(DESCRIBE_CLUSTER, 0, {}, correlation_id=2))
                await asyncio.to_thread(read_frame, follower)
                await asyncio.to_thread(read_frame, producer)
            finally:
                producer.close()
                follower.close()
        assert pool.available == 10

    asyncio.run(scenario())
