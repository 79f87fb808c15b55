"""GET /metrics of real brokers across a failover: a follower killed and restarted, then the
controller killed. The values are read at scrape time, so they must follow the cluster."""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterable

from minikafka.client.admin import NewTopic, raise_first
from minikafka.client.consumer.consumer import Consumer
from minikafka.proto.common import TopicPartition
from tests.integration.cluster import Cluster
from tests.integration.conftest import ClusterFactory

TOPIC = "metered"
PARTITIONS = 3
URP = "kafka_server_replicamanager_underreplicatedpartitions"
SHRINKS = "kafka_server_replicamanager_isrshrinks_total"
EXPANDS = "kafka_server_replicamanager_isrexpands_total"
ACTIVE = "kafka_controller_kafkacontroller_activecontrollercount"
MESSAGES_IN = "kafka_server_brokertopicmetrics_messagesin_total"
REQUESTS = "kafka_network_requestmetrics_requests_total"


def total(cluster: Cluster, name: str, brokers: Iterable[int] | None = None, **labels: str) -> int:
    ids = cluster.running_ids() if brokers is None else brokers
    return int(sum(cluster.metric(b, name, **labels) or 0 for b in ids))


def active_controllers(cluster: Cluster) -> list[int]:
    return [b for b in cluster.running_ids() if cluster.metric(b, ACTIVE) == 1]


def full_isr(cluster: Cluster) -> bool:
    return all(len(cluster.isr(TOPIC, p)) == 3 for p in range(PARTITIONS))


def api_versions(address: str) -> None:
    """One ApiVersions v0 request on the Kafka listener, by hand."""
    host, port = address.rsplit(":", 1)
    body = struct.pack(">hhih", 18, 0, 7, -1)  # api_key, version, correlation id, no client id
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(struct.pack(">i", len(body)) + body)
        (size,) = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))
        assert len(sock.recv(size, socket.MSG_WAITALL)) == size


