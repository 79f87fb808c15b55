"""DescribeAcls, CreateAcls and DeleteAcls at every version this broker serves (1-3), through a
raw connection, and their errors on the wire."""

from __future__ import annotations

from typing import Any

import pytest

from minikafka.proto.errors import ErrorCode
from tests.integration.cluster import Cluster
from tests.integration.conftest import ClusterFactory
from tests.integration.kafka_protocol.raw import RawKafka

pytestmark = pytest.mark.integration

DESCRIBE, CREATE, DELETE, API_VERSIONS = 29, 30, 31, 18
TOPIC, GROUP, ANY_TYPE = 2, 3, 1
LITERAL, PREFIXED, ANY_PATTERN, MATCH = 3, 4, 1, 2
READ, ANY_OP = 3, 1
ALLOW, ANY_PERMISSION = 3, 1


@pytest.fixture
def cluster(cluster_factory: ClusterFactory) -> Cluster:
    return cluster_factory(
        1,
        {
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "super.users": "User:ANONYMOUS",
        },
    )


def creation(name: str, principal: str, pattern_type: int = LITERAL) -> dict[str, Any]:
    return {
        "resource_type": TOPIC,
        "resource_name": name,
        "resource_pattern_type": pattern_type,
        "principal": principal,
        "host": "*",
        "operation": READ,
        "permission_type": ALLOW,
    }


def any_filter(pattern_type: int = ANY_PATTERN, name: str | None = None) -> dict[str, Any]:
    return {
        "resource_type_filter": ANY_TYPE,
        "resource_name_filter": name,
        "pattern_type_filter": pattern_type,
        "principal_filter": None,
        "host_filter": None,
        "operation": ANY_OP,
        "permission_type": ANY_PERMISSION,
    }


def described(
    raw: RawKafka, version: int, binding_filter: dict[str, Any]
) -> list[tuple[str, int, str]]:
    answer = raw.call(DESCRIBE, version, binding_filter)
    assert answer.error_code == ErrorCode.NONE, answer.error_message
    return sorted(
        (r.resource_name, r.pattern_type, acl.principal) for r in answer.resources for acl in r.acls
    )


def test_every_version(cluster: Cluster) -> None:
    with RawKafka(cluster.brokers[0].kafka_address) as raw:
        versions = {
            k.api_key: (k.min_version, k.max_version)
            for k in raw.call(API_VERSIONS, 3, {"client_software_name": "raw",
                                                "client_software_version": "1"}).api_keys
        }  # fmt: skip
        assert {key: versions[key] for key in (DESCRIBE, CREATE, DELETE)} == {
            DESCRIBE: (1, 3),
            CREATE: (1, 3),
            DELETE: (1, 3),
        }
        for version in (1, 2, 3):
            answer = raw.call(
                CREATE,
                version,
                {
                    "creations": [
                        creation(f"t{version}", f"User:v{version}", PREFIXED),
                        creation(f"t{version}", f"User:v{version}"),
                    ]
                },
            )
            assert [r.error_code for r in answer.results] == [ErrorCode.NONE] * 2
        everything = [
            (f"t{v}", pattern, f"User:v{v}") for v in (1, 2, 3) for pattern in (LITERAL, PREFIXED)
        ]
        for version in (1, 2, 3):
            assert described(raw, version, any_filter()) == everything
        assert described(raw, 1, any_filter(LITERAL)) == everything[::2]
        assert described(raw, 2, any_filter(MATCH, "t2-orders")) == [("t2", PREFIXED, "User:v2")]
        for version in (1, 2, 3):
            body = {"filters": [any_filter(ANY_PATTERN, f"t{version}")]}
            (result,) = raw.call(DELETE, version, body).filter_results
            assert result.error_code == ErrorCode.NONE
            deleted = sorted((m.pattern_type, m.principal) for m in result.matching_acls)
            assert deleted == [(LITERAL, f"User:v{version}"), (PREFIXED, f"User:v{version}")]
        assert described(raw, 3, any_filter()) == []


def test_errors_on_the_wire(cluster: Cluster) -> None:
    with RawKafka(cluster.brokers[0].kafka_address) as raw:
        bad = creation("", "User:a")
        answer = raw.call(CREATE, 3, {"creations": [bad, creation("ok", "User:a")]})
        assert [r.error_code for r in answer.results] == [ErrorCode.INVALID_REQUEST, ErrorCode.NONE]
        assert "empty resource name" in answer.results[0].error_message
        unknown = {**any_filter(), "operation": 99}
        answer = raw.call(DESCRIBE, 3, unknown)
        assert answer.error_code == ErrorCode.INVALID_REQUEST
        answer = raw.call(DELETE, 3, {"filters": [unknown]})
        assert answer.filter_results[0].error_code == ErrorCode.INVALID_REQUEST
