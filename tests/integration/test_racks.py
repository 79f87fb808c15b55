"""Racks (KIP-36) and fetching from the closest replica (KIP-392) on three real brokers in racks
r0, r1, r2 with Kafka's RackAwareReplicaSelector: racks in Metadata and DescribeCluster on both
doors, replicas spread over the racks, a leader's Fetch answer naming the replica in the
consumer's rack, and confluent-kafka's consumer (``client.rack``) and minikafka's
(``client_rack``) reading everything from the broker in r1. Which broker served the records is
measured by each broker's BytesOut meter of the topic (records sent to consumers).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import confluent_kafka
import confluent_kafka.admin
import pytest

from minikafka.client.admin.topics import NewTopic
from minikafka.client.consumer.consumer import Consumer
from minikafka.client.producer.producer import Producer
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode
from tests.integration.cluster import Cluster
from tests.integration.conftest import ClusterFactory
from tests.integration.kafka_protocol.raw import RawKafka, fetch_fields

RACKS = {0: "r0", 1: "r1", 2: "r2"}
SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
BYTES_OUT = "kafka_server_brokertopicmetrics_bytesout_total"
TOPIC = "near"
PARTITIONS = 3
PER_PARTITION = 50


@pytest.fixture
def cluster(cluster_factory: ClusterFactory) -> Cluster:
    cluster = cluster_factory(3, {"replica.selector.class": SELECTOR}, start=False)
    for broker_id, rack in RACKS.items():
        cluster.write_config(broker_id, {"broker.rack": rack})
    cluster.start_all()
    cluster.wait_until_serving()
    return cluster


def bytes_out(cluster: Cluster, topic: str) -> dict[int, float]:
    return {b: cluster.metric(b, BYTES_OUT, topic=topic) or 0.0 for b in RACKS}


def wait_until(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout_s}s: {what}")
        time.sleep(0.1)


def fill(cluster: Cluster) -> set[bytes]:
    """TOPIC with PARTITIONS partitions on every broker, PER_PARTITION records in each, every
    follower caught up (in the ISR: it may be sent consumers)."""
    with cluster.admin() as admin:
        assert admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)]) == {TOPIC: None}
    values = set()
    with Producer(bootstrap_servers=cluster.bootstrap_servers, acks="all") as producer:
        for p in range(PARTITIONS):
            for i in range(PER_PARTITION):
                value = b"p%d-%03d" % (p, i)
                values.add(value)
                producer.send(TOPIC, value, partition=p)
        producer.flush()
    wait_until(
        lambda: all(len(cluster.isr(TOPIC, p)) == 3 for p in range(PARTITIONS)),
        10,
        "every replica in the ISR",
    )
    return values


def test_racks_in_metadata_and_the_replicas_spread_over_them(cluster: Cluster) -> None:
    # gRPC door: Metadata's brokers and the admin client's DescribeCluster
    assert {b.node_id: b.rack for b in cluster.metadata(0).brokers} == RACKS
    with cluster.admin() as admin:
        assert {b.id: b.rack for b in admin.describe_cluster().brokers} == RACKS
        assert admin.create_topics([NewTopic("spread", 6, 2)]) == {"spread": None}
        assert admin.create_partitions({"spread": 9}) == {"spread": None}
    # Kafka door: Metadata v12's brokers[].rack, confluent-kafka's DescribeCluster
    with RawKafka(cluster.brokers[1].kafka_address) as raw:
        answer = raw.call(3, 12, {"topics": None, "allow_auto_topic_creation": False})
        assert {b.node_id: b.rack for b in answer.brokers} == RACKS
    admin_client = confluent_kafka.admin.AdminClient(
        {"bootstrap.servers": cluster.kafka_bootstrap_servers}
    )
    nodes = admin_client.describe_cluster(request_timeout=10).result(timeout=15).nodes
    assert {n.id: n.rack for n in nodes} == RACKS
    # Kafka's rack-alternating rule: each partition's replicas on distinct racks, the leaders
    # round-robin over them (3 each of 9, added partitions included).
    assignment = cluster.zk.get_topic("spread")
    assert assignment is not None
    partitions = assignment.value.partitions
    assert sorted(partitions) == list(range(9))
    assert all(len({RACKS[b] for b in replicas}) == 2 for replicas in partitions.values())
    leaders = [replicas[0] for replicas in partitions.values()]
    assert sorted(leaders.count(b) for b in RACKS) == [3, 3, 3]


def test_a_leader_names_the_replica_in_the_consumers_rack(cluster: Cluster) -> None:
    fill(cluster)
    leader = cluster.leader(TOPIC, 0)
    near = next(b for b, rack in RACKS.items() if b != leader)
    with RawKafka(cluster.brokers[leader].kafka_address) as raw:
        fields = {**fetch_fields(TOPIC, 0, 1 << 20), "rack_id": RACKS[near]}
        (part,) = raw.call(1, 12, fields).responses[0].partitions
        assert (part.error_code, part.preferred_read_replica) == (ErrorCode.NONE, near)
        assert part.records is None or len(part.records) == 0
        # the leader's own rack: it serves the records itself
        fields["rack_id"] = RACKS[leader]
        (part,) = raw.call(1, 12, fields).responses[0].partitions
        assert part.preferred_read_replica == -1 and part.records
    with RawKafka(cluster.brokers[near].kafka_address) as raw:
        fields = {**fetch_fields(TOPIC, 0, 1 << 20), "rack_id": RACKS[near]}

        def served() -> bool:
            # a follower serves it up to its own HW, which its next fetch from the leader
            # brings (up to replica.fetch.wait.max.ms after the produce)
            (part,) = raw.call(1, 12, fields).responses[0].partitions
            assert part.error_code == ErrorCode.NONE
            return bool(part.records) and part.high_watermark == PER_PARTITION

        wait_until(served, 10, f"broker {near} serving {TOPIC}-0 up to the HW")
        # Fetch v10 carries no rack: a follower still refuses the consumer
        old = {k: v for k, v in fields.items() if k != "rack_id"}
        (part,) = raw.call(1, 10, old).responses[0].partitions
        assert part.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_consumers_in_r1_read_everything_from_the_broker_in_r1(cluster: Cluster) -> None:
    values = fill(cluster)
    assert {cluster.leader(TOPIC, p) for p in range(PARTITIONS)} == set(RACKS)  # spread

    # confluent-kafka (librdkafka follows preferred_read_replica)
    before = bytes_out(cluster, TOPIC)
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": cluster.kafka_bootstrap_servers,
            "group.id": "racks",
            "client.rack": "r1",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign(
            [
                confluent_kafka.TopicPartition(TOPIC, p, confluent_kafka.OFFSET_BEGINNING)
                for p in range(PARTITIONS)
            ]
        )
        got: set[bytes] = set()
        deadline = time.monotonic() + 30
        while got != values and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got.add(message.value() or b"")
        assert got == values
    finally:
        consumer.close()
    after = bytes_out(cluster, TOPIC)
    served = {b: after[b] - before[b] for b in RACKS}
    assert served[1] > 0 and served[0] == 0 and served[2] == 0, served

    # minikafka's Consumer with client_rack
    before = after
    mk = Consumer(bootstrap_servers=cluster.bootstrap_servers, client_rack="r1")
    try:
        tps = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
        mk.assign(tps)
        mk.seek_to_beginning(*tps)
        got = set()
        deadline = time.monotonic() + 30
        while got != values and time.monotonic() < deadline:
            for records in mk.poll(timeout_ms=500).values():
                got.update(r.value for r in records if r.value is not None)
        assert got == values
    finally:
        mk.close()
    after = bytes_out(cluster, TOPIC)
    served = {b: after[b] - before[b] for b in RACKS}
    assert served[1] > 0 and served[0] == 0 and served[2] == 0, served

    # without a rack, each leader serves its own partitions
    before = after
    plain = Consumer(bootstrap_servers=cluster.bootstrap_servers)
    try:
        plain.assign(tps)
        plain.seek_to_beginning(*tps)
        count = 0
        deadline = time.monotonic() + 30
        while count < len(values) and time.monotonic() < deadline:
            count += sum(len(r) for r in plain.poll(timeout_ms=500).values())
        assert count == len(values)
    finally:
        plain.close()
    after = bytes_out(cluster, TOPIC)
    assert all(after[b] > before[b] for b in RACKS)
