"""ClusterMetadata's refresh back-off (no network: the Metadata call is replaced), on a fake
clock."""

from __future__ import annotations

import types

import pytest

from minikafka.client import metadata as metadata_module
from minikafka.client._channel import ChannelPool
from minikafka.client.metadata import ClusterMetadata
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto.errors import ErrorCode, KafkaError, error_for_code


def test_a_failed_refresh_is_not_retried_within_retry_backoff(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [100.0]
    monkeypatch.setattr(metadata_module, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    metadata = ClusterMetadata(ChannelPool(), ["127.0.0.1:9"], retry_backoff_ms=200)
    calls: list[float] = []

    def unreachable(request: pb.MetadataRequest, candidates: object = None) -> None:
        calls.append(now[0])
        raise error_for_code(ErrorCode.NETWORK_EXCEPTION, "no broker answered")

    monkeypatch.setattr(metadata, "_call", unreachable)
    assert metadata.needs_update()
    with pytest.raises(KafkaError):
        metadata.update()
    metadata.request_update()
    now[0] += 0.15
    assert not metadata.needs_update()  # asked again within the back-off: not yet
    metadata.maybe_update()
    assert calls == [100.0]
    now[0] += 0.1
    assert metadata.needs_update()  # past retry.backoff.ms since the failed attempt
