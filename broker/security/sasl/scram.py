"""SASL/SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), and Kafka's stored credential.

The exchange, as Kafka's ScramSaslServer runs it (``H`` the mechanism's hash, ``HMAC`` keyed
with it, ``Hi`` PBKDF2-HMAC)::

    client-first   n,[a=<authzid>],n=<saslname>,r=<client nonce>[,<ext>=<value>...]
    server-first   r=<client nonce><server nonce>,s=<base64 salt>,i=<iterations>
    client-final   c=<base64 gs2 header>,r=<both nonces>[,<ext>...],p=<base64 ClientProof>
    server-final   v=<base64 ServerSignature>

    SaltedPassword  = Hi(password, salt, iterations)
    ClientKey       = HMAC(SaltedPassword, "Client Key")     StoredKey = H(ClientKey)
    ServerKey       = HMAC(SaltedPassword, "Server Key")
    AuthMessage     = client-first-bare "," server-first "," client-final-without-proof
    ClientProof     = ClientKey XOR HMAC(StoredKey, AuthMessage)
    ServerSignature = HMAC(ServerKey, AuthMessage)

The server keeps only ``salt, StoredKey, ServerKey, iterations`` per user and mechanism: it
checks a proof by recovering ClientKey and hashing it, and never sees the password. Only the gs2
flag ``n`` is accepted (no channel binding, as Kafka); an authorization id in the gs2 header must
be the user itself; a user name's ``=2C`` and ``=3D`` stand for ``,`` and ``=``. Extensions in
the client-first message are ignored (Kafka's one extension, delegation tokens, is not
supported). A credential below the mechanism's minimum of 4096 iterations is refused.

The stored credential, as Kafka writes it in ``/config/users/<user>`` (ScramCredentialUtils)::

    salt=<base64>,stored_key=<base64>,server_key=<base64>,iterations=<n>

    >>> c = credential_from_password(SCRAM_SHA_256, "pencil", 4096, salt=b"salt")
    >>> ScramCredential.parse(c.to_string()) == c
    True

Not thread-safe: one ScramSaslServer per connection, driven by that connection's task.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from minikafka.broker.security.sasl.errors import SaslAuthenticationFailed

__all__ = [
    "MAX_ITERATIONS",
    "SCRAM_SHA_256",
    "SCRAM_SHA_512",
    "CredentialLookup",
    "ScramCredential",
    "ScramMechanism",
    "ScramSaslClient",
    "ScramSaslServer",
    "credential_from_password",
    "credential_from_salted_password",
    "salted_password",
]


class ScramMechanism(Enum):
    """A SCRAM mechanism: its SASL name, hash, and the wire type AlterUserScramCredentials uses."""

    SCRAM_SHA_256 = ("SCRAM-SHA-256", "sha256", 1)
    SCRAM_SHA_512 = ("SCRAM-SHA-512", "sha512", 2)

    def __init__(self, mechanism_name: str, hash_name: str, wire_type: int) -> None:
        self.mechanism_name = mechanism_name
        self.hash_name = hash_name
        self.wire_type = wire_type

    @property
    def min_iterations(self) -> int:
        return 4096

    @classmethod
    def from_name(cls, name: str) -> ScramMechanism | None:
        return next((m for m in cls if m.mechanism_name == name), None)

    @classmethod
    def from_wire_type(cls, wire_type: int) -> ScramMechanism | None:
        return next((m for m in cls if m.wire_type == wire_type), None)


SCRAM_SHA_256 = ScramMechanism.SCRAM_SHA_256
SCRAM_SHA_512 = ScramMechanism.SCRAM_SHA_512

# The most iterations AlterUserScramCredentials accepts (Kafka's ScramMechanism.maxIterations).
MAX_ITERATIONS = 16384


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def to_string(self) -> str:
        b64 = base64.b64encode
        return (
            f"salt={b64(self.salt).decode()},stored_key={b64(self.stored_key).decode()},"
            f"server_key={b64(self.server_key).decode()},iterations={self.iterations}"
        )

    @classmethod
    def parse(cls, text: str) -> ScramCredential:
        """The inverse of ``to_string``; ValueError naming what is wrong (never the keys)."""
        fields: dict[str, str] = {}
        for part in text.split(","):
            key, sep, value = part.partition("=")
            if not sep or key in fields:
                raise ValueError(
                    "SCRAM credential is not salt=,stored_key=,server_key=,iterations="
                )
            fields[key] = value
        if set(fields) != {"salt", "stored_key", "server_key", "iterations"}:
            raise ValueError(
                f"SCRAM credential has fields {sorted(fields)}, expected "
                "['iterations', 'salt', 'server_key', 'stored_key']"
            )
        try:
            iterations = int(fields["iterations"])
            return cls(
                base64.b64decode(fields["salt"], validate=True),
                base64.b64decode(fields["stored_key"], validate=True),
                base64.b64decode(fields["server_key"], validate=True),
                iterations,
            )
        except (ValueError, binascii.Error):
            raise ValueError(
                "SCRAM credential has a field that is not base64 or a number"
            ) from None


# A user's credential for a mechanism, or None for an unknown user (the broker's cache).
CredentialLookup = Callable[[str, ScramMechanism], ScramCredential | None]


def _hmac(mechanism: ScramMechanism, key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, mechanism.hash_name).digest()


def _hash(mechanism: ScramMechanism, data: bytes) -> bytes:
    return hashlib.new(mechanism.hash_name, data).digest()


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b, strict=True))


def salted_password(
    mechanism: ScramMechanism, password: str, salt: bytes, iterations: int
) -> bytes:
    """Hi(password, salt, iterations): PBKDF2 with the mechanism's HMAC."""
    return hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode("utf-8"), salt, iterations)


