"""ApiVersions (key 18), v0-4: the APIs and version ranges of the registry, nothing more.

v4 differs from v3 only in what a broker may say of its features (KAFKA-17011); none are
advertised here (``supported_features`` and ``finalized_features`` stay empty)."""

from __future__ import annotations

from minikafka.broker.server.kafka.broker import KafkaBroker
from minikafka.broker.server.kafka.registry import Request, handler, supported_api_keys
from minikafka.broker.server.kafka.schema import Entity


@handler(api_key=18, min_version=0, max_version=4)
async def api_versions(request: Request, broker: KafkaBroker) -> Entity:
    return request.response({"error_code": 0, "api_keys": supported_api_keys()})
