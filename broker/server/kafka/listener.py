"""The Kafka-protocol listeners of one broker (``kafka.listeners``): an asyncio TCP server per
listener, a KafkaConnection per accepted socket. Every connection is counted against the
connection limits (connection_quotas.py), and reads its requests' bytes from the broker's one
pool of request bytes (memory_pool.py, ``queued.max.request.bytes``).

Runs on the broker's event loop.
"""

from __future__ import annotations

import asyncio
import functools

import structlog

from minikafka.broker.server.kafka import handlers  # noqa: F401  (fills the registry)
from minikafka.broker.server.kafka.broker import KafkaBroker
from minikafka.broker.server.kafka.connection import KafkaConnection
from minikafka.broker.server.kafka.connection_quotas import ConnectionQuotas
from minikafka.broker.server.kafka.memory_pool import MemoryPool

__all__ = ["KafkaListeners"]

_log = structlog.get_logger(__name__)


class KafkaListeners:
    def __init__(self, broker: KafkaBroker) -> None:
        self._broker = broker
        self._servers: list[asyncio.Server] = []
        self._connections: dict[asyncio.Task[None], KafkaConnection] = {}
        self._memory_pool = MemoryPool.of(broker.config.queued_max_request_bytes)
        self._quotas: ConnectionQuotas | None = None

    async def start(self) -> list[str]:
        """Bind every Kafka listener; the addresses actually bound (``NAME://host:port``)."""
        config = self._broker.config
        self._quotas = ConnectionQuotas(config)  # resolves the overrides' host names
        bound: list[str] = []
        for endpoint, address in zip(
            config.kafka_listeners, config.kafka_bind_addresses, strict=True
        ):
            host = address.rsplit(":", 1)[0].strip("[]")
            server = await asyncio.start_server(
                functools.partial(
                    self._accept,
                    name=endpoint.listener_name,
                    protocol=endpoint.security_protocol,
                ),
                host=host,
                port=endpoint.port,
                reuse_address=True,
                limit=1 << 20,
            )
            self._servers.append(server)
            for sock in server.sockets:
                sock_host, sock_port = sock.getsockname()[:2]
                bound.append(f"{endpoint.listener_name}://{sock_host}:{sock_port}")
        return bound

    def _accept(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        name: str,
        protocol: str,
    ) -> None:
        quotas = self._quotas
        assert quotas is not None  # set by start, before any server accepts
        peer = writer.get_extra_info("peername") or ("", 0)
        host = str(peer[0])
        refused = quotas.inc(name, host)
        if refused is not None:
            _log.info(
                "kafka.connection_refused",
                listener=name,
                client=f"{host}:{peer[1]}",
                reason=refused,
            )
            writer.transport.abort()
            return
        connection = KafkaConnection(
            reader,
            writer,
            self._broker,
            name,
            memory_pool=self._memory_pool,
            sasl=self._broker.sasl.get(name),
            security_protocol=protocol,
        )
        task = asyncio.ensure_future(connection.serve())
        self._connections[task] = connection

        def ended(done: asyncio.Task[None]) -> None:
            self._connections.pop(done, None)
            quotas.dec(host)

        task.add_done_callback(ended)

    async def stop(self) -> None:
        for server in self._servers:
            server.close()
        for task, connection in list(self._connections.items()):
            # Closed as well as cancelled: a follower fetching again at once keeps a connection
            # busy, and Python 3.11's wait_for can drop a cancellation that races a read.
            connection.abort()
            task.cancel()
        for server in self._servers:
            await server.wait_closed()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)
        self._servers.clear()
