"""FindCoordinator answers every version it serves: v4 batches the keys, v0-3 answer the one
key's coordinator at the top level (which carries no ``key``: schema.build refuses one)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from minikafka.broker.server.kafka.handlers.groups import find_coordinator
from minikafka.broker.server.kafka.registry import Request
from minikafka.broker.server.kafka.schema import build, request_class
from minikafka.proto.errors import ErrorCode

_FIND_COORDINATOR = 10


@pytest.mark.parametrize("version", range(5))
def test_every_version_answers_a_broker_without_a_coordinator(version: int) -> None:
    values: dict[str, Any] = (
        {"coordinator_keys": ["g"]} if version >= 4 else {"key": "g", "key_type": 0}
    )
    body = build(request_class(_FIND_COORDINATOR, version), values)
    request = Request(_FIND_COORDINATOR, version, 1, "c", "127.0.0.1", 5000, "KAFKA", body)
    broker: Any = SimpleNamespace(groups=None)  # no group coordinator on this broker

    answer = asyncio.run(find_coordinator(request, broker))

    (found,) = answer.coordinators if version >= 4 else [answer]
    assert int(found.error_code) == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert found.node_id == -1
    if version >= 4:
        assert found.key == "g"
