"""Producer-state ``.snapshot`` files: Kafka's byte layout, loading on open with a replay of the
log after the snapshot, and their life through rolls, truncation and retention."""

from __future__ import annotations

import dataclasses
import struct
from pathlib import Path

import crc32c
import pytest
from structlog.testing import capture_logs

from minikafka.broker.replication.partition import Partition, PartitionRegistration
from minikafka.broker.replication.producer_state import (
    CorruptSnapshotError,
    ProducerSnapshotEntry,
    ProducerStateManager,
    decode_snapshot,
    encode_snapshot,
    list_snapshot_files,
    read_snapshot,
    snapshot_file_name,
    write_snapshot,
)
from minikafka.broker.storage.config import LogConfig
from minikafka.broker.storage.log import Log
from minikafka.cli import main
from minikafka.proto.errors import ErrorCode, KafkaError, OutOfOrderSequenceError
from minikafka.proto.records import encode_batch
from tests.unit.storage.helpers import T0

# A few batches per segment, so that producing a dozen batches rolls several times.
CONFIG = dataclasses.replace(LogConfig(), segment_bytes=300)
ENTRIES = [
    ProducerSnapshotEntry(7, 2, 14, 120, 4, T0 + 5),
    ProducerSnapshotEntry(3, 0, 0, 9, 0, T0),
    ProducerSnapshotEntry(2**40, 1, 2**31 - 1, 2**40, 2, T0, 5, 100),
]


def _idempotent(pid: int, epoch: int, sequence: int, count: int = 1, tag: str = "") -> bytes:
    return encode_batch(
        [
            (T0 + sequence + i, None, f"{tag}{pid}-{sequence + i}".encode(), ())
            for i in range(count)
        ],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=sequence,
    )


def _open(directory: Path) -> Partition:
    partition = Partition(Log(directory, CONFIG), 1)
    partition.make_leader(
        PartitionRegistration(
            leader=1,
            leader_epoch=1,
            isr=(1,),
            replicas=(1,),
            partition_epoch=0,
            controller_epoch=1,
        ),
        now_ms=0,
    )
    return partition


def _produce(partition: Partition, producers: dict[int, int], rounds: int) -> None:
    """``rounds`` batches of 1-2 records from each producer (pid -> next sequence)."""
    for r in range(rounds):
        for pid in producers:
            count = 1 + (r + pid) % 2
            partition.append_records_to_leader(_idempotent(pid, 0, producers[pid], count), 1)
            producers[pid] += count


def _full_replay(log: Log) -> list[ProducerSnapshotEntry]:
    state = ProducerStateManager()
    for segment in log.segments:
        state.update(location.header for location in segment.iter_batches())
    return state.snapshot_entries()


def _snapshots(directory: Path) -> list[int]:
    return sorted(list_snapshot_files(directory))


# --- the file format ------------------------------------------------------------------------


def test_bytes_are_kafkas_layout() -> None:
    body = struct.pack(">i", 2)
    for entry in sorted(ENTRIES[:2]):
        body += struct.pack(
            ">qhiqiqiq",
            entry.producer_id,
            entry.producer_epoch,
            entry.last_sequence,
            entry.last_offset,
            entry.offset_delta,
            entry.timestamp,
            -1,
            -1,
        )
    expected = struct.pack(">hI", 1, crc32c.crc32c(body)) + body
    assert encode_snapshot(ENTRIES[:2]) == expected
    assert len(expected) == 2 + 4 + 4 + 2 * 46


def test_write_and_read_round_trip(tmp_path: Path) -> None:
    path = tmp_path / snapshot_file_name(120)
    assert path.name == "00000000000000000120.snapshot"
    write_snapshot(path, ENTRIES)
    assert read_snapshot(path) == sorted(ENTRIES)
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temp file left
    assert read_snapshot(_write(tmp_path / snapshot_file_name(0), [])) == []
    first = ENTRIES[0]
    assert (first.first_sequence, first.first_offset) == (10, 116)
    assert ENTRIES[2].first_sequence == 2**31 - 3
    assert ProducerSnapshotEntry(1, 0, 1, 5, 3, T0).first_sequence == 2**31 - 2  # wrapped


def _write(path: Path, entries: list[ProducerSnapshotEntry]) -> Path:
    write_snapshot(path, entries)
    return path


def test_corruption_is_detected() -> None:
    good = encode_snapshot(ENTRIES)
    flipped = bytearray(good)
    flipped[20] ^= 0x01
    with pytest.raises(CorruptSnapshotError, match="CRC is no longer valid"):
        decode_snapshot(bytes(flipped))
    with pytest.raises(CorruptSnapshotError, match="CRC is no longer valid"):
        decode_snapshot(good + b"\0")
    with pytest.raises(CorruptSnapshotError, match="schema validation"):
        decode_snapshot(good[:-1])
    with pytest.raises(CorruptSnapshotError, match="schema validation"):
        decode_snapshot(b"\0\1")
    with pytest.raises(CorruptSnapshotError, match="unknown file version 2"):
        decode_snapshot(b"\0\2" + good[2:])


