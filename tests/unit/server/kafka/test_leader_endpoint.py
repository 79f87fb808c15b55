"""The follower's Kafka-protocol endpoint against a scripted leader on 127.0.0.1: what it puts on
the wire (Fetch v17 by topic id, v12 by name while an id is unknown, OffsetsForLeaderEpoch v4,
decoded here with kio as the broker decodes them), what it makes of the answers, and its
failures (timeouts, closes, stray answers, refused connections), each a LeaderEndpointError
after which the next request connects again."""

from __future__ import annotations

import asyncio
import contextlib
import io
import struct
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from minikafka.broker.replication.fetch_session import FetchMetadata
from minikafka.broker.replication.fetch_session_handler import FetchSessionHandler
from minikafka.broker.replication.leader_endpoint import LeaderEndpointError
from minikafka.broker.replication.requests import (
    FetchPartition,
    FetchRequest,
    OffsetForLeaderPartition,
    OffsetsForLeaderEpochRequest,
)
from minikafka.broker.server.kafka.leader_endpoint import KafkaLeaderEndpoint
from minikafka.broker.server.kafka.schema import (
    Entity,
    build,
    read_entity,
    request_class,
    response_class,
    write_entity,
)
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode

# The broker runs this endpoint on uvloop (conftest.py).
pytestmark = pytest.mark.usefixtures("either_event_loop")

# (api key, version, correlation id, decoded request) -> the answer's frame body (header
# included), or None for no answer.
Script = Callable[[int, int, int, Entity], Awaitable[bytes | None]]


class ScriptedLeader:
    """Accepts connections and answers each request as ``script`` says."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.connections = 0
        self.requests: list[tuple[int, int, Entity]] = []
        self.port = 0
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> ScriptedLeader:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                frame = await reader.readexactly(size)
                api_key, version, correlation_id = struct.unpack_from(">hhi", frame)
                cls = request_class(api_key, version)
                header, offset = read_entity(cls.__header_schema__, frame, 0)
                assert header.client_id == "broker-2-fetcher"
                body, _ = read_entity(cls, frame, offset)
                self.requests.append((api_key, version, body))
                answer = await self.script(api_key, version, correlation_id, body)
                if answer is None:
                    continue
                writer.write(struct.pack(">i", len(answer)) + answer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def answer(api_key: int, version: int, correlation_id: int, values: dict[str, Any]) -> bytes:
    cls = response_class(api_key, version)
    buffer = io.BytesIO()
    header_cls = cls.__header_schema__
    write_entity(header_cls, buffer, build(header_cls, {"correlation_id": correlation_id}))
    write_entity(cls, buffer, build(cls, values))
    return buffer.getvalue()


def endpoint(
    port: int,
    timeout_s: float = 5.0,
    max_bytes: int = 64 << 20,
    topic_ids: dict[str, str] | None = None,
) -> KafkaLeaderEndpoint:
    """A follower's endpoint; ``topic_ids`` its metadata cache's ids (none known by default)."""
    return KafkaLeaderEndpoint(
        "127.0.0.1",
        port,
        timeout_s=timeout_s,
        max_response_bytes=max_bytes,
        client_id="broker-2-fetcher",
        topic_ids=FakeTopicIds(topic_ids or {}),
    )


class FakeTopicIds:
    """The metadata cache's ids, name -> id; the test may change them."""

    def __init__(self, ids: dict[str, str]) -> None:
        self.ids = ids

    def topic_id(self, topic: str) -> str:
        return self.ids.get(topic, "")

    def topic_names_by_id(self) -> dict[str, str]:
        return {topic_id: name for name, topic_id in self.ids.items()}


FETCH = FetchRequest(
    2,
    100,
    1,
    10 << 20,
    [FetchPartition("t", 0, 5, 3, 2, 1, 1 << 20), FetchPartition("u", 1, 0)],
    session_id=77,
    session_epoch=4,
    forgotten=[TopicPartition("t", 9)],
)
RECORDS = bytes(range(256)) * 40_000  # 10 MB: a big answer comes in many reads


async def fetch_answer(api_key: int, version: int, correlation_id: int, body: Entity) -> bytes:
    return answer(
        api_key,
        version,
        correlation_id,
        {
            "throttle_time": 0,
            "error_code": 0,
            "session_id": 77,
            "responses": [
                {
                    "topic": "t",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "error_code": 0,
                            "high_watermark": 9,
                            "last_stable_offset": 9,
                            "log_start_offset": 1,
                            "records": RECORDS,
                        }
                    ],
                },
                {
                    "topic": "u",
                    "partitions": [
                        {
                            "partition_index": 1,
                            "error_code": ErrorCode.NONE,
                            "high_watermark": 4,
                            "records": None,
                            "diverging_epoch": {"epoch": 1, "end_offset": 3},
                        },
                        {
                            "partition_index": 2,
                            "error_code": ErrorCode.FENCED_LEADER_EPOCH,
                            "high_watermark": -1,
                            "records": None,
                        },
                    ],
                },
            ],
        },
    )


