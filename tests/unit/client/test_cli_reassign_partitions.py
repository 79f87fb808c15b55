"""minikafka reassign-partitions: Kafka's JSON read and written, its refusals, and its output
for a fake admin client (no network)."""

from __future__ import annotations

import argparse
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

import pytest

from minikafka.client.admin import PartitionReassignment
from minikafka.client.cli import reassign_partitions as tool
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode, KafkaError, error_for_code

TP = TopicPartition("foo", 0)


def test_the_reassignment_json_round_trips() -> None:
    text = tool.format_reassignment_json({TP: (1, 2, 3), TopicPartition("bar", 1): (3, 1)})
    assert text == (
        '{"version":1,"partitions":[{"topic":"bar","partition":1,"replicas":[3,1],'
        '"log_dirs":["any","any"]},{"topic":"foo","partition":0,"replicas":[1,2,3],'
        '"log_dirs":["any","any","any"]}]}'
    )
    assert tool.parse_reassignment_json(text) == {TopicPartition("bar", 1): [3, 1], TP: [1, 2, 3]}


def test_log_dirs_other_than_any_are_replica_moves() -> None:
    text = json.dumps(
        {
            "version": 1,
            "partitions": [
                {"topic": "foo", "partition": 0, "replicas": [1, 2], "log_dirs": ["/d/b", "any"]}
            ],
        }
    )
    assert tool.parse_reassignment_json(text) == {TP: [1, 2]}
    assert tool.parse_replica_log_dirs(text) == {("foo", 0, 1): "/d/b"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "Unable to parse the reassignment json file"),
        ('{"version":2,"partitions":[]}', "Not supported version field value 2"),
        ('{"version":1,"partitions":[]}', "Partition reassignment list cannot be empty"),
        (
            '{"partitions":[{"topic":"foo","partition":0,"replicas":[1]},'
            '{"topic":"foo","partition":0,"replicas":[2]}]}',
            "Partition reassignment contains duplicate topic partitions: foo-0",
        ),
        (
            '{"partitions":[{"topic":"foo","partition":0,"replicas":[1,2,1]}]}',
            "Partition replica lists may not contain duplicate entries: foo-0 contains "
            "multiple entries for 1",
        ),
        (
            '{"partitions":[{"topic":"foo","partition":0,"replicas":[1,2],"log_dirs":["any"]}]}',
            "Size of replicas list [1, 2] is different from size of log dirs list ['any'] for "
            "partition foo-0",
        ),
        ('{"partitions":[{"topic":"foo","partition":"0","replicas":[1]}]}', "Unable to parse"),
    ],
)
def test_bad_reassignment_json_is_one_line(text: str, message: str) -> None:
    with pytest.raises(tool.UsageError) as refused:
        tool.parse_reassignment_json(text)
    assert str(refused.value).startswith(message)


def test_topics_to_move() -> None:
    assert tool.parse_topics_to_move_json(
        '{"version":1,"topics":[{"topic":"a"},{"topic":"b"}]}'
    ) == [
        "a",
        "b",
    ]
    with pytest.raises(tool.UsageError, match="duplicate entries: a"):
        tool.parse_topics_to_move_json('{"topics":[{"topic":"a"},{"topic":"a"}]}')


class FakeAdmin:
    def __init__(self) -> None:
        self.moves: dict[TopicPartition, PartitionReassignment] = {
            TP: PartitionReassignment((1, 2, 3, 0), (3,), (0,)),
            TopicPartition("foo", 1): PartitionReassignment((2, 1), (), (0,)),
        }
        self.cancelled: list[Mapping[TopicPartition, Sequence[int] | None]] = []

    def list_partition_reassignments(
        self, partitions: Iterable[TopicPartition] | None = None, **_: Any
    ) -> dict[TopicPartition, PartitionReassignment]:
        wanted = set(partitions) if partitions is not None else set(self.moves)
        return {tp: r for tp, r in self.moves.items() if tp in wanted}

    def alter_partition_reassignments(
        self, requests: Mapping[TopicPartition, Sequence[int] | None], **_: Any
    ) -> dict[TopicPartition, KafkaError | None]:
        self.cancelled.append(requests)
        return {
            tp: None if tp == TP else error_for_code(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "no")
            for tp in requests
        }


def run(args: list[str], admin: FakeAdmin) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser()
    tool.add_arguments(parser)
    parsed = parser.parse_args(["--bootstrap-server", "x:1", *args])
    problem = tool.check_args(parsed)
    if problem is not None:
        return 1, "", problem
    out, err = io.StringIO(), io.StringIO()
    code = tool.execute(parsed, cast(Any, admin), out, err)
    return code, out.getvalue(), err.getvalue()


def test_list_prints_kafkas_lines() -> None:
    code, out, _ = run(["--list"], FakeAdmin())
    assert (code, out) == (
        0,
        "Current partition reassignments:\n"
        "foo-0: replicas: 1,2,3,0. adding: 3. removing: 0.\n"
        "foo-1: replicas: 2,1. removing: 0.\n",
    )
    admin = FakeAdmin()
    admin.moves = {}
    assert run(["--list"], admin)[1] == "No partition reassignments found.\n"


def test_cancel_errors_are_kafkas_and_exit_1(tmp_path: Any) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(
        tool.format_reassignment_json({TP: (1, 2, 3), TopicPartition("foo", 1): (2, 1)})
    )
    admin = FakeAdmin()
    admin.describe_cluster = lambda: None  # type: ignore[attr-defined]
    code, _, err = run(
        ["--cancel", "--reassignment-json-file", str(plan), "--preserve-throttles"], admin
    )
    assert code == 1
    assert err == "Error cancelling partition reassignment for:\nfoo-1: no\n"
    assert admin.cancelled == [{TP: None, TopicPartition("foo", 1): None}]


def test_options_that_do_not_fit() -> None:
    assert run(["--list", "--verify"], FakeAdmin())[2].startswith(
        "Command must include exactly one"
    )
    assert (
        run(["--verify"], FakeAdmin())[2] == 'Missing required argument "[reassignment-json-file]"'
    )
    assert "throttle" in run(["--list", "--throttle", "5"], FakeAdmin())[2]
