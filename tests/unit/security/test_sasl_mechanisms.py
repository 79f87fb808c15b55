"""SASL mechanisms: PLAIN, SCRAM against RFC 7677's vector and a real exchange, the stored
credential's format, and every way a client can get the messages wrong."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from minikafka.broker.security.sasl.errors import (
    SaslAuthenticationFailed,
    UnsupportedSaslMechanism,
    generic_failure_message,
)
from minikafka.broker.security.sasl.plain import PlainSaslServer
from minikafka.broker.security.sasl.scram import (
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    ScramCredential,
    ScramMechanism,
    ScramSaslClient,
    ScramSaslServer,
    credential_from_password,
    credential_from_salted_password,
    salted_password,
)
from minikafka.broker.security.sasl.server import SaslServerFactory

# RFC 7677 section 3: user "user", password "pencil".
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_SERVER_FIRST = (
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
)
RFC_CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def lookup(
    users: dict[tuple[str, ScramMechanism], ScramCredential],
) -> object:
    return lambda user, mechanism: users.get((user, mechanism))


def rfc_server() -> ScramSaslServer:
    credential = credential_from_password(SCRAM_SHA_256, "pencil", 4096, salt=RFC_SALT)
    return ScramSaslServer(
        SCRAM_SHA_256,
        lambda user, m: credential if (user, m) == ("user", SCRAM_SHA_256) else None,
        server_nonce=lambda: RFC_SERVER_NONCE,
    )


def test_rfc7677_vector() -> None:
    server = rfc_server()
    assert server.evaluate_response(RFC_CLIENT_FIRST) == RFC_SERVER_FIRST
    assert not server.complete
    assert server.evaluate_response(RFC_CLIENT_FINAL) == RFC_SERVER_FINAL
    assert server.complete
    assert server.authorization_id == "user"


def test_rfc7677_vector_client_side() -> None:
    client = ScramSaslClient(SCRAM_SHA_256, "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    assert client.first() == RFC_CLIENT_FIRST
    assert client.final(RFC_SERVER_FIRST) == RFC_CLIENT_FINAL
    client.verify(RFC_SERVER_FINAL)
    with pytest.raises(ValueError, match="signature"):
        client.verify(b"v=" + base64.b64encode(b"x" * 32))


@pytest.mark.parametrize("mechanism", [SCRAM_SHA_256, SCRAM_SHA_512])
@pytest.mark.parametrize("user", ["alice", "we,ird=name"])
def test_exchange_round_trip(mechanism: ScramMechanism, user: str) -> None:
    credential = credential_from_password(mechanism, "alice-secret", 4096)
    server = ScramSaslServer(mechanism, lambda u, m: credential if u == user else None)
    client = ScramSaslClient(mechanism, user, "alice-secret")
    client.verify(server.evaluate_response(client.final(server.evaluate_response(client.first()))))
    assert server.authorization_id == user


def exchange_until_final(
    password: str, mechanism: ScramMechanism = SCRAM_SHA_256
) -> tuple[ScramSaslServer, ScramSaslClient, bytes]:
    credential = credential_from_password(mechanism, "right", 4096)
    server = ScramSaslServer(mechanism, lambda u, m: credential if u == "alice" else None)
    client = ScramSaslClient(mechanism, "alice", password)
    server_first = server.evaluate_response(client.first())
    return server, client, client.final(server_first)


def test_wrong_password_is_refused_with_the_generic_message() -> None:
    server, _, final = exchange_until_final("wrong")
    with pytest.raises(SaslAuthenticationFailed) as failed:
        server.evaluate_response(final)
    assert not failed.value.client_safe
    assert failed.value.client_message("SCRAM-SHA-256") == (
        "Authentication failed during authentication due to invalid credentials with SASL "
        "mechanism SCRAM-SHA-256"
    )
    assert not server.complete
    # The exchange is over: another token does not resume it.
    with pytest.raises(SaslAuthenticationFailed):
        server.evaluate_response(final)


def test_proof_for_another_mechanism_is_refused() -> None:
    credential = credential_from_password(SCRAM_SHA_512, "right", 4096)
    server = ScramSaslServer(SCRAM_SHA_512, lambda u, m: credential)
    client = ScramSaslClient(SCRAM_SHA_256, "alice", "right")
    final = client.final(server.evaluate_response(client.first()))
    with pytest.raises(SaslAuthenticationFailed, match="Invalid client credentials"):
        server.evaluate_response(final)


def test_unknown_user_fails_without_telling_the_client() -> None:
    server = ScramSaslServer(SCRAM_SHA_256, lambda u, m: None)
    with pytest.raises(SaslAuthenticationFailed) as failed:
        server.evaluate_response(b"n,,n=mallory,r=abc")
    assert "Invalid user credentials" in failed.value.reason
    assert failed.value.client_message("SCRAM-SHA-256") == generic_failure_message("SCRAM-SHA-256")


@pytest.mark.parametrize(
    "first",
    [
        b"y,,n=user,r=abc",  # client supports channel binding, thinks the server does not
        b"p=tls-unique,,n=user,r=abc",  # client requires channel binding
    ],
)
def test_channel_binding_is_refused(first: bytes) -> None:
    with pytest.raises(SaslAuthenticationFailed, match="channel binding is not supported"):
        rfc_server().evaluate_response(first)


@pytest.mark.parametrize(
    "first",
    [b"", b"garbage", b"n,,r=abc", b"n,,n=user", b"n,,n=us=er,r=abc", b"n,,n=user,r=", b"\xff\xfe"],
)
def test_malformed_client_first(first: bytes) -> None:
    with pytest.raises(SaslAuthenticationFailed, match="client first message format"):
        rfc_server().evaluate_response(first)


def test_authzid_must_be_the_user() -> None:
    server = rfc_server()
    with pytest.raises(SaslAuthenticationFailed) as failed:
        server.evaluate_response(b"n,a=admin,n=user,r=abc")
    assert failed.value.client_safe
    assert "authorization id that is different from username" in failed.value.reason
    # the same user as authzid is fine
    assert rfc_server().evaluate_response(b"n,a=user,n=user,r=abc").startswith(b"r=abc")


def test_extensions_are_ignored() -> None:
    assert (
        rfc_server()
        .evaluate_response(RFC_CLIENT_FIRST + b",tokenauth=false")
        .startswith(b"r=rOprNGfwEbeRWgbNEkqO")
    )


def test_librdkafka_before_2_6_1_nonce_is_taken_as_kafka_3_9_takes_it() -> None:
    """librdkafka < 2.6.1 puts its own nonce in front of the server's answer's nonce again;
    Kafka 3.9 takes any nonce ending with the one it sent (the proof covers what was sent)."""
    mechanism = SCRAM_SHA_256
    credential = credential_from_password(mechanism, "alice-secret", 4096)
    server = ScramSaslServer(mechanism, lambda u, m: credential if u == "alice" else None)
    client_nonce = "fyko+d2lbbFgONRv9qkxdawL"
    client_first_bare = f"n=alice,r={client_nonce}"
    server_first = server.evaluate_response(f"n,,{client_first_bare}".encode()).decode()
    nonce = server_first.split(",")[0][2:]
    without_proof = f"c=biws,r={client_nonce}{nonce}"
    auth_message = f"{client_first_bare},{server_first},{without_proof}".encode()
    salted = salted_password(mechanism, "alice-secret", credential.salt, 4096)
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    signature = hmac.new(credential.stored_key, auth_message, hashlib.sha256).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    final = f"{without_proof},p={base64.b64encode(proof).decode()}".encode()
    assert server.evaluate_response(final).startswith(b"v=")
    assert server.authorization_id == "alice"


@pytest.mark.parametrize(
    "final",
    [
        b"garbage",
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",  # no proof
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",  # nonce
        b"c=eSws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"  # c= is "y,,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=AAAA",  # short proof
    ],
)
def test_malformed_client_final(final: bytes) -> None:
    server = rfc_server()
    server.evaluate_response(RFC_CLIENT_FIRST)
    with pytest.raises(SaslAuthenticationFailed) as failed:
        server.evaluate_response(final)
    assert not failed.value.client_safe
    assert "dHzbZapWIk4jUhN" not in failed.value.reason  # the proof never reaches a log line


def test_credential_below_the_minimum_iterations_is_refused() -> None:
    weak = credential_from_password(SCRAM_SHA_256, "pencil", 1024)
    server = ScramSaslServer(SCRAM_SHA_256, lambda u, m: weak)
    with pytest.raises(SaslAuthenticationFailed, match="less than the minimum 4096"):
        server.evaluate_response(b"n,,n=user,r=abc")


def test_credential_string_round_trip_and_format() -> None:
    credential = credential_from_password(SCRAM_SHA_512, "secret", 8192)
    text = credential.to_string()
    salt, stored, server, iterations = text.split(",")
    assert salt == "salt=" + base64.b64encode(credential.salt).decode()
    assert stored.startswith("stored_key=") and server.startswith("server_key=")
    assert iterations == "iterations=8192"
    assert len(credential.stored_key) == len(credential.server_key) == 64
    assert ScramCredential.parse(text) == credential


@pytest.mark.parametrize(
    "text",
    [
        "",
        "salt=AAAA,stored_key=AAAA,server_key=AAAA",
        "salt=AAAA,stored_key=AAAA,server_key=AAAA,iterations=x",
        "salt=!!,stored_key=AAAA,server_key=AAAA,iterations=4096",
        "salt=AAAA,salt=AAAA,stored_key=AAAA,server_key=AAAA,iterations=4096",
    ],
)
def test_credential_string_errors(text: str) -> None:
    with pytest.raises(ValueError, match="SCRAM credential"):
        ScramCredential.parse(text)


def test_credential_from_salted_password_is_what_a_password_makes() -> None:
    salted = salted_password(SCRAM_SHA_256, "pencil", RFC_SALT, 4096)
    assert credential_from_salted_password(
        SCRAM_SHA_256, RFC_SALT, salted, 4096
    ) == credential_from_password(SCRAM_SHA_256, "pencil", 4096, salt=RFC_SALT)


def test_mechanism_names_and_wire_types() -> None:
    assert ScramMechanism.from_name("SCRAM-SHA-512") is SCRAM_SHA_512
    assert ScramMechanism.from_wire_type(1) is SCRAM_SHA_256
    assert ScramMechanism.from_wire_type(0) is None
    assert ScramMechanism.from_name("PLAIN") is None


USERS = {"alice": "alice-secret", "admin": "admin-secret"}


def test_plain_accepts_a_jaas_user() -> None:
    server = PlainSaslServer(USERS)
    assert server.evaluate_response(b"\0alice\0alice-secret") == b""
    assert server.complete and server.authorization_id == "alice"
    same = PlainSaslServer(USERS)
    same.evaluate_response(b"alice\0alice\0alice-secret")
    assert same.authorization_id == "alice"


@pytest.mark.parametrize(
    ("token", "reason", "client_safe"),
    [
        (b"\0alice\0wrong", "Invalid username or password", True),
        (b"\0mallory\0alice-secret", "Invalid username or password", True),
        (b"admin\0alice\0alice-secret", "authorization id that is different", True),
        (b"\0\0alice-secret", "username not specified", True),
        (b"\0alice\0", "password not specified", True),
        (b"alice\0alice-secret", "expected 3 tokens, got 2", False),
        (b"\0a\0b\0c", "expected 3 tokens, got 4", False),
        (b"\0alice\0\xff", "not UTF-8", False),
    ],
)
def test_plain_refusals(token: bytes, reason: str, client_safe: bool) -> None:
    server = PlainSaslServer(USERS)
    with pytest.raises(SaslAuthenticationFailed) as failed:
        server.evaluate_response(token)
    assert reason in failed.value.reason
    assert failed.value.client_safe is client_safe
    assert "alice-secret" not in failed.value.reason
    assert not server.complete


def test_factory_refuses_a_mechanism_not_enabled() -> None:
    factory = SaslServerFactory(("SCRAM-SHA-512",), USERS, lambda u, m: None)
    with pytest.raises(UnsupportedSaslMechanism) as refused:
        factory.create("PLAIN")
    assert refused.value.enabled == ("SCRAM-SHA-512",)
    assert isinstance(factory.create("SCRAM-SHA-512"), ScramSaslServer)
    with pytest.raises(UnsupportedSaslMechanism):
        SaslServerFactory(("GSSAPI",), USERS, lambda u, m: None).create("GSSAPI")


def test_credential_cache_follows_the_user_config() -> None:
    from minikafka.broker.security.sasl.credential_cache import CredentialCache

    cache = CredentialCache()
    sha256 = credential_from_password(SCRAM_SHA_256, "a", 4096)
    sha512 = credential_from_password(SCRAM_SHA_512, "a", 8192)
    cache.update_user(
        "alice",
        {
            "SCRAM-SHA-256": sha256.to_string(),
            "SCRAM-SHA-512": sha512.to_string(),
            "producer_byte_rate": "1024",  # a quota: not a credential
        },
    )
    assert cache.get("alice", SCRAM_SHA_256) == sha256
    assert cache.mechanisms("alice") == [(SCRAM_SHA_256, 4096), (SCRAM_SHA_512, 8192)]
    # A mechanism gone from the config is a credential deleted; a bad value is none.
    cache.update_user("alice", {"SCRAM-SHA-512": "salt=!!"})
    assert cache.get("alice", SCRAM_SHA_256) is None
    assert cache.get("alice", SCRAM_SHA_512) is None
    assert cache.get("bob", SCRAM_SHA_256) is None