def test_a_fetch_goes_out_as_fetch_v12_and_its_answer_comes_back_as_values() -> None:
    async def scenario() -> None:
        async with ScriptedLeader(fetch_answer) as leader:
            follower = endpoint(leader.port)
            try:
                response = await follower.fetch(FETCH)
            finally:
                await follower.close()
        [(api_key, version, body)] = leader.requests
        assert (api_key, version) == (1, 12)
        assert (body.replica_id, body.max_wait.total_seconds(), body.min_bytes) == (2, 0.1, 1)
        assert (body.max_bytes, body.session_id, body.session_epoch) == (10 << 20, 77, 4)
        sent = [(t.topic, p) for t in body.topics for p in t.partitions]
        assert [(topic, p.partition, p.fetch_offset) for topic, p in sent] == [
            ("t", 0, 5),
            ("u", 1, 0),
        ]
        first = sent[0][1]
        assert (first.current_leader_epoch, first.last_fetched_epoch) == (3, 2)
        assert (first.log_start_offset, first.partition_max_bytes) == (1, 1 << 20)
        assert [(t.topic, list(t.partitions)) for t in body.forgotten_topics_data] == [("t", [9])]

        assert (response.error_code, response.session_id) == (0, 77)
        t0, u1, u2 = response.partitions
        assert (t0.topic, t0.partition, t0.high_watermark, t0.log_start_offset) == ("t", 0, 9, 1)
        assert t0.records == RECORDS and t0.diverging_epoch is None
        assert (u1.topic, u1.partition, u1.records, u1.diverging_epoch) == ("u", 1, b"", (1, 3))
        assert (u2.error_code, u2.diverging_epoch) == (ErrorCode.FENCED_LEADER_EPOCH, None)
        assert type(u2.error_code) is int

    asyncio.run(scenario())


# ZooKeeper's text form of two topic ids, and their 16 bytes on the wire.
T_ID, U_ID = "AAAAAAAAAAAAAAAAAAAAAQ", "AAAAAAAAAAAAAAAAAAAAAg"
T_UUID, U_UUID = uuid.UUID(int=1), uuid.UUID(int=2)


async def fetch_answer_by_id(
    api_key: int, version: int, correlation_id: int, body: Entity
) -> bytes:
    """The answer a leader gives by topic id: ``t``'s records, and ``u`` deleted and
    re-created meanwhile (UNKNOWN_TOPIC_ID)."""
    partition = {"partition_index": 0, "error_code": 0, "high_watermark": 9, "records": b"r"}
    unknown = {"partition_index": 1, "error_code": ErrorCode.UNKNOWN_TOPIC_ID, "records": None}
    return answer(
        api_key,
        version,
        correlation_id,
        {
            "session_id": 77,
            "responses": [
                {"topic_id": T_UUID, "partitions": [partition]},
                {"topic_id": U_UUID, "partitions": [unknown]},
            ],
        },
    )


def test_a_fetch_names_topics_by_id_at_v17_once_every_id_is_known() -> None:
    """Kafka 3.9's replica fetcher: v17, ids for names, the follower's id in replica_state."""

    async def scenario() -> None:
        async with ScriptedLeader(fetch_answer_by_id) as leader:
            follower = endpoint(leader.port, topic_ids={"t": T_ID, "u": U_ID})
            try:
                response = await follower.fetch(FETCH)
            finally:
                await follower.close()
        [(api_key, version, body)] = leader.requests
        assert (api_key, version) == (1, 17)
        assert (body.replica_state.replica_id, body.replica_state.replica_epoch) == (2, -1)
        sent = [
            (t.topic_id, p.partition, p.fetch_offset) for t in body.topics for p in t.partitions
        ]
        assert sent == [(T_UUID, 0, 5), (U_UUID, 1, 0)]
        forgotten = [(t.topic_id, list(t.partitions)) for t in body.forgotten_topics_data]
        assert forgotten == [(T_UUID, [9])]
        t0, u1 = response.partitions
        assert (t0.topic, t0.partition, t0.high_watermark, t0.records) == ("t", 0, 9, b"r")
        assert (u1.topic, u1.partition, u1.error_code) == ("u", 1, ErrorCode.UNKNOWN_TOPIC_ID)

    asyncio.run(scenario())


