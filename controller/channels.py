"""How the controller's requests reach the brokers (Kafka's ControllerChannelManager).

``BrokerChannels`` is the interface the controller uses; ``GrpcBrokerChannels`` is the real one
and tests pass a fake::

    channels = GrpcBrokerChannels(request_timeout_ms=30_000)
    channels.add_broker(2, EndPoint("PLAINTEXT", "10.0.0.2", 9092))
    channels.send(2, leader_and_isr_request, on_response)   # returns at once
    channels.remove_broker(2)                               # drops what was not sent yet

One sender per broker — a thread with its own queue and gRPC channel — so a slow or dead broker
holds up only its own requests, and each broker receives the controller's requests in the order
they were sent. A request that fails at the transport level (broker unreachable, deadline) is
sent again after ``retry_backoff_ms`` for as long as the broker stays added; ``remove_broker``
(the broker left /brokers/ids) and ``remove_all`` (the controller resigned) end the retries.

``on_response(broker_id, request, response)`` runs on the sender thread once the broker
answered; it must be quick (the controller only enqueues an event). Errors in responses are
logged here as ``controller_request_error``.

With ``sasl`` (a SASL_* control plane listener), each sender logs in to its broker with this
broker's own login (proto/sasl_channel.py) and every request carries the token; a refused
login is logged and retried like an unreachable broker.

Thread-safety: every method may be called from any thread.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any, Protocol

import grpc
import structlog

from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto import transport
from minikafka.proto.common import EndPoint
from minikafka.proto.errors import ErrorCode, KafkaError
from minikafka.proto.sasl_channel import SaslCredentials, sasl_channel
from minikafka.zk.zk_data import BrokerRegistration

__all__ = [
    "BrokerChannels",
    "ControlRequest",
    "ControlResponse",
    "GrpcBrokerChannels",
    "ResponseCallback",
    "inter_broker_endpoint",
]

log = structlog.get_logger("controller.channels")

ControlRequest = pb.LeaderAndIsrRequest | pb.UpdateMetadataRequest | pb.StopReplicaRequest
ControlResponse = pb.LeaderAndIsrResponse | pb.UpdateMetadataResponse | pb.StopReplicaResponse
ResponseCallback = Callable[[int, Any, Any], None]


class BrokerChannels(Protocol):
    def add_broker(self, broker_id: int, endpoint: EndPoint) -> None:
        """Start sending to this broker (again: a changed endpoint replaces the old sender)."""

    def remove_broker(self, broker_id: int) -> None:
        """Stop sending to this broker; requests not sent yet are dropped."""

    def remove_all(self) -> None: ...

    def send(self, broker_id: int, request: Any, callback: ResponseCallback | None = None) -> None:
        """Queue a LeaderAndIsr, UpdateMetadata or StopReplica request; never blocks."""

    def close(self) -> None: ...


def inter_broker_endpoint(registration: BrokerRegistration, listener_name: str) -> EndPoint:
    """The broker's endpoint of ``listener_name`` (inter.broker.listener.name, or
    control.plane.listener.name for the controller's requests), else its first endpoint."""
    for endpoint in registration.endpoints:
        if endpoint.listener_name == listener_name:
            return endpoint
    if not registration.endpoints:
        raise ValueError(f"broker {registration.broker_id} registered no endpoint")
    return registration.endpoints[0]


def response_errors(response: Any) -> list[tuple[str, ErrorCode]]:
    """(what, error) for every error in a control response, the top-level one first."""
    errors: list[tuple[str, ErrorCode]] = []
    if response.error_code:
        errors.append(("request", _code(response.error_code)))
    for item in getattr(response, "partition_errors", ()):
        if item.error_code:
            errors.append((f"{item.topic_name}-{item.partition_index}", _code(item.error_code)))
    return errors


def _code(value: int) -> ErrorCode:
    try:
        return ErrorCode(value)
    except ValueError:
        return ErrorCode.UNKNOWN_SERVER_ERROR


