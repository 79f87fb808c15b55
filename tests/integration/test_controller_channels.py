"""GrpcBrokerChannels against real gRPC servers on 127.0.0.1 (no ZooKeeper needed)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
import pytest

from minikafka.controller.channels import GrpcBrokerChannels
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.common import EndPoint
from minikafka.proto.errors import ErrorCode
from tests.integration.zookeeper import free_port

pytestmark = pytest.mark.integration


class Recorder(pb_grpc.ControlServicer):
    """Records UpdateMetadata's controller epochs; with ``held``, answers only once it is set."""

    def __init__(self, held: threading.Event | None = None) -> None:
        self.received: list[int] = []
        self.held = held

    def UpdateMetadata(self, request: Any, context: Any) -> Any:
        if self.held is not None:
            assert self.held.wait(30)
        self.received.append(request.controller_epoch)
        return pb.UpdateMetadataResponse()

    def StopReplica(self, request: Any, context: Any) -> Any:
        return pb.StopReplicaResponse(error_code=ErrorCode.STALE_CONTROLLER_EPOCH)

    def LeaderAndIsr(self, request: Any, context: Any) -> Any:
        return pb.LeaderAndIsrResponse()

    def ControlledShutdown(self, request: Any, context: Any) -> Any:
        return pb.ControlledShutdownResponse()

    def WriteTxnMarkers(self, request: Any, context: Any) -> Any:
        return pb.WriteTxnMarkersResponse()  # a controller never sends one


def serve(recorder: Recorder, port: int = 0) -> tuple[grpc.Server, int]:
    server = grpc.server(ThreadPoolExecutor(max_workers=2))
    pb_grpc.add_ControlServicer_to_server(recorder, server)
    bound = server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    return server, bound


def wait_until(predicate: Any, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_requests_arrive_in_order_and_answers_reach_the_callback() -> None:
    recorder = Recorder()
    server, port = serve(recorder)
    channels = GrpcBrokerChannels(request_timeout_ms=2000, retry_backoff_ms=20)
    answers: list[tuple[int, int]] = []
    try:
        channels.add_broker(1, EndPoint("PLAINTEXT", "127.0.0.1", port))
        for epoch in range(1, 6):
            channels.send(
                1,
                pb.UpdateMetadataRequest(controller_epoch=epoch),
                lambda broker, request, response: answers.append(
                    (broker, request.controller_epoch)
                ),
            )
        channels.send(1, pb.StopReplicaRequest(controller_epoch=6))
        wait_until(lambda: len(answers) == 5)
        assert recorder.received == [1, 2, 3, 4, 5]
        assert answers == [(1, e) for e in range(1, 6)]
    finally:
        channels.close()
        server.stop(None)


def test_a_broker_that_is_not_up_yet_gets_the_request_when_it_comes() -> None:
    port = free_port()
    channels = GrpcBrokerChannels(request_timeout_ms=500, retry_backoff_ms=20)
    done = threading.Event()
    recorder = Recorder()
    server = None
    try:
        channels.add_broker(2, EndPoint("PLAINTEXT", "127.0.0.1", port))
        channels.send(2, pb.UpdateMetadataRequest(controller_epoch=3), lambda *a: done.set())
        time.sleep(0.3)
        server, _ = serve(recorder, port)
        assert done.wait(10)
        assert recorder.received == [3]
    finally:
        channels.close()
        if server is not None:
            server.stop(None)


def test_a_slow_broker_does_not_hold_up_another() -> None:
    released = threading.Event()
    slow, fast = Recorder(held=released), Recorder()
    slow_server, slow_port = serve(slow)
    fast_server, fast_port = serve(fast)
    channels = GrpcBrokerChannels(request_timeout_ms=5000)
    try:
        channels.add_broker(1, EndPoint("PLAINTEXT", "127.0.0.1", slow_port))
        channels.add_broker(2, EndPoint("PLAINTEXT", "127.0.0.1", fast_port))
        channels.send(1, pb.UpdateMetadataRequest(controller_epoch=1))
        channels.send(2, pb.UpdateMetadataRequest(controller_epoch=1))
        wait_until(lambda: fast.received == [1])  # while the slow one still holds its request
        assert slow.received == []
    finally:
        released.set()
        channels.close()
        slow_server.stop(None)
        fast_server.stop(None)


def test_removing_a_broker_drops_what_was_not_sent() -> None:
    port = free_port()
    channels = GrpcBrokerChannels(request_timeout_ms=200, retry_backoff_ms=20)
    called = threading.Event()
    try:
        channels.add_broker(3, EndPoint("PLAINTEXT", "127.0.0.1", port))
        channels.send(3, pb.UpdateMetadataRequest(), lambda *a: called.set())
        time.sleep(0.2)
        channels.remove_broker(3)
        channels.send(3, pb.UpdateMetadataRequest(), lambda *a: called.set())  # no channel
        # Its sender ends (a sender still retrying the dropped request never would): nothing
        # can reach the broker once it is up.
        wait_until(lambda: "controller-to-broker-3" not in {t.name for t in threading.enumerate()})
        recorder = Recorder()
        server, _ = serve(recorder, port)
        try:
            assert not called.is_set() and recorder.received == []
        finally:
            server.stop(None)
    finally:
        channels.close()
