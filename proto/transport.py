"""Every gRPC channel and server of the project, made here with message limits that fit.

gRPC refuses a message above its receive limit (4 MiB unless set) with RESOURCE_EXHAUSTED and
ends the stream it came on: a follower whose fetch answer outgrew the limit lost its fetch
stream and fell out of the ISR. So no module calls ``grpc.insecure_channel`` or
``grpc.aio.server`` itself (a test checks it); each asks here with the largest message its
side may carry, which the broker derives from its config (``BrokerConfig.grpc_max_message_bytes``:
``socket.request.max.bytes``, ``fetch.max.bytes``, ``replica.fetch.response.max.bytes``,
``message.max.bytes``) and the client from its own. ``ENVELOPE_BYTES`` is added for what a
message carries besides the records: topic names, offsets and errors for every partition.

A request body that does not parse as its protobuf message (random bytes) is answered
INVALID_ARGUMENT with the parser's message (``RequestDecodingInterceptor``, the outermost
interceptor of every server made here), not grpc's UNKNOWN for an exception it did not expect.
The RawData methods, whose records travel outside protobuf (raw_records.py), check their framing
in the servicer and answer a message off it the same way.

A client names itself as a Kafka client's ``client.id`` does (quotas and logs go by it) in each
call's metadata: ``client-id`` when it is printable ASCII, else ``client-id-bin`` with its UTF-8
bytes (gRPC carries only ASCII in a text header). ``client_id_metadata`` makes that pair and
``client_id_of`` reads it back on the broker.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeAlias

import grpc
from google.protobuf.message import DecodeError

__all__ = [
    "CLIENT_ID_KEY",
    "ENVELOPE_BYTES",
    "RequestDecodingInterceptor",
    "aio_channel",
    "aio_server",
    "channel",
    "client_id_metadata",
    "client_id_of",
    "message_options",
]

# Room for the fields around the record bytes: about 100 bytes per partition in a fetch answer,
# so 1 MiB covers ten thousand partitions.
ENVELOPE_BYTES = 1 << 20
# gRPC's limits are signed 32-bit ints.
_MAX_LIMIT = 2**31 - 1
CLIENT_ID_KEY = "client-id"
_CLIENT_ID_BIN_KEY = "client-id-bin"


def client_id_metadata(client_id: str) -> tuple[str, str | bytes]:
    """The call metadata entry that names the client (module docstring).

    >>> client_id_metadata("app-1")
    ('client-id', 'app-1')
    >>> client_id_metadata("café")
    ('client-id-bin', b'caf\\xc3\\xa9')
    """
    if client_id.isascii() and client_id.isprintable():
        return CLIENT_ID_KEY, client_id
    return _CLIENT_ID_BIN_KEY, client_id.encode("utf-8")


def client_id_of(metadata: Iterable[tuple[str, str | bytes]] | None) -> str:
    """The client's id from a call's metadata; "" when it sent none."""
    for key, value in metadata or ():
        if key in (CLIENT_ID_KEY, _CLIENT_ID_BIN_KEY):
            return value if isinstance(value, str) else value.decode("utf-8", "replace")
    return ""


Options = Sequence[tuple[str, Any]]


def message_options(max_message_bytes: int) -> list[tuple[str, Any]]:
    """Send and receive limits for messages of up to ``max_message_bytes`` of payload."""
    if max_message_bytes < 1:
        raise ValueError(f"max_message_bytes must be positive, not {max_message_bytes}")
    limit = min(max_message_bytes + ENVELOPE_BYTES, _MAX_LIMIT)
    return [
        ("grpc.max_send_message_length", limit),
        ("grpc.max_receive_message_length", limit),
    ]


def channel(
    address: str,
    max_message_bytes: int,
    options: Options = (),
    credentials: grpc.ChannelCredentials | None = None,
) -> grpc.Channel:
    """A blocking-stub channel (the client, the controller's channels to brokers); TLS when
    ``credentials`` are given (an SSL or SASL_SSL listener), plaintext otherwise."""
    all_options = [*message_options(max_message_bytes), *options]
    if credentials is not None:
        return grpc.secure_channel(address, credentials, options=all_options)
    return grpc.insecure_channel(address, options=all_options)


def aio_channel(
    address: str,
    max_message_bytes: int,
    options: Options = (),
    credentials: grpc.ChannelCredentials | None = None,
    interceptors: Sequence[grpc.aio.ClientInterceptor] = (),
) -> grpc.aio.Channel:
    """An asyncio channel (a follower's to its leader, the broker's own calls)."""
    all_options = [*message_options(max_message_bytes), *options]
    if credentials is not None:
        return grpc.aio.secure_channel(
            address, credentials, options=all_options, interceptors=interceptors
        )
    return grpc.aio.insecure_channel(address, options=all_options, interceptors=interceptors)


def aio_server(
    max_message_bytes: int,
    options: Options = (),
    interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
) -> grpc.aio.Server:
    """The broker's asyncio server; ``interceptors`` run inside RequestDecodingInterceptor."""
    return grpc.aio.server(
        options=[*message_options(max_message_bytes), *options],
        interceptors=[RequestDecodingInterceptor(), *interceptors],
    )


_Handler: TypeAlias = "grpc.RpcMethodHandler[Any, Any]"


class RequestDecodingInterceptor(grpc.aio.ServerInterceptor):
    """Answers a unary request that does not parse with INVALID_ARGUMENT and the parser's
    message. grpc.aio parses the body before the servicer runs and reports any exception there
    as UNKNOWN ("Unexpected <class DecodeError>"), so the handler is given the raw bytes and
    parses them itself, where it can abort with the right status.

    Streamed requests are parsed as the servicer reads them (``async for``), so the servicer
    catches DecodeError there: wrapping every message of a stream here would cost the
    Produce and Fetch streams their throughput (see broker/server/metrics.py). One wrapped
    handler per handler the interceptors inside return (by path, that is, except where one
    answers a path with another handler: the SASL interceptor's refusals), made on its first
    call; grpc's loop is the only caller.
    """

    def __init__(self) -> None:
        # keyed by the handler, not the path: the handler inside may differ call by call
        self._handlers: dict[_Handler, _Handler] = {}

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[_Handler | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> _Handler | None:
        handler = await continuation(handler_call_details)
        if handler is None or handler.request_streaming or handler.response_streaming:
            return handler
        wrapped = self._handlers.get(handler)
        if wrapped is None:
            wrapped = self._handlers[handler] = _parse_in_handler(handler)
        return wrapped


def _parse_in_handler(handler: _Handler) -> _Handler:
    # grpc's stubs type the behaviour for the synchronous server; this one is grpc.aio's.
    unary: Callable[[Any, Any], Any] | None = handler.unary_unary
    parse = handler.request_deserializer
    if unary is None or parse is None:
        return handler

    async def parsed_unary(raw: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        try:
            request = parse(raw)
        except DecodeError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"request body: {exc}")
        answer = unary(request, context)
        return await answer if inspect.isawaitable(answer) else answer

    return grpc.unary_unary_rpc_method_handler(
        parsed_unary, request_deserializer=None, response_serializer=handler.response_serializer
    )
