"""A client that hangs up while its answers are being made or written is normal: the connection
logs one ``kafka.connection_closed`` line (debug, no traceback); ``kafka.handler_failed`` with a
traceback stays for a handler's own exception. A real socket on 127.0.0.1 and handlers put in
the registry for the test."""

from __future__ import annotations

import asyncio
import gc
import io
import socket
import struct
import warnings
from types import SimpleNamespace
from typing import Any

import pytest
from structlog.testing import capture_logs

from minikafka.broker.server.kafka import handlers, registry  # noqa: F401  (fills the registry)
from minikafka.broker.server.kafka.connection import KafkaConnection
from minikafka.broker.server.kafka.schema import Entity, build, request_class, write_entity
from minikafka.broker.server.metrics import RequestMetrics
from minikafka.broker.server.quotas import ClientQuotaManager

# The broker runs on uvloop, whose transports fail a write after a reset in their own way.
pytestmark = pytest.mark.usefixtures("either_event_loop")

API_VERSIONS = 18
DESCRIBE_CLUSTER = 60


def _frame(api_key: int, version: int, correlation_id: int, body: dict[str, Any]) -> bytes:
    cls = request_class(api_key, version)
    buffer = io.BytesIO()
    header = {
        "request_api_key": api_key,
        "request_api_version": version,
        "correlation_id": correlation_id,
        "client_id": "test",
    }
    write_entity(cls.__header_schema__, buffer, build(cls.__header_schema__, header))
    write_entity(cls, buffer, build(cls, body))
    data = buffer.getvalue()
    return struct.pack(">i", len(data)) + data


_API_VERSIONS_REQUEST = _frame(
    API_VERSIONS, 3, 1, {"client_software_name": "t", "client_software_version": "1"}
)
_DESCRIBE_CLUSTER_REQUEST = _frame(DESCRIBE_CLUSTER, 0, 2, {})


async def _serve_one(
    send: bytes, *, reset: bool, release: asyncio.Event, half_close: bool = False
) -> None:
    """Accept one connection, send ``send`` on it (then close the client's side, with
    ``half_close``), then reset it (or just wait) and let the handlers answer; until the broker
    side is done with it."""
    broker: Any = SimpleNamespace(
        config=SimpleNamespace(socket_request_max_bytes=1 << 20, connections_max_idle_ms=10_000),
        requests=RequestMetrics(),
        quotas=ClientQuotaManager(),
    )
    served: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.ensure_future(KafkaConnection(reader, writer, broker, "CLIENT").serve())
        task.add_done_callback(lambda _: served.set_result(None))

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    try:
        client.sendall(send)
        if half_close:
            client.shutdown(socket.SHUT_WR)
        await asyncio.sleep(0.3)  # read, and the first handler waits on ``release``
        if reset:
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            client.close()  # RST
            await asyncio.sleep(0.1)
        release.set()
        await asyncio.wait_for(served, 5)
    finally:
        client.close()
        server.close()
        await server.wait_closed()


def _handlers(
    monkeypatch: pytest.MonkeyPatch, *, pipelined: bool, release: asyncio.Event, bug: bool
) -> None:
    async def slow_answer(request: registry.Request, broker: Any) -> Entity | None:
        await release.wait()
        # big enough that writing it meets the reset
        api_keys = registry.supported_api_keys() * 2000
        return request.response({"error_code": 0, "api_keys": api_keys})

    async def quick_answer(request: registry.Request, broker: Any) -> Entity | None:
        if bug:
            raise RuntimeError("a bug in the handler")
        return None

    monkeypatch.setitem(
        registry.HANDLERS,
        API_VERSIONS,
        registry.Handler(API_VERSIONS, "api_versions", 0, 3, slow_answer, pipelined=pipelined),
    )
    monkeypatch.setitem(
        registry.HANDLERS,
        DESCRIBE_CLUSTER,
        registry.Handler(DESCRIBE_CLUSTER, "describe_cluster", 0, 1, quick_answer),
    )


