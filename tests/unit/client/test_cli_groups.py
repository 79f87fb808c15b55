"""`minikafka groups`: option rules, Kafka's tables, resets, against a fake admin."""

from __future__ import annotations

import argparse
import io
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime

import pytest

from minikafka.cli import build_parser
from minikafka.client.admin import (
    ConsumerGroupDescription,
    ConsumerGroupListing,
    ListOffsetsResultInfo,
    MemberDescription,
    PartitionInfo,
    TopicDescription,
)
from minikafka.client.cli import groups
from minikafka.client.cli.groups import CommandError, PartitionAssignmentState, parse_datetime
from minikafka.proto.common import Node, OffsetAndMetadata, TopicPartition
from minikafka.proto.errors import ErrorCode, KafkaError, error_for_code

COORDINATOR = Node(1, "127.0.0.1", 9093)


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["groups", "--bootstrap-server", "127.0.0.1:9092", *argv])


def tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


def member(member_id: str, *assignment: TopicPartition) -> MemberDescription:
    return MemberDescription(member_id, None, "client-" + member_id, "/127.0.0.1", assignment)


class FakeAdmin:
    def __init__(self) -> None:
        self.groups: dict[str, ConsumerGroupDescription] = {}
        self.committed: dict[str, dict[TopicPartition, int]] = {}
        self.earliest: dict[TopicPartition, int] = {}
        self.latest: dict[TopicPartition, int] = {}
        self.by_time: dict[TopicPartition, int] = {}
        self.topics: dict[str, int] = {}
        self.altered: list[tuple[str, dict[TopicPartition, int]]] = []
        self.delete_errors: dict[str, KafkaError] = {}

    def add_group(self, group: str, state: str, *members: MemberDescription) -> None:
        self.groups[group] = ConsumerGroupDescription(
            group, False, members, "range" if members else "", state, COORDINATOR
        )

    def list_groups(self) -> list[ConsumerGroupListing]:
        return [ConsumerGroupListing(g, False, d.state) for g, d in sorted(self.groups.items())]

    def describe_groups(self, group_ids: Iterable[str]) -> dict[str, ConsumerGroupDescription]:
        dead = ConsumerGroupDescription("", False, (), "", "Dead", COORDINATOR)
        return {g: self.groups.get(g, dead) for g in group_ids}

    def list_consumer_group_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        committed = self.committed.get(group_id, {})
        wanted = set(committed) if partitions is None else set(partitions)
        return {p: OffsetAndMetadata(o) for p, o in committed.items() if p in wanted}

    def alter_consumer_group_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, KafkaError | None]:
        self.altered.append((group_id, dict(offsets)))
        return dict.fromkeys(offsets)

    def delete_groups(self, group_ids: Iterable[str]) -> dict[str, KafkaError | None]:
        return {g: self.delete_errors.get(g) for g in group_ids}

    def list_offsets(
        self, specs: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, ListOffsetsResultInfo]:
        answers = {}
        for p, spec in specs.items():
            table = {-2: self.earliest, -1: self.latest}.get(spec, self.by_time)
            answers[p] = ListOffsetsResultInfo(table.get(p, -1), -1, 0)
        return answers

    def describe_topics(self, topics: Sequence[str] | None = None) -> dict[str, TopicDescription]:
        return {
            t: TopicDescription(
                t,
                "id",
                False,
                tuple(PartitionInfo(p, 0, 0, (0,), (0,)) for p in range(self.topics[t])),
            )
            for t in topics or self.topics
        }


def run(admin: FakeAdmin, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = groups.execute(parse(*argv), admin, out, err)
    return status, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ((), "Command must include exactly one action"),
        (("--list", "--describe"), "Command must include exactly one action"),
        (("--describe",), "Option [--describe] takes one of these options: [all-groups, group]"),
        (("--delete", "--group", "g", "--all-groups"), "[all-groups, group]"),
        (("--describe", "--group", "g", "--members", "--state"), "at most one of these"),
        (("--reset-offsets", "--group", "g", "--topic", "t"), "one of these options: to-datetime"),
        (("--reset-offsets", "--group", "g", "--to-earliest"), "options: topic, all-topics"),
        (
            ("--reset-offsets", "--group", "g", "--all-topics", "--to-latest", "--dry-run",
             "--execute"),
            "only one of these: dry-run, execute",
        ),
    ],
)  # fmt: skip
def test_option_rules(argv: tuple[str, ...], message: str) -> None:
    status, _out, err = run(FakeAdmin(), *argv)
    assert status == 1
    assert err.startswith("Error: ") and message in err
    with pytest.raises(CommandError):
        groups.check_args(parse(*argv))


