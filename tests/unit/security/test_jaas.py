"""sasl.jaas.config values: Kafka's one-line JAAS entries, and the errors that never quote them."""

from __future__ import annotations

import pytest

from minikafka.broker.security.sasl.jaas import (
    PLAIN_LOGIN_MODULE,
    parse_jaas_config,
    parse_single_login_module,
)

BROKER_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required\n"
    '    username="admin"\n    password="admin-secret"\n'
    '    user_admin="admin-secret"\n    user_alice="alice-secret";'
)


def test_plain_listener_config() -> None:
    module = parse_single_login_module(BROKER_JAAS, "sasl.jaas.config")
    assert module.login_module == PLAIN_LOGIN_MODULE
    assert module.control_flag == "required"
    assert module.options["username"] == "admin"
    assert module.options["password"] == "admin-secret"
    assert dict(module.plain_users()) == {"admin": "admin-secret", "alice": "alice-secret"}


def test_unquoted_values_escapes_and_other_flags() -> None:
    [module] = parse_jaas_config(r'com.example.Login optional debug=true password="a\"b;c = d";')
    assert module.control_flag == "optional"
    assert dict(module.options) == {"debug": "true", "password": 'a"b;c = d'}


def test_several_modules_and_the_one_module_rule() -> None:
    text = "a.B required; c.D sufficient x=y;"
    assert [m.login_module for m in parse_jaas_config(text)] == ["a.B", "c.D"]
    with pytest.raises(ValueError, match="contains 2 login modules, should be 1"):
        parse_single_login_module(text, "sasl.jaas.config")


def test_repr_hides_passwords() -> None:
    module = parse_single_login_module(BROKER_JAAS, "sasl.jaas.config")
    assert "secret" not in repr(module)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no login module"),
        ("a.B", "control flag"),
        ("a.B maybe;", "control flag"),
        ('a.B required password="s3cret"', "does not end with ;"),
        ('a.B required password="s3cret;', "not closed"),
        ("a.B required password=;", "key=value"),
        ("a.B required =x;", "key=value"),
        ("; a.B required;", "class name"),
    ],
)
def test_malformed(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as failed:
        parse_jaas_config(text)
    assert "s3cret" not in str(failed.value)
