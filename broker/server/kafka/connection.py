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

Runs on the broker's event loop; one reader and one writer task per connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import io
import struct
import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

import structlog

from minikafka.broker.server.kafka import registry
from minikafka.broker.server.kafka.schema import (
    Entity,
    build,
    read_entity,
    request_class,
    write_entity,
)
from minikafka.broker.server.metrics import kafka_request_name

if TYPE_CHECKING:
    from minikafka.broker.server.kafka.broker import KafkaBroker

__all__ = ["KafkaConnection"]

_log = structlog.get_logger(__name__)

API_VERSIONS = 18
UNSUPPORTED_VERSION = 35
_HEADER_MIN = 10  # api_key, api_version, correlation_id, client_id's length
_MAX_IN_FLIGHT = 100  # requests read ahead of their answers (pipelined produce)
_SIZE = struct.Struct(">i")
_HEAD = struct.Struct(">hhi")


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
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._broker = broker
        self._listener = listener
        peer = writer.get_extra_info("peername") or ("", 0)
        self._host, self._port = str(peer[0]), int(peer[1])
        self._max_bytes = broker.config.socket_request_max_bytes
        self._idle_s = broker.config.connections_max_idle_ms / 1000
        # Answers to come, in request order, with when each request was read (for the request
        # metrics); None ends the writer.
        self._answers: asyncio.Queue[
            tuple[registry.Request, Awaitable[Entity | None], float] | None
        ]
        self._answers = asyncio.Queue(maxsize=_MAX_IN_FLIGHT)
        self._written = asyncio.Event()  # set whenever the writer has nothing left

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

    async def _read_requests(self, writer_task: asyncio.Future[None]) -> None:
        while True:
            frame = await self._read_frame(writer_task)
            if frame is None:
                return
            started = time.perf_counter()
            request, handler = self._decode(frame)
            if handler is None:  # ApiVersions of a version not served
                unsupported = request.response(
                    {"error_code": UNSUPPORTED_VERSION, "api_keys": registry.supported_api_keys()}
                )
                self._written.clear()
                await self._answers.put((request, _done(unsupported), started))
                continue
            if not handler.pipelined:
                # Outside the handler's try: the writer failing here is the client hanging up
                # (ConnectionError to serve), not this handler failing.
                await self._wait_written(writer_task)
            try:
                if handler.pipelined:
                    answer = handler.handle(request, self._broker)
                else:
                    response = await handler.handle(request, self._broker)
            except registry.CloseConnection as close:
                raise _Closed(close.reason, api=handler.name, **close.details) from None
            except Exception as exc:
                raise _handler_failed(request, exc) from None
            if not handler.pipelined:
                # Every earlier answer is written, and nothing more is read until this one is:
                # it goes out from here, not through the writer task (a follower's fetch
                # answer one task switch sooner).
                await self._send(request, response, started)
                continue
            self._written.clear()
            await self._answers.put((request, answer, started))

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
        return self._request(api_key, api_version, correlation_id, header.client_id, body), handler

    def _request(
        self, api_key: int, api_version: int, correlation_id: int, client_id: str | None, body: Any
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
        )

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
            request, answer, started = item
            try:
                response = await answer
            except registry.CloseConnection as close:
                api = registry.HANDLERS[request.api_key].name
                raise _Closed(close.reason, api=api, **close.details) from None
            except Exception as exc:
                raise _handler_failed(request, exc) from None
            await self._send(request, response, started)
            if self._answers.empty():
                self._written.set()

    async def _send(
        self, request: registry.Request, response: Entity | None, started: float
    ) -> None:
        """Write one answer (None: the request has none) and count the request as served."""
        if response is not None:
            try:
                data = _frame(request, response)
            except Exception as exc:
                raise _handler_failed(request, exc) from None
            try:
                self._writer.write(data)
            except Exception as exc:  # uvloop's transport refuses a write after a reset
                raise ConnectionResetError(str(exc)) from None
            await self._writer.drain()
        from_follower = request.api_key == 1 and request.body.replica_id >= 0
        self._broker.requests.observe(
            kafka_request_name(request.api_key, from_follower=from_follower), started
        )


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


def _frame(request: registry.Request, response: Entity) -> memoryview:
    """The response's bytes, size first. A view of the one buffer they are written to: a fetch
    answer's records are copied once, into it, and never again. Handing the transport the
    records' own buffers instead, between the fields' bytes, cost the leader more CPU per MiB
    (bench.transfer_bench, Python 3.11: more sends and wake-ups than the copy saves), and 3.11's
    ``writelines`` joins its parts into one copy anyway."""
    cls = type(response)
    buffer = io.BytesIO()
    buffer.write(b"\0\0\0\0")
    header_cls = cls.__header_schema__
    write_entity(header_cls, buffer, build(header_cls, {"correlation_id": request.correlation_id}))
    write_entity(cls, buffer, response)
    data = buffer.getbuffer()
    _SIZE.pack_into(data, 0, len(data) - 4)
    return data
