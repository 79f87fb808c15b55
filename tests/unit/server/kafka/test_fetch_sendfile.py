"""A fetch answer's records go from the segment file to the socket (sendfile), framed byte for
byte as if they had been read: a real socket on 127.0.0.1, a client that reads slowly (so the
send waits for room in the socket), a file truncated under an answer (the connection closes:
the answer's size promised bytes that are gone), and a client that never reads (closed after
connections.max.idle.ms without progress)."""

from __future__ import annotations

import asyncio
import os
import socket
import struct
import time
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from structlog.testing import capture_logs

from minikafka.broker.server.kafka import handlers, registry  # noqa: F401  (fills the registry)
from minikafka.broker.server.kafka.connection import KafkaConnection, _frame
from minikafka.broker.server.kafka.schema import Entity, read_entity, response_class
from minikafka.broker.server.metrics import RequestMetrics
from minikafka.broker.server.quotas import ClientQuotaManager
from minikafka.broker.storage.log import Log
from minikafka.broker.storage.segment import FileRecords
from tests.integration.kafka_protocol.raw import encode_request
from tests.unit.storage.helpers import T0, Clock, batch, small_config

pytestmark = pytest.mark.usefixtures("either_event_loop")

FETCH = 1
VERSION = 12


def _log(tmp_path: Path, batches: int = 300) -> Log:
    """About 3 MiB in one segment by default: more than the socket buffers take before a
    read."""
    log = Log(tmp_path / "orders-0", small_config(segment_bytes=64 << 20), time_ms=Clock())
    for n in range(batches):
        log.append_as_leader(batch(1, timestamp=T0 + n, tag=n, value_size=10_000), 0)
    return log


def _fetch_handler(monkeypatch: pytest.MonkeyPatch, log: Log) -> None:
    """Partition 0's records left in the file, partition 1's the same bytes read."""

    async def fetch(request: registry.Request, broker: Any) -> Entity:
        left = log.read(0, 64 << 20, file_records=True).records
        assert isinstance(left, FileRecords)
        read = log.read(0, 64 << 20).records
        partitions = [
            {"partition_index": 0, "high_watermark": 300, "records": left},
            {"partition_index": 1, "high_watermark": 300, "records": read},
        ]
        return request.response({"responses": [{"topic": "orders", "partitions": partitions}]})

    monkeypatch.setitem(
        registry.HANDLERS, FETCH, registry.Handler(FETCH, "fetch", 4, VERSION, fetch)
    )


async def _serve(
    idle_ms: int = 10_000, metrics: RequestMetrics | None = None
) -> tuple[asyncio.Server, int, asyncio.Future[None], list[KafkaConnection]]:
    broker: Any = SimpleNamespace(
        config=SimpleNamespace(socket_request_max_bytes=1 << 20, connections_max_idle_ms=idle_ms),
        requests=metrics or RequestMetrics(),
        quotas=ClientQuotaManager(),
    )
    served: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    connections: list[KafkaConnection] = []

    def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # Small socket buffers, so that an answer waits for the client to read.
        writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 << 10)
        connection = KafkaConnection(reader, writer, broker, "CLIENT")
        connections.append(connection)
        asyncio.ensure_future(connection.serve()).add_done_callback(mark_served)

    def mark_served(_: object) -> None:
        if not served.done():  # the first connection to end completes it
            served.set_result(None)

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1], served, connections


def _client(port: int) -> socket.socket:
    client = socket.socket()
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 10)
    client.connect(("127.0.0.1", port))
    client.sendall(encode_request(FETCH, VERSION, {}, correlation_id=7))
    return client


def _read_all(client: socket.socket, chunk: int = 256 << 10) -> bytes:
    """Everything until the broker closes, slowly."""
    client.settimeout(10)
    data = bytearray()
    while more := client.recv(chunk):
        data += more
        time.sleep(0.001)
    return bytes(data)


