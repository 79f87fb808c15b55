"""The Data RPC family: Produce, Fetch, ListOffsets, OffsetsForLeaderEpoch, InitProducerId. A thin
gRPC face on the core, which does the work and answers with Kafka's error codes: Fetch is the
core's ``FetchApi`` (broker/server/core/fetch.py), the rest its ``DataApi``
(broker/server/core/data.py), which the Kafka door's handlers call too; each call carries the
call's Session (``grpc_session``), which the core asks the authorizer about. grpc_adapters.py
turns the messages into the core's values and back (the follower's GrpcLeaderEndpoint writes and
reads Fetch and OffsetsForLeaderEpoch with the same module). Runs on the broker's event loop
(grpc.aio).

Produce and Fetch also come as streams (``ProduceStream``, ``FetchStream``; the proto says how
they are answered). A produce stream appends each request as soon as it is read, while earlier
ones may still wait for their ISR, so a producer can keep several requests in flight. Each
message on a stream is one request for the request metrics (broker/server/metrics.py), timed
from when it is read to when its answer is handed to gRPC; the unary calls are timed by the
metrics' interceptor.

Client quotas (broker/server/quotas.py), as on the Kafka door: a produce counts its message's
bytes, a consumer's fetch its records' bytes, per the call's user and ``client-id`` metadata;
over the quota the answer carries ``throttle_time_ms`` (a fetch's without records) and a
stream reads its next request only after that long (KIP-219's muting). The unary calls only
report it.

``raw_data_handler`` serves the RawData methods (proto/raw_records.py: the same messages with
the records framed after a small header instead of inside protobuf) from the same servicer, so
both framings take the same path into the core, the same Session and the same quotas. A raw
message that does not follow the framing is answered INVALID_ARGUMENT, and nothing of it is
appended.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any

import grpc
from google.protobuf.message import DecodeError

from minikafka.broker.replication.fetch_session import FetchSessionResponse
from minikafka.broker.replication.producer_id_manager import ProducerIdManager
from minikafka.broker.replication.replica_manager import ProduceStatuses, ReplicaManager
from minikafka.broker.replication.requests import FetchedRecords, ProduceRequest
from minikafka.broker.server import grpc_adapters as adapt
from minikafka.broker.server.core.data import DataApi
from minikafka.broker.server.core.fetch import FetchApi
from minikafka.broker.server.grpc_session import grpc_session
from minikafka.broker.server.metrics import RequestMetrics
from minikafka.broker.server.quotas import ClientQuotaManager, QuotaType, quota_user
from minikafka.broker.storage.segment import FileRecords
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto import raw_records, transport
from minikafka.proto.raw_records import FrameError

__all__ = ["DataService", "raw_data_handler"]

_Context = grpc.aio.ServicerContext[Any, Any]
# How a stream's produce message is read: the core's request and the message's size in bytes
# (what a produce quota counts).
_ReadProduce = Callable[[Any], tuple[ProduceRequest, int]]
# How a fetch answer (and its throttle time) is written for the wire.
_WriteFetch = Callable[[FetchSessionResponse, int], Any]


def _read_produce_message(message: pb.ProduceRequest) -> tuple[ProduceRequest, int]:
    return adapt.produce_request(message), message.ByteSize()


def _read_raw_produce(message: bytes) -> tuple[ProduceRequest, int]:
    return adapt.raw_produce_request(raw_records.decode_produce_request(message)), len(message)


def _fetch_message(answer: FetchSessionResponse, throttle_ms: int) -> pb.FetchResponse:
    response = adapt.fetch_response_message(answer)
    response.throttle_time_ms = throttle_ms
    return response


def _fetch_raw(answer: FetchSessionResponse, throttle_ms: int) -> bytes:
    raw = adapt.raw_fetch_response(answer)
    raw.header.throttle_time_ms = throttle_ms
    return raw_records.encode_fetch_response(raw)


class DataService(pb_grpc.DataServicer):
    """Records in and out, for clients and followers."""

    def __init__(
        self,
        replica_manager: ReplicaManager,
        fetches: FetchApi,
        *,
        producer_ids: ProducerIdManager,
        listener: str,
        metrics: RequestMetrics | None = None,
        data: DataApi | None = None,
        quotas: ClientQuotaManager | None = None,
    ) -> None:
        """``listener``: the name of the listener this servicer serves (a fetch from a replica
        is served on the inter-broker one only: ``FetchApi``). ``data``: the core's DataApi
        (None: one without an authorizer on ``replica_manager`` and ``producer_ids``)."""
        self._data = data or DataApi(replica_manager, producer_ids)
        self._fetches = fetches
        self._listener = listener
        self._metrics = metrics or RequestMetrics()
        self._quotas = quotas

    def _quota_client(self, context: _Context) -> tuple[str, str]:
        """(user, client-id) a quota is looked up for: the call's principal and its
        ``client-id`` metadata ("" when the client sends none)."""
        client_id = transport.client_id_of(context.invocation_metadata())
        return quota_user(grpc_session(context, self._listener)), client_id

    def _produce_throttle(self, size: int, context: _Context) -> int:
        quotas = self._quotas
        if quotas is None or not quotas.active:
            return 0
        user, client_id = self._quota_client(context)
        return quotas.record(QuotaType.PRODUCE, user, client_id, size)

    async def Produce(self, request: pb.ProduceRequest, context: _Context) -> pb.ProduceResponse:
        return await self._produce(adapt.produce_request(request), request.ByteSize(), context)

    async def _produce(
        self, request: ProduceRequest, size: int, context: _Context
    ) -> pb.ProduceResponse:
        results = await self._data.produce(request, grpc_session(context, self._listener))
        response = adapt.produce_response(results)
        response.throttle_time_ms = self._produce_throttle(size, context)
        return response

    async def Fetch(self, request: pb.FetchRequest, context: _Context) -> pb.FetchResponse:
        return _fetch_message(*await self._fetch(request, context))

    async def _fetch(
        self, request: pb.FetchRequest, context: _Context
    ) -> tuple[FetchSessionResponse, int]:
        """The core's answer and the throttle time the client's quota asks for."""
        answer = await self._fetches.fetch(
            adapt.fetch_request_values(request, self._listener),
            listener=self._listener,
            session=grpc_session(context, self._listener),
        )
        throttle_ms = 0
        quotas = self._quotas
        if request.replica_id < 0 and quotas is not None and quotas.active:
            # consumer_byte_rate, as the Kafka door: a throttled answer has no records and
            # its bytes are taken back (followers are not held by client quotas).
            size = sum(_records_size(p.records) for p in answer.partitions)
            user, client_id = self._quota_client(context)
            throttle_ms = quotas.record(QuotaType.FETCH, user, client_id, size)
            if throttle_ms:
                quotas.unrecord(QuotaType.FETCH, user, client_id, size)
                answer = answer._replace(
                    partitions=[replace(p, records=b"") for p in answer.partitions]
                )
        return answer, throttle_ms

    async def ProduceStream(
        self,
        requests: AsyncIterator[Any],
        context: _Context,
        *,
        read_request: _ReadProduce = _read_produce_message,
    ) -> AsyncIterator[pb.ProduceResponse]:
        """``read_request``: how a message is read (RawData's framing: ``raw_data_handler``);
        a parameter, not a wrapper, because grpc.aio must see an async generator function and
        one more generator per message costs a stream its throughput (metrics.py)."""
        data = self._data
        session = grpc_session(context, self._listener)  # one per stream
        metrics = self._metrics
        # The answers to come, in request order, with when each request was read; None after
        # the last request.
        answers: asyncio.Queue[tuple[asyncio.Future[pb.ProduceResponse], float] | None]
        answers = asyncio.Queue()

        async def read() -> None:
            try:
                async for message in requests:
                    started = time.perf_counter()
                    request, size = read_request(message)
                    statuses = data.append_to_leaders(request, session)  # in arrival order
                    throttle_ms = self._produce_throttle(size, context)
                    answers.put_nowait(
                        (
                            asyncio.ensure_future(_answer(data, request, statuses, throttle_ms)),
                            started,
                        )
                    )
                    if throttle_ms:  # KIP-219: the stream's next request waits that long
                        await asyncio.sleep(throttle_ms / 1000)
            finally:
                answers.put_nowait(None)

        reader = asyncio.ensure_future(read())
        try:
            while (item := await answers.get()) is not None:
                response = await item[0]
                metrics.observe("Produce", item[1])
                yield response
            try:
                await reader  # raises what ended the requests, if anything did
            except (DecodeError, FrameError) as exc:
                await _abort_undecodable(context, exc)
        finally:
            reader.cancel()
            while not answers.empty():  # the client is gone: nobody waits for these
                pending = answers.get_nowait()
                if pending is not None:
                    pending[0].cancel()

    async def FetchStream(
        self,
        requests: AsyncIterator[pb.FetchRequest],
        context: _Context,
        *,
        write: _WriteFetch = _fetch_message,
    ) -> AsyncIterator[Any]:
        """``write``: how an answer is written (RawData's framing: as ProduceStream's
        ``read_request``)."""
        metrics = self._metrics
        try:
            async for request in requests:
                started = time.perf_counter()
                answer, throttle_ms = await self._fetch(request, context)
                response = write(answer, throttle_ms)
                metrics.observe(
                    "FetchFollower" if request.replica_id >= 0 else "FetchConsumer", started
                )
                yield response
                if throttle_ms:  # KIP-219: the next request waits that long
                    await asyncio.sleep(throttle_ms / 1000)
        except DecodeError as exc:
            await _abort_undecodable(context, exc)

    # --- RawData (proto/raw_records.py): the same calls, records framed after a header ------

    async def RawProduce(self, message: bytes, context: _Context) -> pb.ProduceResponse:
        try:
            request, size = _read_raw_produce(message)
        except FrameError as exc:
            await _abort_undecodable(context, exc)
        return await self._produce(request, size, context)

    async def RawFetch(self, request: pb.FetchRequest, context: _Context) -> bytes:
        return _fetch_raw(*await self._fetch(request, context))

    async def ListOffsets(
        self, request: pb.ListOffsetsRequest, context: _Context
    ) -> pb.ListOffsetsResponse:
        results = await self._data.list_offsets(
            adapt.list_offsets_request(request), grpc_session(context, self._listener)
        )
        return adapt.list_offsets_response(request, results)

    async def OffsetsForLeaderEpoch(
        self, request: pb.OffsetsForLeaderEpochRequest, context: _Context
    ) -> pb.OffsetsForLeaderEpochResponse:
        results = await self._data.offsets_for_leader_epoch(
            adapt.offsets_for_leader_epoch_request_values(request),
            grpc_session(context, self._listener),
        )
        return adapt.offsets_for_leader_epoch_response_message(request, results)

    async def InitProducerId(
        self, request: pb.InitProducerIdRequest, context: _Context
    ) -> pb.InitProducerIdResponse:
        result = await self._data.init_producer_id(
            adapt.init_producer_id_request(request), grpc_session(context, self._listener)
        )
        return adapt.init_producer_id_response(result)


def raw_data_handler(service: DataService) -> grpc.GenericRpcHandler:
    """The RawData methods (proto/raw_records.py) of ``service``, for
    ``server.add_generic_rpc_handlers``: framed bytes in or out (no serializer), protobuf for
    what carries no records."""
    produce_answer = pb.ProduceResponse.SerializeToString
    fetch_request = pb.FetchRequest.FromString
    return grpc.method_handlers_generic_handler(
        raw_records.SERVICE,
        {
            "Produce": grpc.unary_unary_rpc_method_handler(
                service.RawProduce, response_serializer=produce_answer
            ),
            "ProduceStream": grpc.stream_stream_rpc_method_handler(
                functools.partial(service.ProduceStream, read_request=_read_raw_produce),
                response_serializer=produce_answer,
            ),
            "Fetch": grpc.unary_unary_rpc_method_handler(
                service.RawFetch, request_deserializer=fetch_request
            ),
            "FetchStream": grpc.stream_stream_rpc_method_handler(
                functools.partial(service.FetchStream, write=_fetch_raw),
                request_deserializer=fetch_request,
            ),
        },
    )


async def _answer(
    data: DataApi,
    request: ProduceRequest,
    statuses: ProduceStatuses,
    throttle_ms: int = 0,
) -> pb.ProduceResponse:
    response = adapt.produce_response(await data.produce_response(request, statuses))
    response.throttle_time_ms = throttle_ms
    return response


def _records_size(records: FetchedRecords) -> int:
    return records.size if isinstance(records, FileRecords) else len(records)


async def _abort_undecodable(context: _Context, error: DecodeError | FrameError) -> None:
    """A streamed request that does not parse, or a raw one that does not follow the framing:
    INVALID_ARGUMENT, as a unary one gets from proto/transport.py's RequestDecodingInterceptor
    (grpc would answer UNKNOWN)."""
    await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"request body: {error}")
