"""``GrpcLeaderEndpoint``: a follower's leader over the gRPC Data service (``FetchStream`` and
``OffsetsForLeaderEpoch``), when inter.broker.listener.name names a gRPC listener.

It implements replication's ``LeaderEndpoint`` (broker/replication/leader_endpoint.py) from the
gRPC door, as the Kafka-protocol endpoint (broker/server/kafka/leader_endpoint.py) does from the
Kafka door; BrokerServer hands the ReplicaManager a ``factory`` of one or the other. It adapts
the fetcher's plain values to the protobuf messages and back (grpc_adapters.py, which the
leader's DataService reads and writes them with), and every failure of the call to
``LeaderEndpointError`` with the gRPC status name as its code.

Not thread-safe: the fetcher's task on the broker's event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import grpc

from minikafka.broker.replication.fetch_session import FetchSessionResponse
from minikafka.broker.replication.leader_endpoint import (
    DEADLINE_EXCEEDED,
    UNAVAILABLE,
    LeaderEndpointError,
)
from minikafka.broker.replication.requests import (
    EpochEndOffset,
    FetchRequest,
    OffsetsForLeaderEpochRequest,
)
from minikafka.broker.server.grpc_adapters import (
    fetch_request_message,
    fetch_response_values,
    offsets_for_leader_epoch_request_message,
    offsets_for_leader_epoch_response_values,
)
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto import transport
from minikafka.proto.errors import KafkaError
from minikafka.proto.sasl_channel import SaslCredentials, aio_sasl_channel

__all__ = ["GrpcLeaderEndpoint", "factory"]


class GrpcLeaderEndpoint:
    """A leader broker over one grpc.aio channel. Fetches go over one ``FetchStream``, opened
    on first use and again after it fails: a stream costs both brokers much less per fetch than
    a call per fetch, and a follower has one fetch at a time anyway."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        timeout_s: float,
        max_message_bytes: int,
        sasl: SaslCredentials | None = None,
        credentials: grpc.ChannelCredentials | None = None,
    ) -> None:
        """``sasl``: this broker's own login, on a SASL_* inter-broker listener;
        ``credentials``: TLS, when the leader's inter-broker listener is SSL or SASL_SSL."""
        self.address = f"{host}:{port}"
        self._timeout_s = timeout_s
        # A connection of its own, as each of Kafka's fetcher threads has: the follower's
        # fetchers (num.replica.fetchers) move data side by side rather than share one
        # HTTP/2 connection with each other and with the broker's other channels.
        options = [("grpc.use_local_subchannel_pool", 1)]
        # On a SASL_* inter-broker listener the fetches carry this broker's own login.
        self._channel = (
            transport.aio_channel(self.address, max_message_bytes, options, credentials)
            if sasl is None
            else aio_sasl_channel(self.address, max_message_bytes, sasl, options, credentials)
        )
        self._stub = pb_grpc.DataStub(self._channel)
        self._fetches: grpc.aio.StreamStreamCall[pb.FetchRequest, pb.FetchResponse] | None = None
        self._one_fetch = asyncio.Lock()

    async def fetch(self, request: FetchRequest) -> FetchSessionResponse:
        return fetch_response_values(await self._fetch(fetch_request_message(request)))

    async def _fetch(self, request: pb.FetchRequest) -> pb.FetchResponse:
        """One fetch; raises ``LeaderEndpointError`` if the stream fails or the answer takes
        longer than the timeout plus the request's max wait (the stream is then dropped).

        The write and the read are awaited in this task, the deadline a timer that cancels the
        call (a stream's read ends only when its call does, so cancelling the task would not
        end it): no task and no ``asyncio.wait`` per fetch, whose extra turns of the loop sat
        between a follower's append and the fetch that reports its new LEO to the leader.
        """
        timeout = self._timeout_s + request.max_wait_ms / 1000
        async with self._one_fetch:  # answers are matched to requests by order alone
            if self._fetches is None:
                self._fetches = self._stub.FetchStream()
            call = self._fetches
            expired = False

            def expire() -> None:
                nonlocal expired
                expired = True
                call.cancel()

            deadline = asyncio.get_running_loop().call_later(timeout, expire)
            try:
                try:
                    await call.write(request)
                    response = await call.read()
                except asyncio.CancelledError:
                    task = asyncio.current_task()
                    if not expired or (task is not None and task.cancelling()):
                        raise
                    raise LeaderEndpointError(
                        DEADLINE_EXCEEDED, f"no answer to a fetch within {timeout} s"
                    ) from None
                finally:
                    deadline.cancel()
                if expired:
                    raise LeaderEndpointError(
                        DEADLINE_EXCEEDED, f"no answer to a fetch within {timeout} s"
                    )
                if not isinstance(response, pb.FetchResponse):  # grpc.aio.EOF
                    code = await call.code()
                    if code == grpc.StatusCode.OK:
                        code = grpc.StatusCode.UNAVAILABLE
                    raise LeaderEndpointError(
                        code.name, await call.details() or "the leader ended the stream"
                    )
                return response
            except BaseException as exc:
                self._fetches = None
                call.cancel()
                if isinstance(exc, grpc.aio.AioRpcError):
                    raise LeaderEndpointError(exc.code().name, exc.details() or "") from exc
                if isinstance(exc, Exception) and not isinstance(exc, LeaderEndpointError):
                    # a write to, or a read from, a stream that has just ended
                    raise LeaderEndpointError(UNAVAILABLE, str(exc)) from exc
                raise

    async def offsets_for_leader_epoch(
        self, request: OffsetsForLeaderEpochRequest
    ) -> list[EpochEndOffset]:
        message = offsets_for_leader_epoch_request_message(request)
        try:
            response = await self._stub.OffsetsForLeaderEpoch(message, timeout=self._timeout_s)
        except grpc.aio.AioRpcError as exc:
            raise LeaderEndpointError(exc.code().name, exc.details() or "") from exc
        except KafkaError as exc:  # the leader refused this broker's SASL login
            raise LeaderEndpointError(exc.code.name, exc.message) from exc
        return offsets_for_leader_epoch_response_values(response)

    async def close(self) -> None:
        if self._fetches is not None:
            self._fetches.cancel()
            self._fetches = None
        await self._channel.close()


def factory(
    *,
    timeout_s: float,
    max_message_bytes: int,
    sasl: SaslCredentials | None = None,
    credentials: grpc.ChannelCredentials | None = None,
) -> Callable[[str, int], GrpcLeaderEndpoint]:
    """A ``LeaderEndpointFactory`` (the ReplicaManager's) of these endpoints."""

    def make(host: str, port: int) -> GrpcLeaderEndpoint:
        return GrpcLeaderEndpoint(
            host,
            port,
            timeout_s=timeout_s,
            max_message_bytes=max_message_bytes,
            sasl=sasl,
            credentials=credentials,
        )

    return make
