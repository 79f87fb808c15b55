"""The client side of Kafka's SASL mechanisms: PLAIN (RFC 4616) and SCRAM-SHA-256/512 (RFC 5802,
RFC 7677), as a Kafka client sends them in SaslAuthenticate's ``auth_bytes``.

Both the minikafka client and a broker logging in to another broker (its inter-broker login)
use it, so it lives in ``proto``, which both sides may import. A mechanism is a small state
machine: ``initial()`` is the first message, ``respond(challenge)`` the next one (or ``None``
when the exchange is over on the client's side), ``complete`` tells whether the server proved
itself (SCRAM's server signature).

    >>> plain = client_mechanism("PLAIN", "alice", "alice-secret")
    >>> plain.initial()
    b'\\x00alice\\x00alice-secret'

SCRAM, as Kafka sends it (no channel binding, so the GS2 header is ``n,,`` and ``c=biws``)::

    client-first   n,,n=<user>,r=<client nonce>
    server-first   r=<client nonce><server nonce>,s=<base64 salt>,i=<iterations>
    client-final   c=biws,r=<nonce>,p=<base64 ClientProof>
    server-final   v=<base64 ServerSignature>        (or e=<error> when it refuses)

The user name is escaped as RFC 5802's saslname (``=`` -> ``=3D``, ``,`` -> ``=2C``).
``salted_password`` is the one derivation of Hi() (PBKDF2-HMAC), shared with
the admin client, which salts new credentials before they travel (Kafka's
AlterUserScramCredentials carries salt and salted password, never the password).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "SCRAM_MAX_ITERATIONS",
    "SCRAM_MECHANISMS",
    "SCRAM_MIN_ITERATIONS",
    "SESSION_TOKEN_KEY",
    "SUPPORTED_MECHANISMS",
    "PlainClient",
    "SaslClientError",
    "SaslClientMechanism",
    "ScramClient",
    "client_mechanism",
    "salted_password",
    "scram_hash_name",
]

# The call metadata key of the token a login over the Security RPCs returns (gRPC metadata
# keys are lower case).
SESSION_TOKEN_KEY = "minikafka-session-token"
# mechanism -> hashlib name
SCRAM_MECHANISMS: dict[str, str] = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
SUPPORTED_MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS)
# Kafka's bounds on a SCRAM credential's iterations (ScramMechanism.minIterations, and the
# largest AlterUserScramCredentials takes).
SCRAM_MIN_ITERATIONS = 4096
SCRAM_MAX_ITERATIONS = 16384


class SaslClientError(Exception):
    """The server's messages do not follow the mechanism (a bad nonce, a wrong server
    signature, an ``e=`` error): the login fails, whatever the server said after."""


class SaslClientMechanism(Protocol):
    mechanism: str

    def initial(self) -> bytes: ...

    def respond(self, challenge: bytes) -> bytes | None: ...

    @property
    def complete(self) -> bool: ...


def scram_hash_name(mechanism: str) -> str:
    """``SCRAM-SHA-256`` -> ``sha256``; ValueError for another mechanism."""
    try:
        return SCRAM_MECHANISMS[mechanism]
    except KeyError:
        raise ValueError(
            f"unknown SCRAM mechanism {mechanism!r} (expected {', '.join(SCRAM_MECHANISMS)})"
        ) from None


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """RFC 5802's Hi(Normalize(password), salt, i): PBKDF2-HMAC with the mechanism's hash."""
    return hashlib.pbkdf2_hmac(
        scram_hash_name(mechanism), password.encode("utf-8"), salt, iterations
    )


def client_mechanism(mechanism: str, username: str, password: str) -> SaslClientMechanism:
    """A fresh client state machine for ``mechanism``; ValueError for one not supported."""
    if mechanism == "PLAIN":
        return PlainClient(username, password)
    if mechanism in SCRAM_MECHANISMS:
        return ScramClient(mechanism, username, password)
    raise ValueError(
        f"unsupported sasl.mechanism {mechanism!r} (expected {', '.join(SUPPORTED_MECHANISMS)})"
    )


@dataclass
class PlainClient:
    """PLAIN: one message, ``authzid NUL authcid NUL passwd`` with an empty authzid."""

    username: str
    password: str
    mechanism: str = "PLAIN"
    _sent: bool = False

    def initial(self) -> bytes:
        self._sent = True
        return b"\x00" + self.username.encode("utf-8") + b"\x00" + self.password.encode("utf-8")

    def respond(self, challenge: bytes) -> bytes | None:
        return None  # the server's (empty) answer ends it

    @property
    def complete(self) -> bool:
        return self._sent


class ScramClient:
    """SCRAM-SHA-256 / SCRAM-SHA-512 without channel binding, as Kafka's clients speak it."""

    def __init__(
        self, mechanism: str, username: str, password: str, *, nonce: str | None = None
    ) -> None:
        self.mechanism = mechanism
        self._hash = scram_hash_name(mechanism)
        self._username = username
        self._password = password
        self._nonce = nonce or secrets.token_urlsafe(24)
        self._client_first_bare = f"n={_saslname(username)},r={self._nonce}"
        self._server_signature: bytes | None = None
        self._complete = False

    def initial(self) -> bytes:
        return ("n,," + self._client_first_bare).encode("utf-8")

    def respond(self, challenge: bytes) -> bytes | None:
        if self._server_signature is None:
            return self._client_final(challenge)
        self._check_server_final(challenge)
        return None

    @property
    def complete(self) -> bool:
        return self._complete

    def _client_final(self, server_first: bytes) -> bytes:
        text = _decode(server_first)
        fields = _fields(text)
        if "e" in fields:
            raise SaslClientError(f"the server refused the login: {fields['e']}")
        nonce, salt_b64, iterations_text = fields.get("r"), fields.get("s"), fields.get("i")
        if nonce is None or salt_b64 is None or iterations_text is None:
            raise SaslClientError("the server's first SCRAM message lacks r=, s= or i=")
        if not nonce.startswith(self._nonce) or len(nonce) == len(self._nonce):
            raise SaslClientError("the server's SCRAM nonce does not extend the client's")
        try:
            salt = base64.b64decode(salt_b64, validate=True)
            iterations = int(iterations_text)
        except ValueError:
            raise SaslClientError("the server's SCRAM salt or iterations do not parse") from None
        if iterations < 1:
            raise SaslClientError(f"the server's SCRAM iterations {iterations} are not positive")
        salted = salted_password(self.mechanism, self._password, salt, iterations)
        client_key = _hmac(self._hash, salted, b"Client Key")
        stored_key = hashlib.new(self._hash, client_key).digest()
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self._client_first_bare},{text},{without_proof}".encode()
        client_signature = _hmac(self._hash, stored_key, auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, client_signature, strict=True))
        server_key = _hmac(self._hash, salted, b"Server Key")
        self._server_signature = _hmac(self._hash, server_key, auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def _check_server_final(self, server_final: bytes) -> None:
        fields = _fields(_decode(server_final))
        if "e" in fields:
            raise SaslClientError(f"the server refused the login: {fields['e']}")
        verifier = fields.get("v")
        assert self._server_signature is not None
        if verifier is None or not hmac.compare_digest(
            verifier.encode(), base64.b64encode(self._server_signature)
        ):
            raise SaslClientError("the server's SCRAM signature is wrong: it does not know the key")
        self._complete = True


def _saslname(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def _decode(message: bytes) -> str:
    try:
        return message.decode("utf-8")
    except UnicodeDecodeError:
        raise SaslClientError("the server's SCRAM message is not UTF-8") from None


def _fields(text: str) -> dict[str, str]:
    """``r=abc,s=xyz,i=4096`` -> {"r": "abc", ...} (values may hold ``=``: base64)."""
    out: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if sep and len(key) == 1:
            out.setdefault(key, value)
    return out


def _hmac(hash_name: str, key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, hash_name).digest()
