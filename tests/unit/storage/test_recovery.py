"""Opening a log after a crash: torn tails, corrupt batches, gaps, bad or missing indexes,
leftover temp files. Nothing before the first bad batch may be lost; nothing after it served."""

from __future__ import annotations

from pathlib import Path

from structlog.testing import capture_logs

from minikafka.broker.storage.epoch_cache import EpochEntry
from minikafka.broker.storage.log import Log
from tests.unit.storage.helpers import (
    Clock,
    batch,
    headers_in,
    memory_records,
    offsets_of,
    read_all,
    segment_files,
    small_config,
)


def written_log(tmp_path: Path, batches: int = 30) -> tuple[Path, list[bytes]]:
    """A closed log of 3-record batches over several segments; returns its dir and the
    batches as stored."""
    log = Log(tmp_path / "events-0", small_config(), time_ms=Clock())
    for n in range(batches):
        log.append_as_leader(batch(3, tag=n), leader_epoch=n // 10)
    stored = [memory_records(log.read(3 * n, 1).records) for n in range(batches)]
    log.flush()
    log.close()
    return log.dir, stored


def reopen(directory: Path, recovery_point: int = 0) -> Log:
    return Log(directory, small_config(), recovery_point=recovery_point, time_ms=Clock())


def locate(directory: Path, offset: int) -> tuple[Path, int]:
    """(segment file, byte position) of the batch with base offset ``offset``."""
    for path in segment_files(directory):
        for position, base, _ in headers_in(path.read_bytes()):
            if base == offset:
                return path, position
    raise AssertionError(f"no batch at offset {offset}")


def test_torn_tail_of_the_active_segment(tmp_path: Path) -> None:
    directory, stored = written_log(tmp_path)
    active = segment_files(directory)[-1]
    data = active.read_bytes()
    active.write_bytes(data[: len(data) - 7])  # the last batch loses its last 7 bytes
    with capture_logs() as events:
        log = reopen(directory)
    assert log.log_end_offset == 87
    assert read_all(log) == b"".join(stored[:29])
    [event] = [e for e in events if e["event"] == "log.recovery.truncated"]
    assert event["log_level"] == "warning"
    assert event["topic"] == "events" and event["partition"] == 0
    assert event["segment"] == active.name
    assert event["bytes_truncated"] == len(stored[29]) - 7
    assert event["offset"] == 87


def test_flipped_byte_in_a_middle_batch(tmp_path: Path) -> None:
    directory, stored = written_log(tmp_path)
    segments_before = segment_files(directory)
    path, position = locate(directory, 30)  # batch 10, in a middle segment
    data = bytearray(path.read_bytes())
    data[position + 70] ^= 0x01  # inside the records: only the CRC can tell
    path.write_bytes(bytes(data))
    with capture_logs() as events:
        log = reopen(directory)
    assert log.log_end_offset == 30
    assert read_all(log) == b"".join(stored[:10])
    # The damaged segment keeps what precedes the bad batch; later segments are gone.
    remaining = segment_files(directory)
    assert remaining == [p for p in segments_before if p <= path]
    truncated = [e for e in events if e["event"] == "log.recovery.truncated"]
    assert truncated[0]["segment"] == path.name
    assert "CRC" in truncated[0]["reason"]
    # Epoch 1 started at offset 30, which is gone with the bad batch.
    assert log.leader_epoch_cache.entries == [EpochEntry(0, 0)]
    log.append_as_leader(batch(1), 5)
    assert offsets_of(read_all(log))[-1] == 30


def test_corrupt_base_offset_is_caught_although_no_crc_covers_it(tmp_path: Path) -> None:
    directory, stored = written_log(tmp_path)
    path, position = locate(directory, 45)
    data = bytearray(path.read_bytes())
    data[position + 7] ^= 0x04  # baseOffset 45 -> 41: offsets no longer follow on
    path.write_bytes(bytes(data))
    log = reopen(directory)
    assert log.log_end_offset == 45
    assert read_all(log) == b"".join(stored[:15])


def test_missing_segment_in_the_middle_drops_what_follows(tmp_path: Path) -> None:
    directory, stored = written_log(tmp_path)
    middle = segment_files(directory)[1]
    first_next = segment_files(directory)[2]
    middle.unlink()
    with capture_logs() as events:
        log = reopen(directory)
    assert log.log_end_offset == int(middle.name[:20])
    assert first_next not in segment_files(directory)
    assert read_all(log) == b"".join(stored[: log.log_end_offset // 3])
    assert any(e["event"] == "log.recovery.truncated" for e in events)


def test_only_segments_from_the_recovery_point_are_revalidated(tmp_path: Path) -> None:
    directory, stored = written_log(tmp_path)
    path, position = locate(directory, 3)  # in the first segment
    data = bytearray(path.read_bytes())
    data[position + 70] ^= 0x01
    path.write_bytes(bytes(data))
    segments = segment_files(directory)
    recovery_point = int(segments[1].name[:20])
    # As in Kafka, flushed data below the recovery point is trusted, not re-read.
    log = reopen(directory, recovery_point=recovery_point)
    assert log.log_end_offset == 90
    log.close()
    # Without a recovery point (no checkpoint), everything is re-validated.
    log = reopen(directory)
    assert log.log_end_offset == 3
    assert read_all(log) == stored[0]


def test_missing_index_is_rebuilt(tmp_path: Path) -> None:
    directory, stored = written_log(tmp_path)
    first = segment_files(directory, ".index")[0]
    expected = first.read_bytes()
    first.unlink()
    with capture_logs() as events:
        log = reopen(directory, recovery_point=90)
    assert first.read_bytes() == expected
    rebuilt = [e for e in events if e["event"] == "index.rebuilt"]
    assert [e["segment"] for e in rebuilt] == [first.name.replace(".index", ".log")]
    assert "missing" in rebuilt[0]["reason"]
    assert read_all(log) == b"".join(stored)
    assert log.log_end_offset == 90


def test_corrupt_indexes_are_rebuilt(tmp_path: Path) -> None:
    directory, stored = written_log(tmp_path)
    indexes = segment_files(directory, ".index")
    timeindexes = segment_files(directory, ".timeindex")
    good = [p.read_bytes() for p in indexes], [p.read_bytes() for p in timeindexes]
    indexes[0].write_bytes(indexes[0].read_bytes()[:-3])  # partial entry
    data = bytearray(indexes[1].read_bytes())
    data[-1] ^= 0x10  # position of the last entry off its batch
    indexes[1].write_bytes(bytes(data))
    timeindexes[2].write_bytes(b"\xff" * 24)  # nonsense entries
    with capture_logs() as events:
        log = reopen(directory, recovery_point=90)
    assert len([e for e in events if e["event"] == "index.rebuilt"]) == 3
    assert [p.read_bytes() for p in indexes] == good[0]
    assert [p.read_bytes() for p in timeindexes] == good[1]
    assert read_all(log) == b"".join(stored)


def test_leftovers_are_cleaned_up(tmp_path: Path) -> None:
    directory, stored = written_log(tmp_path)
    for name in (
        "00000000000000000003.log.deleted",
        "00000000000000000003.index.deleted",
        "00000000000000000000.log.cleaned",
        "leader-epoch-checkpoint.tmp",
        "00000000000000999999.index",  # an index without its .log
        "00000000000000999999.timeindex",
    ):
        (directory / name).write_bytes(b"junk")
    log = reopen(directory, recovery_point=90)
    names = {p.name for p in directory.iterdir()}
    assert not any(n.endswith((".deleted", ".cleaned", ".tmp")) for n in names)
    assert "00000000000000999999.index" not in names
    assert read_all(log) == b"".join(stored)


def test_files_not_named_by_an_offset_and_suffix_are_left_alone(tmp_path: Path) -> None:
    # proto.log_files names the files: digits (ASCII only), then the suffix from the first dot.
    # "²³" passes str.isdigit but not int(); "<offset>.old.log" ends with .log but names no
    # segment: read as one, it became an empty segment 5 among the others.
    directory, stored = written_log(tmp_path)
    bases = [int(p.name[:20]) for p in segment_files(directory)]
    strays = ("²³.log", "00000000000000000005.old.log", "notes.index")
    for name in strays:
        (directory / name).write_bytes(b"junk")
    log = reopen(directory, recovery_point=90)
    assert [s.base_offset for s in log.segments] == bases
    assert read_all(log) == b"".join(stored)
    assert all((directory / name).read_bytes() == b"junk" for name in strays)
    assert not (directory / "00000000000000000005.log").exists()


def test_an_interrupted_swap_is_completed(tmp_path: Path) -> None:
    directory, stored = written_log(tmp_path)
    segments = segment_files(directory)
    # A replacement for the first two segments, fully written as .swap, before the rename.
    second_end = int(segments[2].name[:20])
    replacement = b"".join(stored[: second_end // 3])
    (directory / (segments[0].name + ".swap")).write_bytes(replacement)
    log = reopen(directory, recovery_point=90)
    assert [s.base_offset for s in log.segments][0:2] == [0, second_end]
    assert read_all(log) == b"".join(stored)
    assert not any(p.name.endswith(".swap") for p in directory.iterdir())


def test_clean_shutdown_skips_recovery(tmp_path: Path) -> None:
    directory, stored = written_log(tmp_path)
    with capture_logs() as events:
        log = Log(directory, small_config(), had_clean_shutdown=True, time_ms=Clock())
    assert log.recovery_point == log.log_end_offset == 90
    assert read_all(log) == b"".join(stored)
    assert not [e for e in events if e["event"] in ("index.rebuilt", "log.recovery.truncated")]


def test_epoch_cache_is_cut_back_to_the_recovered_end(tmp_path: Path) -> None:
    directory, _ = written_log(tmp_path)
    (directory / "leader-epoch-checkpoint").write_text("0\n4\n0 0\n1 30\n2 60\n9 95\n")
    log = reopen(directory)
    assert log.leader_epoch_cache.entries == [
        EpochEntry(0, 0),
        EpochEntry(1, 30),
        EpochEntry(2, 60),
    ]


def test_epoch_cache_is_rebuilt_from_batches_when_its_file_is_missing(tmp_path: Path) -> None:
    directory, _ = written_log(tmp_path)
    (directory / "leader-epoch-checkpoint").unlink()
    log = reopen(directory)
    assert log.leader_epoch_cache.entries == [
        EpochEntry(0, 0),
        EpochEntry(1, 30),
        EpochEntry(2, 60),
    ]


def test_log_start_offset_beyond_the_data_empties_the_log(tmp_path: Path) -> None:
    directory, _ = written_log(tmp_path)
    log = Log(directory, small_config(), log_start_offset=200, time_ms=Clock())
    assert (log.log_start_offset, log.log_end_offset) == (200, 200)
    assert [p.name for p in segment_files(directory)] == ["00000000000000000200.log"]
