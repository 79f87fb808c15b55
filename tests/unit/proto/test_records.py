"""RecordBatch v2 codec, checked both ways against kafka-python's independent implementation."""

from __future__ import annotations

import struct
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from minikafka.client.consumer.fetcher import ConsumerRecord
from minikafka.proto import records
from minikafka.proto.errors import (
    CorruptRecordError,
    ErrorCode,
    InvalidRecordError,
    RecordTooLargeError,
    UnsupportedCompressionTypeError,
)
from minikafka.proto.records import Compression

ALL_CODECS = list(Compression)

SAMPLE = [
    (1_700_000_000_000, b"key-0", b"value-0", ()),
    (1_700_000_000_005, None, b"v" * 300, (("trace", b"abc"), ("empty", None))),
    (1_699_999_999_990, b"k" * 200, None, ()),  # earlier than base: negative timestamp delta
    (1_700_000_100_000, b"", b"", (("h", b""),)),
]


def kafka_python_batch(
    recs: Sequence[records.RecordInput],
    codec: Compression,
    producer_id: int = -1,
    base_sequence: int = -1,
) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=int(codec),
        is_transactional=False,
        producer_id=producer_id,
        producer_epoch=0 if producer_id >= 0 else -1,
        base_sequence=base_sequence,
        batch_size=1 << 30,
    )
    for i, (ts, key, value, headers) in enumerate(recs):
        builder.append(i, timestamp=ts, key=key, value=value, headers=list(headers))
    return bytes(builder.build())


@pytest.mark.parametrize("codec", ALL_CODECS, ids=lambda c: c.name)
def test_our_batches_decode_in_kafka_python(codec: Compression) -> None:
    data = records.encode_batch(SAMPLE, base_offset=42, compression=codec)
    batch = MemoryRecords(data).next_batch()
    assert batch.validate_crc()
    assert batch.base_offset == 42
    assert batch.compression_type == int(codec)
    got = [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in batch]
    want = [(42 + i, ts, k, v, tuple(h)) for i, (ts, k, v, h) in enumerate(SAMPLE)]
    assert got == want
    assert batch.max_timestamp == max(ts for ts, *_ in SAMPLE)


@pytest.mark.parametrize("codec", ALL_CODECS, ids=lambda c: c.name)
def test_kafka_python_batches_decode_here(codec: Compression) -> None:
    data = kafka_python_batch(SAMPLE, codec, producer_id=7, base_sequence=3)
    header, recs = records.decode_batch(data)
    assert header.compression is codec
    assert header.producer_id == 7
    assert header.base_sequence == 3
    assert header.record_count == len(SAMPLE)
    assert [(r.timestamp, r.key, r.value, r.headers) for r in recs] == [
        (ts, k, v, tuple(h)) for ts, k, v, h in SAMPLE
    ]
    assert [r.offset for r in recs] == list(range(len(SAMPLE)))


def test_byte_identical_to_kafka_python_uncompressed() -> None:
    recs = [(1000 + i * 7, b"k%d" % i if i % 2 else None, b"x" * i, ()) for i in range(50)]
    ours = records.encode_batch(recs)
    theirs = kafka_python_batch(recs, Compression.NONE)
    # Same bytes except partitionLeaderEpoch: a producer writes -1 there (the Java client's
    # NO_PARTITION_LEADER_EPOCH), kafka-python's builder writes 0; the CRC covers neither.
    assert ours[:12] == theirs[:12]
    assert ours[12:16] == b"\xff\xff\xff\xff"
    assert ours[16:] == theirs[16:]


def test_header_fields_and_layout() -> None:
    data = records.encode_batch(
        SAMPLE,
        base_offset=5,
        producer_id=9,
        producer_epoch=2,
        base_sequence=11,
        partition_leader_epoch=3,
    )
    header = records.read_header(data)
    assert header.magic == 2
    assert header.size == len(data)
    assert header.batch_length == len(data) - records.LOG_OVERHEAD
    assert header.last_offset_delta == len(SAMPLE) - 1
    assert (header.base_offset, header.last_offset, header.next_offset) == (5, 8, 9)
    assert header.partition_leader_epoch == 3
    assert header.base_timestamp == SAMPLE[0][0]
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (9, 2, 11)
    assert header.last_sequence == 14
    # the layout by hand: baseOffset at 0, batchLength at 8, epoch at 12, magic at 16
    assert struct.unpack_from(">qiib", data, 0) == (5, len(data) - 12, 3, 2)


