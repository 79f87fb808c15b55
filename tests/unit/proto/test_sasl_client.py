"""The client side of PLAIN and SCRAM, against RFC 7677's worked example and a server made
of the RFC's formulas."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from minikafka.proto.sasl_client import (
    SaslClientError,
    ScramClient,
    client_mechanism,
    salted_password,
)

# RFC 7677 section 3: user "user", password "pencil".
_CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
_SERVER_FIRST = (
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
)
_CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def test_scram_sha_256_follows_rfc_7677_to_the_byte() -> None:
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=_CLIENT_NONCE)
    assert client.initial() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    assert client.respond(_SERVER_FIRST) == _CLIENT_FINAL
    assert not client.complete
    assert client.respond(_SERVER_FINAL) is None
    assert client.complete


def test_a_wrong_server_signature_fails_the_login() -> None:
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=_CLIENT_NONCE)
    client.respond(_SERVER_FIRST)
    with pytest.raises(SaslClientError, match="signature"):
        client.respond(b"v=" + base64.b64encode(b"x" * 32))
    assert not client.complete


def test_a_server_nonce_that_does_not_extend_the_clients_fails_the_login() -> None:
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=_CLIENT_NONCE)
    with pytest.raises(SaslClientError, match="nonce"):
        client.respond(b"r=someoneelse,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")


def test_a_server_error_is_reported() -> None:
    client = ScramClient("SCRAM-SHA-512", "user", "pencil")
    with pytest.raises(SaslClientError, match="unknown-user"):
        client.respond(b"e=unknown-user")


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_against_a_server_of_the_rfcs_formulas(mechanism: str) -> None:
    """The server keeps salt, StoredKey and ServerKey only, and checks the proof with them."""
    hash_name = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}[mechanism]
    salt, iterations = b"0123456789abcdef", 4096
    salted = salted_password(mechanism, "alice-secret", salt, iterations)
    stored_key = hashlib.new(hash_name, hmac.digest(salted, b"Client Key", hash_name)).digest()
    server_key = hmac.digest(salted, b"Server Key", hash_name)

    client = client_mechanism(mechanism, "ali=ce,x", "alice-secret")
    first = client.initial().decode()
    assert first.startswith("n,,n=ali=3Dce=2Cx,r=")
    bare = first[3:]
    nonce = bare.split("r=", 1)[1] + "SERVERNONCE"
    server_first = f"r={nonce},s={base64.b64encode(salt).decode()},i={iterations}"
    final = client.respond(server_first.encode())
    assert final is not None
    without_proof, _, proof_b64 = final.decode().rpartition(",p=")
    auth_message = f"{bare},{server_first},{without_proof}".encode()
    signature = hmac.digest(stored_key, auth_message, hash_name)
    client_key = bytes(a ^ b for a, b in zip(base64.b64decode(proof_b64), signature, strict=True))
    assert hashlib.new(hash_name, client_key).digest() == stored_key
    server_signature = hmac.digest(server_key, auth_message, hash_name)
    assert client.respond(b"v=" + base64.b64encode(server_signature)) is None
    assert client.complete


def test_plain_sends_authzid_user_and_password() -> None:
    client = client_mechanism("PLAIN", "alice", "alice-secret")
    assert client.initial() == b"\x00alice\x00alice-secret"
    assert client.respond(b"") is None
    assert client.complete


def test_an_unknown_mechanism_is_refused() -> None:
    with pytest.raises(ValueError, match="GSSAPI"):
        client_mechanism("GSSAPI", "alice", "x")
