"""What the client and its tools tell a user when the cluster cannot take their records:
NOT_ENOUGH_REPLICAS from the broker, and bootstrap servers nobody can reach."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time

import pytest

from minikafka.client.admin import NewTopic, raise_first
from minikafka.client.producer.producer import Producer
from minikafka.proto.errors import ErrorCode, KafkaError
from tests.integration.cluster import REPO_ROOT
from tests.integration.conftest import ClusterFactory

pytestmark = pytest.mark.integration


def minikafka(*argv: str, stdin: str = "") -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "minikafka", *argv],
        cwd=REPO_ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return result, time.monotonic() - start


def test_not_enough_replicas_is_the_error_a_producer_reports(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(n_brokers=3, overrides={"min.insync.replicas": "2"})
    with cluster.admin() as admin:
        raise_first(admin.create_topics([NewTopic("orders", 1, 3)]))
    cluster.wait_for(lambda: len(cluster.isr("orders", 0)) == 3, what="a full ISR")
    leader = cluster.leader("orders", 0)
    for broker_id in (b for b in range(3) if b != leader):
        cluster.kill(broker_id)
    cluster.wait_for(lambda: cluster.isr("orders", 0) == (leader,), what="the ISR to shrink")

    # retried (NOT_ENOUGH_REPLICAS is retriable) until delivery.timeout.ms, then reported
    with Producer(
        cluster.bootstrap_servers, acks="all", request_timeout_ms=2_000, delivery_timeout_ms=3_000
    ) as producer:
        future = producer.send("orders", b"order-1")
        with pytest.raises(KafkaError) as caught:
            future.result(timeout=30)
    assert caught.value.code == ErrorCode.NOT_ENOUGH_REPLICAS, caught.value
    assert "min.insync.replicas (2)" in str(caught.value)
    assert "delivery.timeout.ms" in str(caught.value)

    produced, _ = minikafka(
        "produce", "--bootstrap-server", cluster.bootstrap_servers, "--topic", "orders",
        "--producer-property", "request.timeout.ms=2000",
        "--producer-property", "delivery.timeout.ms=3000",
        stdin="order-2\n",
    )  # fmt: skip
    assert produced.returncode == 1
    lines = produced.stderr.splitlines()
    assert len(lines) == 1, produced.stderr
    assert lines[0].startswith(
        "ERROR Error when sending message to topic orders with key: null, value: 7 bytes with "
        "error: NOT_ENOUGH_REPLICAS (19): "
    ), lines[0]


def closed_address() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


def test_tools_say_at_once_that_no_bootstrap_server_can_be_reached() -> None:
    address = closed_address()
    reason = f"cannot connect to any bootstrap server: {address} (Connection refused)"
    bootstrap = ("--bootstrap-server", address)

    listed, elapsed = minikafka("topics", *bootstrap, "--list")
    assert (listed.returncode, listed.stdout) == (1, ""), listed.stderr
    assert listed.stderr == f"Error while executing topic command : {reason}\n"
    assert elapsed < 10

    produced, elapsed = minikafka("produce", *bootstrap, "--topic", "orders", stdin="hello\n")
    assert produced.returncode == 1
    assert produced.stderr == (
        "ERROR Error when sending message to topic orders with key: null, value: 5 bytes with "
        f"error: NETWORK_EXCEPTION (13): {reason}\n"
    )
    assert elapsed < 10

    for group in ([], ["--group", "readers"]):
        consumed, elapsed = minikafka("consume", *bootstrap, "--topic", "orders", *group)
        assert consumed.returncode == 1, (group, consumed.stderr)
        assert consumed.stderr.splitlines() == [
            "ERROR Error processing message, terminating consumer process: "
            f"NETWORK_EXCEPTION (13): {reason}",
            "Processed a total of 0 messages",
        ], group
        assert elapsed < 10, group


def test_a_producer_creates_a_missing_topic_when_the_brokers_allow_it(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(n_brokers=1, overrides={"num.partitions": "2"})
    with Producer(cluster.bootstrap_servers, acks="all") as producer:
        metadata = producer.send("made-on-first-use", b"first").result(timeout=30)
    assert metadata.offset == 0
    created = cluster.zk.get_topic("made-on-first-use")
    assert created is not None and len(created.value.partitions) == 2


def test_a_produce_to_a_missing_topic_fails_fast_when_the_brokers_do_not_create_it(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(n_brokers=1, overrides={"auto.create.topics.enable": "false"})
    start = time.monotonic()
    with (
        Producer(cluster.bootstrap_servers, acks="all") as producer,  # max.block.ms 60 s
        pytest.raises(KafkaError) as caught,
    ):
        producer.send("missing", b"lost?").result(timeout=30)
    assert caught.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, caught.value
    assert "auto.create.topics.enable=false" in str(caught.value)
    assert time.monotonic() - start < 10
    assert cluster.zk.get_topic("missing") is None

    produced, elapsed = minikafka(
        "produce", "--bootstrap-server", cluster.bootstrap_servers, "--topic", "missing",
        stdin="hello\n",
    )  # fmt: skip
    assert produced.returncode == 1
    assert produced.stderr.splitlines() == [
        "ERROR Error when sending message to topic missing with key: null, value: 5 bytes with "
        "error: UNKNOWN_TOPIC_OR_PARTITION (3): topic missing does not exist, and the brokers "
        "do not create topics on first use (auto.create.topics.enable=false)"
    ]
    assert elapsed < 10


def test_a_send_to_a_partition_added_a_moment_ago_waits_for_the_metadata_that_has_it(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(n_brokers=1)
    with cluster.admin() as admin:
        raise_first(admin.create_topics([NewTopic("growing", 1, 1)]))
        with Producer(cluster.bootstrap_servers, acks="all") as producer:  # max.block.ms 60 s
            assert producer.send("growing", b"zero", partition=0).result(timeout=30).offset == 0
            assert admin.create_partitions({"growing": 3}) == {"growing": None}
            # The producer's metadata still says one partition: it refreshes rather than fail.
            assert producer.send("growing", b"two", partition=2).result(timeout=30).partition == 2

        with Producer(cluster.bootstrap_servers, acks="all", max_block_ms=2_000) as producer:
            start = time.monotonic()
            with pytest.raises(KafkaError) as beyond:
                producer.send("growing", b"never", partition=5)
            assert beyond.value.code == ErrorCode.REQUEST_TIMED_OUT
            # after the part of max.block.ms the topic's first metadata left
            assert re.search(
                r"partition 5 of topic growing with partition count 3 is not present in "
                r"metadata after (1\d\d\d|2000) ms",
                str(beyond.value),
            ), beyond.value
            assert 1.9 < time.monotonic() - start < 10

            with pytest.raises(KafkaError) as negative:
                producer.send("growing", b"never", partition=-1)
            assert negative.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_tools_given_a_port_that_is_not_grpc_say_which_listener_it_is_within_a_second(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(n_brokers=1)
    broker = cluster.brokers[0]
    kafka = broker.kafka_address
    metrics = f"127.0.0.1:{broker.metrics_port}"
    expected = {
        kafka: f"{kafka} is a Kafka-protocol listener (use the gRPC port, from the broker's "
        "listeners, not kafka.listeners; Kafka clients such as kcat use this one)",
        metrics: f"{metrics} is an HTTP/1 listener, not a minikafka gRPC listener "
        "(a broker's metrics.listener?): use the port of the broker's listeners",
    }
    for address, reason in expected.items():
        listed, elapsed = minikafka("topics", "--bootstrap-server", address, "--list")
        assert (listed.returncode, listed.stdout) == (1, ""), listed.stderr
        assert listed.stderr == f"Error while executing topic command : {reason}\n"
        # the interpreter's start and imports are most of it; the probes take milliseconds
        assert elapsed < 8, elapsed

        consumed, _ = minikafka("consume", "--bootstrap-server", address, "--topic", "t")
        assert consumed.returncode == 1
        assert consumed.stderr.splitlines() == [
            f"ERROR Error processing message, terminating consumer process: "
            f"NETWORK_EXCEPTION (13): {reason}",
            "Processed a total of 0 messages",
        ]
    # The gRPC port still works, and a bootstrap list with one good address is not refused.
    listed, _ = minikafka("topics", "--bootstrap-server", f"{kafka},{broker.address}", "--list")
    assert listed.returncode == 0, listed.stderr


def test_console_consumer_on_a_missing_topic_fails_at_once(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(n_brokers=1)  # auto.create.topics.enable=true: producers only
    for group in ([], ["--group", "readers"]):
        consumed, elapsed = minikafka(
            "consume", "--bootstrap-server", cluster.bootstrap_servers, "--topic", "nope", *group
        )
        assert consumed.returncode == 1, consumed.stderr
        assert consumed.stderr.splitlines() == [
            "ERROR Error processing message, terminating consumer process: "
            "UNKNOWN_TOPIC_OR_PARTITION (3): Topic nope does not exist",
            "Processed a total of 0 messages",
        ], group
        assert elapsed < 15, elapsed
    assert cluster.zk.get_topic("nope") is None
