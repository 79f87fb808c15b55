"""A raw Kafka-protocol connection for tests: requests of any version, encoded by kio (the
schema library the broker uses), for what the real clients never send.

    with RawKafka(cluster.brokers[0].kafka_address) as raw:
        answer = raw.call(3, 1, {"topics": [{"name": "orders"}]})   # Metadata v1
        sent = raw.send(0, 9, {...}); ...; raw.receive(0, 9, sent)     # pipelined

and the fields of the requests tests build most: ``produce_fields`` (Produce v8 of a ``batch``
that kafka-python encodes) and ``fetch_fields`` (Fetch v12, one partition, sessionless). For
hostile clients: ``connect_small`` (a socket that takes little kernel memory, from a source
address of choice), ``unread_bytes`` (what the broker sent that the client has not read) and
``rss_mb`` (a process's resident set).
"""

from __future__ import annotations

import datetime
import fcntl
import io
import socket
import ssl
import struct
import termios
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any

from kafka.record.default_records import DefaultRecordBatchBuilder
from kio.index import load_request_schema

from minikafka.broker.server.kafka.schema import (
    Entity,
    build,
    read_entity,
    request_class,
    response_class,
    write_entity,
)

__all__ = [
    "RawKafka",
    "batch",
    "connect_small",
    "encode_request",
    "fetch_fields",
    "produce_fields",
    "read_frame",
    "rss_mb",
    "unread_bytes",
]


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


def batch(
    values: Iterable[bytes],
    timestamp: int = 1_700_000_000_000,
    *,
    transactional_producer: tuple[int, int] | None = None,
) -> bytes:
    """A RecordBatch v2 built by kafka-python's encoder, not ours; ``transactional_producer``
    (producer id, epoch) makes it a transactional batch from sequence 0."""
    producer_id, producer_epoch = transactional_producer or (-1, -1)
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=int(transactional_producer is not None),
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=-1 if transactional_producer is None else 0,
        batch_size=1 << 20,
    )
    for offset, value in enumerate(values):
        builder.append(offset, timestamp=timestamp, key=None, value=value, headers=[])
    return bytes(builder.build())


def produce_fields(
    topic: str, records: bytes, *, acks: int = -1, transactional_id: str | None = None
) -> dict[str, Any]:
    """Produce v8 of ``records`` to partition 0 of ``topic``."""
    schema = load_request_schema(0, 8)
    module = __import__(schema.__module__, fromlist=["TopicProduceData"])
    return {
        "transactional_id": transactional_id,
        "acks": acks,
        "timeout": datetime.timedelta(seconds=5),
        "topic_data": (
            module.TopicProduceData(
                name=topic,
                partition_data=(module.PartitionProduceData(index=0, records=records),),
            ),
        ),
    }


def fetch_fields(topic: str, offset: int, max_bytes: int, partition: int = 0) -> dict[str, Any]:
    """Fetch v12 of one partition from ``offset``, up to ``max_bytes`` (the whole answer and the
    partition's), answered at once, outside any fetch session."""
    return {
        "replica_id": -1,
        "max_wait": 0,
        "min_bytes": 1,
        "max_bytes": max_bytes,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {
                        "partition": partition,
                        "current_leader_epoch": -1,
                        "fetch_offset": offset,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": max_bytes,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }


def connect_small(address: str, source: str = "127.0.0.1") -> socket.socket:
    """A connection with a 16 KiB receive buffer (set before connecting, so the window stays
    small), from ``source``."""
    host, port = address.rsplit(":", 1)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 10)
    sock.bind((source, 0))
    sock.connect((host, int(port)))
    return sock


def unread_bytes(sock: socket.socket) -> int:
    """Bytes the broker sent that ``sock`` has not read (SIOCINQ)."""
    return int(struct.unpack("i", fcntl.ioctl(sock, termios.FIONREAD, b"\0\0\0\0"))[0])


def rss_mb(pid: int) -> float:
    """The process's resident set (VmRSS), in MiB."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise ValueError(f"no VmRSS for process {pid}")


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

    def __init__(
        self, address: str, timeout_s: float = 20.0, ssl_context: ssl.SSLContext | None = None
    ) -> None:
        """``ssl_context``: TLS first (an SSL or SASL_SSL listener), with its certificate."""
        host, port = address.rsplit(":", 1)
        self.socket = socket.create_connection((host, int(port)), timeout=timeout_s)
        if ssl_context is not None:
            try:
                self.socket = ssl_context.wrap_socket(self.socket, server_hostname=host)
            except BaseException:
                self.socket.close()
                raise
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
