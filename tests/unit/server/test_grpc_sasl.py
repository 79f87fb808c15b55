"""SASL on the gRPC door, over a real grpc.aio server on 127.0.0.1 and the client's blocking
channel: the Security RPCs run the broker's mechanisms, the token they hand out makes later
calls that user's Session, and calls without one are refused and logged without secrets."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
import structlog

from minikafka.broker.security.sasl.credential_cache import CredentialCache
from minikafka.broker.security.sasl.scram import ScramMechanism, credential_from_password
from minikafka.broker.security.sasl.server import SaslServerFactory
from minikafka.broker.security.session_tokens import SessionTokens
from minikafka.broker.server.grpc_session import SaslServerInterceptor, grpc_session
from minikafka.broker.server.security_service import SaslLogin, SecurityService
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto import transport
from minikafka.proto.errors import ErrorCode, KafkaError
from minikafka.proto.sasl_channel import SaslCredentials, aio_sasl_channel, sasl_channel

LISTENER = "SASL"


class WhoAmI(pb_grpc.MetadataServicer):
    """DescribeCluster answers the caller's principal as its cluster id."""

    async def Metadata(
        self, request: pb.MetadataRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.MetadataResponse:
        return pb.MetadataResponse()

    async def DescribeCluster(
        self, request: pb.DescribeClusterRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.DescribeClusterResponse:
        session = grpc_session(context, LISTENER)
        return pb.DescribeClusterResponse(cluster_id=f"{session.principal} {session.listener}")


class Server:
    def __init__(self, sasl: bool, tokens: SessionTokens) -> None:
        self.tokens = tokens
        self._sasl = sasl
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self.port = 0
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        assert self._ready.wait(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._start())
        self._loop.run_forever()

    async def _start(self) -> None:
        credentials = CredentialCache()
        credentials.update_user(
            "alice",
            {
                m.mechanism_name: credential_from_password(m, "alice-secret", 4096).to_string()
                for m in ScramMechanism
            },
        )
        factory = SaslServerFactory(
            ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"), {"bob": "bob-secret"}, credentials.get
        )
        interceptors = [SaslServerInterceptor(self.tokens, LISTENER)] if self._sasl else []
        self.server = transport.aio_server(1 << 20, (), interceptors)
        login = SaslLogin(factory, self.tokens) if self._sasl else None
        protocol = "SASL_PLAINTEXT" if self._sasl else "PLAINTEXT"
        pb_grpc.add_SecurityServicer_to_server(
            SecurityService(LISTENER, protocol, login), self.server
        )
        pb_grpc.add_MetadataServicer_to_server(WhoAmI(), self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        await self.server.start()
        self._ready.set()

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(None), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def on_loop(self, function: Any) -> Any:
        async def run() -> Any:
            return function()

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(10)


@pytest.fixture
def server() -> Iterator[Server]:
    running = Server(True, SessionTokens(idle_ms=60_000))
    yield running
    running.stop()


def _who(channel: grpc.Channel) -> str:
    answer = pb_grpc.MetadataStub(channel).DescribeCluster(pb.DescribeClusterRequest(), timeout=10)
    return str(answer.cluster_id)


def _channel(server: Server, mechanism: str, user: str, password: str) -> grpc.Channel:
    address = f"127.0.0.1:{server.port}"
    raw = transport.channel(address, 1 << 20)
    return sasl_channel(raw, SaslCredentials(mechanism, user, password), address)


@pytest.mark.parametrize(
    ("mechanism", "user", "password"),
    [
        ("PLAIN", "bob", "bob-secret"),
        ("SCRAM-SHA-256", "alice", "alice-secret"),
        ("SCRAM-SHA-512", "alice", "alice-secret"),
    ],
)
def test_a_login_makes_every_later_call_the_users_session(
    server: Server, mechanism: str, user: str, password: str
) -> None:
    channel = _channel(server, mechanism, user, password)
    assert _who(channel) == f"User:{user} SASL"
    assert _who(channel) == f"User:{user} SASL"
    assert server.on_loop(lambda: len(server.tokens)) == 1  # one login for both calls


@pytest.mark.parametrize(
    ("mechanism", "user", "password"),
    [
        ("PLAIN", "bob", "wrong"),
        ("PLAIN", "nobody", "bob-secret"),
        ("SCRAM-SHA-256", "alice", "wrong"),
        ("SCRAM-SHA-512", "nobody", "alice-secret"),
    ],
)
def test_a_wrong_password_or_unknown_user_is_refused_and_logged_without_it(
    server: Server, mechanism: str, user: str, password: str
) -> None:
    with structlog.testing.capture_logs() as logs, pytest.raises(KafkaError) as failed:
        _who(_channel(server, mechanism, user, password))
    assert failed.value.code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert "Authentication failed" in str(failed.value)
    refused = [e for e in logs if e["event"] == "sasl.authentication_failed"]
    assert len(refused) == 1
    assert refused[0]["client_host"] == "127.0.0.1"
    assert refused[0]["mechanism"] == mechanism
    assert password not in repr(logs)
    assert server.on_loop(lambda: len(server.tokens)) == 0


def test_an_unsupported_mechanism_is_refused_with_the_enabled_ones(server: Server) -> None:
    raw = transport.channel(f"127.0.0.1:{server.port}", 1 << 20)
    answer = pb_grpc.SecurityStub(raw).SaslHandshake(
        pb.SaslHandshakeRequest(mechanism="GSSAPI"), timeout=10
    )
    assert answer.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert list(answer.mechanisms) == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]


@pytest.mark.parametrize("token", [None, "forged-token"])
def test_a_call_without_a_live_token_is_unauthenticated_and_logged(
    server: Server, token: str | None
) -> None:
    # A logged-in call of the same method first: what grpc's interceptors cached for it must
    # not let the next call through.
    assert _who(_channel(server, "PLAIN", "bob", "bob-secret")) == "User:bob SASL"
    raw = transport.channel(f"127.0.0.1:{server.port}", 1 << 20)
    metadata = () if token is None else (("minikafka-session-token", token),)
    with structlog.testing.capture_logs() as logs, pytest.raises(grpc.RpcError) as refused:
        pb_grpc.MetadataStub(raw).DescribeCluster(
            pb.DescribeClusterRequest(), timeout=10, metadata=metadata
        )
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    [line] = [e for e in logs if e["event"] == "grpc.sasl_call_refused"]
    assert line["client_host"] == "127.0.0.1"
    assert line["method"] == "/minikafka.v1.Metadata/DescribeCluster"
    assert "forged-token" not in repr(logs)


def test_a_dropped_token_is_replaced_by_a_new_login(server: Server) -> None:
    channel = _channel(server, "SCRAM-SHA-256", "alice", "alice-secret")
    assert _who(channel) == "User:alice SASL"
    # The broker forgets every login (a restart, or idleness): the next call logs in again.
    server.on_loop(lambda: server.tokens._entries.clear())
    assert _who(channel) == "User:alice SASL"
    assert server.on_loop(lambda: len(server.tokens)) == 1


def test_an_unknown_handshake_id_is_illegal_sasl_state(server: Server) -> None:
    raw = transport.channel(f"127.0.0.1:{server.port}", 1 << 20)
    answer = pb_grpc.SecurityStub(raw).SaslAuthenticate(
        pb.SaslAuthenticateRequest(handshake_id="nope", auth_bytes=b"\0a\0b"), timeout=10
    )
    assert answer.error_code == ErrorCode.ILLEGAL_SASL_STATE


def test_a_plaintext_listener_answers_illegal_sasl_state_and_serves_anonymous() -> None:
    plain = Server(False, SessionTokens(idle_ms=60_000))
    try:
        with pytest.raises(KafkaError, match="PLAINTEXT") as refused:
            _who(_channel(plain, "PLAIN", "bob", "bob-secret"))
        assert refused.value.code == ErrorCode.ILLEGAL_SASL_STATE
        raw = transport.channel(f"127.0.0.1:{plain.port}", 1 << 20)
        assert _who(raw) == "User:ANONYMOUS SASL"
    finally:
        plain.stop()


def test_the_brokers_asyncio_channel_logs_in_and_again_after_a_drop(server: Server) -> None:
    """The form a follower's and controlled shutdown's channels take."""
    address = f"127.0.0.1:{server.port}"

    async def calls() -> list[str]:
        credentials = SaslCredentials("SCRAM-SHA-512", "alice", "alice-secret")
        channel = aio_sasl_channel(address, 1 << 20, credentials)
        stub = pb_grpc.MetadataStub(channel)
        try:
            first = await stub.DescribeCluster(pb.DescribeClusterRequest(), timeout=10)
            await asyncio.to_thread(server.on_loop, lambda: server.tokens._entries.clear())
            second = await stub.DescribeCluster(pb.DescribeClusterRequest(), timeout=10)
            return [first.cluster_id, second.cluster_id]
        finally:
            await channel.close()

    assert asyncio.run(calls()) == ["User:alice SASL", "User:alice SASL"]


class _Context:
    def peer(self) -> str:
        return "ipv4:127.0.0.1:5555"


def test_a_half_done_login_ends_after_a_minute() -> None:
    now = [0.0]
    factory = SaslServerFactory(("PLAIN",), {"bob": "bob-secret"}, lambda user, m: None)
    tokens = SessionTokens(idle_ms=60_000, clock=lambda: now[0])
    service = SecurityService(
        LISTENER, "SASL_PLAINTEXT", SaslLogin(factory, tokens), clock=lambda: now[0]
    )
    context: Any = _Context()

    async def login(wait_s: float) -> pb.SaslAuthenticateResponse:
        handshake = await service.SaslHandshake(pb.SaslHandshakeRequest(mechanism="PLAIN"), context)
        now[0] += wait_s
        return await service.SaslAuthenticate(
            pb.SaslAuthenticateRequest(
                handshake_id=handshake.handshake_id, auth_bytes=b"\0bob\0bob-secret"
            ),
            context,
        )

    done = asyncio.run(login(59.0))
    assert done.error_code == ErrorCode.NONE and done.session_token
    assert tokens.resolve(done.session_token) is not None
    late = asyncio.run(login(61.0))
    assert late.error_code == ErrorCode.ILLEGAL_SASL_STATE and not late.session_token


def test_a_failed_login_is_answered_after_the_delay() -> None:
    """connection.failed.authentication.delay.ms, as on the Kafka door: a wrong password is
    answered that much later, a right one at once."""
    factory = SaslServerFactory(("PLAIN",), {"bob": "bob-secret"}, lambda user, m: None)
    tokens = SessionTokens(idle_ms=60_000)
    login = SaslLogin(factory, tokens, failed_authentication_delay_ms=400)
    service = SecurityService(LISTENER, "SASL_PLAINTEXT", login)
    context: Any = _Context()

    async def timed(password: str) -> tuple[float, pb.SaslAuthenticateResponse]:
        handshake = await service.SaslHandshake(pb.SaslHandshakeRequest(mechanism="PLAIN"), context)
        started = time.monotonic()
        answer = await service.SaslAuthenticate(
            pb.SaslAuthenticateRequest(
                handshake_id=handshake.handshake_id, auth_bytes=f"\0bob\0{password}".encode()
            ),
            context,
        )
        return time.monotonic() - started, answer

    slow, refused = asyncio.run(timed("guess"))
    assert refused.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert slow >= 0.4
    fast, accepted = asyncio.run(timed("bob-secret"))
    assert accepted.error_code == ErrorCode.NONE and accepted.session_token
    assert fast < 0.4


class _HostContext:
    def __init__(self, host: str) -> None:
        self._host = host

    def peer(self) -> str:
        return f"ipv4:{self._host}:5555"


def test_a_host_flooding_handshakes_does_not_push_out_another_hosts_login() -> None:
    """The table of half-done logins is bounded; a host that opens handshakes without end
    loses its own oldest ones, never the login another host (a broker) is in the middle of."""
    factory = SaslServerFactory(("PLAIN",), {"bob": "bob-secret"}, lambda user, m: None)
    service = SecurityService(
        LISTENER, "SASL_PLAINTEXT", SaslLogin(factory, SessionTokens(idle_ms=60_000))
    )
    broker: Any = _HostContext("10.0.0.2")
    attacker: Any = _HostContext("10.0.0.66")

    async def scenario() -> pb.SaslAuthenticateResponse:
        request = pb.SaslHandshakeRequest(mechanism="PLAIN")
        handshake = await service.SaslHandshake(request, broker)
        for _ in range(2000):
            await service.SaslHandshake(request, attacker)
        return await service.SaslAuthenticate(
            pb.SaslAuthenticateRequest(
                handshake_id=handshake.handshake_id, auth_bytes=b"\0bob\0bob-secret"
            ),
            broker,
        )

    done = asyncio.run(scenario())
    assert done.error_code == ErrorCode.NONE and done.session_token
