"""Smoke test of docker-compose.yml: the cluster comes up healthy and is reachable from the host
on the EXTERNAL listeners and between containers on the INTERNAL ones; it runs beside the
README's cluster (its default ports taken), and an ``up`` that fails leaves nothing behind."""

from __future__ import annotations

import socket
import time
import urllib.request

import grpc
import pytest

from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from tests.e2e.conftest import BROKER_IDS, PORTS, SERVICES, ComposeCluster, HostPorts

pytestmark = pytest.mark.e2e

# DescribeCluster from inside a broker's container, to another broker's INTERNAL listener.
_INTERNAL_PROBE = """
import grpc, sys
from minikafka.proto import minikafka_pb2 as pb, minikafka_pb2_grpc as pb_grpc
with grpc.insecure_channel(sys.argv[1]) as channel:
    r = pb_grpc.MetadataStub(channel).DescribeCluster(pb.DescribeClusterRequest(), timeout=5)
print(*sorted(f"{b.broker_id}={b.host}:{b.port}" for b in r.brokers))
"""


def test_every_service_is_healthy(compose_cluster: ComposeCluster) -> None:
    assert {s: compose_cluster.state(s) for s in SERVICES} == dict.fromkeys(SERVICES, "healthy")


def test_the_zookeeper_healthcheck_does_not_fill_its_log(compose_cluster: ComposeCluster) -> None:
    # ZooKeeper logs every four-letter word it serves; once healthy, the healthcheck (every
    # 2 s) no longer sends one.
    def srvr_lines() -> int:
        return compose_cluster.logs("zookeeper", tail=100_000).count("Processing srvr command")

    before = srvr_lines()
    time.sleep(7)
    assert compose_cluster.state("zookeeper") == "healthy"
    assert srvr_lines() == before


def _describe_from_host(
    cluster: ComposeCluster, broker_id: int
) -> tuple[pb.DescribeClusterResponse, pb.MetadataResponse]:
    address = f"127.0.0.1:{cluster.external_port(broker_id)}"
    with grpc.insecure_channel(address) as channel:
        stub = pb_grpc.MetadataStub(channel)
        described = stub.DescribeCluster(pb.DescribeClusterRequest(), timeout=5)
        metadata = stub.Metadata(pb.MetadataRequest(), timeout=5)
    return described, metadata


@pytest.mark.parametrize("broker_id", BROKER_IDS)
def test_host_reaches_every_broker(compose_cluster: ComposeCluster, broker_id: int) -> None:
    described, metadata = _describe_from_host(compose_cluster, broker_id)
    assert described.error_code == 0
    assert described.cluster_id
    assert described.controller_id in BROKER_IDS
    assert sorted(b.broker_id for b in described.brokers) == list(BROKER_IDS)
    assert sorted(b.node_id for b in metadata.brokers) == list(BROKER_IDS)
    assert metadata.controller_id == described.controller_id


# Kafka answers Metadata with the endpoints of the listener the request came in on: from the
# host (EXTERNAL), every broker is 127.0.0.1:<published port>, never brokerN:29092.
@pytest.mark.parametrize("broker_id", BROKER_IDS)
def test_host_sees_the_brokers_on_their_127_0_0_1_advertised_ports(
    compose_cluster: ComposeCluster, broker_id: int
) -> None:
    described, metadata = _describe_from_host(compose_cluster, broker_id)
    expected = {b: ("127.0.0.1", compose_cluster.external_port(b)) for b in BROKER_IDS}
    assert {b.broker_id: (b.host, b.port) for b in described.brokers} == expected
    assert {b.node_id: (b.host, b.port) for b in metadata.brokers} == expected


def test_brokers_reach_each_other_by_service_name(compose_cluster: ComposeCluster) -> None:
    answer = compose_cluster.exec("broker1", "python", "-c", _INTERNAL_PROBE, "broker2:29092")
    assert answer.split() == [f"{b}=broker{b}:29092" for b in BROKER_IDS]


def test_brokers_run_as_a_non_root_user(compose_cluster: ComposeCluster) -> None:
    for broker_id in BROKER_IDS:
        assert compose_cluster.exec(compose_cluster.service(broker_id), "id", "-u").strip() != "0"


def test_broker_logs_are_one_console_line_per_event(compose_cluster: ComposeCluster) -> None:
    # docker-compose.yml sets KAFKA_LOG_FORMAT=console: "time [level] event key=value ...".
    lines = [line for line in compose_cluster.logs("broker1", tail=500).splitlines() if line]
    started = [line for line in lines if line.split("]", 1)[-1].split()[:1] == ["broker_started"]]
    assert started, f"no broker_started line in {lines[:5]}"
    assert "broker_id=1" in started[0].split()
    assert not any(line.startswith("{") for line in lines)


def test_the_cluster_runs_beside_the_readme_cluster(
    compose_cluster: ComposeCluster, readme_ports: list[int]
) -> None:
    # Every README default port is held (by the session's stand-in sockets, or by a cluster
    # started with `docker compose up`), and the session's cluster is up all the same.
    for port in readme_ports:
        with socket.socket() as sock, pytest.raises(OSError):
            sock.bind(("127.0.0.1", port))
    assert not set(PORTS.all()) & set(readme_ports)
    assert {s: compose_cluster.state(s) for s in SERVICES} == dict.fromkeys(SERVICES, "healthy")
    # every kind of published port answers on the session's own host port
    for broker_id in BROKER_IDS:
        described, _ = _describe_from_host(compose_cluster, broker_id)
        assert described.error_code == 0
        url = f"http://127.0.0.1:{PORTS.metrics[broker_id]}/metrics"
        with urllib.request.urlopen(url, timeout=10) as answer:
            assert b"kafka_" in answer.read()
        kafka = socket.create_connection(("127.0.0.1", compose_cluster.kafka_port(broker_id)), 5)
        kafka.close()


def test_a_failed_up_removes_what_it_created(
    compose_cluster: ComposeCluster, docker_compose_command: str, docker_compose_file: str
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        free = HostPorts.free()
        ports = HostPorts({**free.grpc, 2: taken.getsockname()[1]}, free.kafka, free.metrics)
        failing = ComposeCluster(
            docker_compose_command, docker_compose_file, "minikafka-e2e-failed-up", ports
        )
        with pytest.raises(AssertionError, match="removed what it created") as caught:
            failing.up(["up -d"])
    assert "broker2" in str(caught.value)
    assert failing.leftovers() == {"containers": [], "volumes": [], "networks": []}
