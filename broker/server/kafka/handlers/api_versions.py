"""ApiVersions (key 18): the APIs and version ranges of the registry, nothing more."""

from __future__ import annotations

from minikafka.broker.server.kafka.broker import KafkaBroker
from minikafka.broker.server.kafka.registry import Request, handler, supported_api_keys
from minikafka.broker.server.kafka.schema import Entity


@handler(api_key=18, min_version=0, max_version=3)
async def api_versions(request: Request, broker: KafkaBroker) -> Entity:
    return request.response({"error_code": 0, "api_keys": supported_api_keys()})
