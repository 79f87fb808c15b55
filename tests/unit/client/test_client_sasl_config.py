"""The client's SASL keys on ClientSecurity, as Kafka's clients (and librdkafka) spell them."""

from __future__ import annotations

import pytest

from minikafka.client._security import ClientSecurity
from minikafka.client.cli._config import client_kwargs
from minikafka.client.producer.producer import Producer
from minikafka.proto.errors import InvalidConfigError
from minikafka.proto.sasl_channel import SaslCredentials

LOGIN = {
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanism": "SCRAM-SHA-512",
    "sasl.username": "alice",
    "sasl.password": "alice-secret",
}


def test_sasl_keys_make_the_login() -> None:
    security = ClientSecurity.of(LOGIN)
    assert security.uses_sasl and not security.uses_tls
    assert security.sasl_credentials() == SaslCredentials("SCRAM-SHA-512", "alice", "alice-secret")
    assert "alice-secret" not in repr(security) and "alice-secret" not in repr(
        security.sasl_credentials()
    )


def test_librdkafkas_sasl_mechanisms_spelling_is_taken() -> None:
    keys = {**LOGIN, "sasl.mechanisms": "plain"}
    del keys["sasl.mechanism"]
    assert ClientSecurity.of(keys).sasl_mechanism == "PLAIN"


def test_without_sasl_there_is_no_login() -> None:
    assert ClientSecurity.of({"security.protocol": "PLAINTEXT"}).sasl_credentials() is None


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"sasl.mechanism": "GSSAPI"}, "sasl.mechanism: must be one of PLAIN"),
        ({"sasl.username": ""}, "sasl.username must be set"),
        ({"sasl.password": ""}, "sasl.password must be set"),
    ],
)
def test_incomplete_sasl_settings_are_refused(change: dict[str, str], problem: str) -> None:
    with pytest.raises(InvalidConfigError, match=problem) as refused:
        ClientSecurity.of({**LOGIN, **change})
    assert "alice-secret" not in str(refused.value)


def test_a_tools_config_file_passes_the_sasl_keys_as_security() -> None:
    kwargs = client_kwargs(Producer, {**LOGIN, "acks": "all"}, lambda line: None)
    assert kwargs["security"] == LOGIN
