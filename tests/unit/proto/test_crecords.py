"""proto._crecords (C) against proto.records' Python code: the same bytes, the same records, the
same errors. Skipped where the extension was not built; CI builds it (scripts/test.sh)."""

from __future__ import annotations

import array
import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.client.consumer.fetcher import ConsumerRecord
from minikafka.proto import records
from minikafka.proto.errors import CorruptRecordError
from minikafka.proto.records import PyRecordsBuffer, Record, TimestampType
from minikafka.proto.records import _varint_slow as _varint  # zig-zag varint of any int64

if os.environ.get("CI") == "true" and not os.environ.get("MINIKAFKA_PURE_PYTHON"):
    from minikafka.proto import (
        _crecords,  # CI must have built it: a failed build is a failure there
    )
else:
    _crecords = pytest.importorskip("minikafka.proto._crecords")
if TYPE_CHECKING:
    from minikafka.proto._crecords import RecordsBuffer as CRecordsBuffer

INT64 = st.integers(min_value=-(2**62), max_value=2**62)
header_st = st.tuples(st.text(max_size=20), st.none() | st.binary(max_size=300))
record_st = st.tuples(
    st.integers(min_value=-(2**40), max_value=2**45),
    st.none() | st.binary(max_size=300),
    st.none() | st.binary(max_size=20_000),
    st.lists(header_st, max_size=6).map(tuple),
)


def both(recs: list[records.RecordInput]) -> tuple[PyRecordsBuffer, CRecordsBuffer]:
    py, c = PyRecordsBuffer(), _crecords.RecordsBuffer()
    for timestamp, key, value, headers in recs:
        assert py.append(timestamp, key, value, headers) == c.append(timestamp, key, value, headers)
    return py, c


@settings(max_examples=300, deadline=None)
@given(st.lists(record_st, max_size=30))
def test_the_c_buffer_writes_the_same_bytes_and_counters(recs: list[records.RecordInput]) -> None:
    py, c = both(recs)
    assert c.records() == py.records()
    assert (c.record_count, c.size, c.base_timestamp, c.max_timestamp) == (
        py.record_count,
        py.size,
        py.base_timestamp,
        py.max_timestamp,
    )


def test_both_buffers_copy_any_bytes_like_key_and_value() -> None:
    key = bytearray(b"k")
    wide = memoryview(array.array("i", [1, 2]))  # two items, eight bytes
    bytes_like: list[Any] = [(5, key, wide, (("h", bytearray(b"x")),))]  # not only bytes
    py, c = both(bytes_like)
    key[0] = ord("z")  # both copied the key at append
    assert c.records() == py.records()
    (record,), _ = records._py_decode_records(py.records(), 0, 1, 0, 5, False, Record, (), ())
    assert (record.key, record.value) == (b"k", wide.tobytes())


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ((1, "text", None), TypeError),
        ((1, None, 7), TypeError),
        (("1", None, b""), TypeError),
        ((2**63, None, b""), OverflowError),
        ((1, None, b"", ((b"bytes key", b""),)), TypeError),
        ((1, None, b"", (("one",),)), ValueError),
        ((1, None, b"", 5), TypeError),
    ],
)
def test_bad_input_to_the_c_buffer_raises_and_leaves_it_unchanged(
    args: tuple[Any, ...], error: type[Exception]
) -> None:
    c = _crecords.RecordsBuffer()
    c.append(10, b"k", b"v")
    before = (c.records(), c.record_count, c.size, c.max_timestamp)
    with pytest.raises(error):
        c.append(*args)
    assert (c.records(), c.record_count, c.size, c.max_timestamp) == before


def test_a_timestamp_delta_outside_int64_is_refused() -> None:
    c = _crecords.RecordsBuffer()
    c.append(-(2**63), None, b"")
    with pytest.raises(OverflowError):
        c.append(2**63 - 1, None, b"")
    assert c.record_count == 1


def decode_both(data: bytes, count: int, wide: bool, log_append_time: bool = False) -> list[Any]:
    """Each decoder's records, or the type of what it raised."""
    args: tuple[Any, ...] = (data, 0, count, 100, 1_000, log_append_time) + (
        (ConsumerRecord, ("t", 3), (0,)) if wide else (Record, (), ())
    )
    outcomes: list[Any] = []
    for decode in (records._py_decode_records, _crecords.decode_records):
        try:
            outcomes.append(decode(*args))
        except CorruptRecordError:
            outcomes.append(CorruptRecordError)
    return outcomes


