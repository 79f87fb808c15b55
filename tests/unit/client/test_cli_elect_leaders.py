"""`minikafka elect-leaders`: option rules and Kafka's output lines, against a fake admin."""

from __future__ import annotations

import argparse
import io
from collections.abc import Iterable
from pathlib import Path

import pytest

from minikafka.cli import build_parser
from minikafka.client.admin import ElectionType
from minikafka.client.cli import elect_leaders
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode, KafkaError, error_for_code


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(
        ["elect-leaders", "--bootstrap-server", "127.0.0.1:9092", *argv]
    )


class FakeAdmin:
    def __init__(self, results: dict[TopicPartition, KafkaError | None]) -> None:
        self.results = results
        self.calls: list[tuple[ElectionType, list[TopicPartition] | None]] = []

    def elect_leaders(
        self, election_type: ElectionType, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, KafkaError | None]:
        self.calls.append((election_type, None if partitions is None else list(partitions)))
        return self.results


def run(admin: FakeAdmin, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = elect_leaders.execute(parse(*argv), admin, out, err)
    return status, out.getvalue(), err.getvalue()


def test_election_type_is_case_insensitive_and_checked() -> None:
    assert parse("--election-type", "PREFERRED", "--all-topic-partitions").election_type is (
        ElectionType.PREFERRED
    )
    assert parse("--election-type", "unclean", "--all-topic-partitions").election_type is (
        ElectionType.UNCLEAN
    )
    with pytest.raises(SystemExit) as exc:
        parse("--election-type", "fastest", "--all-topic-partitions")
    assert exc.value.code == 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ((), "One and only one of the following options is required"),
        (("--topic", "t", "--partition", "0", "--all-topic-partitions"), "One and only one"),
        (("--topic", "t"), "Missing required option(s) [partition]"),
        (("--all-topic-partitions", "--partition", "1"), "Missing required option(s) [topic]"),
    ],
)
def test_options_that_do_not_fit(argv: tuple[str, ...], message: str) -> None:
    admin = FakeAdmin({})
    status, out, err = run(admin, "--election-type", "preferred", *argv)
    assert (status, out) == (1, "")
    assert message in err
    assert admin.calls == []


def test_success_and_noop_lines() -> None:
    admin = FakeAdmin(
        {
            TopicPartition("t", 0): None,
            TopicPartition("t", 1): None,
            TopicPartition("u", 0): error_for_code(ErrorCode.ELECTION_NOT_NEEDED),
        }
    )
    status, out, err = run(admin, "--election-type", "preferred", "--all-topic-partitions")
    assert (status, err) == (0, "")
    assert out.splitlines() == [
        "Successfully completed leader election (PREFERRED) for partitions t-0, t-1",
        "Valid replica already elected for partitions u-0",
    ]
    assert admin.calls == [(ElectionType.PREFERRED, None)]


def test_one_partition_and_a_failure() -> None:
    failure = error_for_code(ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, "broker 2 is down")
    admin = FakeAdmin({TopicPartition("t", 3): failure})
    status, out, err = run(
        admin, "--election-type", "preferred", "--topic", "t", "--partition", "3"
    )
    assert status == 1
    assert out == (
        "Error completing leader election (PREFERRED) for partition: t-3: "
        "PREFERRED_LEADER_NOT_AVAILABLE (80): broker 2 is down\n"
    )
    assert err == "Error while making request: 1 replica(s) could not be elected\n"
    assert admin.calls == [(ElectionType.PREFERRED, [TopicPartition("t", 3)])]


def test_request_failure_is_one_line() -> None:
    class Failing(FakeAdmin):
        def elect_leaders(
            self, election_type: ElectionType, partitions: Iterable[TopicPartition] | None = None
        ) -> dict[TopicPartition, KafkaError | None]:
            raise error_for_code(ErrorCode.REQUEST_TIMED_OUT, "call electLeaders timed out")

    status, out, err = run(Failing({}), "--election-type", "unclean", "--all-topic-partitions")
    assert (status, out) == (1, "")
    assert err == (
        "Error while making request: REQUEST_TIMED_OUT (7): call electLeaders timed out\n"
    )


def test_partitions_from_kafkas_json_file(tmp_path: Path) -> None:
    path = tmp_path / "election.json"
    path.write_text(
        '{"partitions": [{"topic": "t", "partition": 1}, {"topic": "u", "partition": 0}]}'
    )
    admin = FakeAdmin({TopicPartition("t", 1): None, TopicPartition("u", 0): None})
    status, out, _ = run(admin, "--election-type", "preferred", "--path-to-json-file", str(path))
    assert status == 0
    assert admin.calls == [
        (ElectionType.PREFERRED, [TopicPartition("t", 1), TopicPartition("u", 0)])
    ]
    assert out == "Successfully completed leader election (PREFERRED) for partitions t-1, u-0\n"


def test_duplicate_partitions_in_the_file_are_refused() -> None:
    with pytest.raises(elect_leaders.UsageError, match="duplicate partitions"):
        elect_leaders.parse_partitions_file(
            '{"partitions": [{"topic": "t", "partition": 1}, {"topic": "t", "partition": 1}]}'
        )
