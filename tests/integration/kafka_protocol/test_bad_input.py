"""Bad input on a Kafka listener: the connection is closed or answered with Kafka's error, one
log line says why, the broker stays up and nothing stored is touched.

Raw sockets against one real broker; requests are encoded with kio (the schema library the
broker uses) so that only the part under test is wrong.
"""

from __future__ import annotations

import os
import socket
import struct
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kio.index import load_response_schema
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.sasl_handshake.v1.response import (
    SaslHandshakeResponse as SaslHandshakeResponseV1,
)
from kio.serial import entity_reader

from minikafka.client.admin import NewTopic
from minikafka.proto.errors import ErrorCode
from minikafka.proto.records import encode_batch
from tests.batches import poison_batch
from tests.integration.cluster import Cluster
from tests.integration.conftest import fresh_chroot
from tests.integration.kafka_protocol.raw import RawKafka, encode_request, read_frame
from tests.integration.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.integration

IDLE_MS = 1500


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    cluster = Cluster(
        fresh_chroot(zookeeper_server),
        tmp_path_factory.mktemp("bad-input"),
        n_brokers=1,
        overrides={"connections.max.idle.ms": str(IDLE_MS)},
    )
    try:
        cluster.start_all()
        cluster.wait_until_serving()
        with cluster.admin() as admin:
            admin.create_topics([NewTopic("kept", 1, 1)])
        cluster.wait_for(lambda: cluster.leader("kept", 0) >= 0, 20, "a leader for kept-0")
        cluster.wait_for(
            lambda: cluster.produce("kept", 0, [b"one", b"two", b"three"], acks=-1).ok,
            20,
            "three records stored in kept-0",
        )
        yield cluster
    finally:
        cluster.close()


def _connect(cluster: Cluster) -> socket.socket:
    broker = cluster.brokers[0]
    sock = socket.create_connection(("127.0.0.1", broker.kafka_port), timeout=10)
    return sock


def _closed_by_broker(sock: socket.socket, timeout_s: float = 10.0) -> bool:
    """True when the broker closes the connection (EOF or reset) within the timeout."""
    sock.settimeout(timeout_s)
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def _api_versions(sock: socket.socket, version: int = 3) -> Any:
    body: dict[str, Any] = {}
    if version >= 3:
        body = {"client_software_name": "test", "client_software_version": "1"}
    sock.sendall(encode_request(18, version, body, correlation_id=7))
    data = read_frame(sock)
    assert struct.unpack(">i", data[:4])[0] == 7  # correlation id
    response, _ = entity_reader(load_response_schema(18, version))(data, 4)
    return response


def _assert_healthy(cluster: Cluster) -> None:
    """The broker still answers on a new connection, and the stored records are intact."""
    with _connect(cluster) as sock:
        assert _api_versions(sock).error_code == 0
    assert [r.value for r in cluster.fetch_all("kept", 0)] == [b"one", b"two", b"three"]
    assert cluster.brokers[0].running


def _closed_events(cluster: Cluster, reason: str) -> list[dict[str, object]]:
    return [
        e
        for e in cluster.brokers[0].log_events("kafka.connection_closed")
        if e.get("reason") == reason
    ]


def _wait_logged(cluster: Cluster, reason: str, before: int) -> dict[str, object]:
    def logged() -> dict[str, object] | None:
        events = _closed_events(cluster, reason)
        return events[-1] if len(events) > before else None

    return cluster.wait_for(
        logged, 10, f"a kafka.connection_closed log line with reason {reason!r}"
    )


def test_api_versions_advertises_what_is_implemented(cluster: Cluster) -> None:
    with _connect(cluster) as sock:
        response = _api_versions(sock)
    keys = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    # The APIs every client needs, the transactional ones among them, and nothing that is not
    # served (delegation tokens, KRaft's).
    for api_key in (0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 19, 20, 22, 23):
        assert api_key in keys, api_key
    assert [keys[k] for k in (24, 25, 26, 28)] == [(0, 4)] * 4  # transactions
    for unsupported in (38, 39, 40, 41, 55):  # delegation tokens, DescribeQuorum
        assert unsupported not in keys
    # ACLs: served (SECURITY_DISABLED without an authorizer), from version 1
    assert [keys[k] for k in (29, 30, 31)] == [(1, 3)] * 3


def test_api_versions_of_an_unknown_version_answers_unsupported_version(cluster: Cluster) -> None:
    with _connect(cluster) as sock:
        # A version from the future: the body cannot be read, so only the header is sent.
        header = struct.pack(">hhih", 18, 99, 7, -1)
        sock.sendall(struct.pack(">i", len(header)) + header)
        data = read_frame(sock)
        response, _ = entity_reader(ApiVersionsResponseV0)(data, 4)
        assert response.error_code == 35  # UNSUPPORTED_VERSION
        assert any(k.api_key == 18 for k in response.api_keys)
        # and the connection stays usable for a version it supports
        assert _api_versions(sock).error_code == 0


