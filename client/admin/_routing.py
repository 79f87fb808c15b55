"""Where each admin request goes, and the retries on the way: the base of every AdminClient part.

Routing, as Kafka's AdminClient does it: metadata (brokers, controller id, topics) comes from
any reachable broker, the bootstrap servers first and then the brokers they reported (
``_to_any_broker``); controller requests go to the broker whose id is the controller_id in that
metadata (``_to_controller``); NOT_CONTROLLER, an unknown controller or an unreachable broker
refresh the metadata and retry. Every retry is the one RetryPolicy (client/_retry.py): a
``retry_backoff_ms`` back-off until the call's timeout (by default ``request_timeout_ms``),
then RequestTimedOutError naming the last problem. Before any broker has answered, bootstrap
servers that all refuse connections fail the call at once with BrokersUnreachableError
(client/_bootstrap.py).

Thread-safe: the cached metadata is guarded by ``_lock``; gRPC channels are shareable.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import grpc

from minikafka.client._bootstrap import ask_any_broker
from minikafka.client._channel import RETRIABLE_STATUS, ChannelPool, parse_bootstrap_servers
from minikafka.client._retry import RetryLater, RetryPolicy
from minikafka.client._security import ClientSecurity
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.common import Node
from minikafka.proto.errors import ErrorCode, KafkaError, RequestTimedOutError, error_for_code

R = TypeVar("R")
K = TypeVar("K")
V = TypeVar("V")


def raise_first(results: Mapping[K, KafkaError | None]) -> None:
    """Raise the first error of a per-item result map, if there is one."""
    for error in results.values():
        if error is not None:
            raise error


def _error(code: int, message: str) -> KafkaError | None:
    return None if code == ErrorCode.NONE else error_for_code(code, message)


class _NotController(Exception):
    """The request reached a broker that is not (or no longer) the controller: find it again."""


@dataclass
class _Metadata:
    brokers: dict[int, Node]
    controller_id: int
    cluster_id: str


class AdminBase:
    """The connection, the cached metadata and the routing every part of AdminClient uses."""

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str],
        *,
        request_timeout_ms: int = 30_000,
        retry_backoff_ms: int = 100,
        security: ClientSecurity | Mapping[str, str] | None = None,
        client_id: str = "minikafka-admin",
    ) -> None:
        self._bootstrap = parse_bootstrap_servers(bootstrap_servers)
        self.request_timeout_ms = request_timeout_ms
        self.client_id = client_id
        self._retry = RetryPolicy(backoff_s=retry_backoff_ms / 1000)
        self._pool = ChannelPool(ClientSecurity.of(security), client_id)
        self._lock = threading.Lock()
        self._cached: _Metadata | None = None

    def close(self) -> None:
        self._pool.close()

    def _timeout(self, timeout_ms: int | None) -> int:
        return self.request_timeout_ms if timeout_ms is None else timeout_ms

    def _per_item(
        self,
        what: str,
        pending: dict[K, V],
        send: Callable[[pb_grpc.AdminStub, float], R],
        items_of: Callable[[R], Iterable[tuple[K, int, str]]],
        timeout_ms: int,
    ) -> dict[K, KafkaError | None]:
        """Send to the controller; items answered NOT_CONTROLLER are sent again, alone."""
        results: dict[K, KafkaError | None] = {}
        if not pending:
            return results

        def attempt(stub: pb_grpc.AdminStub, timeout_s: float) -> None:
            for key, code, message in items_of(send(stub, timeout_s)):
                if code == ErrorCode.NOT_CONTROLLER or key not in pending:
                    continue
                results[key] = _error(code, message)
                del pending[key]
            if pending:
                raise _NotController()

        self._to_controller(what, attempt, timeout_ms)
        return results

    def _to_controller(
        self, what: str, send: Callable[[pb_grpc.AdminStub, float], R], timeout_ms: int
    ) -> R:
        deadline = time.monotonic() + timeout_ms / 1000
        refresh = False  # the cached metadata first; after a failure, ask again

        def attempt() -> R:
            nonlocal refresh
            refresh_now, refresh = refresh, True
            try:
                metadata = self._cluster(refresh_now, max(deadline - time.monotonic(), 0.001))
                node = metadata.brokers.get(metadata.controller_id)
                if node is None:
                    raise RetryLater("no controller is known (an election may be running)")
                stub = pb_grpc.AdminStub(self._pool.get(node.address))
                return send(stub, max(deadline - time.monotonic(), 0.001))
            except _NotController:
                problem = f"broker {metadata.controller_id} is no longer the controller"
            except grpc.RpcError as exc:
                problem = _rpc_problem(exc)
            except RequestTimedOutError as exc:
                problem = exc.message
            raise RetryLater(problem)

        return self._retry.call(attempt, deadline=deadline, timed_out=_timed_out(what, timeout_ms))

    def _to_any_broker(
        self, what: str, send: Callable[[str, float], R], timeout_ms: int | None
    ) -> R:
        """``send(address, timeout_s)`` to each known broker in turn until one answers."""
        timeout_ms = self._timeout(timeout_ms)
        deadline = time.monotonic() + timeout_ms / 1000

        def ask(address: str) -> R:
            return send(address, max(deadline - time.monotonic(), 0.001))

        def attempt() -> R:
            with self._lock:
                known = [n.address for n in self._cached.brokers.values()] if self._cached else []
            try:
                return ask_any_broker(known, self._bootstrap, ask, deadline=deadline)
            except grpc.RpcError as exc:  # not one a retry may fix
                raise _rpc_error(exc) from None

        return self._retry.call(attempt, deadline=deadline, timed_out=_timed_out(what, timeout_ms))

    def _metadata(self, topics: Sequence[str], timeout_ms: int | None) -> pb.MetadataResponse:
        """A Metadata answer from any broker; no topics named = every topic."""
        request = pb.MetadataRequest(
            topics=[pb.MetadataRequest.MetadataRequestTopic(name=t) for t in topics]
        )

        def send(address: str, timeout_s: float) -> pb.MetadataResponse:
            stub = pb_grpc.MetadataStub(self._pool.get(address))
            return stub.Metadata(request, timeout=timeout_s)

        response = self._to_any_broker("metadata", send, timeout_ms)
        self._remember(_Metadata(_nodes(response), response.controller_id, response.cluster_id))
        return response

    def _describe_cluster(self, timeout_ms: int | None) -> _Metadata:
        """Brokers and controller from DescribeCluster (no topics), from any broker."""

        def send(address: str, timeout_s: float) -> pb.DescribeClusterResponse:
            stub = pb_grpc.MetadataStub(self._pool.get(address))
            return stub.DescribeCluster(pb.DescribeClusterRequest(), timeout=timeout_s)

        response = self._to_any_broker("describeCluster", send, timeout_ms)
        error = _error(response.error_code, response.error_message)
        if error is not None:
            raise error
        nodes = {
            b.broker_id: Node(b.broker_id, b.host, b.port, b.rack if b.HasField("rack") else None)
            for b in response.brokers
        }
        metadata = _Metadata(nodes, response.controller_id, response.cluster_id)
        self._remember(metadata)
        return metadata

    def _cluster(self, refresh: bool, timeout_s: float) -> _Metadata:
        with self._lock:
            cached = self._cached
        if cached is None or refresh:
            cached = self._describe_cluster(max(int(timeout_s * 1000), 1))
        return cached

    def _remember(self, metadata: _Metadata) -> None:
        with self._lock:
            self._cached = metadata


def _timed_out(what: str, timeout_ms: int) -> Callable[[RetryLater], Exception]:
    """The error an admin call raises when its retries run out of time, naming the last problem."""

    def error(last: RetryLater) -> Exception:
        return RequestTimedOutError(f"call {what} timed out after {timeout_ms} ms ({last})")

    return error


def _nodes(response: pb.MetadataResponse) -> dict[int, Node]:
    return {
        b.node_id: Node(b.node_id, b.host, b.port, b.rack if b.HasField("rack") else None)
        for b in response.brokers
    }


def _rpc_problem(exc: grpc.RpcError) -> str:
    """A retriable gRPC failure as the problem a timeout error names; any other is raised as
    a Kafka error (retrying will not fix it)."""
    if exc.code() not in RETRIABLE_STATUS:
        raise _rpc_error(exc) from None
    return f"{exc.code().name}: {exc.details()}"


def _rpc_error(exc: grpc.RpcError) -> KafkaError:
    """A gRPC failure that retrying will not fix, as a Kafka error."""
    code = exc.code()
    if code == grpc.StatusCode.UNIMPLEMENTED:
        return error_for_code(ErrorCode.UNSUPPORTED_VERSION, f"not served: {exc.details()}")
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        return error_for_code(ErrorCode.INVALID_REQUEST, str(exc.details()))
    return error_for_code(ErrorCode.UNKNOWN_SERVER_ERROR, f"{code.name}: {exc.details()}")
