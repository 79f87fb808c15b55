"""ConnectionQuotas (max.connections, max.connections.per.ip and its overrides) and the pool of
request bytes (queued.max.request.bytes), on their own."""

from __future__ import annotations

import asyncio
import socket

import pytest

from minikafka.broker.config import BrokerConfig
from minikafka.broker.server.kafka.connection_quotas import ConnectionQuotas
from minikafka.broker.server.kafka.memory_pool import MemoryPool


def _config(**props: str) -> BrokerConfig:
    return BrokerConfig.from_properties({"broker.id": "1", "zookeeper.connect": "zk:2181", **props})


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
