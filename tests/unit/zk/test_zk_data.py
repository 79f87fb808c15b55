"""znode paths and JSON layouts, compared byte for byte with what Kafka's brokers write."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikafka.proto.cluster_state import PartitionState, ProducerIdBlock
from minikafka.proto.common import EndPoint, TopicPartition
from minikafka.zk import zk_data
from minikafka.zk.errors import ZkDataError
from minikafka.zk.zk_data import (
    BrokerRegistration,
    ControllerRegistration,
    TopicAssignment,
)

TOPIC_ID = "q9bXSr0cQSK7DRa-vUxjbg"


def test_paths_are_kafkas() -> None:
    assert zk_data.broker_path(3) == "/brokers/ids/3"
    assert zk_data.topic_path("orders") == "/brokers/topics/orders"
    assert zk_data.partition_state_path("orders", 7) == "/brokers/topics/orders/partitions/7/state"
    assert zk_data.delete_topic_path("orders") == "/admin/delete_topics/orders"
    assert zk_data.topic_config_path("orders") == "/config/topics/orders"
    assert zk_data.isr_change_path() == "/isr_change_notification/isr_change_"
    assert zk_data.isr_change_path("isr_change_0000000004") == (
        "/isr_change_notification/isr_change_0000000004"
    )
    assert zk_data.CONTROLLER_PATH == "/controller"
    assert zk_data.CONTROLLER_EPOCH_PATH == "/controller_epoch"
    assert zk_data.PREFERRED_REPLICA_ELECTION_PATH == "/admin/preferred_replica_election"
    assert zk_data.CLUSTER_ID_PATH == "/cluster/id"
    assert zk_data.PRODUCER_ID_BLOCK_PATH == "/latest_producer_id_block"


# --- /brokers/ids/<id> -------------------------------------------------------------------------


def test_broker_registration_is_kafkas_version_5_json() -> None:
    registration = BrokerRegistration(
        broker_id=1,
        endpoints=(EndPoint("PLAINTEXT", "kafka1", 9092),),
        timestamp_ms=1_700_000_000_123,
    )
    assert zk_data.encode_broker(registration) == (
        b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
        b'"endpoints":["PLAINTEXT://kafka1:9092"],"jmx_port":-1,"port":9092,"host":"kafka1",'
        b'"version":5,"timestamp":"1700000000123"}'
    )
    assert zk_data.decode_broker(1, zk_data.encode_broker(registration)) == registration


def test_broker_with_several_listeners_and_a_rack() -> None:
    registration = BrokerRegistration(
        broker_id=2,
        endpoints=(
            EndPoint("EXTERNAL", "203.0.113.5", 19093, "SSL"),
            EndPoint("INTERNAL", "10.0.0.2", 9092, "PLAINTEXT"),
            EndPoint("V6", "::1", 9094, "PLAINTEXT"),
        ),
        timestamp_ms=5,
        rack="dc1",
    )
    value = json.loads(zk_data.encode_broker(registration))
    assert value["listener_security_protocol_map"] == {
        "EXTERNAL": "SSL",
        "INTERNAL": "PLAINTEXT",
        "V6": "PLAINTEXT",
    }
    assert value["endpoints"] == [
        "EXTERNAL://203.0.113.5:19093",
        "INTERNAL://10.0.0.2:9092",
        "V6://[::1]:9094",
    ]
    # the top-level host/port are the first PLAINTEXT endpoint, for old clients
    assert (value["host"], value["port"]) == ("10.0.0.2", 9092)
    assert value["rack"] == "dc1"
    assert zk_data.decode_broker(2, zk_data.encode_broker(registration)) == registration


def test_broker_without_plaintext_listener_writes_null_host() -> None:
    registration = BrokerRegistration(3, (EndPoint("SSL", "h", 9093, "SSL"),), timestamp_ms=1)
    value = json.loads(zk_data.encode_broker(registration))
    assert value["host"] is None
    assert value["port"] == -1


def test_decodes_registrations_written_by_kafka() -> None:
    # version 4, as a Kafka 2.x broker with a rack writes it (no features)
    v4 = (
        b'{"listener_security_protocol_map":{"CLIENT":"PLAINTEXT","REPLICATION":"PLAINTEXT"},'
        b'"endpoints":["CLIENT://host1:9092","REPLICATION://host1:9093"],"rack":"dc1",'
        b'"jmx_port":9999,"host":"host1","timestamp":"2233345666","port":9092,"version":4}'
    )
    broker = zk_data.decode_broker(7, v4)
    assert broker.broker_id == 7
    assert broker.endpoints == (
        EndPoint("CLIENT", "host1", 9092),
        EndPoint("REPLICATION", "host1", 9093),
    )
    assert (broker.rack, broker.jmx_port, broker.timestamp_ms) == ("dc1", 9999, 2233345666)

    # version 1: host and port only
    v1 = b'{"version":1,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666"}'
    assert zk_data.decode_broker(0, v1).endpoints == (EndPoint("PLAINTEXT", "localhost", 9092),)

    # version 5 with features: features are accepted and not kept
    v5 = (
        b'{"features":{"metadata.version":{"min_version":1,"max_version":7}},'
        b'"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
        b'"endpoints":["PLAINTEXT://b:9092"],"jmx_port":-1,"port":9092,"host":"b",'
        b'"version":5,"timestamp":"1"}'
    )
    assert zk_data.decode_broker(1, v5).plaintext_endpoint == EndPoint("PLAINTEXT", "b", 9092)


# --- /brokers/topics/<t> -----------------------------------------------------------------------


def test_topic_assignment_is_kafkas_version_3_json() -> None:
    assignment = TopicAssignment(
        topic="orders", topic_id=TOPIC_ID, partitions={1: (0, 2, 1), 0: (2, 1, 0)}
    )
    assert zk_data.encode_topic(assignment) == (
        b'{"partitions":{"0":[2,1,0],"1":[0,2,1]},"topic_id":"q9bXSr0cQSK7DRa-vUxjbg",'
        b'"adding_replicas":{},"removing_replicas":{},"version":3}'
    )
    assert zk_data.decode_topic("orders", zk_data.encode_topic(assignment)) == assignment


def test_topic_with_a_reassignment_in_flight() -> None:
    assignment = TopicAssignment(
        topic="t",
        topic_id=TOPIC_ID,
        partitions={0: (1, 2, 3)},
        adding_replicas={0: (3,)},
        removing_replicas={0: (1,)},
    )
    data = zk_data.encode_topic(assignment)
    assert b'"adding_replicas":{"0":[3]},"removing_replicas":{"0":[1]}' in data
    assert zk_data.decode_topic("t", data) == assignment


def test_decodes_older_topic_versions() -> None:
    v1 = b'{"version":1,"partitions":{"0":[1,2],"1":[2,1]}}'
    assert zk_data.decode_topic("old", v1) == TopicAssignment(
        topic="old", topic_id=None, partitions={0: (1, 2), 1: (2, 1)}
    )
    v2 = b'{"version":2,"partitions":{"0":[1]},"adding_replicas":{},"removing_replicas":{}}'
    assert zk_data.decode_topic("old", v2).topic_id is None


replicas = st.lists(st.integers(0, 1000), min_size=1, max_size=5, unique=True).map(tuple)
partition_maps = st.dictionaries(st.integers(0, 10_000), replicas, max_size=20)


@given(
    partitions=partition_maps,
    adding=partition_maps,
    removing=partition_maps,
    with_id=st.booleans(),
)
def test_topic_round_trip(
    partitions: dict[int, tuple[int, ...]],
    adding: dict[int, tuple[int, ...]],
    removing: dict[int, tuple[int, ...]],
    with_id: bool,
) -> None:
    assignment = TopicAssignment("t", TOPIC_ID if with_id else None, partitions, adding, removing)
    assert zk_data.decode_topic("t", zk_data.encode_topic(assignment)) == assignment


# --- partition state, controller ---------------------------------------------------------------


def test_partition_state_is_kafkas_json() -> None:
    state = PartitionState(leader=2, leader_epoch=0, isr=(2, 1, 0), controller_epoch=1)
    assert zk_data.encode_partition_state(state) == (
        b'{"controller_epoch":1,"leader":2,"version":1,"leader_epoch":0,"isr":[2,1,0]}'
    )
    offline = PartitionState(zk_data.NO_LEADER, 4, (), 2)
    assert zk_data.encode_partition_state(offline) == (
        b'{"controller_epoch":2,"leader":-1,"version":1,"leader_epoch":4,"isr":[]}'
    )


def test_partition_state_tolerates_kafkas_leader_recovery_state() -> None:
    data = (
        b'{"controller_epoch":3,"leader":1,"version":1,"leader_epoch":9,"isr":[1],'
        b'"leader_recovery_state":1}'
    )
    assert zk_data.decode_partition_state("t", 0, data) == PartitionState(1, 9, (1,), 3)


@given(
    leader=st.integers(-1, 2**31 - 1),
    leader_epoch=st.integers(0, 2**31 - 1),
    isr=st.lists(st.integers(0, 2**31 - 1), max_size=6).map(tuple),
    controller_epoch=st.integers(0, 2**31 - 1),
)
def test_partition_state_round_trip(
    leader: int, leader_epoch: int, isr: tuple[int, ...], controller_epoch: int
) -> None:
    state = PartitionState(leader, leader_epoch, isr, controller_epoch)
    assert zk_data.decode_partition_state("t", 0, zk_data.encode_partition_state(state)) == state


def test_controller_is_kafkas_version_2_json() -> None:
    registration = ControllerRegistration(broker_id=1, timestamp_ms=1_700_000_000_000)
    assert zk_data.encode_controller(registration) == (
        b'{"version":2,"brokerid":1,"timestamp":"1700000000000","kraftControllerEpoch":-1}'
    )
    assert zk_data.decode_controller(zk_data.encode_controller(registration)) == registration
    # version 1, as Kafka before 3.4 writes it
    v1 = b'{"version":1,"brokerid":4,"timestamp":"1500000000000"}'
    assert zk_data.decode_controller(v1) == ControllerRegistration(4, 1_500_000_000_000, -1)


def test_controller_epoch_is_decimal_text() -> None:
    assert zk_data.encode_controller_epoch(17) == b"17"
    assert zk_data.decode_controller_epoch(b"17") == 17
    with pytest.raises(ZkDataError, match="/controller_epoch"):
        zk_data.decode_controller_epoch(b"seventeen")


# --- admin, notifications, config, cluster id, producer ids ------------------------------------


def test_preferred_replica_election_and_isr_change_share_kafkas_shape() -> None:
    partitions = [TopicPartition("orders", 1), TopicPartition("orders", 0), TopicPartition("a", 2)]
    expected = (
        b'{"version":1,"partitions":[{"topic":"a","partition":2},'
        b'{"topic":"orders","partition":0},{"topic":"orders","partition":1}]}'
    )
    assert zk_data.encode_preferred_replica_election(partitions) == expected
    assert zk_data.encode_isr_change(partitions) == expected
    assert zk_data.decode_preferred_replica_election(expected) == frozenset(partitions)
    assert zk_data.decode_isr_change("isr_change_0000000000", expected) == frozenset(partitions)


def test_topic_config_is_kafkas_json() -> None:
    config = {"min.insync.replicas": "2", "cleanup.policy": "compact"}
    data = zk_data.encode_topic_config(config)
    assert data == b'{"version":1,"config":{"cleanup.policy":"compact","min.insync.replicas":"2"}}'
    assert zk_data.decode_topic_config("t", data) == config
    assert zk_data.encode_topic_config({}) == b'{"version":1,"config":{}}'
    assert zk_data.decode_topic_config("t", b"") == {}


def test_cluster_id_is_kafkas_json_with_a_string_version() -> None:
    assert zk_data.encode_cluster_id("6EPVQ5cVT4qJEfYoVn9sFg") == (
        b'{"version":"1","id":"6EPVQ5cVT4qJEfYoVn9sFg"}'
    )
    assert zk_data.decode_cluster_id(b'{"version":"1","id":"abc"}') == "abc"


def test_producer_id_block_is_kafkas_json() -> None:
    block = ProducerIdBlock(broker_id=1, block_start=1000, block_end=1999)
    assert zk_data.encode_producer_id_block(block) == (
        b'{"version":1,"broker":1,"block_start":"1000","block_end":"1999"}'
    )
    assert zk_data.decode_producer_id_block(zk_data.encode_producer_id_block(block)) == block
    assert block.size == 1000
    assert zk_data.decode_producer_id_block(b"") is None


def test_random_uuid_base64_is_kafkas_uuid_text() -> None:
    for _ in range(200):
        text = zk_data.random_uuid_base64()
        assert len(text) == 22
        assert not text.startswith("-")
        assert len(base64.urlsafe_b64decode(text + "==")) == 16


# --- malformed data ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"not json", "not JSON"),
        (b"[1,2]", "not a JSON object"),
        (b'{"leader":1,"leader_epoch":0,"controller_epoch":1}', "missing 'isr'"),
        (b'{"leader":true,"leader_epoch":0,"isr":[],"controller_epoch":1}', "not an integer"),
        (b'{"leader":1,"leader_epoch":0,"isr":[1,"2"],"controller_epoch":1}', "not an integer"),
        (b'{"leader":1,"leader_epoch":0,"isr":3,"controller_epoch":1}', "not a list"),
    ],
)
def test_malformed_partition_state_names_the_path(data: bytes, reason: str) -> None:
    with pytest.raises(ZkDataError, match=reason) as info:
        zk_data.decode_partition_state("orders", 3, data)
    assert info.value.path == "/brokers/topics/orders/partitions/3/state"
    assert "/brokers/topics/orders/partitions/3/state" in str(info.value)


def test_malformed_topic_and_broker() -> None:
    with pytest.raises(ZkDataError, match="partition id 'x'"):
        zk_data.decode_topic("t", b'{"version":3,"partitions":{"x":[1]}}')
    with pytest.raises(ZkDataError, match="unsupported broker registration version 0"):
        zk_data.decode_broker(1, b'{"version":0,"jmx_port":-1,"timestamp":"1"}')
    with pytest.raises(ZkDataError, match="not a listener endpoint"):
        zk_data.decode_broker(
            1, b'{"version":5,"endpoints":["nonsense"],"jmx_port":-1,"timestamp":"1"}'
        )
    with pytest.raises(ZkDataError, match="'timestamp' is not a decimal string"):
        zk_data.decode_controller(b'{"version":2,"brokerid":1,"timestamp":"soon"}')


# --- /log_dir_event_notification (KIP-112) ----------------------------------------------------


def test_log_dir_event_is_kafkas_json() -> None:
    assert zk_data.LOG_DIR_EVENT_NOTIFICATION_PATH == "/log_dir_event_notification"
    assert zk_data.LOG_DIR_EVENT_NOTIFICATION_PATH in zk_data.PERSISTENT_PATHS
    assert zk_data.log_dir_event_path() == "/log_dir_event_notification/log_dir_event_"
    assert zk_data.log_dir_event_path("log_dir_event_0000000002") == (
        "/log_dir_event_notification/log_dir_event_0000000002"
    )
    # Byte for byte what Kafka's LogDirEventNotificationSequenceZNode.encode writes.
    assert zk_data.encode_log_dir_event(3) == b'{"version":1,"broker":3,"event":1}'
    assert json.loads(zk_data.encode_log_dir_event(3)) == {"version": 1, "broker": 3, "event": 1}
    assert zk_data.decode_log_dir_event("log_dir_event_0000000002", b'{"broker":7}') == 7
    with pytest.raises(ZkDataError, match="log_dir_event_0000000002"):
        zk_data.decode_log_dir_event("log_dir_event_0000000002", b'{"version":1}')
    with pytest.raises(ZkDataError):
        zk_data.decode_log_dir_event("log_dir_event_0000000002", b"not json")


def test_user_config_path_is_sanitized_as_kafka_does() -> None:
    from minikafka.zk.zk_data import (
        decode_user_config,
        desanitize_entity_name,
        encode_topic_config,
        sanitize_entity_name,
        user_config_path,
    )

    assert user_config_path("alice") == "/config/users/alice"
    for name in ("CN=alice, O=x*", "bob~.-_", "ünï"):
        assert desanitize_entity_name(sanitize_entity_name(name)) == name
    assert sanitize_entity_name("a b*") == "a%20b%2A"
    data = encode_topic_config({"SCRAM-SHA-256": "salt=AA==,stored_key=..."})
    assert data == b'{"version":1,"config":{"SCRAM-SHA-256":"salt=AA==,stored_key=..."}}'
    assert decode_user_config("alice", data) == {"SCRAM-SHA-256": "salt=AA==,stored_key=..."}


def test_quota_entity_paths_are_kafkas() -> None:
    from minikafka.zk.zk_data import QuotaEntity, decode_quota_config, encode_topic_config

    cases = {
        QuotaEntity(user="CN=a b"): "users/CN%3Da%20b",
        QuotaEntity(user="<default>"): "users/<default>",
        QuotaEntity(client_id="app/1"): "clients/app%2F1",
        QuotaEntity(client_id="<default>"): "clients/<default>",
        QuotaEntity("alice", "<default>"): "users/alice/clients/<default>",
        QuotaEntity("<default>", "app"): "users/<default>/clients/app",
    }
    for entity, path in cases.items():
        assert entity.entity_path == path
        assert entity.path == f"/config/{path}"
        assert QuotaEntity.from_entity_path(path) == entity
    for bad in ("topics/t", "users", "users/a/topics/b", "clients/a/users/b"):
        with pytest.raises(ValueError):
            QuotaEntity.from_entity_path(bad)
    config = {"producer_byte_rate": "1048576", "SCRAM-SHA-256": "salt=x"}
    entity = QuotaEntity(user="alice")
    assert decode_quota_config(entity, encode_topic_config(config)) == config
    assert decode_quota_config(entity, b"") == {}