def test_metrics_follow_a_kill_a_rejoin_and_a_controller_kill(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(n_brokers=3)
    with cluster.admin() as admin:
        raise_first(admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3, {}, {})]))
    cluster.wait_for(lambda: full_isr(cluster), what="a full ISR")

    # Healthy: one controller, every partition on every broker, nothing under-replicated.
    assert len(active_controllers(cluster)) == 1
    controller = active_controllers(cluster)[0]
    assert cluster.metric(controller, "kafka_controller_kafkacontroller_globalpartitioncount") == 3
    assert (
        cluster.metric(controller, "kafka_controller_kafkacontroller_offlinepartitionscount") == 0
    )
    for broker in cluster.running_ids():
        assert cluster.metric(broker, "kafka_server_replicamanager_partitioncount") == PARTITIONS
    assert total(cluster, "kafka_server_replicamanager_leadercount") == PARTITIONS
    assert total(cluster, URP) == 0

    # messagesin counts what the leaders appended; the followers' LEOs follow.
    produced = 0
    for partition in range(PARTITIONS):
        for _ in range(partition + 1):
            assert cluster.produce(TOPIC, partition, [b"a", b"b", b"c"], acks=-1, retry_s=10).ok
            produced += 3
    assert total(cluster, MESSAGES_IN, topic=TOPIC) == produced
    assert total(cluster, MESSAGES_IN) >= produced  # all topics: no label
    assert total(cluster, REQUESTS, request="Produce") >= PARTITIONS * 2
    cluster.wait_for(
        lambda: total(cluster, REQUESTS, request="FetchFollower") > 0, what="follower fetches"
    )
    for partition in range(PARTITIONS):
        leo = {"topic": TOPIC, "partition": str(partition)}
        cluster.wait_for(
            lambda leo=leo, p=partition: all(  # type: ignore[misc]
                cluster.metric(b, "kafka_log_log_logendoffset", **leo) == 3 * (p + 1)
                for b in cluster.brokers
            ),
            what="every replica's LEO",
        )
    api_versions(cluster.brokers[0].kafka_address)  # the Kafka door counts too
    cluster.wait_for(
        lambda: cluster.metric(0, REQUESTS, request="ApiVersions") == 1, what="ApiVersions"
    )

    # A follower dies: its partitions' leaders report them under-replicated; the leaders that
    # stay shrink their ISR themselves (replica.lag.time.max.ms passes before the session).
    victim = next(b for b in sorted(cluster.brokers) if b != controller)
    survivors = [b for b in cluster.brokers if b != victim]
    shrinks_before = total(cluster, SHRINKS)
    expands_before = total(cluster, EXPANDS)
    cluster.kill(victim)
    cluster.wait_for(
        lambda: total(cluster, URP, survivors) == PARTITIONS,
        timeout_s=30,
        what="every partition under-replicated on its leader",
    )
    assert total(cluster, SHRINKS, survivors) > shrinks_before
    assert active_controllers(cluster) == [controller]

    # It rejoins: the ISR grows back, and nothing is under-replicated any more.
    cluster.start(victim)
    cluster.wait_for(
        lambda: total(cluster, URP) == 0 and full_isr(cluster),
        timeout_s=40,
        what="the ISR to be full again",
    )
    assert total(cluster, EXPANDS) > expands_before
    assert active_controllers(cluster) == [controller]

    # The controller dies: exactly one other broker takes over, says so, and logs the death.
    cluster.kill(controller)
    new_controller = cluster.wait_for(
        lambda: active[0] if len(active := active_controllers(cluster)) == 1 else None,
        timeout_s=30,
        what="a new controller",
    )
    assert new_controller != controller
    cluster.wait_for(
        lambda: total(cluster, URP) == PARTITIONS, timeout_s=30, what="under-replicated again"
    )
    assert (
        cluster.metric(new_controller, "kafka_controller_kafkacontroller_offlinepartitionscount")
        == 0
    )
    deaths = cluster.brokers[new_controller].log_events("broker_failed")
    assert any(e.get("broker_id") == controller and e.get("was_controller") for e in deaths), deaths

    # Process metrics come with every scrape.
    scrape = cluster.metrics(new_controller)
    assert scrape[("process_resident_memory_bytes", ())] > 0
    assert ("process_cpu_seconds_total", ()) in scrape


def test_consumer_lag_per_partition_on_the_coordinator(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(n_brokers=3)
    with cluster.admin() as admin:
        raise_first(admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3, {}, {})]))
    cluster.wait_for(lambda: full_isr(cluster), what="a full ISR")
    for partition in range(PARTITIONS):  # 3, 6 and 9 records
        for _ in range(partition + 1):
            assert cluster.produce(TOPIC, partition, [b"a", b"b", b"c"], acks=-1, retry_s=10).ok
    committed = {TopicPartition(TOPIC, p): p + 1 for p in range(PARTITIONS)}
    with Consumer(
        bootstrap_servers=cluster.bootstrap_servers, group_id="lagging", enable_auto_commit=False
    ) as consumer:
        consumer.assign(list(committed))
        consumer.commit(committed)

    def lags() -> dict[int, float] | None:
        # Only the group's coordinator reports it; partitions led elsewhere included.
        found: dict[int, float] = {}
        for broker in cluster.running_ids():
            for (name, labels), value in cluster.metrics(broker).items():
                label = dict(labels)
                if name == "kafka_consumergroup_group_lag" and label["group"] == "lagging":
                    found[int(label["partition"])] = value
        return found if len(found) == PARTITIONS else None

    expected = {p: 3 * (p + 1) - (p + 1) for p in range(PARTITIONS)}
    assert cluster.wait_for(lags, what="the group's lag") == expected
    assert total(cluster, "kafka_consumergroup_group_max_lag", group="lagging") == max(
        expected.values()
    )
