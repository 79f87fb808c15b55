"""A SASL login to one broker's gRPC listener, and channels whose every call carries it.

    credentials = SaslCredentials("SCRAM-SHA-256", "alice", "alice-secret")
    channel = sasl_channel(transport.channel(address, ...), credentials, address)
    MetadataStub(channel).Metadata(...)   # logs in on first use, then sends the token

A login is Kafka's SaslHandshake and SaslAuthenticate, as the Security RPCs carry them
(proto/minikafka.proto): the mechanism's messages from ``proto/sasl_client.py`` go out until
the broker answers with a session token, which every later call on the channel carries in its
metadata (``SESSION_TOKEN_KEY``). gRPC's call credentials would carry it too, but grpc only
sends them on a secure channel, and SASL_PLAINTEXT has none: an interceptor adds it.

A token is dropped, and the next call logs in again, when its lifetime
(``connections.max.reauth.ms`` on the broker) is nearly over or when a call answers
UNAUTHENTICATED (the broker dropped it: idle too long, restarted). A unary call refused so is
sent once more after the new login; a stream fails with UNAUTHENTICATED, and its owner opens
the next one, which logs in. The broker checks a stream's token when the stream opens, so an
open stream outlives its token.

A login the broker refuses raises ``SaslAuthenticationFailedError`` (a wrong password, an
unknown user), ``UnsupportedSaslMechanismError`` (the listener does not enable the mechanism)
or ``IllegalSaslStateError`` (the listener is not SASL_*): KafkaErrors, not retriable, from the
call that needed the login. A broker that does not answer the login raises its grpc.RpcError,
which callers retry as any other call.

Both the minikafka client (blocking channels) and the broker's own calls to other brokers (the
controller's blocking channels; the followers' and controlled shutdown's asyncio ones, through
``aio_sasl_channel``) use this module. ``SaslLoginState`` is thread-safe: one lock per
broker address, held during a login so that concurrent calls make one login, not many.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import grpc

from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto import transport
from minikafka.proto.errors import ErrorCode, error_for_code
from minikafka.proto.sasl_client import SESSION_TOKEN_KEY, SaslClientError, client_mechanism

__all__ = [
    "SaslCredentials",
    "SaslLoginState",
    "aio_sasl_channel",
    "sasl_channel",
]

# A token is renewed once less than this share of its lifetime is left, so that a call sent
# just before the end does not meet UNAUTHENTICATED on the way.
_RENEW_AT_FRACTION = 0.1
# How long a login's own calls may take.
_LOGIN_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class SaslCredentials:
    """Who to log in as: ``sasl.mechanism``, ``sasl.username``, ``sasl.password``."""

    mechanism: str
    username: str
    password: str = field(repr=False)


@dataclass
class _Token:
    value: str
    renew_at: float | None  # monotonic seconds; None: no lifetime given


class SaslLoginState:
    """The token of one broker address, logged in for on demand (see the module docstring)."""

    def __init__(
        self,
        credentials: SaslCredentials,
        address: str,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.credentials = credentials
        self.address = address
        self._clock = clock
        self._lock = threading.Lock()
        self._token: _Token | None = None
        self._aio_lock: asyncio.Lock | None = None  # made on the loop that logs in

    def token(self, stub: pb_grpc.SecurityStub) -> str:
        """The live token, after a login over ``stub`` if there is none."""
        with self._lock:
            current = self._live()
            if current is not None:
                return current
            handshake = stub.SaslHandshake(
                pb.SaslHandshakeRequest(mechanism=self.credentials.mechanism),
                timeout=_LOGIN_TIMEOUT_S,
            )
            steps = _Exchange(self.credentials, self.address)
            request = steps.start(handshake)
            while True:
                answer = stub.SaslAuthenticate(request, timeout=_LOGIN_TIMEOUT_S)
                request_or_token = steps.next(answer)
                if isinstance(request_or_token, pb.SaslAuthenticateRequest):
                    request = request_or_token
                    continue
                return self._keep(request_or_token, answer.session_lifetime_ms)

    async def aio_token(self, stub: Any) -> str:
        """``token`` for an asyncio ``SecurityStub`` (the broker's loop). Logins of the loop
        are not made concurrently with the blocking ones of the same state object."""
        if self._aio_lock is None:
            self._aio_lock = asyncio.Lock()
        async with self._aio_lock:  # one login at a time, as the blocking form
            current = self._live()
            if current is not None:
                return current
            return await self._aio_login(stub)

    async def _aio_login(self, stub: Any) -> str:
        handshake = await stub.SaslHandshake(
            pb.SaslHandshakeRequest(mechanism=self.credentials.mechanism),
            timeout=_LOGIN_TIMEOUT_S,
        )
        steps = _Exchange(self.credentials, self.address)
        request = steps.start(handshake)
        while True:
            answer = await stub.SaslAuthenticate(request, timeout=_LOGIN_TIMEOUT_S)
            request_or_token = steps.next(answer)
            if isinstance(request_or_token, pb.SaslAuthenticateRequest):
                request = request_or_token
                continue
            return self._keep(request_or_token, answer.session_lifetime_ms)

    def invalidate(self, token: str) -> None:
        """The broker refused ``token``: the next call logs in again."""
        current = self._token
        if current is not None and current.value == token:
            self._token = None

    def _live(self) -> str | None:
        current = self._token
        if current is None:
            return None
        if current.renew_at is not None and self._clock() >= current.renew_at:
            self._token = None
            return None
        return current.value

    def _keep(self, token: str, lifetime_ms: int) -> str:
        renew_at = None
        if lifetime_ms > 0:
            renew_at = self._clock() + lifetime_ms * (1 - _RENEW_AT_FRACTION) / 1000
        self._token = _Token(token, renew_at)
        return token


class _Exchange:
    """The steps of one login, the same for blocking and asyncio stubs."""

    def __init__(self, credentials: SaslCredentials, address: str) -> None:
        self._credentials = credentials
        self._address = address
        self._mechanism = client_mechanism(
            credentials.mechanism, credentials.username, credentials.password
        )
        self._handshake_id = ""

    def start(self, handshake: pb.SaslHandshakeResponse) -> pb.SaslAuthenticateRequest:
        if handshake.error_code != ErrorCode.NONE:
            raise error_for_code(
                handshake.error_code, f"SASL handshake with {self._address}: " + _why(handshake)
            )
        self._handshake_id = handshake.handshake_id
        return pb.SaslAuthenticateRequest(
            handshake_id=self._handshake_id, auth_bytes=self._mechanism.initial()
        )

    def next(self, answer: pb.SaslAuthenticateResponse) -> pb.SaslAuthenticateRequest | str:
        """The next request, or the session token once the login is complete."""
        if answer.error_code != ErrorCode.NONE:
            raise error_for_code(
                answer.error_code,
                f"SASL authentication of {self._credentials.username!r} with "
                f"{self._address} failed: " + _why(answer),
            )
        try:
            reply = self._mechanism.respond(answer.auth_bytes)
        except SaslClientError as exc:
            raise error_for_code(
                ErrorCode.SASL_AUTHENTICATION_FAILED,
                f"SASL authentication with {self._address} failed: {exc}",
            ) from None
        if answer.session_token:
            if not self._mechanism.complete:
                raise error_for_code(
                    ErrorCode.SASL_AUTHENTICATION_FAILED,
                    f"{self._address} ended the SASL exchange before proving itself",
                )
            return str(answer.session_token)
        if reply is None:
            raise error_for_code(
                ErrorCode.ILLEGAL_SASL_STATE,
                f"{self._address} asked for more after the last SASL message",
            )
        return pb.SaslAuthenticateRequest(handshake_id=self._handshake_id, auth_bytes=reply)


def _why(answer: pb.SaslHandshakeResponse | pb.SaslAuthenticateResponse) -> str:
    return answer.error_message or ErrorCode(answer.error_code).name


def _with_token(details: Any, token: str) -> Any:
    """The call's details with the token in its metadata (grpc's details, blocking and
    asyncio alike, are namedtuples)."""
    metadata = [(k, v) for k, v in (details.metadata or ()) if k != SESSION_TOKEN_KEY]
    metadata.append((SESSION_TOKEN_KEY, token))
    return details._replace(metadata=metadata)


def _refused(error: object) -> bool:
    return isinstance(error, grpc.RpcError) and error.code() == grpc.StatusCode.UNAUTHENTICATED


class _SaslInterceptor(
    grpc.UnaryUnaryClientInterceptor,
    grpc.UnaryStreamClientInterceptor,
    grpc.StreamUnaryClientInterceptor,
    grpc.StreamStreamClientInterceptor,
):
    def __init__(self, state: SaslLoginState, security: pb_grpc.SecurityStub) -> None:
        self._state = state
        self._security = security

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        token = self._state.token(self._security)
        outcome = continuation(_with_token(details, token), request)
        if not _refused(outcome.exception()):
            return outcome
        self._state.invalidate(token)  # expired or dropped on the broker: once more, anew
        return continuation(_with_token(details, self._state.token(self._security)), request)

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return self._watch(continuation, details, request)

    def intercept_stream_unary(self, continuation: Any, details: Any, requests: Any) -> Any:
        return self._watch(continuation, details, requests)

    def intercept_stream_stream(self, continuation: Any, details: Any, requests: Any) -> Any:
        return self._watch(continuation, details, requests)

    def _watch(self, continuation: Any, details: Any, request: Any) -> Any:
        token = self._state.token(self._security)
        call = continuation(_with_token(details, token), request)

        def done(finished: Any) -> None:
            if finished.code() == grpc.StatusCode.UNAUTHENTICATED:
                self._state.invalidate(token)

        call.add_done_callback(done)
        return call


def sasl_channel(channel: grpc.Channel, credentials: SaslCredentials, address: str) -> grpc.Channel:
    """``channel`` with every call logged in as ``credentials`` (the login itself goes over
    ``channel`` without the interceptor)."""
    state = SaslLoginState(credentials, address)
    interceptor = _SaslInterceptor(state, pb_grpc.SecurityStub(channel))
    return grpc.intercept_channel(channel, interceptor)


class _AioLogin:
    """The asyncio form's shared part: the login state and the channel's SecurityStub (the
    login goes over the same channel: its Security calls pass through untouched)."""

    def __init__(self, state: SaslLoginState) -> None:
        self.state = state
        self.security: Any = None  # set once the channel exists

    async def token(self) -> str:
        return await self.state.aio_token(self.security)


# grpc.aio files an interceptor under the first of its four kinds it is an instance of, so the
# unary and the stream forms are two objects.
class _AioUnarySaslInterceptor(grpc.aio.UnaryUnaryClientInterceptor):
    def __init__(self, login: _AioLogin) -> None:
        self._login = login

    async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        if _is_login(details):
            return await continuation(details, request)
        token = await self._login.token()
        call = await continuation(_with_token(details, token), request)
        if await call.code() != grpc.StatusCode.UNAUTHENTICATED:
            return call
        self._login.state.invalidate(token)  # expired or dropped: once more, anew
        return await continuation(_with_token(details, await self._login.token()), request)


class _AioStreamSaslInterceptor(grpc.aio.StreamStreamClientInterceptor):
    """The followers' FetchStream."""

    def __init__(self, login: _AioLogin) -> None:
        self._login = login

    async def intercept_stream_stream(
        self, continuation: Any, details: Any, request_iterator: Any
    ) -> Any:
        token = await self._login.token()
        call = await continuation(_with_token(details, token), request_iterator)
        state = self._login.state

        def done(finished: Any) -> None:  # on the loop, the call over
            async def check() -> None:
                if await finished.code() == grpc.StatusCode.UNAUTHENTICATED:
                    state.invalidate(token)

            asyncio.get_running_loop().create_task(check())

        call.add_done_callback(done)
        return call


def _is_login(details: Any) -> bool:
    method = details.method
    if isinstance(method, bytes):
        method = method.decode()
    return str(method).startswith("/minikafka.v1.Security/")


def aio_sasl_channel(
    address: str,
    max_message_bytes: int,
    credentials: SaslCredentials,
    options: transport.Options = (),
    tls: grpc.ChannelCredentials | None = None,
) -> grpc.aio.Channel:
    """An asyncio channel (transport.aio_channel) whose calls log in as ``credentials``."""
    login = _AioLogin(SaslLoginState(credentials, address))
    interceptors = [_AioUnarySaslInterceptor(login), _AioStreamSaslInterceptor(login)]
    channel = transport.aio_channel(address, max_message_bytes, options, tls, interceptors)
    login.security = pb_grpc.SecurityStub(channel)
    return channel
