"""A raw Kafka-protocol connection for tests: requests of any version, encoded by kio (the
schema library the broker uses), for what the real clients never send.

    with RawKafka(cluster.brokers[0].kafka_address) as raw:
        answer = raw.call(3, 1, {"topics": [{"name": "orders"}]})   # Metadata v1
        sent = raw.send(0, 9, {...}); ...; raw.receive(0, 9, sent)     # pipelined
"""

from __future__ import annotations

import io
import socket
import struct
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from minikafka.broker.server.kafka.schema import (
    Entity,
    build,
    read_entity,
    request_class,
    response_class,
    write_entity,
)

__all__ = ["RawKafka", "encode_request", "read_frame"]


def encode_request(
    api_key: int,
    version: int,
    body: Mapping[str, Any],
    correlation_id: int = 1,
    client_id: str | None = "raw",
) -> bytes:
    """A whole frame: size, the header of the request's version, the body."""
    cls = request_class(api_key, version)
    header_cls = cls.__header_schema__
    header = {
        "request_api_key": api_key,
        "request_api_version": version,
        "correlation_id": correlation_id,
        "client_id": client_id,
    }
    buffer = io.BytesIO()
    write_entity(header_cls, buffer, build(header_cls, header))
    write_entity(cls, buffer, build(cls, body))
    payload = buffer.getvalue()
    return struct.pack(">i", len(payload)) + payload


def read_frame(sock: socket.socket) -> bytes:
    """The next response frame, without its size; ConnectionError when the broker closes."""
    (size,) = struct.unpack(">i", _read(sock, 4))
    return _read(sock, size)


def _read(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError(f"the broker closed the connection after {len(data)} bytes")
        data += chunk
    return data


class RawKafka:
    """One connection to a broker's Kafka listener."""

    def __init__(self, address: str, timeout_s: float = 20.0) -> None:
        host, port = address.rsplit(":", 1)
        self.socket = socket.create_connection((host, int(port)), timeout=timeout_s)
        self._correlation_id = 0

    def __enter__(self) -> RawKafka:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self.socket.close()

    def call(self, api_key: int, version: int, body: Mapping[str, Any]) -> Entity:
        """Send a request and read its response."""
        return self.receive(api_key, version, self.send(api_key, version, body))

    def send(self, api_key: int, version: int, body: Mapping[str, Any]) -> int:
        """Send a request without reading anything; its correlation id."""
        self._correlation_id += 1
        self.socket.sendall(encode_request(api_key, version, body, self._correlation_id))
        return self._correlation_id

    def receive(self, api_key: int, version: int, correlation_id: int) -> Entity:
        """The next response, which must answer ``correlation_id``."""
        frame = read_frame(self.socket)
        cls = response_class(api_key, version)
        header, offset = read_entity(cls.__header_schema__, frame, 0)
        assert header.correlation_id == correlation_id
        body, _ = read_entity(cls, frame, offset)
        return body
