"""`minikafka log-dirs`: option rules and kafka-log-dirs.sh's output, against a fake admin."""

from __future__ import annotations

import argparse
import io
import json
from collections.abc import Iterable
from typing import Any

from minikafka.cli import build_parser
from minikafka.client.admin import LogDirDescription, Node, ReplicaInfo
from minikafka.client.cli import log_dirs
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode, KafkaError, error_for_code


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["log-dirs", "--bootstrap-server", "127.0.0.1:9092", *argv])


class FakeAdmin:
    def __init__(self, answers: dict[int, dict[str, LogDirDescription] | KafkaError]) -> None:
        self.answers = answers
        self.asked: list[list[int]] = []

    def describe_cluster(self) -> Any:
        return argparse.Namespace(
            brokers=tuple(Node(b, "127.0.0.1", 9092 + b) for b in sorted(self.answers))
        )

    def describe_log_dirs(
        self, broker_ids: Iterable[int] | None = None
    ) -> dict[int, dict[str, LogDirDescription] | KafkaError]:
        wanted = sorted(broker_ids or self.answers)
        self.asked.append(wanted)
        return {b: self.answers[b] for b in wanted}


def run(admin: FakeAdmin, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    args = parse(*argv)
    problem = log_dirs.check_args(args)
    if problem is not None:
        return 1, "", problem
    status = log_dirs.execute(args, admin, out, err)  # type: ignore[arg-type]
    return status, out.getvalue(), err.getvalue()


def _dirs() -> dict[int, dict[str, LogDirDescription] | KafkaError]:
    t0, u0 = TopicPartition("t", 0), TopicPartition("u", 0)
    return {
        0: {
            "/data/0/a": LogDirDescription(
                None, {t0: ReplicaInfo(120, 0, False), u0: ReplicaInfo(5, 0, False)}
            ),
            "/data/0/b": LogDirDescription(None, {t0: ReplicaInfo(40, 3, True)}),
        },
        1: {
            "/data/1/a": LogDirDescription(
                error_for_code(ErrorCode.KAFKA_STORAGE_ERROR, "offline"), {}
            )
        },
    }


def test_describe_prints_kafkas_lines_and_json() -> None:
    status, out, err = run(FakeAdmin(_dirs()), "--describe")
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == "Querying brokers for log directories information"
    assert lines[1] == "Received log directory information from brokers 0,1"
    assert lines[2].startswith('{"version":1,"brokers":[{"broker":0,"logDirs":[{"logDir":')
    document = json.loads(lines[2])
    assert document["brokers"][0]["logDirs"][0] == {
        "logDir": "/data/0/a",
        "error": None,
        "partitions": [
            {"partition": "t-0", "size": 120, "offsetLag": 0, "isFuture": False},
            {"partition": "u-0", "size": 5, "offsetLag": 0, "isFuture": False},
        ],
    }
    assert document["brokers"][0]["logDirs"][1]["partitions"] == [
        {"partition": "t-0", "size": 40, "offsetLag": 3, "isFuture": True}
    ]
    assert document["brokers"][1]["logDirs"] == [
        {
            "logDir": "/data/1/a",
            "error": "org.apache.kafka.common.errors.KafkaStorageException",
            "partitions": [],
        }
    ]


def test_topic_list_and_broker_list() -> None:
    admin = FakeAdmin(_dirs())
    status, out, _ = run(admin, "--describe", "--broker-list", "0", "--topic-list", "u")
    assert status == 0 and admin.asked == [[0]]
    document = json.loads(out.splitlines()[2])
    assert [b["broker"] for b in document["brokers"]] == [0]
    assert [p["partition"] for d in document["brokers"][0]["logDirs"] for p in d["partitions"]] == [
        "u-0"
    ]


def test_bad_input_is_one_line_and_status_1() -> None:
    admin = FakeAdmin(_dirs())
    assert run(admin) == (1, "", "Command must include option '--describe'")
    status, out, err = run(admin, "--describe", "--broker-list", "0,x")
    assert status == 1 and "invalid --broker-list" in err
    status, out, err = run(admin, "--describe", "--broker-list", "0,7")
    assert status == 1 and out == "" and admin.asked == []
    assert err.strip() == (
        "ERROR: The given brokers do not exist from --broker-list: 7. Current existent brokers: 0,1"
    )


def test_a_broker_that_does_not_answer() -> None:
    answers = _dirs()
    answers[1] = error_for_code(ErrorCode.NETWORK_EXCEPTION, "broker 1: UNAVAILABLE")
    status, _, err = run(FakeAdmin(answers), "--describe")
    assert status == 1
    assert err.strip() == "Error while describing log dirs of broker 1: broker 1: UNAVAILABLE"