@settings(max_examples=300, deadline=None)
@given(st.lists(record_st, max_size=30), st.booleans(), st.booleans())
def test_the_c_decoder_makes_the_same_records(
    recs: list[records.RecordInput], wide: bool, log_append_time: bool
) -> None:
    py, _ = both(recs)
    data = py.records()
    python_out, c_out = decode_both(data, len(recs), wide, log_append_time)
    assert c_out == python_out
    assert all(type(r) is (ConsumerRecord if wide else Record) for r in c_out[0])


@settings(max_examples=500, deadline=None)
@given(
    st.lists(record_st, min_size=1, max_size=5),
    st.data(),
)
def test_the_c_decoder_refuses_damaged_records_as_python_does(
    recs: list[records.RecordInput], data: st.DataObject
) -> None:
    """Cut or flip bytes: both decoders give CorruptRecordError, or both the same records."""
    py, _ = both(recs)
    raw = bytearray(py.records())
    if data.draw(st.booleans()):
        raw = raw[: data.draw(st.integers(0, len(raw) - 1))]
    else:
        for _ in range(data.draw(st.integers(1, 4))):
            raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    python_out, c_out = decode_both(bytes(raw), len(recs), data.draw(st.booleans()))
    if python_out is CorruptRecordError or c_out is CorruptRecordError:
        # The C decoder is stricter only where Python's reads past a record's end and then
        # finds the length wrong: both refuse the data, with their own messages.
        assert python_out is CorruptRecordError
        assert c_out is CorruptRecordError
    else:
        assert c_out == python_out


def test_the_c_decoder_reads_from_pos_and_reports_where_it_stopped() -> None:
    py, _ = both([(7, b"a", b"b", ()), (8, None, b"c", ())])
    data = b"junk" + py.records() + b"tail"
    got, end = _crecords.decode_records(data, 4, 2, 0, 7, False, Record, (), ())
    assert [(r.offset, r.timestamp, r.key, r.value) for r in got] == [
        (0, 7, b"a", b"b"),
        (1, 8, None, b"c"),
    ]
    assert data[end:] == b"tail"


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ((b"", 0, 0, 0, 0, False, dict, (), ()), TypeError),
        ((b"", 0, 0, 0, 0, False, Record, ("t",), ()), ValueError),
        ((b"", 5, 0, 0, 0, False, Record, (), ()), ValueError),
        ((b"", 0, 0, 0, 0, False, os.stat_result, (), ()), TypeError),  # a C tuple subclass
    ],
)
def test_the_c_decoder_refuses_bad_arguments(args: tuple[Any, ...], error: type[Exception]) -> None:
    with pytest.raises(error):
        _crecords.decode_records(*args)


@pytest.mark.skipif(
    bool(os.environ.get("MINIKAFKA_PURE_PYTHON")), reason="MINIKAFKA_PURE_PYTHON turns it off"
)
def test_records_use_the_c_code_when_it_is_built() -> None:
    assert records.ACCELERATED
    assert issubclass(records.RecordBatchBuilder, _crecords.RecordsBuffer)
    builder = records.RecordBatchBuilder()
    builder.append(1, None, b"x")
    header, got = records.decode_batch(builder.build(7, timestamp_type=TimestampType.CREATE_TIME))
    assert header.base_offset == 7
    assert [(r.offset, r.value) for r in got] == [(7, b"x")]


class _ClearsOnIter:
    """A header pair whose iteration runs Python code that changes the headers around it."""

    def __init__(self, effect: Callable[[], object]) -> None:
        self.effect = effect

    def __iter__(self) -> Iterator[object]:
        self.effect()
        return iter(("k", b"v"))


def test_python_code_run_by_append_cannot_change_headers_under_it() -> None:
    headers: list[Any] = []  # not the pairs append is typed for: that is the test
    headers[:] = [_ClearsOnIter(headers.clear), ("a", b"b"), ("c", b"d")]
    c = _crecords.RecordsBuffer()
    c.append(0, None, b"x", headers)
    # the headers as they were when append looked at them
    py = PyRecordsBuffer()
    py.append(0, None, b"x", (("k", b"v"), ("a", b"b"), ("c", b"d")))
    assert c.records() == py.records()

    pair: list[Any] = ["k", b"\xab" * 4096]  # the list holds the only reference to the value
    hostile: list[Any] = [pair, _ClearsOnIter(lambda: pair.__setitem__(1, None))]
    c = _crecords.RecordsBuffer()
    c.append(0, None, None, hostile)
    assert c.records().count(b"\xab") == 4096