@pytest.mark.parametrize("batches", [300, 2], ids=["sent from the file", "small: read in"])
def test_records_from_the_file_are_framed_as_if_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batches: int
) -> None:
    log = _log(tmp_path, batches)
    _fetch_handler(monkeypatch, log)
    sent: list[int] = []
    sendfile = os.sendfile

    def counted(out: int, in_fd: int, offset: int | None, count: int) -> int:
        sent.append(count)
        return sendfile(out, in_fd, offset, count)

    monkeypatch.setattr(os, "sendfile", counted)
    expected = log.read(0, 64 << 20).records
    metrics_registry = CollectorRegistry()

    async def scenario() -> bytes:
        server, port, served, _ = await _serve(metrics=RequestMetrics(metrics_registry))
        client = _client(port)
        try:
            await asyncio.sleep(0.3)  # the answer fills the socket's buffers and waits
            client.shutdown(socket.SHUT_WR)  # then the connection ends after the answer
            return await asyncio.to_thread(_read_all, client)
        finally:
            await asyncio.wait_for(served, 10)
            client.close()
            server.close()
            await server.wait_closed()

    data = asyncio.run(scenario())
    (size,) = struct.unpack_from(">i", data)
    assert size == len(data) - 4  # one frame, its size counting the records sent from the file
    cls = response_class(FETCH, VERSION)
    header, offset = read_entity(cls.__header_schema__, data[4:], 0)
    assert header.correlation_id == 7
    body, _ = read_entity(cls, data[4:], offset)
    (topic,) = body.responses
    assert [p.records for p in topic.partitions] == [expected, expected]
    # 20 KB of records are copied into the answer's one write; 3 MB go by sendfile.
    assert bool(sent) == (batches == 300)
    by_path = {
        path: metrics_registry.get_sample_value(
            "minikafka_kafka_fetch_records_bytes_total", {"path": path}
        )
        for path in ("sendfile", "read")
    }
    if batches == 300:
        assert by_path == {"sendfile": len(expected), "read": 0}
    else:
        assert by_path == {"sendfile": 0, "read": len(expected)}
    log.close()


@pytest.mark.parametrize("version", [12, 17])
def test_an_answers_parts_joined_with_their_files_bytes_are_its_encoding_with_bytes(
    tmp_path: Path, version: int
) -> None:
    """No socket: the parts of an answer whose records stay in the file (a large partition's)
    or are read in (small ones, up to 64 KiB in all), with each FileRecords replaced by its
    bytes, are byte for byte the frame of the same answer built with bytes records."""
    log = _log(tmp_path)
    reads = [(0, 64 << 20), (5, 1), (100, 1 << 20), (299, 1)]
    request = registry.Request(FETCH, version, 9, "c", "127.0.0.1", 1, "CLIENT", body=None)

    def answer(records: list[Any]) -> Entity:
        partitions = [
            {"partition_index": n, "high_watermark": 300, "records": r}
            for n, r in enumerate(records)
        ]
        topic = {"topic": "orders", "topic_id": uuid.UUID(int=7), "partitions": partitions}
        return request.response({"responses": [topic]})

    left = [log.read(offset, size, file_records=True).records for offset, size in reads]
    parts, inlined = _frame(request, answer(left))
    read = [log.read(offset, size).records for offset, size in reads]
    expected, _ = _frame(request, answer(read))
    # The bytes around two records left in the file: those of partitions 0 and 2
    kinds = [type(p) for p in parts]
    assert kinds == [memoryview, FileRecords, memoryview, FileRecords, memoryview]
    assert [p.size for p in parts if isinstance(p, FileRecords)] == [len(read[0]), len(read[2])]
    assert inlined == len(read[1]) + len(read[3])  # the small ones, read into the buffer
    assert _joined(parts) == _joined(expected)  # expected has no FileRecords: bytes only
    for part in parts:
        if isinstance(part, FileRecords):
            part.close()
    log.close()


def _joined(parts: list[memoryview | FileRecords]) -> bytes:
    return b"".join(p.read() if isinstance(p, FileRecords) else bytes(p) for p in parts)


