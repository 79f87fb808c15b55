"""Text checkpoint files: exact format, atomic replacement, malformed input."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from minikafka.broker.storage.checkpoints import CheckpointFile, OffsetCheckpointFile
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import KafkaStorageError


def test_offset_checkpoint_format(tmp_path: Path) -> None:
    path = tmp_path / "recovery-point-offset-checkpoint"
    OffsetCheckpointFile(path).write({TopicPartition("orders", 1): 42, ("orders", 0): 7})
    assert path.read_text() == "0\n2\norders 0 7\norders 1 42\n"
    assert OffsetCheckpointFile(path).read() == {
        TopicPartition("orders", 0): 7,
        TopicPartition("orders", 1): 42,
    }


def test_empty_and_missing(tmp_path: Path) -> None:
    path = tmp_path / "replication-offset-checkpoint"
    assert OffsetCheckpointFile(path).read() == {}
    OffsetCheckpointFile(path).write({})
    assert path.read_text() == "0\n0\n"
    assert OffsetCheckpointFile(path).read() == {}
    path.write_text("")
    assert OffsetCheckpointFile(path).read() == {}


def test_write_replaces_atomically_via_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "log-start-offset-checkpoint"
    checkpoint = OffsetCheckpointFile(path)
    checkpoint.write({("a", 0): 1})
    seen: list[tuple[str, str]] = []
    real_replace = os.replace

    def spy(src: str | Path, dst: str | Path) -> None:
        seen.append((Path(src).name, Path(dst).read_text()))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    checkpoint.write({("a", 0): 2})
    # The new content went to <file>.tmp and replaced the file in one rename; the old content
    # was intact until then.
    assert seen == [("log-start-offset-checkpoint.tmp", "0\n1\na 0 1\n")]
    assert path.read_text() == "0\n1\na 0 2\n"
    assert not (tmp_path / "log-start-offset-checkpoint.tmp").exists()


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("1\n0\n", "version 1"),
        ("x\n0\n", "line 1"),
        ("0\ntwo\n", "line 2"),
        ("0\n1\ntopic 0\n", "line 3"),
        ("0\n1\ntopic zero 5\n", "line 3"),
        ("0\n2\ntopic 0 5\n", "announces 2 entries"),
    ],
)
def test_malformed_files_name_file_and_line(tmp_path: Path, text: str, line: str) -> None:
    path = tmp_path / "replication-offset-checkpoint"
    path.write_text(text)
    with pytest.raises(KafkaStorageError) as raised:
        OffsetCheckpointFile(path).read()
    assert str(path) in str(raised.value)
    assert line in str(raised.value)


def test_generic_framing_with_custom_lines(tmp_path: Path) -> None:
    file: CheckpointFile[str] = CheckpointFile(tmp_path / "x", lambda s: s, lambda s: s or None)
    file.write(["alpha", "beta"])
    assert (tmp_path / "x").read_text() == "0\n2\nalpha\nbeta\n"
    assert file.read() == ["alpha", "beta"]


def test_concurrent_writes_of_one_file_do_not_trip_over_each_other(tmp_path: Path) -> None:
    # A periodic checkpoint still running in a worker thread and the one at shutdown write the
    # same file (and the same .tmp): each must land whole, none fail.
    path = tmp_path / "replication-offset-checkpoint"
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(200):
                OffsetCheckpointFile(path).write({TopicPartition("t", n): i})
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(OffsetCheckpointFile(path).read()) == 1
