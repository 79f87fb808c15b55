"""gRPC channels to brokers, one per address, shared by a client's calls, and the
request streams over them.

    pool = ChannelPool()
    stub = MetadataStub(pool.get("127.0.0.1:9092"))
    ...
    future = pool.stream("127.0.0.1:9092", "ProduceStream").send(raw_request, timeout=35)
    pool.close()

``stream(address, method)`` is the client's long-lived ``RawData.ProduceStream`` or
``RawData.FetchStream`` to one broker (answered in request order, see the proto): the records
go as raw bytes after a protobuf header (proto/raw_records.py), so a ProduceStream takes a
``RawProduceRequest`` and a FetchStream answers a ``RawFetchResponse``. There is no fall-back
to ``Data``: a broker without RawData would answer UNIMPLEMENTED, and every broker runs this
version. ``send`` returns a ``concurrent.futures.Future`` of the answer; its ``result()``
raises ``grpc.RpcError`` when the stream fails or the answer is later than the request's
timeout, and every request then waiting on that stream fails with it. The next ``stream`` call
opens a new one. Streams cost the broker and the client much less per request than a call
each, and a producer's requests on one stream reach the broker's log in the order they were
sent, so several may be in flight.

``parse_bootstrap_servers("h1:9092,h2:9092")`` splits Kafka's bootstrap.servers syntax.

Thread-safe: channels and streams are created under a lock, grpc channels may be shared by
threads, and a stream's ``send`` may be called from any thread. Each stream has a thread that
reads its answers and settles the futures (their callbacks run there); one more thread per pool
fails requests past their timeout.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from typing import Any, Literal

import grpc

from minikafka.client._security import ClientSecurity
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import raw_records, transport
from minikafka.proto.errors import InvalidConfigError
from minikafka.proto.sasl_channel import sasl_channel

__all__ = [
    "RETRIABLE_STATUS",
    "ChannelPool",
    "RequestStream",
    "StreamError",
    "parse_bootstrap_servers",
]

StreamMethod = Literal["ProduceStream", "FetchStream"]
# Each stream's RawData path and its (request serializer, answer deserializer).
_STREAM_METHODS: dict[StreamMethod, tuple[str, Any, Any]] = {
    "ProduceStream": (
        raw_records.PRODUCE_STREAM,
        raw_records.encode_produce_request,
        pb.ProduceResponse.FromString,
    ),
    "FetchStream": (
        raw_records.FETCH_STREAM,
        pb.FetchRequest.SerializeToString,
        raw_records.decode_fetch_response,
    ),
}
# How often the pool looks for requests past their timeout (their timeouts are seconds long).
_WATCH_INTERVAL_S = 0.5

# Status codes after which another broker (or the same one, later) may answer: the broker is
# down, restarting, or too slow. Anything else is a bug on one side and is not retried.
RETRIABLE_STATUS = frozenset(
    {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED}
)

# Above what any answer the client asks for may hold: a consumer's fetch.max.bytes (50 MiB by
# default) or a batch of the broker's message.max.bytes (proto/transport.py adds the envelope).
_MAX_MESSAGE_BYTES = 128 * 1024 * 1024
_CHANNEL_OPTIONS = (
    # A restarted broker is tried again soon, not after gRPC's default back-off of up to 120 s.
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
    ("grpc.enable_retries", 0),
)


def parse_bootstrap_servers(servers: str | Sequence[str]) -> list[str]:
    """``"h1:9092,h2:9092"`` or ``["h1:9092", ...]`` -> ``["h1:9092", "h2:9092"]``, checked."""
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    addresses = [item.strip() for item in items if item.strip()]
    if not addresses:
        raise InvalidConfigError("bootstrap.servers is empty: give at least one host:port")
    for address in addresses:
        host, colon, port = address.rpartition(":")
        if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise InvalidConfigError(
                f"invalid url in bootstrap.servers: {address!r} (expected host:port)"
            )
    return addresses


class StreamError(grpc.RpcError):
    """A request stream ended or timed out; ``code()`` says how, as for a failed call."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self._code = code
        self._details = details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details