def test_answers_in_a_row_keep_their_order_and_framing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fetches sent back to back on one connection, their answers' records alternately sent
    from the file and read into the answer: each frame whole, in request order."""
    log = _log(tmp_path)
    reads = {1: (0, 64 << 20), 2: (5, 1), 3: (100, 64 << 20), 4: (299, 1), 5: (1, 2 << 20)}

    async def fetch(request: registry.Request, broker: Any) -> Entity:
        offset, max_size = reads[request.correlation_id]
        records = log.read(offset, max_size, file_records=True).records
        partitions = [{"partition_index": 0, "high_watermark": 300, "records": records}]
        return request.response({"responses": [{"topic": "orders", "partitions": partitions}]})

    monkeypatch.setitem(
        registry.HANDLERS, FETCH, registry.Handler(FETCH, "fetch", 4, VERSION, fetch)
    )
    expected = {cid: log.read(*read).records for cid, read in reads.items()}

    async def scenario() -> bytes:
        server, port, served, _ = await _serve()
        client = socket.socket()
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 10)
        client.connect(("127.0.0.1", port))
        client.sendall(
            b"".join(encode_request(FETCH, VERSION, {}, correlation_id=cid) for cid in reads)
        )
        client.shutdown(socket.SHUT_WR)  # the connection ends after the last answer
        try:
            return await asyncio.to_thread(_read_all, client)
        finally:
            await asyncio.wait_for(served, 10)
            client.close()
            server.close()
            await server.wait_closed()

    data = asyncio.run(scenario())
    cls = response_class(FETCH, VERSION)
    answered: dict[int, bytes] = {}
    position = 0
    while position < len(data):
        (size,) = struct.unpack_from(">i", data, position)
        frame = data[position + 4 : position + 4 + size]
        assert len(frame) == size
        header, header_size = read_entity(cls.__header_schema__, frame, 0)
        body, body_size = read_entity(cls, frame, header_size)
        assert header_size + body_size == size
        (topic,) = body.responses
        (partition,) = topic.partitions
        answered[header.correlation_id] = partition.records
        position += 4 + size
    assert list(answered) == list(reads)  # in request order
    assert answered == expected
    log.close()


def test_a_file_truncated_under_the_answer_closes_the_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = _log(tmp_path)
    _fetch_handler(monkeypatch, log)

    async def scenario() -> bytes:
        server, port, served, _ = await _serve()
        client = _client(port)
        try:
            await asyncio.sleep(0.3)  # partition 0's records are being sent
            log.truncate_to(10)
            return await asyncio.to_thread(_read_all, client)
        finally:
            await asyncio.wait_for(served, 10)
            client.close()
            server.close()
            await server.wait_closed()

    with capture_logs() as logs:
        data = asyncio.run(scenario())
    (size,) = struct.unpack_from(">i", data)
    assert len(data) - 4 < size  # the frame was never finished: no client takes it as whole
    (closed,) = [e for e in logs if e["event"] == "kafka.connection_closed"]
    assert closed["reason"] == "records truncated while sent"
    log.close()


def test_a_client_that_never_reads_is_closed_when_the_write_stalls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = _log(tmp_path)
    _fetch_handler(monkeypatch, log)

    async def scenario() -> None:
        server, port, served, _ = await _serve(idle_ms=300)
        client = _client(port)
        try:
            await asyncio.wait_for(served, 10)
        finally:
            client.close()
            server.close()
            await server.wait_closed()

    with capture_logs() as logs:
        asyncio.run(scenario())
    (closed,) = [e for e in logs if e["event"] == "kafka.connection_closed"]
    assert closed["reason"] == "idle" and closed["writing"] is True
    log.close()


def test_records_never_go_to_a_descriptor_the_closed_socket_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The transport closes its socket while a send waits for room (abort here, a reset its
    reader saw in life), and the freed descriptor number goes to the next file or connection
    opened: the rest of the answer must not be written there."""
    log = _log(tmp_path)
    _fetch_handler(monkeypatch, log)
    stolen = tmp_path / "stolen"

    async def scenario() -> None:
        server, port, served, connections = await _serve()
        client = _client(port)
        taken: list[int] = []
        try:
            await asyncio.sleep(0.3)  # the answer fills the socket's buffers and waits
            (connection,) = connections
            freed = connection._writer.get_extra_info("socket").fileno()
            connection.abort()
            await asyncio.sleep(0.05)  # the transport has closed its socket
            while freed not in taken and len(taken) < 100:
                taken.append(os.open(stolen, os.O_WRONLY | os.O_CREAT))
            assert freed in taken
            await asyncio.to_thread(_read_all, client)  # room again on the old socket
            await asyncio.wait_for(served, 10)
        finally:
            for fd in taken:
                os.close(fd)
            client.close()
            server.close()
            await server.wait_closed()

    asyncio.run(scenario())
    assert stolen.stat().st_size == 0
    log.close()