def test_builder_matches_encode_batch() -> None:
    builder = records.RecordBatchBuilder(compression=Compression.NONE)
    for ts, k, v, h in SAMPLE:
        builder.append(ts, k, v, h)
    assert builder.record_count == len(SAMPLE)
    built = builder.build()
    assert built == records.encode_batch(SAMPLE)
    assert builder.size >= len(built)


def test_assign_offsets_patches_without_touching_crc() -> None:
    one = records.encode_batch(SAMPLE[:2])
    two = records.encode_batch(SAMPLE[2:])
    patched, headers = records.assign_offsets(one + two, 100, 7)
    assert [h.base_offset for h in headers] == [100, 102]
    assert all(h.partition_leader_epoch == 7 for h in headers)
    assert patched[records.LOG_OVERHEAD + 4 :] != b""  # same length as the input
    assert len(patched) == len(one) + len(two)
    batches = MemoryRecords(bytes(patched))
    first = batches.next_batch()
    assert first.validate_crc() and first.base_offset == 100
    second = batches.next_batch()
    assert second.validate_crc() and second.base_offset == 102
    assert [r.offset for r in records.decode_records(patched)] == [100, 101, 102, 103]


def test_assign_offsets_rejects_empty_and_bad_delta() -> None:
    with pytest.raises(InvalidRecordError):
        records.assign_offsets(b"", 0, 0)
    empty = records.encode_batch([])
    with pytest.raises(InvalidRecordError):
        records.assign_offsets(empty, 0, 0)


def test_corrupt_crc_is_detected() -> None:
    data = bytearray(records.encode_batch(SAMPLE))
    data[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError) as info:
        records.validate_batch(data)
    assert info.value.code == ErrorCode.CORRUPT_MESSAGE
    assert "CRC" in str(info.value)
    with pytest.raises(CorruptRecordError):
        records.decode_batch(data)


def test_truncated_and_malformed_batches() -> None:
    data = records.encode_batch(SAMPLE)
    with pytest.raises(CorruptRecordError, match="truncated"):
        records.validate_batch(data[:-1])
    with pytest.raises(CorruptRecordError, match="truncated"):
        records.validate_batch(data[:30])
    bad_magic = bytearray(data)
    bad_magic[16] = 1
    with pytest.raises(CorruptRecordError, match="magic"):
        records.validate_batch(bad_magic)
    bad_length = bytearray(data)
    struct.pack_into(">i", bad_length, 8, 10)
    with pytest.raises(CorruptRecordError, match="batchLength"):
        records.validate_batch(bad_length)
    with pytest.raises(RecordTooLargeError):
        records.validate_batch(data, max_batch_size=len(data) - 1)


def test_records_section_inconsistent_with_count_is_corrupt() -> None:
    data = records.encode_batch(SAMPLE)
    header = records.read_header(data)
    # claim one more record than the body holds, and fix up the CRC so only the body is wrong
    lying = bytearray(data)
    struct.pack_into(">i", lying, 57, header.record_count + 1)
    struct.pack_into(">I", lying, 17, records.batch_crc(lying, 0, len(lying)))
    with pytest.raises(CorruptRecordError):
        records.decode_batch(lying)


def test_iter_batch_headers_stops_at_partial_batch() -> None:
    a = records.encode_batch(SAMPLE[:1], base_offset=0)
    b = records.encode_batch(SAMPLE[1:], base_offset=1)
    found = list(records.iter_batch_headers(a + b[:-3]))
    assert [(pos, h.base_offset) for pos, h in found] == [(0, 0)]
    found = list(records.iter_batch_headers(a + b))
    assert [(pos, h.base_offset) for pos, h in found] == [(0, 0), (len(a), 1)]


def test_compression_names() -> None:
    assert Compression.parse("lz4") is Compression.LZ4
    assert Compression.parse("ZSTD") is Compression.ZSTD
    assert Compression.parse(None) is Compression.NONE
    with pytest.raises(UnsupportedCompressionTypeError):
        Compression.parse("brotli")


def test_unsupported_codec_in_attributes_is_an_error() -> None:
    data = bytearray(records.encode_batch(SAMPLE))
    struct.pack_into(">h", data, 21, 6)
    struct.pack_into(">I", data, 17, records.batch_crc(data, 0, len(data)))
    with pytest.raises((UnsupportedCompressionTypeError, CorruptRecordError, ValueError)):
        records.decode_batch(data)


def test_large_varints_and_many_records() -> None:
    recs = [(10**12 + i * 10**6, None, b"z" * (i * 97 % 20000), ()) for i in range(300)]
    data = records.encode_batch(recs)
    decoded = records.decode_batch(data)[1]
    assert [(r.timestamp, len(r.value or b"")) for r in decoded] == [
        (ts, len(v)) for ts, _k, v, _h in recs
    ]
    theirs = [(r.timestamp, r.value) for r in MemoryRecords(data).next_batch()]
    assert theirs == [(ts, v) for ts, _k, v, _h in recs]


