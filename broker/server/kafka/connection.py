"""One client connection on a Kafka listener: frames in, handlers, frames out.

A frame is ``size:int32`` then ``size`` bytes: the request header (api_key:int16,
api_version:int16, correlation_id:int32, client_id:nullable string, then tagged fields in
flexible versions) and the request body. A response is ``size:int32``, the response header
(correlation_id:int32, then tagged fields in flexible versions; ApiVersions always uses the
plain header so that any client can read it) and the body.

As Kafka's SocketServer: requests on one connection are answered in the order they came; a size
above ``socket.request.max.bytes`` (or below a header's) closes the connection without reading
it; an unknown API key, an unsupported version (except ApiVersions, which answers
UNSUPPORTED_VERSION with the supported ranges) or a request that does not decode closes the
connection; a connection with no request for ``connections.max.idle.ms`` is closed. Each close
is one log line saying why: a warning when the client broke the protocol or idled, a debug line
when it hung up mid-request (a reset is normal: no traceback, as Kafka's Selector); a handler's
own exception is ``kafka.handler_failed`` with its traceback. Nothing here touches stored data.

Memory, as Kafka bounds it by muting a channel while its answer is in flight: an answer goes to
the transport only when the one before it is wholly in the kernel (write-buffer limit 0), so a
client that never reads holds at most one answer's bytes here; a fetch answer's records are not
among them: they stay in the segment files (``FileRecords``) and go from the page cache to the
socket with sendfile(2) behind the answer's other bytes, framed in Python with the records'
sizes counted: on PLAINTEXT and SASL_PLAINTEXT listeners; a TLS transport (SSL, SASL_SSL) must
encrypt them, so it gets them in ``_CHUNK`` reads, as does a transport without a raw socket.
The sizes are fixed when the records are read; a file that turns out shorter while they are
sent (a truncation; a deleted segment stays readable through its held descriptor) closes the
connection, the frame unfinished, as Kafka's FileRecords.writeTo fails. The broker's
``minikafka_kafka_fetch_records_bytes_total{path}`` counts which way they went. Requests are
read ahead of their answers (pipelined produce) only while those waiting hold less than
``_MAX_UNANSWERED_BYTES``; a request always gets in when none waits. A write that makes no
progress for ``connections.max.idle.ms`` closes the connection, as Kafka's idle expiry does.

On a SASL listener a connection first authenticates (sasl_authenticator.py has the rules):
the reader serves ApiVersions, SaslHandshake and SaslAuthenticate itself, one at a time, frames
at most ``sasl.server.max.receive.size`` (Kafka's 524288) until the exchange completes, and
the session becomes the authenticated user's; a broken rule or a failed exchange closes the
connection with one log line (the client, the mechanism, the reason, never a token). A failed
exchange is answered ``connection.failed.authentication.delay.ms`` late, as in Kafka.

Runs on the broker's event loop; one reader and one writer task per connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import inspect
import io
import os
import struct
import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

import structlog

from minikafka.broker.security.principal import ANONYMOUS, KafkaPrincipal, Session
from minikafka.broker.security.sasl.errors import SaslAuthenticationFailed
from minikafka.broker.security.sasl.server import SaslServerFactory
from minikafka.broker.server.kafka import registry
from minikafka.broker.server.kafka.memory_pool import MemoryPool
from minikafka.broker.server.kafka.sasl_authenticator import (
    SASL_AUTHENTICATE,
    SASL_HANDSHAKE,
    SaslAuthenticator,
    SaslStateError,
)
from minikafka.broker.server.kafka.schema import (
    Entity,
    build,
    read_entity,
    request_class,
    write_entity,
)
from minikafka.broker.server.metrics import kafka_request_name
from minikafka.broker.storage.segment import FileRecords
from minikafka.proto.errors import ErrorCode

if TYPE_CHECKING:
    from minikafka.broker.server.kafka.broker import KafkaBroker

__all__ = ["KafkaConnection"]

_log = structlog.get_logger(__name__)

API_VERSIONS = 18
UNSUPPORTED_VERSION = 35
ILLEGAL_SASL_STATE = int(ErrorCode.ILLEGAL_SASL_STATE)
_HEADER_MIN = 10  # api_key, api_version, correlation_id, client_id's length
_MAX_IN_FLIGHT = 100  # requests read ahead of their answers (pipelined produce)
_MAX_UNANSWERED_BYTES = 8 << 20  # and the bytes of those requests
_CHUNK = 64 << 10  # records sent by reads when sendfile cannot be used
# An answer's records up to this many bytes are read into its buffer: one write for a small
# answer (a consumer at the end of the log) rather than a write and a sendfile per partition,
# and at most this much per connection.
_INLINE_BYTES = 64 << 10
_SIZE = struct.Struct(">i")
_HEAD = struct.Struct(">hhi")
# The largest frame an unauthenticated client may send (Kafka's sasl.server.max.receive.size
# default): a client that has not logged in cannot make the broker buffer more.
_SASL_MAX_RECEIVE = 524_288
# Not held by request_percentage: Fetch (see _request_quota) and, as in Kafka, ApiVersions.
_NO_REQUEST_QUOTA = frozenset({1, API_VERSIONS})


class _Closed(Exception):
    """The connection is to be closed; ``reason`` goes to the log."""

    def __init__(self, reason: str, **details: Any) -> None:
        super().__init__(reason)
        self.reason = reason
        self.details = details


class KafkaConnection:
    """Serves one accepted socket until the client leaves or breaks the protocol."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        broker: KafkaBroker,
        listener: str,
        *,
        memory_pool: MemoryPool | None = None,
        sasl: SaslServerFactory | None = None,
        principal: KafkaPrincipal = ANONYMOUS,
        security_protocol: str = "PLAINTEXT",
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._broker = broker
        self._listener = listener
        peer = writer.get_extra_info("peername") or ("", 0)
        self._host, self._port = str(peer[0]), int(peer[1])
        # Who this connection's requests are made as: the TLS client certificate's principal
        # (listener.py), else ANONYMOUS until SASL says who.
        self.session = Session(principal, self._host, listener, security_protocol)
        # A SASL listener's connection authenticates first (None: PLAINTEXT or SSL).
        self._sasl = (
            None
            if sasl is None
            else SaslAuthenticator(
                sasl, client_host=self._host, listener=listener, protocol=security_protocol
            )
        )
        self._max_bytes = broker.config.socket_request_max_bytes
        self._idle_s = broker.config.connections_max_idle_ms / 1000
        # Answers to come, in request order, with when each request was read (for the request
        # metrics); None ends the writer.
        self._answers: asyncio.Queue[
            tuple[registry.Request, Awaitable[Entity | None], float, int] | None
        ]
        self._answers = asyncio.Queue(maxsize=_MAX_IN_FLIGHT)
        self._written = asyncio.Event()  # set whenever the writer has nothing left
        # Bytes of the requests read and not yet answered; the reader waits while above the
        # bound (``_answered`` is set whenever an answer is written).
        self._unanswered_bytes = 0
        # Bytes of the requests read and not yet handled, taken from the memory pool (if any).
        # Given back when the handler returns, as Kafka releases a request's buffer after
        # KafkaApis.handle: a produce waiting for acks=all holds none, or the pool it spent
        # would keep the followers' fetches (whose progress it waits for) from being read.
        self._memory_pool = memory_pool
        self._pooled_bytes = 0
        self._answered = asyncio.Event()
        # Until when (loop time) a client quota keeps this connection muted (KIP-219).
        self._muted_until = 0.0
        # drain() returns only when the transport holds nothing: one answer in flight. A TLS
        # transport pauses its writer at a size >= high (a TCP one at > high): 0 there would
        # keep it paused for good, 1 means what 0 means here.
        tls = writer.get_extra_info("ssl_object") is not None
        writer.transport.set_write_buffer_limits(high=1 if tls else 0, low=0)

    def abort(self) -> None:
        """Close the socket at once (the broker stops): reads and writes fail from now on."""
        self._writer.transport.abort()

    async def serve(self) -> None:
        writer_task = asyncio.ensure_future(self._write_answers())
        # A failed answer closes the connection at once: the reader may be waiting for a
        # request the client will not send before it has its answer.
        writer_task.add_done_callback(self._writer_ended)
        self._written.set()
        reason: _Closed | None = None
        hung_up: BaseException | None = None  # the client went away: not a fault of ours
        try:
            if self._sasl is None or await self._authenticate(writer_task):
                await self._read_requests(writer_task)
        except _Closed as closed:
            reason = closed
        except (OSError, asyncio.IncompleteReadError) as exc:
            # A reset, a broken pipe, a dead host's ETIMEDOUT or EHOSTUNREACH: the client is
            # gone (unless the writer failed first, below).
            hung_up = exc
        finally:
            if not writer_task.done():
                if reason is None:
                    # The answers owed go out first; a writer that dies meanwhile (the client
                    # reset) ends the wait, whether the queue had room for the end or not.
                    end = asyncio.ensure_future(self._answers.put(None))
                    await asyncio.wait({end, writer_task}, return_when=asyncio.FIRST_COMPLETED)
                    if not writer_task.done():
                        with contextlib.suppress(Exception):
                            await writer_task
                    end.cancel()
                else:
                    writer_task.cancel()
            if reason is None and writer_task.done() and not writer_task.cancelled():
                failure = writer_task.exception()
                if isinstance(failure, _Closed):
                    reason = failure
                elif isinstance(failure, OSError):
                    hung_up = failure  # the reader only saw the writer end
            self._drop_unwritten()
            self._handled(self._pooled_bytes)
            self._unanswered_bytes = 0
            if reason is not None:
                _log.warning(
                    "kafka.connection_closed",
                    reason=reason.reason,
                    listener=self._listener,
                    client=f"{self._host}:{self._port}",
                    **reason.details,
                )
            elif hung_up is not None:
                # A peer hanging up (a reset, a socket closed under an answer) is normal: one
                # debug line and no traceback, as Kafka's Selector logs an IOException.
                _log.debug(
                    "kafka.connection_closed",
                    reason="client disconnected",
                    listener=self._listener,
                    client=f"{self._host}:{self._port}",
                    error=str(hung_up) or type(hung_up).__name__,
                )
            self._writer.close()
            with contextlib.suppress(Exception):
                await self._writer.wait_closed()

    def _throttle(self, throttle_ms: int) -> None:
        """A quota throttled the client: read nothing more from it for ``throttle_ms``, as
        Kafka mutes the channel once the throttled answer is out (KIP-219); the answer goes
        at once, with its throttle_time_ms, so the client backs off too."""
        loop = asyncio.get_running_loop()
        self._muted_until = max(self._muted_until, loop.time() + throttle_ms / 1000)

    def _request_quota(
        self, request: registry.Request, response: Entity | None, handling_ns: int
    ) -> Entity | None:
        """request_percentage (KIP-124): the handler's time counted; when over the quota the
        connection is muted and the answer says for how long. A pipelined handler (Produce)
        counts its synchronous part, and its answer, sent later, is not changed. Fetch is
        not counted: its time here is mostly its long poll, which Kafka's purgatory does not
        count either, and this broker cannot tell the two apart."""
        quotas = self._broker.quotas
        if not quotas.active or request.api_key in _NO_REQUEST_QUOTA:
            return response
        throttle_ms = quotas.record_request_time(
            request.session.principal.name, request.client_id or "", handling_ns
        )
        if throttle_ms <= 0:
            return response
        self._throttle(throttle_ms)
        throttled = datetime.timedelta(milliseconds=throttle_ms)
        if response is not None and getattr(response, "throttle_time", throttled) < throttled:
            response = dataclasses.replace(response, throttle_time=throttled)
        return response

    async def _read_requests(self, writer_task: asyncio.Future[None]) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._wait_room(writer_task)
            muted_s = self._muted_until - loop.time()
            if muted_s > 0:
                await asyncio.sleep(muted_s)
            frame = await self._read_frame(writer_task)
            if frame is None:
                return
            started = time.perf_counter()
            request, handler = self._decode(frame)
            if handler is None:  # ApiVersions of a version not served
                self._handled(len(frame))
                unsupported = request.response(
                    {"error_code": UNSUPPORTED_VERSION, "api_keys": registry.supported_api_keys()}
                )
                self._written.clear()
                await self._answers.put((request, _done(unsupported), started, len(frame)))
                continue
            if not handler.pipelined:
                # Outside the handler's try: the writer failing here is the client hanging up
                # (ConnectionError to serve), not this handler failing.
                await self._wait_written(writer_task)
            handling = time.perf_counter_ns()
            try:
                if handler.pipelined:
                    answer = handler.handle(request, self._broker)
                    self._request_quota(request, None, time.perf_counter_ns() - handling)
                else:
                    response = self._request_quota(
                        request,
                        await handler.handle(request, self._broker),
                        time.perf_counter_ns() - handling,
                    )
            except registry.CloseConnection as close:
                raise _Closed(close.reason, api=handler.name, **close.details) from None
            except Exception as exc:
                raise _handler_failed(request, exc) from None
            self._handled(len(frame))
            if not handler.pipelined:
                # Every earlier answer is written, and nothing more is read until this one is:
                # it goes out from here, not through the writer task (a follower's fetch
                # answer one task switch sooner).
                await self._send(request, response, started, len(frame))
                continue
            self._written.clear()
            await self._answers.put((request, answer, started, len(frame)))

    async def _authenticate(self, writer_task: asyncio.Future[None]) -> bool:
        """Serve the SASL exchange until it completes (True) or the client leaves (False);
        _Closed when it fails or breaks the rules."""
        auth = self._sasl
        assert auth is not None
        max_bytes, self._max_bytes = self._max_bytes, min(self._max_bytes, _SASL_MAX_RECEIVE)
        while not auth.complete:
            if auth.raw_tokens:
                if not await self._raw_token(auth, writer_task):
                    return False
                continue
            frame = await self._read_frame(writer_task)
            if frame is None:
                return False
            started = time.perf_counter()
            api_key, api_version, _ = _HEAD.unpack_from(frame)
            try:
                auth.check_request(api_key)
            except SaslStateError as refused:
                if refused.answer and api_key == SASL_HANDSHAKE:
                    request, _ = self._decode(frame)
                    refusal = request.response({"error_code": ILLEGAL_SASL_STATE, "mechanisms": []})
                    await self._send(request, refusal, started, len(frame))
                raise _Closed(
                    "request before SASL authentication completed",
                    api_key=api_key,
                    api_version=api_version,
                    error=refused.reason,
                ) from None
            request, handler = self._decode(frame)
            self._handled(len(frame))
            if handler is None:  # ApiVersions of a version not served
                response = request.response(
                    {"error_code": UNSUPPORTED_VERSION, "api_keys": registry.supported_api_keys()}
                )
            elif api_key == SASL_HANDSHAKE:
                answer = auth.handshake(request.body.mechanism, api_version)
                response = request.response(
                    {"error_code": int(answer.error_code), "mechanisms": list(answer.mechanisms)}
                )
                if answer.close:
                    await self._send(request, response, started, len(frame))
                    raise _Closed(
                        "unsupported SASL mechanism",
                        mechanism=auth.mechanism,
                        enabled=",".join(answer.mechanisms),
                    )
            elif api_key == SASL_AUTHENTICATE:
                response = await self._sasl_authenticate(auth, request, started, len(frame))
            else:  # ApiVersions
                try:
                    response = await handler.handle(request, self._broker)
                except Exception as exc:
                    raise _handler_failed(request, exc) from None
                auth.versions_answered()
            await self._send(request, response, started, len(frame))
        self._max_bytes = max_bytes
        self.session = auth.session()
        _log.debug(
            "kafka.sasl_authenticated",
            listener=self._listener,
            client=f"{self._host}:{self._port}",
            mechanism=auth.mechanism,
            principal=str(self.session.principal),
        )
        return True

    async def _sasl_authenticate(
        self, auth: SaslAuthenticator, request: registry.Request, started: float, size: int
    ) -> Entity:
        try:
            token = auth.authenticate(request.body.auth_bytes)
        except SaslAuthenticationFailed as failed:
            await self._failed_authentication_delay()
            refusal = request.response(
                {
                    "error_code": int(ErrorCode.SASL_AUTHENTICATION_FAILED),
                    "error_message": failed.client_message(auth.mechanism),
                    "auth_bytes": b"",
                    "session_lifetime": 0,
                }
            )
            await self._send(request, refusal, started, size)
            raise _Closed(
                "SASL authentication failed", mechanism=auth.mechanism, error=failed.reason
            ) from None
        return request.response(
            {"error_code": 0, "error_message": None, "auth_bytes": token, "session_lifetime": 0}
        )

    async def _failed_authentication_delay(self) -> None:
        """connection.failed.authentication.delay.ms before a failed login is answered and
        closed, as Kafka delays it: a client guessing passwords gets one guess per delay per
        connection, and reconnecting at once costs it the same again."""
        delay_ms = self._broker.config.connection_failed_authentication_delay_ms
        if delay_ms > 0:
            await asyncio.sleep(delay_ms / 1000)

    async def _raw_token(self, auth: SaslAuthenticator, writer_task: asyncio.Future[None]) -> bool:
        """One bare token after a SaslHandshake v0, answered bare; False: the client left."""
        try:
            async with asyncio.timeout(self._idle_s):
                head = await self._reader.readexactly(4)
                (size,) = _SIZE.unpack(head)
                if size < 0 or size > self._max_bytes:
                    raise _Closed("invalid SASL token size", size=size)
                token = await self._reader.readexactly(size)
        except TimeoutError:
            raise _Closed("idle", idle_ms=self._broker.config.connections_max_idle_ms) from None
        except asyncio.IncompleteReadError as exc:
            if not exc.partial:
                return False
            raise _Closed("truncated SASL token") from None
        try:
            answer = auth.authenticate(token)
        except SaslAuthenticationFailed as failed:
            await self._failed_authentication_delay()
            raise _Closed(
                "SASL authentication failed", mechanism=auth.mechanism, error=failed.reason
            ) from None
        await self._write([memoryview(_SIZE.pack(len(answer)) + answer)])
        return True

    async def _read_frame(self, writer_task: asyncio.Future[None]) -> bytes | None:
        # asyncio.timeout, not wait_for: on Python 3.11 wait_for wraps each read in a task of
        # its own, two tasks and several turns of the loop per request.
        try:
            async with asyncio.timeout(self._idle_s):
                head = await self._reader.readexactly(4)
        except TimeoutError:
            raise _Closed("idle", idle_ms=self._broker.config.connections_max_idle_ms) from None
        except asyncio.IncompleteReadError as exc:
            if exc.partial:
                raise _Closed("truncated size prefix") from None
            return None  # a clean close between requests
        if writer_task.done():
            writer_task.result()  # the writer failed: raise what it raised
        (size,) = _SIZE.unpack(head)
        if size < _HEADER_MIN or size > self._max_bytes:
            raise _Closed(
                "invalid request size", size=size, socket_request_max_bytes=self._max_bytes
            )
        if self._memory_pool is not None:
            await self._memory_pool.allocate(size)
            self._pooled_bytes += size  # given back when handled, or at the close
        self._unanswered_bytes += size  # counted down when answered
        try:
            async with asyncio.timeout(self._idle_s):
                return await self._reader.readexactly(size)
        except TimeoutError:
            raise _Closed("truncated request", size=size) from None
        except asyncio.IncompleteReadError as exc:
            raise _Closed("truncated request", size=size, read=len(exc.partial)) from None

    def _decode(self, frame: bytes) -> tuple[registry.Request, registry.Handler | None]:
        """The request and its handler; no handler for an ApiVersions of a version this broker
        does not serve, which is answered in ApiVersions v0's layout (the request says v0) so
        that the client can pick again, as Kafka does."""
        api_key, api_version, correlation_id = _HEAD.unpack_from(frame)
        handler = registry.HANDLERS.get(api_key)
        if handler is None:
            raise _Closed("unknown API key", api_key=api_key, api_version=api_version)
        if not handler.min_version <= api_version <= handler.max_version:
            if api_key == API_VERSIONS:
                return self._request(API_VERSIONS, 0, correlation_id, None, None), None
            raise _Closed(
                "unsupported version",
                api_key=api_key,
                api=handler.name,
                api_version=api_version,
                supported=f"{handler.min_version}-{handler.max_version}",
            )
        cls = request_class(api_key, api_version)
        try:
            header, offset = read_entity(cls.__header_schema__, frame, 0)
            body, _ = read_entity(cls, frame, offset)
        except Exception as exc:  # kio's reader: any malformed or truncated input
            raise _Closed(
                "malformed request",
                api=handler.name,
                api_version=api_version,
                error=f"{type(exc).__name__}: {exc}",
            ) from None
        # Bytes after the request are ignored, as Kafka does: librdkafka 2.x sends Metadata
        # v12 for every topic with three of them.
        request = self._request(
            api_key, api_version, correlation_id, header.client_id, body, len(frame) + 4
        )
        return request, handler

    def _request(
        self,
        api_key: int,
        api_version: int,
        correlation_id: int,
        client_id: str | None,
        body: Any,
        size: int = 0,
    ) -> registry.Request:
        return registry.Request(
            api_key=api_key,
            api_version=api_version,
            correlation_id=correlation_id,
            client_id=client_id,
            client_host=self._host,
            client_port=self._port,
            listener=self._listener,
            body=body,
            session=self.session,
            size=size,
            throttle=self._throttle,
        )

    async def _wait_room(self, writer_task: asyncio.Future[None]) -> None:
        """Until the requests waiting for their answers hold less than the bound."""
        while self._unanswered_bytes >= _MAX_UNANSWERED_BYTES:
            self._answered.clear()
            waiter: asyncio.Future[Any] = asyncio.ensure_future(self._answered.wait())
            await asyncio.wait({waiter, writer_task}, return_when=asyncio.FIRST_COMPLETED)
            if writer_task.done():
                waiter.cancel()
                writer_task.result()
                raise ConnectionError("writer ended")

    async def _wait_written(self, writer_task: asyncio.Future[None]) -> None:
        """Until every earlier request is answered (a non-pipelined request runs after them)."""
        while not self._written.is_set():
            waiter: asyncio.Future[Any] = asyncio.ensure_future(self._written.wait())
            pending: set[asyncio.Future[Any]] = {waiter, writer_task}
            await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            if writer_task.done():
                waiter.cancel()
                writer_task.result()
                raise ConnectionError("writer ended")

    def _handled(self, size: int) -> None:
        """A ``size``-byte request needs its bytes no more: back to the pool."""
        if self._memory_pool is not None and size:
            self._memory_pool.release(size)
            self._pooled_bytes -= size

    def _drop_unwritten(self) -> None:
        """The answers still queued when the writer has ended: nobody will write them. A
        produce's task runs on (its records are appended all the same) and its outcome is read
        when it ends, so that its exception, if any, is not reported as never retrieved; an
        answer not yet started is closed."""
        while not self._answers.empty():
            item = self._answers.get_nowait()
            if item is None:
                continue
            answer = item[1]
            if isinstance(answer, asyncio.Future):
                answer.add_done_callback(_read_outcome)
            elif inspect.iscoroutine(answer):
                answer.close()

    def _writer_ended(self, task: asyncio.Future[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            self._writer.transport.abort()

    async def _write_answers(self) -> None:
        while True:
            item = await self._answers.get()
            if item is None:
                return
            request, answer, started, size = item
            try:
                response = await answer
            except registry.CloseConnection as close:
                api = registry.HANDLERS[request.api_key].name
                raise _Closed(close.reason, api=api, **close.details) from None
            except Exception as exc:
                raise _handler_failed(request, exc) from None
            await self._send(request, response, started, size)
            if self._answers.empty():
                self._written.set()

    async def _send(
        self, request: registry.Request, response: Entity | None, started: float, size: int
    ) -> None:
        """Write one answer (None: the request has none) to a ``size``-byte request and count
        the request as served."""
        if response is not None:
            try:
                parts, inlined = _frame(request, response)
            except _Closed:
                raise
            except Exception as exc:
                raise _handler_failed(request, exc) from None
            try:
                await self._write(parts)
            finally:
                for part in parts:
                    if isinstance(part, FileRecords):
                        part.close()
            if inlined:
                self._broker.requests.records_sent("read", inlined)
        self._unanswered_bytes -= size
        self._answered.set()
        # Fetch v15+ carries the follower's id in replica_state (KIP-903), earlier ones beside it
        body = request.body
        fetcher = body.replica_state if hasattr(body, "replica_state") else body
        from_follower = request.api_key == 1 and fetcher.replica_id >= 0
        self._broker.requests.observe(
            kafka_request_name(request.api_key, from_follower=from_follower), started
        )

    async def _write(self, parts: list[memoryview | FileRecords]) -> None:
        for part in parts:
            if isinstance(part, FileRecords):
                await self._send_file(part)
                continue
            try:
                self._writer.write(part)
            except Exception as exc:  # uvloop's transport refuses a write after a reset
                raise ConnectionResetError(str(exc)) from None
        await self._drained()

    async def _drained(self) -> None:
        """Until the transport has handed every byte to the kernel."""
        if not self._writer.transport.get_write_buffer_size():
            await self._writer.drain()  # at once (it raises after a reset): no timer to arm
            return
        try:
            async with asyncio.timeout(self._idle_s):
                await self._writer.drain()
        except TimeoutError:
            raise self._stalled() from None

    async def _send_file(self, records: FileRecords) -> None:
        """The records from their file to the socket, after what the transport holds. Sent
        through a descriptor of their own on the socket: the transport may close its socket
        while a send waits (a reset its reader saw), and the number it frees can go to the
        next accepted connection before this task runs again; the records must not follow."""
        await self._drained()
        sock = self._writer.get_extra_info("socket")
        # A TLS transport still reports its raw socket: the records must go through TLS.
        if sock is None or self._writer.get_extra_info("ssl_object") is not None:
            await self._copy_file(records)
            return
        out = os.dup(sock.fileno())
        try:
            position, end = records.position, records.position + records.size
            while position < end:
                if self._writer.transport.is_closing():
                    raise ConnectionResetError("the connection closed under the answer")
                try:
                    sent = os.sendfile(out, records.fd, position, end - position)
                except BlockingIOError:
                    await self._writable(out)
                    continue
                if sent == 0:
                    raise _records_truncated(records, position)
                position += sent
        finally:
            os.close(out)
        self._broker.requests.records_sent("sendfile", records.size)

    async def _copy_file(self, records: FileRecords) -> None:
        offset = 0
        while offset < records.size:
            chunk = records.read(_CHUNK, offset)
            if not chunk:
                raise _records_truncated(records, records.position + offset)
            self._writer.write(chunk)
            offset += len(chunk)
            await self._drained()
        self._broker.requests.records_sent("read", records.size)

    async def _writable(self, fd: int) -> None:
        """Until the socket ``fd`` takes more bytes; ``fd`` is not the transport's (the event
        loop refuses a second watcher on that)."""
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        loop.add_writer(fd, _set_done, ready)
        try:
            async with asyncio.timeout(self._idle_s):
                await ready
        except TimeoutError:
            raise self._stalled() from None
        finally:
            loop.remove_writer(fd)

    def _stalled(self) -> _Closed:
        return _Closed("idle", idle_ms=self._broker.config.connections_max_idle_ms, writing=True)


def _records_truncated(records: FileRecords, position: int) -> _Closed:
    """The file ends at ``position``, short of ``records``: the answer's size counted those
    bytes, so its frame cannot be finished (Kafka's FileRecords.writeTo fails the same way)."""
    return _Closed(
        "records truncated while sent", position=position, end=records.position + records.size
    )


def _set_done(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _handler_failed(request: registry.Request, exc: Exception) -> _Closed:
    """A handler's own exception (or its answer's encoding): logged with its traceback, and
    the reason the connection closes."""
    api = registry.HANDLERS[request.api_key].name
    _log.exception("kafka.handler_failed", api=api, api_version=request.api_version)
    return _Closed("handler failed", api=api, error=str(exc))


def _read_outcome(answer: asyncio.Future[Entity | None]) -> None:
    if not answer.cancelled():
        answer.exception()


async def _done(value: Entity | None) -> Entity | None:
    return value


def _frame(
    request: registry.Request, response: Entity
) -> tuple[list[memoryview | FileRecords], int]:
    """The response, size first, as the parts to send in order: views of the buffers its fields
    are written to, and between them each fetched partition's records left in their file; and
    how many bytes of file records were read into the buffers instead (a small answer's). The
    size counts both; the records' own size prefix is written by kio from their length. Bytes
    records are copied once, into the buffer: handing the transport their own buffers instead
    cost more CPU per MiB (bench.transfer_bench, Python 3.11: more sends and wake-ups)."""
    cls = type(response)
    frame = _FrameWriter()
    frame.write(b"\0\0\0\0")
    header_cls = cls.__header_schema__
    write_entity(header_cls, frame, build(header_cls, {"correlation_id": request.correlation_id}))
    write_entity(cls, frame, response)
    return frame.parts(), frame.inlined


class _FrameWriter:
    """What kio writes an answer to: bytes into a buffer, ``FileRecords`` as parts of their
    own (kio's records writer writes the length, then hands the value to ``write``), or read
    into the buffer while the answer's records are small."""

    def __init__(self) -> None:
        self._parts: list[memoryview | FileRecords] = []
        self._buffer = io.BytesIO()
        self._size = 0
        self.inlined = 0  # bytes of FileRecords read into the buffer

    def write(self, data: bytes | memoryview | FileRecords) -> int:
        if isinstance(data, FileRecords):
            if self.inlined + data.size <= _INLINE_BYTES:
                self.inlined += data.size
                records = data.read_and_close()
                if len(records) < data.size:
                    raise _records_truncated(data, data.position + len(records))
                return self._buffer.write(records)
            self._cut()
            self._parts.append(data)
            self._size += data.size
            return data.size
        return self._buffer.write(data)

    def _cut(self) -> None:
        view = self._buffer.getbuffer()
        if len(view):
            self._parts.append(view)
            self._size += len(view)
            self._buffer = io.BytesIO()

    def parts(self) -> list[memoryview | FileRecords]:
        self._cut()
        first = self._parts[0]
        assert isinstance(first, memoryview)  # the size, written first
        _SIZE.pack_into(first, 0, self._size - 4)
        return self._parts
