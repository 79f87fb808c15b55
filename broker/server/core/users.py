"""SCRAM credentials administration: DescribeUserScramCredentials and AlterUserScramCredentials
on plain values, with Kafka's checks and errors (ZooKeeper mode, ZkAdminManager).

Both front doors call it: the Kafka listener's handlers (kafka/handlers/users.py) and the gRPC
Admin door. Credentials live in ``/config/users/<user>`` (zk/zk_data.py), one key per
mechanism beside the user's quotas; an alter rewrites the user's SCRAM keys only and then
notifies ``users/<user>``, so every broker's credential cache reloads that user.

Alter, in Kafka's order (each user answered once, by the first rule it breaks):

- an empty name: UNACCEPTABLE_CREDENTIAL "Username must not be empty";
- a mechanism that is no SCRAM one: UNSUPPORTED_SASL_MECHANISM "Unknown SCRAM mechanism";
- iterations below 4096 or above 16384: UNACCEPTABLE_CREDENTIAL "Too few iterations" /
  "Too many iterations";
- the same user and mechanism twice (upserted or deleted): DUPLICATE_RESOURCE "A user
  credential cannot be altered twice in the same request" (as ZooKeeper-mode Kafka, a user's
  two mechanisms may change in one request);
- deleting a credential the user does not have: RESOURCE_NOT_FOUND "Attempt to delete a user
  credential that does not exist";
- else the user's deletions and upsertions are written together: NONE.

Describe: no user named means every user with a credential (sorted); a named user without one
is RESOURCE_NOT_FOUND, an empty name RESOURCE_NOT_FOUND "Username must not be empty", a name
given twice DUPLICATE_RESOURCE. Each result lists ``(mechanism type, iterations)``.

Authorization (Describe / Alter on the Cluster) is the ``authorizer``'s, answered as Kafka's
KafkaApis does: an alter not allowed answers every user of the request
CLUSTER_AUTHORIZATION_FAILED; a describe not allowed raises ClusterAuthorizationFailedError, the
response's top-level error. A user whose znode does not decode is answered
UNKNOWN_SERVER_ERROR, never with the znode's content (credentials). Lives on the broker's event
loop; ZooKeeper is reached in a worker thread.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from minikafka.broker.security.acl import (
    CLUSTER_NAME,
    AclOperation,
    Action,
    Authorizer,
    ResourceType,
)
from minikafka.broker.security.principal import Session
from minikafka.broker.security.sasl.scram import (
    MAX_ITERATIONS,
    ScramCredential,
    ScramMechanism,
    credential_from_salted_password,
)
from minikafka.proto.errors import ErrorCode, error_for_code
from minikafka.zk.errors import ZkDataError

__all__ = [
    "CredentialInfo",
    "DescribeUserResult",
    "ScramDeletion",
    "ScramUpsertion",
    "UserConfigStore",
    "UserResult",
    "UserScramAdmin",
]

_EMPTY_NAME = "Username must not be empty"
_UNREADABLE = "Error processing describe user SCRAM credential configs request"
_UNREADABLE_USER = "Error encountered while altering user SCRAM credentials"
_UNKNOWN_MECHANISM = "Unknown SCRAM mechanism"


class UserConfigStore(Protocol):
    """/config/users as ZkStore reads and writes it (blocking calls)."""

    def list_users(self) -> list[str]: ...

    def get_user_config(self, user: str) -> dict[str, str]: ...

    def update_user_configs(
        self, changes: Mapping[str, Callable[[dict[str, str]], dict[str, str]]]
    ) -> None: ...


@dataclass(frozen=True)
class ScramUpsertion:
    name: str
    mechanism: int  # ScramMechanism.wire_type: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512
    iterations: int
    salt: bytes
    salted_password: bytes

    def __repr__(self) -> str:  # the salted password is a secret: never in a log
        return f"ScramUpsertion({self.name!r}, mechanism={self.mechanism}, ...)"


@dataclass(frozen=True)
class ScramDeletion:
    name: str
    mechanism: int


@dataclass(frozen=True)
class UserResult:
    user: str
    error_code: ErrorCode = ErrorCode.NONE
    error_message: str | None = None


@dataclass(frozen=True)
class CredentialInfo:
    mechanism: int
    iterations: int


@dataclass(frozen=True)
class DescribeUserResult:
    user: str
    error_code: ErrorCode = ErrorCode.NONE
    error_message: str | None = None
    credential_infos: tuple[CredentialInfo, ...] = ()


def _credential_infos(config: Mapping[str, str]) -> tuple[CredentialInfo, ...]:
    """ValueError when a stored credential does not parse."""
    return tuple(
        CredentialInfo(m.wire_type, ScramCredential.parse(config[m.mechanism_name]).iterations)
        for m in ScramMechanism
        if m.mechanism_name in config
    )


class UserScramAdmin:
    def __init__(self, store: UserConfigStore, authorizer: Authorizer | None = None) -> None:
        self._store = store
        self._authorizer = authorizer

    def _allowed(self, session: Session | None, operation: AclOperation) -> bool:
        if self._authorizer is None or session is None:
            return True
        action = Action(operation, ResourceType.CLUSTER, CLUSTER_NAME)
        return self._authorizer.authorize(session, [action])[0]

    async def describe(
        self, users: Sequence[str] | None, session: Session | None = None
    ) -> list[DescribeUserResult]:
        """KafkaError for the whole request (its top-level error)."""
        if not self._allowed(session, AclOperation.DESCRIBE):
            raise error_for_code(
                ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."
            )
        return await asyncio.to_thread(self._describe, users)

    def _describe(self, users: Sequence[str] | None) -> list[DescribeUserResult]:
        results: dict[str, DescribeUserResult] = {}

        def add(user: str, config: Mapping[str, str], *, named: bool) -> None:
            try:
                infos = _credential_infos(config)
            except ValueError:
                results[user] = DescribeUserResult(
                    user, ErrorCode.UNKNOWN_SERVER_ERROR, _UNREADABLE
                )
                return
            if infos:
                results[user] = DescribeUserResult(user, credential_infos=infos)
            elif named:
                results[user] = DescribeUserResult(
                    user,
                    ErrorCode.RESOURCE_NOT_FOUND,
                    f"Attempt to describe a user credential that does not exist: {user}",
                )

        def read(user: str) -> Mapping[str, str] | None:
            try:
                return self._store.get_user_config(user)
            except ZkDataError:  # its message quotes the znode (credentials): not sent
                results[user] = DescribeUserResult(
                    user, ErrorCode.UNKNOWN_SERVER_ERROR, _UNREADABLE
                )
                return None

        if not users:
            for user in self._store.list_users():
                config = read(user)
                if config is not None:
                    add(user, config, named=False)
            return [results[u] for u in sorted(results)]
        counts = Counter(users)
        for user in dict.fromkeys(users):
            if not user:
                results[user] = DescribeUserResult(user, ErrorCode.RESOURCE_NOT_FOUND, _EMPTY_NAME)
            elif counts[user] > 1:
                results[user] = DescribeUserResult(
                    user,
                    ErrorCode.DUPLICATE_RESOURCE,
                    "Cannot describe SCRAM credentials for the same user twice in a single "
                    f"request: {user}",
                )
            else:
                config = read(user)
                if config is not None:
                    add(user, config, named=True)
        return [results[u] for u in dict.fromkeys(users)]

    async def alter(
        self,
        upsertions: Sequence[ScramUpsertion],
        deletions: Sequence[ScramDeletion],
        session: Session | None = None,
    ) -> list[UserResult]:
        if not self._allowed(session, AclOperation.ALTER):
            names = dict.fromkeys([d.name for d in deletions] + [u.name for u in upsertions])
            return [UserResult(u, ErrorCode.CLUSTER_AUTHORIZATION_FAILED) for u in names]
        return await asyncio.to_thread(self._alter, upsertions, deletions)

    def _alter(
        self, upsertions: Sequence[ScramUpsertion], deletions: Sequence[ScramDeletion]
    ) -> list[UserResult]:
        results: list[UserResult] = []
        illegal: dict[str, tuple[ErrorCode, str]] = {}
        for d in deletions:
            if not d.name:
                illegal[d.name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, _EMPTY_NAME)
            elif ScramMechanism.from_wire_type(d.mechanism) is None:
                illegal[d.name] = (ErrorCode.UNSUPPORTED_SASL_MECHANISM, _UNKNOWN_MECHANISM)
        for u in upsertions:
            mechanism = ScramMechanism.from_wire_type(u.mechanism)
            if not u.name:
                illegal[u.name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, _EMPTY_NAME)
            elif mechanism is None:
                illegal[u.name] = (ErrorCode.UNSUPPORTED_SASL_MECHANISM, _UNKNOWN_MECHANISM)
            elif u.iterations > MAX_ITERATIONS:
                illegal[u.name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
            elif u.iterations < mechanism.min_iterations:
                illegal[u.name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
        results += [UserResult(user, code, message) for user, (code, message) in illegal.items()]

        pairs = [(u.name, u.mechanism) for u in upsertions if u.name not in illegal]
        pairs += [(d.name, d.mechanism) for d in deletions if d.name not in illegal]
        duplicated = {user for (user, _), n in Counter(pairs).items() if n > 1}
        results += [
            UserResult(
                user,
                ErrorCode.DUPLICATE_RESOURCE,
                "A user credential cannot be altered twice in the same request",
            )
            for user in sorted(duplicated)
        ]
        candidates = list(dict.fromkeys(user for user, _ in pairs if user not in duplicated))
        current: dict[str, Mapping[str, str]] = {}
        for user in candidates:
            try:
                current[user] = self._store.get_user_config(user)
            except ZkDataError:  # its message quotes the znode (credentials): not sent
                results.append(UserResult(user, ErrorCode.UNKNOWN_SERVER_ERROR, _UNREADABLE_USER))
        missing = {
            d.name
            for d in deletions
            if d.name in current and _mechanism(d.mechanism).mechanism_name not in current[d.name]
        }
        results += [
            UserResult(
                user,
                ErrorCode.RESOURCE_NOT_FOUND,
                "Attempt to delete a user credential that does not exist",
            )
            for user in sorted(missing)
        ]
        for user in current:
            if user in missing:
                continue
            change = _change(
                [d for d in deletions if d.name == user],
                [u for u in upsertions if u.name == user],
            )
            try:
                self._store.update_user_configs({user: change})
            except ZkDataError:
                results.append(UserResult(user, ErrorCode.UNKNOWN_SERVER_ERROR, _UNREADABLE_USER))
                continue
            results.append(UserResult(user))
        return results


def _mechanism(wire_type: int) -> ScramMechanism:
    mechanism = ScramMechanism.from_wire_type(wire_type)
    assert mechanism is not None  # checked before
    return mechanism


def _change(
    deletions: Sequence[ScramDeletion], upsertions: Sequence[ScramUpsertion]
) -> Callable[[dict[str, str]], dict[str, str]]:
    """The user's config with these credentials deleted and set; other keys (quotas) kept."""
    credentials = {
        _mechanism(u.mechanism).mechanism_name: credential_from_salted_password(
            _mechanism(u.mechanism), u.salt, u.salted_password, u.iterations
        ).to_string()
        for u in upsertions
    }

    def apply(config: dict[str, str]) -> dict[str, str]:
        for d in deletions:
            config.pop(_mechanism(d.mechanism).mechanism_name, None)
        config.update(credentials)
        return config

    return apply
