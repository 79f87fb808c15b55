"""proto.log_files: the log dir's names and checkpoint text, parsed once for the broker's
storage and the offline Spark reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.broker.storage.checkpoints import OffsetCheckpointFile
from minikafka.broker.storage.log import parse_topic_partition
from minikafka.proto.errors import KafkaStorageError
from minikafka.proto.log_files import parse_offset_checkpoint, parse_partition_dir


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("orders-3", ("orders", 3)),
        ("my-topic-12", ("my-topic", 12)),
        ("orders-3.abc-delete", None),
        ("orders", None),
        ("-3", None),
        ("orders-", None),
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
