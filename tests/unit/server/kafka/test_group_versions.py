"""FindCoordinator and OffsetFetch answer every version they serve. Their newest versions batch
(coordinators by key, groups by id); older ones answer the one key or group at the top level,
which carries no ``key`` or ``group_id`` (schema.build refuses a field of no version)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from minikafka.broker.server.kafka.handlers.group_offsets import offset_fetch
from minikafka.broker.server.kafka.handlers.groups import find_coordinator
from minikafka.broker.server.kafka.registry import HandleFn, Request
from minikafka.broker.server.kafka.schema import Entity, build, request_class
from minikafka.proto.errors import ErrorCode

_FIND_COORDINATOR = 10
_OFFSET_FETCH = 9
_NO_COORDINATOR: Any = SimpleNamespace(groups=None)  # a broker without a group coordinator


def _request(api_key: int, version: int, values: dict[str, Any]) -> Request:
    body = build(request_class(api_key, version), values)
    return Request(api_key, version, 1, "c", "127.0.0.1", 5000, "KAFKA", body)


def _answer(handle: HandleFn, request: Request) -> Entity:
    async def answer_of() -> Entity:  # the handler's registered type is an Awaitable
        return await handle(request, _NO_COORDINATOR)

    return asyncio.run(answer_of())


@pytest.mark.parametrize("version", range(7))
def test_find_coordinator_answers_every_version(version: int) -> None:
    values = {"coordinator_keys": ["g"]} if version >= 4 else {"key": "g", "key_type": 0}

    answer = _answer(find_coordinator, _request(_FIND_COORDINATOR, version, values))

    (found,) = answer.coordinators if version >= 4 else [answer]
    assert int(found.error_code) == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert found.node_id == -1
    if version >= 4:
        assert found.key == "g"


@pytest.mark.parametrize("version", range(1, 10))
def test_offset_fetch_answers_every_version(version: int) -> None:
    topics = [{"name": "t", "partition_indexes": [0]}]
    values: dict[str, Any] = (
        {"groups": [{"group_id": "g", "topics": topics}]}
        if version >= 8
        else {"group_id": "g", "topics": topics}
    )

    answer = _answer(offset_fetch, _request(_OFFSET_FETCH, version, values))

    if version >= 8:
        (group,) = answer.groups
        assert group.group_id == "g"
        assert int(group.error_code) == ErrorCode.COORDINATOR_NOT_AVAILABLE
    elif version >= 2:
        assert int(answer.error_code) == ErrorCode.COORDINATOR_NOT_AVAILABLE
    else:  # v1: no group-level error, each partition carries it
        (partition,) = answer.topics[0].partitions
        assert int(partition.error_code) == ErrorCode.COORDINATOR_NOT_AVAILABLE
