"""Fetch answers above 4 MiB between real brokers, over the Kafka protocol (the harness's
default replication) and over gRPC.

gRPC refuses a message above its receive limit (4 MiB unless the channel sets one) with
RESOURCE_EXHAUSTED and ends the stream: a follower that had to catch up on several partitions at
once got an answer above that, lost its fetch stream on every try and never rejoined the ISR.
The Kafka-protocol follower takes answers up to the same limit (grpc_max_message_bytes).
"""

from __future__ import annotations

import pytest

from tests.integration.cluster import Cluster
from tests.integration.conftest import ClusterFactory
from tests.integration.test_failover import FAST, create_topic

PARTITIONS = 6
BATCHES_PER_PARTITION = 2
RECORDS_PER_BATCH = 800
VALUE = b"v" * 1000  # 800 KB batches (below message.max.bytes), 1.6 MB per partition


def in_sync(cluster: Cluster, topic: str) -> bool:
    for partition in range(PARTITIONS):
        state = cluster.partition_state(topic, partition)
        if state is None or len(state.isr) != 2:
            return False
    return True


def test_a_follower_catches_up_on_fetch_answers_larger_than_grpc_default_limit(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(n_brokers=2, overrides=FAST)
    create_topic(cluster, "wide", PARTITIONS, replication_factor=2)
    cluster.wait_for(lambda: in_sync(cluster, "wide"), 30, "a full ISR")

    cluster.stop(1)
    for partition in range(PARTITIONS):
        cluster.wait_for(
            lambda p=partition: cluster.leader("wide", p) == 0,  # type: ignore[misc]
            30,
            "broker 0 leading",
        )
        for _ in range(BATCHES_PER_PARTITION):
            result = cluster.produce(
                "wide", partition, [VALUE] * RECORDS_PER_BATCH, acks=1, retry_s=10
            )
            assert result.error == 0, result
    # Broker 1 now has to fetch about 9.6 MB, up to 1 MiB per partition per fetch: one answer
    # of about 6 MiB, above gRPC's default limit.
    cluster.start(1)
    cluster.wait_for(lambda: in_sync(cluster, "wide"), 60, "broker 1 back in every ISR")

    assert "RESOURCE_EXHAUSTED" not in cluster.brokers[1].output_file.read_text()
    hw = RECORDS_PER_BATCH * BATCHES_PER_PARTITION
    cluster.stop(0)
    cluster.stop(1)
    for partition in range(PARTITIONS):
        images = {b: cluster.replica_state(b, "wide", partition).bytes_below(hw) for b in (0, 1)}
        assert images[0] == images[1]
        assert len(images[0]) > RECORDS_PER_BATCH * BATCHES_PER_PARTITION * len(VALUE)


# One partition's fetch answers of up to 8 MiB: replica.fetch.max.bytes (per partition) and
# replica.fetch.response.max.bytes (per answer) both above gRPC's default 4 MiB.
LARGE_FETCHES = {
    **FAST,
    "replica.fetch.max.bytes": str(8 << 20),
    "replica.fetch.response.max.bytes": str(16 << 20),
}
LARGE_BATCHES = 15  # 12 MB in one partition


def fetch_failures(cluster: Cluster, broker_id: int) -> int:
    return len(cluster.brokers[broker_id].log_events("fetcher.fetch_failed"))


@pytest.mark.parametrize("replication", ["kafka", "grpc"])
def test_rf3_followers_catch_up_on_one_partition_answers_above_4_mib(
    cluster_factory: ClusterFactory, replication: str
) -> None:
    cluster = cluster_factory(n_brokers=3, overrides=LARGE_FETCHES, replication=replication)
    create_topic(cluster, "large", 1, replication_factor=3)
    cluster.wait_for(lambda: len(cluster.isr("large", 0)) == 3, 30, "a full ISR")
    leader = cluster.leader("large", 0)
    followers = [b for b in sorted(cluster.brokers) if b != leader]
    for follower in followers:
        cluster.stop(follower)
    for _ in range(LARGE_BATCHES):
        result = cluster.produce("large", 0, [VALUE] * RECORDS_PER_BATCH, acks=1, to=leader)
        assert result.error == 0, result
    failures = {f: fetch_failures(cluster, f) for f in followers}
    # Back, each follower is 12 MB behind in one partition: its first fetches are answered
    # with 8 MiB (replica.fetch.max.bytes), twice gRPC's default message limit.
    for follower in followers:
        cluster.start(follower)
    cluster.wait_for(lambda: len(cluster.isr("large", 0)) == 3, 60, "both followers in the ISR")
    # And the live path: acks=all with the full ISR.
    result = cluster.produce("large", 0, [VALUE] * RECORDS_PER_BATCH, acks=-1, to=leader)
    assert result.error == 0, result

    for follower in followers:
        assert fetch_failures(cluster, follower) == failures[follower]
        assert "RESOURCE_EXHAUSTED" not in cluster.brokers[follower].output_file.read_text()
    hw = RECORDS_PER_BATCH * (LARGE_BATCHES + 1)
    cluster.wait_for(
        lambda: all(
            cluster.metric(b, "kafka_log_log_logendoffset", topic="large", partition="0") == hw
            for b in cluster.brokers
        ),
        30,
        "every replica at the last offset",
    )
    for broker in sorted(cluster.brokers):
        cluster.stop(broker)
    images = {b: cluster.replica_state(b, "large", 0).bytes_below(hw) for b in cluster.brokers}
    assert images[followers[0]] == images[leader] == images[followers[1]]
    assert len(images[leader]) > hw * len(VALUE)
