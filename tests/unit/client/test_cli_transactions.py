"""`minikafka transactions`: kafka-transactions.sh's subcommands, columns and one-line failures,
against a fake admin."""

from __future__ import annotations

import argparse
import io
from typing import Any

from minikafka.cli import build_parser
from minikafka.client.admin import (
    AbortTransactionSpec,
    ProducerState,
    TransactionDescription,
    TransactionListing,
)
from minikafka.client.cli import transactions
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode, error_for_code

TP = TopicPartition("out", 0)
OLD = 1_000  # a last timestamp long ago: a candidate for find-hanging


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(
        ["transactions", "--bootstrap-server", "127.0.0.1:9092", *argv]
    )


class FakeAdmin:
    def __init__(self) -> None:
        self.aborted: list[AbortTransactionSpec] = []
        self.producers = [
            ProducerState(7, 2, 11, OLD, 3, 40),
            ProducerState(8, 0, 4, OLD, None, None),
        ]

    def list_transactions(self, **options: Any) -> dict[int, list[TransactionListing]]:
        if options.get("producer_ids"):
            return {1: []}
        return {0: [TransactionListing("etl-1", 7, "Ongoing")], 2: []}

    def describe_transactions(self, ids: list[str]) -> dict[str, TransactionDescription]:
        if ids == ["nope"]:
            raise error_for_code(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)
        return {ids[0]: TransactionDescription(0, "Ongoing", 7, 2, 60_000, 5, (TP,))}

    def describe_producers(
        self, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, list[ProducerState]]:
        return {tp: self.producers for tp in partitions}

    def abort_transaction(self, spec: AbortTransactionSpec) -> None:
        self.aborted.append(spec)


def run(admin: FakeAdmin, *argv: str) -> tuple[int, list[str], str]:
    out, err = io.StringIO(), io.StringIO()
    status = transactions.execute(parse(*argv), admin, out, err)  # type: ignore[arg-type]
    return status, out.getvalue().splitlines(), err.getvalue()


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.split("\t")]


def test_list_prints_kafkas_columns() -> None:
    status, lines, _ = run(FakeAdmin(), "list")
    assert status == 0
    assert cells(lines[0]) == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
    assert cells(lines[1]) == ["etl-1", "0", "7", "Ongoing"]


def test_describe_prints_the_transaction() -> None:
    status, lines, _ = run(FakeAdmin(), "describe", "--transactional-id", "etl-1")
    assert status == 0
    assert cells(lines[0])[:3] == ["CoordinatorId", "TransactionalId", "ProducerId"]
    row = cells(lines[1])
    assert row[:7] == ["0", "etl-1", "7", "2", "Ongoing", "60000", "5"]
    assert row[8] == "out-0"


def test_describe_of_an_unknown_id_is_one_line_and_status_1() -> None:
    status, lines, err = run(FakeAdmin(), "describe", "--transactional-id", "nope")
    assert (status, lines) == (1, [])
    assert err.startswith("Failed to describe transaction state of transactional-id `nope`: ")
    assert err.count("\n") == 1


def test_describe_producers_prints_none_for_no_open_transaction() -> None:
    status, lines, _ = run(FakeAdmin(), "describe-producers", "--topic", "out", "--partition", "0")
    assert status == 0
    assert cells(lines[0]) == list(transactions.PRODUCERS_HEADERS)
    assert cells(lines[1]) == ["7", "2", "3", "11", str(OLD), "40"]
    assert cells(lines[2]) == ["8", "0", "-1", "4", str(OLD), "None"]


def test_abort_by_start_offset_finds_the_producer() -> None:
    admin = FakeAdmin()
    status, lines, _ = run(admin, "abort", "--topic", "out", "--partition", "0",
                           "--start-offset", "40")  # fmt: skip
    assert (status, lines) == (0, [])
    assert admin.aborted == [AbortTransactionSpec(TP, 7, 2, 3)]


def test_abort_of_no_open_transaction_fails_in_one_line() -> None:
    status, _, err = run(FakeAdmin(), "abort", "--topic", "out", "--partition", "0",
                         "--start-offset", "41")  # fmt: skip
    assert status == 1
    assert err == "Could not find any open transactions starting at offset 41 on partition out-0\n"


def test_abort_needs_an_offset_or_the_whole_producer() -> None:
    status, _, err = run(FakeAdmin(), "abort", "--topic", "out", "--partition", "0",
                         "--producer-id", "7")  # fmt: skip
    assert (status, err) == (1, "Missing required argument --producer-epoch\n")


def test_find_hanging_reports_an_open_transaction_its_coordinator_does_not_know() -> None:
    status, lines, _ = run(FakeAdmin(), "find-hanging", "--topic", "out", "--partition", "0")
    assert status == 0
    assert cells(lines[0]) == list(transactions.HANGING_HEADERS)
    row = cells(lines[1])
    assert row[:7] == ["out", "0", "7", "2", "3", "40", str(OLD)]
    assert len(lines) == 2


def test_find_hanging_needs_a_scope() -> None:
    status, _, err = run(FakeAdmin(), "find-hanging")
    assert status == 1
    assert "requires either --topic or --broker-id" in err
