"""Growing the compose cluster: docker-compose.yml with docker-compose.broker4.yml, as the README
says. A 3-broker cluster holds a topic; broker4 is started beside it, and
``minikafka reassign-partitions`` moves the topic from brokers 1,2,3 to 4,2,3 (draining broker
1 of it). Then broker4 leads it, every record is read back, and the replicas hold the same
bytes.

Its own project (``minikafka-e2e-broker4``) on free host ports, taken down with ``down -v``
at the end (broker4's container and volume too), whether the test passed or not. The image is
the one the first e2e test builds (``up --build`` reuses it).
"""

from __future__ import annotations

import json
import shlex
import socket
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

import minikafka
from minikafka.cli import main as minikafka_main
from minikafka.client.admin import raise_first
from tests.e2e.conftest import _DOWN, BROKER_IDS, COMPOSE_FILE, REPO, ComposeCluster, HostPorts
from tests.e2e.faults import DATA_DIR, ReplicaFiles, read_partitions, replica_files, wait_for

PROJECT = "minikafka-e2e-broker4"
BROKER4_FILE = REPO / "docker-compose.broker4.yml"
PORTS = HostPorts.free()
TOPIC = "grow"
RECORDS = 500


def _free_ports(n: int) -> list[int]:
    with ExitStack() as held:
        socks = [held.enter_context(socket.socket()) for _ in range(n)]
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]


BROKER4_GRPC, BROKER4_KAFKA, BROKER4_METRICS = _free_ports(3)
BOOTSTRAP = ",".join(f"127.0.0.1:{PORTS.grpc[b]}" for b in BROKER_IDS)


@pytest.fixture(scope="module")
def grown(
    base_images: None, readme_ports: list[int], docker_compose_command: str
) -> Iterator[ComposeCluster]:
    compose = ComposeCluster(
        docker_compose_command,
        [str(COMPOSE_FILE), str(BROKER4_FILE)],
        PROJECT,
        PORTS,
        env={
            "MINIKAFKA_BROKER4_PORT": str(BROKER4_GRPC),
            "MINIKAFKA_BROKER4_KAFKA_PORT": str(BROKER4_KAFKA),
            "MINIKAFKA_BROKER4_METRICS_PORT": str(BROKER4_METRICS),
        },
    )
    try:
        compose.up([_DOWN, "up -d --build zookeeper broker1 broker2 broker3"])
        compose.wait_healthy(("zookeeper", "broker1", "broker2", "broker3"))
        yield compose
    finally:
        compose.compose(*shlex.split(_DOWN))
        assert not any(compose.leftovers().values()), compose.leftovers()


def test_broker4_joins_and_a_topic_moves_onto_it(
    grown: ComposeCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with minikafka.AdminClient(BOOTSTRAP, request_timeout_ms=10_000) as admin:
        raise_first(
            admin.create_topics([minikafka.NewTopic(TOPIC, replica_assignment={0: [1, 2, 3]})])
        )
    values = [b"record-%04d" % i for i in range(RECORDS)]
    with minikafka.Producer(BOOTSTRAP, acks="all", request_timeout_ms=10_000) as producer:
        for future in [producer.send(TOPIC, v, partition=0) for v in values]:
            future.result(timeout=60)

    grown.compose("up", "-d", "broker4")
    grown.wait_healthy(("broker4",))
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {"version": 1, "partitions": [{"topic": TOPIC, "partition": 0, "replicas": [4, 2, 3]}]}
        )
    )
    assert minikafka_main(
        ["reassign-partitions", "--bootstrap-server", BOOTSTRAP, "--execute",
         "--reassignment-json-file", str(plan)]
    ) == 0, capsys.readouterr().err  # fmt: skip

    def verified() -> bool:
        capsys.readouterr()
        minikafka_main(
            ["reassign-partitions", "--bootstrap-server", BOOTSTRAP, "--verify",
             "--reassignment-json-file", str(plan)]
        )  # fmt: skip
        return f"Reassignment of partition {TOPIC}-0 is completed." in capsys.readouterr().out

    wait_for(verified, 60, "the move to 4,2,3")
    with minikafka.AdminClient(BOOTSTRAP, request_timeout_ms=10_000) as admin:
        (partition,) = admin.describe_topics([TOPIC])[TOPIC].partitions
    assert partition.replicas == (4, 2, 3) and partition.leader == 4, partition

    # The data is there (read from broker4, the leader), the replicas agree, broker1 is drained.
    assert [v for _, v in read_partitions(TOPIC, 1, bootstrap=BOOTSTRAP)[0]] == values

    def agree() -> dict[int, ReplicaFiles] | None:
        files = {b: replica_files(grown, b, TOPIC, 0) for b in (2, 3, 4)}
        same = len({(f.log_end_offset, f.batches) for f in files.values()}) == 1
        return files if same else None

    files = wait_for(agree, 30, "replicas 4, 2, 3 identical")
    assert files[4].log_end_offset == RECORDS
    wait_for(
        lambda: f"{TOPIC}-0" not in grown.exec("broker1", "ls", DATA_DIR).split(),
        30,
        "broker1's replica removed",
    )
