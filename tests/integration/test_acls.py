"""ACLs on a real cluster: the AclAuthorizer's ZooKeeper store, the ACL APIs on both doors
(confluent-kafka's and kafka-python's admins, minikafka's AdminClient) and ``minikafka acls``.

The brokers run ``authorizer.class.name=kafka.security.authorizer.AclAuthorizer`` with
``super.users=User:ANONYMOUS``: PLAINTEXT clients are ANONYMOUS, so they may manage ACLs
before TLS or SASL say who they are.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka import admin as ck

from minikafka.proto.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from minikafka.proto.errors import ErrorCode, KafkaError
from tests.integration.cluster import REPO_ROOT, Cluster
from tests.integration.kafka_protocol.raw import RawKafka

ClusterFactory = Callable[..., Cluster]

AUTHORIZER = {
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "super.users": "User:ANONYMOUS",
}
ANY = AclBindingFilter(ResourcePatternFilter(ResourceType.ANY, None, PatternType.ANY))
ORDERS = ResourcePattern(ResourceType.TOPIC, "orders")
ALICE_READ = AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)


@pytest.fixture
def cluster(cluster_factory: ClusterFactory) -> Cluster:
    return cluster_factory(3, AUTHORIZER)


def kafka_admin(address: str) -> ck.AdminClient:
    return ck.AdminClient({"bootstrap.servers": address, "socket.timeout.ms": 10_000})


def ck_filter(
    resource_type: ck.ResourceType,
    name: str | None,
    pattern_type: ck.ResourcePatternType,
    principal: str | None = None,
) -> ck.AclBindingFilter:
    # confluent-kafka's stubs type the names as str; None means "any", as in Kafka's Java API.
    make: Any = ck.AclBindingFilter
    built: ck.AclBindingFilter = make(
        resource_type,
        name,
        pattern_type,
        principal,
        None,
        ck.AclOperation.ANY,
        ck.AclPermissionType.ANY,
    )
    return built


def ck_describe(
    admin: ck.AdminClient, binding_filter: ck.AclBindingFilter | None = None
) -> list[ck.AclBinding]:
    if binding_filter is None:
        binding_filter = ck_filter(ck.ResourceType.ANY, None, ck.ResourcePatternType.ANY)
    return sorted(admin.describe_acls(binding_filter, request_timeout=15).result(), key=str)


CK_ALICE = ck.AclBinding(
    ck.ResourceType.TOPIC,
    "orders",
    ck.ResourcePatternType.LITERAL,
    "User:alice",
    "*",
    ck.AclOperation.READ,
    ck.AclPermissionType.ALLOW,
)
CK_BOB_SALES = ck.AclBinding(
    ck.ResourceType.GROUP,
    "sales-",
    ck.ResourcePatternType.PREFIXED,
    "User:bob",
    "10.0.0.2",
    ck.AclOperation.DESCRIBE,
    ck.AclPermissionType.DENY,
)


def test_create_describe_delete_with_confluent_kafka(cluster: Cluster) -> None:
    admin = kafka_admin(cluster.kafka_bootstrap_servers)
    for future in admin.create_acls([CK_ALICE, CK_BOB_SALES], request_timeout=15).values():
        assert future.result() is None
    assert ck_describe(admin) == sorted([CK_ALICE, CK_BOB_SALES], key=str)
    groups = ck_filter(ck.ResourceType.GROUP, None, ck.ResourcePatternType.ANY)
    assert ck_describe(admin, groups) == [CK_BOB_SALES]
    by_principal = ck_filter(
        ck.ResourceType.ANY, None, ck.ResourcePatternType.ANY, principal="User:alice"
    )
    assert ck_describe(admin, by_principal) == [CK_ALICE]
    match = ck_filter(ck.ResourceType.GROUP, "sales-eu", ck.ResourcePatternType.MATCH)
    assert ck_describe(admin, match) == [CK_BOB_SALES]
    literal_only = ck_filter(ck.ResourceType.GROUP, "sales-", ck.ResourcePatternType.LITERAL)
    assert ck_describe(admin, literal_only) == []

    # Kafka's znodes, byte for byte, and a change notification for each resource.
    zk = cluster.zk.client
    data, _ = zk.get("/kafka-acl/Topic/orders")
    assert data == (
        b'{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",'
        b'"operation":"Read","host":"*"}]}'
    )
    data, _ = zk.get("/kafka-acl-extended/prefixed/Group/sales-")
    assert json.loads(data)["acls"][0]["permissionType"] == "Deny"
    (literal_change,) = zk.get_children("/kafka-acl-changes")
    assert literal_change.startswith("acl_changes_")
    assert zk.get(f"/kafka-acl-changes/{literal_change}")[0] == b"TOPIC:orders"
    (extended_change,) = zk.get_children("/kafka-acl-extended-changes")
    assert json.loads(zk.get(f"/kafka-acl-extended-changes/{extended_change}")[0]) == {
        "version": 1,
        "resourceType": "GROUP",
        "name": "sales-",
        "patternType": "PREFIXED",
    }

    (deleted,) = admin.delete_acls([groups], request_timeout=15).values()
    assert deleted.result() == [CK_BOB_SALES]
    assert ck_describe(admin) == [CK_ALICE]
    assert zk.exists("/kafka-acl-extended/prefixed/Group/sales-") is None


def test_bad_bindings_are_invalid_request(cluster: Cluster) -> None:
    admin = kafka_admin(cluster.kafka_bootstrap_servers)
    bad_cluster_name = ck.AclBinding(
        ck.ResourceType.BROKER,  # Kafka's CLUSTER (4), which confluent-kafka calls BROKER
        "not-kafka-cluster",
        ck.ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        ck.AclOperation.ALTER,
        ck.AclPermissionType.ALLOW,
    )
    bad_principal = ck.AclBinding(
        ck.ResourceType.TOPIC,
        "t",
        ck.ResourcePatternType.LITERAL,
        "alice",
        "*",
        ck.AclOperation.READ,
        ck.AclPermissionType.ALLOW,
    )
    futures = admin.create_acls([bad_cluster_name, bad_principal, CK_ALICE], request_timeout=15)
    errors: dict[tuple[str, str], int | None] = {}
    for binding, future in futures.items():
        try:
            future.result()
            errors[binding.principal, binding.name] = None
        except KafkaException as exc:
            errors[binding.principal, binding.name] = exc.args[0].code()
    assert errors == {
        ("User:alice", "not-kafka-cluster"): ErrorCode.INVALID_REQUEST,
        ("alice", "t"): ErrorCode.INVALID_REQUEST,
        ("User:alice", "orders"): None,
    }
    assert ck_describe(admin) == [CK_ALICE]


def test_an_acl_reaches_every_broker_within_a_second(cluster: Cluster) -> None:
    admin = cluster.admin()
    cluster.wait_for(lambda: len(admin.describe_cluster().brokers) == 3, 20, "3 brokers")
    doors = {i: RawKafka(broker.kafka_address) for i, broker in cluster.brokers.items()}
    describe_any = {
        "resource_type_filter": int(ResourceType.ANY),
        "resource_name_filter": None,
        "pattern_type_filter": int(PatternType.ANY),
        "principal_filter": None,
        "host_filter": None,
        "operation": int(AclOperation.ANY),
        "permission_type": int(AclPermissionType.ANY),
    }

    def held(broker_id: int) -> tuple[list[str], list[str]]:
        """The principals of the ACLs broker ``broker_id`` answers, on each door."""
        kafka_door = doors[broker_id].call(29, 3, describe_any)
        grpc_door = admin.describe_acls(ANY, broker_id=broker_id)
        return (
            [acl.principal for r in kafka_door.resources for acl in r.acls],
            [b.entry.principal for b in grpc_door],
        )

    def everywhere_within_a_second(principals: list[str]) -> None:
        deadline = time.monotonic() + 1.0
        pending = set(cluster.brokers)
        while pending and time.monotonic() < deadline:
            pending = {i for i in pending if held(i) != (principals, principals)}
            time.sleep(0.01)
        assert not pending, f"brokers {sorted(pending)} answer {[held(i) for i in pending]}"

    try:
        # Written through broker 0's Kafka door, answered by every broker on both doors.
        creation = {
            "resource_type": int(ResourceType.TOPIC),
            "resource_name": "orders",
            "resource_pattern_type": int(PatternType.LITERAL),
            "principal": "User:alice",
            "host": "*",
            "operation": int(AclOperation.READ),
            "permission_type": int(AclPermissionType.ALLOW),
        }
        created = doors[0].call(30, 3, {"creations": [creation]})
        assert [r.error_code for r in created.results] == [ErrorCode.NONE]
        everywhere_within_a_second(["User:alice"])
        # Deleted through broker 2's Kafka door.
        deleted = doors[2].call(31, 3, {"filters": [describe_any]})
        assert [m.principal for m in deleted.filter_results[0].matching_acls] == ["User:alice"]
        everywhere_within_a_second([])
    finally:
        for door in doors.values():
            door.close()


def test_acls_in_zookeeper_before_the_brokers_start_are_loaded(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(2, AUTHORIZER, start=False)
    zk = cluster.zk.client
    # As a Kafka cluster would have left them (its own key order and spacing).
    zk.create(
        "/kafka-acl/Topic/orders",
        b'{"version": 1, "acls": [{"host": "*", "permissionType": "Allow", '
        b'"operation": "Read", "principal": "User:alice"}]}',
        makepath=True,
    )
    zk.create(
        "/kafka-acl-extended/prefixed/TransactionalId/tx-",
        b'{"version":1,"acls":[{"principal":"User:*","permissionType":"Deny",'
        b'"operation":"Write","host":"10.1.1.1"}]}',
        makepath=True,
    )
    cluster.start_all()
    cluster.wait_until_serving()
    admin = cluster.admin()
    expected = [
        AclBinding(ORDERS, ALICE_READ),
        AclBinding(
            ResourcePattern(ResourceType.TRANSACTIONAL_ID, "tx-", PatternType.PREFIXED),
            AccessControlEntry("User:*", "10.1.1.1", AclOperation.WRITE, AclPermissionType.DENY),
        ),
    ]
    for broker_id in cluster.brokers:
        assert admin.describe_acls(ANY, broker_id=broker_id) == expected


def test_kafka_python_admin(cluster: Cluster) -> None:
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        KafkaAdminClient,
    )
    from kafka.admin import ResourcePattern as KpPattern
    from kafka.admin import ResourcePatternFilter as KpFilter
    from kafka.admin import ResourceType as KpType

    admin = KafkaAdminClient(bootstrap_servers=cluster.kafka_bootstrap_servers)
    try:
        acl = ACL(
            "User:carol",
            "*",
            ACLOperation.WRITE,
            ACLPermissionType.ALLOW,
            KpPattern(KpType.TOPIC, "logs-", ACLResourcePatternType.PREFIXED),
        )
        created = admin.create_acls([acl])
        assert created["failed"] == [] and len(created["succeeded"]) == 1
        any_filter = ACLFilter(
            None,
            None,
            ACLOperation.ANY,
            ACLPermissionType.ANY,
            KpFilter(KpType.TOPIC, "logs-app", ACLResourcePatternType.MATCH),
        )
        found, error = admin.describe_acls(any_filter)
        assert error.errno == 0
        assert [(a.principal, a.resource_pattern.resource_name) for a in found] == [
            ("User:carol", "logs-")
        ]
        ((_, deleted, error),) = admin.delete_acls([any_filter])
        assert error.errno == 0
        assert [a.principal for a in deleted] == ["User:carol"]
        found, _ = admin.describe_acls(any_filter)
        assert found == []
    finally:
        admin.close()


def acls_cli(cluster: Cluster, *argv: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "minikafka", "acls", "--bootstrap-server"]
    command += [cluster.bootstrap_servers, *argv]
    return subprocess.run(
        command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, input=stdin
    )


def test_minikafka_acls(cluster: Cluster) -> None:
    added = acls_cli(
        cluster,
        "--add",
        "--allow-principal",
        "User:dave",
        "--consumer",
        "--topic",
        "orders",
        "--group",
        "billing",
    )
    assert added.returncode == 0, added.stderr
    assert (
        "Adding ACLs for resource `ResourcePattern(resourceType=GROUP, name=billing, "
        "patternType=LITERAL)`: \n \t(principal=User:dave, host=*, operation=READ, "
        "permissionType=ALLOW) \n" in added.stdout
    )
    listed = acls_cli(cluster, "--list", "--topic", "orders")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.count("\t(principal=User:dave") == 2  # Read and Describe
    asked = acls_cli(cluster, "--remove", "--topic", "orders", stdin="n\n")
    assert asked.returncode == 0 and "Are you sure" in asked.stdout
    assert len(cluster.admin().describe_acls(ANY)) == 3
    removed = acls_cli(cluster, "--remove", "--topic", "orders", "--force")
    assert removed.returncode == 0, removed.stderr
    remaining = cluster.admin().describe_acls(ANY)
    assert [b.pattern.name for b in remaining] == ["billing"]
    bad = acls_cli(cluster, "--add", "--allow-principal", "dave", "--topic", "orders")
    assert bad.returncode == 1
    assert bad.stderr.strip().count("\n") == 0 and "Invalid principal 'dave'" in bad.stderr


def test_without_an_authorizer_security_is_disabled(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(1)
    admin = kafka_admin(cluster.kafka_bootstrap_servers)
    # librdkafka hands DescribeAcls' top-level error to no one when no resource came back
    # (the result is an empty list): kafka-python shows the code the broker answered.
    assert kafka_python_describe_error(cluster) == "SecurityDisabledError"
    (future,) = admin.create_acls([CK_ALICE], request_timeout=15).values()
    with pytest.raises(KafkaException) as raised:
        future.result()
    assert raised.value.args[0].code() == ErrorCode.SECURITY_DISABLED
    with pytest.raises(KafkaError) as grpc_raised:
        cluster.admin().describe_acls(ANY)
    assert grpc_raised.value.code == ErrorCode.SECURITY_DISABLED
    listed = acls_cli(cluster, "--list")
    assert listed.returncode == 1
    assert listed.stderr == "Error while executing ACL command : No Authorizer is configured.\n"


def test_managing_acls_needs_the_cluster_permission(cluster_factory: ClusterFactory) -> None:
    # No super users: ANONYMOUS may manage ACLs only while no ACL names the Cluster
    # (allow.everyone.if.no.acl.found), and not once one denies it Alter.
    cluster = cluster_factory(
        1,
        {
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "allow.everyone.if.no.acl.found": "true",
        },
    )
    admin = cluster.admin()
    cluster_pattern = ResourcePattern(ResourceType.CLUSTER, "kafka-cluster")
    deny_alter = AccessControlEntry(
        "User:ANONYMOUS", "*", AclOperation.ALTER, AclPermissionType.DENY
    )
    assert admin.create_acls([AclBinding(cluster_pattern, deny_alter)]) == {
        AclBinding(cluster_pattern, deny_alter): None
    }
    refused = admin.create_acls([AclBinding(ORDERS, ALICE_READ)])
    error = refused[AclBinding(ORDERS, ALICE_READ)]
    assert error is not None and error.code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    with pytest.raises(KafkaError) as raised:
        admin.describe_acls(ANY)  # Describe: implied by no ALLOW here, denied by nothing,
    # but the Cluster has ACLs now, so allow.everyone no longer applies.
    assert raised.value.code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert kafka_python_describe_error(cluster) == "ClusterAuthorizationFailedError"
    ck_admin = kafka_admin(cluster.kafka_bootstrap_servers)
    (future,) = ck_admin.create_acls([CK_ALICE], request_timeout=15).values()
    with pytest.raises(KafkaException) as ck_raised:
        future.result()
    assert ck_raised.value.args[0].code() == ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def kafka_python_describe_error(cluster: Cluster) -> str | None:
    """The error kafka-python's describe_acls raises for an any-filter (None: none)."""
    from kafka.admin import (
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        KafkaAdminClient,
    )
    from kafka.admin import ResourcePatternFilter as KpFilter
    from kafka.admin import ResourceType as KpType

    admin = KafkaAdminClient(bootstrap_servers=cluster.kafka_bootstrap_servers)
    try:
        admin.describe_acls(
            ACLFilter(
                None,
                None,
                ACLOperation.ANY,
                ACLPermissionType.ANY,
                KpFilter(KpType.ANY, None, ACLResourcePatternType.ANY),
            )
        )
    except Exception as exc:
        return type(exc).__name__
    finally:
        admin.close()
    return None
