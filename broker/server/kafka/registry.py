"""API key -> handler: what this broker answers on its Kafka listeners, and in which versions.

A handler is one module in ``handlers/`` per API (Redpanda's shape): it declares the API key,
the versions it serves and an async ``handle``. ApiVersions answers exactly this table, so a
client never negotiates an API or a version that is not here.

    @registry.handler(api_key=3, min_version=1, max_version=12)
    async def metadata(request: Request, broker: KafkaBroker) -> Entity: ...

``handle`` gets the decoded kio request and returns the kio response of the same version
(``request.response(values)`` builds it), or None when Kafka sends no response (a Produce with
acks=0). A ``pipelined`` handler is called at once, in arrival order, and returns an awaitable:
its synchronous part (the produce's append) runs before the next request is read, and its wait
(for the ISR) runs while later requests are read, as the gRPC ProduceStream does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from minikafka.broker.security.principal import ANONYMOUS, Session
from minikafka.broker.server.kafka.schema import Entity, build, response_class

if TYPE_CHECKING:
    from minikafka.broker.server.kafka.broker import KafkaBroker

__all__ = ["HANDLERS", "CloseConnection", "Handler", "Request", "handler", "supported_api_keys"]


class CloseConnection(Exception):
    """Raised by a handler, or by the answer it returned, to close the connection once the
    answers before it are out, as Kafka does after a failed acks=0 produce (the client then
    refreshes its metadata); ``reason`` and ``details`` go to the log line."""

    def __init__(self, reason: str, **details: object) -> None:
        super().__init__(reason)
        self.reason = reason
        self.details = details


_UNKNOWN_SESSION = Session(ANONYMOUS, "")


def _not_throttled(throttle_ms: int) -> None:
    """Requests built in tests have no connection to mute."""


@dataclass(frozen=True)
class Request:
    """One decoded request and where it came from."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    client_host: str
    client_port: int
    listener: str  # the Kafka listener's name: Metadata answers endpoints on it
    body: Entity
    # Who the request is made as (the core's authorizer asks about it); the connection always
    # sets it, the default serves requests built in tests.
    session: Session = _UNKNOWN_SESSION
    size: int = 0  # the request's bytes on the wire (producer_byte_rate counts them)
    # ``throttle(ms)``: a client quota throttles the client; the connection reads nothing
    # more from it for that long (KIP-219's muting). Answers carry ``throttle_time_ms``.
    throttle: Callable[[int], None] = _not_throttled

    def response(self, values: dict[str, Any]) -> Entity:
        return build(response_class(self.api_key, self.api_version), values)


HandleFn = Callable[[Request, "KafkaBroker"], Awaitable[Entity | None]]
PipelinedFn = Callable[[Request, "KafkaBroker"], Awaitable[Entity | None]]


@dataclass(frozen=True)
class Handler:
    api_key: int
    name: str
    min_version: int
    max_version: int
    handle: HandleFn
    pipelined: bool = False


HANDLERS: dict[int, Handler] = {}


def supported_api_keys() -> list[dict[str, Any]]:
    """What ApiVersions answers: every registered API and its version range."""
    return [
        {"api_key": h.api_key, "min_version": h.min_version, "max_version": h.max_version}
        for h in sorted(HANDLERS.values(), key=lambda h: h.api_key)
    ]


def handler(
    *, api_key: int, min_version: int, max_version: int, pipelined: bool = False
) -> Callable[[HandleFn], HandleFn]:
    """Register ``fn`` as the handler of ``api_key`` in ``[min_version, max_version]``.

    A pipelined handler is a plain function returning an awaitable: everything before its
    first await must be what has to happen in arrival order.
    """

    def register(fn: HandleFn) -> HandleFn:
        if api_key in HANDLERS:
            raise ValueError(f"API key {api_key} has two handlers")
        HANDLERS[api_key] = Handler(
            api_key, fn.__name__, min_version, max_version, fn, pipelined=pipelined
        )
        return fn

    return register
