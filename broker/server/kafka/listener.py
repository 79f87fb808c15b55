"""The Kafka-protocol listeners of one broker (``kafka.listeners``): an asyncio TCP server per
listener, a KafkaConnection per accepted socket. Every connection is counted against the
connection limits (connection_quotas.py), and reads its requests' bytes from the broker's one
pool of request bytes (memory_pool.py, ``queued.max.request.bytes``).

An SSL or SASL_SSL listener accepts TCP and then runs the TLS handshake on the connection
(``tls_handshake``: ``loop.start_tls`` on the accepted transport) rather than handing the
server a context: a handshake that fails inside asyncio's or uvloop's server (a plaintext
client, a certificate that is expired, self-signed, from another CA, or missing when
ssl.client.auth=required) is dropped without a word, and here it is one log line with the
client's address and the reason. uvloop reads a new connection at once, whatever its protocol
asks: the client's first TLS bytes are kept by ``Accepted`` and handed to TLS when it takes
over (without that, the handshake stalls until its timeout). On an SSL listener the client
certificate's principal (broker/security/tls.py) becomes the connection's session; on SASL_SSL
the certificate is not mapped (a certificate no ``ssl.principal.mapping.rules`` rule names is
no reason to refuse) and the session is the SASL user's once the connection logs in.

Runs on the broker's event loop.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, cast

import structlog

from minikafka.broker.security.principal import ANONYMOUS, KafkaPrincipal
from minikafka.broker.security.tls import ListenerTls
from minikafka.broker.server.kafka import handlers  # noqa: F401  (fills the registry)
from minikafka.broker.server.kafka.broker import KafkaBroker
from minikafka.broker.server.kafka.connection import KafkaConnection
from minikafka.broker.server.kafka.connection_quotas import ConnectionQuotas
from minikafka.broker.server.kafka.memory_pool import MemoryPool

__all__ = ["Accepted", "KafkaListeners", "tls_handshake"]

_log = structlog.get_logger(__name__)


class KafkaListeners:
    def __init__(self, broker: KafkaBroker, tls: Mapping[str, ListenerTls] | None = None) -> None:
        """``tls``: the TLS of the SSL/SASL_SSL listeners, read already (the broker reads
        them at startup); those missing are read by ``start``."""
        self._broker = broker
        self._servers: list[asyncio.Server] = []
        # Each accepted socket's task, with its TCP transport (closing it ends a handshake or
        # a connection alike).
        self._connections: dict[asyncio.Task[None], asyncio.BaseTransport] = {}
        self._tls: dict[str, ListenerTls] = dict(tls or {})
        self._memory_pool = MemoryPool.of(broker.config.queued_max_request_bytes)
        self._quotas: ConnectionQuotas | None = None

    async def start(self) -> list[str]:
        """Bind every Kafka listener; the addresses actually bound (``NAME://host:port``)."""
        config = self._broker.config
        for endpoint in config.kafka_listeners:
            listener = config.listener_config(endpoint.listener_name)
            if listener.uses_tls and listener.name not in self._tls:
                # InvalidConfigError (a bad key store) before any bind
                self._tls[listener.name] = ListenerTls.load(listener)
        self._quotas = ConnectionQuotas(config)  # resolves the overrides' host names
        loop = asyncio.get_running_loop()
        bound: list[str] = []
        for endpoint, address in zip(
            config.kafka_listeners, config.kafka_bind_addresses, strict=True
        ):
            name = endpoint.listener_name
            host = address.rsplit(":", 1)[0].strip("[]")
            if name in self._tls:
                server = await loop.create_server(
                    functools.partial(Accepted, functools.partial(self._accept_tls, name=name)),
                    host=host,
                    port=endpoint.port,
                    reuse_address=True,
                )
            else:
                server = await asyncio.start_server(
                    functools.partial(self._accept, name=name),
                    host=host,
                    port=endpoint.port,
                    reuse_address=True,
                    limit=_READ_LIMIT,
                )
            self._servers.append(server)
            for sock in server.sockets:
                sock_host, sock_port = sock.getsockname()[:2]
                bound.append(f"{name}://{sock_host}:{sock_port}")
        return bound

    def _admit(
        self,
        transport: asyncio.BaseTransport,
        name: str,
        serve: Callable[[str], Coroutine[Any, Any, None]],
    ) -> None:
        """Count the connection against the limits and serve it, or close it at once."""
        quotas = self._quotas
        assert quotas is not None  # set by start, before any server accepts
        peer = transport.get_extra_info("peername") or ("", 0)
        host = str(peer[0])
        client = f"{host}:{peer[1]}"
        refused = quotas.inc(name, host)
        if refused is not None:
            _log.info("kafka.connection_refused", listener=name, client=client, reason=refused)
            cast(asyncio.Transport, transport).abort()
            return
        task = asyncio.ensure_future(serve(client))
        self._connections[task] = transport

        def ended(done: asyncio.Task[None]) -> None:
            self._connections.pop(done, None)
            quotas.dec(host)
            if not done.cancelled() and done.exception() is not None:
                # A fault of ours (a TLS hand-over gone wrong, say): one line with the
                # traceback now, not asyncio's "exception was never retrieved" at collection.
                _log.error(
                    "kafka.connection_failed",
                    listener=name,
                    client=client,
                    exc_info=done.exception(),
                )
                cast(asyncio.Transport, transport).abort()

        task.add_done_callback(ended)

    def _accept(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, name: str
    ) -> None:
        """A connection to a PLAINTEXT or SASL_PLAINTEXT listener."""

        async def serve(client: str) -> None:
            await self._connection(reader, writer, name, ANONYMOUS).serve()

        self._admit(writer.transport, name, serve)

    def _accept_tls(self, transport: asyncio.Transport, accepted: Accepted, name: str) -> None:
        """A connection to an SSL or SASL_SSL listener: TLS first."""
        tls = self._tls[name]
        # On SASL_SSL the principal is the SASL user's (Kafka's principal builder maps a
        # certificate only on SSL): a certificate no mapping rule names is no reason to refuse.
        sasl = name in self._broker.sasl

        async def serve(client: str) -> None:
            loop = asyncio.get_running_loop()
            reader = asyncio.StreamReader(limit=_READ_LIMIT)
            protocol = asyncio.StreamReaderProtocol(reader)
            try:
                secured, principal = await tls_handshake(
                    transport, accepted, protocol, tls, map_certificate=not sasl
                )
            except (ConnectionResetError, BrokenPipeError, ssl.SSLEOFError) as exc:
                # The client hung up mid-handshake (a bootstrap probe, a client closing): normal,
                # as a plaintext client hanging up is.
                _log.debug(
                    "kafka.connection_closed",
                    reason="client disconnected during the TLS handshake",
                    listener=name,
                    client=client,
                    error=_reason(exc),
                )
                transport.abort()
                return
            except (OSError, TimeoutError, ValueError) as exc:
                _log.warning(
                    "kafka.tls_handshake_failed", listener=name, client=client, reason=_reason(exc)
                )
                transport.abort()
                return
            writer = asyncio.StreamWriter(secured, protocol, reader, loop)
            await self._connection(reader, writer, name, principal).serve()

        self._admit(transport, name, serve)

    def _connection(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        name: str,
        principal: KafkaPrincipal,
    ) -> KafkaConnection:
        return KafkaConnection(
            reader,
            writer,
            self._broker,
            name,
            memory_pool=self._memory_pool,
            principal=principal,
            security_protocol=self._broker.config.listener_config(name).security_protocol,
            sasl=self._broker.sasl.get(name),
        )

    async def stop(self) -> None:
        for server in self._servers:
            server.close()
        for task, transport in list(self._connections.items()):
            # Closed as well as cancelled: a follower fetching again at once keeps a connection
            # busy, and Python 3.11's wait_for can drop a cancellation that races a read.
            cast(asyncio.Transport, transport).abort()
            task.cancel()
        for server in self._servers:
            await server.wait_closed()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)
        self._servers.clear()