def credential_from_salted_password(
    mechanism: ScramMechanism, salt: bytes, salted: bytes, iterations: int
) -> ScramCredential:
    """What AlterUserScramCredentials stores: its request carries the salt and SaltedPassword."""
    client_key = _hmac(mechanism, salted, b"Client Key")
    server_key = _hmac(mechanism, salted, b"Server Key")
    return ScramCredential(salt, _hash(mechanism, client_key), server_key, iterations)


def credential_from_password(
    mechanism: ScramMechanism,
    password: str,
    iterations: int = 4096,
    *,
    salt: bytes | None = None,
) -> ScramCredential:
    """A new credential for ``password``, with a fresh random salt unless one is given."""
    salt = salt if salt is not None else secrets.token_bytes(32)
    salted = salted_password(mechanism, password, salt, iterations)
    return credential_from_salted_password(mechanism, salt, salted, iterations)


# The grammar of Kafka's ScramMessages (RFC 5802 section 7, narrowed as Kafka narrows it).
_VALUE = r"[\x01-\x2B\x2D-\x7F]+"
_PRINTABLE = r"[\x21-\x2B\x2D-\x7E]+"
_SASLNAME = r"(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+"
_BASE64 = r"(?:[a-zA-Z0-9/+]{4})*(?:[a-zA-Z0-9/+]{3}=|[a-zA-Z0-9/+]{2}==)?"
_EXTENSIONS = rf"(?:,[a-zA-Z]+={_VALUE})*"
_CLIENT_FIRST = re.compile(
    rf"(?P<gs2>n,(?:a=(?P<authzid>{_SASLNAME}))?,)(?P<bare>(?:m={_VALUE},)?"
    rf"n=(?P<saslname>{_SASLNAME}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS})",
    re.DOTALL,
)
_CLIENT_FINAL = re.compile(
    rf"(?P<without_proof>c=(?P<channel>{_BASE64}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS})"
    rf",p=(?P<proof>{_BASE64})",
    re.DOTALL,
)
_SERVER_FIRST = re.compile(
    rf"(?:m={_VALUE},)?r=(?P<nonce>{_PRINTABLE}),s=(?P<salt>{_BASE64}),i=(?P<iterations>[0-9]+)"
    rf"{_EXTENSIONS}"
)
_SERVER_FINAL = re.compile(rf"(?:e=(?P<error>{_VALUE})|v=(?P<signature>{_BASE64})){_EXTENSIONS}")


def _username(saslname: str) -> str:
    return saslname.replace("=2C", ",").replace("=3D", "=")


def _saslname(username: str) -> str:
    return username.replace("=", "=3D").replace(",", "=2C")


def _nonce() -> str:
    return secrets.token_urlsafe(24)