header_st = st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=8))
record_st = st.tuples(
    st.integers(min_value=0, max_value=2**41),
    st.none() | st.binary(max_size=40),
    st.none() | st.binary(max_size=300),
    st.lists(header_st, max_size=3).map(tuple),
)


@settings(max_examples=80, deadline=None)
@given(st.lists(record_st, min_size=1, max_size=20), st.sampled_from(ALL_CODECS))
def test_roundtrip_property(recs: list[records.RecordInput], codec: Compression) -> None:
    data = records.encode_batch(recs, base_offset=3, compression=codec)
    decoded = records.decode_batch(data)[1]
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in decoded] == [
        (3 + i, ts, k, v, h) for i, (ts, k, v, h) in enumerate(recs)
    ]
    theirs = MemoryRecords(data).next_batch()
    assert theirs.validate_crc()
    assert [(r.timestamp, r.key, r.value) for r in theirs] == [(ts, k, v) for ts, k, v, _ in recs]


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.LZ4], ids=lambda c: c.name)
def test_records_reader_reads_a_few_at_a_time_across_batches(codec: Compression) -> None:
    data = records.encode_batch(SAMPLE, base_offset=10, compression=codec) + records.encode_batch(
        SAMPLE, base_offset=14, compression=codec
    )
    partial = data + data[:30]  # a fetch may end inside a batch: ignored
    reader = records.RecordsReader(partial, ConsumerRecord, ("t", 3), from_offset=12)
    got: list[ConsumerRecord] = []
    for size in (1, 3, 100):
        got += reader.read(size)
    assert reader.exhausted and reader.read(5) == []
    assert [r.offset for r in got] == [12, 13, 14, 15, 16, 17]  # began mid-batch
    expected = [r for _, r in zip(range(12), records.decode_records(data), strict=False)]
    assert [(r.key, r.value, r.headers, r.timestamp) for r in got] == [
        (r.key, r.value, r.headers, r.timestamp) for r in expected[2:]
    ]
    assert {(r.topic, r.partition, r.timestamp_type) for r in got} == {("t", 3, 0)}


def test_records_reader_plain_records_and_log_append_time() -> None:
    data = records.encode_batch(SAMPLE, timestamp_type=records.TimestampType.LOG_APPEND_TIME)
    reader = records.RecordsReader(data, records.Record)
    got = reader.read(10)
    header, decoded = records.decode_batch(data)
    assert got == decoded
    assert {r.timestamp for r in got} == {header.max_timestamp}


def test_records_reader_finds_corruption_when_it_reaches_it() -> None:
    good = records.encode_batch(SAMPLE)
    bad = bytearray(records.encode_batch(SAMPLE, base_offset=4))
    bad[-1] ^= 0xFF  # the CRC no longer matches
    reader = records.RecordsReader(good + bytes(bad), records.Record)
    assert len(reader.read(4)) == 4  # the good batch reads
    with pytest.raises(CorruptRecordError):
        reader.read(1)


def test_append_many_writes_what_appends_one_by_one_write_and_stops_where_told() -> None:
    # RecordBatchBuilder's own append_many: C where built, Python under MINIKAFKA_PURE_PYTHON.
    values = tuple(bytes([n]) * (n * 7 % 50) for n in range(30))
    keys = tuple(None if n % 3 else b"key-%d" % n for n in range(30))
    headers = tuple(None if n % 4 else (("h", b"v" * n),) for n in range(30))
    one_by_one = records.RecordBatchBuilder()
    for key, value, record_headers in zip(keys, values, headers, strict=True):
        one_by_one.append(5, key, value, record_headers or ())
    many = records.RecordBatchBuilder()
    at = many.append_many(5, keys, values, headers, 0, 30, 1 << 20, 400)
    assert 400 <= many.size < 400 + 100  # stopped at the record that took it past 400
    assert many.append_many(5, keys, values, headers, at, 30, many.size + 40, 1 << 20) == at
    at = many.append_many(5, keys, values, headers, at, 30, 1 << 20, 1 << 20)
    assert at == 30
    assert many.build() == one_by_one.build()
    # Into an empty batch the first record goes whatever its size.
    alone = records.RecordBatchBuilder()
    assert alone.append_many(5, None, (b"x" * 500, b"y"), None, 0, 2, 100, 1 << 20) == 1