def test_list_prints_one_group_per_line() -> None:
    admin = FakeAdmin()
    admin.add_group("b", "Stable")
    admin.add_group("a", "Empty")
    assert run(admin, "--list") == (0, "a\nb\n", "")


def test_list_with_state_and_all_groups() -> None:
    admin = FakeAdmin()
    admin.add_group("a-group-with-a-long-name", "Stable")
    admin.add_group("b", "Empty")
    assert run(admin, "--list", "--state")[1].splitlines() == [
        "GROUP                    STATE",
        "a-group-with-a-long-name Stable",
        "b                        Empty",
    ]
    status, out, _ = run(admin, "--delete", "--all-groups")
    assert (status, out) == (
        0,
        "Deletion of requested consumer groups ('a-group-with-a-long-name', 'b') was successful.\n",
    )


def test_describe_table_is_kafkas() -> None:
    admin = FakeAdmin()
    admin.add_group("g", "Stable", member("m-1", tp("t", 1)), member("m-2", tp("t", 0), tp("u", 0)))
    admin.committed["g"] = {tp("t", 0): 3, tp("t", 1): 10, tp("old", 0): 4}
    admin.latest = {tp("t", 0): 5, tp("t", 1): 10, tp("u", 0): 7, tp("old", 0): 4}
    status, out, err = run(admin, "--describe", "--group", "g")
    assert (status, err) == (0, "")
    header = (
        "GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG"
        "             CONSUMER-ID     HOST            CLIENT-ID"
    )
    assert out.split("\n") == [
        "",
        header,
        "g               t               0          3               5               2"
        "               m-2             /127.0.0.1      client-m-2",
        "g               u               0          -               7               -"
        "               m-2             /127.0.0.1      client-m-2",
        "g               t               1          10              10              0"
        "               m-1             /127.0.0.1      client-m-1",
        "g               old             0          4               4               0"
        "               -               -               -",
        "",
    ]


def test_columns_grow_with_long_values() -> None:
    row = PartitionAssignmentState("a-rather-long-group", "t", 0, 1, 2, "c" * 20, "h", "cl")
    header, line = groups.format_describe([row])
    assert header.startswith("GROUP               TOPIC ")
    assert line.split() == ["a-rather-long-group", "t", "0", "1", "2", "1", "c" * 20, "h", "cl"]
    assert header.index("CONSUMER-ID") == line.index("c" * 20)
    assert header.index("HOST") == line.index(" h ") + 1


def test_describe_empty_and_missing_groups() -> None:
    admin = FakeAdmin()
    admin.add_group("idle", "Empty")
    admin.committed["idle"] = {tp("t", 0): 1}
    admin.latest = {tp("t", 0): 2}
    status, out, err = run(admin, "--describe", "--group", "idle")
    assert status == 0
    assert err == "\nConsumer group 'idle' has no active members.\n"
    assert out.splitlines()[2].split() == ["idle", "t", "0", "1", "2", "1", "-", "-", "-"]
    status, out, err = run(admin, "--describe", "--group", "nope")
    assert (status, out, err) == (1, "", "Error: Consumer group 'nope' does not exist.\n")


def test_describe_members_and_state() -> None:
    admin = FakeAdmin()
    admin.add_group("g", "Stable", member("m-1", tp("t", 0), tp("t", 1)))
    status, out, _ = run(admin, "--describe", "--group", "g", "--members")
    assert status == 0
    lines = out.splitlines()
    assert lines[1].split() == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
    assert lines[2].split() == ["g", "m-1", "/127.0.0.1", "client-m-1", "2"]
    status, out, _ = run(admin, "--describe", "--group", "g", "--state")
    lines = out.splitlines()
    assert lines[1] == (
        "GROUP           COORDINATOR (ID)          ASSIGNMENT-STRATEGY       STATE"
        "                #MEMBERS"
    )
    assert lines[2] == (
        "g               127.0.0.1:9093  (1)       range                     Stable               1"
    )


def reset_admin() -> FakeAdmin:
    admin = FakeAdmin()
    admin.add_group("g", "Empty")
    admin.topics = {"t": 2}
    admin.committed["g"] = {tp("t", 0): 5, tp("t", 1): 8}
    admin.earliest = {tp("t", 0): 2, tp("t", 1): 0}
    admin.latest = {tp("t", 0): 10, tp("t", 1): 9}
    return admin


