"""core/acls.py: who may manage ACLs, SECURITY_DISABLED, and Kafka's INVALID_REQUEST rules,
over the real AclAuthorizer and an in-memory store."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from minikafka.broker.config import ACL_AUTHORIZER_CLASS, BrokerConfig
from minikafka.broker.security.authorizer import AclAuthorizer, authorizer_from_config
from minikafka.broker.security.principal import KafkaPrincipal, Session
from minikafka.broker.server.core.acls import (
    AclApi,
    AclError,
    binding_from_wire,
    filter_from_wire,
    validate_binding,
)
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
from minikafka.proto.errors import ErrorCode, InvalidConfigError

ADMIN = Session(KafkaPrincipal("User", "admin"), "127.0.0.1")
ALICE = Session(KafkaPrincipal("User", "alice"), "127.0.0.1")
ORDERS = ResourcePattern(ResourceType.TOPIC, "orders")
READ = AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)
ANY = AclBindingFilter(ResourcePatternFilter(ResourceType.ANY, None, PatternType.ANY))


class MemoryStore:
    """The AclManager's part the core calls, over the authorizer's cache only."""

    def __init__(self, authorizer: AclAuthorizer) -> None:
        self.authorizer = authorizer

    def acls(self, binding_filter: AclBindingFilter) -> list[AclBinding]:
        return self.authorizer.acls(binding_filter)

    async def create_acls(self, bindings: Sequence[AclBinding]) -> list[Exception | None]:
        for b in bindings:
            self.authorizer.set_acls(b.pattern, self.authorizer.acls_of(b.pattern) | {b.entry})
        return [None] * len(bindings)

    async def delete_acls(
        self, filters: Sequence[AclBindingFilter]
    ) -> list[list[tuple[AclBinding, Exception | None]]]:
        results: list[list[tuple[AclBinding, Exception | None]]] = []
        for f in filters:
            gone = self.authorizer.acls(f)
            for b in gone:
                self.authorizer.set_acls(b.pattern, self.authorizer.acls_of(b.pattern) - {b.entry})
            results.append([(b, None) for b in gone])
        return results


def api() -> tuple[AclApi, AclAuthorizer]:
    authorizer = AclAuthorizer([KafkaPrincipal("User", "admin")])
    return AclApi(authorizer, MemoryStore(authorizer)), authorizer


def test_create_describe_delete() -> None:
    acl_api, authorizer = api()
    errors = asyncio.run(acl_api.create_acls(ADMIN, [AclBinding(ORDERS, READ)]))
    assert [e.error_code for e in errors] == [ErrorCode.NONE]
    described = asyncio.run(acl_api.describe_acls(ADMIN, ANY))
    assert described.error.error_code == ErrorCode.NONE
    assert described.bindings == (AclBinding(ORDERS, READ),)
    (deleted,) = asyncio.run(acl_api.delete_acls(ADMIN, [ANY]))
    assert [d.binding for d in deleted.deleted] == [AclBinding(ORDERS, READ)]
    assert authorizer.acls(ANY) == []


def test_managing_acls_needs_alter_or_describe_on_the_cluster() -> None:
    acl_api, authorizer = api()
    described = asyncio.run(acl_api.describe_acls(ALICE, ANY))
    assert described.error.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    (created,) = asyncio.run(acl_api.create_acls(ALICE, [AclBinding(ORDERS, READ)]))
    assert created.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    (deleted,) = asyncio.run(acl_api.delete_acls(ALICE, [ANY]))
    assert deleted.error.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    cluster = ResourcePattern(ResourceType.CLUSTER, "kafka-cluster")
    alter = AccessControlEntry("User:alice", "*", AclOperation.ALTER, AclPermissionType.ALLOW)
    authorizer.set_acls(cluster, [alter])
    # Alter on the Cluster implies Describe: alice may now list and create.
    assert asyncio.run(acl_api.describe_acls(ALICE, ANY)).error.error_code == ErrorCode.NONE
    (created,) = asyncio.run(acl_api.create_acls(ALICE, [AclBinding(ORDERS, READ)]))
    assert created.error_code == ErrorCode.NONE


def test_without_an_authorizer_security_is_disabled() -> None:
    acl_api = AclApi(None, None)
    described = asyncio.run(acl_api.describe_acls(ALICE, ANY))
    assert described.error.error_code == ErrorCode.SECURITY_DISABLED
    assert described.error.error_message == "No Authorizer is configured."
    (created,) = asyncio.run(acl_api.create_acls(ALICE, [AclBinding(ORDERS, READ)]))
    assert created.error_code == ErrorCode.SECURITY_DISABLED
    (deleted,) = asyncio.run(acl_api.delete_acls(ALICE, [ANY]))
    assert deleted.error.error_code == ErrorCode.SECURITY_DISABLED


def binding(**changes: object) -> AclBinding:
    values: dict[str, object] = {
        "resource_type": 2,
        "name": "orders",
        "pattern_type": 3,
        "principal": "User:alice",
        "host": "*",
        "operation": 3,
        "permission_type": 3,
    }
    values.update(changes)
    return binding_from_wire(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"resource_type": 1}, "ResourceType ANY"),
        ({"resource_type": 99}, "ResourceType UNKNOWN"),
        ({"pattern_type": 2}, "PatternType MATCH"),
        ({"pattern_type": 1}, "PatternType ANY"),
        ({"operation": 1}, "AclOperation ANY"),
        ({"permission_type": 0}, "AclPermissionType UNKNOWN"),
        ({"name": ""}, "empty resource name"),
        ({"name": "", "pattern_type": 4}, "empty resource name"),
        ({"name": "a/b"}, "invalid resource name"),
        ({"resource_type": 4, "name": "other"}, "only valid name for the CLUSTER"),
        ({"principal": "alice"}, "principalType:principalName"),
        ({"principal": "User:al*"}, "wildcard must be the whole name"),
        ({"host": ""}, "empty host"),
        ({"host": "10.0.*"}, "wildcard must be the whole host"),
    ],
)
def test_bindings_kafka_refuses(changes: dict[str, object], reason: str) -> None:
    bad = binding(**changes)
    message = validate_binding(bad)
    assert message is not None and reason in message
    acl_api, authorizer = api()
    good = binding()
    results = asyncio.run(acl_api.create_acls(ADMIN, [bad, good]))
    assert results[0].error_code == ErrorCode.INVALID_REQUEST
    assert results[0].error_message is not None and reason in results[0].error_message
    assert results[1].error_code == ErrorCode.NONE  # one bad binding fails only itself
    assert authorizer.acls(ANY) == [good]


def test_wildcards_that_are_whole_are_fine() -> None:
    assert validate_binding(binding(principal="User:*", host="*", name="*")) is None
    assert validate_binding(binding(resource_type=4, name="kafka-cluster", operation=2)) is None


def test_unknown_filters_are_refused() -> None:
    acl_api, _ = api()
    unknown = filter_from_wire(2, None, 0, None, None, 1, 1)
    described = asyncio.run(acl_api.describe_acls(ADMIN, unknown))
    assert described.error.error_code == ErrorCode.INVALID_REQUEST
    results = asyncio.run(acl_api.delete_acls(ADMIN, [unknown, ANY]))
    assert [r.error.error_code for r in results] == [ErrorCode.INVALID_REQUEST, ErrorCode.NONE]


REQUIRED = {"broker.id": "1", "zookeeper.connect": "zk:2181"}


def test_config_keys() -> None:
    config = BrokerConfig.from_properties(REQUIRED)
    assert authorizer_from_config(config) is None
    config = BrokerConfig.from_properties(
        {
            **REQUIRED,
            "authorizer.class.name": ACL_AUTHORIZER_CLASS,
            "super.users": "User:admin; User:CN=broker,O=minikafka",
            "allow.everyone.if.no.acl.found": "true",
        }
    )
    authorizer = authorizer_from_config(config)
    assert authorizer is not None
    assert authorizer.super_users == {"User:admin", "User:CN=broker,O=minikafka"}
    assert authorizer.allow_everyone_if_no_acl_found


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("authorizer.class.name", "kafka.security.auth.SimpleAclAuthorizer", "only authorizer"),
        ("super.users", "admin", "'admin' is not a principal"),
        ("allow.everyone.if.no.acl.found", "maybe", "allow.everyone.if.no.acl.found"),
    ],
)
def test_config_errors(key: str, value: str, message: str) -> None:
    with pytest.raises(InvalidConfigError, match=message):
        BrokerConfig.from_properties({**REQUIRED, key: value})


class FailingStore(MemoryStore):
    """ZooKeeper away: every write fails, as AclManager reports it per binding."""

    async def create_acls(self, bindings: Sequence[AclBinding]) -> list[Exception | None]:
        return [ConnectionError("ZooKeeper is unreachable")] * len(bindings)

    async def delete_acls(
        self, filters: Sequence[AclBindingFilter]
    ) -> list[list[tuple[AclBinding, Exception | None]]]:
        failed = ConnectionError("ZooKeeper is unreachable")
        return [[(b, failed) for b in self.authorizer.acls(f)] for f in filters]


def test_a_failed_write_is_reported_per_binding() -> None:
    authorizer = AclAuthorizer([KafkaPrincipal("User", "admin")])
    authorizer.set_acls(ORDERS, [READ])
    acl_api = AclApi(authorizer, FailingStore(authorizer))
    (created,) = asyncio.run(acl_api.create_acls(ADMIN, [AclBinding(ORDERS, READ)]))
    assert created == AclError(ErrorCode.UNKNOWN_SERVER_ERROR, "ZooKeeper is unreachable")
    (deleted,) = asyncio.run(acl_api.delete_acls(ADMIN, [ANY]))
    assert deleted.error.error_code == ErrorCode.NONE
    assert [(d.binding, d.error.error_code) for d in deleted.deleted] == [
        (AclBinding(ORDERS, READ), ErrorCode.UNKNOWN_SERVER_ERROR)
    ]
