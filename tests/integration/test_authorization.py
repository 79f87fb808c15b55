"""Every API asks the authorizer, on both doors, on a real 3-broker cluster running
``authorizer.class.name=kafka.security.authorizer.AclAuthorizer`` with ACLs written to
ZooKeeper before it starts, exercised with real clients (confluent-kafka, kafka-python,
minikafka's gRPC client and hand-made requests).

Until TLS or SASL give clients and brokers names, everyone on a PLAINTEXT listener is
``User:ANONYMOUS``: the ACLs grant ANONYMOUS ClusterAction on the cluster (the brokers need it),
everything on topics and groups named ``open-*``, Read and Write on topics ``ro-*`` and Read on
groups ``ro-*``, and nothing else, so the same principal is allowed and refused by resource
name. Each refusal is checked to change nothing: in ZooKeeper, in the logs' files, in the
offsets topic.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import confluent_kafka
import grpc
import kafka
import kafka.errors
import pytest
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
)

from minikafka.broker.security.acl import (
    CLUSTER_NAME,
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from minikafka.client.admin import NewTopic as MiniNewTopic
from minikafka.client.consumer.consumer import Consumer
from minikafka.client.producer.producer import Producer
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto import raw_records
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode
from minikafka.proto.raw_records import RawFetchResponse, RawProduceRequest
from minikafka.proto.records import encode_batch
from minikafka.zk.acl_store import AclZkStore
from minikafka.zk.zk_data import TopicAssignment, random_uuid_base64
from tests.integration.cluster import Cluster
from tests.integration.conftest import ClusterFactory
from tests.integration.kafka_protocol.raw import RawKafka

pytestmark = pytest.mark.integration

AUTHORIZER = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"}
ANONYMOUS = "User:ANONYMOUS"
_OP, _R = AclOperation, ResourceType
CLUSTER_ACTION = (ResourcePattern(_R.CLUSTER, CLUSTER_NAME), _OP.CLUSTER_ACTION)
GRANTS = [
    CLUSTER_ACTION,
    (ResourcePattern(_R.TOPIC, "open-", PatternType.PREFIXED), _OP.ALL),
    (ResourcePattern(_R.GROUP, "open-", PatternType.PREFIXED), _OP.ALL),
    (ResourcePattern(_R.TOPIC, "ro-", PatternType.PREFIXED), _OP.READ),
    (ResourcePattern(_R.TOPIC, "ro-", PatternType.PREFIXED), _OP.WRITE),
    (ResourcePattern(_R.GROUP, "ro-", PatternType.PREFIXED), _OP.READ),
]
SECRET, READ_ONLY = "secret", "ro-t"


def _entry(operation: AclOperation) -> AccessControlEntry:
    return AccessControlEntry(ANONYMOUS, "*", operation, AclPermissionType.ALLOW)


def _grant(cluster: Cluster, pattern: ResourcePattern, operation: AclOperation) -> None:
    store = AclZkStore(cluster.zk)
    store.ensure_paths()
    store.update_acls(pattern, lambda old: old | {_entry(operation)})


def _revoke(cluster: Cluster, pattern: ResourcePattern, operation: AclOperation) -> None:
    AclZkStore(cluster.zk).update_acls(pattern, lambda old: old - {_entry(operation)})


def _create_in_zookeeper(cluster: Cluster, topic: str, replicas: tuple[int, ...]) -> None:
    """As an operator with ZooKeeper access would (no ACL asked): the controller elects."""
    cluster.zk.create_topic(TopicAssignment(topic, random_uuid_base64(), {0: replicas}))
    cluster.wait_for(
        lambda: cluster.partition_state(topic, 0) is not None and cluster.leader(topic, 0) >= 0,
        timeout_s=30,
        what=f"{topic}-0 to have a leader",
    )


def _secured(cluster_factory: ClusterFactory, replication: str = "kafka") -> Cluster:
    cluster = cluster_factory(3, AUTHORIZER, start=False, replication=replication)
    for pattern, operation in GRANTS:
        _grant(cluster, pattern, operation)
    cluster.start_all()
    cluster.wait_until_serving()
    _create_in_zookeeper(cluster, SECRET, (0, 1, 2))
    _create_in_zookeeper(cluster, READ_ONLY, (0, 1, 2))
    # every broker's metadata has both (the controller's UpdateMetadata carries them in order)
    cluster.wait_for(
        lambda: all(
            READ_ONLY in {t.name for t in cluster.metadata(b, topics=()).topics}
            for b in cluster.brokers
        ),
        timeout_s=30,
        what="the brokers' metadata to know the topics",
    )
    return cluster


def _code(error: Any) -> int:
    """A confluent-kafka KafkaException's or KafkaError's Kafka error code."""
    if isinstance(error, confluent_kafka.KafkaException):
        error = error.args[0]
    return int(error.code())


def _failure(future: Any) -> int:
    try:
        future.result(60)
    except confluent_kafka.KafkaException as exc:
        return _code(exc)
    return 0


def _admin(cluster: Cluster) -> AdminClient:
    return AdminClient(
        {"bootstrap.servers": cluster.kafka_bootstrap_servers, "socket.timeout.ms": 10_000}
    )


def _produce(cluster: Cluster, topic: str, values: list[bytes]) -> list[int]:
    """Each value's delivery error code (0: delivered)."""
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": cluster.kafka_bootstrap_servers, "message.timeout.ms": 20_000}
    )
    codes: list[int] = []
    for value in values:
        producer.produce(
            topic,
            value,
            partition=0,
            on_delivery=lambda err, _m: codes.append(_code(err) if err else 0),
        )
    producer.flush(30)
    return codes


