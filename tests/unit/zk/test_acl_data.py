"""The ACL znodes' paths and JSON, byte for byte as Kafka writes them (zk_data's docstring)."""

from __future__ import annotations

import json

import pytest

from minikafka.proto.acl import (
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    kafka_name,
    parse_kafka_name,
)
from minikafka.zk.errors import ZkDataError
from minikafka.zk.zk_data import (
    acl_changes_path,
    acl_path,
    decode_acl_change,
    decode_acls,
    encode_acl_change,
    encode_acls,
)

ORDERS = ResourcePattern(ResourceType.TOPIC, "orders", PatternType.LITERAL)
SALES = ResourcePattern(ResourceType.TRANSACTIONAL_ID, "sales-", PatternType.PREFIXED)
ALICE_READ = AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)
BOB_DENY = AccessControlEntry(
    "User:bob", "10.0.0.2", AclOperation.DESCRIBE_CONFIGS, AclPermissionType.DENY
)


def test_paths() -> None:
    assert acl_path(ORDERS) == "/kafka-acl/Topic/orders"
    assert acl_path(SALES) == "/kafka-acl-extended/prefixed/TransactionalId/sales-"
    assert acl_changes_path(PatternType.LITERAL, "acl_changes_0000000001") == (
        "/kafka-acl-changes/acl_changes_0000000001"
    )
    assert acl_changes_path(PatternType.PREFIXED) == "/kafka-acl-extended-changes"
    with pytest.raises(ValueError):
        acl_path(ResourcePattern(ResourceType.TOPIC, "x", PatternType.MATCH))


def test_acls_json_is_kafkas() -> None:
    assert encode_acls([ALICE_READ]) == (
        b'{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",'
        b'"operation":"Read","host":"*"}]}'
    )


def test_acls_round_trip_and_sorted_bytes() -> None:
    data = encode_acls([BOB_DENY, ALICE_READ])
    assert data == encode_acls([ALICE_READ, BOB_DENY])
    assert decode_acls(ORDERS, data) == {ALICE_READ, BOB_DENY}
    assert json.loads(data)["acls"][1]["operation"] == "DescribeConfigs"
    assert decode_acls(ORDERS, b"") == frozenset()


def test_acls_written_by_kafka_are_read() -> None:
    # Kafka's own writer orders keys differently; any order and spacing is read.
    data = (
        b'{"version": 1, "acls": [{"host":"host1","permissionType":"Deny",'
        b'"operation":"IdempotentWrite","principal":"User:alice"}]}'
    )
    (entry,) = decode_acls(ORDERS, data)
    assert entry == AccessControlEntry(
        "User:alice", "host1", AclOperation.IDEMPOTENT_WRITE, AclPermissionType.DENY
    )


@pytest.mark.parametrize(
    "data",
    [
        b"not json",
        b'{"version":2,"acls":[]}',
        b'{"version":1}',
        b'{"version":1,"acls":[{"principal":"User:a","permissionType":"Allow","host":"*"}]}',
        b'{"version":1,"acls":[{"principal":"User:a","permissionType":"Maybe",'
        b'"operation":"Read","host":"*"}]}',
    ],
)
def test_bad_acls_name_the_path(data: bytes) -> None:
    with pytest.raises(ZkDataError, match="/kafka-acl/Topic/orders"):
        decode_acls(ORDERS, data)


def test_change_notifications() -> None:
    assert encode_acl_change(ORDERS) == b"TOPIC:orders"
    assert json.loads(encode_acl_change(SALES)) == {
        "version": 1,
        "resourceType": "TRANSACTIONAL_ID",
        "name": "sales-",
        "patternType": "PREFIXED",
    }
    assert decode_acl_change(PatternType.LITERAL, "n", encode_acl_change(ORDERS)) == ORDERS
    assert decode_acl_change(PatternType.PREFIXED, "n", encode_acl_change(SALES)) == SALES
    # Names may hold the separator; the type's spelling may be Kafka's camel case.
    assert decode_acl_change(PatternType.LITERAL, "n", b"Group:a:b") == ResourcePattern(
        ResourceType.GROUP, "a:b", PatternType.LITERAL
    )


@pytest.mark.parametrize(
    ("pattern_type", "data"),
    [
        (PatternType.LITERAL, b"orders"),
        (PatternType.LITERAL, b"Table:orders"),
        (PatternType.PREFIXED, b'{"version":1,"resourceType":"TOPIC","name":"a"}'),
        (
            PatternType.PREFIXED,
            b'{"version":1,"resourceType":"TOPIC","name":"a","patternType":"LITERAL"}',
        ),
    ],
)
def test_bad_change_notifications(pattern_type: PatternType, data: bytes) -> None:
    with pytest.raises(ZkDataError, match="acl_changes_7"):
        decode_acl_change(pattern_type, "acl_changes_7", data)


def test_kafka_names() -> None:
    assert kafka_name(ResourceType.TRANSACTIONAL_ID) == "TransactionalId"
    assert kafka_name(AclOperation.CLUSTER_ACTION) == "ClusterAction"
    assert kafka_name(AclPermissionType.ALLOW) == "Allow"
    for text in ("TransactionalId", "TRANSACTIONAL_ID", "transactional-id"):
        assert parse_kafka_name(ResourceType, text) is ResourceType.TRANSACTIONAL_ID
    with pytest.raises(ValueError, match="one of Topic, Group"):
        parse_kafka_name(ResourceType, "Table")