class RequestStream:
    """One bidirectional stream to a broker whose answers come in request order."""

    def __init__(self, method: grpc.StreamStreamMultiCallable[Any, Any], name: str) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._requests: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._waiting: deque[tuple[Future[Any], float]] = deque()  # (answer, deadline)
        self._error: grpc.RpcError | None = None
        self._timed_out = False
        self._ending = False  # cancelled: the reader is about to fail what waits
        self._call = method(self._outgoing())
        threading.Thread(target=self._read_answers, name=f"minikafka-{name}", daemon=True).start()

    @property
    def failed(self) -> bool:
        """Ended, or ending: the pool opens a new stream rather than queue on this one."""
        return self._ending or self._error is not None

    def send(self, request: Any, *, timeout: float) -> Future[Any]:
        """Queue ``request``; the future settles with its answer or the stream's failure."""
        future: Future[Any] = Future()
        future.set_running_or_notify_cancel()  # sent: not cancellable, as a call in progress
        with self._lock:  # the waiting futures and the requests stay in the same order
            if self._error is not None:
                future.set_exception(self._error)
                return future
            self._waiting.append((future, time.monotonic() + timeout))
            self._requests.put(request)
        return future

    def expire(self, now: float) -> None:
        """End the stream if a request has waited past its timeout."""
        with self._lock:
            if self._error is not None or not any(d <= now for _, d in self._waiting):
                return
            self._timed_out = True
        self.cancel()

    def cancel(self) -> None:
        self._ending = True
        self._call.cancel()

    def _outgoing(self) -> Iterator[Any]:
        while (request := self._requests.get()) is not None:
            yield request

    def _read_answers(self) -> None:
        try:
            for answer in self._call:
                with self._lock:
                    future, _ = self._waiting.popleft()
                future.set_result(answer)
            error: grpc.RpcError = StreamError(
                grpc.StatusCode.UNAVAILABLE, f"{self.name}: the broker ended the stream"
            )
        except grpc.RpcError as exc:
            error = exc
        except Exception as exc:  # an answer nobody asked for: the stream is out of step
            self._call.cancel()
            error = StreamError(grpc.StatusCode.INTERNAL, f"{self.name}: {exc!r}")
        if self._timed_out:
            error = StreamError(
                grpc.StatusCode.DEADLINE_EXCEEDED, f"{self.name}: no answer within the timeout"
            )
        with self._lock:
            self._error = error
            waiting, self._waiting = list(self._waiting), deque()
        self._requests.put(None)  # ends the request iterator, and with it grpc's sending thread
        for future, _ in waiting:
            future.set_exception(error)


class _ClientIdInterceptor(
    grpc.UnaryUnaryClientInterceptor,
    grpc.UnaryStreamClientInterceptor,
    grpc.StreamUnaryClientInterceptor,
    grpc.StreamStreamClientInterceptor,
):
    """Adds the client's ``client.id`` to every call's metadata (proto/transport.py)."""

    def __init__(self, client_id: str) -> None:
        self._entry = transport.client_id_metadata(client_id)

    def _named(self, details: Any) -> Any:
        # grpc's call details are a namedtuple
        return details._replace(metadata=[*(details.metadata or ()), self._entry])

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._named(details), request)

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._named(details), request)

    def intercept_stream_unary(self, continuation: Any, details: Any, requests: Any) -> Any:
        return continuation(self._named(details), requests)

    def intercept_stream_stream(self, continuation: Any, details: Any, requests: Any) -> Any:
        return continuation(self._named(details), requests)


class ChannelPool:
    """One channel per ``host:port``, created on first use: TLS when ``security`` says SSL or
    SASL_SSL (its files are read here, so a bad one fails the client's construction). Every
    call names the client by ``client_id`` (Kafka's ``client.id``: the broker's client quotas
    go by it), unless it is empty."""

    def __init__(self, security: ClientSecurity | None = None, client_id: str = "") -> None:
        self._client_id = client_id
        self.security = security or ClientSecurity()
        self._credentials = self.security.channel_credentials()
        self._sasl = self.security.sasl_credentials()
        self._lock = threading.Lock()
        self._channels: dict[str, grpc.Channel] = {}
        self._streams: dict[tuple[str, StreamMethod], RequestStream] = {}
        self._closed = threading.Event()
        self._watcher: threading.Thread | None = None

    def get(self, address: str) -> grpc.Channel:
        with self._lock:
            return self._channel(address)

    def _channel(self, address: str) -> grpc.Channel:
        if self._closed.is_set():
            raise RuntimeError("the client is closed")
        channel = self._channels.get(address)
        if channel is None:
            channel = transport.channel(
                address, _MAX_MESSAGE_BYTES, _CHANNEL_OPTIONS, self._credentials
            )
            if self._sasl is not None:  # logs in on the first call, then sends the token
                channel = sasl_channel(channel, self._sasl, address)
            if self._client_id:
                channel = grpc.intercept_channel(channel, _ClientIdInterceptor(self._client_id))
            self._channels[address] = channel
        return channel

    def stream(self, address: str, method: StreamMethod) -> RequestStream:
        """The open ``RawData`` stream of this kind to ``address`` (a new one if the last
        failed)."""
        with self._lock:
            stream = self._streams.get((address, method))
            if stream is None or stream.failed:
                path, serialize, parse = _STREAM_METHODS[method]
                call = self._channel(address).stream_stream(
                    path, request_serializer=serialize, response_deserializer=parse
                )
                stream = RequestStream(call, f"{method}-{address}")
                self._streams[(address, method)] = stream
                if self._watcher is None:
                    self._watcher = threading.Thread(
                        target=self._expire_requests, name="minikafka-timeouts", daemon=True
                    )
                    self._watcher.start()
            return stream

    def _expire_requests(self) -> None:
        while not self._closed.wait(_WATCH_INTERVAL_S):
            with self._lock:
                streams = list(self._streams.values())
            now = time.monotonic()
            for stream in streams:
                stream.expire(now)

    def close(self) -> None:
        with self._lock:
            channels, self._channels = list(self._channels.values()), {}
            streams, self._streams = list(self._streams.values()), {}
            self._closed.set()
        for stream in streams:  # fails the requests in flight (CANCELLED) at once
            stream.cancel()
        for channel in channels:
            channel.close()
