"""A follower's leader over the Kafka protocol: Fetch v17 (v12 when a topic id is not known
yet) and OffsetsForLeaderEpoch v4 on the leader's endpoint of inter.broker.listener.name, when
that names a Kafka listener.

Kafka's ReplicaFetcherThread talks to its leader through a NetworkClient of its own; here each
fetcher has one ``KafkaLeaderEndpoint``: one TCP connection, opened on first use and again
after any failure, one request at a time, each with the next correlation id. A request waits
``replica.socket.timeout.ms`` for its answer, a Fetch that plus its ``max_wait_ms`` (the leader
may park it that long); no answer by then, an answer to another correlation id, an answer that
does not decode or a connection that fails or closes: the connection is closed and the request
raises ``LeaderEndpointError`` (broker/replication/leader_endpoint.py), after which the fetcher
backs off and the next request connects again. Per-partition errors come back as error codes.

The versions are those this broker's handlers serve (handlers/fetch.py, handlers/offsets.py)
and Kafka 3.9's ZooKeeper brokers send (its inter.broker.protocol.version 3.9 fetches at v17):
Fetch carries sessions (KIP-227), ``last_fetched_epoch`` and ``diverging_epoch`` (KIP-320) and,
from v13, names each topic by its id (KIP-516), from v15 the follower's id in ``replica_state``
(KIP-903; its ``replica_epoch`` is -1, as a ZooKeeper broker sends). The ids come from this
broker's metadata cache (``TopicIds``); when some topic a fetch lists has no id there yet (an
UpdateMetadata still on its way), that fetch goes at v12 by name, as Kafka's fetcher falls back
when a partition lacks an id. An incremental fetch (KIP-227) lists only what changed, and the
leader answers the session's other partitions by the ids it holds for them, so the answer's ids
are turned back into names by every id this endpoint has sent, then by the metadata cache; an
id neither knows (the leader knows a topic this broker has not heard of yet) is not dropped
silently, which would leave its partition unfetched in an incremental session: the answer is
taken as INVALID_FETCH_SESSION_EPOCH, so the next fetch is a full one that closes the session
(the leader still holds it; Kafka's FetchSessionHandler closes it likewise). A topic deleted and
re-created in between answers UNKNOWN_TOPIC_ID or INCONSISTENT_TOPIC_ID on its partitions,
after which the fetcher backs off and the next fetch names the new id. OffsetsForLeaderEpoch
v4 carries ``replica_id``. No ApiVersions round trip: brokers of one cluster run this same code
(Kafka's inter.broker.protocol.version pins them likewise).

On a SASL inter-broker listener each new connection logs in before its first request, as
Kafka's NetworkClient does: SaslHandshake v1 with sasl.mechanism.inter.broker.protocol, then
SaslAuthenticate v2 with the broker's own ``username``/``password`` (PLAIN's one token, or
SCRAM's two, the server's signature checked). A refusal is a ``LeaderEndpointError`` like any
other: the fetcher logs it, backs off and connects again.

Frames (``size:int32`` then the header and body, connection.py's layout) are received
straight into one buffer per connection (``asyncio.BufferedProtocol``: no stream buffer to grow
and slice), kept at the largest answer's size (at most ``max_response_bytes``) and reused: a
new buffer per answer costs a page fault per 4 KiB of it, about 1.1 ms of CPU per MiB on the
VMs the benchmarks run on (4.5 us a fault), ten times the copy below. kio's reader copies each
partition's records out of it once, into the ``bytes`` the follower's log appends (about
0.12 ms per MiB; a hand-written reader could hand on views instead, not worth its code at that
price), before the next request is sent; bytes of a frame that comes while none is awaited
close the connection before they reach the buffer, so an answer is never overwritten while it
is decoded.

Not thread-safe: the fetcher's task on the broker's event loop.
"""

from __future__ import annotations

import asyncio
import io
import itertools
import ssl
import struct
from collections.abc import Callable, Mapping
from typing import Any, Protocol, cast

