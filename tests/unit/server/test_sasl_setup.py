"""The SASL settings turned into each listener's mechanisms and the follower's login; a bad JAAS
value is a config error naming its key and never quoting it."""

from __future__ import annotations

import re

import pytest

from minikafka.broker.config import BrokerConfig
from minikafka.broker.server.sasl_setup import SaslLogin, inter_broker_login, listener_sasl
from minikafka.proto.errors import InvalidConfigError

BASE = {
    "broker.id": "1",
    "zookeeper.connect": "zk:2181",
    "listeners": "PLAINTEXT://127.0.0.1:9092",
    "kafka.listeners": "SASL://127.0.0.1:9093,OPEN://127.0.0.1:9094",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL:SASL_PLAINTEXT,OPEN:PLAINTEXT",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
    "inter.broker.listener.name": "SASL",
    "control.plane.listener.name": "PLAINTEXT",
    "sasl.mechanism.inter.broker.protocol": "PLAIN",
}
JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="s3cret-admin" user_admin="s3cret-admin" user_bob="b0b";'
)


def test_listener_mechanisms_and_the_inter_broker_login() -> None:
    config = BrokerConfig.from_properties({**BASE, "sasl.jaas.config": JAAS})
    factories = listener_sasl(config, lambda user, mechanism: None)
    assert set(factories) == {"SASL"}  # the PLAINTEXT listener authenticates nobody
    factory = factories["SASL"]
    assert factory.enabled_mechanisms == ("PLAIN", "SCRAM-SHA-512")
    assert dict(factory.plain_users) == {"admin": "s3cret-admin", "bob": "b0b"}
    login = inter_broker_login(config)
    assert login == SaslLogin("PLAIN", "admin", "s3cret-admin")
    assert "s3cret" not in repr(login)


@pytest.mark.parametrize(
    ("jaas", "message"),
    [
        ('x.Y required password="s3cret-admin"', "does not end with ;"),
        ("a.B required; c.D required;", "contains 2 login modules"),
        (
            'org.apache.kafka.common.security.plain.PlainLoginModule required password="s3cret";',
            "needs username and password",
        ),
    ],
)
def test_bad_jaas(jaas: str, message: str) -> None:
    config = BrokerConfig.from_properties({**BASE, "sasl.jaas.config": jaas})
    with pytest.raises(InvalidConfigError, match=re.escape(message)) as failed:
        listener_sasl(config, lambda user, mechanism: None)
        inter_broker_login(config)
    assert "s3cret" not in str(failed.value)
