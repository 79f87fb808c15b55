"""Metadata answers with the endpoints of the listener the client came in on (Kafka's rule):
a client on the host's EXTERNAL listener must not get the container network's INTERNAL names."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from minikafka.broker.server.core.metadata import MetadataApi
from minikafka.broker.server.metadata_cache import MetadataCache
from minikafka.broker.server.metadata_service import MetadataService
from minikafka.proto import minikafka_pb2 as pb
from tests.unit.grpc_context import PeerContext
from tests.unit.replication.harness import broker_config


def _cache() -> MetadataCache:
    cache = MetadataCache(broker_id=1, cluster_id="c")
    request = pb.UpdateMetadataRequest(controller_id=1, controller_epoch=1)
    for broker_id in (1, 2):
        broker = request.live_brokers.add(id=broker_id, host=f"broker{broker_id}", port=29092)
        broker.endpoints.add(listener="INTERNAL", host=f"broker{broker_id}", port=29092)
        broker.endpoints.add(listener="EXTERNAL", host="127.0.0.1", port=9091 + broker_id)
    cache.update(request)
    return cache


def _brokers(listener: str | None) -> list[tuple[int, str, int]]:
    api = MetadataApi(broker_config(1, Path("/nonexistent")), _cache())
    service = MetadataService(api, listener=listener)
    context: Any = PeerContext()
    metadata = asyncio.run(service.Metadata(pb.MetadataRequest(), context))
    cluster = asyncio.run(service.DescribeCluster(pb.DescribeClusterRequest(), context))
    described = [(b.broker_id, b.host, b.port) for b in cluster.brokers]
    listed = [(b.node_id, b.host, b.port) for b in metadata.brokers]
    assert sorted(listed) == sorted(described)
    return sorted(listed)


def test_each_listener_sees_its_own_endpoints() -> None:
    assert _brokers("EXTERNAL") == [(1, "127.0.0.1", 9092), (2, "127.0.0.1", 9093)]
    assert _brokers("INTERNAL") == [(1, "broker1", 29092), (2, "broker2", 29092)]


def test_brokers_without_the_listener_are_left_out() -> None:
    # As Kafka: a client is never sent to another listener's port (another protocol, or
    # another network's names).
    assert _brokers("OTHER") == []


def test_a_leader_without_the_listener_is_listener_not_found() -> None:
    cache = _cache()
    request = pb.UpdateMetadataRequest(controller_id=1, controller_epoch=2)
    for broker_id in (1, 2):
        broker = request.live_brokers.add(id=broker_id, host=f"broker{broker_id}", port=29092)
        broker.endpoints.add(listener="INTERNAL", host=f"broker{broker_id}", port=29092)
        if broker_id == 1:  # broker 2 has no EXTERNAL listener
            broker.endpoints.add(listener="EXTERNAL", host="127.0.0.1", port=9092)
    for partition, leader in ((0, 1), (1, 2)):
        request.partition_states.add(
            topic_name="t",
            partition_index=partition,
            controller_epoch=2,
            leader=leader,
            leader_epoch=0,
            isr=[1, 2],
            replicas=[1, 2],
        )
    cache.update(request)
    api = MetadataApi(broker_config(1, Path("/nonexistent")), cache)
    service = MetadataService(api, listener="EXTERNAL")
    context: Any = PeerContext()
    metadata = asyncio.run(service.Metadata(pb.MetadataRequest(), context))
    assert [b.node_id for b in metadata.brokers] == [1]
    (topic,) = metadata.topics
    errors = {p.partition_index: (p.error_code, p.leader_id) for p in topic.partitions}
    assert errors == {0: (0, 1), 1: (72, -1)}  # LISTENER_NOT_FOUND
