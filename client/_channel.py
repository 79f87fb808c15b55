"""gRPC channels to brokers, one per address, shared by a client's calls.

    pool = ChannelPool()
    stub = MetadataStub(pool.get("127.0.0.1:9092"))
    ...
    future = pool.call_async(DataStub(pool.get(address)).Produce, request, timeout=30)
    pool.close()

``call_async`` runs a blocking call on the pool's worker threads and returns a
``concurrent.futures.Future`` (its ``result()`` raises ``grpc.RpcError`` on failure). grpc's own
``.future()`` starts a channel-polling thread whenever a channel's last such call has finished,
which for a producer or consumer with one request in flight per broker meant a new thread for
nearly every request (about a tenth of the producer's time, and a millisecond of latency each).

``parse_bootstrap_servers("h1:9092,h2:9092")`` splits Kafka's bootstrap.servers syntax.

Thread-safe: channels are created under a lock and grpc channels may be shared by threads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import grpc

from proto.errors import InvalidConfigError

__all__ = ["RETRIABLE_STATUS", "ChannelPool", "parse_bootstrap_servers"]

_Response = TypeVar("_Response")
# Calls in flight at once per client: a producer's max.in.flight per broker, for a few brokers.
_MAX_CALLS_IN_FLIGHT = 32

# Status codes after which another broker (or the same one, later) may answer: the broker is
# down, restarting, or too slow. Anything else is a bug on one side and is not retried.
RETRIABLE_STATUS = frozenset(
    {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED}
)

_MAX_MESSAGE_BYTES = 128 * 1024 * 1024
_CHANNEL_OPTIONS = (
    ("grpc.max_send_message_length", _MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", _MAX_MESSAGE_BYTES),
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


class ChannelPool:
    """One insecure channel per ``host:port``, created on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._channels: dict[str, grpc.Channel] = {}
        self._closed = False
        self._calls: ThreadPoolExecutor | None = None

    def get(self, address: str) -> grpc.Channel:
        with self._lock:
            if self._closed:
                raise RuntimeError("the client is closed")
            channel = self._channels.get(address)
            if channel is None:
                channel = grpc.insecure_channel(address, options=_CHANNEL_OPTIONS)
                self._channels[address] = channel
            return channel

    def call_async(
        self, method: Callable[..., _Response], request: Any, *, timeout: float
    ) -> Future[_Response]:
        """``method(request, timeout=timeout)`` on a worker thread, as a future."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the client is closed")
            if self._calls is None:
                self._calls = ThreadPoolExecutor(_MAX_CALLS_IN_FLIGHT, "minikafka-call")
            calls = self._calls
        return calls.submit(method, request, timeout=timeout)

    def close(self) -> None:
        with self._lock:
            channels, self._channels = list(self._channels.values()), {}
            self._closed = True
            calls, self._calls = self._calls, None
        for channel in channels:  # ends the calls in flight (CANCELLED) ...
            channel.close()
        if calls is not None:  # ... so their threads finish at once
            calls.shutdown(wait=False)
