"""broker/server/metrics.py: what a scrape reports, read from live replicas on their loop.

In-process brokers of the replication harness (no ZooKeeper, no broker process); the collector
runs on a thread of its own as it does under the HTTP server, and hops onto the test's loop.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from minikafka.broker.config import BrokerConfig
from minikafka.broker.server.metrics import (
    BrokerCollector,
    BrokerMetrics,
    MetricSources,
    RequestMetrics,
    kafka_request_name,
)
from minikafka.controller.controller import ControllerMetrics
from minikafka.proto.errors import ErrorCode, InvalidConfigError
from tests.unit.replication.harness import Cluster, produce, run, wait_until


class FakeController:
    def __init__(self, active: bool) -> None:
        self.is_active = active
        self.metrics = ControllerMetrics(global_partition_count=1, global_topic_count=1)


class FakeZkClient:
    state = "CONNECTED"


def scrape(sources: MetricSources) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """One collect(), as the HTTP thread runs it: {(sample name, labels): value}."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in BrokerCollector(sources).collect()
        for s in family.samples
    }


def sources(cluster: Cluster, broker_id: int, *, active: bool = False) -> MetricSources:
    node: Any = cluster[broker_id]
    return MetricSources(
        loop=asyncio.get_running_loop(),
        replica_manager=node.replica_manager,
        controller=FakeController(active),  # type: ignore[arg-type]
        zk_client=FakeZkClient(),
        metadata_cache=None,  # type: ignore[arg-type]  # no groups here
    )


def test_a_scrape_follows_the_isr_and_counts_what_came_in(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, replica_lag_time_max_ms=400, replica_fetch_wait_max_ms=100)
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1, 2, 3])
            for _ in range(2):
                assert (await produce(cluster[1], b"a")).error_code == ErrorCode.NONE
            leader = await asyncio.to_thread(scrape, sources(cluster, 1, active=True))
            assert leader[("kafka_controller_kafkacontroller_activecontrollercount", ())] == 1
            assert leader[("kafka_server_replicamanager_leadercount", ())] == 1
            assert leader[("kafka_server_replicamanager_underreplicatedpartitions", ())] == 0
            assert leader[("kafka_server_brokertopicmetrics_messagesin_total", ())] == 2
            assert (
                leader[("kafka_server_brokertopicmetrics_messagesin_total", (("topic", "t"),))] == 2
            )
            tp = (("partition", "0"), ("topic", "t"))
            assert leader[("kafka_log_log_logendoffset", tp)] == 2
            assert leader[("kafka_cluster_partition_highwatermark", tp)] == 2
            state = (("state", "CONNECTED"),)
            assert leader[("kafka_server_sessionexpirelistener_sessionstate", state)] == 1
            follower = await asyncio.to_thread(scrape, sources(cluster, 2))
            assert follower[("kafka_controller_kafkacontroller_activecontrollercount", ())] == 0
            assert follower[("kafka_server_replicamanager_leadercount", ())] == 0
            assert follower[("kafka_server_replicamanager_partitioncount", ())] == 1

            await cluster[3].stop()
            await wait_until(lambda: cluster[1].isr() == {1, 2}, message="3 removed from ISR")
            leader = await asyncio.to_thread(scrape, sources(cluster, 1))
            assert leader[("kafka_server_replicamanager_underreplicatedpartitions", ())] == 1
            assert leader[("kafka_server_replicamanager_isrshrinks_total", ())] == 1
            assert leader[("kafka_cluster_partition_underreplicated", tp)] == 1

            await cluster[3].start()
            await cluster.elect(1, 2, [1, 2])
            await wait_until(lambda: cluster[1].isr() == {1, 2, 3}, message="3 back in ISR")
            leader = await asyncio.to_thread(scrape, sources(cluster, 1))
            assert leader[("kafka_server_replicamanager_underreplicatedpartitions", ())] == 0
            assert leader[("kafka_server_replicamanager_isrexpands_total", ())] == 1
        finally:
            await cluster.stop()

    run(scenario)


def test_request_metrics_use_kafkas_names_and_cost_nothing_when_off() -> None:
    assert kafka_request_name(0) == "Produce"
    assert kafka_request_name(1) == "FetchConsumer"
    assert kafka_request_name(1, from_follower=True) == "FetchFollower"
    assert kafka_request_name(23) == "OffsetForLeaderEpoch"

    RequestMetrics().observe("Produce", 0.0)  # off: nothing to record into
    registry = CollectorRegistry()
    metrics = RequestMetrics(registry)
    metrics.observe("Produce", 0.0)
    text = generate_latest(registry).decode()
    assert 'kafka_network_requestmetrics_requests_total{request="Produce"} 1.0' in text
    assert 'kafka_network_requestmetrics_totaltimems_count{request="Produce"} 1.0' in text


def test_metrics_listener_is_checked_with_the_config() -> None:
    def config(value: str) -> BrokerConfig:
        return BrokerConfig.from_properties(
            {"broker.id": "1", "zookeeper.connect": "zk:2181", "metrics.listener": value}
        )

    assert config("").metrics_listener == ""
    assert BrokerMetrics.create("") is None
    assert config("http://127.0.0.1:9101").metrics_listener == "http://127.0.0.1:9101"
    metrics = BrokerMetrics.create("http://:9101")
    assert metrics is not None and (metrics.host, metrics.port) == ("", 9101)
    for bad in ("127.0.0.1:9101", "https://h:1", "http://h", "http://h:x", "http://h:1/path"):
        with pytest.raises(InvalidConfigError, match=r"metrics\.listener"):
            config(bad)
