"""DescribeUserScramCredentials / AlterUserScramCredentials in the core: Kafka's checks and
errors, on an in-memory /config/users."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence

import pytest

from minikafka.broker.security.acl import Action
from minikafka.broker.security.principal import Session, anonymous_session
from minikafka.broker.security.sasl.scram import (
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    ScramCredential,
    ScramSaslClient,
    ScramSaslServer,
    salted_password,
)
from minikafka.broker.server.core.users import (
    CredentialInfo,
    ScramDeletion,
    ScramUpsertion,
    UserResult,
    UserScramAdmin,
)
from minikafka.proto.errors import ErrorCode


class MemoryUsers:
    def __init__(self) -> None:
        self.configs: dict[str, dict[str, str]] = {}
        self.notified: list[str] = []

    def list_users(self) -> list[str]:
        return sorted(self.configs)

    def get_user_config(self, user: str) -> dict[str, str]:
        return dict(self.configs.get(user, {}))

    def update_user_configs(
        self, changes: Mapping[str, Callable[[dict[str, str]], dict[str, str]]]
    ) -> None:
        for user, change in changes.items():
            self.configs[user] = change(self.get_user_config(user))
            self.notified.append(user)


def upsert(
    name: str, mechanism: int = 1, iterations: int = 4096, password: str = "pw"
) -> ScramUpsertion:
    scram = SCRAM_SHA_256 if mechanism != 2 else SCRAM_SHA_512
    salt = b"salt-" + name.encode()
    salted = salted_password(scram, password, salt, iterations) if mechanism in (1, 2) else b"x"
    return ScramUpsertion(name, mechanism, iterations, salt, salted)


def run(
    admin: UserScramAdmin, up: Sequence[ScramUpsertion], down: Sequence[ScramDeletion]
) -> list[UserResult]:
    return asyncio.run(admin.alter(up, down))


def test_upsert_stores_a_credential_that_logs_in_and_keeps_quotas() -> None:
    store = MemoryUsers()
    store.configs["alice"] = {"producer_byte_rate": "1024"}
    admin = UserScramAdmin(store)
    results = run(admin, [upsert("alice", 1, 4096, "s3cret"), upsert("alice", 2, 8192)], [])
    assert [(r.user, r.error_code) for r in results] == [("alice", ErrorCode.NONE)]
    config = store.configs["alice"]
    assert config["producer_byte_rate"] == "1024"
    credential = ScramCredential.parse(config["SCRAM-SHA-256"])
    server = ScramSaslServer(SCRAM_SHA_256, lambda u, m: credential)
    client = ScramSaslClient(SCRAM_SHA_256, "alice", "s3cret")
    client.verify(server.evaluate_response(client.final(server.evaluate_response(client.first()))))
    assert store.notified == ["alice"]

    described = asyncio.run(admin.describe(["alice"]))
    assert described[0].credential_infos == (CredentialInfo(1, 4096), CredentialInfo(2, 8192))


@pytest.mark.parametrize(
    ("upsertion", "code", "message"),
    [
        (upsert("", 1), ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        (upsert("a", 3), ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        (upsert("a", 1, 4095), ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        (upsert("a", 2, 16385), ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
    ],
)
def test_illegal_upsertions(upsertion: ScramUpsertion, code: ErrorCode, message: str) -> None:
    store = MemoryUsers()
    [result] = run(UserScramAdmin(store), [upsertion], [])
    assert (result.error_code, result.error_message) == (code, message)
    assert store.configs == {}


def test_duplicates_missing_deletions_and_the_rest_go_through() -> None:
    store = MemoryUsers()
    admin = UserScramAdmin(store)
    run(admin, [upsert("carol", 1)], [])
    results = run(
        admin,
        [upsert("dup", 1), upsert("dup", 1), upsert("erin", 2)],
        [ScramDeletion("carol", 2), ScramDeletion("frank", 1)],
    )
    by_user = {r.user: (r.error_code, r.error_message) for r in results}
    assert by_user == {
        "dup": (
            ErrorCode.DUPLICATE_RESOURCE,
            "A user credential cannot be altered twice in the same request",
        ),
        "carol": (
            ErrorCode.RESOURCE_NOT_FOUND,
            "Attempt to delete a user credential that does not exist",
        ),
        "frank": (
            ErrorCode.RESOURCE_NOT_FOUND,
            "Attempt to delete a user credential that does not exist",
        ),
        "erin": (ErrorCode.NONE, None),
    }
    assert "dup" not in store.configs and "SCRAM-SHA-512" in store.configs["erin"]
    # A real deletion.
    [deleted] = run(admin, [], [ScramDeletion("carol", 1)])
    assert deleted.error_code is ErrorCode.NONE
    assert "SCRAM-SHA-256" not in store.configs["carol"]


def test_describe_rules() -> None:
    store = MemoryUsers()
    admin = UserScramAdmin(store)
    run(admin, [upsert("zed", 2), upsert("amy", 1)], [])
    store.configs["quota-only"] = {"consumer_byte_rate": "1"}
    every = asyncio.run(admin.describe(None))
    assert [r.user for r in every] == ["amy", "zed"]  # sorted, users with a credential only
    named = asyncio.run(admin.describe(["zed", "quota-only", "", "amy", "amy"]))
    assert [(r.user, r.error_code) for r in named] == [
        ("zed", ErrorCode.NONE),
        ("quota-only", ErrorCode.RESOURCE_NOT_FOUND),
        ("", ErrorCode.RESOURCE_NOT_FOUND),
        ("amy", ErrorCode.DUPLICATE_RESOURCE),
    ]
    assert named[1].error_message == (
        "Attempt to describe a user credential that does not exist: quota-only"
    )


class DenyAll:
    def __init__(self) -> None:
        self.asked: list[Action] = []

    def authorize(self, session: Session, actions: Sequence[Action]) -> list[bool]:
        self.asked += actions
        return [False for _ in actions]

    def authorize_by_resource_type(self, session: Session, operation: object, rt: object) -> bool:
        return False


def test_the_authorizer_hook_refuses_every_user() -> None:
    store = MemoryUsers()
    authorizer = DenyAll()
    admin = UserScramAdmin(store, authorizer)
    session = anonymous_session("10.0.0.1")
    results = asyncio.run(admin.alter([upsert("a", 1)], [ScramDeletion("b", 1)], session))
    assert {(r.user, r.error_code) for r in results} == {
        ("a", ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
        ("b", ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    }
    assert store.configs == {}
    assert [(a.operation.name, a.resource_type.name) for a in authorizer.asked] == [
        ("ALTER", "CLUSTER")
    ]


def test_describe_not_allowed_is_the_whole_request_s_error() -> None:
    from minikafka.proto.errors import KafkaError

    admin = UserScramAdmin(MemoryUsers(), DenyAll())
    with pytest.raises(KafkaError) as refused:
        asyncio.run(admin.describe(["a"], anonymous_session("10.0.0.1")))
    assert refused.value.code is ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def test_an_undecodable_user_znode_is_an_error_without_its_content() -> None:
    from minikafka.zk.errors import ZkDataError

    class Corrupt(MemoryUsers):
        def get_user_config(self, user: str) -> dict[str, str]:
            if user == "bad":
                raise ZkDataError("/config/users/bad", "not JSON", b"salt=secret-stuff")
            return super().get_user_config(user)

        def list_users(self) -> list[str]:
            return ["bad", *super().list_users()]

    store = Corrupt()
    admin = UserScramAdmin(store)
    results = run(admin, [upsert("bad", 1), upsert("good", 1)], [])
    assert {(r.user, r.error_code) for r in results} == {
        ("bad", ErrorCode.UNKNOWN_SERVER_ERROR),
        ("good", ErrorCode.NONE),
    }
    described = asyncio.run(admin.describe(None))
    assert [(r.user, r.error_code) for r in described] == [
        ("bad", ErrorCode.UNKNOWN_SERVER_ERROR),
        ("good", ErrorCode.NONE),
    ]
    messages = [r.error_message for r in results] + [r.error_message for r in described]
    assert all("secret" not in (m or "") for m in messages)
