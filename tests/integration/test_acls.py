"""ACLs on a real cluster: the AclAuthorizer's ZooKeeper store, the ACL APIs on both doors
(confluent-kafka's and kafka-python's admins, minikafka's AdminClient) and ``minikafka acls``.

The brokers run ``authorizer.class.name=kafka.security.authorizer.AclAuthorizer`` with
``super.users=User:ANONYMOUS``: PLAINTEXT clients are ANONYMOUS, so they may manage ACLs
before TLS or SASL say who they are.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from tests.integration.cluster import Cluster

AUTHORIZER = {
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "super.users": "User:ANONYMOUS",
}


@pytest.fixture
def cluster(cluster_factory: Callable[..., Cluster]) -> Cluster:
    return cluster_factory(3, AUTHORIZER)


def kafka_admin(address: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": address, "socket.timeout.ms": 10_000})


def alice_read(name: str = "orders") -> AclBinding:
    return AclBinding(
        ResourceType.TOPIC,
        name,
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )


ANY_FILTER = AclBindingFilter(
    ResourceType.ANY,
    None,
    ResourcePatternType.ANY,
    None,
    None,
    AclOperation.ANY,
    AclPermissionType.ANY,
)


def describe(admin: AdminClient, binding_filter: AclBindingFilter = ANY_FILTER) -> list[AclBinding]:
    return sorted(admin.describe_acls(binding_filter, request_timeout=15).result(), key=str)


def test_create_describe_delete_with_confluent_kafka(cluster: Cluster) -> None:
    admin = kafka_admin(cluster.kafka_bootstrap_servers)
    sales = AclBinding(
        ResourceType.GROUP,
        "sales-",
        ResourcePatternType.PREFIXED,
        "User:bob",
        "10.0.0.2",
        AclOperation.DESCRIBE,
        AclPermissionType.DENY,
    )
    futures = admin.create_acls([alice_read(), sales], request_timeout=15)
    for future in futures.values():
        assert future.result() is None
    assert describe(admin) == sorted([alice_read(), sales], key=str)
    only_groups = AclBindingFilter(
        ResourceType.GROUP,
        None,
        ResourcePatternType.ANY,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    assert describe(admin, only_groups) == [sales]
    match = AclBindingFilter(
        ResourceType.GROUP,
        "sales-eu",
        ResourcePatternType.MATCH,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    assert describe(admin, match) == [sales]
    deleted = admin.delete_acls([only_groups], request_timeout=15)
    assert next(iter(deleted.values())).result() == [sales]
    assert describe(admin) == [alice_read()]
    znode, _ = cluster.zk.client.get("/kafka-acl/Topic/orders")
    assert znode == (
        b'{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",'
        b'"operation":"Read","host":"*"}]}'
    )
