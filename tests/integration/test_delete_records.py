"""DeleteRecords on real brokers: the answer waits for every live replica's log start offset
(the low watermark, Kafka's DelayedDeleteRecords) or times out, with Kafka's error codes."""

from __future__ import annotations

from minikafka.client.admin import NewTopic, raise_first
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode
from tests.integration.cluster import Cluster
from tests.integration.conftest import ClusterFactory


def delete_records(
    cluster: Cluster, broker_id: int, topic: str, partition: int, offset: int, timeout_ms: int
) -> pb.DeleteRecordsResponse.DeleteRecordsPartitionResult:
    request = pb.DeleteRecordsRequest(
        topics=[
            pb.DeleteRecordsRequest.DeleteRecordsTopic(
                name=topic,
                partitions=[
                    pb.DeleteRecordsRequest.DeleteRecordsPartition(
                        partition_index=partition, offset=offset
                    )
                ],
            )
        ],
        timeout_ms=timeout_ms,
    )
    response = pb_grpc.AdminStub(cluster.channel(broker_id)).DeleteRecords(request, timeout=30)
    result: pb.DeleteRecordsResponse.DeleteRecordsPartitionResult = response.topics[0].partitions[0]
    return result


def test_low_watermark_timeout_and_error_codes(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(n_brokers=3)
    with cluster.admin() as admin:
        raise_first(
            admin.create_topics([NewTopic("dr", 1, 3, {}, {}), NewTopic("single", 1, 1, {}, {})])
        )
    cluster.wait_for(
        lambda: (s := cluster.partition_state("dr", 0)) is not None and len(s.isr) == 3,
        what="a full ISR",
    )
    cluster.wait_for(lambda: cluster.leader("single", 0) >= 0, what="a leader")
    assert cluster.produce("dr", 0, [b"v%d" % i for i in range(10)], acks=-1, retry_s=10).ok
    leader = cluster.leader("dr", 0)
    followers = [b for b in cluster.brokers if b != leader]

    # Once the followers caught up, the low watermark is the minimum over all three replicas.
    result = delete_records(cluster, leader, "dr", 0, 4, 10_000)
    assert (result.error_code, result.low_watermark) == (ErrorCode.NONE, 4)
    with cluster.admin() as admin:
        assert admin.delete_records({TopicPartition("dr", 0): 6}, timeout_ms=10_000) == {
            TopicPartition("dr", 0): 6
        }

    # A paused follower (its ZooKeeper session still alive) cannot report its log start offset.
    cluster.pause(followers[0])
    try:
        result = delete_records(cluster, leader, "dr", 0, 8, 1_000)
        assert result.error_code == ErrorCode.REQUEST_TIMED_OUT
        assert result.low_watermark == 8  # the leader's own log start offset moved
    finally:
        cluster.resume(followers[0])
    result = delete_records(cluster, leader, "dr", 0, 8, 10_000)
    assert (result.error_code, result.low_watermark) == (ErrorCode.NONE, 8)

    # Kafka's getPartitionOrError: a follower, a broker that does not host a known partition,
    # a partition nobody knows.
    assert (
        delete_records(cluster, followers[1], "dr", 0, 9, 1_000).error_code
        == ErrorCode.NOT_LEADER_OR_FOLLOWER
    )
    single_leader = cluster.leader("single", 0)
    elsewhere = next(b for b in cluster.brokers if b != single_leader)
    assert (
        delete_records(cluster, elsewhere, "single", 0, 0, 1_000).error_code
        == ErrorCode.NOT_LEADER_OR_FOLLOWER
    )
    assert (
        delete_records(cluster, leader, "missing", 0, 0, 1_000).error_code
        == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    )