from minikafka.broker.replication.fetch_session import INVALID_SESSION_ID, FetchSessionResponse
from minikafka.broker.replication.leader_endpoint import (
    DEADLINE_EXCEEDED,
    UNAVAILABLE,
    LeaderEndpointError,
)
from minikafka.broker.replication.requests import (
    EpochEndOffset,
    FetchPartitionResult,
    FetchRequest,
    OffsetsForLeaderEpochRequest,
    by_topic,
)
from minikafka.broker.security.sasl.scram import ScramMechanism, ScramSaslClient
from minikafka.broker.server.kafka.handlers.topic_ids import from_uuid, to_uuid
from minikafka.broker.server.kafka.schema import (
    Entity,
    build,
    read_entity,
    request_class,
    response_class,
    write_entity,
)
from minikafka.broker.server.sasl_setup import SaslLogin
from minikafka.proto.errors import ErrorCode

__all__ = [
    "FETCH_VERSION",
    "OFFSETS_FOR_LEADER_EPOCH_VERSION",
    "KafkaLeaderEndpoint",
    "TopicIds",
    "factory",
]

FETCH = 1
FETCH_VERSION = 17
FETCH_BY_NAME_VERSION = 12  # the last version that names topics
_FIRST_TOPIC_ID_VERSION = 13
OFFSETS_FOR_LEADER_EPOCH = 23
OFFSETS_FOR_LEADER_EPOCH_VERSION = 4
SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36
_SIZE = struct.Struct(">i")
_CORRELATION_ID = struct.Struct(">i")


class TopicIds(Protocol):
    """Where the follower's topic ids come from: the broker's metadata cache."""

    def topic_id(self, topic: str) -> str:
        """The topic's id in ZooKeeper's text form; "" when not known."""

    def topic_names_by_id(self) -> Mapping[str, str]:
        """Every known topic id -> its name."""


class _NoTopicIds:
    """No ids known: every fetch names its topics (v12)."""

    def topic_id(self, topic: str) -> str:
        return ""

    def topic_names_by_id(self) -> Mapping[str, str]:
        return {}