def test_an_incremental_answer_names_the_sessions_partitions_by_the_ids_sent_before() -> None:
    """The session's partitions come back by id though the incremental fetch lists none: the
    ids sent earlier name them, then the metadata cache; an id neither knows ends the session,
    never a partition dropped in silence: the next fetch is a full one that closes the leader's
    session (INVALID_FETCH_SESSION_EPOCH), which still holds it, rather than leaving it there
    (FETCH_SESSION_ID_NOT_FOUND would start over with session id 0)."""
    answers = iter([fetch_answer_by_id, fetch_answer_by_id, fetch_answer_by_id])

    async def script(api_key: int, version: int, correlation_id: int, body: Entity) -> bytes:
        return await next(answers)(api_key, version, correlation_id, body)

    async def scenario() -> None:
        cache = FakeTopicIds({"t": T_ID, "u": U_ID})
        async with ScriptedLeader(script) as leader:
            follower = KafkaLeaderEndpoint(
                "127.0.0.1", leader.port, timeout_s=5, max_response_bytes=1 << 20,
                client_id="broker-2-fetcher", topic_ids=cache,
            )  # fmt: skip
            incremental = FetchRequest(2, 100, 1, 1 << 20, [], session_id=77, session_epoch=5)
            try:
                await follower.fetch(FETCH)  # names t and u by their ids
                cache.ids = {}  # the cache forgot them (the topics were deleted)
                first = await follower.fetch(incremental)
                # a new endpoint has sent no ids: the cache names them, or nobody does
                fresh = KafkaLeaderEndpoint(
                    "127.0.0.1", leader.port, timeout_s=5, max_response_bytes=1 << 20,
                    client_id="broker-2-fetcher", topic_ids=FakeTopicIds({"u": U_ID}),
                )  # fmt: skip
                unknown = await fresh.fetch(incremental)
                await fresh.close()
            finally:
                await follower.close()
        assert [(p.topic, p.partition) for p in first.partitions] == [("t", 0), ("u", 1)]
        assert (first.error_code, first.session_id) == (0, 77)
        # t's id: neither sent by the fresh endpoint nor in its cache
        assert (unknown.error_code, unknown.partitions) == (
            ErrorCode.INVALID_FETCH_SESSION_EPOCH,
            [],
        )
        session = FetchSessionHandler()
        session.next_metadata = FetchMetadata(77, 5)
        assert not session.handle_response(unknown.error_code, unknown.session_id, [])
        assert session.next_metadata == FetchMetadata(77, 0)  # full, closing session 77
        assert [v for _, v, _ in leader.requests] == [17, 17, 17]

    asyncio.run(scenario())


def test_a_fetch_names_topics_at_v12_while_one_id_is_not_known() -> None:
    """A topic whose id the metadata cache lacks (a forgotten one counts too): by name."""

    async def scenario() -> None:
        async with ScriptedLeader(fetch_answer) as leader:
            follower = endpoint(leader.port, topic_ids={"u": U_ID})
            try:
                response = await follower.fetch(FETCH)
            finally:
                await follower.close()
        [(_, version, body)] = leader.requests
        assert version == 12
        assert [t.topic for t in body.topics] == ["t", "u"]
        assert [p.topic for p in response.partitions] == ["t", "u", "u"]

    asyncio.run(scenario())


def test_offsets_for_leader_epoch_goes_out_as_v4_with_the_replica_id() -> None:
    async def script(api_key: int, version: int, correlation_id: int, body: Entity) -> bytes:
        return answer(
            api_key,
            version,
            correlation_id,
            {
                "throttle_time": 0,
                "topics": [
                    {
                        "topic": "t",
                        "partitions": [
                            {"error_code": 0, "partition": 0, "leader_epoch": 2, "end_offset": 7},
                            {"error_code": ErrorCode.NOT_LEADER_OR_FOLLOWER, "partition": 1},
                        ],
                    }
                ],
            },
        )

    async def scenario() -> None:
        async with ScriptedLeader(script) as leader:
            follower = endpoint(leader.port)
            try:
                results = await follower.offsets_for_leader_epoch(
                    OffsetsForLeaderEpochRequest(
                        2,
                        [
                            OffsetForLeaderPartition("t", 0, 2, 3),
                            OffsetForLeaderPartition("t", 1, 1, 3),
                        ],
                    )
                )
            finally:
                await follower.close()
        [(api_key, version, body)] = leader.requests
        assert (api_key, version, body.replica_id) == (23, 4, 2)
        asked = [
            (p.partition, p.leader_epoch, p.current_leader_epoch) for p in body.topics[0].partitions
        ]
        assert asked == [(0, 2, 3), (1, 1, 3)]
        assert [
            (r.topic, r.partition, r.error_code, r.leader_epoch, r.end_offset) for r in results
        ] == [
            ("t", 0, 0, 2, 7),
            ("t", 1, ErrorCode.NOT_LEADER_OR_FOLLOWER, -1, -1),
        ]

    asyncio.run(scenario())