class _RequestSender:
    """The thread, queue and gRPC channel of one broker."""

    def __init__(
        self,
        broker_id: int,
        endpoint: EndPoint,
        timeout_s: float,
        backoff_s: float,
        max_message_bytes: int,
        sasl: SaslCredentials | None,
        credentials: grpc.ChannelCredentials | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.endpoint = endpoint
        self._timeout_s = timeout_s
        self._backoff_s = backoff_s
        self._queue: queue.Queue[tuple[Any, ResponseCallback | None] | None] = queue.Queue()
        self._stopped = threading.Event()
        host = f"[{endpoint.host}]" if ":" in endpoint.host else endpoint.host
        address = f"{host}:{endpoint.port}"
        self._channel = transport.channel(address, max_message_bytes, credentials=credentials)
        # On a SASL_* control plane listener every request carries this broker's login.
        channel = self._channel if sasl is None else sasl_channel(self._channel, sasl, address)
        stub = pb_grpc.ControlStub(channel)
        self._methods: dict[type, Callable[..., Any]] = {
            pb.LeaderAndIsrRequest: stub.LeaderAndIsr,
            pb.UpdateMetadataRequest: stub.UpdateMetadata,
            pb.StopReplicaRequest: stub.StopReplica,
        }
        self._thread = threading.Thread(
            target=self._run, name=f"controller-to-broker-{broker_id}", daemon=True
        )
        self._thread.start()

    def enqueue(self, request: Any, callback: ResponseCallback | None) -> None:
        self._queue.put((request, callback))

    def stop(self) -> None:
        self._stopped.set()
        self._queue.put(None)

    def join(self, timeout_s: float) -> None:
        self._thread.join(timeout_s)

    def _run(self) -> None:
        try:
            while not self._stopped.is_set():
                item = self._queue.get()
                if item is None:
                    break
                request, callback = item
                self._send(request, callback)
        finally:
            self._channel.close()

    def _send(self, request: Any, callback: ResponseCallback | None) -> None:
        method = self._methods[type(request)]
        name = type(request).__name__
        attempt = 0
        while not self._stopped.is_set():
            attempt += 1
            try:
                response = method(request, timeout=self._timeout_s)
            except (grpc.RpcError, KafkaError) as exc:
                # KafkaError: the broker refused this broker's SASL login (a wrong password in
                # the JAAS config, a credential not created yet): retried as a broker down.
                code = exc.code() if isinstance(exc, grpc.Call) else getattr(exc, "code", None)
                if attempt == 1 or attempt % 50 == 0:
                    log.warning(
                        "controller_request_retry",
                        broker_id=self.broker_id,
                        request=name,
                        attempt=attempt,
                        grpc_status=str(code),
                    )
                self._stopped.wait(self._backoff_s)
                continue
            for what, error in response_errors(response):
                log.warning(
                    "controller_request_error",
                    broker_id=self.broker_id,
                    request=name,
                    item=what,
                    error=error.name,
                )
            if callback is not None:
                try:
                    callback(self.broker_id, request, response)
                except Exception:
                    log.exception("controller_response_callback_failed", request=name)
            return


class GrpcBrokerChannels:
    """BrokerChannels over gRPC's synchronous Control stub; see the module docstring."""

    def __init__(
        self,
        *,
        request_timeout_ms: int = 30_000,
        retry_backoff_ms: int = 100,
        max_message_bytes: int = 104_857_600,
        sasl: SaslCredentials | None = None,
        credentials: grpc.ChannelCredentials | None = None,
    ) -> None:
        """``credentials``: TLS to the brokers' control plane listener when it is SSL."""
        self._timeout_s = request_timeout_ms / 1000
        self._credentials = credentials
        self._backoff_s = retry_backoff_ms / 1000
        self._max_message_bytes = max_message_bytes
        self._sasl = sasl
        self._lock = threading.Lock()
        self._senders: dict[int, _RequestSender] = {}

    def add_broker(self, broker_id: int, endpoint: EndPoint) -> None:
        with self._lock:
            old = self._senders.get(broker_id)
            if old is not None and old.endpoint == endpoint:
                return
            if old is not None:
                old.stop()
            self._senders[broker_id] = _RequestSender(
                broker_id,
                endpoint,
                self._timeout_s,
                self._backoff_s,
                self._max_message_bytes,
                self._sasl,
                self._credentials,
            )

    def remove_broker(self, broker_id: int) -> None:
        with self._lock:
            sender = self._senders.pop(broker_id, None)
        if sender is not None:
            sender.stop()

    def remove_all(self) -> None:
        with self._lock:
            senders = list(self._senders.values())
            self._senders.clear()
        for sender in senders:
            sender.stop()

    def send(self, broker_id: int, request: Any, callback: ResponseCallback | None = None) -> None:
        with self._lock:
            sender = self._senders.get(broker_id)
        if sender is None:
            log.debug("controller_request_dropped", broker_id=broker_id, reason="no channel")
            return
        sender.enqueue(request, callback)

    def close(self) -> None:
        with self._lock:
            senders = list(self._senders.values())
            self._senders.clear()
        for sender in senders:
            sender.stop()
        for sender in senders:
            sender.join(1.0)
