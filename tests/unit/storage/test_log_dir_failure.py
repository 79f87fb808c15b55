"""The log dir failure channel (KIP-112) and the LogManager's part: I/O errors take a dir
offline once, the checkpoint writers skip offline dirs, nothing is written there again.

The I/O errors are real: a checkpoint's ``.tmp`` file made a symlink to /dev/full, whose
writes fail with ENOSPC as a full disk's do.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from minikafka.broker.storage.checkpoints import (
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
)
from minikafka.broker.storage.log_dir_failure import LogDirFailureChannel, io_error_of
from minikafka.broker.storage.log_manager import CLEAN_SHUTDOWN_FILE, LogManager
from minikafka.proto.errors import InvalidRecordError, KafkaStorageError
from tests.unit.storage.helpers import Clock, batch, small_config

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")


def _enospc() -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _full_disk(path: Path) -> None:
    """Make writes to ``path`` fail with ENOSPC."""
    path.unlink(missing_ok=True)
    path.symlink_to("/dev/full")


def test_io_error_of_follows_the_cause_chain() -> None:
    error = _enospc()
    assert io_error_of(error) is error
    try:
        raise KafkaStorageError("cannot write checkpoint") from error
    except KafkaStorageError as wrapped:
        assert io_error_of(wrapped) is error
    assert io_error_of(InvalidRecordError("bad batch")) is None  # a refusal, not a disk
    assert io_error_of(ValueError("bug")) is None
    assert io_error_of(FileNotFoundError(errno.ENOENT, "gone")) is None


def test_the_first_io_error_takes_the_dir_offline_once(tmp_path: Path) -> None:
    channel = LogDirFailureChannel()
    heard: list[Path] = []
    channel.add_listener(heard.append)
    with capture_logs() as logs:
        assert not channel.maybe_add_offline_log_dir(tmp_path, ValueError("bug"))
        assert not channel.is_offline(tmp_path)
        assert channel.maybe_add_offline_log_dir(tmp_path, _enospc(), "error appending to t-0")
        for _ in range(1000):  # a dir that keeps failing does not flood the log
            assert channel.maybe_add_offline_log_dir(tmp_path, _enospc(), "again")
    assert heard == [tmp_path]
    assert channel.is_offline(tmp_path)
    assert channel.reports(tmp_path) == 1001
    assert "No space left on device" in channel.offline_log_dirs[tmp_path]
    offline = [e for e in logs if e["event"] == "log_dir.offline"]
    assert len(offline) == 1 and len(logs) == 1
    assert offline[0]["log_level"] == "error"
    assert offline[0]["errno"] == errno.ENOSPC
    assert offline[0]["log_dir"] == str(tmp_path)
    assert offline[0]["context"] == "error appending to t-0"


def _manager(dirs: list[Path]) -> LogManager:
    return LogManager(dirs, small_config(), broker_id=1, time_ms=Clock())


def test_checkpoint_writers_take_a_failing_dir_offline_and_write_the_others(
    tmp_path: Path,
) -> None:
    bad, good = tmp_path / "a", tmp_path / "b"
    logs = _manager([bad, good])
    for partition in range(2):  # t-0 in a, t-1 in b
        logs.get_or_create_log("t", partition).append_as_leader(batch(3), 0)
    assert logs.log_dir_of("t", 0) == bad
    heard: list[Path] = []
    logs.failure_channel.add_listener(heard.append)
    _full_disk(bad / (REPLICATION_OFFSET_CHECKPOINT + ".tmp"))

    with capture_logs() as events:
        logs.write_high_watermarks({("t", 0): 3, ("t", 1): 3})  # no exception
    assert heard == [bad] and logs.online_log_dirs == [good]
    assert [e["event"] for e in events] == ["log_dir.offline"]
    assert (good / REPLICATION_OFFSET_CHECKPOINT).read_text() == "0\n1\nt 1 3\n"

    # The offline dir is no longer written: not by the other checkpoint writers either.
    before = sorted(p.name for p in bad.iterdir())
    logs.checkpoint_recovery_points()
    logs.checkpoint_log_start_offsets()
    logs.write_high_watermarks({("t", 0): 3, ("t", 1): 3})
    assert (good / RECOVERY_POINT_CHECKPOINT).exists()
    assert not (bad / RECOVERY_POINT_CHECKPOINT).exists()
    assert logs.failure_channel.reports(bad) == 1

    # Its logs go; new logs are created only in online dirs.
    assert logs.handle_log_dir_failure(bad) == [("t", 0)]
    assert logs.get_log("t", 0) is None
    assert logs.get_or_create_log("u", 0).dir.parent == good
    # A close marks only the online dir clean: the offline one is recovered at the next start.
    logs.close()
    assert (good / CLEAN_SHUTDOWN_FILE).exists()
    assert not (bad / CLEAN_SHUTDOWN_FILE).exists()
    assert sorted(p.name for p in bad.iterdir()) == before


def test_no_online_dir_left_refuses_new_logs(tmp_path: Path) -> None:
    logs = _manager([tmp_path])
    _full_disk(tmp_path / (RECOVERY_POINT_CHECKPOINT + ".tmp"))
    logs.checkpoint_recovery_points()
    assert logs.online_log_dirs == []
    with pytest.raises(KafkaStorageError, match="no log dir is online"):
        logs.get_or_create_log("t", 0)
    logs.close()  # writes nothing, raises nothing
    assert not (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
