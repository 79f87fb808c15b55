"""SASL_SSL on every listener of both doors at once, on a real 3-broker cluster: the gRPC
listener SECURE and the Kafka listener KAFKA_SECURE are both TLS and then SASL, and the
brokers' own connections (the followers' fetches over inter.broker.listener.name, the
controller's requests and controlled shutdown over control.plane.listener.name) make the TLS
handshake AND log in with SCRAM-SHA-512, whose credential is in ZooKeeper before any broker
starts. Followers replicate through the Kafka door (``replication="kafka"``: KAFKA_SECURE) or
the gRPC door (``"grpc"``: SECURE).

Every listener requires a client certificate and ``ssl.principal.mapping.rules`` maps none of
them: on SASL_SSL the principal is the SASL user's, as in Kafka, so nobody is refused.

Checked: confluent-kafka (SCRAM-SHA-256 over TLS) and the minikafka client (PLAIN over TLS on
the gRPC door) produce and consume; RF 3 acks=all, the leader killed: every acknowledged record
is still there once, the replicas agree; a controlled shutdown reaches the controller; no
broker ever refused a broker's login; no secret in any broker's log.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import confluent_kafka
import grpc
import pytest

from minikafka.broker.security.sasl.scram import (
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    credential_from_password,
)
from minikafka.client.admin import NewTopic
from minikafka.client.consumer.consumer import Consumer
from minikafka.client.producer.producer import Producer
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import raw_records
from minikafka.proto.common import TopicPartition
from minikafka.proto.sasl_channel import SaslCredentials
from tests.integration.cluster import Cluster
from tests.integration.conftest import ClusterFactory

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

BROKER_PASSWORD = "broker-secret-5d1e"
ALICE_PASSWORD = "alice-secret-0c7b"
CAROL_PASSWORD = "carol-secret-a94f"
SECRETS = (BROKER_PASSWORD, ALICE_PASSWORD, CAROL_PASSWORD)
_JAAS_PLAIN = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    f'username="broker" password="{BROKER_PASSWORD}" user_carol="{CAROL_PASSWORD}";'
)
_JAAS_SCRAM = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required "
    f'username="broker" password="{BROKER_PASSWORD}";'
)
# The harness's own login (its Metadata, admin and replica-state calls on the gRPC door).
HARNESS = SaslCredentials("SCRAM-SHA-512", "broker", BROKER_PASSWORD)


def _broker_props(
    cluster: Cluster, broker_id: int, certs: Path, replication: str
) -> dict[str, str]:
    broker = cluster.brokers[broker_id]
    props = {
        "listeners": f"SECURE://127.0.0.1:{broker.port}",
        "kafka.listeners": f"KAFKA_SECURE://127.0.0.1:{broker.kafka_port}",
        "listener.security.protocol.map": "SECURE:SASL_SSL,KAFKA_SECURE:SASL_SSL",
        "inter.broker.listener.name": "KAFKA_SECURE" if replication == "kafka" else "SECURE",
        "ssl.keystore.location": str(certs / f"broker{broker_id % 3 + 1}.pem"),
        "ssl.truststore.location": str(certs / "truststore.pem"),
        # Every client shows a certificate that no rule maps: on SASL_SSL the principal is the
        # SASL user's, so that refuses nobody (it would on SSL).
        "ssl.client.auth": "required",
        "ssl.principal.mapping.rules": "RULE:^CN=nobody$/nobody/",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "min.insync.replicas": "2",
    }
    if replication == "kafka":  # else the control plane is the inter-broker listener, SECURE
        props["control.plane.listener.name"] = "SECURE"
    for listener in ("secure", "kafka_secure"):
        props[f"listener.name.{listener}.plain.sasl.jaas.config"] = _JAAS_PLAIN
        props[f"listener.name.{listener}.scram-sha-512.sasl.jaas.config"] = _JAAS_SCRAM
    return props


def _secure_cluster(factory: ClusterFactory, certs: Path, replication: str) -> Cluster:
    cluster = factory(3, start=False, replication=replication, tls=certs, sasl=HARNESS)
    broker_512 = credential_from_password(SCRAM_SHA_512, BROKER_PASSWORD, 4096).to_string()
    alice_256 = credential_from_password(SCRAM_SHA_256, ALICE_PASSWORD, 4096).to_string()
    cluster.zk.update_user_configs(
        {
            "broker": lambda c: {**c, "SCRAM-SHA-512": broker_512},
            "alice": lambda c: {**c, "SCRAM-SHA-256": alice_256},
        }
    )
    for broker_id in cluster.brokers:
        # ``extra`` wins over the harness's SSL listeners
        cluster.write_config(broker_id, _broker_props(cluster, broker_id, certs, replication))
    cluster.start_all()
    cluster.wait_until_serving(timeout_s=60)
    return cluster


def _alice(certs: Path, **extra: Any) -> dict[str, Any]:
    return {
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": str(certs / "truststore.pem"),
        "ssl.certificate.location": str(certs / "alice.crt"),
        "ssl.key.location": str(certs / "alice.key"),
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": "alice",
        "sasl.password": ALICE_PASSWORD,
        **extra,
    }


def _carol(certs: Path) -> dict[str, str]:
    return {
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": str(certs / "truststore.pem"),
        "ssl.certificate.location": str(certs / "bob.crt"),
        "ssl.key.location": str(certs / "bob.key"),
        "sasl.mechanism": "PLAIN",
        "sasl.username": "carol",
        "sasl.password": CAROL_PASSWORD,
    }


def _every_rpc_without_a_token_is_refused(cluster: Cluster) -> int:
    """Every method of every service but Security (the login), streaming ones included, is
    refused UNAUTHENTICATED over TLS without a login, before its servicer runs."""
    credentials = cluster.client_security.channel_credentials()
    assert credentials is not None
    address = cluster.brokers[0].address
    checked = []
    with grpc.secure_channel(address, credentials) as secure:
        channel: Any = secure  # raw bytes both ways: no (de)serializer for grpc's stubs to type
        for service in pb.DESCRIPTOR.services_by_name.values():
            if service.name == "Security":
                continue
            for method in service.methods:
                path = f"/{service.full_name}/{method.name}"
                streams = (method.client_streaming, method.server_streaming)
                with pytest.raises(grpc.RpcError) as refused:
                    if streams == (False, False):
                        channel.unary_unary(path)(b"", timeout=10)
                    elif streams == (False, True):
                        list(channel.unary_stream(path)(b"", timeout=10))
                    elif streams == (True, False):
                        channel.stream_unary(path)(iter([b""]), timeout=10)
                    else:
                        list(channel.stream_stream(path)(iter([b""]), timeout=10))
                assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED, path
                checked.append(path)
        # RawData (proto/raw_records.py): not in the proto, the same interceptors
        for path, streaming in (
            (raw_records.PRODUCE, False),
            (raw_records.FETCH, False),
            (raw_records.PRODUCE_STREAM, True),
            (raw_records.FETCH_STREAM, True),
        ):
            with pytest.raises(grpc.RpcError) as refused:
                if streaming:
                    list(channel.stream_stream(path)(iter([b""]), timeout=10))
                else:
                    channel.unary_unary(path)(b"", timeout=10)
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED, path
            checked.append(path)
    assert "/minikafka.v1.Data/FetchStream" in checked
    assert "/minikafka.v1.Data/ProduceStream" in checked
    return len(checked)


def _create(cluster: Cluster, topic: str, partitions: int = 1) -> None:
    with cluster.admin() as admin:
        errors = admin.create_topics([NewTopic(topic, partitions, 3)])
    assert errors[topic] is None, errors
    cluster.wait_for(
        lambda: all(len(cluster.isr(topic, p)) == 3 for p in range(partitions)),
        30,
        f"{topic}'s ISRs to fill",
    )


def _group_lags_of_every_partition(cluster: Cluster, certs: Path) -> None:
    """A group commits on a topic whose three partitions have three different leaders: its
    coordinator's /metrics reports the lag of all three, the two it does not lead through its
    own logged-in ListOffsets calls to their leaders over the SASL_SSL control plane listener."""
    topic = "spread"
    _create(cluster, topic, partitions=3)
    leaders = {cluster.leader(topic, p) for p in range(3)}
    assert len(leaders) == 3, leaders
    producer = confluent_kafka.Producer(
        _alice(certs, **{"bootstrap.servers": cluster.kafka_bootstrap_servers, "acks": "all"})
    )
    for partition in range(3):
        for i in range(5):
            producer.produce(topic, f"{partition}-{i}".encode(), partition=partition)
    assert producer.flush(30) == 0
    assert len(_confluent_consume(cluster, certs, topic, 15)) == 15  # committed, group g-spread

    def lagged_partitions() -> set[str]:
        found: set[str] = set()
        for broker_id in cluster.running_ids():
            for (name, labels), _ in cluster.metrics(broker_id).items():
                label = dict(labels)
                if name == "kafka_consumergroup_group_lag" and label.get("group") == "g-spread":
                    found.add(label["partition"])
        return found

    cluster.wait_for(lambda: lagged_partitions() == {"0", "1", "2"}, 20, "every partition's lag")


def _confluent_consume(cluster: Cluster, certs: Path, topic: str, count: int) -> list[bytes]:
    consumer = confluent_kafka.Consumer(
        _alice(
            certs,
            **{
                "bootstrap.servers": cluster.kafka_bootstrap_servers,
                "group.id": f"g-{topic}",
                "auto.offset.reset": "earliest",
            },
        )
    )
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None:
                continue
            assert message.error() is None, message.error()
            got.append(message.value() or b"")
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return got


def _minikafka_round_trip(cluster: Cluster, certs: Path, topic: str) -> None:
    login = _carol(certs)
    values = [f"mk-{i}".encode() for i in range(30)]
    with Producer(cluster.bootstrap_servers, acks="all", security=login) as producer:
        offsets = [f.result(timeout=30).offset for f in [producer.send(topic, v) for v in values]]
    with Consumer(
        bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset="earliest", security=login
    ) as consumer:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, offsets[0])
        read: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(read) < len(values) and time.monotonic() < deadline:
            read += [r.value for r in consumer.poll(timeout_ms=500).get(tp, []) if r.value]
    assert read[: len(values)] == values


@pytest.mark.parametrize("replication", ["kafka", "grpc"])
def test_sasl_ssl_on_every_listener_clients_replication_and_control_plane(
    cluster_factory: ClusterFactory, tls_certs: Path, replication: str
) -> None:
    cluster = _secure_cluster(cluster_factory, tls_certs, replication)

    checked = _every_rpc_without_a_token_is_refused(cluster)
    cluster.wait_for(
        lambda: len(cluster.brokers[0].log_events("grpc.sasl_call_refused")) >= checked,
        10,
        "each refusal logged",
    )
    baseline = {
        b.broker_id: len(b.log_events("grpc.sasl_call_refused")) for b in cluster.brokers.values()
    }
    # Clients of both doors, each over TLS and logged in.
    _create(cluster, "mk")
    _minikafka_round_trip(cluster, tls_certs, "mk")
    _group_lags_of_every_partition(cluster, tls_certs)

    topic = "safe"
    _create(cluster, topic)
    producer = confluent_kafka.Producer(
        _alice(
            tls_certs,
            **{
                "bootstrap.servers": cluster.kafka_bootstrap_servers,
                "acks": "all",
                "linger.ms": 0,
                "message.send.max.retries": 20,
                "retry.backoff.ms": 200,
            },
        )
    )
    acknowledged: list[bytes] = []
    lock = threading.Lock()

    def delivered(error: Any, message: Any) -> None:
        if error is None:
            with lock:
                acknowledged.append(message.value())

    for i in range(200):
        producer.produce(topic, f"before-{i}".encode(), partition=0, on_delivery=delivered)
    assert producer.flush(60) == 0
    leader = cluster.leader(topic, 0)
    cluster.kill(leader)
    for i in range(200):
        producer.produce(topic, f"after-{i}".encode(), partition=0, on_delivery=delivered)
    assert producer.flush(90) == 0
    assert len(acknowledged) == 400
    assert cluster.leader(topic, 0) not in (leader, -1)

    cluster.start(leader)
    cluster.wait_until_serving(timeout_s=60)
    cluster.wait_for(lambda: len(cluster.isr(topic, 0)) == 3, 60, "the old leader back in ISR")
    values = [r.value for r in cluster.fetch_all(topic, 0)]
    assert len(values) == len(set(values))  # idempotent producer: each record once
    assert set(acknowledged) <= set(values)
    assert _confluent_consume(cluster, tls_certs, topic, len(values)) == values
    cluster.wait_for(
        lambda: (
            len({cluster.replica_state(b, topic, 0).log_end_offset for b in cluster.brokers}) == 1
        ),
        30,
        "the replicas to agree",
    )
    states = [cluster.replica_state(b, topic, 0) for b in cluster.brokers]
    end = states[0].log_end_offset
    assert len({s.bytes_below(end) for s in states}) == 1

    # Controlled shutdown of a broker that is not the controller: over SECURE, TLS + SCRAM.
    follower = next(b for b in cluster.brokers if b != cluster.controller_id())
    assert cluster.stop(follower) == 0
    events = [e["event"] for e in cluster.brokers[follower].log_events()]
    assert "controlled_shutdown_succeeded" in events, events[-20:]

    for broker in cluster.brokers.values():
        # No broker refused a login or a call (the brokers' own included) on either door,
        # and no handshake failed.
        failed_logins = [
            e
            for e in broker.log_events("kafka.connection_closed")
            if e.get("reason") == "SASL authentication failed"
        ]
        assert failed_logins == []
        assert broker.log_events("kafka.tls_handshake_failed") == []
        refused = [
            e["method"]
            for e in broker.log_events("grpc.sasl_call_refused")[baseline[broker.broker_id] :]
            # a restarted broker forgot every token: the harness's Metadata calls met that
            if not str(e["method"]).startswith("/minikafka.v1.Metadata/")
        ]
        assert refused == []
        output = broker.output_file.read_text(errors="replace")
        assert not any(secret in output for secret in SECRETS)