class ScramSaslServer:
    """The server side of one SCRAM exchange: two client tokens in, two server tokens out.

    ``credentials(user, mechanism)`` looks a user's credential up (None for an unknown user).
    Every failure raises SaslAuthenticationFailed and leaves the exchange failed.
    """

    def __init__(
        self,
        mechanism: ScramMechanism,
        credentials: CredentialLookup,
        *,
        server_nonce: Callable[[], str] = _nonce,
    ) -> None:
        self._scram = mechanism
        self._server_nonce = server_nonce
        self.mechanism = mechanism.mechanism_name
        self._credentials = credentials
        self._state = "client-first"
        self._username = ""
        self._gs2 = ""
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""
        self._credential: ScramCredential | None = None

    @property
    def complete(self) -> bool:
        return self._state == "complete"

    @property
    def authorization_id(self) -> str:
        if not self.complete:
            raise RuntimeError("the SCRAM exchange has not completed")
        return self._username

    def evaluate_response(self, response: bytes) -> bytes:
        try:
            if self._state == "client-first":
                return self._client_first(response)
            if self._state == "client-final":
                return self._client_final(response)
            raise SaslAuthenticationFailed(f"Unexpected SCRAM message in state {self._state}")
        except SaslAuthenticationFailed:
            self._state = "failed"
            self._credential = None
            raise

    def _client_first(self, response: bytes) -> bytes:
        text = response.decode("utf-8", errors="replace")
        if text.startswith(("y,", "p=")):
            raise SaslAuthenticationFailed(
                "Invalid SCRAM client first message: channel binding is not supported"
            )
        match = _CLIENT_FIRST.fullmatch(text)
        if match is None:
            raise SaslAuthenticationFailed("Invalid SCRAM client first message format")
        username = _username(match["saslname"])
        credential = self._credentials(username, self._scram)
        if credential is None:
            raise SaslAuthenticationFailed(
                f"Authentication failed: Invalid user credentials (no {self.mechanism} "
                f"credential for user {username!r})"
            )
        authzid = match["authzid"]
        if authzid and _username(authzid) != username:
            raise SaslAuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is different "
                "from username",
                client_safe=True,
            )
        if credential.iterations < self._scram.min_iterations:
            raise SaslAuthenticationFailed(
                f"Iterations {credential.iterations} is less than the minimum "
                f"{self._scram.min_iterations} for {self.mechanism}"
            )
        self._username = username
        self._gs2 = match["gs2"]
        self._client_first_bare = match["bare"]
        self._credential = credential
        self._nonce = match["nonce"] + self._server_nonce()
        self._server_first = (
            f"r={self._nonce},s={base64.b64encode(credential.salt).decode()},"
            f"i={credential.iterations}"
        )
        self._state = "client-final"
        return self._server_first.encode()

    def _client_final(self, response: bytes) -> bytes:
        credential = self._credential
        assert credential is not None  # set with the state by _client_first
        match = _CLIENT_FINAL.fullmatch(response.decode("utf-8", errors="replace"))
        if match is None:
            raise SaslAuthenticationFailed("Invalid SCRAM client final message format")
        # Kafka 3.8.1-3.9's check (CVE-2024-56128's fix): the nonce ends with the one sent,
        # as librdkafka before 2.6.1 (Debian bookworm's kcat: 2.0.2) sends its own nonce again
        # in front of it; the proof covers the message as sent either way. Kafka 4 wants them
        # equal.
        if not match["nonce"].endswith(self._nonce):
            raise SaslAuthenticationFailed("Invalid client nonce in the final client message.")
        if base64.b64decode(match["channel"]) != self._gs2.encode():
            raise SaslAuthenticationFailed(
                "Invalid SCRAM client final message: channel binding data is not the gs2 header"
            )
        auth_message = (
            f"{self._client_first_bare},{self._server_first},{match['without_proof']}"
        ).encode()
        proof = base64.b64decode(match["proof"])
        client_signature = _hmac(self._scram, credential.stored_key, auth_message)
        if len(proof) != len(client_signature):
            raise SaslAuthenticationFailed("Invalid client credentials (proof of the wrong length)")
        computed_stored_key = _hash(self._scram, _xor(proof, client_signature))
        if not hmac.compare_digest(computed_stored_key, credential.stored_key):
            raise SaslAuthenticationFailed("Invalid client credentials")
        signature = _hmac(self._scram, credential.server_key, auth_message)
        self._credential = None
        self._state = "complete"
        return b"v=" + base64.b64encode(signature)


class ScramSaslClient:
    """The client side of a SCRAM exchange, for a broker logging in to another (inter-broker).

    ``first()`` is the client-first token; ``final(server_first)`` the client-final one;
    ``verify(server_final)`` checks the server knew the credential. ValueError on a bad answer.
    """

    def __init__(
        self, mechanism: ScramMechanism, username: str, password: str, *, nonce: str = ""
    ) -> None:
        self._scram = mechanism
        self._username = username
        self._password = password
        self._nonce = nonce or _nonce()
        self._bare = f"n={_saslname(username)},r={self._nonce}"
        self._auth_message = b""
        self._salted = b""

    def first(self) -> bytes:
        return f"n,,{self._bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        text = server_first.decode("utf-8", errors="replace")
        match = _SERVER_FIRST.fullmatch(text)
        if match is None:
            raise ValueError("Invalid SCRAM server first message format")
        nonce, iterations = match["nonce"], int(match["iterations"])
        if not nonce.startswith(self._nonce) or len(nonce) == len(self._nonce):
            raise ValueError("Invalid server nonce: does not extend the client nonce")
        if iterations < self._scram.min_iterations:
            raise ValueError(f"Requested iterations {iterations} is less than the minimum")
        self._salted = salted_password(
            self._scram, self._password, base64.b64decode(match["salt"]), iterations
        )
        without_proof = f"c=biws,r={nonce}"
        self._auth_message = f"{self._bare},{text},{without_proof}".encode()
        client_key = _hmac(self._scram, self._salted, b"Client Key")
        stored_key = _hash(self._scram, client_key)
        proof = _xor(client_key, _hmac(self._scram, stored_key, self._auth_message))
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        match = _SERVER_FINAL.fullmatch(server_final.decode("utf-8", errors="replace"))
        if match is None:
            raise ValueError("Invalid SCRAM server final message format")
        if match["error"]:
            raise ValueError(f"SCRAM server error: {match['error']}")
        server_key = _hmac(self._scram, self._salted, b"Server Key")
        expected = _hmac(self._scram, server_key, self._auth_message)
        if not hmac.compare_digest(base64.b64decode(match["signature"]), expected):
            raise ValueError("Invalid SCRAM server signature")