def _failing_once(failure: str) -> Script:
    """The first request fails as ``failure`` says; later ones are answered."""
    calls = 0

    async def script(api_key: int, version: int, correlation_id: int, body: Entity) -> bytes | None:
        nonlocal calls
        calls += 1
        if calls == 1:
            if failure == "silence":
                return None
            if failure == "stray":
                return answer(api_key, version, correlation_id + 1, {"error_code": 0})
            if failure == "close":
                raise ConnectionResetError
        return await fetch_answer(api_key, version, correlation_id, body)

    return script


@pytest.mark.parametrize(
    ("failure", "code", "details"),
    [
        ("silence", "DEADLINE_EXCEEDED", "no answer within 0.4 s"),  # 0.3 + max wait 0.1
        ("stray", "UNAVAILABLE", "an answer to correlation id 1, not 0"),
        ("close", "UNAVAILABLE", "the leader closed the connection"),
    ],
)
def test_a_failed_request_closes_the_connection_and_the_next_connects_again(
    failure: str, code: str, details: str
) -> None:
    async def scenario() -> None:
        async with ScriptedLeader(_failing_once(failure)) as leader:
            follower = endpoint(leader.port, timeout_s=0.3)
            try:
                started = asyncio.get_running_loop().time()
                with pytest.raises(LeaderEndpointError) as failed:
                    await follower.fetch(FETCH)
                took = asyncio.get_running_loop().time() - started
                assert (failed.value.code, failed.value.details) == (code, details)
                assert took < 2
                response = await follower.fetch(FETCH)
                assert response.partitions[0].records == RECORDS
            finally:
                await follower.close()
        assert leader.connections == 2

    asyncio.run(scenario())


def test_an_unreachable_leader_and_an_oversized_answer() -> None:
    async def scenario() -> None:
        async with ScriptedLeader(fetch_answer) as leader:
            port = leader.port
            small = endpoint(port, max_bytes=1 << 20)
            try:
                with pytest.raises(LeaderEndpointError) as failed:
                    await small.fetch(FETCH)
                assert failed.value.code == "UNAVAILABLE"
                assert "at most 1048576" in failed.value.details
            finally:
                await small.close()
        gone = endpoint(port)  # the leader's listener is closed now
        with pytest.raises(LeaderEndpointError) as failed:
            await gone.fetch(FETCH)
        assert failed.value.code == "UNAVAILABLE"
        assert f"cannot connect to 127.0.0.1:{port}" in failed.value.details
        await gone.close()

    asyncio.run(scenario())


def sasl_leader_script(password: str) -> Script:
    """A leader on a SASL listener: SaslHandshake v1 then SaslAuthenticate v2 through the real
    SCRAM-SHA-512 server (credential of user "admin", ``password``), then Fetch."""
    from minikafka.broker.security.sasl.errors import SaslAuthenticationFailed
    from minikafka.broker.security.sasl.scram import (
        SCRAM_SHA_512,
        ScramSaslServer,
        credential_from_password,
    )

    credential = credential_from_password(SCRAM_SHA_512, password, 4096)
    servers: list[ScramSaslServer] = []

    async def script(api_key: int, version: int, correlation_id: int, body: Entity) -> bytes:
        if api_key == 17:
            servers.append(ScramSaslServer(SCRAM_SHA_512, lambda u, m: credential))
            return answer(17, version, correlation_id, {"error_code": 0, "mechanisms": []})
        if api_key == 36:
            try:
                token = servers[-1].evaluate_response(body.auth_bytes)
            except SaslAuthenticationFailed as failed:
                return answer(
                    36,
                    version,
                    correlation_id,
                    {"error_code": 58, "error_message": failed.client_message("SCRAM-SHA-512")},
                )
            return answer(36, version, correlation_id, {"error_code": 0, "auth_bytes": token})
        assert servers and servers[-1].complete, "a request before the login completed"
        return await fetch_answer(api_key, version, correlation_id, body)

    return script