def test_reset_to_earliest_dry_run_prints_kafkas_table() -> None:
    admin = reset_admin()
    status, out, err = run(
        admin, "--reset-offsets", "--group", "g", "--topic", "t", "--to-earliest", "--dry-run"
    )
    assert (status, err) == (0, "")
    assert out.split("\n") == [
        "",
        f"{'GROUP':<30} {'TOPIC':<30} {'PARTITION':<10} {'NEW-OFFSET':<15}",
        f"{'g':<30} {'t':<30} {'0':<10} {'2':<15}",
        f"{'g':<30} {'t':<30} {'1':<10} {'0':<15}",
        "",
    ]
    assert admin.altered == []


def test_reset_without_dry_run_or_execute_warns() -> None:
    status, out, _ = run(
        reset_admin(), "--reset-offsets", "--group", "g", "--all-topics", "--to-latest"
    )
    assert status == 0
    assert out.startswith("WARN: No action will be performed as the --execute option is missing.")


def test_reset_execute_commits_shift_by_clamped() -> None:
    admin = reset_admin()
    status, _, _ = run(
        admin, "--reset-offsets", "--group", "g", "--topic", "t", "--shift-by", "3", "--execute"
    )
    assert status == 0
    assert admin.altered == [("g", {tp("t", 0): 8, tp("t", 1): 9})]
    run(admin, "--reset-offsets", "--group", "g", "--topic", "t:0", "--shift-by", "-9", "--execute")
    assert admin.altered[-1] == ("g", {tp("t", 0): 2})
    run(admin, "--reset-offsets", "--group", "g", "--topic", "t:1", "--to-offset", "4", "--execute")
    assert admin.altered[-1] == ("g", {tp("t", 1): 4})


def test_reset_to_datetime_falls_back_to_the_log_end() -> None:
    admin = reset_admin()
    admin.by_time = {tp("t", 0): 6}
    status, _out, _ = run(
        admin, "--reset-offsets", "--group", "g", "--topic", "t",
        "--to-datetime", "2024-01-31T12:00:00.000", "--execute",
    )  # fmt: skip
    assert status == 0
    assert admin.altered == [("g", {tp("t", 0): 6, tp("t", 1): 9})]


def test_reset_refuses_an_active_group_and_a_shift_without_commits() -> None:
    admin = reset_admin()
    admin.add_group("busy", "Stable", member("m", tp("t", 0)))
    status, _, err = run(admin, "--reset-offsets", "--group", "busy", "--all-topics", "--to-latest")
    assert status == 1
    assert err == (
        "Error: Assignments can only be reset if the group 'busy' is inactive, but the current "
        "state is Stable.\n"
    )
    admin.add_group("fresh", "Empty")
    status, _, err = run(
        admin, "--reset-offsets", "--group", "fresh", "--topic", "t", "--shift-by", "1"
    )
    assert status == 1
    assert "Cannot shift offset for partition t-0 since there is no current committed offset" in err


def test_delete_success_and_failure_lines() -> None:
    admin = FakeAdmin()
    assert run(admin, "--delete", "--group", "a", "--group", "b") == (
        0,
        "Deletion of requested consumer groups ('a', 'b') was successful.\n",
        "",
    )
    admin.delete_errors["b"] = error_for_code(ErrorCode.NON_EMPTY_GROUP, "The group is not empty.")
    status, out, err = run(admin, "--delete", "--group", "a", "--group", "b")
    assert status == 1
    assert out == "Deletion of requested consumer groups ('a') was successful.\n"
    assert err.splitlines() == [
        "Error: Deletion of some consumer groups failed:",
        "* Group 'b' could not be deleted due to: NON_EMPTY_GROUP (68): The group is not empty. "
        "(the group has active members)",
    ]


def test_parse_datetime() -> None:
    utc = datetime(2024, 1, 31, 12, 0, 0, 500_000, tzinfo=UTC)
    assert parse_datetime("2024-01-31T12:00:00.500Z") == int(utc.timestamp() * 1000)
    assert parse_datetime("2024-01-31T14:00:00.500+02:00") == int(utc.timestamp() * 1000)
    local = datetime(2024, 1, 31, 12, 0, 0, 500_000).astimezone()
    assert parse_datetime("2024-01-31T12:00:00.500") == int(local.timestamp() * 1000)
    with pytest.raises(ValueError, match="does not match format"):
        parse_datetime("yesterday")
    with pytest.raises(SystemExit):
        parse("--reset-offsets", "--group", "g", "--all-topics", "--to-datetime", "noon")
