"""gRPC's message limits fit what the config lets a fetch answer hold.

gRPC refuses a message above its receive limit (4 MiB unless the channel sets one) with
RESOURCE_EXHAUSTED and ends the stream: a follower that had to catch up on several partitions at
once got an answer above that, lost its fetch stream on every try and never rejoined the ISR.
"""

from __future__ import annotations

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
