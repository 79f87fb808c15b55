"""SASL_* gRPC listeners in the broker's config: their mechanisms, checked as a Kafka
listener's are, and this broker's own login to the control plane and inter-broker ones."""

from __future__ import annotations

import pytest

from minikafka.broker.config import BrokerConfig
from minikafka.broker.server.sasl_setup import grpc_broker_login, listener_sasl
from minikafka.proto.errors import InvalidConfigError
from minikafka.proto.sasl_channel import SaslCredentials

BASE = {
    "broker.id": "1",
    "zookeeper.connect": "zk:2181",
    "listeners": "SASL://127.0.0.1:9092,OPEN://127.0.0.1:9094",
    "listener.security.protocol.map": "SASL:SASL_PLAINTEXT,OPEN:PLAINTEXT",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
    "inter.broker.listener.name": "SASL",
    "sasl.mechanism.inter.broker.protocol": "PLAIN",
}
JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="s3cret-admin" user_admin="s3cret-admin" user_bob="b0b";'
)


def test_a_sasl_grpc_listener_gets_its_mechanisms_and_the_broker_its_login() -> None:
    config = BrokerConfig.from_properties(
        {**BASE, "listener.name.sasl.plain.sasl.jaas.config": JAAS}
    )
    factories = listener_sasl(config, lambda user, mechanism: None)
    assert set(factories) == {"SASL"}
    assert factories["SASL"].enabled_mechanisms == ("PLAIN", "SCRAM-SHA-256")
    login = grpc_broker_login(config, config.control_plane_listener)
    assert login == SaslCredentials("PLAIN", "admin", "s3cret-admin")
    assert "s3cret" not in repr(login)
    assert grpc_broker_login(config, "OPEN") is None


def test_the_control_plane_listener_needs_the_brokers_login() -> None:
    props = {
        **BASE,
        "inter.broker.listener.name": "OPEN",
        "control.plane.listener.name": "SASL",
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256",
        "listener.name.sasl.plain.sasl.jaas.config": JAAS,
    }
    with pytest.raises(InvalidConfigError, match=r"control\.plane\.listener\.name SASL uses SASL"):
        BrokerConfig.from_properties(props)


def test_kafkas_default_gssapi_is_refused_on_a_grpc_listener_too() -> None:
    props = {k: v for k, v in BASE.items() if k != "sasl.enabled.mechanisms"}
    with pytest.raises(InvalidConfigError, match="GSSAPI of listener SASL is not supported"):
        BrokerConfig.from_properties({**props, "sasl.jaas.config": JAAS})
