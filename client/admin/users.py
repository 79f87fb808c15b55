"""Users' SCRAM credentials: DescribeUserScramCredentials and AlterUserScramCredentials.

    admin.alter_user_scram_credentials([
        UserScramCredentialUpsertion("alice", "SCRAM-SHA-256", "alice-secret", iterations=8192),
        UserScramCredentialDeletion("bob", "SCRAM-SHA-512"),
    ])                                                  # {"alice": None, "bob": None}
    admin.describe_user_scram_credentials(["alice"])    # {"alice": UserScramCredentialsDescription}

As Kafka's admin client, the password never leaves the client: an upsertion is salted here (a
random salt, Hi() with the given iterations, proto/sasl_client.py) and the broker is sent the
salt and the salted password, from which it keeps only the stored and server keys. Describe goes
to any broker; alter goes to the controller, which is the one to write users in ZooKeeper mode.
Bad input (an unknown mechanism, iterations out of 4096..16384, an empty name or password) is
refused here with the error Kafka's broker would give, before anything is sent.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from minikafka.client.admin._routing import AdminBase, _error
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.errors import ErrorCode, KafkaError, error_for_code
from minikafka.proto.sasl_client import (
    SCRAM_MAX_ITERATIONS,
    SCRAM_MECHANISMS,
    SCRAM_MIN_ITERATIONS,
    salted_password,
)

__all__ = [
    "DEFAULT_ITERATIONS",
    "ScramCredentialInfo",
    "UserAdmin",
    "UserScramCredentialDeletion",
    "UserScramCredentialUpsertion",
    "UserScramCredentialsDescription",
    "scram_mechanism_code",
]

# Kafka's default for a credential whose iterations are not given (ScramMechanism's minimum).
DEFAULT_ITERATIONS = SCRAM_MIN_ITERATIONS
_MECHANISM_CODES = {
    "SCRAM-SHA-256": pb.SCRAM_MECHANISM_SCRAM_SHA_256,
    "SCRAM-SHA-512": pb.SCRAM_MECHANISM_SCRAM_SHA_512,
}
_MECHANISM_NAMES = {code: name for name, code in _MECHANISM_CODES.items()}
_SALT_BYTES = 32


def scram_mechanism_code(mechanism: str) -> pb.ScramMechanism:
    """``SCRAM-SHA-256`` -> the wire's 1; UnsupportedSaslMechanismError for another name (the
    broker's answer to one)."""
    code = _MECHANISM_CODES.get(mechanism)
    if code is None:
        raise error_for_code(
            ErrorCode.UNSUPPORTED_SASL_MECHANISM,
            f"Unknown SCRAM mechanism {mechanism!r} (expected {', '.join(SCRAM_MECHANISMS)})",
        )
    return code


@dataclass(frozen=True)
class ScramCredentialInfo:
    mechanism: str  # SCRAM-SHA-256, SCRAM-SHA-512
    iterations: int


@dataclass(frozen=True)
class UserScramCredentialsDescription:
    name: str
    credential_infos: tuple[ScramCredentialInfo, ...]


@dataclass(frozen=True)
class UserScramCredentialUpsertion:
    """Create or replace ``user``'s credential for ``mechanism``."""

    user: str
    mechanism: str
    password: str = field(repr=False)
    iterations: int = DEFAULT_ITERATIONS
    salt: bytes | None = field(default=None, repr=False)  # None: 32 random bytes


@dataclass(frozen=True)
class UserScramCredentialDeletion:
    user: str
    mechanism: str


Alteration = UserScramCredentialUpsertion | UserScramCredentialDeletion


