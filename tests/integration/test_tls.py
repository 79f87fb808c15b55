"""TLS on both front doors, between brokers, and the principal of a client certificate.

Real brokers with the certificates of scripts/make-certs.sh (the ``tls_certs`` fixture): the
gRPC listener ``SSL`` asks every client for a certificate (ssl.client.auth=required, so the
brokers' own channels are mutual TLS), the Kafka listener ``KAFKA_SSL`` asks without requiring
(requested). Followers replicate over KAFKA_SSL (or SSL with MINIKAFKA_TEST_REPLICATION=grpc),
the controller's requests go over SSL. The clients are real: confluent-kafka, kafka-python and
minikafka's own.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import confluent_kafka
import grpc
import kafka
import pytest
import uvloop

from minikafka.broker.config import BrokerConfig
from minikafka.broker.security.principal import ANONYMOUS
from minikafka.broker.security.tls import ListenerTls
from minikafka.broker.server import grpc_tls
from minikafka.broker.server.grpc_session import configure_listener, grpc_session
from minikafka.broker.server.kafka.listener import Accepted, tls_handshake
from minikafka.client._security import ClientSecurity
from minikafka.client.admin import NewTopic
from minikafka.client.consumer.consumer import Consumer
from minikafka.client.producer.producer import Producer
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto import transport
from minikafka.proto.common import TopicPartition
from tests.integration.cluster import REPO_ROOT, Cluster
from tests.integration.conftest import ClusterFactory

pytestmark = pytest.mark.timeout(180)

_BIG = 10_000  # bytes per value: a fetch answer of many of them is read and sent in chunks


def _tls_cluster(
    factory: ClusterFactory, certs: Path, n_brokers: int = 3, replication: str | None = None
) -> Cluster:
    overrides = {"min.insync.replicas": "2" if n_brokers > 1 else "1"}
    if replication is None:
        return factory(n_brokers, overrides, tls=certs)
    return factory(n_brokers, overrides, tls=certs, replication=replication)


def _create(cluster: Cluster, topic: str, replication_factor: int = 3) -> None:
    with cluster.admin() as admin:
        errors = admin.create_topics([NewTopic(topic, 1, replication_factor)])
    assert errors[topic] is None, errors
    cluster.wait_for(
        lambda: len(cluster.isr(topic, 0)) == replication_factor, 20, f"{topic} to have its ISR"
    )


def _confluent_ssl(certs: Path, user: str | None) -> dict[str, str]:
    config = {"security.protocol": "SSL", "ssl.ca.location": str(certs / "truststore.pem")}
    if user is not None:
        config["ssl.certificate.location"] = str(certs / f"{user}.crt")
        config["ssl.key.location"] = str(certs / f"{user}.key")
    return config


def _kafka_python_ssl(certs: Path, user: str | None) -> dict[str, Any]:
    config: dict[str, Any] = {
        "security_protocol": "SSL",
        "ssl_cafile": str(certs / "truststore.pem"),
    }
    if user is not None:
        config["ssl_certfile"] = str(certs / f"{user}.crt")
        config["ssl_keyfile"] = str(certs / f"{user}.key")
    return config


def _confluent_produce(
    cluster: Cluster, config: dict[str, str], topic: str, values: list[bytes]
) -> list[bytes]:
    """Produce with acks=all; the values acknowledged."""
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": cluster.kafka_bootstrap_servers, "acks": "all", **config}
    )
    acked: list[bytes] = []

    def delivered(error: Any, message: confluent_kafka.Message) -> None:
        if error is None:
            acked.append(message.value() or b"")

    for value in values:
        producer.produce(topic, value, callback=delivered)
        producer.poll(0)
    assert producer.flush(60) == 0
    return acked


def _confluent_values(
    cluster: Cluster, config: dict[str, str], topic: str, count: int
) -> list[bytes]:
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": cluster.kafka_bootstrap_servers,
            "group.id": f"g-{time.monotonic_ns()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **config,
        }
    )
    consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None:
                continue
            assert message.error() is None, message.error()
            values.append(message.value() or b"")
    finally:
        consumer.close()
    return values


def _handshake_failures(cluster: Cluster) -> list[dict[str, object]]:
    return [
        event
        for broker in cluster.brokers.values()
        for event in broker.log_events("kafka.tls_handshake_failed")
    ]


def test_both_doors_serve_every_client_over_tls_and_brokers_replicate_over_mutual_tls(
    cluster_factory: ClusterFactory, tls_certs: Path
) -> None:
    # wait_until_serving already asked every broker for metadata over gRPC TLS with the admin
    # certificate, and the controller's requests reached every broker over mutual TLS.
    cluster = _tls_cluster(cluster_factory, tls_certs)
    _create(cluster, "tls")  # the ISR of 3: followers fetch over the TLS listener

    # minikafka's client over the gRPC door, with alice's certificate
    alice = ClientSecurity.from_config(
        {
            "security.protocol": "SSL",
            "ssl.ca.location": str(tls_certs / "truststore.pem"),
            "ssl.certificate.location": str(tls_certs / "alice.crt"),
            "ssl.key.location": str(tls_certs / "alice.key"),
        }
    )
    ours = [f"minikafka-{i}".encode() * 500 for i in range(20)]
    with Producer(cluster.bootstrap_servers, security=alice) as producer:
        for future in [producer.send("tls", v, partition=0) for v in ours]:
            future.result(timeout=30)

    # confluent-kafka and kafka-python over the Kafka door, without and with a certificate
    confluent = [f"confluent-{i}".encode().ljust(_BIG, b".") for i in range(40)]
    assert _confluent_produce(cluster, _confluent_ssl(tls_certs, None), "tls", confluent[:20])
    assert _confluent_produce(cluster, _confluent_ssl(tls_certs, "bob"), "tls", confluent[20:])
    python = [f"kafka-python-{i}".encode().ljust(_BIG, b"-") for i in range(20)]
    for user, chunk in ((None, python[:10]), ("bob", python[10:])):
        producer = kafka.KafkaProducer(
            bootstrap_servers=cluster.kafka_bootstrap_servers,
            acks="all",
            **_kafka_python_ssl(tls_certs, user),
        )
        for value in chunk:
            producer.send("tls", value, partition=0)
        producer.flush(30)
        producer.close()
    everything = ours + confluent + python

    # Every value back, byte for byte, by each client (Fetch answers go through TLS, not
    # sendfile under it: a record sent beside TLS would garble the stream)
    read = _confluent_values(cluster, _confluent_ssl(tls_certs, "alice"), "tls", len(everything))
    assert sorted(read) == sorted(everything)
    consumer = kafka.KafkaConsumer(
        bootstrap_servers=cluster.kafka_bootstrap_servers,
        auto_offset_reset="earliest",
        consumer_timeout_ms=10_000,
        **_kafka_python_ssl(tls_certs, None),
    )
    consumer.assign([kafka.TopicPartition("tls", 0)])
    python_read = [m.value for m in consumer]
    consumer.close()
    assert sorted(python_read) == sorted(everything)
    with Consumer(
        bootstrap_servers=cluster.bootstrap_servers,
        auto_offset_reset="earliest",
        consumer_timeout_ms=5_000,
        security=alice,
    ) as ours_consumer:
        ours_consumer.assign([TopicPartition("tls", 0)])
        ours_read = [r.value for r in ours_consumer]
    assert sorted(v for v in ours_read if v is not None) == sorted(everything)

    assert set(cluster.isr("tls", 0)) == set(cluster.brokers)
    assert _handshake_failures(cluster) == []
    # The Kafka door's Fetch answers (the consumers', the followers') were read and encrypted,
    # never sent by sendfile beside TLS.
    records_bytes = "minikafka_kafka_fetch_records_bytes_total"
    assert all(cluster.metric(b, records_bytes, path="sendfile") == 0 for b in cluster.brokers)
    assert sum(cluster.metric(b, records_bytes, path="read") or 0 for b in cluster.brokers) > 0

    # The tools take the same keys from their config files
    properties = cluster.tmp_path / "admin.properties"
    properties.write_text(
        "security.protocol=SSL\n"
        f"ssl.ca.location={tls_certs / 'truststore.pem'}\n"
        f"ssl.certificate.location={tls_certs / 'admin.crt'}\n"
        f"ssl.key.location={tls_certs / 'admin.key'}\n"
    )
    tool = [sys.executable, "-m", "minikafka", "topics", "--bootstrap-server"]
    listed = subprocess.run(
        [*tool, cluster.bootstrap_servers, "--list", "--command-config", str(properties)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listed.returncode == 0 and "tls" in listed.stdout.split(), listed.stderr

    # A controlled shutdown asks the controller over the TLS control plane listener
    controller = cluster.controller_id()
    victim = next(b for b in cluster.brokers if b != controller)
    assert cluster.stop(victim) == 0
    assert cluster.brokers[victim].log_events("controlled_shutdown_succeeded")


@pytest.mark.parametrize("replication", ["kafka", "grpc"])
def test_replication_over_tls_loses_no_acknowledged_record_when_the_leader_dies(
    cluster_factory: ClusterFactory, tls_certs: Path, replication: str
) -> None:
    # followers fetch over KAFKA_SSL (Kafka's Fetch) or SSL (gRPC's FetchStream)
    cluster = _tls_cluster(cluster_factory, tls_certs, replication=replication)
    _create(cluster, "safe")
    config = {**_confluent_ssl(tls_certs, None), "enable.idempotence": "true"}
    acked = _confluent_produce(cluster, config, "safe", [f"a{i}".encode() for i in range(300)])
    assert len(acked) == 300

    old_leader = cluster.leader("safe", 0)
    cluster.kill(old_leader)
    cluster.wait_for(lambda: cluster.leader("safe", 0) not in (-1, old_leader), 30, "a new leader")
    acked += _confluent_produce(cluster, config, "safe", [f"b{i}".encode() for i in range(300)])
    assert len(acked) == 600

    read = _confluent_values(cluster, _confluent_ssl(tls_certs, None), "safe", len(acked))
    assert len(read) == len(set(read)), "a record was stored twice"
    missing = set(acked) - set(read)
    assert not missing, f"acknowledged but lost: {sorted(missing)[:10]}"

    # The two live replicas hold the same bytes below the high watermark.
    alive = [b for b in cluster.brokers if b != old_leader]
    leader = cluster.leader("safe", 0)
    hw = cluster.fetch(leader, "safe", 0, 0).high_watermark
    assert hw == 600
    cluster.wait_for(
        lambda: all(cluster.replica_state(b, "safe", 0).log_end_offset >= hw for b in alive),
        20,
        "the follower to catch up",
    )
    images = {b: cluster.replica_state(b, "safe", 0).bytes_below(hw) for b in alive}
    assert len(set(images.values())) == 1, {b: len(i) for b, i in images.items()}


# --- bad clients -------------------------------------------------------------------------------

# ApiVersions v0: api_key 18, version 0, correlation id 1, client id "" (request header v1)
_API_VERSIONS_V0 = struct.pack(">hhih", 18, 0, 1, 0)


def _plaintext_request(address: str) -> bytes:
    """A Kafka ApiVersions request in plain bytes; what comes back before the close."""
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(struct.pack(">i", len(_API_VERSIONS_V0)) + _API_VERSIONS_V0)
        received = b""
        try:
            while chunk := sock.recv(4096):
                received += chunk
        except ConnectionResetError:
            pass
        return received


def _tls_request(address: str, certs: Path, client: str) -> Exception | None:
    """ApiVersions over TLS presenting ``client``.pem; the error it ends with, if any."""
    host, port = address.rsplit(":", 1)
    context = ssl.create_default_context(cafile=str(certs / "truststore.pem"))
    context.load_cert_chain(str(certs / f"{client}.pem"))
    try:
        with (
            socket.create_connection((host, int(port)), timeout=10) as raw,
            context.wrap_socket(raw, server_hostname=host) as sock,
        ):
            sock.sendall(struct.pack(">i", len(_API_VERSIONS_V0)) + _API_VERSIONS_V0)
            if not sock.recv(4):  # TLS 1.3: the refusal of the certificate comes here
                return ConnectionResetError("closed")
    except (ssl.SSLError, OSError) as exc:
        return exc
    return None


def _grpc_metadata(address: str, credentials: grpc.ChannelCredentials | None) -> grpc.StatusCode:
    channel = (
        grpc.insecure_channel(address)
        if credentials is None
        else grpc.secure_channel(address, credentials)
    )
    with channel:
        try:
            pb_grpc.MetadataStub(channel).Metadata(pb.MetadataRequest(), timeout=5)
        except grpc.RpcError as exc:
            return exc.code()
    return grpc.StatusCode.OK


def test_bad_clients_are_refused_with_one_log_line_and_the_broker_goes_on(
    cluster_factory: ClusterFactory, tls_certs: Path
) -> None:
    cluster = _tls_cluster(cluster_factory, tls_certs, n_brokers=1)
    broker = cluster.brokers[0]

    # The Kafka door: plaintext bytes and bad certificates end the connection
    assert _plaintext_request(broker.kafka_address) == b""
    for client in ("expired", "selfsigned", "wrongca", "not-yet-valid"):
        assert _tls_request(broker.kafka_address, tls_certs, client) is not None, client
    assert _tls_request(broker.kafka_address, tls_certs, "alice") is None

    def failures() -> list[dict[str, object]]:
        return _handshake_failures(cluster)

    cluster.wait_for(lambda: len(failures()) == 5, 10, "a log line per refused connection")
    reasons = " | ".join(str(e["reason"]) for e in failures())
    for expected in (
        "WRONG_VERSION_NUMBER",
        "certificate has expired",
        "self-signed certificate",
        "self-signed certificate in certificate chain",  # another CA's
        "certificate is not yet valid",
    ):
        assert expected.lower() in reasons.lower(), reasons
    assert all(str(e["client"]).startswith("127.0.0.1:") for e in failures())

    # The gRPC door (ssl.client.auth=required): no certificate, a bad one, or no TLS at all
    ca = (tls_certs / "truststore.pem").read_bytes()

    def credentials(user: str | None) -> grpc.ChannelCredentials:
        if user is None:
            return grpc.ssl_channel_credentials(ca)
        key = (tls_certs / f"{user}.key").read_bytes()
        return grpc.ssl_channel_credentials(ca, key, (tls_certs / f"{user}.crt").read_bytes())

    assert _grpc_metadata(broker.address, None) == grpc.StatusCode.UNAVAILABLE
    assert _grpc_metadata(broker.address, credentials(None)) == grpc.StatusCode.UNAVAILABLE
    assert _grpc_metadata(broker.address, credentials("wrongca")) == grpc.StatusCode.UNAVAILABLE
    assert _grpc_metadata(broker.address, credentials("expired")) == grpc.StatusCode.UNAVAILABLE
    assert _grpc_metadata(broker.address, credentials("alice")) == grpc.StatusCode.OK

    # A client that does not trust the broker's CA gives up on its own
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": broker.kafka_address,
            "security.protocol": "SSL",
            "ssl.ca.location": str(tls_certs / "other-ca.pem"),
            "message.timeout.ms": 3000,
        }
    )
    errors: list[Any] = []
    producer.produce("refused", b"x", callback=lambda e, m: errors.append(e))
    producer.flush(10)
    assert errors and errors[0] is not None

    # ... and the broker serves on
    assert broker.running
    _create(cluster, "after", replication_factor=1)
    assert _confluent_produce(cluster, _confluent_ssl(tls_certs, None), "after", [b"ok"]) == [b"ok"]


def test_a_broker_with_a_bad_key_store_stops_with_one_line(
    cluster_factory: ClusterFactory, tls_certs: Path, tmp_path: Path
) -> None:
    garbled = tmp_path / "garbled.pem"
    garbled.write_text("-----BEGIN PRIVATE KEY-----\nnot base64\n-----END PRIVATE KEY-----\n")
    for extra, message in (
        ({"ssl.keystore.location": str(tmp_path / "missing.pem")}, "cannot read"),
        ({"ssl.keystore.location": str(garbled)}, "no PEM certificate"),
        (
            {
                "ssl.keystore.location": str(tls_certs / "broker-encrypted.pem"),
                "ssl.key.password": "wrong",
            },
            "wrong ssl.key.password",
        ),
    ):
        cluster = cluster_factory(1, tls=tls_certs, start=False)
        cluster.start(0, extra=extra)
        process = cluster.brokers[0].process
        assert process is not None
        assert process.wait(30) == 1
        output = cluster.brokers[0].output_tail()
        assert message in output, output
        assert "Traceback" not in output, output


# --- in one process: the handshake, the principal, both event loops -----------------------------


def _listener_tls(certs: Path, **keys: str) -> ListenerTls:
    config = BrokerConfig.from_properties(
        {
            "broker.id": "1",
            "zookeeper.connect": "127.0.0.1:1",
            "listeners": "SSL://127.0.0.1:0",
            "inter.broker.listener.name": "SSL",
            "ssl.keystore.location": str(certs / "broker1.pem"),
            "ssl.truststore.location": str(certs / "truststore.pem"),
            **keys,
        }
    )
    return ListenerTls.load(config.listener_config("SSL"))


def _blocking_tls_client(port: int, certs: Path, client: str | None) -> bytes:
    """Send ``hello`` over TLS (presenting ``client``.pem, if any); every byte answered."""
    context = ssl.create_default_context(cafile=str(certs / "truststore.pem"))
    if client is not None:
        context.load_cert_chain(str(certs / f"{client}.pem"))
    received = b""
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname="localhost") as sock,
    ):
        sock.sendall(b"hello")
        while chunk := sock.recv(65536):
            received += chunk
    return received


_LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
    "asyncio": asyncio.new_event_loop,
    "uvloop": uvloop.new_event_loop,
}


@pytest.mark.parametrize("loop_name", sorted(_LOOPS))
@pytest.mark.parametrize(
    ("client", "rules", "principal"),
    [
        ("alice", "DEFAULT", "User:CN=alice,OU=eng,O=acme,C=US"),
        ("alice", "RULE:^CN=([^,]+),OU=eng.*$/$1/U,DEFAULT", "User:ALICE"),
        (None, "DEFAULT", str(ANONYMOUS)),
    ],
)
def test_kafka_door_handshake_gives_the_certificate_principal_and_a_tls_transport(
    tls_certs: Path, loop_name: str, client: str | None, rules: str, principal: str
) -> None:
    tls = _listener_tls(
        tls_certs, **{"ssl.client.auth": "requested", "ssl.principal.mapping.rules": rules}
    )
    seen: dict[str, object] = {}

    async def run() -> None:
        loop = asyncio.get_running_loop()

        async def serve(transport: asyncio.Transport, accepted: Accepted) -> None:
            reader = asyncio.StreamReader()
            protocol = asyncio.StreamReaderProtocol(reader)
            secured, who = await tls_handshake(transport, accepted, protocol, tls, timeout_s=10)
            seen["principal"] = str(who)
            writer = asyncio.StreamWriter(secured, protocol, reader, loop)
            secured.set_write_buffer_limits(high=1, low=0)  # as KafkaConnection does on TLS
            # what KafkaConnection._send_file looks at before it would use sendfile
            seen["ssl_object"] = writer.get_extra_info("ssl_object") is not None
            seen["request"] = await reader.readexactly(5)
            for _ in range(20):  # through TLS, in many records
                writer.write(b"x" * 10_000)
                await writer.drain()
            writer.close()

        tasks: list[asyncio.Task[None]] = []
        server = await loop.create_server(
            lambda: Accepted(lambda t, a: tasks.append(asyncio.ensure_future(serve(t, a)))),
            "127.0.0.1",
            0,
        )
        port = server.sockets[0].getsockname()[1]
        # A client on the same loop sends its first TLS bytes before the server's task runs:
        # under uvloop they are read before TLS takes over (Accepted keeps them), and a
        # client in another thread is served as well.
        context = ssl.create_default_context(cafile=str(tls_certs / "truststore.pem"))
        if client is not None:
            context.load_cert_chain(str(tls_certs / f"{client}.pem"))
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", port, ssl=context, server_hostname="localhost", ssl_handshake_timeout=10
        )
        writer.write(b"hello")
        seen["received"] = await asyncio.wait_for(reader.read(), 10)
        writer.close()
        seen["from a thread"] = (
            await asyncio.to_thread(_blocking_tls_client, port, tls_certs, client) == b"x" * 200_000
        )
        await asyncio.gather(*tasks)
        server.close()
        await server.wait_closed()

    with asyncio.Runner(loop_factory=_LOOPS[loop_name]) as runner:
        runner.run(run())
    assert seen == {
        "principal": principal,
        "ssl_object": True,
        "request": b"hello",
        "received": b"x" * 200_000,
        "from a thread": True,
    }


def test_grpc_door_session_has_the_certificate_principal(tls_certs: Path) -> None:
    tls = _listener_tls(
        tls_certs,
        **{
            "ssl.client.auth": "required",
            "ssl.principal.mapping.rules": "RULE:^CN=([^,]+),.*$/$1/L,DEFAULT",
        },
    )
    configure_listener("SSL", "SSL", tls)

    async def whoami(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
        session = grpc_session(context, "SSL")
        return f"{session.principal} {session.security_protocol} {session.client_host}".encode()

    async def run() -> list[bytes]:
        server = transport.aio_server(1 << 20)
        handler = grpc.method_handlers_generic_handler(
            "test.Who", {"Am": grpc.unary_unary_rpc_method_handler(whoami)}
        )
        server.add_generic_rpc_handlers((handler,))
        port = server.add_secure_port("127.0.0.1:0", grpc_tls.server_credentials(tls))
        await server.start()
        answers: list[bytes] = []
        for user in ("alice", "bob"):
            security = ClientSecurity(
                security_protocol="SSL",
                ssl_ca_location=str(tls_certs / "truststore.pem"),
                ssl_certificate_location=str(tls_certs / f"{user}.crt"),
                ssl_key_location=str(tls_certs / f"{user}.key"),
            )
            credentials = security.channel_credentials()
            async with transport.aio_channel(
                f"127.0.0.1:{port}", 1 << 20, credentials=credentials
            ) as channel:
                call: Any = channel.unary_unary("/test.Who/Am")
                answers.append(await call(b"", timeout=10))
        await server.stop(None)
        return answers

    assert asyncio.run(run()) == [b"User:alice SSL 127.0.0.1", b"User:bob SSL 127.0.0.1"]


@pytest.fixture(autouse=True)
def _forget_listeners() -> Iterator[None]:
    yield
    configure_listener("SSL", "PLAINTEXT", None)