class Accepted(asyncio.Protocol):
    """A TLS listener's new connection until TLS takes it over: keeps what the client sends
    meanwhile (its first TLS bytes; uvloop reads a new connection at once even when paused)
    for ``tls_handshake`` to hand on, and passes the transport to ``accepted``."""

    def __init__(self, accepted: Callable[[asyncio.Transport, Accepted], None]) -> None:
        self._accepted = accepted
        self.early = bytearray()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A TCP transport (uvloop's is not an asyncio.Transport subclass, only alike)
        tcp = cast(asyncio.Transport, transport)
        tcp.pause_reading()  # asyncio honours it, uvloop does not
        self._accepted(tcp, self)

    def data_received(self, data: bytes) -> None:
        self.early += data

    def eof_received(self) -> bool:
        return True  # keep the transport: the handshake fails on its own


async def tls_handshake(
    transport: asyncio.Transport,
    accepted: Accepted,
    protocol: asyncio.BaseProtocol,
    tls: ListenerTls,
    timeout_s: float = 0.0,
    *,
    map_certificate: bool = True,
) -> tuple[asyncio.Transport, KafkaPrincipal]:
    """The server side of TLS on a connection ``accepted`` holds: the TLS transport
    (``protocol`` made its protocol) and the principal of the client's certificate (ANONYMOUS
    without one, or when not ``map_certificate``: a SASL_SSL listener's). Raises ssl.SSLError
    (an OSError) when the handshake fails, ConnectionAbortedError or TimeoutError when it takes
    too long, NoMatchingRule (a ValueError) when no mapping rule names the certificate."""
    loop = asyncio.get_running_loop()
    handshake = asyncio.ensure_future(
        loop.start_tls(
            transport,
            protocol,
            tls.server_context(),
            server_side=True,
            ssl_handshake_timeout=timeout_s or _HANDSHAKE_TIMEOUT_S,
        )
    )
    # start_tls runs up to its handshake: it has made TLS the transport's protocol and
    # scheduled TLS's start and the resumed reading; the bytes read before go in after those.
    await asyncio.sleep(0)
    loop.call_soon(_hand_on, transport, accepted)
    secured = await handshake
    assert secured is not None
    protocol.connection_made(secured)  # start_tls leaves that to its caller
    if not map_certificate:
        return secured, ANONYMOUS
    ssl_object = secured.get_extra_info("ssl_object")
    return secured, tls.principal(ssl_object.getpeercert(binary_form=True))


def _hand_on(transport: asyncio.Transport, accepted: Accepted) -> None:
    """The bytes ``accepted`` kept, to the protocol TLS put on the transport."""
    data, accepted.early = bytes(accepted.early), bytearray()
    target: Any = transport.get_protocol()
    if not data or target is accepted or transport.is_closing():
        return
    if not hasattr(target, "get_buffer"):
        target.data_received(data)
        return
    view = memoryview(data)
    while view:
        buffer = target.get_buffer(len(view))
        size = min(len(buffer), len(view))
        buffer[:size] = view[:size]
        target.buffer_updated(size)
        view = view[size:]


# A client that connects and does not finish its handshake within this long is dropped.
_HANDSHAKE_TIMEOUT_S = 10.0
_READ_LIMIT = 1 << 20


def _reason(exc: BaseException) -> str:
    """A failed handshake in one line: OpenSSL's reason (CERTIFICATE_VERIFY_FAILED,
    WRONG_VERSION_NUMBER, ...) with its verify message when it has one."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"{exc.reason}: {exc.verify_message}"
    if isinstance(exc, ssl.SSLError) and exc.reason:
        return str(exc.reason)
    if isinstance(exc, TimeoutError):
        return "no TLS handshake within the timeout"
    return str(exc) or type(exc).__name__