@pytest.mark.parametrize("pipelined", [True, False], ids=["pipelined", "in-turn"])
def test_a_client_reset_under_an_answer_is_one_line_without_a_traceback(
    monkeypatch: pytest.MonkeyPatch, pipelined: bool
) -> None:
    """A produce (pipelined) still being answered, then a request answered in turn (Metadata
    and the like wait for the answers before them), and the client resets: the wait for the
    earlier answer meets the reset, which is the client's doing, not the later handler's."""

    async def scenario() -> None:
        release = asyncio.Event()
        _handlers(monkeypatch, pipelined=pipelined, release=release, bug=False)
        await _serve_one(
            _API_VERSIONS_REQUEST + _DESCRIBE_CLUSTER_REQUEST, reset=True, release=release
        )

    with capture_logs() as logs:
        asyncio.run(scenario())

    assert [e for e in logs if e["event"] == "kafka.handler_failed"] == []
    (closed,) = [e for e in logs if e["event"] == "kafka.connection_closed"]
    assert closed["reason"] == "client disconnected"
    assert closed["log_level"] == "debug" and "exc_info" not in closed
    assert closed["error"]


def test_a_handlers_own_exception_is_still_logged_with_its_traceback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        release = asyncio.Event()
        release.set()
        _handlers(monkeypatch, pipelined=True, release=release, bug=True)
        await _serve_one(_DESCRIBE_CLUSTER_REQUEST, reset=False, release=release)

    with capture_logs() as logs:
        asyncio.run(scenario())

    (failed,) = [e for e in logs if e["event"] == "kafka.handler_failed"]
    assert failed["api"] == "describe_cluster" and failed["exc_info"] is True
    (closed,) = [e for e in logs if e["event"] == "kafka.connection_closed"]
    assert closed["reason"] == "handler failed" and closed["log_level"] == "warning"


def test_answers_queued_behind_a_reset_are_dropped_without_warnings(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Pipelined answers (produces) still queued when the client resets are never written: a
    failed one's exception is read (no "exception was never retrieved" from asyncio) and one
    not started is closed (no "never awaited")."""
    outcomes = iter(["failed", "not started"] * 2)

    def queued_answer(request: registry.Request, broker: Any) -> Any:
        if next(outcomes) == "failed":
            failed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            failed.set_exception(registry.CloseConnection("acks=0 produce failed"))
            return failed
        return asyncio.sleep(0)

    async def scenario() -> None:
        release = asyncio.Event()
        _handlers(monkeypatch, pipelined=True, release=release, bug=False)
        monkeypatch.setitem(
            registry.HANDLERS,
            DESCRIBE_CLUSTER,
            registry.Handler(DESCRIBE_CLUSTER, "describe_cluster", 0, 1, queued_answer, True),
        )
        await _serve_one(
            _API_VERSIONS_REQUEST + _DESCRIBE_CLUSTER_REQUEST * 4, reset=True, release=release
        )

    with warnings.catch_warnings(record=True) as caught, capture_logs() as logs:
        warnings.simplefilter("always")
        asyncio.run(scenario())
        gc.collect()

    assert [str(w.message) for w in caught if "never awaited" in str(w.message)] == []
    assert "never retrieved" not in caplog.text
    (closed,) = [e for e in logs if e["event"] == "kafka.connection_closed"]
    assert closed["reason"] == "client disconnected"


def test_a_reset_after_a_full_pipeline_and_a_half_close_ends_the_connection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The client pipelines as many produces as the connection reads ahead, closes its side
    (the connection owes it every answer), then resets: the writer dies with the queue full,
    and the connection still ends (it used to wait forever to queue its end marker)."""

    async def scenario() -> None:
        release = asyncio.Event()
        _handlers(monkeypatch, pipelined=True, release=release, bug=False)
        # one being answered, as many read ahead as the connection reads
        await _serve_one(_API_VERSIONS_REQUEST * 101, reset=True, release=release, half_close=True)

    with capture_logs() as logs:
        asyncio.run(scenario())
    assert [e for e in logs if e["event"] == "kafka.handler_failed"] == []
