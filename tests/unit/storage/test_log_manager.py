"""LogManager: log dirs, meta.properties, placement, checkpoints, clean shutdown, deletion."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from minikafka.broker.storage import log as log_module
from minikafka.broker.storage import log_manager as log_manager_module
from minikafka.broker.storage.config import LogConfig
from minikafka.broker.storage.log_manager import (
    CLEAN_SHUTDOWN_FILE,
    LogManager,
    read_meta_properties,
)
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import InvalidConfigError, KafkaStorageError
from tests.unit.storage.helpers import T0, Clock, batch, read_all, segment_files, small_config


def manager(
    dirs: list[Path],
    broker_id: int = 1,
    cluster_id: str | None = None,
    topic_config: Callable[[str], LogConfig | None] | None = None,
) -> LogManager:
    return LogManager(
        dirs,
        small_config(),
        broker_id=broker_id,
        cluster_id=cluster_id,
        topic_config=topic_config,
        time_ms=Clock(),
    )


def fill(log_manager: LogManager, topic: str, partition: int, batches: int) -> None:
    log = log_manager.get_or_create_log(topic, partition)
    for n in range(batches):
        log.append_as_leader(batch(3, tag=n), 0)


def test_meta_properties(tmp_path: Path) -> None:
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager(dirs, broker_id=7, cluster_id="Xm3sKD3qTn2b5WCEYK0n7g").close()
    for d in dirs:
        text = (d / "meta.properties").read_text()
        assert text.startswith("#\n#")
        assert read_meta_properties(d) == {
            "version": "0",
            "broker.id": "7",
            "cluster.id": "Xm3sKD3qTn2b5WCEYK0n7g",
        }
    with pytest.raises(InvalidConfigError, match=r"broker\.id"):
        manager(dirs, broker_id=8)
    with pytest.raises(InvalidConfigError, match=r"cluster\.id"):
        manager(dirs, broker_id=7, cluster_id="another")
    manager(dirs, broker_id=7).close()  # cluster id not known yet: fine


def test_cluster_id_is_added_once_known(tmp_path: Path) -> None:
    manager([tmp_path], broker_id=2).close()
    assert "cluster.id" not in read_meta_properties(tmp_path)
    manager([tmp_path], broker_id=2, cluster_id="abc").close()
    assert read_meta_properties(tmp_path)["cluster.id"] == "abc"


def test_a_log_dir_is_locked_while_in_use(tmp_path: Path) -> None:
    first = manager([tmp_path])
    with pytest.raises(KafkaStorageError, match="locked"):
        manager([tmp_path])
    first.close()
    manager([tmp_path]).close()


def test_new_logs_go_to_the_dir_with_fewest_partitions(tmp_path: Path) -> None:
    dirs = [tmp_path / "a", tmp_path / "b"]
    logs = manager(dirs)
    placed = [logs.get_or_create_log("t", p).dir.parent.name for p in range(4)]
    assert placed == ["a", "b", "a", "b"]
    assert logs.get_or_create_log("t", 0) is logs.get_log("t", 0)
    assert logs.get_log("t", 9) is None
    assert (tmp_path / "a" / "t-0").is_dir() and (tmp_path / "b" / "t-1").is_dir()


def test_create_logs_in_bulk_reads_each_topic_config_once_and_syncs_each_dir_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dirs = [tmp_path / "a", tmp_path / "b"]
    asked: list[str] = []
    short = dataclasses.replace(small_config(), retention_ms=1000)

    def topic_config(topic: str) -> LogConfig | None:
        asked.append(topic)
        return short if topic == "short" else None

    logs = manager(dirs, topic_config=topic_config)
    logs.get_or_create_log("short", 0)  # an existing log is left as it is
    asked.clear()
    wanted = [TopicPartition(t, p) for t in ("short", "long") for p in range(3)]
    configs = logs.log_configs(tp.topic for tp in wanted)
    assert sorted(asked) == ["long", "short"]

    synced: list[Path] = []
    monkeypatch.setattr(log_manager_module, "fsync_dir", synced.append)
    monkeypatch.setattr(log_module, "fsync_dir", synced.append)
    created = logs.create_logs(wanted, configs)
    assert synced == []  # no fsync per new directory
    assert created == set(dirs)
    logs.sync_log_dirs(created)
    assert sorted(synced) == dirs
    placed = [logs.get_log(*tp).dir.parent.name for tp in wanted]  # type: ignore[union-attr]
    assert sorted(placed) == ["a", "a", "a", "b", "b", "b"]  # still balanced
    assert [logs.get_log("short", p).config.retention_ms for p in range(3)] == [1000] * 3  # type: ignore[union-attr]
    assert logs.get_log("long", 0).config == small_config()  # type: ignore[union-attr]
    # deletions count too: the next new log goes where fewer are left
    emptied = logs.get_log("long", 0).dir.parent  # type: ignore[union-attr]
    for tp in wanted:
        if logs.log_dir_of(*tp) == emptied:
            logs.delete_log(*tp)
    assert logs.get_or_create_log("t", 0).dir.parent == emptied
    logs.close()


def test_checkpoints(tmp_path: Path) -> None:
    logs = manager([tmp_path])
    fill(logs, "t", 0, 30)
    fill(logs, "t", 1, 2)
    t0, t1 = logs.get_log("t", 0), logs.get_log("t", 1)
    assert t0 is not None and t1 is not None
    t0.flush()
    second = t0.segments[1].base_offset
    t0.maybe_increment_log_start_offset(second + 1)
    logs.checkpoint_recovery_points()
    logs.checkpoint_log_start_offsets()
    logs.write_high_watermarks({("t", 0): 80, TopicPartition("t", 1): 6, ("gone", 0): 3})
    assert (tmp_path / "recovery-point-offset-checkpoint").read_text() == "0\n2\nt 0 90\nt 1 0\n"
    # Only a log start past the first segment's base offset is worth an entry.
    assert (tmp_path / "log-start-offset-checkpoint").read_text() == f"0\n1\nt 0 {second + 1}\n"
    assert (tmp_path / "replication-offset-checkpoint").read_text() == "0\n2\nt 0 80\nt 1 6\n"
    assert logs.read_high_watermarks() == {TopicPartition("t", 0): 80, TopicPartition("t", 1): 6}
    logs.close()


def test_checkpoints_are_written_only_when_an_offset_moved(tmp_path: Path) -> None:
    """Issue 18: the recovery-point and log-start checkpoints of an idle broker are not
    rewritten (nor fsynced) every interval; a moved offset is written at the next one."""
    logs = manager([tmp_path])
    fill(logs, "t", 0, 30)
    recovery = tmp_path / "recovery-point-offset-checkpoint"
    log_start = tmp_path / "log-start-offset-checkpoint"

    def files() -> list[tuple[int, str]]:  # a write replaces the file: temp, fsync, rename
        return [(path.stat().st_ino, path.read_text()) for path in (recovery, log_start)]

    logs.checkpoint_recovery_points()
    logs.checkpoint_log_start_offsets()
    first = files()
    logs.checkpoint_recovery_points()
    logs.checkpoint_log_start_offsets()
    assert files() == first

    t0 = logs.get_log("t", 0)
    assert t0 is not None
    t0.flush()
    logs.checkpoint_recovery_points()
    logs.checkpoint_log_start_offsets()
    moved = files()
    assert moved[0] != first[0] and moved[0][1] == "0\n1\nt 0 90\n"
    assert moved[1] == first[1]
    t0.maybe_increment_log_start_offset(t0.segments[1].base_offset + 1)
    logs.checkpoint_log_start_offsets()
    assert files()[1] != moved[1]
    logs.close()


def test_clean_close_and_restart(tmp_path: Path) -> None:
    logs = manager([tmp_path])
    fill(logs, "t", 0, 30)
    log = logs.get_log("t", 0)
    assert log is not None
    log.maybe_increment_log_start_offset(10)
    before = read_all(log)
    logs.close()
    assert (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    with capture_logs() as events:
        again = manager([tmp_path])
    loaded = [e for e in events if e["event"] == "log.loaded"]
    assert loaded[0]["clean_shutdown"] is True
    assert not (tmp_path / CLEAN_SHUTDOWN_FILE).exists()  # a crash from now on must recover
    log = again.get_log("t", 0)
    assert log is not None
    assert (log.log_start_offset, log.log_end_offset, log.recovery_point) == (10, 90, 90)
    assert read_all(log) == before
    again.close()


def test_unclean_restart_recovers_from_the_checkpoint(tmp_path: Path) -> None:
    logs = manager([tmp_path])
    fill(logs, "t", 0, 30)
    log = logs.get_log("t", 0)
    assert log is not None
    log.flush()
    logs.checkpoint_recovery_points()
    fill(logs, "t", 0, 1)  # not flushed, then "crash": no close
    active = log.active_segment.path
    data = active.read_bytes()
    for other in logs.all_logs():
        other.close()
    logs._release_locks()  # what the process dying would do
    active.write_bytes(data[:-5])
    again = manager([tmp_path])
    recovered = again.get_log("t", 0)
    assert recovered is not None
    assert recovered.log_end_offset == 90
    again.close()


def test_unreadable_recovery_checkpoint_means_full_recovery(tmp_path: Path) -> None:
    logs = manager([tmp_path])
    fill(logs, "t", 0, 30)
    logs.close()
    (tmp_path / CLEAN_SHUTDOWN_FILE).unlink()
    (tmp_path / "recovery-point-offset-checkpoint").write_text("0\n1\ngarbage\n")
    first = segment_files(tmp_path / "t-0")[0]
    data = bytearray(first.read_bytes())
    data[100] ^= 0xFF  # in the first segment, below any recovery point
    first.write_bytes(bytes(data))
    with capture_logs() as events:
        again = manager([tmp_path])
    assert any(e["event"] == "checkpoint.unreadable" for e in events)
    log = again.get_log("t", 0)
    assert log is not None and log.log_end_offset < 30
    again.close()


def test_delete_log(tmp_path: Path) -> None:
    logs = manager([tmp_path])
    fill(logs, "t", 0, 3)
    fill(logs, "u", 0, 3)
    assert logs.delete_log("t", 0)
    assert not logs.delete_log("t", 0)
    assert logs.get_log("t", 0) is None
    assert [p.name for p in tmp_path.iterdir() if p.is_dir()] == ["u-0"]
    (tmp_path / "v-0.5b1a2c-delete").mkdir()  # a deletion interrupted by a crash
    (tmp_path / "not a partition").mkdir()
    logs.close()
    again = manager([tmp_path])
    assert set(again.logs) == {TopicPartition("u", 0)}
    assert not (tmp_path / "v-0.5b1a2c-delete").exists()
    again.close()


def test_same_partition_in_two_dirs_is_refused(tmp_path: Path) -> None:
    dirs = [tmp_path / "a", tmp_path / "b"]
    logs = manager(dirs)
    fill(logs, "t", 0, 1)
    logs.close()
    (tmp_path / "b" / "t-0").mkdir()
    with pytest.raises(KafkaStorageError, match="t-0"):
        manager(dirs)


def test_topic_configs_and_retention_pass(tmp_path: Path) -> None:
    short = dataclasses.replace(small_config(), retention_ms=1000)

    def topic_config(topic: str) -> LogConfig | None:
        return short if topic == "short" else None

    logs = manager([tmp_path], topic_config=topic_config)
    fill(logs, "short", 0, 30)
    fill(logs, "long", 0, 30)
    short_log, long_log = logs.get_log("short", 0), logs.get_log("long", 0)
    assert short_log is not None and long_log is not None
    assert short_log.config.retention_ms == 1000
    assert long_log.config == small_config()
    segments = short_log.number_of_segments
    assert logs.cleanup(T0 + 60_000) == segments - 1
    assert long_log.log_start_offset == 0
    assert logs.cleanup(T0 + 60_000, {("short", 0): short_log.log_end_offset}) == 1
    logs.update_topic_config("long", short)
    assert long_log.config is short
    logs.close()


def test_flush_pass(tmp_path: Path) -> None:
    logs = LogManager(
        [tmp_path],
        dataclasses.replace(small_config(), flush_ms=1000, segment_bytes=1 << 20),
        broker_id=1,
        time_ms=Clock(),
    )
    fill(logs, "t", 0, 2)
    log = logs.get_log("t", 0)
    assert log is not None
    logs.flush_dirty_logs(T0 + 999)
    assert log.recovery_point == 0
    logs.flush_dirty_logs(T0 + 1000)
    assert log.recovery_point == 6
    logs.close()
    with pytest.raises(KafkaStorageError):
        logs.get_or_create_log("t", 5)