def _consume(cluster: Cluster, topic: str, group: str, want: int) -> tuple[list[bytes], int]:
    """Up to ``want`` values from the start, in ``group``, committed; and the first error."""
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": cluster.kafka_bootstrap_servers,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    values: list[bytes] = []
    error = 0
    deadline = time.monotonic() + 30
    try:
        while len(values) < want and not error and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                error = _code(message.error())
                continue
            values.append(message.value() or b"")
        if values:
            consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return values, error


def _log_end_offsets(cluster: Cluster, topic: str) -> set[int]:
    return {cluster.replica_state(b, topic, 0).log_end_offset for b in cluster.brokers}


def _offsets_topic_mentions(cluster: Cluster, text: bytes) -> bool:
    """Whether any replica of __consumer_offsets holds a record naming ``text``."""
    for broker in cluster.brokers.values():
        for directory in broker.log_dir.glob("__consumer_offsets-*"):
            if any(text in segment.read_bytes() for segment in directory.glob("*.log")):
                return True
    return False


def test_produce_consume_metadata_and_groups_through_kafka_clients(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = _secured(cluster_factory)
    admin = _admin(cluster)

    # CreateTopics: Create on open-* (ALL), none on anything else; the refused one is not made
    created = admin.create_topics(
        [NewTopic("open-orders", 1, 3), NewTopic("forbidden", 1, 3)], request_timeout=30
    )
    assert _failure(created["open-orders"]) == 0
    assert _failure(created["forbidden"]) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert cluster.zk.get_topic("forbidden") is None

    # Metadata: the topics ANONYMOUS may not Describe are left out, and refused when named.
    # CreateTopics answers once the answering broker knows the topic; the broker asked next may
    # hear of it a moment later (in Kafka too).
    def listed_by_admin() -> dict[str, Any] | None:
        topics: dict[str, Any] = admin.list_topics(timeout=15).topics
        return topics if "open-orders" in topics else None

    topics = cluster.wait_for(listed_by_admin, 15, "open-orders in the metadata")
    assert READ_ONLY in topics and SECRET not in topics
    named = admin.list_topics(SECRET, timeout=15).topics[SECRET]
    assert _code(named.error) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    python_client = kafka.KafkaConsumer(bootstrap_servers=cluster.kafka_bootstrap_servers)

    def seen_by_kafka_python() -> set[str] | None:
        seen: set[str] = python_client.topics()
        return seen if "open-orders" in seen else None

    try:
        seen = cluster.wait_for(seen_by_kafka_python, 15, "open-orders in kafka-python's view")
    finally:
        python_client.close()
    assert {"open-orders", READ_ONLY} <= seen and SECRET not in seen

    # Produce: Write on open-* and ro-*, not on the secret topic, which stays empty
    assert _produce(cluster, "open-orders", [b"a", b"b", b"c"]) == [0, 0, 0]
    assert _produce(cluster, SECRET, [b"x"]) == [ErrorCode.TOPIC_AUTHORIZATION_FAILED]
    assert _log_end_offsets(cluster, SECRET) == {0}
    producer = kafka.KafkaProducer(
        bootstrap_servers=cluster.kafka_bootstrap_servers, max_block_ms=10_000
    )
    with pytest.raises(kafka.errors.TopicAuthorizationFailedError):
        producer.send(SECRET, b"y").get(timeout=20)
    producer.close()
    assert _log_end_offsets(cluster, SECRET) == {0}

    # Consume in a group and commit: allowed in open-g; refused in closed-g, which nobody joins
    # and which stores nothing
    values, error = _consume(cluster, "open-orders", "open-g", 3)
    assert (values, error) == ([b"a", b"b", b"c"], 0)
    values, error = _consume(cluster, "open-orders", "closed-g", 3)
    assert (values, error) == ([], ErrorCode.GROUP_AUTHORIZATION_FAILED)
    assert _offsets_topic_mentions(cluster, b"open-g")
    assert not _offsets_topic_mentions(cluster, b"closed-g")

    # ListGroups shows only what ANONYMOUS may Describe; DescribeGroups refuses the others
    listed = {g.group_id for g in admin.list_consumer_groups(request_timeout=15).result(60).valid}
    assert "open-g" in listed and "closed-g" not in listed
    described = admin.describe_consumer_groups(["open-g", "closed-g"], request_timeout=15)
    assert _failure(described["open-g"]) == 0
    assert _failure(described["closed-g"]) == ErrorCode.GROUP_AUTHORIZATION_FAILED

    # authorized operations, as the principal has them on each resource (KIP-430)
    group = admin.describe_consumer_groups(
        ["open-g"], include_authorized_operations=True, request_timeout=15
    )["open-g"].result(60)
    assert {op.name for op in group.authorized_operations} == {"READ", "DESCRIBE", "DELETE"}
    topics_described = admin.describe_topics(
        confluent_kafka.TopicCollection([READ_ONLY]),
        include_authorized_operations=True,
        request_timeout=15,
    )
    read_only = topics_described[READ_ONLY].result(60)
    assert {op.name for op in read_only.authorized_operations} == {"READ", "WRITE", "DESCRIBE"}
    # ClusterAction alone does not let ANONYMOUS Describe the cluster: no operations shown
    cluster_view = admin.describe_cluster(include_authorized_operations=True, request_timeout=15)
    assert not cluster_view.result(60).authorized_operations


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated:DeprecationWarning")
def test_admin_requests_on_a_topic_that_may_only_be_read_and_written_change_nothing(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = _secured(cluster_factory)
    admin = _admin(cluster)
    assert _produce(cluster, READ_ONLY, [b"1", b"2"]) == [0, 0]
    values, _ = _consume(cluster, READ_ONLY, "ro-g", 2)
    assert values == [b"1", b"2"]

    # DeleteRecords needs Delete: refused, the records stay
    ro_partition = confluent_kafka.TopicPartition(READ_ONLY, 0, 2)
    deleted = admin.delete_records([ro_partition], request_timeout=15)
    assert _failure(next(iter(deleted.values()))) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    # CreatePartitions needs Alter, DeleteTopics Delete, AlterConfigs AlterConfigs
    grown = admin.create_partitions([NewPartitions(READ_ONLY, 3)], request_timeout=15)
    assert _failure(grown[READ_ONLY]) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    gone = admin.delete_topics([READ_ONLY], request_timeout=15)
    assert _failure(gone[READ_ONLY]) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    config = ConfigResource(ConfigResource.Type.TOPIC, READ_ONLY, {"retention.ms": "1000"})
    altered = admin.alter_configs([config], request_timeout=15)
    assert _failure(altered[config]) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    incremental = ConfigResource(
        ConfigResource.Type.TOPIC,
        READ_ONLY,
        incremental_configs=[
            ConfigEntry("retention.ms", "1000", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    altered = admin.incremental_alter_configs([incremental], request_timeout=15)
    assert _failure(altered[incremental]) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    # DescribeConfigs needs DescribeConfigs on the topic, and on the cluster for a broker
    described = admin.describe_configs(
        [
            ConfigResource(ConfigResource.Type.TOPIC, READ_ONLY),
            ConfigResource(ConfigResource.Type.BROKER, "0"),
        ],
        request_timeout=15,
    )
    assert sorted(_failure(f) for f in described.values()) == [
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    ]
    # DeleteGroups needs Delete on the group
    dropped = admin.delete_consumer_groups(["ro-g"], request_timeout=15)
    assert _failure(dropped["ro-g"]) == ErrorCode.GROUP_AUTHORIZATION_FAILED

    # nothing of it happened
    time.sleep(1)  # what a wrongly accepted request would have started has had time to show
    assert cluster.zk.get_topic(READ_ONLY) is not None
    topic = cluster.zk.get_topic(READ_ONLY)
    assert topic is not None and len(topic.value.partitions) == 1
    assert cluster.zk.get_topic_config(READ_ONLY) == {}
    again, _ = _consume(cluster, READ_ONLY, "open-check", 2)
    assert again == [b"1", b"2"]
    kept = admin.list_consumer_group_offsets(
        [confluent_kafka.ConsumerGroupTopicPartitions("ro-g")], request_timeout=15
    )
    assert [p.offset for p in kept["ro-g"].result(60).topic_partitions] == [2]

    # the same requests on an open-* topic are served
    created = admin.create_topics([NewTopic("open-admin", 1, 3)], request_timeout=30)
    assert _failure(created["open-admin"]) == 0
    assert _produce(cluster, "open-admin", [b"x", b"y"]) == [0, 0]
    open_config = ConfigResource(ConfigResource.Type.TOPIC, "open-admin", {"retention.ms": "9000"})
    assert _failure(admin.alter_configs([open_config], request_timeout=15)[open_config]) == 0
    assert cluster.zk.get_topic_config("open-admin") == {"retention.ms": "9000"}
    trimmed = admin.delete_records(
        [confluent_kafka.TopicPartition("open-admin", 0, 1)], request_timeout=15
    )
    assert _failure(next(iter(trimmed.values()))) == 0
    more = admin.create_partitions([NewPartitions("open-admin", 2)], request_timeout=15)
    assert _failure(more["open-admin"]) == 0
    removed = admin.delete_topics(["open-admin"], request_timeout=15)
    assert _failure(removed["open-admin"]) == 0


def _raw_produce(cluster: Cluster, topic: str) -> int:
    """One batch to ``topic``-0 over RawData's unary Produce; the partition's error code."""
    header = pb.ProduceRequest(acks=-1, timeout_ms=5_000)
    header.topic_data.add(name=topic).partition_data.add(index=0)
    batch = encode_batch([(int(time.time() * 1000), None, b"raw", ())])
    call: Any = cluster.channel(cluster.leader(topic, 0)).unary_unary(
        raw_records.PRODUCE, response_deserializer=pb.ProduceResponse.FromString
    )
    answer = call(
        raw_records.encode_produce_request(RawProduceRequest(header, [batch])), timeout=10
    )
    return int(answer.responses[0].partition_responses[0].error_code)


def _raw_fetch(channel: grpc.Channel, request: pb.FetchRequest) -> RawFetchResponse:
    call: Any = channel.unary_unary(
        raw_records.FETCH,
        request_serializer=pb.FetchRequest.SerializeToString,
        response_deserializer=raw_records.decode_fetch_response,
    )
    answer: RawFetchResponse = call(request, timeout=10)
    return answer


def test_the_grpc_door_asks_the_same_core(cluster_factory: ClusterFactory) -> None:
    cluster = _secured(cluster_factory)
    # Metadata: all topics without the secret one; named, refused
    listed = {t.name for t in cluster.metadata(0, topics=()).topics}
    assert READ_ONLY in listed and SECRET not in listed
    (named,) = cluster.metadata(0, topics=[SECRET]).topics
    assert named.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    # Produce and Fetch
    refused = cluster.produce(SECRET, 0, [b"x"])
    assert refused.error == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert cluster.produce(READ_ONLY, 0, [b"y"], retry_s=10).ok
    fetch = pb.FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20)
    for topic in (SECRET, READ_ONLY):
        fetch.topics.add(topic=topic).partitions.add(
            partition=0, fetch_offset=0, current_leader_epoch=-1, partition_max_bytes=1 << 20
        )
    data = pb_grpc.DataStub(cluster.channel(cluster.leader(READ_ONLY, 0)))
    answers = {t.topic: t.partitions[0] for t in data.Fetch(fetch, timeout=10).responses}
    assert answers[SECRET].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert answers[SECRET].records == b""
    # the leader of ro-t was asked; whether it leads the secret one or not, it is refused first
    assert answers[READ_ONLY].error_code == ErrorCode.NONE and answers[READ_ONLY].records
    # RawData (the minikafka clients' framing, proto/raw_records.py): the same answers
    assert _raw_produce(cluster, SECRET) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    header, records = _raw_fetch(cluster.channel(cluster.leader(READ_ONLY, 0)), fetch)
    raw_answers = {
        t.topic: (t.partitions[0].error_code, bytes(r))
        for t, r in zip(header.responses, records, strict=True)
    }
    assert raw_answers[SECRET] == (ErrorCode.TOPIC_AUTHORIZATION_FAILED, b"")
    assert raw_answers[READ_ONLY] == (ErrorCode.NONE, answers[READ_ONLY].records)
    # ListOffsets: Describe on the topic, on the gRPC door and through confluent-kafka's admin
    list_offsets = pb.ListOffsetsRequest(replica_id=-1)
    for topic in (SECRET, READ_ONLY):
        list_offsets.topics.add(name=topic).partitions.add(
            partition_index=0, current_leader_epoch=-1, timestamp=-1
        )
    listed_offsets = {
        t.name: t.partitions[0] for t in data.ListOffsets(list_offsets, timeout=10).topics
    }
    assert listed_offsets[SECRET].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert listed_offsets[SECRET].offset == -1
    assert (listed_offsets[READ_ONLY].error_code, listed_offsets[READ_ONLY].offset) == (0, 1)
    with RawKafka(cluster.brokers[0].kafka_address) as raw:
        answer = raw.call(
            2,
            7,
            {
                "replica_id": -1,
                "isolation_level": 0,
                "topics": [
                    {
                        "name": topic,
                        "partitions": [
                            {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}
                        ],
                    }
                    for topic in (SECRET, READ_ONLY)
                ],
            },
        )
    on_kafka = {t.name: t.partitions[0].error_code for t in answer.topics}
    assert on_kafka[SECRET] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    # ro-t is answered by its leader only: broker 0 says what it is, but never refuses it
    assert on_kafka[READ_ONLY] != ErrorCode.TOPIC_AUTHORIZATION_FAILED
    # Admin: CreateTopics refused for a name ANONYMOUS may not Create
    with cluster.admin() as admin:
        created = admin.create_topics([MiniNewTopic("forbidden-grpc", 1, 3)])
    assert created["forbidden-grpc"] is not None
    assert "TOPIC_AUTHORIZATION_FAILED" in str(created["forbidden-grpc"])
    assert cluster.zk.get_topic("forbidden-grpc") is None
    assert _log_end_offsets(cluster, SECRET) == {0}
    # gRPC-only admin: ElectLeaders needs Alter on the cluster; DescribeReplicas Describe on it,
    # and its answer has no error field
    admin_stub = pb_grpc.AdminStub(cluster.channel(0))
    elected = admin_stub.ElectLeaders(
        pb.ElectLeadersRequest(election_type=pb.ELECTION_TYPE_PREFERRED), timeout=10
    )
    assert elected.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    with pytest.raises(grpc.RpcError) as refused_call:
        admin_stub.DescribeReplicas(pb.DescribeReplicasRequest(), timeout=10)
    assert refused_call.value.code() == grpc.StatusCode.PERMISSION_DENIED
    # the minikafka Producer and Consumer, on RawData, write and read what the ACLs allow
    with Producer(cluster.bootstrap_servers, acks="all") as producer:
        producer.send(READ_ONLY, b"minikafka", partition=0).result(30)
    consumer = Consumer(bootstrap_servers=cluster.bootstrap_servers, enable_auto_commit=False)
    try:
        consumer.assign([TopicPartition(READ_ONLY, 0)])
        consumer.seek(TopicPartition(READ_ONLY, 0), 0)
        values: list[bytes | None] = []
        deadline = time.monotonic() + 30
        while len(values) < 2 and time.monotonic() < deadline:
            values += [r.value for rs in consumer.poll(timeout_ms=500).values() for r in rs]
    finally:
        consumer.close()
    assert values == [b"y", b"minikafka"]


def test_without_cluster_action_a_forged_follower_and_leader_and_isr_are_refused(
    cluster_factory: ClusterFactory,
) -> None:
    """The shape of the attack tests: a client posing as a follower (which would move the HW
    and the ISR) and a client sending LeaderAndIsr (which would move the leadership)."""
    cluster = _secured(cluster_factory, replication="kafka")
    assert cluster.produce(READ_ONLY, 0, [b"before"], retry_s=10).ok
    leader = cluster.leader(READ_ONLY, 0)
    follower = next(b for b in cluster.brokers if b != leader)
    controller, epoch = cluster.controller_id(), cluster.controller_epoch()
    assert controller is not None and epoch is not None
    hw_before = _high_watermark(cluster, leader)

    _revoke(cluster, *CLUSTER_ACTION)

    def forged_fetch(broker: int = leader) -> int:
        with RawKafka(cluster.brokers[broker].kafka_address) as raw:
            answer = raw.call(1, 12, _replica_fetch_body(follower, hw_before + 100))
        return int(answer.responses[0].partitions[0].error_code)

    # the brokers apply the ACL change when its notification reaches them, each in its own
    # time: the leader (the forged fetch) and the follower (the LeaderAndIsr below, which it
    # would obey before; to it the forged fetch is harmless, it does not lead the partition)
    for broker in (leader, follower):
        _wait(
            lambda broker=broker: forged_fetch(broker) == ErrorCode.TOPIC_AUTHORIZATION_FAILED,  # type: ignore[misc]
            f"the ACL change on broker {broker}",
        )
    assert _high_watermark(cluster, leader) == hw_before

    broker_epoch = cluster.zk.get_broker_epoch(follower)
    assert broker_epoch is not None
    request = pb.LeaderAndIsrRequest(
        controller_id=controller, controller_epoch=epoch, broker_epoch=broker_epoch
    )
    request.partition_states.add(
        topic_name=READ_ONLY,
        partition_index=0,
        controller_epoch=epoch,
        leader=follower,
        leader_epoch=1000,
        isr=[follower],
        partition_epoch=1000,
        replicas=[leader, follower],
    )
    control = pb_grpc.ControlStub(cluster.channel(follower))
    answer = control.LeaderAndIsr(request, timeout=10)
    assert answer.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert str(epoch) not in answer.error_message and not answer.partition_errors
    # nothing applied: the follower still follows
    produced = cluster.produce(READ_ONLY, 0, [b"to the follower"], to=follower)
    assert produced.error == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert cluster.leader(READ_ONLY, 0) == leader
    refusals = cluster.brokers[follower].log_events("controller_request.unauthorized")
    assert any(e.get("api") == "LeaderAndIsr" for e in refusals)
    shutdown = control.ControlledShutdown(
        pb.ControlledShutdownRequest(broker_id=follower, broker_epoch=broker_epoch), timeout=10
    )
    assert shutdown.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def _high_watermark(cluster: Cluster, leader: int) -> int:
    fetch = pb.FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20)
    fetch.topics.add(topic=READ_ONLY).partitions.add(
        partition=0, fetch_offset=0, current_leader_epoch=-1, partition_max_bytes=1 << 20
    )
    data = pb_grpc.DataStub(cluster.channel(leader))
    return int(data.Fetch(fetch, timeout=10).responses[0].partitions[0].high_watermark)


def _replica_fetch_body(replica_id: int, fetch_offset: int) -> dict[str, Any]:
    return {
        "replica_id": replica_id,
        "max_wait": 0,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "topics": [
            {
                "topic": READ_ONLY,
                "partitions": [
                    {"partition": 0, "fetch_offset": fetch_offset, "partition_max_bytes": 1 << 20}
                ],
            }
        ],
    }


def _wait(condition: Callable[[], bool], what: str, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)
