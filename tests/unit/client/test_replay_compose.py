"""``minikafka replay --bootstrap-server``: the docker control of a compose cluster's brokers
(compose_brokers.py) on a fake ``docker`` that answers from a table of containers, the casting
of a scenario's brokers onto a running cluster, and the scenarios refused with their reason.
No network, no docker.
"""

from __future__ import annotations

import argparse
import base64
import json
from collections.abc import Sequence
from typing import Any

import pytest

from minikafka.client.cli import replay
from minikafka.client.cli.replay.compose_brokers import (
    ComposeBrokers,
    ComposeError,
    default_project,
)
from minikafka.client.cli.replay.control import Unsupported
from minikafka.client.cli.replay.runner import cast_for
from minikafka.client.cli.replay.scenarios import SCENARIOS
from minikafka.proto.records import encode_batch

ADDRESSES = {1: "127.0.0.1:9092", 2: "127.0.0.1:9093", 3: "127.0.0.1:9094"}


def _container(
    service: str,
    broker_id: int | None,
    *,
    project: str = "minikafka",
    status: str = "running",
    oneoff: bool = False,
    port: str = "",
) -> dict[str, Any]:
    env = ["PATH=/usr/bin", "KAFKA_LISTENERS=INTERNAL://:29092,EXTERNAL://:9092"]
    env.append("KAFKA_CONTROL_PLANE_LISTENER_NAME=INTERNAL")
    if broker_id is not None:
        env.append(f"KAFKA_BROKER_ID={broker_id}")
    return {
        "Id": f"id-{service}",
        "Name": f"/{project}_{service}_1",
        "Config": {
            "Env": env,
            "Labels": {
                "com.docker.compose.project": project,
                "com.docker.compose.service": service,
                "com.docker.compose.oneoff": "True" if oneoff else "False",
            },
        },
        "State": {"Status": status},
        "HostConfig": {"PortBindings": {"9101/tcp": [{"HostIp": "127.0.0.1", "HostPort": port}]}},
        "NetworkSettings": {
            "Networks": {f"{project}_default": {"IPAddress": f"172.18.0.{service[-1]}"}}
        },
    }


class FakeDocker:
    """``docker ps -a -q --filter label=...project=P``, ``docker inspect`` and the faults, on
    a table of containers; every call recorded; ``fail`` names verbs that fail."""

    def __init__(self, containers: Sequence[dict[str, Any]], fail: Sequence[str] = ()) -> None:
        self.containers = {c["Id"]: c for c in containers}
        self.calls: list[list[str]] = []
        self.fail = set(fail)
        self.exec_output = b""

    def __call__(self, args: Sequence[str]) -> str:
        args = list(args)
        self.calls.append(args)
        verb = args[0]
        if verb in self.fail:
            raise ComposeError(f"docker {verb}: refused")
        if verb == "ps":
            project = args[-1].rpartition("=")[2]
            return "".join(
                f"{i}\n"
                for i, c in self.containers.items()
                if c["Config"]["Labels"]["com.docker.compose.project"] == project
            )
        if verb == "inspect":
            return json.dumps([self.containers[i] for i in args[1:]])
        if verb == "exec":
            return base64.encodebytes(self.exec_output).decode()
        return args[-1] + "\n"

    def faults(self) -> list[tuple[str, ...]]:
        return [tuple(c) for c in self.calls if c[0] not in ("ps", "inspect")]


def _compose(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        _container("zookeeper", None),
        _container("broker1", 1),
        _container("broker2", 2),
        _container("broker3", 3),
        *extra,
    ]


def test_discover_matches_containers_to_broker_ids_by_their_env() -> None:
    docker = FakeDocker(_compose(_container("broker9", 9, oneoff=True)))  # `compose run`
    brokers = ComposeBrokers.discover("minikafka", ADDRESSES, docker=docker)
    assert brokers.broker_ids == [1, 2, 3]
    assert {b: c.service for b, c in brokers.containers.items()} == {
        1: "broker1",
        2: "broker2",
        3: "broker3",
    }
    assert brokers.address(2) == "127.0.0.1:9093"
    assert brokers.control_address(2) == "172.18.0.2:29092"  # the INTERNAL (control plane) one
    assert docker.calls[0] == [
        "ps",
        "-a",
        "-q",
        "--no-trunc",
        "--filter",
        "label=com.docker.compose.project=minikafka",
    ]


def test_discover_falls_back_to_the_published_port_of_the_metadata_address() -> None:
    docker = FakeDocker(
        [
            _container("kafka-a", None, port="9092"),
            _container("kafka-b", None, port="9093"),
            _container("kafka-c", None, port="9094"),
        ]
    )
    brokers = ComposeBrokers.discover("minikafka", ADDRESSES, docker=docker)
    assert {b: c.service for b, c in brokers.containers.items()} == {
        1: "kafka-a",
        2: "kafka-b",
        3: "kafka-c",
    }


def test_discover_refuses_another_project_a_different_cluster_and_a_stopped_broker() -> None:
    with pytest.raises(ComposeError, match="project 'other' has no broker containers"):
        ComposeBrokers.discover("other", ADDRESSES, docker=FakeDocker(_compose()))
    with pytest.raises(ComposeError, match=r"has brokers \[1, 2, 3\].*has \[1, 2, 4\]"):
        ComposeBrokers.discover(
            "minikafka", {1: "a:1", 2: "a:2", 4: "a:4"}, docker=FakeDocker(_compose())
        )
    stopped = _compose()
    stopped[2] = _container("broker2", 2, status="exited")
    with pytest.raises(ComposeError, match="broker2 is exited"):
        ComposeBrokers.discover("minikafka", ADDRESSES, docker=FakeDocker(stopped))


