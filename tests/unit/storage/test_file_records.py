"""Reads that leave the records in the segment file (``FileRecords``, for sendfile): the same
batches as a read into memory, still readable after the segment is deleted, short after a
truncation (what the sender detects), and a descriptor of their own that ``close`` gives back."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from minikafka.broker.storage.log import Log
from minikafka.broker.storage.segment import FileRecords, LogSegment
from minikafka.proto.records import validate_batches
from tests.unit.storage.helpers import T0, Clock, batch, small_config


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


def test_close_gives_the_descriptor_back(tmp_path: Path) -> None:
    segment, _ = _segment(tmp_path)
    info = segment.read(0, 10_000, file_records=True)
    assert info is not None and isinstance(info.records, FileRecords)
    fd = info.records.fd
    os.fstat(fd)
    info.records.close()
    with pytest.raises(OSError):
        os.fstat(fd)
    info.records.close()  # twice is harmless
    segment.close()


def test_out_of_descriptors_reads_instead(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # EMFILE is a busy broker, not a failing disk: the read goes on, into memory.
    segment, written = _segment(tmp_path)

    def no_more(fd: int) -> int:
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(os, "dup", no_more)
    info = segment.read(0, 10_000, file_records=True)
    assert info is not None and info.records == b"".join(written)
    monkeypatch.undo()
    segment.close()
