"""Bootstrap servers nobody can reach: the clients say so at once, naming the addresses and
why, instead of waiting out their timeouts and blaming a topic. Addresses that only time out
are still retried for the configured timeouts. So are listeners that are not gRPC (a Kafka
port, an HTTP server): named for what they are. (127.0.0.1 only: closed ports, a socket that
never answers, small socket servers that answer as a Kafka broker or an HTTP server would.)"""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator

import grpc
import pytest

from minikafka.client._bootstrap import BrokersUnreachableError, ask_any_broker, wrong_listener
from minikafka.client._retry import RetryLater
from minikafka.client.admin import AdminClient
from minikafka.client.consumer.consumer import Consumer
from minikafka.client.producer.producer import Producer
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode, KafkaError, RequestTimedOutError
from tests.unit.client.test_admin import FakeCluster


def closed_address() -> str:
    """127.0.0.1:<a port nothing listens on>: connections are refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture
def silent_address() -> Iterator[str]:
    """A port that accepts TCP connections (the kernel's backlog) but never speaks: calls to
    it time out rather than fail."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield f"127.0.0.1:{sock.getsockname()[1]}"


def failure(call: Callable[[], object], within_s: float) -> KafkaError:
    start = time.monotonic()
    with pytest.raises(KafkaError) as caught:
        call()
    elapsed = time.monotonic() - start
    assert elapsed < within_s, f"took {elapsed:.1f} s: {caught.value}"
    return caught.value


def assert_unreachable(error: KafkaError, *addresses: str) -> None:
    assert error.code == ErrorCode.NETWORK_EXCEPTION
    assert not error.retriable
    text = str(error)
    assert "not present in metadata" not in text
    for address in addresses:
        assert f"{address} (Connection refused)" in text, text


def test_admin_fails_at_once_when_every_bootstrap_server_refuses() -> None:
    first, second = closed_address(), closed_address()
    with AdminClient(f"{first},{second}", request_timeout_ms=30_000) as admin:
        error = failure(admin.list_topics, within_s=5)
    assert_unreachable(error, first, second)
    assert str(error) == (
        f"NETWORK_EXCEPTION (13): cannot connect to any bootstrap server: "
        f"{first} (Connection refused), {second} (Connection refused)"
    )


def test_admin_names_an_unresolvable_host() -> None:
    with AdminClient("no-such-host.invalid:9092") as admin:
        error = failure(admin.list_topics, within_s=15)
    assert error.code == ErrorCode.NETWORK_EXCEPTION
    assert "no-such-host.invalid:9092 (" in str(error)


def test_producer_send_fails_at_once_and_does_not_blame_the_topic() -> None:
    address = closed_address()
    with Producer(address, max_block_ms=60_000) as producer:
        error = failure(lambda: producer.send("orders", b"v"), within_s=5)
    assert_unreachable(error, address)


def test_consumer_fails_at_once_with_and_without_a_group() -> None:
    address = closed_address()
    with Consumer(bootstrap_servers=address) as consumer:
        error = failure(lambda: consumer.partitions_for_topic("orders"), within_s=5)
        assert_unreachable(error, address)
        consumer.assign([TopicPartition("orders", 0)])
        assert_unreachable(failure(lambda: consumer.poll(timeout_ms=10_000), 5), address)
    with Consumer("orders", bootstrap_servers=address, group_id="g") as grouped:
        assert_unreachable(failure(lambda: grouped.poll(timeout_ms=10_000), 5), address)


def test_an_address_that_times_out_is_retried_until_the_timeout(silent_address: str) -> None:
    refused = closed_address()
    with AdminClient(f"{refused},{silent_address}", request_timeout_ms=1_500) as admin:
        start = time.monotonic()
        with pytest.raises(RequestTimedOutError):
            admin.list_topics()
    assert time.monotonic() - start >= 1.0


def test_a_client_that_reached_the_cluster_keeps_retrying_when_it_goes_away() -> None:
    cluster = FakeCluster(1)
    try:
        with AdminClient(cluster.address(0), request_timeout_ms=1_000) as admin:
            admin.describe_cluster()
            cluster.stop()  # a whole-cluster restart: wait for it, as before
            start = time.monotonic()
            with pytest.raises(RequestTimedOutError):
                admin.describe_cluster()
            assert time.monotonic() - start >= 0.5
    finally:
        cluster.stop()


class RpcFailure(grpc.RpcError):
    """A gRPC call's failure as grpc raises it: a status code and details."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        self._code, self._details = code, details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details


def test_a_round_asks_known_brokers_then_bootstrap_servers_each_once() -> None:
    asked: list[str] = []

    def ask(address: str) -> str:
        asked.append(address)
        if address != "b:2":
            raise RpcFailure(grpc.StatusCode.DEADLINE_EXCEEDED, "slow")
        return f"answer from {address}"

    answer = ask_any_broker(["a:1", "b:2"], ["a:1", "c:3"], ask)
    assert answer == "answer from b:2"
    assert asked == ["a:1", "b:2"]


def test_a_round_without_an_answer_names_the_last_failure() -> None:
    def ask(address: str) -> str:
        raise RpcFailure(grpc.StatusCode.UNAVAILABLE, f"{address} is restarting")

    with pytest.raises(RetryLater, match=r"^c:3: UNAVAILABLE: c:3 is restarting$"):
        ask_any_broker(["a:1"], ["c:3"], ask)  # a broker was known: retried, not unreachable


def test_a_failure_a_retry_cannot_fix_ends_the_round() -> None:
    asked: list[str] = []

    def ask(address: str) -> str:
        asked.append(address)
        raise RpcFailure(grpc.StatusCode.UNIMPLEMENTED, "no such method")

    with pytest.raises(grpc.RpcError):
        ask_any_broker(["a:1", "b:2"], [], ask)
    assert asked == ["a:1"]


def test_a_round_asks_nobody_once_its_deadline_has_passed() -> None:
    asked: list[str] = []
    with pytest.raises(RetryLater, match="no broker answered"):
        ask_any_broker(["a:1"], [], asked.append, deadline=time.monotonic() - 1)
    assert asked == []


def test_a_first_round_refused_everywhere_is_unreachable() -> None:
    address = closed_address()

    def ask(address: str) -> str:
        raise RpcFailure(grpc.StatusCode.UNAVAILABLE, "failed to connect")

    with pytest.raises(BrokersUnreachableError, match="cannot connect to any bootstrap server"):
        ask_any_broker([], [address], ask)


def kafka_answer(request: bytes) -> bytes:
    """What a Kafka broker answers to any request: a size, the request's correlation id, an
    error code (here UNSUPPORTED_VERSION's, which is enough to recognise the framing). A
    size above socket.request.max.bytes (the HTTP/2 preface's "PRI ") closes the connection."""
    if len(request) < 12 or struct.unpack_from(">i", request)[0] > 100 * 1024 * 1024:
        return b""
    (correlation_id,) = struct.unpack_from(">i", request, 8)
    body = struct.pack(">ih", correlation_id, 35)
    return struct.pack(">i", len(body)) + body


def http1_answer(request: bytes) -> bytes:
    """Python's http.server: a bare error page for HTTP/2.0, a status line for HTTP/1.x."""
    if b"HTTP/1." in request:
        return b"HTTP/1.0 501 Unsupported method\r\n\r\n"
    return b"<!DOCTYPE HTML><p>Error code: 505</p>"


def close_at_once(request: bytes) -> bytes:
    return b""


@pytest.fixture
def listener() -> Iterator[Callable[[Callable[[bytes], bytes]], str]]:
    """``listener(answer)``: 127.0.0.1:<port> of a server that reads one request per
    connection, writes ``answer(request)`` and closes."""
    sockets: list[socket.socket] = []

    def serve(server: socket.socket, answer: Callable[[bytes], bytes]) -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    request = conn.recv(4096)
                    conn.sendall(answer(request))
                except OSError:
                    pass

    def start(answer: Callable[[bytes], bytes]) -> str:
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        sockets.append(server)
        threading.Thread(target=serve, args=(server, answer), daemon=True).start()
        return f"127.0.0.1:{server.getsockname()[1]}"

    yield start
    for server in sockets:
        server.close()


def test_a_kafka_protocol_listener_is_named_as_one(
    listener: Callable[[Callable[[bytes], bytes]], str],
) -> None:
    address = listener(kafka_answer)
    assert wrong_listener(address) == (
        f"{address} is a Kafka-protocol listener (use the gRPC port, from the broker's "
        "listeners, not kafka.listeners; Kafka clients such as kcat use this one)"
    )
    with AdminClient(address, request_timeout_ms=30_000) as admin:
        error = failure(admin.list_topics, within_s=5)
    assert error.code == ErrorCode.NETWORK_EXCEPTION and not error.retriable
    assert str(error) == f"NETWORK_EXCEPTION (13): {wrong_listener(address)}"


def test_an_http_listener_and_anything_else_are_not_grpc(
    listener: Callable[[Callable[[bytes], bytes]], str],
) -> None:
    http = listener(http1_answer)
    assert wrong_listener(http) == (
        f"{http} is an HTTP/1 listener, not a minikafka gRPC listener "
        "(a broker's metrics.listener?): use the port of the broker's listeners"
    )
    closer = listener(close_at_once)
    assert wrong_listener(closer) == f"{closer} is not a minikafka gRPC listener"
    refused = closed_address()
    with Consumer(bootstrap_servers=f"{refused},{closer}") as consumer:
        error = failure(lambda: consumer.partitions_for_topic("orders"), within_s=5)
    assert str(error) == (
        f"NETWORK_EXCEPTION (13): cannot connect to any bootstrap server: "
        f"{refused} (Connection refused); {closer} is not a minikafka gRPC listener"
    )


def test_a_grpc_broker_or_a_silent_one_is_not_judged(silent_address: str) -> None:
    cluster = FakeCluster(1)
    try:
        assert wrong_listener(cluster.address(0)) is None
    finally:
        cluster.stop()
    start = time.monotonic()
    assert wrong_listener(silent_address, timeout_s=0.2) is None  # busy: retried as before
    assert time.monotonic() - start < 2