class KafkaLeaderEndpoint:
    """One fetcher's connection to its leader's Kafka inter-broker listener (module docstring)."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        timeout_s: float,
        max_response_bytes: int,
        client_id: str,
        topic_ids: TopicIds | None = None,
        sasl: SaslLogin | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        """``max_response_bytes``: a larger answer closes the connection (a follower's fetch
        answers up to replica.fetch.response.max.bytes, or one batch beyond). ``topic_ids``:
        the metadata cache the topics' ids come from (None: none known, fetches name
        topics). ``sasl``: the login of a SASL inter-broker listener. ``ssl_context``: TLS,
        when the leader's inter-broker listener is SSL or SASL_SSL."""
        self._topic_ids = topic_ids or _NoTopicIds()
        # Every topic id this endpoint has named -> its name: an incremental fetch's answer
        # names the session's partitions by the ids they were fetched by.
        self._names_by_id: dict[str, str] = {}
        self._ssl_context = ssl_context
        self.address = f"{host}:{port}"
        self._host = host
        self._port = port
        self._timeout_s = timeout_s
        self._max_response_bytes = max_response_bytes
        self._client_id = client_id
        self._sasl = sasl
        self._connection: _FrameProtocol | None = None
        self._correlation_ids = itertools.count()
        self._one_request = asyncio.Lock()

    async def fetch(self, request: FetchRequest) -> FetchSessionResponse:
        names = {tp.topic for tp in request.partitions} | {tp.topic for tp in request.forgotten}
        ids = {name: self._topic_ids.topic_id(name) for name in names}
        version = FETCH_VERSION if all(ids.values()) else FETCH_BY_NAME_VERSION
        if version >= _FIRST_TOPIC_ID_VERSION:
            self._names_by_id.update((topic_id, name) for name, topic_id in ids.items())
        body = _fetch_request(request, version, ids)
        response = await self._send(
            FETCH, version, body, self._timeout_s + request.max_wait_ms / 1000
        )
        return _fetch_response(response, self._topic_name)

    def _topic_name(self, topic_id: str) -> str | None:
        """The name of a topic id in an answer (module docstring); None when unknown."""
        name = self._names_by_id.get(topic_id)
        if name is None:
            name = self._topic_ids.topic_names_by_id().get(topic_id)
            if name is not None:
                self._names_by_id[topic_id] = name
        return name

    async def offsets_for_leader_epoch(
        self, request: OffsetsForLeaderEpochRequest
    ) -> list[EpochEndOffset]:
        body = build(
            request_class(OFFSETS_FOR_LEADER_EPOCH, OFFSETS_FOR_LEADER_EPOCH_VERSION),
            {
                "replica_id": request.replica_id,
                "topics": [
                    {
                        "topic": topic,
                        "partitions": [
                            {
                                "partition": p.partition,
                                "current_leader_epoch": p.current_leader_epoch,
                                "leader_epoch": p.leader_epoch,
                            }
                            for p in partitions
                        ],
                    }
                    for topic, partitions in by_topic(request.partitions).items()
                ],
            },
        )
        response = await self._send(
            OFFSETS_FOR_LEADER_EPOCH, OFFSETS_FOR_LEADER_EPOCH_VERSION, body, self._timeout_s
        )
        return [
            EpochEndOffset(
                topic.topic,
                r.partition,
                int(r.error_code),
                "",
                r.leader_epoch,
                r.end_offset,
            )
            for topic in response.topics
            for r in topic.partitions
        ]

    async def close(self) -> None:
        self._disconnect()

    # --- the connection -----------------------------------------------------------------------

    async def _send(self, api_key: int, version: int, body: Entity, timeout_s: float) -> Entity:
        async with self._one_request:
            try:
                connection = self._connection
                if connection is None or connection.lost:
                    # Never connected, or the leader closed it while idle (its
                    # connections.max.idle.ms): connect again rather than fail the request.
                    self._disconnect()
                    connection = await self._connect()
                    if self._sasl is not None:
                        await self._login(connection, self._sasl)
                return await self._call(connection, api_key, version, body, timeout_s)
            except BaseException:
                # After a failure, a timeout or a cancellation the connection's next frame may
                # be the answer to this request: never read it as another's.
                self._disconnect()
                raise

    async def _call(
        self,
        connection: _FrameProtocol,
        api_key: int,
        version: int,
        body: Entity,
        timeout_s: float,
    ) -> Entity:
        correlation_id = next(self._correlation_ids) & 0x7FFFFFFF
        frame = await connection.request(
            _encode(api_key, version, correlation_id, self._client_id, body), timeout_s
        )
        return _decode(api_key, version, correlation_id, frame)

    async def _login(self, connection: _FrameProtocol, login: SaslLogin) -> None:
        """Authenticate a new connection (module docstring); LeaderEndpointError if refused."""
        handshake = await self._call(
            connection,
            SASL_HANDSHAKE,
            1,
            build(request_class(SASL_HANDSHAKE, 1), {"mechanism": login.mechanism}),
            self._timeout_s,
        )
        if int(handshake.error_code) != 0:
            raise LeaderEndpointError(
                UNAVAILABLE,
                f"SASL handshake with {self.address} refused ({int(handshake.error_code)}): "
                f"{login.mechanism} is not among {list(handshake.mechanisms)}",
            )
        scram = ScramMechanism.from_name(login.mechanism)
        if scram is None:  # PLAIN
            token = f"\0{login.username}\0{login.password}".encode()
            await self._authenticate(connection, login, token)
            return
        client = ScramSaslClient(scram, login.username, login.password)
        server_first = await self._authenticate(connection, login, client.first())
        try:
            final = client.final(server_first)
            client.verify(await self._authenticate(connection, login, final))
        except ValueError as exc:
            raise LeaderEndpointError(
                UNAVAILABLE, f"SASL {login.mechanism} with {self.address} failed: {exc}"
            ) from None

    async def _authenticate(
        self, connection: _FrameProtocol, login: SaslLogin, token: bytes
    ) -> bytes:
        answer = await self._call(
            connection,
            SASL_AUTHENTICATE,
            2,
            build(request_class(SASL_AUTHENTICATE, 2), {"auth_bytes": token}),
            self._timeout_s,
        )
        if int(answer.error_code) != 0:
            raise LeaderEndpointError(
                UNAVAILABLE,
                f"SASL {login.mechanism} login as {login.username} to {self.address} refused "
                f"({int(answer.error_code)}): {answer.error_message}",
            )
        return bytes(answer.auth_bytes)

    async def _connect(self) -> _FrameProtocol:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self._timeout_s):
                _, protocol = await loop.create_connection(
                    lambda: _FrameProtocol(self._max_response_bytes),
                    self._host,
                    self._port,
                    ssl=self._ssl_context,
                )
        except TimeoutError:
            raise LeaderEndpointError(
                DEADLINE_EXCEEDED, f"cannot connect to {self.address} within {self._timeout_s} s"
            ) from None
        except OSError as exc:
            raise LeaderEndpointError(
                UNAVAILABLE, f"cannot connect to {self.address}: {exc}"
            ) from None
        self._connection = protocol
        return protocol

    def _disconnect(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()


class _FrameProtocol(asyncio.BufferedProtocol):
    """Size-prefixed frames, each received into the connection's one buffer (the module
    docstring says why it is safe to reuse); one request at a time."""

    def __init__(self, max_frame_bytes: int) -> None:
        self._max = max_frame_bytes
        self._transport: asyncio.Transport | None = None
        self._size = bytearray(4)
        self._buffer = bytearray()  # grown to the largest answer, never shrunk
        self._frame: memoryview | None = None  # the answer being read; None: reading the size
        self._filled = 0
        self._waiter: asyncio.Future[memoryview] | None = None
        self._lost: LeaderEndpointError | None = None

    @property
    def lost(self) -> bool:
        return self._lost is not None or self._transport is None

    # asyncio.BufferedProtocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A TCP connection's transport; uvloop's is not a subclass of asyncio.Transport.
        self._transport = cast(asyncio.Transport, transport)

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._frame is None:
            return memoryview(self._size)[self._filled :]
        return self._frame[self._filled :]

    def buffer_updated(self, nbytes: int) -> None:
        self._filled += nbytes
        if self._frame is None:
            if self._filled < 4:
                return
            (size,) = _SIZE.unpack(self._size)
            if not 4 <= size <= self._max:
                self._fail(f"an answer of {size} bytes (at most {self._max} are taken)")
                return
            if self._waiter is None or self._waiter.done():
                # Not into the buffer: the previous answer may still be decoded from it.
                self._fail("an answer to no request")
                return
            if len(self._buffer) < size:
                # A new one, not resized: a view of the old one may still be held.
                self._buffer = bytearray(size)
            self._frame, self._filled = memoryview(self._buffer)[:size], 0
            return
        if self._filled < len(self._frame):
            return
        frame, self._frame, self._filled = self._frame, None, 0
        waiter, self._waiter = self._waiter, None
        if waiter is None or waiter.done():
            self._fail("an answer to no request")
        else:
            waiter.set_result(frame)

    def eof_received(self) -> bool:
        self._fail("the leader closed the connection")
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None
        if self._lost is None:
            self._lost = LeaderEndpointError(
                UNAVAILABLE, f"connection lost: {exc}" if exc else "connection closed"
            )
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(self._lost)

    # the endpoint's side

    async def request(self, data: memoryview, timeout_s: float) -> memoryview:
        """The answer, a view of the connection's buffer: valid until the next request."""
        if self._transport is None or self._lost is not None:
            raise self._lost or LeaderEndpointError(UNAVAILABLE, "connection closed")
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[memoryview] = loop.create_future()
        self._waiter = waiter

        def expire() -> None:
            if not waiter.done():
                waiter.set_exception(
                    LeaderEndpointError(DEADLINE_EXCEEDED, f"no answer within {timeout_s} s")
                )

        deadline = loop.call_later(timeout_s, expire)
        try:
            self._transport.write(data)
            return await waiter
        finally:
            deadline.cancel()
            self._waiter = None

    def close(self) -> None:
        if self._transport is not None:
            self._transport.abort()

    def _fail(self, reason: str) -> None:
        self._lost = LeaderEndpointError(UNAVAILABLE, reason)
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(self._lost)
        self.close()


def _encode(
    api_key: int, version: int, correlation_id: int, client_id: str, body: Entity
) -> memoryview:
    cls = request_class(api_key, version)
    header_cls = cls.__header_schema__
    buffer = io.BytesIO()
    buffer.write(b"\0\0\0\0")
    write_entity(
        header_cls,
        buffer,
        build(
            header_cls,
            {
                "request_api_key": api_key,
                "request_api_version": version,
                "correlation_id": correlation_id,
                "client_id": client_id,
            },
        ),
    )
    write_entity(cls, buffer, body)
    data = buffer.getbuffer()
    _SIZE.pack_into(data, 0, len(data) - 4)
    return data


def _decode(api_key: int, version: int, correlation_id: int, frame: memoryview) -> Entity:
    (answered,) = _CORRELATION_ID.unpack_from(frame)
    if answered != correlation_id:
        raise LeaderEndpointError(
            UNAVAILABLE, f"an answer to correlation id {answered}, not {correlation_id}"
        )
    cls = response_class(api_key, version)
    view = frame.toreadonly()  # kio's reader takes read-only buffers only
    try:
        _, offset = read_entity(cls.__header_schema__, view, 0)
        body, _ = read_entity(cls, view, offset)
    except Exception as exc:  # kio's reader: any malformed or truncated answer
        raise LeaderEndpointError(
            UNAVAILABLE, f"an answer that does not decode: {type(exc).__name__}: {exc}"
        ) from None
    return body


def _fetch_request(request: FetchRequest, version: int, ids: dict[str, str]) -> Entity:
    """The request at ``version``; from v13 each topic named by its id in ``ids``."""
    by_id = version >= _FIRST_TOPIC_ID_VERSION

    def topic(name: str) -> dict[str, Any]:
        return {"topic_id": to_uuid(ids[name])} if by_id else {"topic": name}

    return build(
        request_class(FETCH, version),
        {
            "replica_id": request.replica_id,  # up to v14
            "replica_state": {"replica_id": request.replica_id, "replica_epoch": -1},  # v15+
            "max_wait": request.max_wait_ms,
            "min_bytes": request.min_bytes,
            "max_bytes": request.max_bytes,
            "session_id": request.session_id,
            "session_epoch": request.session_epoch,
            "topics": [
                {
                    **topic(name),
                    "partitions": [
                        {
                            "partition": p.partition,
                            "current_leader_epoch": p.current_leader_epoch,
                            "fetch_offset": p.fetch_offset,
                            "last_fetched_epoch": p.last_fetched_epoch,
                            "log_start_offset": p.log_start_offset,
                            "partition_max_bytes": p.partition_max_bytes,
                        }
                        for p in partitions
                    ],
                }
                for name, partitions in by_topic(request.partitions).items()
            ],
            "forgotten_topics_data": [
                {**topic(name), "partitions": [tp.partition for tp in forgotten]}
                for name, forgotten in by_topic(request.forgotten).items()
            ],
        },
    )


def _fetch_response(response: Any, topic_name: Callable[[str], str | None]) -> FetchSessionResponse:
    """The answer's partitions by topic name: a v13+ answer's ids turned into names by
    ``topic_name``. An id it cannot name makes the answer INVALID_FETCH_SESSION_EPOCH (module
    docstring): the fetcher then starts over with a full fetch that closes the session."""
    results: list[FetchPartitionResult] = []
    for topic in response.responses:
        name = getattr(topic, "topic", None)
        if name is None:
            name = topic_name(from_uuid(topic.topic_id))
            if name is None:
                return FetchSessionResponse(
                    ErrorCode.INVALID_FETCH_SESSION_EPOCH, INVALID_SESSION_ID, []
                )
        for p in topic.partitions:
            diverging = p.diverging_epoch
            results.append(
                FetchPartitionResult(
                    name,
                    p.partition_index,
                    int(p.error_code),
                    "",
                    p.high_watermark,
                    p.last_stable_offset,
                    p.log_start_offset,
                    # bytes of their own, never a view of the connection's receive buffer,
                    # which the next answer overwrites (kio copies them today: free then)
                    b"" if p.records is None else bytes(p.records),
                    None if diverging.epoch < 0 else (diverging.epoch, diverging.end_offset),
                )
            )
    return FetchSessionResponse(int(response.error_code), response.session_id, results)


def factory(
    *,
    timeout_s: float,
    max_response_bytes: int,
    client_id: str,
    topic_ids: TopicIds | None = None,
    sasl: SaslLogin | None = None,
    ssl_context: ssl.SSLContext | None = None,
) -> Callable[[str, int], KafkaLeaderEndpoint]:
    """A ``LeaderEndpointFactory`` (the ReplicaManager's) of these endpoints."""

    def make(host: str, port: int) -> KafkaLeaderEndpoint:
        return KafkaLeaderEndpoint(
            host,
            port,
            timeout_s=timeout_s,
            max_response_bytes=max_response_bytes,
            client_id=client_id,
            topic_ids=topic_ids,
            sasl=sasl,
            ssl_context=ssl_context,
        )

    return make