def test_a_sasl_inter_broker_listener_is_logged_in_to_before_the_first_fetch() -> None:
    from minikafka.broker.server.sasl_setup import SaslLogin

    async def scenario() -> None:
        async with ScriptedLeader(sasl_leader_script("admin-secret")) as leader:
            follower = KafkaLeaderEndpoint(
                "127.0.0.1",
                leader.port,
                timeout_s=5.0,
                max_response_bytes=64 << 20,
                client_id="broker-2-fetcher",
                sasl=SaslLogin("SCRAM-SHA-512", "admin", "admin-secret"),
            )
            try:
                await follower.fetch(FETCH)
                await follower.fetch(FETCH)  # the same connection: no second login
            finally:
                await follower.close()
        assert [(k, v) for k, v, _ in leader.requests] == [
            (17, 1),
            (36, 2),
            (36, 2),
            (1, 12),
            (1, 12),
        ]
        assert leader.requests[0][2].mechanism == "SCRAM-SHA-512"

    asyncio.run(scenario())


def test_a_refused_inter_broker_login_is_an_endpoint_error_and_is_tried_again() -> None:
    from minikafka.broker.server.sasl_setup import SaslLogin

    async def scenario() -> None:
        async with ScriptedLeader(sasl_leader_script("admin-secret")) as leader:
            follower = KafkaLeaderEndpoint(
                "127.0.0.1",
                leader.port,
                timeout_s=5.0,
                max_response_bytes=64 << 20,
                client_id="broker-2-fetcher",
                sasl=SaslLogin("SCRAM-SHA-512", "admin", "wrong"),
            )
            try:
                for _ in range(2):
                    with pytest.raises(LeaderEndpointError) as failed:
                        await follower.fetch(FETCH)
                    assert "refused (58)" in str(failed.value)
                    assert "wrong" not in str(failed.value)
            finally:
                await follower.close()
            assert leader.connections == 2
            assert not any(k == 1 for k, _, _ in leader.requests)

    asyncio.run(scenario())


def _records_answer(correlation_id: int, records: bytes) -> bytes:
    partition = {"partition_index": 0, "error_code": 0, "high_watermark": 9, "records": records}
    return answer(
        1,
        12,
        correlation_id,
        {"session_id": 77, "responses": [{"topic": "t", "partitions": [partition]}]},
    )


def test_answers_of_every_size_decode_whole_from_the_reused_buffer() -> None:
    """One buffer per connection takes every answer: a small one after a large one, then a
    larger one, each decodes to its own records (none of an earlier answer's bytes)."""
    sizes = [3 << 20, 100, 5 << 20, 0, 1 << 20]
    contents = [bytes([n + 1]) * size for n, size in enumerate(sizes)]

    async def script(api_key: int, version: int, correlation_id: int, body: Entity) -> bytes:
        return _records_answer(correlation_id, contents[correlation_id])

    async def scenario() -> None:
        async with ScriptedLeader(script) as leader:
            follower = endpoint(leader.port)
            try:
                for expected in contents:
                    response = await follower.fetch(FETCH)
                    assert response.partitions[0].records == expected
            finally:
                await follower.close()
        assert leader.connections == 1

    asyncio.run(scenario())


def test_a_frame_after_the_answer_closes_the_connection_and_leaves_the_answer_whole() -> None:
    """The leader sends another frame right behind the answer, perhaps before the follower has
    decoded it: the answer comes back intact (the stray frame never reaches the buffer while
    it is decoded) and the connection closes, at once or when the stray frame is taken for the
    next request's answer; a fetch after that connects again."""
    first = bytes([7]) * (2 << 20)
    connections = 0

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        try:
            while True:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                frame = await reader.readexactly(size)
                (correlation_id,) = struct.unpack_from(">i", frame, 4)
                frames = [_records_answer(correlation_id, first)]
                if connections == 1:
                    frames.append(_records_answer(0x7FFFFFFF, bytes(2 << 20)))
                writer.write(b"".join(struct.pack(">i", len(f)) + f for f in frames))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def scenario() -> None:
        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        follower = endpoint(server.sockets[0].getsockname()[1])
        try:
            response = await follower.fetch(FETCH)
            assert response.partitions[0].records == first
            for _ in range(2):
                with contextlib.suppress(LeaderEndpointError):
                    response = await follower.fetch(FETCH)
                    break
            assert response.partitions[0].records == first
        finally:
            await follower.close()
            server.close()
        assert connections == 2

    asyncio.run(scenario())
