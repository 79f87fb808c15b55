"""ClusterMetadata's refresh back-off (no network: the Metadata call is replaced)."""

from __future__ import annotations

import time

import pytest

from minikafka.client._channel import ChannelPool
from minikafka.client.metadata import ClusterMetadata
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto.errors import ErrorCode, KafkaError, error_for_code


def test_a_failed_refresh_is_not_retried_within_retry_backoff(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    metadata = ClusterMetadata(ChannelPool(), ["127.0.0.1:9"], retry_backoff_ms=200)
    calls: list[float] = []

    def unreachable(request: pb.MetadataRequest, candidates: object = None) -> None:
        calls.append(time.monotonic())
        raise error_for_code(ErrorCode.NETWORK_EXCEPTION, "no broker answered")

    monkeypatch.setattr(metadata, "_call", unreachable)
    assert metadata.needs_update()
    with pytest.raises(KafkaError):
        metadata.update()
    metadata.request_update()
    assert not metadata.needs_update()  # asked again at once: still backing off
    metadata.maybe_update()
    assert len(calls) == 1
    time.sleep(0.25)
    assert metadata.needs_update()