@pytest.mark.parametrize(
    ("what", "frame", "reason"),
    [
        ("unknown API key", struct.pack(">ihhih", 10, 999, 0, 7, -1), "unknown API key"),
        (
            "unsupported version",
            struct.pack(">ihhih", 10, 3, 99, 7, -1),  # Metadata v99
            "unsupported version",
        ),
        ("size prefix of 2 GB", struct.pack(">i", 2**31 - 1), "invalid request size"),
        ("negative size", struct.pack(">i", -5), "invalid request size"),
        ("size below a header", struct.pack(">i", 3) + b"abc", "invalid request size"),
        (
            "malformed body",  # a Metadata v1 header, then a topic count of 5 and no topics
            struct.pack(">ihhih", 14, 3, 1, 7, -1) + struct.pack(">i", 5),
            "malformed request",
        ),
        ("random bytes", struct.pack(">i", 64) + os.urandom(64), None),
    ],
    # The frame is left out of the id: the random one differs in each pytest-xdist worker.
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_bad_frames_close_the_connection(
    cluster: Cluster, what: str, frame: bytes, reason: str | None
) -> None:
    before = len(cluster.brokers[0].log_events("kafka.connection_closed"))
    with _connect(cluster) as sock:
        sock.sendall(frame)
        assert _closed_by_broker(sock), f"{what}: the broker kept the connection open"
    events = cluster.wait_for(
        lambda: cluster.brokers[0].log_events("kafka.connection_closed")[before:],
        10,
        "the close to be logged",
    )
    assert len(events) == 1, events  # one line says why
    if reason is not None:
        assert events[0]["reason"] == reason, events
    _assert_healthy(cluster)


def test_truncated_request_is_closed_after_the_idle_timeout(cluster: Cluster) -> None:
    before = len(_closed_events(cluster, "truncated request"))
    with _connect(cluster) as sock:
        sock.sendall(struct.pack(">i", 100) + b"\0" * 20)  # 20 of the 100 bytes announced
        started = time.monotonic()
        assert _closed_by_broker(sock, timeout_s=IDLE_MS / 1000 + 10)
        assert time.monotonic() - started < IDLE_MS / 1000 + 5
    _wait_logged(cluster, "truncated request", before)
    _assert_healthy(cluster)


def test_a_silent_client_is_disconnected(cluster: Cluster) -> None:
    before = len(_closed_events(cluster, "idle"))
    with _connect(cluster) as sock:
        assert _closed_by_broker(sock, timeout_s=IDLE_MS / 1000 + 10)
    _wait_logged(cluster, "idle", before)
    _assert_healthy(cluster)


def test_a_client_that_leaves_mid_request_changes_nothing(cluster: Cluster) -> None:
    sock = _connect(cluster)
    sock.sendall(struct.pack(">i", 1000) + b"\0" * 10)
    sock.close()
    _assert_healthy(cluster)


def test_sasl_is_refused_as_kafka_does(cluster: Cluster) -> None:
    with _connect(cluster) as sock:
        sock.sendall(encode_request(17, 1, {"mechanism": "PLAIN"}))
        data = read_frame(sock)
        response, _ = entity_reader(SaslHandshakeResponseV1)(data, 4)
        assert response.error_code == 34  # ILLEGAL_SASL_STATE
        assert response.mechanisms == ()


def test_a_failed_acks_0_produce_closes_the_connection(cluster: Cluster) -> None:
    # No answer can carry the error, so Kafka closes the connection: the client then asks for
    # metadata again.
    before = len(_closed_events(cluster, "acks=0 produce failed"))
    batch = encode_batch([(1_700_000_000_000, None, b"lost", ())])
    request = {
        "transactional_id": None,
        "acks": 0,
        "timeout": 5000,
        "topic_data": [{"name": "missing", "partition_data": [{"index": 0, "records": batch}]}],
    }
    with _connect(cluster) as sock:
        sock.sendall(encode_request(0, 8, request))
        assert _closed_by_broker(sock)
    event = _wait_logged(cluster, "acks=0 produce failed", before)
    assert (event["topic"], event["error"]) == ("missing", "UNKNOWN_TOPIC_OR_PARTITION")
    _assert_healthy(cluster)


@pytest.mark.parametrize("codec", [5, 7])
def test_a_batch_with_an_unknown_codec_gets_unsupported_compression_type(
    cluster: Cluster, codec: int
) -> None:
    """Issue 16: the same poison batch as over gRPC, through the Kafka door."""
    request = {
        "transactional_id": None,
        "acks": -1,
        "timeout": 5000,
        "topic_data": [
            {"name": "kept", "partition_data": [{"index": 0, "records": poison_batch(codec)}]}
        ],
    }
    with RawKafka(cluster.brokers[0].kafka_address) as raw:
        answer = raw.call(0, 8, request)
    [partition] = answer.responses[0].partition_responses
    assert partition.error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    assert partition.base_offset == -1
    assert f"compression codec {codec}" in (partition.error_message or "")
    _assert_healthy(cluster)


def test_a_fetch_with_a_negative_max_bytes_gets_kafkas_error(cluster: Cluster) -> None:
    """Kafka's LogSegment.read refuses a negative size; its fetch answers the partition with
    UNKNOWN_SERVER_ERROR, not an empty answer."""
    request = {
        "replica_id": -1,
        "max_wait": 0,
        "min_bytes": 1,
        "max_bytes": -1,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": "kept",
                "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}],
            }
        ],
        "forgotten_topics_data": [],
    }
    with RawKafka(cluster.brokers[0].kafka_address) as raw:
        answer = raw.call(1, 11, request)
    [partition] = answer.responses[0].partitions
    assert partition.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert partition.records in (b"", None)
    _assert_healthy(cluster)
