"""The connection's SASL state machine (Kafka's SaslServerAuthenticator): which requests each
state takes, and what the handshake and the exchange leave behind."""

from __future__ import annotations

import pytest

from minikafka.broker.security.principal import KafkaPrincipal
from minikafka.broker.security.sasl.errors import SaslAuthenticationFailed
from minikafka.broker.security.sasl.scram import (
    SCRAM_SHA_512,
    ScramSaslClient,
    credential_from_password,
)
from minikafka.broker.security.sasl.server import SaslServerFactory
from minikafka.broker.server.kafka.sasl_authenticator import (
    API_VERSIONS,
    SASL_AUTHENTICATE,
    SASL_HANDSHAKE,
    AuthState,
    SaslAuthenticator,
    SaslStateError,
)
from minikafka.proto.errors import ErrorCode

METADATA = 3
CREDENTIAL = credential_from_password(SCRAM_SHA_512, "bob-secret", 4096)
FACTORY = SaslServerFactory(
    ("PLAIN", "SCRAM-SHA-512"),
    {"alice": "alice-secret"},
    lambda user, mechanism: CREDENTIAL if (user, mechanism) == ("bob", SCRAM_SHA_512) else None,
)


def authenticator() -> SaslAuthenticator:
    return SaslAuthenticator(
        FACTORY, client_host="10.0.0.7", listener="SASL", protocol="SASL_PLAINTEXT"
    )


def test_before_the_handshake_only_api_versions_and_the_handshake() -> None:
    auth = authenticator()
    auth.check_request(API_VERSIONS)
    auth.check_request(SASL_HANDSHAKE)
    for api_key in (METADATA, SASL_AUTHENTICATE):
        with pytest.raises(SaslStateError) as refused:
            auth.check_request(api_key)
        assert not refused.value.answer  # closed unanswered, as Kafka
        assert "during SASL handshake" in refused.value.reason


def test_api_versions_is_answered_once_before_the_handshake() -> None:
    """Kafka's HANDSHAKE_OR_VERSIONS_REQUEST -> HANDSHAKE_REQUEST: a client that keeps asking
    for versions instead of logging in is closed, not kept alive past the idle timeout."""
    auth = authenticator()
    auth.check_request(API_VERSIONS)  # a version not served: not answered, may come again
    auth.check_request(API_VERSIONS)
    auth.versions_answered()
    with pytest.raises(SaslStateError) as refused:
        auth.check_request(API_VERSIONS)
    assert not refused.value.answer
    assert "Unexpected ApiVersions request" in refused.value.reason
    auth.check_request(SASL_HANDSHAKE)  # the handshake still may come


def test_plain_login_makes_the_session() -> None:
    auth = authenticator()
    answer = auth.handshake("PLAIN", 1)
    assert answer.error_code is ErrorCode.NONE and not answer.close
    assert answer.mechanisms == ("PLAIN", "SCRAM-SHA-512")
    assert not auth.raw_tokens
    with pytest.raises(SaslStateError) as refused:
        auth.check_request(SASL_HANDSHAKE)  # a second handshake
    assert refused.value.answer
    assert auth.authenticate(b"\0alice\0alice-secret") == b""
    assert auth.state is AuthState.COMPLETE
    session = auth.session()
    assert session.principal == KafkaPrincipal("User", "alice")
    assert (session.client_host, session.listener, session.security_protocol) == (
        "10.0.0.7",
        "SASL",
        "SASL_PLAINTEXT",
    )


def test_scram_takes_two_tokens() -> None:
    auth = authenticator()
    auth.handshake("SCRAM-SHA-512", 1)
    client = ScramSaslClient(SCRAM_SHA_512, "bob", "bob-secret")
    server_first = auth.authenticate(client.first())
    assert auth.state is AuthState.AUTHENTICATE
    client.verify(auth.authenticate(client.final(server_first)))
    assert auth.complete and str(auth.session().principal) == "User:bob"


def test_handshake_v0_switches_to_raw_tokens() -> None:
    auth = authenticator()
    auth.handshake("PLAIN", 0)
    assert auth.raw_tokens


def test_mechanism_not_enabled() -> None:
    auth = authenticator()
    answer = auth.handshake("SCRAM-SHA-256", 1)
    assert answer.error_code is ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert answer.mechanisms == ("PLAIN", "SCRAM-SHA-512")
    assert answer.close
    assert auth.state is AuthState.FAILED


def test_failed_exchange_ends_it() -> None:
    auth = authenticator()
    auth.handshake("PLAIN", 1)
    with pytest.raises(SaslAuthenticationFailed):
        auth.authenticate(b"\0alice\0wrong")
    assert auth.state is AuthState.FAILED
    with pytest.raises(SaslStateError):
        auth.check_request(SASL_AUTHENTICATE)
