"""proto.log_files: the log dir's names and checkpoint text, parsed once for the broker's
storage and the offline Spark reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.broker.storage.checkpoints import OffsetCheckpointFile
from minikafka.broker.storage.log import parse_topic_partition
from minikafka.proto.errors import KafkaStorageError
from minikafka.proto.log_files import (
    LOG_SUFFIX,
    LogFileName,
    log_file_name,
    parse_log_file_name,
    parse_offset_checkpoint,
    parse_partition_dir,
)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("orders-3", ("orders", 3)),
        ("my-topic-12", ("my-topic", 12)),
        ("orders-3.abc-delete", None),
        ("orders", None),
        ("-3", None),
        ("orders-", None),
        ("orders-²", None),  # str.isdigit's other digits are no partition number
        ("orders-٣", None),
    ],
)
def test_partition_dir_names(name: str, expected: tuple[str, int] | None) -> None:
    assert parse_partition_dir(name) == expected
    if expected is None:
        with pytest.raises(KafkaStorageError, match="not of the form <topic>-<partition>"):
            parse_topic_partition(name)
    else:
        assert tuple(parse_topic_partition(name)) == expected


def test_what_the_broker_writes_reads_back_the_same_both_ways(tmp_path: Path) -> None:
    path = tmp_path / "replication-offset-checkpoint"
    OffsetCheckpointFile(path).write({("a", 0): 15, ("b-c", 2): 7})
    expected = {("a", 0): 15, ("b-c", 2): 7}
    assert parse_offset_checkpoint(path.read_text()) == expected
    assert OffsetCheckpointFile(path).read() == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1\n0\n", "has version 1"),
        ("0\nx\n", "malformed line 2 .* expected the entry count"),
        ("0\n1\nt 0\n", "malformed line 3"),
        ("0\n2\nt 0 1\n", "announces 2 entries on line 2 but holds 1"),
    ],
)
def test_malformed_checkpoints_name_the_file_and_line(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(ValueError, match=message) as raised:
        parse_offset_checkpoint(text, source="cp")
    assert "checkpoint file cp" in str(raised.value)
    path = tmp_path / "cp"
    path.write_text(text)
    with pytest.raises(KafkaStorageError, match=message):
        OffsetCheckpointFile(path).read()


def test_log_file_names_read_back_as_written() -> None:
    for offset in (0, 42, 2**63 - 1):
        name = log_file_name(offset, LOG_SUFFIX)
        assert len(name) == max(20, len(str(offset))) + len(LOG_SUFFIX)
        assert parse_log_file_name(name) == LogFileName(offset, LOG_SUFFIX)
    assert log_file_name(7) == "00000000000000000007"
    assert sorted(log_file_name(o, ".log") for o in (100, 9, 10)) == [
        log_file_name(o, ".log") for o in (9, 10, 100)
    ]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("00000000000000000042.index.swap", LogFileName(42, ".index.swap")),
        ("00000000000000000042.snapshot", LogFileName(42, ".snapshot")),
        ("5.log", LogFileName(5, ".log")),  # Kafka reads any number of digits
        ("00000000000000000042", None),  # no suffix
        ("leader-epoch-checkpoint", None),
        (".log", None),
        ("4x.log", None),
        ("²³.log", None),
    ],
)
def test_log_file_names_parsed(name: str, expected: LogFileName | None) -> None:
    assert parse_log_file_name(name) == expected