def test_a_reentrant_append_does_not_leave_a_stale_offset_delta() -> None:
    c = _crecords.RecordsBuffer()
    reentrant: list[Any] = [_ClearsOnIter(lambda: c.append(200, None, b"inner"))]
    c.append(100, None, b"outer", reentrant)
    got, _ = records._py_decode_records(
        c.records(), 0, 2, 0, c.base_timestamp, False, Record, (), ()
    )
    assert [(r.offset, r.timestamp, r.value) for r in got] == [
        (0, 200, b"inner"),
        (1, 100, b"outer"),
    ]


@pytest.mark.parametrize(
    ("body", "base"),
    [
        # offset and timestamp deltas of 2^62 on bases of 2^62: past int64
        (b"\x00" + _varint(2**62) + _varint(2**62) + _varint(-1) + _varint(-1) + b"\x00", 2**62),
        # small deltas on a base at the very top
        (b"\x00" + _varint(1) + _varint(1) + _varint(-1) + _varint(-1) + b"\x00", 2**63 - 1),
        # a ten-byte varint with more than 64 bits
        (b"\x00" + b"\x80" * 9 + b"\x02" + b"\x00" + _varint(-1) + _varint(-1) + b"\x00", 0),
    ],
)
def test_both_decoders_refuse_offsets_and_timestamps_beyond_int64(body: bytes, base: int) -> None:
    data = _varint(len(body)) + body
    for decode in (records._py_decode_records, _crecords.decode_records):
        with pytest.raises(CorruptRecordError):
            decode(data, 0, 1, base, base, False, Record, (), ())


column_record_st = st.tuples(
    st.none() | st.binary(max_size=40),
    st.none() | st.binary(max_size=400),
    st.none() | st.lists(header_st, max_size=3).map(tuple),
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(column_record_st, min_size=1, max_size=40),
    st.booleans(),
    st.booleans(),
    st.integers(min_value=0, max_value=3000),
    st.integers(min_value=0, max_value=3000),
)
def test_append_many_matches_in_c_and_python(
    recs: list[tuple[bytes | None, bytes | None, tuple[records.Header, ...] | None]],
    with_keys: bool,
    with_headers: bool,
    limit: int,
    full_at: int,
) -> None:
    keys = tuple(k for k, _, _ in recs) if with_keys else None
    values = tuple(v for _, v, _ in recs)
    headers = tuple(h for _, _, h in recs) if with_headers else None
    py, c = PyRecordsBuffer(), _crecords.RecordsBuffer()
    stops = []
    for buffer in (py, c):
        calls = [0]
        while calls[-1] < len(values):  # each call further by 500 bytes, as a batch that grows
            more = 500 * len(calls)
            calls.append(
                buffer.append_many(
                    7, keys, values, headers, calls[-1], len(values), limit + more, full_at + more
                )
            )
        stops.append(calls)
    assert stops[0] == stops[1]
    assert c.records() == py.records()
    assert (c.record_count, c.size) == (py.record_count, py.size)
    assert records._py_scan_records(keys, values, headers) == _crecords.scan_records(
        keys, values, headers
    )


@pytest.mark.parametrize(
    ("keys", "values", "error"),
    [
        (None, (b"a", bytearray(b"b")), TypeError),  # the many-record calls take bytes only
        ((b"k",), (b"a", b"b"), ValueError),  # a column shorter than the values
        (None, None, TypeError),
    ],
)
def test_append_many_and_scan_refuse_bad_columns_in_c_and_python(
    keys: Any, values: Any, error: type[Exception]
) -> None:
    for buffer in (PyRecordsBuffer(), _crecords.RecordsBuffer()):
        with pytest.raises(error):
            buffer.append_many(0, keys, values, None, 0, 2, 1 << 20, 1 << 20)
    for scan in (records._py_scan_records, _crecords.scan_records):
        with pytest.raises(error):
            scan(keys, values, None)


def test_scan_finds_the_largest_record_and_the_first_without_key_or_value() -> None:
    values = (b"a" * 10, None, b"b" * 30)
    for scan in (records._py_scan_records, _crecords.scan_records):
        assert scan(None, values, None) == (21 + 30, 1)
        assert scan((b"k", b"k", None), values, None) == (21 + 30, -1)
        assert scan(None, values, (None, (("hh", b"vvv"),), None)) == (21 + 30, 1)
        assert scan(None, (b"x",), ((("hh", b"vvv"),),)) == (21 + 1 + 2 + 3 + 10, -1)