def test_a_corrupt_snapshot_is_deleted_with_a_warning_and_an_older_one_used(
    tmp_path: Path,
) -> None:
    write_snapshot(tmp_path / snapshot_file_name(10), ENTRIES[:1])
    newest = _write(tmp_path / snapshot_file_name(20), ENTRIES)
    newest.write_bytes(newest.read_bytes()[:-3])
    _write(tmp_path / snapshot_file_name(30), ENTRIES)  # above the log end offset
    state = ProducerStateManager(tmp_path)
    with capture_logs() as logs:
        assert state.truncate_and_reload(0, 25) == 10
    assert state.snapshot_entries() == ENTRIES[:1]
    assert _snapshots(tmp_path) == [10]
    assert [e["event"] for e in logs if e["log_level"] == "warning"] == [
        "producer_snapshot.corrupt"
    ]


# --- recovery -------------------------------------------------------------------------------


def test_snapshots_are_taken_at_rolls_and_close(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    partition = _open(directory)
    _produce(partition, {1: 0, 2: 0}, rounds=6)
    log = partition.log
    rolled = [s.base_offset for s in log.segments[1:]]
    assert len(rolled) >= 2
    assert _snapshots(directory) == rolled
    leo = log.log_end_offset
    log.flush()
    log.close()
    assert _snapshots(directory) == [*rolled, leo]
    assert (
        read_snapshot(directory / snapshot_file_name(leo))
        == partition.producer_state.snapshot_entries()
    )


@pytest.mark.parametrize("keep", ["all", "roll_snapshots_only", "none"])
def test_snapshot_and_replay_equal_a_full_replay(tmp_path: Path, keep: str) -> None:
    directory = tmp_path / "t-0"
    partition = _open(directory)
    _produce(partition, {1: 0, 2: 0, 3: 0}, rounds=5)
    log = partition.log
    log.flush()
    log.close()
    expected = _full_replay(Log(directory, CONFIG))
    snapshots = _snapshots(directory)
    if keep != "all":
        (directory / snapshot_file_name(snapshots[-1])).unlink()  # the close snapshot
    if keep == "none":
        for offset in snapshots[:-1]:
            (directory / snapshot_file_name(offset)).unlink()
    with capture_logs() as logs:
        reopened = _open(directory)
    assert reopened.producer_state.snapshot_entries() == expected
    loaded = (
        next(e for e in logs if e["event"] == "producer_state.loaded") if keep != "all" else None
    )
    if keep == "roll_snapshots_only":
        assert loaded is not None and loaded["snapshot_offset"] == snapshots[-2]
    if keep == "none":
        assert loaded is not None and loaded["snapshot_offset"] is None
    # having replayed, the open wrote a snapshot at the LEO: the next open replays nothing
    assert _snapshots(directory)[-1] == reopened.log_end_offset


def test_after_an_unclean_stop_a_retry_is_a_duplicate_and_a_gap_is_refused(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "t-0"
    partition = _open(directory)
    producers = {1: 0, 2: 0}
    _produce(partition, producers, rounds=4)
    last = _idempotent(2, 0, producers[2], count=2)
    partition.append_records_to_leader(last, 1)
    leo = partition.log_end_offset
    partition.log.flush()  # no close: no snapshot at the LEO, the replay covers the end

    reopened = _open(directory)
    info = reopened.append_records_to_leader(last, 1)
    assert (info.first_offset, info.last_offset) == (leo - 2, leo - 1)
    assert reopened.log_end_offset == leo
    with pytest.raises(OutOfOrderSequenceError):
        reopened.append_records_to_leader(_idempotent(1, 0, producers[1] + 1), 1)
    info = reopened.append_records_to_leader(_idempotent(1, 0, producers[1]), 1)
    assert info.first_offset == leo


def test_after_a_clean_close_the_last_batch_is_a_duplicate_and_old_epochs_are_fenced(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "t-0"
    partition = _open(directory)
    partition.append_records_to_leader(_idempotent(5, 0, 0, 3), 1)
    partition.append_records_to_leader(_idempotent(5, 1, 0, 2), 1)  # a new epoch
    partition.log.flush()
    partition.log.close()
    assert _snapshots(directory) == [5]

    reopened = _open(directory)
    info = reopened.append_records_to_leader(_idempotent(5, 1, 0, 2), 1)
    assert (info.first_offset, info.last_offset, reopened.log_end_offset) == (3, 4, 5)
    with pytest.raises(KafkaError) as fenced:
        reopened.append_records_to_leader(_idempotent(5, 0, 3), 1)
    assert fenced.value.code == ErrorCode.INVALID_PRODUCER_EPOCH
    with pytest.raises(OutOfOrderSequenceError):
        reopened.append_records_to_leader(_idempotent(5, 1, 3), 1)
    assert reopened.append_records_to_leader(_idempotent(5, 1, 2), 1).first_offset == 5


def test_a_follower_append_written_in_pieces_snapshots_each_piece_at_the_roll_after_it(
    tmp_path: Path,
) -> None:
    # A fetch larger than segment.bytes is appended in pieces, rolling between them
    # (Log.append_as_follower). The snapshot taken at such a roll covers the offsets below it:
    # it must hold the producers of the pieces before it, or a replay from it after an
    # unclean stop forgets them (a retry taken twice, a next batch out of sequence).
    directory = tmp_path / "t-0"
    partition = Partition(Log(directory, CONFIG), 1)
    partition.make_follower(
        PartitionRegistration(
            leader=2,
            leader_epoch=1,
            isr=(1, 2),
            replicas=(1, 2),
            partition_epoch=0,
            controller_epoch=1,
        )
    )
    fetched = [
        encode_batch(
            [(T0, None, b"x" * 40, ())],
            base_offset=offset,
            producer_id=1 if offset == 0 else 2,
            producer_epoch=0,
            base_sequence=0 if offset == 0 else offset - 1,
            partition_leader_epoch=1,
        )
        for offset in range(6)
    ]
    data = b"".join(fetched)
    assert len(fetched[0]) < CONFIG.segment_bytes < len(data)
    partition.append_records_as_follower(data)
    log = partition.log
    assert log.number_of_segments >= 2 and _snapshots(directory)
    expected = partition.producer_state.snapshot_entries()
    assert {e.producer_id for e in expected} == {1, 2}
    log.flush()  # no close: no snapshot at the LEO, the open replays from the last roll's

    reopened = _open(directory)
    assert reopened.producer_state.snapshot_entries() == expected
    with pytest.raises(OutOfOrderSequenceError):
        reopened.append_records_to_leader(_idempotent(1, 0, 2), 1)


# --- truncation and retention -----------------------------------------------------------------


def test_truncation_deletes_snapshots_above_the_new_end_and_rebuilds(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    partition = _open(directory)
    _produce(partition, {1: 0, 2: 0}, rounds=8)
    snapshots = _snapshots(directory)
    target = snapshots[1] + 1  # inside the segment after the second roll snapshot
    partition.make_follower(
        PartitionRegistration(
            leader=2,
            leader_epoch=2,
            isr=(1, 2),
            replicas=(1, 2),
            partition_epoch=1,
            controller_epoch=1,
        )
    )
    partition.truncate_to(target, "test")
    assert partition.log_end_offset <= target
    assert len(_snapshots(directory)) < len(snapshots)
    assert _snapshots(directory) == [o for o in snapshots if o <= partition.log_end_offset]
    assert partition.producer_state.snapshot_entries() == _full_replay(partition.log)

    partition.truncate_fully_and_start_at(1000, "test")
    assert _snapshots(directory) == []
    assert len(partition.producer_state) == 0


def test_retention_deletes_snapshots_below_the_log_start_but_keeps_the_newest(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "t-0"
    partition = _open(directory)
    _produce(partition, {1: 0, 2: 0}, rounds=8)
    log = partition.log
    snapshots = _snapshots(directory)
    assert len(snapshots) >= 3
    new_start = snapshots[1] + 1
    log.maybe_increment_log_start_offset(new_start)
    assert _snapshots(directory) == [o for o in snapshots if o >= new_start]
    log.delete_old_segments(0, high_watermark=log.log_end_offset)
    assert log.segments[0].base_offset == snapshots[1]  # the segment holding the new start
    assert _snapshots(directory) == [o for o in snapshots if o >= new_start]

    state = ProducerStateManager(directory)
    state.delete_snapshots_below(log.log_end_offset + 100)
    assert _snapshots(directory) == [snapshots[-1]]  # the newest always stays


# --- dump-log -------------------------------------------------------------------------------


def test_dump_log_prints_snapshots_as_kafka(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path / snapshot_file_name(121), ENTRIES[:2])
    capsys.readouterr()
    assert main(["dump-log", "--files", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"Dumping {path}",
        "producerId: 3 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: "
        f"OptionalLong.empty lastTimestamp: {T0} firstSequence: 0 lastSequence: 0 "
        f"lastOffset: 9 offsetDelta: 0 timestamp: {T0}",
        "producerId: 7 producerEpoch: 2 coordinatorEpoch: -1 currentTxnFirstOffset: "
        f"OptionalLong.empty lastTimestamp: {T0 + 5} firstSequence: 10 lastSequence: 14 "
        f"lastOffset: 120 offsetDelta: 4 timestamp: {T0 + 5}",
    ]
    path.write_bytes(path.read_bytes() + b"\0")
    assert main(["dump-log", "--files", str(path)]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [f"Dumping {path}"]
    assert captured.err.startswith("Snapshot is corrupt (CRC is no longer valid). Stored crc: ")
