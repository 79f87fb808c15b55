"""minikafka reassign-partitions: Kafka's JSON read and written, its refusals, and its output
for a fake admin client (no network)."""

from __future__ import annotations

import argparse
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from types import SimpleNamespace
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


def run(args: list[str], admin: object) -> tuple[int, str, str]:
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


class ThrottleAdmin:
    """foo-0 on brokers 0,1,2 of a 4-broker cluster; records the config writes."""

    def __init__(self) -> None:
        self.moving: dict[TopicPartition, PartitionReassignment] = {}
        self.topic_configs: list[tuple[str, dict[str, str | None]]] = []
        self.broker_configs: list[tuple[int | None, dict[str, str | None]]] = []

    def describe_cluster(self) -> Any:
        return SimpleNamespace(brokers=[SimpleNamespace(id=b) for b in range(4)])

    def describe_topics(self, topics: Sequence[str]) -> dict[str, Any]:
        partition = SimpleNamespace(partition=0, replicas=(0, 1, 2))
        return {"foo": SimpleNamespace(partitions=[partition])}

    def list_partition_reassignments(
        self, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, PartitionReassignment]:
        return dict(self.moving)

    def alter_partition_reassignments(
        self, requests: Mapping[TopicPartition, Sequence[int] | None]
    ) -> dict[TopicPartition, KafkaError | None]:
        self.moving = {TP: PartitionReassignment((1, 2, 3, 0), (3,), (0,))}
        return {tp: None for tp in requests}

    def incremental_alter_configs(self, topic: str, operations: Mapping[str, str | None]) -> None:
        self.topic_configs.append((topic, dict(operations)))

    def alter_broker_configs(
        self, broker_id: int | None, operations: Mapping[str, str | None]
    ) -> None:
        self.broker_configs.append((broker_id, dict(operations)))


def test_execute_with_a_throttle_sets_kafkas_keys_and_verify_clears_them(tmp_path: Any) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(tool.format_reassignment_json({TP: (1, 2, 3)}))
    admin = ThrottleAdmin()
    code, out, err = run(
        ["--execute", "--reassignment-json-file", str(plan), "--throttle", "200000"], admin
    )
    assert (code, err) == (0, "")
    assert "The inter-broker throttle limit was set to 200000 B/s" in out
    # The leaders' side: the current replicas; the followers' side: the one being added.
    assert admin.topic_configs == [
        (
            "foo",
            {
                "leader.replication.throttled.replicas": "0:0,0:1,0:2",
                "follower.replication.throttled.replicas": "0:3",
            },
        )
    ]
    rates = {
        "leader.replication.throttled.rate": "200000",
        "follower.replication.throttled.rate": "200000",
    }
    assert admin.broker_configs == [(b, rates) for b in (0, 1, 2, 3)]

    admin.topic_configs.clear()
    admin.broker_configs.clear()
    code, out, _ = run(["--verify", "--reassignment-json-file", str(plan)], admin)
    assert "still in progress" in out and not admin.broker_configs  # kept while it moves
    admin.moving = {}
    admin.describe_topics = lambda topics: {  # type: ignore[method-assign]
        "foo": SimpleNamespace(partitions=[SimpleNamespace(partition=0, replicas=(1, 2, 3))])
    }
    code, out, _ = run(["--verify", "--reassignment-json-file", str(plan)], admin)
    assert code == 0
    assert "Reassignment of partition foo-0 is completed." in out
    assert "Clearing broker-level throttles on brokers 0,1,2,3" in out
    assert "Clearing topic-level throttles on topic foo" in out
    cleared = dict.fromkeys(
        [
            "leader.replication.throttled.rate",
            "follower.replication.throttled.rate",
            "replica.alter.log.dirs.io.max.bytes.per.second",
        ]
    )
    assert admin.broker_configs == [(b, cleared) for b in range(4)]
    assert admin.topic_configs == [
        (
            "foo",
            {
                "leader.replication.throttled.replicas": None,
                "follower.replication.throttled.replicas": None,
            },
        )
    ]
