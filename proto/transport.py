"""Every gRPC channel and server of the project, made here with message limits that fit.

gRPC refuses a message above its receive limit (4 MiB unless set) with RESOURCE_EXHAUSTED and
ends the stream it came on: a follower whose fetch answer outgrew the limit lost its fetch
stream and fell out of the ISR. So no module calls ``grpc.insecure_channel`` or
``grpc.aio.server`` itself (a test checks it); each asks here with the largest message its
side may carry, which the broker derives from its config (``BrokerConfig.grpc_max_message_bytes``:
``socket.request.max.bytes``, ``fetch.max.bytes``, ``replica.fetch.response.max.bytes``,
``message.max.bytes``) and the client from its own. ``ENVELOPE_BYTES`` is added for what a
message carries besides the records: topic names, offsets and errors for every partition.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import grpc

__all__ = [
    "ENVELOPE_BYTES",
    "aio_channel",
    "aio_server",
    "channel",
    "message_options",
]

# Room for the fields around the record bytes: about 100 bytes per partition in a fetch answer,
# so 1 MiB covers ten thousand partitions.
ENVELOPE_BYTES = 1 << 20
# gRPC's limits are signed 32-bit ints.
_MAX_LIMIT = 2**31 - 1

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


def channel(address: str, max_message_bytes: int, options: Options = ()) -> grpc.Channel:
    """A blocking-stub channel (the client, the controller's channels to brokers)."""
    return grpc.insecure_channel(address, options=[*message_options(max_message_bytes), *options])


def aio_channel(address: str, max_message_bytes: int, options: Options = ()) -> grpc.aio.Channel:
    """An asyncio channel (a follower's to its leader, the broker's own calls)."""
    return grpc.aio.insecure_channel(
        address, options=[*message_options(max_message_bytes), *options]
    )


def aio_server(
    max_message_bytes: int,
    options: Options = (),
    interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
) -> grpc.aio.Server:
    """The broker's asyncio server."""
    return grpc.aio.server(
        options=[*message_options(max_message_bytes), *options],
        interceptors=list(interceptors) or None,
    )
