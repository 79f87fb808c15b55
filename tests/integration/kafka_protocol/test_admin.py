"""Topic and config administration over Kafka's wire protocol, with Kafka's own clients.

kafka-python's ``KafkaAdminClient`` and confluent-kafka's ``AdminClient`` (librdkafka) against
real brokers: CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs, AlterConfigs and
IncrementalAlterConfigs, read back through Metadata, through the gRPC door (minikafka's own
AdminClient) and from ZooKeeper. Where a client hides an answer (it retries, or cannot send
what is being checked), the request goes raw: kio's types, one socket, one frame.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import confluent_kafka
import confluent_kafka.admin as ck
import kafka
import pytest
from kafka.admin import AlterConfigOp, ConfigResource

from minikafka.broker.server.kafka.schema import (
    Entity,
)
from minikafka.client.admin import NewTopic as GrpcNewTopic
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.errors import ErrorCode
from tests.integration.cluster import Cluster
from tests.integration.conftest import ClusterFactory
from tests.integration.kafka_protocol.raw import RawKafka

pytestmark = pytest.mark.integration

API_VERSIONS, CREATE_TOPICS, DELETE_TOPICS = 18, 19, 20
DESCRIBE_CONFIGS, ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS = 32, 33, 44
TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8  # Kafka's ConfigResource types


# --- clients ------------------------------------------------------------------------------------


@pytest.fixture
def cluster(cluster_factory: ClusterFactory) -> Cluster:
    return cluster_factory(n_brokers=3)


@pytest.fixture
def kp_admin(cluster: Cluster) -> Iterator[kafka.KafkaAdminClient]:
    admin = kafka.KafkaAdminClient(
        bootstrap_servers=cluster.kafka_bootstrap_servers,
        client_id="test-admin-kafka-python",
        request_timeout_ms=10_000,
    )
    yield admin
    admin.close()


@pytest.fixture
def ck_admin(cluster: Cluster) -> ck.AdminClient:
    return ck.AdminClient(
        {
            "bootstrap.servers": cluster.kafka_bootstrap_servers,
            "client.id": "test-admin-confluent",
            "socket.timeout.ms": 10_000,
            # librdkafka's admin client is a producer, and a producer's Metadata asks the broker
            # to create a missing topic: a probe for a deleted or validate-only topic would
            # create it (on Kafka too). librdkafka warns that this is a consumer property, and
            # honours it.
            "allow.auto.create.topics": False,
        }
    )


def raw(address: str, api_key: int, version: int, values: Mapping[str, Any]) -> Entity:
    """One request on a fresh connection to ``address``; the decoded response."""
    with RawKafka(address, timeout_s=15) as connection:
        return connection.call(api_key, version, values)


def controller_address(cluster: Cluster) -> str:
    controller = cluster.controller_id()
    assert controller is not None
    return cluster.brokers[controller].kafka_address


def wait_for(predicate: Callable[[], Any], what: str, timeout_s: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def ck_topic(admin: ck.AdminClient, topic: str) -> Any:
    """librdkafka's Metadata for one topic (its ``error`` is set when the topic is unknown).

    One topic at a time: librdkafka's every-topic Metadata v12 request carries bytes after the
    body (Kafka ignores them, this broker's framing does not yet).
    """
    return admin.list_topics(topic=topic, timeout=10).topics[topic]


def ck_exists(admin: ck.AdminClient, topic: str) -> bool:
    error = ck_topic(admin, topic).error
    if error is not None and error.code() != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        raise AssertionError(f"metadata of {topic}: {error}")
    return error is None


def ck_wait_for_topic(admin: ck.AdminClient, topic: str, partitions: int) -> Any:
    """librdkafka's view of ``topic`` once every partition has a leader."""

    def ready() -> Any:
        found = ck_topic(admin, topic)
        if found.error is not None or len(found.partitions) != partitions:
            return None
        if any(p.leader < 0 for p in found.partitions.values()):
            return None
        return found

    return wait_for(ready, f"{topic} with {partitions} partitions in metadata")


def ck_error(future: Any) -> int:
    """The Kafka error code a confluent-kafka admin future failed with (0: it succeeded)."""
    try:
        future.result(timeout=15)
    except confluent_kafka.KafkaException as exc:
        code: int = exc.args[0].code()
        return code
    return 0


def kp_errors(result: Mapping[str, Any], key: str = "topics") -> dict[str, int]:
    return {t["name"]: t["error_code"] for t in result[key]}


# --- CreateTopics and Metadata ------------------------------------------------------------------


def test_kafka_python_creates_topics_and_describes_them_through_metadata(
    cluster: Cluster, kp_admin: kafka.KafkaAdminClient
) -> None:
    result = kp_admin.create_topics(
        {
            "kp-defaults": {},  # num.partitions 1, default.replication.factor 3
            "kp-explicit": {"num_partitions": 4, "replication_factor": 2},
            "kp-configs": {
                "num_partitions": 1,
                "replication_factor": 1,
                "configs": {"retention.ms": "3600000", "cleanup.policy": "compact"},
            },
            "kp-manual": {"assignments": {0: [2, 1], 1: [1, 0], 2: [0, 2]}},
        },
        timeout_ms=10_000,
        wait_for_metadata=True,
    )
    # The controller was found through our Metadata's controller_id, not by luck.
    assert kp_admin._controller_id == cluster.controller_id()
    created = {t["name"]: t for t in result["topics"]}
    assert {name: t["error_code"] for name, t in created.items()} == dict.fromkeys(created, 0)
    # v5+: the created topic's shape and effective configs
    shapes = {name: (t["num_partitions"], t["replication_factor"]) for name, t in created.items()}
    assert shapes == {
        "kp-defaults": (1, 3),
        "kp-explicit": (4, 2),
        "kp-configs": (1, 1),
        "kp-manual": (3, 2),
    }
    configs = created["kp-configs"]["configs"]
    assert configs["retention.ms"]["value"] == "3600000"
    assert configs["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert configs["cleanup.policy"]["value"] == "compact"
    assert configs["segment.bytes"]["config_source"] == "DEFAULT_CONFIG"
    # v7: the topic id is the one Metadata (and ZooKeeper) give
    topic_ids = {name: t["topic_id"] for name, t in created.items()}

    described = {t["name"]: t for t in kp_admin.describe_topics(list(created))}
    for name, topic in described.items():
        assert topic["error_code"] == 0
        assert str(topic["topic_id"]) == str(topic_ids[name])
        for p in topic["partitions"]:
            assert p["leader_id"] == p["replica_nodes"][0]  # the preferred leader
            assert sorted(p["isr_nodes"]) == sorted(p["replica_nodes"])
    assert len(described["kp-defaults"]["partitions"]) == 1
    assert len(described["kp-defaults"]["partitions"][0]["replica_nodes"]) == 3
    assert len(described["kp-explicit"]["partitions"]) == 4
    assert {len(p["replica_nodes"]) for p in described["kp-explicit"]["partitions"]} == {2}
    manual = {
        p["partition_index"]: p["replica_nodes"] for p in described["kp-manual"]["partitions"]
    }
    assert manual == {0: [2, 1], 1: [1, 0], 2: [0, 2]}
    # the same topics through the gRPC door and in ZooKeeper
    with cluster.admin() as grpc_admin:
        assert grpc_admin.describe_topics(["kp-explicit"])["kp-explicit"].replication_factor == 2
        assert grpc_admin.describe_topic_configs("kp-configs")["retention.ms"].value == "3600000"
    assert cluster.zk.get_topic_config("kp-configs") == {
        "retention.ms": "3600000",
        "cleanup.policy": "compact",
    }

    # validate_only answers as a creation would, and creates nothing
    checked = kp_admin.create_topics(
        {"kp-validated": {"num_partitions": 5, "replication_factor": 2}}, validate_only=True
    )
    (topic,) = checked["topics"]
    assert (topic["error_code"], topic["num_partitions"], topic["replication_factor"]) == (0, 5, 2)
    # The answer follows the controller's event, which writes a created topic's znode before
    # any broker's metadata can hold it: its absence now is absence for good.
    assert cluster.zk.get_topic("kp-validated") is None
    assert "kp-validated" not in kp_admin.list_topics()


def test_confluent_kafka_creates_topics_and_lists_them_through_metadata(
    cluster: Cluster, ck_admin: ck.AdminClient
) -> None:
    futures = ck_admin.create_topics(
        [
            ck.NewTopic("ck-defaults"),
            ck.NewTopic("ck-explicit", num_partitions=3, replication_factor=2),
            ck.NewTopic(
                "ck-configs",
                num_partitions=2,
                replication_factor=3,
                config={"retention.bytes": "1048576", "min.insync.replicas": "2"},
            ),
            ck.NewTopic("ck-manual", num_partitions=2, replica_assignment=[[0, 1, 2], [1, 2, 0]]),
        ],
        operation_timeout=10,
    )
    assert {name: ck_error(f) for name, f in futures.items()} == dict.fromkeys(futures, 0)
    metadata = ck_admin.list_topics(topic="ck-defaults", timeout=10)
    assert metadata.controller_id == cluster.controller_id()

    expected = {
        "ck-defaults": (1, 3),
        "ck-explicit": (3, 2),
        "ck-configs": (2, 3),
        "ck-manual": (2, 3),
    }
    for name, (partitions, replication_factor) in expected.items():
        topic = ck_wait_for_topic(ck_admin, name, partitions)
        for p in topic.partitions.values():
            assert len(p.replicas) == replication_factor
            assert p.leader == p.replicas[0]
            assert sorted(p.isrs) == sorted(p.replicas)
    manual = ck_topic(ck_admin, "ck-manual").partitions
    assert [manual[0].replicas, manual[1].replicas] == [[0, 1, 2], [1, 2, 0]]
    assert cluster.zk.get_topic_config("ck-configs") == {
        "retention.bytes": "1048576",
        "min.insync.replicas": "2",
    }

    futures = ck_admin.create_topics(
        [ck.NewTopic("ck-validated", num_partitions=2, replication_factor=1)], validate_only=True
    )
    assert ck_error(futures["ck-validated"]) == 0
    # absent from ZooKeeper once answered: absent for good (as for kp-validated above)
    assert cluster.zk.get_topic("ck-validated") is None
    assert not ck_exists(ck_admin, "ck-validated")


def test_create_topics_errors(
    cluster: Cluster, kp_admin: kafka.KafkaAdminClient, ck_admin: ck.AdminClient
) -> None:
    kp_admin.create_topics({"taken": {"num_partitions": 1, "replication_factor": 1}})
    result = kp_admin.create_topics(
        {
            "taken": {"num_partitions": 1, "replication_factor": 1},
            "too-many-replicas": {"num_partitions": 1, "replication_factor": 4},
            "unknown-config": {"configs": {"retention.fortnights": "2"}},
            "bad-config-value": {"configs": {"retention.ms": "soon"}},
            "bad/name": {"num_partitions": 1, "replication_factor": 1},
            "no-partitions": {"num_partitions": 0, "replication_factor": 1},
        },
        raise_errors=False,
    )
    assert kp_errors(result) == {
        "taken": ErrorCode.TOPIC_ALREADY_EXISTS,
        "too-many-replicas": ErrorCode.INVALID_REPLICATION_FACTOR,
        "unknown-config": ErrorCode.INVALID_CONFIG,
        "bad-config-value": ErrorCode.INVALID_CONFIG,
        "bad/name": ErrorCode.INVALID_TOPIC_EXCEPTION,
        "no-partitions": ErrorCode.INVALID_PARTITIONS,
    }
    messages = {t["name"]: t["error_message"] for t in result["topics"]}
    assert "already exists" in messages["taken"]
    assert "retention.fortnights" in messages["unknown-config"]

    futures = ck_admin.create_topics(
        [
            ck.NewTopic("taken", 1, 1),
            ck.NewTopic("too-many-replicas", 1, 4),
            ck.NewTopic("bad-config-value", 1, 1, config={"min.insync.replicas": "0"}),
            ck.NewTopic("x" * 250, 1, 1),
        ],
        operation_timeout=10,
    )
    assert {name[:20]: ck_error(f) for name, f in futures.items()} == {
        "taken": ErrorCode.TOPIC_ALREADY_EXISTS,
        "too-many-replicas": ErrorCode.INVALID_REPLICATION_FACTOR,
        "bad-config-value": ErrorCode.INVALID_CONFIG,
        "x" * 20: ErrorCode.INVALID_TOPIC_EXCEPTION,
    }

    # What the clients keep to themselves: a config without a value, a topic named twice,
    # numbers together with an assignment, and another broker than the controller.
    def topic(name: str, **fields: Any) -> dict[str, Any]:
        return {
            "name": name,
            "num_partitions": 1,
            "replication_factor": 1,
            "assignments": [],
            "configs": [],
            **fields,
        }

    answer = raw(
        controller_address(cluster),
        CREATE_TOPICS,
        7,
        {
            "topics": [
                topic("null-config", configs=[{"name": "retention.ms", "value": None}]),
                topic("twice"),
                topic("twice"),
                topic("both", assignments=[{"partition_index": 0, "broker_ids": [0]}]),
            ],
            "timeout": 5000,
        },
    )
    assert {t.name: t.error_code for t in answer.topics} == {
        "null-config": ErrorCode.INVALID_CONFIG,
        "twice": ErrorCode.INVALID_REQUEST,
        "both": ErrorCode.INVALID_REQUEST,
    }
    assert all(t.num_partitions == -1 for t in answer.topics)
    other = next(b for b in cluster.brokers.values() if b.broker_id != cluster.controller_id())
    answer = raw(
        other.kafka_address, CREATE_TOPICS, 7, {"topics": [topic("elsewhere")], "timeout": 5000}
    )
    assert [t.error_code for t in answer.topics] == [ErrorCode.NOT_CONTROLLER]
    assert cluster.zk.get_topic("elsewhere") is None
    assert cluster.zk.get_topic("null-config") is None


# --- CreatePartitions ---------------------------------------------------------------------------


def test_create_partitions(
    cluster: Cluster, kp_admin: kafka.KafkaAdminClient, ck_admin: ck.AdminClient
) -> None:
    kp_admin.create_topics(
        {
            "grow-kp": {"num_partitions": 1, "replication_factor": 2},
            "grow-ck": {"num_partitions": 2, "replication_factor": 1},
        },
        wait_for_metadata=True,
    )
    result = kp_admin.create_partitions({"grow-kp": 3})
    assert [r.error_code for r in result.results] == [0]
    futures = ck_admin.create_partitions(
        [ck.NewPartitions("grow-ck", 4, replica_assignment=[[1], [2]])], operation_timeout=10
    )
    assert ck_error(futures["grow-ck"]) == 0

    ck_wait_for_topic(ck_admin, "grow-kp", 3)
    grown = ck_wait_for_topic(ck_admin, "grow-ck", 4)
    assert [grown.partitions[2].replicas, grown.partitions[3].replicas] == [[1], [2]]
    kp_admin.wait_for_topics(["grow-kp", "grow-ck"])
    (described,) = kp_admin.describe_topics(["grow-kp"])
    assert sorted(p["partition_index"] for p in described["partitions"]) == [0, 1, 2]
    assert {len(p["replica_nodes"]) for p in described["partitions"]} == {2}

    # fewer partitions than now, an unknown topic, and validate_only
    result = kp_admin.create_partitions({"grow-kp": 2, "missing": 2}, raise_errors=False)
    assert {r.name: r.error_code for r in result.results} == {
        "grow-kp": ErrorCode.INVALID_PARTITIONS,
        "missing": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    futures = ck_admin.create_partitions([ck.NewPartitions("grow-ck", 6)], validate_only=True)
    assert ck_error(futures["grow-ck"]) == 0
    # as for validate-only creations: nothing written by the time of the answer, nothing ever
    grow_ck = cluster.zk.get_topic("grow-ck")
    assert grow_ck is not None and len(grow_ck.value.partitions) == 4
    assert len(ck_topic(ck_admin, "grow-ck").partitions) == 4


def test_new_partitions_are_known_when_create_partitions_answers(
    cluster_factory: ClusterFactory,
) -> None:
    # One broker: the one that answers CreatePartitions is the one the next request asks.
    single = cluster_factory(n_brokers=1)
    bootstrap: dict[str, str | int | float | bool] = {
        "bootstrap.servers": single.kafka_bootstrap_servers
    }
    admin = ck.AdminClient(bootstrap)
    ck_error(admin.create_topics([ck.NewTopic("growing", 1, 1)], operation_timeout=10)["growing"])
    for count in range(2, 6):
        grown = admin.create_partitions([ck.NewPartitions("growing", count)], operation_timeout=10)
        assert ck_error(grown["growing"]) == 0
        # At once, the new partition's leader is in the broker's metadata: ListOffsets there.
        new = {"partition_index": count - 1, "timestamp": -1}
        answer = raw(
            single.brokers[0].kafka_address,
            2,
            1,
            {"replica_id": -1, "topics": [{"name": "growing", "partitions": [new]}]},
        )
        [listed] = answer.topics[0].partitions
        assert (listed.error_code, listed.offset) == (ErrorCode.NONE, 0)
        # and for a client that had not seen the topic (librdkafka keeps the partition count
        # it saw, so each round asks with a new one)
        tp = confluent_kafka.TopicPartition("growing", count - 1)
        fresh = ck.AdminClient(bootstrap)
        latest: Any = ck.OffsetSpec  # its class methods are untyped
        offsets = fresh.list_offsets({tp: latest.latest()}, request_timeout=10)
        assert offsets[tp].result(15).offset == 0


# --- DescribeConfigs ----------------------------------------------------------------------------


def test_describe_configs_of_topics_and_brokers(
    cluster: Cluster, kp_admin: kafka.KafkaAdminClient, ck_admin: ck.AdminClient
) -> None:
    kp_admin.create_topics(
        {
            "described": {
                "num_partitions": 1,
                "replication_factor": 1,
                "configs": {"retention.ms": "60000"},
            }
        },
        wait_for_metadata=True,
    )
    described = kp_admin.describe_configs(
        [ConfigResource("TOPIC", "described")], include_synonyms=True, config_filter="all"
    )
    configs = described["topic"]["described"]
    retention = configs["retention.ms"]
    assert retention["value"] == "60000"
    assert retention["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert retention["read_only"] is False and retention["is_sensitive"] is False
    assert retention["config_type"] == "LONG"
    assert [(s["name"], s["source"]) for s in retention["synonyms"]] == [
        ("retention.ms", "DYNAMIC_TOPIC_CONFIG"),
        ("log.retention.ms", "DEFAULT_CONFIG"),
    ]
    assert configs["cleanup.policy"]["config_type"] == "LIST"
    assert configs["unclean.leader.election.enable"]["config_type"] == "BOOLEAN"
    assert configs["segment.bytes"]["config_source"] == "DEFAULT_CONFIG"
    assert configs["segment.bytes"]["value"] == "1073741824"
    # only the overrides, kafka-python's default filter
    modified = kp_admin.describe_configs([ConfigResource("TOPIC", "described")])
    assert set(modified["topic"]["described"]) == {"retention.ms"}

    broker_id = cluster.controller_id()
    assert broker_id is not None
    brokers = kp_admin.describe_configs(
        [ConfigResource("BROKER", str(broker_id))], include_synonyms=True, config_filter="all"
    )
    broker = brokers["broker"][str(broker_id)]
    assert broker["num.partitions"]["value"] == "1"
    assert broker["num.partitions"]["config_source"] == "STATIC_BROKER_CONFIG"  # server.properties
    assert broker["num.partitions"]["read_only"] is True
    assert broker["num.partitions"]["config_type"] == "INT"
    assert broker["broker.id"]["value"] == str(broker_id)
    assert broker["log.segment.bytes"]["config_source"] == "DEFAULT_CONFIG"

    # confluent-kafka: a topic (with chosen keys) and a broker
    resource = ck.ConfigResource(ck.ResourceType.TOPIC, "described")
    entries = ck_admin.describe_configs([resource])[resource].result(timeout=10)
    assert entries["retention.ms"].value == "60000"
    assert entries["retention.ms"].source == ck.ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert entries["retention.ms"].is_default is False
    assert entries["min.insync.replicas"].source == ck.ConfigSource.DEFAULT_CONFIG.value
    resource = ck.ConfigResource(ck.ResourceType.BROKER, str(broker_id))
    entries = ck_admin.describe_configs([resource])[resource].result(timeout=10)
    assert entries["default.replication.factor"].value == "3"
    assert entries["default.replication.factor"].is_read_only is True
    assert (
        entries["default.replication.factor"].source == ck.ConfigSource.STATIC_BROKER_CONFIG.value
    )

    # chosen keys, a missing topic, a bad name, another broker's id, and BROKER_LOGGER
    answer = raw(
        cluster.brokers[broker_id].kafka_address,
        DESCRIBE_CONFIGS,
        4,
        {
            "resources": [
                {
                    "resource_type": TOPIC,
                    "resource_name": "described",
                    "configuration_keys": ["retention.ms", "segment.ms"],
                },
                {"resource_type": TOPIC, "resource_name": "missing", "configuration_keys": None},
                {"resource_type": TOPIC, "resource_name": "bad/name", "configuration_keys": None},
                {
                    "resource_type": BROKER,
                    "resource_name": str((broker_id + 1) % 3),
                    "configuration_keys": None,
                },
                {
                    "resource_type": BROKER_LOGGER,
                    "resource_name": str(broker_id),
                    "configuration_keys": None,
                },
            ],
            "include_synonyms": False,
            "include_documentation": True,
        },
    )
    results = answer.results
    assert sorted(c.name for c in results[0].configs) == ["retention.ms", "segment.ms"]
    assert all(c.synonyms == () and c.documentation is None for c in results[0].configs)
    assert [r.error_code for r in results] == [
        ErrorCode.NONE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.INVALID_TOPIC_EXCEPTION,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.INVALID_REQUEST,
    ]
    assert "Unsupported resource type" in results[4].error_message


# --- AlterConfigs and IncrementalAlterConfigs -----------------------------------------------------


# confluent-kafka's alter_configs is deprecated but still the way to send AlterConfigs
@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated:DeprecationWarning")
def test_alter_configs_incrementally_and_whole(
    cluster: Cluster, kp_admin: kafka.KafkaAdminClient, ck_admin: ck.AdminClient
) -> None:
    kp_admin.create_topics(
        {
            "altered": {
                "num_partitions": 1,
                "replication_factor": 1,
                "configs": {"retention.ms": "60000"},
            }
        },
        wait_for_metadata=True,
    )
    grpc_admin = cluster.admin()

    def overrides() -> dict[str, str]:
        return cluster.zk.get_topic_config("altered")

    # IncrementalAlterConfigs from kafka-python: SET, DELETE and APPEND on a list key
    result = kp_admin.alter_configs(
        [
            ConfigResource(
                "TOPIC",
                "altered",
                configs={
                    "segment.bytes": "1048576",
                    "retention.ms": (AlterConfigOp.DELETE, None),
                    "cleanup.policy": (AlterConfigOp.APPEND, "compact"),
                },
            )
        ],
        incremental=True,
    )
    assert result == {"topic": {"altered": "OK"}}
    assert overrides() == {"segment.bytes": "1048576", "cleanup.policy": "delete,compact"}
    read_back = grpc_admin.describe_topic_configs("altered")
    assert read_back["segment.bytes"].value == "1048576"
    assert read_back["retention.ms"].source == pb.ConfigSource.CONFIG_SOURCE_DEFAULT_CONFIG

    # IncrementalAlterConfigs from confluent-kafka
    resource = ck.ConfigResource(
        ck.ResourceType.TOPIC,
        "altered",
        incremental_configs=[
            ck.ConfigEntry(
                "max.message.bytes", "2000000", incremental_operation=ck.AlterConfigOpType.SET
            ),
            ck.ConfigEntry(
                "cleanup.policy", "delete", incremental_operation=ck.AlterConfigOpType.SUBTRACT
            ),
        ],
    )
    assert ck_error(ck_admin.incremental_alter_configs([resource])[resource]) == 0
    assert overrides() == {
        "segment.bytes": "1048576",
        "cleanup.policy": "compact",
        "max.message.bytes": "2000000",
    }

    # AlterConfigs replaces the whole override set: what it leaves out goes back to default
    resource = ck.ConfigResource(
        ck.ResourceType.TOPIC, "altered", set_config={"retention.ms": "120000"}
    )
    assert ck_error(ck_admin.alter_configs([resource])[resource]) == 0
    assert overrides() == {"retention.ms": "120000"}
    # ... and kafka-python's AlterConfigs, which first reads the overrides to keep them
    result = kp_admin.alter_configs(
        [ConfigResource("TOPIC", "altered", configs={"flush.messages": "1000"})], incremental=False
    )
    assert result == {"topic": {"altered": "OK"}}
    assert overrides() == {"retention.ms": "120000", "flush.messages": "1000"}
    described = kp_admin.describe_configs([ConfigResource("TOPIC", "altered")])["topic"]["altered"]
    assert {name: c["value"] for name, c in described.items()} == overrides()
    assert grpc_admin.describe_topic_configs("altered")["flush.messages"].value == "1000"

    # what is refused: bad values, unknown keys, APPEND on a key that is not a list, broker
    # resources, a null SET; validate_only writes nothing
    address = cluster.kafka_bootstrap_servers.split(",")[0]

    def incremental(*configs: tuple[str, int, str | None], validate_only: bool = False) -> Any:
        answer = raw(
            address,
            INCREMENTAL_ALTER_CONFIGS,
            1,
            {
                "resources": [
                    {
                        "resource_type": TOPIC,
                        "resource_name": "altered",
                        "configs": [
                            {"name": n, "config_operation": op, "value": v} for n, op, v in configs
                        ],
                    }
                ],
                "validate_only": validate_only,
            },
        )
        return answer.responses[0].error_code

    assert incremental(("retention.ms", 0, "never")) == ErrorCode.INVALID_CONFIG
    assert incremental(("retention.fortnights", 0, "2")) == ErrorCode.INVALID_CONFIG
    assert incremental(("retention.ms", 2, "5")) == ErrorCode.INVALID_CONFIG
    assert incremental(("retention.ms", 0, None)) == ErrorCode.INVALID_REQUEST
    assert incremental(("retention.ms", 9, "5")) == ErrorCode.INVALID_REQUEST
    assert incremental(("retention.ms", 0, "5"), validate_only=True) == ErrorCode.NONE
    answer = raw(
        address,
        ALTER_CONFIGS,
        2,
        {
            "resources": [
                {
                    "resource_type": TOPIC,
                    "resource_name": "altered",
                    "configs": [{"name": "segment.ms", "value": "x"}],
                },
                {"resource_type": TOPIC, "resource_name": "missing", "configs": []},
                {
                    "resource_type": BROKER,
                    "resource_name": "0",
                    "configs": [{"name": "num.partitions", "value": "2"}],
                },
            ],
            "validate_only": False,
        },
    )
    assert [r.error_code for r in answer.responses] == [
        ErrorCode.INVALID_CONFIG,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.INVALID_REQUEST,
    ]
    assert overrides() == {"retention.ms": "120000", "flush.messages": "1000"}


# --- DeleteTopics -------------------------------------------------------------------------------


def test_delete_topics_by_name_and_by_id(
    cluster: Cluster, kp_admin: kafka.KafkaAdminClient, ck_admin: ck.AdminClient
) -> None:
    created = kp_admin.create_topics(
        {
            name: {"num_partitions": 2, "replication_factor": 2}
            for name in ("gone-by-name", "gone-by-id", "gone-ck")
        },
        wait_for_metadata=True,
    )
    topic_id = uuid.UUID(
        next(t["topic_id"] for t in created["topics"] if t["name"] == "gone-by-id")
    )
    assert topic_id != uuid.UUID(int=0)

    result = kp_admin.delete_topics(["gone-by-name", topic_id], timeout_ms=10_000)
    assert {t["name"]: t["error_code"] for t in result["topics"]} == {
        "gone-by-name": 0,
        "gone-by-id": 0,
    }
    futures = ck_admin.delete_topics(["gone-ck"], operation_timeout=10)
    assert ck_error(futures["gone-ck"]) == 0

    gone = {"gone-by-name", "gone-by-id", "gone-ck"}
    # the servicer waited for the deletion to complete (timeout_ms > 0): the znodes are gone
    assert not gone & set(cluster.zk.get_all_topics())
    wait_for(
        lambda: not any(ck_exists(ck_admin, t) for t in gone), "deleted topics to leave metadata"
    )
    wait_for(lambda: not gone & set(kp_admin.list_topics()), "deleted topics to leave metadata")
    with cluster.admin() as grpc_admin:
        assert not gone & set(grpc_admin.list_topics())

    # an unknown name, an unknown id, a name and an id together
    result = kp_admin.delete_topics(["never-was", uuid.uuid4()], raise_errors=False)
    assert sorted(t["error_code"] for t in result["topics"]) == [
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.UNKNOWN_TOPIC_ID,
    ]
    answer = raw(
        controller_address(cluster),
        DELETE_TOPICS,
        6,
        {"topics": [{"name": "never-was", "topic_id": uuid.uuid4()}], "timeout": 1000},
    )
    assert [t.error_code for t in answer.responses] == [ErrorCode.INVALID_REQUEST]


# --- one core, two doors ------------------------------------------------------------------------


def test_records_produced_over_kafka_to_a_topic_created_over_grpc(
    cluster: Cluster, kp_admin: kafka.KafkaAdminClient, ck_admin: ck.AdminClient
) -> None:
    with cluster.admin() as grpc_admin:
        results = grpc_admin.create_topics(
            [GrpcNewTopic("made-over-grpc", 2, 2, configs={"retention.ms": "90000"})]
        )
    assert results == {"made-over-grpc": None}
    topic = ck_wait_for_topic(ck_admin, "made-over-grpc", 2)
    assert {len(p.replicas) for p in topic.partitions.values()} == {2}
    configs = kp_admin.describe_configs([ConfigResource("TOPIC", "made-over-grpc")])
    assert configs["topic"]["made-over-grpc"]["retention.ms"]["value"] == "90000"

    producer = confluent_kafka.Producer(
        {"bootstrap.servers": cluster.kafka_bootstrap_servers, "acks": "all", "linger.ms": 0}
    )
    for i in range(10):
        producer.produce("made-over-grpc", value=f"v{i}".encode(), partition=i % 2)
    assert producer.flush(15) == 0
    values = [r.value or b"" for p in (0, 1) for r in cluster.fetch_all("made-over-grpc", p)]
    assert sorted(values) == sorted(f"v{i}".encode() for i in range(10))


def test_both_doors_answer_create_topics_once_this_broker_knows_the_leaders(
    cluster: Cluster,
) -> None:
    """CreateTopics waits, in the core both doors call, until the controller's own metadata
    has a leader for every partition created (Kafka's DelayedCreatePartitions): the next
    request to that broker, on either door, knows the topic."""
    controller = cluster.controller_id()
    assert controller is not None
    address = controller_address(cluster)
    created = raw(
        address,
        CREATE_TOPICS,
        7,
        {
            "topics": [
                {
                    "name": "known-over-kafka",
                    "num_partitions": 3,
                    "replication_factor": 2,
                    "assignments": [],
                    "configs": [],
                }
            ],
            "timeout": 10_000,
        },
    )
    assert [(t.name, t.error_code) for t in created.topics] == [("known-over-kafka", 0)]
    entry = metadata_v9(address, "known-over-kafka", False)
    assert entry.error_code == ErrorCode.NONE
    assert sorted((p.partition_index, p.leader_id >= 0) for p in entry.partitions) == [
        (0, True),
        (1, True),
        (2, True),
    ]
    # by topic id, which this broker resolves from its metadata alone
    deleted = raw(
        address,
        DELETE_TOPICS,
        6,
        {"topics": [{"name": None, "topic_id": created.topics[0].topic_id}], "timeout": 10_000},
    )
    assert [(t.name, t.error_code) for t in deleted.responses] == [("known-over-kafka", 0)]

    request = pb.CreateTopicsRequest(
        topics=[
            pb.CreateTopicsRequest.CreatableTopic(
                name="known-over-grpc", num_partitions=3, replication_factor=2
            )
        ],
        timeout_ms=10_000,
    )
    answer = pb_grpc.AdminStub(cluster.channel(controller)).CreateTopics(request, timeout=15)
    assert [(t.name, t.error_code) for t in answer.topics] == [("known-over-grpc", 0)]
    (topic,) = cluster.metadata(controller, ["known-over-grpc"]).topics
    assert topic.error_code == ErrorCode.NONE
    assert sorted((p.partition_index, p.leader_id >= 0) for p in topic.partitions) == [
        (0, True),
        (1, True),
        (2, True),
    ]


# --- auto topic creation ------------------------------------------------------------------------

METADATA = 3


def metadata_v9(address: str, topic: str, allow_auto_topic_creation: bool) -> Any:
    """The one topic's entry of a Metadata v9 answer."""
    answer = raw(
        address,
        METADATA,
        9,
        {
            "topics": [{"name": topic}],
            "allow_auto_topic_creation": allow_auto_topic_creation,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False,
        },
    )
    (entry,) = answer.topics
    return entry


def test_metadata_creates_a_missing_topic_when_the_client_and_the_broker_allow_it(
    cluster: Cluster, ck_admin: ck.AdminClient
) -> None:
    address = cluster.kafka_bootstrap_servers.split(",")[0]
    # The client does not allow it: nothing is created.
    assert metadata_v9(address, "not-asked-for", False).error_code == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    )
    assert cluster.zk.get_topic("not-asked-for") is None
    # It does: created with num.partitions and default.replication.factor, and the first answer
    # is LEADER_NOT_AVAILABLE until the controller has elected leaders (Kafka's answer).
    assert metadata_v9(address, "asked-for", True).error_code == ErrorCode.LEADER_NOT_AVAILABLE
    created = cluster.zk.get_topic("asked-for")
    assert created is not None
    assert {len(replicas) for replicas in created.value.partitions.values()} == {3}
    assert len(created.value.partitions) == 1
    ck_wait_for_topic(ck_admin, "asked-for", 1)
    # A name no topic may have is refused, never created.
    assert metadata_v9(address, "bad/name", True).error_code == ErrorCode.INVALID_TOPIC_EXCEPTION

    # A producer writes to a topic nobody created (kafka-python's and librdkafka's producers
    # both ask for creation), and every record is there.
    producer = kafka.KafkaProducer(
        bootstrap_servers=cluster.kafka_bootstrap_servers, acks="all", max_block_ms=20_000
    )
    try:
        for i in range(5):
            producer.send("written-first", value=f"kp{i}".encode()).get(timeout=20)
    finally:
        producer.close()
    ck_producer = confluent_kafka.Producer(
        {"bootstrap.servers": cluster.kafka_bootstrap_servers, "acks": "all", "linger.ms": 0}
    )
    for i in range(5):
        ck_producer.produce("written-first-ck", value=f"ck{i}".encode())
    assert ck_producer.flush(20) == 0
    assert [r.value for r in cluster.fetch_all("written-first", 0)] == [
        f"kp{i}".encode() for i in range(5)
    ]
    assert [r.value for r in cluster.fetch_all("written-first-ck", 0)] == [
        f"ck{i}".encode() for i in range(5)
    ]


def test_no_topic_is_created_when_the_broker_disables_it(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(
        n_brokers=1,
        overrides={"auto.create.topics.enable": "false", "default.replication.factor": "1"},
    )
    address = cluster.kafka_bootstrap_servers
    entry = metadata_v9(address, "never-made", True)
    assert entry.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert cluster.zk.get_topic("never-made") is None
    # The internal topic is the exception, as in Kafka: asking for it creates it.
    assert metadata_v9(address, "__consumer_offsets", False).error_code == (
        ErrorCode.LEADER_NOT_AVAILABLE
    )
    offsets = cluster.zk.get_topic("__consumer_offsets")
    assert offsets is not None
    assert cluster.zk.get_topic_config("__consumer_offsets")["cleanup.policy"] == "compact"


def test_a_replication_factor_larger_than_the_live_brokers_is_refused(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(n_brokers=1, overrides={"default.replication.factor": "2"})
    entry = metadata_v9(cluster.kafka_bootstrap_servers, "too-wide", True)
    assert entry.error_code == ErrorCode.INVALID_REPLICATION_FACTOR
    assert cluster.zk.get_topic("too-wide") is None


# --- ElectLeaders -------------------------------------------------------------------------------


def _moved_off_preferred(cluster: Cluster, topic: str, partitions: int) -> list[int]:
    """Every partition's preferred leader is broker 0 (a manual assignment); restarting it
    moves leadership to another replica (the harness turns automatic rebalancing off), and
    nothing moves it back. The preferred leaders."""
    assignment = {p: [0, 1 + p % 2, 2 - p % 2] for p in range(partitions)}
    with cluster.admin() as admin:
        admin.create_topics([GrpcNewTopic(topic, replica_assignment=assignment)])
    cluster.wait_for(lambda: all(cluster.leader(topic, p) == 0 for p in range(partitions)), 30)
    cluster.kill(0)
    cluster.wait_for(
        lambda: all(cluster.leader(topic, p) not in (-1, 0) for p in range(partitions)),
        30,
        "leaders off broker 0",
    )
    cluster.start(0)
    cluster.wait_until_serving()
    cluster.wait_for(
        lambda: all(len(cluster.isr(topic, p)) == 3 for p in range(partitions)), 30, "full ISRs"
    )
    assert all(cluster.leader(topic, p) != 0 for p in range(partitions))
    return [0] * partitions


def test_elect_preferred_leaders_with_both_admin_clients(cluster: Cluster) -> None:
    preferred = _moved_off_preferred(cluster, "elect", 2)
    # Clients made after the restarts: librdkafka sends ElectLeaders to the controller its
    # metadata names and does not retry NOT_CONTROLLER (nor does Kafka's broker forward it).
    ck_admin = ck.AdminClient({"bootstrap.servers": cluster.kafka_bootstrap_servers})
    kp_admin = kafka.KafkaAdminClient(bootstrap_servers=cluster.kafka_bootstrap_servers)
    try:
        _elect(cluster, preferred, ck_admin, kp_admin)
    finally:
        kp_admin.close()


def _elect(
    cluster: Cluster,
    preferred: list[int],
    ck_admin: ck.AdminClient,
    kp_admin: kafka.KafkaAdminClient,
) -> None:
    # confluent-kafka (ElectLeaders v2, sent to the controller): partition 0.
    futures = ck_admin.elect_leaders(
        confluent_kafka.ElectionType.PREFERRED, [confluent_kafka.TopicPartition("elect", 0)]
    )
    answer = futures.result(timeout=30)
    assert list(answer.values()) == [None]  # no error
    cluster.wait_for(lambda: cluster.leader("elect", 0) == preferred[0], 30, "preferred leader")
    # kafka-python: partition 1, then both again, where the election is no longer needed.
    kp_admin.elect_leaders(0, {"elect": [1]})
    cluster.wait_for(lambda: cluster.leader("elect", 1) == preferred[1], 30, "preferred leader")
    again = kp_admin.elect_leaders(0, {"elect": [0, 1]}, raise_errors=False)
    codes = [p[1] for t in again.replica_election_results for p in t[1]]
    assert codes == [ErrorCode.ELECTION_NOT_NEEDED] * 2
    # An unknown partition gets Kafka's error, the others are elected as asked.
    unknown = ck_admin.elect_leaders(
        confluent_kafka.ElectionType.PREFERRED, [confluent_kafka.TopicPartition("nope", 0)]
    )
    with pytest.raises(confluent_kafka.KafkaException) as raised:
        for error in unknown.result(timeout=30).values():
            if error is not None:
                raise confluent_kafka.KafkaException(error)
    assert raised.value.args[0].code() == confluent_kafka.KafkaError.UNKNOWN_TOPIC_OR_PART


def test_elect_leaders_on_a_broker_that_is_not_the_controller(cluster: Cluster) -> None:
    controller = cluster.wait_for(cluster.controller_id, 30, "a controller")
    other = next(b for b in cluster.brokers.values() if b.broker_id != controller)
    for version in (0, 2):
        answer = raw(
            other.kafka_address,
            43,
            version,
            {"election_type": 0, "topic_partitions": None, "timeout": 10_000},
        )
        if version >= 1:
            assert answer.error_code == ErrorCode.NOT_CONTROLLER
        assert answer.replica_election_results == ()