def test_faults_are_docker_commands_and_close_puts_back_what_was_changed() -> None:
    docker = FakeDocker(_compose())
    brokers = ComposeBrokers.discover("minikafka", ADDRESSES, docker=docker)
    brokers.pause(2)
    brokers.kill(1)
    brokers.stop(3)
    brokers.start(1)  # started again by the scenario: close leaves it alone
    assert docker.faults() == [
        ("pause", "id-broker2"),
        ("kill", "id-broker1"),
        ("stop", "-t", "30", "id-broker3"),
        ("start", "id-broker1"),
    ]
    docker.calls.clear()
    brokers.close()
    assert docker.faults() == [("unpause", "id-broker2"), ("start", "id-broker3")]
    docker.calls.clear()
    brokers.close()  # nothing left to put back
    assert docker.faults() == []


def test_stop_of_a_paused_broker_unpauses_it_first_and_close_starts_it() -> None:
    docker = FakeDocker(_compose())
    brokers = ComposeBrokers.discover("minikafka", ADDRESSES, docker=docker)
    brokers.pause(2)
    brokers.stop(2)
    brokers.close()
    assert docker.faults() == [
        ("pause", "id-broker2"),
        ("unpause", "id-broker2"),
        ("stop", "-t", "30", "id-broker2"),
        ("start", "id-broker2"),
    ]


def test_close_tries_every_container_and_names_the_ones_that_failed() -> None:
    docker = FakeDocker(_compose())
    brokers = ComposeBrokers.discover("minikafka", ADDRESSES, docker=docker)
    brokers.pause(1)
    brokers.kill(2)
    docker.fail = {"unpause"}
    with pytest.raises(ComposeError, match="could not put the cluster back: docker unpause"):
        brokers.close()
    assert ("start", "id-broker2") in docker.faults()


def test_a_failed_kill_is_still_started_again_at_close() -> None:
    docker = FakeDocker(_compose(), fail=["kill"])
    brokers = ComposeBrokers.discover("minikafka", ADDRESSES, docker=docker)
    with pytest.raises(ComposeError):
        brokers.kill(3)
    docker.fail = set()
    brokers.close()
    assert docker.faults()[-1] == ("start", "id-broker3")


def test_replica_records_are_the_segment_files_read_through_docker_exec() -> None:
    docker = FakeDocker(_compose())
    brokers = ComposeBrokers.discover(
        "minikafka", ADDRESSES, docker=docker, log_dirs=["/data/a", "/data/b"]
    )
    first = encode_batch([(0, None, b"m1", ()), (0, None, b"m2", ())])
    second = bytearray(encode_batch([(0, None, b"m3", ())]))
    second[0:8] = (2).to_bytes(8, "big")  # its base offset, as the leader assigned it
    docker.exec_output = first + bytes(second) + b"\x00\x00torn"
    assert brokers.replica_records(2, "orders", 0) == [(0, b"m1"), (1, b"m2"), (2, b"m3")]
    (call,) = [c for c in docker.calls if c[0] == "exec"]
    assert call[:4] == ["exec", "id-broker2", "sh", "-c"]
    assert "/data/a/orders-0 /data/b/orders-0" in call[4]
    with pytest.raises(Unsupported):
        brokers.lose_unflushed_tail(2, "orders", 0, 1)


def test_default_project_is_composes_name_for_the_directory() -> None:
    assert default_project("main") == "main"
    assert default_project("MiniKafka.git") == "minikafkagit"
    assert default_project("my_kafka-2") == "my_kafka-2"


@pytest.mark.parametrize(
    ("first", "controller", "cast"),
    [(3, 3, (1, 2, 3)), (3, 1, (2, 3, 1)), (1, 2, (2, 1, 3)), (3, -1, (1, 2, 3))],
)
def test_cast_puts_the_scenarios_controller_on_the_clusters(
    first: int, controller: int, cast: tuple[int, ...]
) -> None:
    assert cast_for(first, controller, [3, 1, 2]) == cast


def test_what_runs_on_a_running_cluster() -> None:
    runnable = {
        f"{s.name} {v.name}".strip()
        for s in SCENARIOS.values()
        for v in s.variants
        if not s.needs_own_brokers(v)
    }
    assert runnable == {
        "controller-failover",
        "isr",
        "min-isr",
        "unclean on",
        "unclean off",
        "preferred",
    }


@pytest.mark.parametrize(
    ("scenario", "reason"),
    [
        ("lost-ack", "test-only key minikafka.test.follower.truncation"),
        ("diverge", "a power cut"),
    ],
)
def test_a_scenario_that_needs_its_own_brokers_is_refused_in_one_line(
    scenario: str, reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = argparse.ArgumentParser()
    replay.add_arguments(parser)
    args = parser.parse_args([scenario, "--bootstrap-server", "127.0.0.1:1"])
    assert replay.run(args) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "cannot run on a running cluster" in err and reason in err


def test_the_epoch_variant_of_lost_ack_says_why_too(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    replay.add_arguments(parser)
    args = parser.parse_args(["lost-ack", "--variant", "epoch", "--bootstrap-server", "h:1"])
    assert replay.run(args) == 2
    assert "replica.fetch.wait.max.ms=3000" in capsys.readouterr().err
