"""The hop tracer: one line per traced offset an event moves past, and the end offset of an
answer's records read from their batch headers (bytes or left in a segment file)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from minikafka.broker.replication import hop_trace
from minikafka.broker.replication.hop_trace import HopTrace, records_end
from minikafka.broker.storage.segment import FileRecords, _SharedFile
from minikafka.proto.records import encode_batch


def _lines(directory: Path) -> list[list[str]]:
    (path,) = directory.glob("hops-*.tsv")
    return [line.split("\t") for line in path.read_text().splitlines()]


def test_an_event_writes_a_line_per_traced_offset_it_covers(tmp_path: Path) -> None:
    trace = HopTrace(str(tmp_path), every=10, broker_id=2)
    trace.offsets("hw", "t", 0, 1, 10)  # covers no multiple of 10: nothing
    trace.offsets("hw", "t", 0, 10, 11)
    trace.offsets("follower_leo", "t", 1, 5, 31, peer=3)
    trace.appended("t", 0, 20, 21, began_ns=123)
    trace.close()
    rows = _lines(tmp_path)
    assert [row[1:] for row in rows] == [
        ["2", "hw", "t", "0", "10", "-1"],
        ["2", "follower_leo", "t", "1", "10", "3"],
        ["2", "follower_leo", "t", "1", "20", "3"],
        ["2", "follower_leo", "t", "1", "30", "3"],
        ["2", "append_begin", "t", "0", "20", "-1"],
        ["2", "appended", "t", "0", "20", "-1"],
    ]
    assert rows[4][0] == "123"
    assert int(rows[5][0]) > 123  # monotonic_ns, stamped when written


def _two_batches() -> bytes:
    first = bytearray(encode_batch([(0, None, b"a", ()), (0, None, b"b", ())], base_offset=40))
    second = encode_batch([(0, None, b"c", ())] * 3, base_offset=42)
    return bytes(first) + second


def test_records_end_reads_the_last_batch_header() -> None:
    assert records_end(_two_batches()) == 45
    assert records_end(b"") == -1


def test_records_end_in_a_segment_file(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.log"
    data = b"\0" * 7 + _two_batches()
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    records = FileRecords(_SharedFile(fd), 7, len(data) - 7)
    try:
        assert records_end(records) == 45
    finally:
        records.close()


def test_a_trace_that_cannot_be_written_stops_tracing_not_the_broker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = HopTrace(str(tmp_path), every=1)
    monkeypatch.setattr(hop_trace, "TRACE", trace)
    trace.close()  # every write now fails (EBADF), as a full disk's would (ENOSPC)
    trace.offsets("hw", "t", 0, 0, 5)
    assert hop_trace.TRACE is None
