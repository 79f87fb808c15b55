"""The admin client salts SCRAM credentials itself: the password never travels, and what it
sends lets the broker's SCRAM server check the client's proof."""

from __future__ import annotations

import pytest

from minikafka.broker.security.sasl.scram import (
    ScramMechanism,
    ScramSaslServer,
    credential_from_salted_password,
)
from minikafka.client.admin.users import UserScramCredentialUpsertion, _salted
from minikafka.proto.errors import ErrorCode, KafkaError
from minikafka.proto.sasl_client import ScramClient


@pytest.mark.parametrize("mechanism", list(ScramMechanism))
def test_an_upsertion_is_salted_so_the_broker_accepts_the_password(
    mechanism: ScramMechanism,
) -> None:
    name = mechanism.mechanism_name
    sent = _salted(UserScramCredentialUpsertion("alice", name, "alice-secret", iterations=8192))
    assert sent.mechanism == mechanism.wire_type and sent.iterations == 8192
    assert len(sent.salt) == 32
    assert b"alice-secret" not in sent.SerializeToString()
    stored = credential_from_salted_password(
        mechanism, sent.salt, sent.salted_password, sent.iterations
    )
    server = ScramSaslServer(mechanism, lambda user, m: stored if user == "alice" else None)
    client = ScramClient(name, "alice", "alice-secret")
    final = client.respond(server.evaluate_response(client.initial()))
    assert final is not None
    assert client.respond(server.evaluate_response(final)) is None
    assert server.complete and client.complete and server.authorization_id == "alice"


@pytest.mark.parametrize(
    ("upsertion", "problem"),
    [
        (UserScramCredentialUpsertion("alice", "SCRAM-SHA-256", "p", iterations=4095), "Too few"),
        (UserScramCredentialUpsertion("alice", "SCRAM-SHA-256", "p", iterations=16385), "Too many"),
        (UserScramCredentialUpsertion("alice", "SCRAM-SHA-256", ""), "Password"),
        (UserScramCredentialUpsertion("", "SCRAM-SHA-256", "p"), "Username"),
        (UserScramCredentialUpsertion("alice", "PLAIN", "p"), "Unknown SCRAM mechanism"),
    ],
)
def test_bad_upsertions_are_refused_before_anything_is_sent(
    upsertion: UserScramCredentialUpsertion, problem: str
) -> None:
    with pytest.raises(KafkaError, match=problem) as refused:
        _salted(upsertion)
    assert refused.value.code == (
        ErrorCode.UNSUPPORTED_SASL_MECHANISM
        if upsertion.mechanism == "PLAIN"
        else ErrorCode.UNACCEPTABLE_CREDENTIAL
    )
