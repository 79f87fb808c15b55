"""``__consumer_offsets`` belongs to the brokers: clients can neither create nor delete it nor
add partitions to it, over gRPC, Kafka's wire protocol or the CLI, and groups hash over the
partition count the topic has, on both sides (FindCoordinator and the coordinator), whatever
``offsets.topic.num.partitions`` says. Real broker processes and ZooKeeper."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid

import pytest

from minikafka.broker.group.coordinator import partition_for
from minikafka.broker.server.core.topic_creation import OFFSETS_TOPIC_CONFIGS
from minikafka.client.admin import NewTopic
from minikafka.client.consumer.consumer import Consumer
from minikafka.client.producer.producer import Producer
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode
from minikafka.zk.zk_data import TopicAssignment, random_uuid_base64
from tests.integration.cluster import REPO_ROOT, Cluster
from tests.integration.conftest import ClusterFactory
from tests.integration.kafka_protocol.raw import RawKafka

pytestmark = pytest.mark.integration

OFFSETS = "__consumer_offsets"
CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS = 19, 20, 37
TOPIC = "events"
PROHIBITED = f"Creation of internal topic {OFFSETS} is prohibited."
NOT_DELETABLE = (
    f"Topic {OFFSETS} is a kafka internal topic and is not allowed to be marked for deletion."
)

NOT_RESIZABLE = (
    f"Topic {OFFSETS} is a kafka internal topic: its number of partitions cannot be changed."
)


def _cli(cluster: Cluster, *argv: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "minikafka", "topics"]
    command += ["--bootstrap-server", cluster.bootstrap_servers, *argv]
    return subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)


def _controller_kafka_address(cluster: Cluster) -> str:
    controller = cluster.controller_id()
    assert controller is not None
    return cluster.brokers[controller].kafka_address


def _create_topic(cluster: Cluster, replication_factor: int) -> None:
    with cluster.admin() as admin:
        assert admin.create_topics([NewTopic(TOPIC, 1, replication_factor)])[TOPIC] is None
    cluster.wait_for(lambda: cluster.leader(TOPIC, 0) >= 0, what=f"a leader of {TOPIC}")
    with Producer(bootstrap_servers=cluster.bootstrap_servers, acks="all") as producer:
        for i in range(5):
            producer.send(TOPIC, f"v{i}".encode())
        producer.flush(timeout=30)


def _consume_and_commit(cluster: Cluster, group: str, expected: int = 5) -> None:
    """Join ``group``, read ``expected`` records, commit them, and read the commit back."""
    consumer = Consumer(
        bootstrap_servers=cluster.bootstrap_servers,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
    )
    with consumer:
        consumer.subscribe([TOPIC])
        values: list[bytes] = []
        deadline = time.monotonic() + 40
        while len(values) < expected:
            assert time.monotonic() < deadline, (
                f"group {group} read {len(values)} of {expected} records in 40 s\n"
                + cluster.describe()
            )
            for records in consumer.poll(timeout_ms=500).values():
                values += [r.value or b"" for r in records]
        assert values == [f"v{i}".encode() for i in range(expected)]
        consumer.commit()
    with Consumer(bootstrap_servers=cluster.bootstrap_servers, group_id=group) as reader:
        assert reader.committed(TopicPartition(TOPIC, 0)) == expected


def test_clients_can_neither_create_nor_delete_the_offsets_topic(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(n_brokers=2)

    # gRPC, the Kafka protocol and the CLI, before the topic exists: 1 partition, RF 1
    with cluster.admin() as admin:
        refused = admin.create_topics([NewTopic(OFFSETS, 1, 1)])[OFFSETS]
    assert refused is not None
    assert (refused.code, refused.message) == (ErrorCode.INVALID_REQUEST, PROHIBITED)
    with RawKafka(_controller_kafka_address(cluster), timeout_s=15) as raw:
        answer = raw.call(
            CREATE_TOPICS,
            7,
            {
                "topics": [
                    {
                        "name": OFFSETS,
                        "num_partitions": 1,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [],
                    }
                ],
                "timeout": 5000,
            },
        )
    (topic,) = answer.topics
    assert (topic.error_code, topic.error_message) == (ErrorCode.INVALID_REQUEST, PROHIBITED)
    assert topic.num_partitions == -1
    created = _cli(cluster, "--create", "--topic", OFFSETS, "--partitions", "1")
    assert (created.returncode, created.stdout) == (1, "")
    assert created.stderr == f"Error while executing topic command : {PROHIBITED}\n"
    assert cluster.zk.get_topic(OFFSETS) is None

    # the broker still creates it on first use, as offsets.topic.num.partitions says
    _create_topic(cluster, replication_factor=2)
    _consume_and_commit(cluster, "billing")
    offsets_topic = cluster.zk.get_topic(OFFSETS)
    assert offsets_topic is not None and len(offsets_topic.value.partitions) == 3

    # and nobody deletes it
    with cluster.admin() as admin:
        refused = admin.delete_topics([OFFSETS])[OFFSETS]
    assert refused is not None
    assert (refused.code, refused.message) == (ErrorCode.INVALID_REQUEST, NOT_DELETABLE)
    with RawKafka(_controller_kafka_address(cluster), timeout_s=15) as raw:
        answer = raw.call(
            DELETE_TOPICS,
            6,
            {"topics": [{"name": OFFSETS, "topic_id": uuid.UUID(int=0)}], "timeout": 5000},
        )
    assert [(t.error_code, t.error_message) for t in answer.responses] == [
        (ErrorCode.INVALID_REQUEST, NOT_DELETABLE)
    ]
    deleted = _cli(cluster, "--delete", "--topic", OFFSETS)
    assert (deleted.returncode, deleted.stdout) == (1, "")
    assert deleted.stderr == f"Error while executing topic command : {NOT_DELETABLE}\n"
    # A deletion is marked in ZooKeeper before the answer: unmarked now, never deleted.
    assert OFFSETS not in cluster.zk.get_topics_marked_for_deletion()
    offsets_topic = cluster.zk.get_topic(OFFSETS)
    assert offsets_topic is not None and len(offsets_topic.value.partitions) == 3

    # the group and its commit are still there; a new group works too
    with Consumer(bootstrap_servers=cluster.bootstrap_servers, group_id="billing") as reader:
        assert reader.committed(TopicPartition(TOPIC, 0)) == 5
    _consume_and_commit(cluster, "shipping")


def test_find_coordinator_and_the_coordinator_hash_over_the_topics_own_partition_count(
    cluster_factory: ClusterFactory,
) -> None:
    # The offsets topic exists with 2 partitions (made by an older configuration, or by hand),
    # while offsets.topic.num.partitions says 5.
    cluster = cluster_factory(n_brokers=1, overrides={"offsets.topic.num.partitions": "5"})
    cluster.zk.create_topic(
        TopicAssignment(OFFSETS, random_uuid_base64(), {0: (0,), 1: (0,)}),
        dict(OFFSETS_TOPIC_CONFIGS),
    )
    cluster.wait_for(
        lambda: all(cluster.leader(OFFSETS, p) == 0 for p in (0, 1)), what="offsets leaders"
    )
    # a group whose partition under the configured count does not even exist
    group = next(g for g in (f"group-{i}" for i in range(100)) if partition_for(g, 5) >= 2)

    def found() -> pb.FindCoordinatorResponse | None:
        response = pb_grpc.GroupStub(cluster.channel(0)).FindCoordinator(
            pb.FindCoordinatorRequest(key=group), timeout=5
        )
        return response if response.error_code == ErrorCode.NONE else None

    assert cluster.wait_for(found, timeout_s=20, what="a coordinator").node_id == 0
    _create_topic(cluster, replication_factor=1)
    _consume_and_commit(cluster, group)
    # the commit went to the partition both sides computed from the topic's 2 partitions
    with Consumer(bootstrap_servers=cluster.bootstrap_servers) as reader:
        ends = reader.end_offsets([TopicPartition(OFFSETS, p) for p in (0, 1)])
    assert ends[TopicPartition(OFFSETS, partition_for(group, 2))] > 0
    assert cluster.zk.get_topic(OFFSETS).value.partitions == {0: (0,), 1: (0,)}  # type: ignore[union-attr]


def test_clients_cannot_add_partitions_to_the_offsets_topic(
    cluster_factory: ClusterFactory,
) -> None:
    # Groups hash over __consumer_offsets' partition count: had the 3 partitions become 6,
    # most of these groups would look for their offsets in a partition that has none.
    cluster = cluster_factory(n_brokers=2)
    _create_topic(cluster, replication_factor=2)
    tp = TopicPartition(TOPIC, 0)
    groups = {f"group-{i}": i + 1 for i in range(10)}
    assert len({partition_for(g, 3) for g in groups}) == 3
    for group, offset in groups.items():
        with Consumer(
            bootstrap_servers=cluster.bootstrap_servers, group_id=group, enable_auto_commit=False
        ) as committer:
            committer.assign([tp])
            committer.commit({tp: offset})
    before = cluster.zk.get_topic(OFFSETS)
    assert before is not None and len(before.value.partitions) == 3

    with cluster.admin() as admin:
        for validate_only in (True, False):
            refused = admin.create_partitions({OFFSETS: 6}, validate_only=validate_only)[OFFSETS]
            assert refused is not None
            assert (refused.code, refused.message) == (ErrorCode.INVALID_REQUEST, NOT_RESIZABLE)
    with RawKafka(_controller_kafka_address(cluster), timeout_s=15) as raw:
        for validate_only in (True, False):
            answer = raw.call(
                CREATE_PARTITIONS,
                3,
                {
                    "topics": [{"name": OFFSETS, "count": 6, "assignments": None}],
                    "timeout": 5000,
                    "validate_only": validate_only,
                },
            )
            assert [(r.name, r.error_code, r.error_message) for r in answer.results] == [
                (OFFSETS, ErrorCode.INVALID_REQUEST, NOT_RESIZABLE)
            ]
    altered = _cli(cluster, "--alter", "--topic", OFFSETS, "--partitions", "6")
    assert (altered.returncode, altered.stdout) == (1, "")
    assert altered.stderr == f"Error while executing topic command : {NOT_RESIZABLE}\n"

    time.sleep(1)  # partitions, had any been added, would be in the metadata by now
    after = cluster.zk.get_topic(OFFSETS)
    assert after is not None and after.value.partitions == before.value.partitions
    with cluster.admin() as admin:
        described = admin.describe_topics([OFFSETS])
    assert len(described[OFFSETS].partitions) == 3
    for group, offset in groups.items():
        with Consumer(bootstrap_servers=cluster.bootstrap_servers, group_id=group) as reader:
            assert reader.committed(tp) == offset, group
