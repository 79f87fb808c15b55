"""ClientQuotaAdmin (DescribeClientQuotas / AlterClientQuotas) on an in-memory store: Kafka's
validation, the znode values written, describe's filters, authorization."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence

import pytest

from minikafka.broker.security.acl import Action
from minikafka.broker.security.principal import Session, anonymous_session
from minikafka.broker.server.core.client_quotas import (
    ClientQuotaAdmin,
    QuotaAlteration,
    QuotaAlterResult,
    QuotaComponent,
    QuotaFilterComponent,
    QuotaOp,
)
from minikafka.proto.errors import ErrorCode, KafkaError
from minikafka.zk.zk_data import QuotaEntity


class Store:
    def __init__(self) -> None:
        self.configs: dict[QuotaEntity, dict[str, str]] = {}
        self.notified: list[str] = []

    def list_quota_entities(self) -> list[QuotaEntity]:
        return list(self.configs)

    def get_quota_config(self, entity: QuotaEntity) -> dict[str, str]:
        return dict(self.configs.get(entity, {}))

    def update_quota_configs(
        self, changes: Mapping[QuotaEntity, Callable[[dict[str, str]], dict[str, str]]]
    ) -> None:
        for entity, change in changes.items():
            self.configs[entity] = change(self.get_quota_config(entity))
            self.notified.append(entity.entity_path)


def alter(
    admin: ClientQuotaAdmin, *alterations: QuotaAlteration, validate_only: bool = False
) -> list[QuotaAlterResult]:
    return asyncio.run(admin.alter(alterations, validate_only))


USER_ALICE = (QuotaComponent("user", "alice"),)
CLIENT_DEFAULT = (QuotaComponent("client-id", None),)


def test_alter_writes_kafkas_strings_beside_scram_keys_and_notifies() -> None:
    store = Store()
    store.configs[QuotaEntity(user="alice")] = {"SCRAM-SHA-256": "salt=x"}
    admin = ClientQuotaAdmin(store)
    results = alter(
        admin,
        QuotaAlteration(USER_ALICE, (QuotaOp("producer_byte_rate", 1048576.0),)),
        QuotaAlteration(
            (QuotaComponent("user", "alice"), QuotaComponent("client-id", None)),
            (QuotaOp("request_percentage", 50.0),),
        ),
    )
    assert [r.error_code for r in results] == [ErrorCode.NONE, ErrorCode.NONE]
    assert store.configs[QuotaEntity(user="alice")] == {
        "SCRAM-SHA-256": "salt=x",
        "producer_byte_rate": "1048576",
    }
    assert store.configs[QuotaEntity("alice", "<default>")] == {"request_percentage": "50.0"}
    assert store.notified == ["users/alice", "users/alice/clients/<default>"]
    alter(admin, QuotaAlteration(USER_ALICE, (QuotaOp("producer_byte_rate", 0, remove=True),)))
    assert store.configs[QuotaEntity(user="alice")] == {"SCRAM-SHA-256": "salt=x"}


@pytest.mark.parametrize(
    ("entity", "ops", "message"),
    [
        ((), (QuotaOp("producer_byte_rate", 1.0),), "empty"),
        (USER_ALICE + USER_ALICE, (QuotaOp("producer_byte_rate", 1.0),), "Duplicate entity"),
        ((QuotaComponent("ip", "1.2.3.4"),), (QuotaOp("producer_byte_rate", 1.0),), "IP"),
        ((QuotaComponent("topic", "t"),), (QuotaOp("producer_byte_rate", 1.0),), "entity type"),
        (USER_ALICE, (QuotaOp("retention.ms", 1.0),), "Invalid configuration key"),
        (USER_ALICE, (QuotaOp("producer_byte_rate", 1.5),), "Long"),
        (USER_ALICE, (QuotaOp("consumer_byte_rate", -5.0),), "positive"),
        (USER_ALICE, (QuotaOp("request_percentage", float("nan")),), "positive"),
        (
            USER_ALICE,
            (QuotaOp("producer_byte_rate", 1.0), QuotaOp("producer_byte_rate", 2.0)),
            "Duplicate quota key",
        ),
    ],
)
def test_alter_refuses_as_kafka(
    entity: tuple[QuotaComponent, ...], ops: tuple[QuotaOp, ...], message: str
) -> None:
    store = Store()
    [result] = alter(ClientQuotaAdmin(store), QuotaAlteration(entity, ops))
    assert result.error_code == ErrorCode.INVALID_REQUEST
    assert result.error_message is not None and message in result.error_message
    assert store.configs == {}


def test_validate_only_writes_nothing() -> None:
    store = Store()
    [result] = alter(
        ClientQuotaAdmin(store),
        QuotaAlteration(CLIENT_DEFAULT, (QuotaOp("producer_byte_rate", 10.0),)),
        validate_only=True,
    )
    assert result.error_code == ErrorCode.NONE
    assert store.configs == {} and store.notified == []


def describe(
    admin: ClientQuotaAdmin, *components: QuotaFilterComponent, strict: bool = False
) -> list[tuple[tuple[tuple[str, str | None], ...], tuple[tuple[str, float], ...]]]:
    entries = asyncio.run(admin.describe(components, strict))
    return [(tuple((c.entity_type, c.name) for c in e.entity), e.values) for e in entries]


def test_describe_filters_as_kafka() -> None:
    store = Store()
    store.configs = {
        QuotaEntity(user="alice"): {"producer_byte_rate": "100", "SCRAM-SHA-256": "x"},
        QuotaEntity(user="bob"): {"SCRAM-SHA-256": "x"},  # no quota: not listed
        QuotaEntity("alice", "app"): {"consumer_byte_rate": "200"},
        QuotaEntity(client_id="<default>"): {"request_percentage": "12.5"},
    }
    admin = ClientQuotaAdmin(store)
    assert describe(admin, QuotaFilterComponent("user", 0, "alice")) == [
        ((("user", "alice"),), (("producer_byte_rate", 100.0),)),
        ((("user", "alice"), ("client-id", "app")), (("consumer_byte_rate", 200.0),)),
    ]
    assert describe(admin, QuotaFilterComponent("user", 0, "alice"), strict=True) == [
        ((("user", "alice"),), (("producer_byte_rate", 100.0),)),
    ]
    assert describe(admin, QuotaFilterComponent("client-id", 1)) == [
        ((("client-id", None),), (("request_percentage", 12.5),)),
    ]
    assert len(describe(admin)) == 3  # no components: everything with a quota


@pytest.mark.parametrize(
    "components",
    [
        [QuotaFilterComponent("user", 0, None)],
        [QuotaFilterComponent("user", 1, "alice")],
        [QuotaFilterComponent("user", 7)],
        [QuotaFilterComponent("user", 2), QuotaFilterComponent("user", 2)],
        [QuotaFilterComponent("topic", 2)],
    ],
)
def test_describe_refuses_bad_filters(components: Sequence[QuotaFilterComponent]) -> None:
    with pytest.raises(KafkaError) as refused:
        asyncio.run(ClientQuotaAdmin(Store()).describe(components, False))
    assert refused.value.code == ErrorCode.INVALID_REQUEST


class DenyAll:
    def authorize(self, session: Session, actions: Sequence[Action]) -> list[bool]:
        return [False for _ in actions]

    def authorize_by_resource_type(self, session: Session, op: object, resource: object) -> bool:
        return False


def test_not_authorized_on_the_cluster() -> None:
    store = Store()
    admin = ClientQuotaAdmin(store, DenyAll())
    session = anonymous_session("127.0.0.1", "KAFKA")
    [result] = asyncio.run(
        admin.alter(
            [QuotaAlteration(USER_ALICE, (QuotaOp("producer_byte_rate", 1.0),))], False, session
        )
    )
    assert result.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert store.configs == {}
    with pytest.raises(KafkaError) as refused:
        asyncio.run(admin.describe([], False, session))
    assert refused.value.code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