class UserAdmin(AdminBase):
    """SCRAM users (Kafka's describe/alterUserScramCredentials)."""

    def describe_user_scram_credentials(
        self, users: Sequence[str] | None = None, *, timeout_ms: int | None = None
    ) -> dict[str, UserScramCredentialsDescription | KafkaError]:
        """Each user's mechanisms and iterations (never the secrets); no names = every user
        with credentials. A named user without any maps to ResourceNotFoundError."""
        request = pb.DescribeUserScramCredentialsRequest(users=list(users or ()))

        def send(address: str, timeout_s: float) -> pb.DescribeUserScramCredentialsResponse:
            stub = pb_grpc.AdminStub(self._pool.get(address))
            return stub.DescribeUserScramCredentials(request, timeout=timeout_s)

        response = self._to_any_broker("describeUserScramCredentials", send, timeout_ms)
        error = _error(response.error_code, response.error_message)
        if error is not None:
            raise error
        out: dict[str, UserScramCredentialsDescription | KafkaError] = {}
        for result in response.results:
            failed = _error(result.error_code, result.error_message)
            out[result.user] = failed or UserScramCredentialsDescription(
                result.user,
                tuple(
                    ScramCredentialInfo(
                        _MECHANISM_NAMES.get(info.mechanism, "UNKNOWN"), info.iterations
                    )
                    for info in result.credential_infos
                ),
            )
        return dict(sorted(out.items()))

    def alter_user_scram_credentials(
        self, alterations: Iterable[Alteration], *, timeout_ms: int | None = None
    ) -> dict[str, KafkaError | None]:
        """Apply upsertions and deletions; ``{user: None | error}`` per user named."""
        request = pb.AlterUserScramCredentialsRequest()
        for alteration in alterations:
            if isinstance(alteration, UserScramCredentialDeletion):
                request.deletions.append(
                    pb.AlterUserScramCredentialsRequest.ScramCredentialDeletion(
                        name=alteration.user, mechanism=scram_mechanism_code(alteration.mechanism)
                    )
                )
            else:
                request.upsertions.append(_salted(alteration))
        pending = {d.name: None for d in request.deletions} | {
            u.name: None for u in request.upsertions
        }

        def send(stub: pb_grpc.AdminStub, timeout_s: float) -> pb.AlterUserScramCredentialsResponse:
            return stub.AlterUserScramCredentials(request, timeout=timeout_s)

        def items(
            response: pb.AlterUserScramCredentialsResponse,
        ) -> Iterable[tuple[str, int, str]]:
            return ((r.user, r.error_code, r.error_message) for r in response.results)

        return self._per_item(
            "alterUserScramCredentials", pending, send, items, self._timeout(timeout_ms)
        )


def _salted(
    upsertion: UserScramCredentialUpsertion,
) -> pb.AlterUserScramCredentialsRequest.ScramCredentialUpsertion:
    mechanism = scram_mechanism_code(upsertion.mechanism)
    if not upsertion.user:
        raise error_for_code(ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
    if not upsertion.password:
        raise error_for_code(ErrorCode.UNACCEPTABLE_CREDENTIAL, "Password must not be empty")
    if upsertion.iterations < SCRAM_MIN_ITERATIONS:
        raise error_for_code(
            ErrorCode.UNACCEPTABLE_CREDENTIAL,
            f"Too few iterations: {upsertion.iterations} (at least {SCRAM_MIN_ITERATIONS})",
        )
    if upsertion.iterations > SCRAM_MAX_ITERATIONS:
        raise error_for_code(
            ErrorCode.UNACCEPTABLE_CREDENTIAL,
            f"Too many iterations: {upsertion.iterations} (at most {SCRAM_MAX_ITERATIONS})",
        )
    salt = upsertion.salt if upsertion.salt is not None else secrets.token_bytes(_SALT_BYTES)
    return pb.AlterUserScramCredentialsRequest.ScramCredentialUpsertion(
        name=upsertion.user,
        mechanism=mechanism,
        iterations=upsertion.iterations,
        salt=salt,
        salted_password=salted_password(
            upsertion.mechanism, upsertion.password, salt, upsertion.iterations
        ),
    )
