"""Reads that leave the records in the segment file (``FileRecords``, for sendfile): the same
batches as a read into memory, still readable after the segment is deleted, short after a
truncation (what the sender detects), and a descriptor of their own that ``close`` gives back."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from minikafka.broker.storage.cleaner import CleanerConfig, LogCleaner, clean_log
from minikafka.broker.storage.log import Log
from minikafka.broker.storage.segment import FileRecords, LogSegment
from minikafka.proto.errors import CorruptRecordError
from minikafka.proto.records import encode_batch, iter_batch_headers, validate_batches
from tests.unit.storage.helpers import (
    T0,
    Clock,
    batch,
    memory_records,
    segment_files,
    small_config,
)
from tests.unit.storage.test_recovery import locate, reopen, written_log
from tests.unit.storage.test_recovery_point import flip


def _log(tmp_path: Path, batches: int = 40) -> Log:
    log = Log(tmp_path / "orders-0", small_config(), time_ms=Clock())
    for n in range(batches):
        log.append_as_leader(batch(3 + n % 4, timestamp=T0 + n, tag=n), 0)
    return log


def _segment(tmp_path: Path, batches: int = 12) -> tuple[LogSegment, list[bytes]]:
    segment = LogSegment.create(tmp_path, 0, small_config(), time_ms=Clock())
    written = []
    for n in range(batches):
        data = batch(3, base_offset=3 * n, timestamp=T0 + n, tag=n)
        segment.append(data, validate_batches(data))
        written.append(data)
    return segment, written


@pytest.mark.parametrize("max_bytes", [1, 250, 1000, 10_000])
@pytest.mark.parametrize("min_one_message", [True, False])
def test_the_same_batches_as_a_read(tmp_path: Path, max_bytes: int, min_one_message: bool) -> None:
    log = _log(tmp_path)
    assert len(log.segments) > 1  # reads that end at a segment's end, and in the middle
    for fetch_offset in range(0, log.log_end_offset + 1, 7):
        for max_offset in (None, fetch_offset + 5, log.log_end_offset - 3):
            read = log.read(fetch_offset, max_bytes, max_offset, min_one_message)
            left = log.read(fetch_offset, max_bytes, max_offset, min_one_message, file_records=True)
            assert left.first_entry_incomplete == read.first_entry_incomplete
            if not read.records:
                assert left.records == b""
                continue
            assert isinstance(left.records, FileRecords)
            assert len(left.records) == len(read.records)
            assert left.records.read_and_close() == read.records


def test_a_cleaned_log_reads_the_same(tmp_path: Path) -> None:
    """Batches the cleaner emptied, which a read steps over into the next segment: the same
    bytes either way."""
    clock = Clock()
    log = Log(tmp_path / "t-0", small_config(cleanup_policy=frozenset({"compact"})), time_ms=clock)
    cleaner = LogCleaner(CleanerConfig(), time_ms=clock)
    for _ in range(3):
        for i in range(60):
            log.append_as_leader(encode_batch([(T0, b"k%d" % (i % 3), b"v" * 30, ())]), 1)
        log.roll()
        clean_log(cleaner, log, force=True)
    records = memory_records(log.read(0, 1 << 20).records)
    assert any(h.record_count == 0 for _, h in iter_batch_headers(records))
    for fetch_offset in range(log.log_start_offset, log.log_end_offset):
        for max_bytes in (1, 200, 1 << 20):
            read = log.read(fetch_offset, max_bytes)
            left = log.read(fetch_offset, max_bytes, file_records=True)
            assert _bytes_of(left.records) == read.records


def test_readable_after_the_segment_is_deleted(tmp_path: Path) -> None:
    segment, written = _segment(tmp_path)
    info = segment.read(9, 10_000, file_records=True)
    assert info is not None and isinstance(info.records, FileRecords)
    segment.delete()
    assert not segment.path.exists()
    assert info.records.read() == b"".join(written[3:])
    info.records.close()


def test_short_after_a_truncation(tmp_path: Path) -> None:
    segment, written = _segment(tmp_path)
    info = segment.read(0, 10_000, file_records=True)
    assert info is not None and isinstance(info.records, FileRecords)
    segment.truncate_to(15)  # a leader become follower cuts what was not committed
    assert info.records.size == len(b"".join(written))  # what the answer's size promised
    assert info.records.read() == b"".join(written[:5])
    info.records.close()
    segment.close()


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_records_left_in_the_file_open_no_descriptor_of_their_own(tmp_path: Path) -> None:
    """As Kafka's slices share their segment's FileChannel: answers in flight to clients that
    never read (each holds its records until connections.max.idle.ms) must not spend the
    descriptors a segment roll or an accept needs."""
    segment, written = _segment(tmp_path)
    before = _open_descriptors()
    held = [segment.read(0, 10_000, file_records=True) for _ in range(200)]
    assert _open_descriptors() == before
    for info in held:
        assert info is not None and isinstance(info.records, FileRecords)
        assert info.records.read_and_close() == b"".join(written)
    segment.close()


def test_the_segments_descriptor_is_closed_by_the_last_to_let_go(tmp_path: Path) -> None:
    segment, written = _segment(tmp_path)
    first = segment.read(0, 10_000, file_records=True)
    second = segment.read(0, 10_000, file_records=True)
    assert first is not None and isinstance(first.records, FileRecords)
    assert second is not None and isinstance(second.records, FileRecords)
    fd = first.records.fd
    segment.close()
    first.records.close()
    assert first.records.fd == -1
    first.records.close()  # twice is harmless
    assert second.records.read() == b"".join(written)  # still open for the other
    second.records.close()
    with pytest.raises(OSError):
        os.fstat(fd)


def _bytes_of(records: bytes | FileRecords) -> bytes:
    return records.read_and_close() if isinstance(records, FileRecords) else records


@pytest.mark.parametrize("damage", ["flipped byte", "batch length"])
def test_segments_recovery_did_not_check_are_checked_and_left_in_the_file(
    tmp_path: Path, damage: str
) -> None:
    """After a restart the segments below the recovery point are unverified: their records
    are still left in the file (a restarted broker must not read every answer into memory),
    after the same check a read makes: the same cut before the damage, the same refusal at it."""
    directory, _ = written_log(tmp_path)
    segments = segment_files(directory)
    path, position = locate(directory, 3)
    if damage == "flipped byte":
        flip(path, position + 70)
    else:
        data = bytearray(path.read_bytes())
        data[position + 8 : position + 12] = (1 << 30).to_bytes(4, "big")
        path.write_bytes(bytes(data))
    log = reopen(directory, recovery_point=int(segments[2].name[:20]))
    assert not log.segments[0].verified
    for fetch_offset in (0, 3, 6, 40, 87):
        for max_bytes in (1, 1 << 20):
            try:
                expected: bytes | type[Exception] = memory_records(
                    log.read(fetch_offset, max_bytes).records
                )
            except CorruptRecordError:
                expected = CorruptRecordError
            try:
                left = log.read(fetch_offset, max_bytes, file_records=True).records
            except CorruptRecordError:
                assert expected is CorruptRecordError
                continue
            assert isinstance(left, FileRecords) or not left
            assert _bytes_of(left) == expected


def _bytes_read() -> int:
    """What this process has read with read(2) and pread(2) so far (Linux's rchar)."""
    with open("/proc/self/io") as io:
        return next(int(line.split()[1]) for line in io if line.startswith("rchar:"))


def test_a_read_cut_by_its_size_reads_only_the_batch_headers_near_the_cut(
    tmp_path: Path,
) -> None:
    """A consumer catching up asks for less than the segment holds: the last whole batch is
    found from the offset index's entry before the cut, not by reading the slice's bytes,
    which would undo leaving them in the file."""
    log = Log(
        tmp_path / "orders-0",
        small_config(segment_bytes=64 << 20, index_interval_bytes=4096),
        time_ms=Clock(),
    )
    for n in range(1000):
        log.append_as_leader(batch(1, timestamp=T0 + n, tag=n, value_size=1000), 0)
    assert log.segments[0].offset_index.entries > 100  # loaded before counting
    before = _bytes_read()
    left = log.read(0, 512 << 10, file_records=True).records
    read_for_it = _bytes_read() - before
    assert isinstance(left, FileRecords)
    assert 500 << 10 < len(left) <= 512 << 10
    assert read_for_it < 32 << 10  # the index interval and a scan chunk, not 512 KiB
    assert left.read_and_close() == log.read(0, 512 << 10).records
