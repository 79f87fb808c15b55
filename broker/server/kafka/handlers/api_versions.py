"""ApiVersions (key 18): the APIs and version ranges of the registry, nothing more."""

from __future__ import annotations

from typing import Any

from minikafka.broker.server.kafka.broker import KafkaBroker
from minikafka.broker.server.kafka.registry import HANDLERS, Request, handler
from minikafka.broker.server.kafka.schema import Entity


def supported_api_keys() -> list[dict[str, Any]]:
    return [
        {"api_key": h.api_key, "min_version": h.min_version, "max_version": h.max_version}
        for h in sorted(HANDLERS.values(), key=lambda h: h.api_key)
    ]


@handler(api_key=18, min_version=0, max_version=3)
async def api_versions(request: Request, broker: KafkaBroker) -> Entity:
    return request.response({"error_code": 0, "api_keys": supported_api_keys()})
