"""The header checks a leader makes of a produced batch (Kafka's LogValidator), and what the
readers do with a batch they cannot decode: one KafkaError with a message, never a ValueError,
and never skipping past it."""

from __future__ import annotations

import os
import struct

import pytest

from minikafka.proto import records
from minikafka.proto.errors import (
    CorruptRecordError,
    ErrorCode,
    KafkaError,
    UnsupportedCompressionTypeError,
)
from minikafka.proto.records import Compression, TimestampType, encode_batch
from tests.batches import poison_batch, recrc, with_attributes

SAMPLE = [(1_700_000_000_000 + i, b"k%d" % i, b"v%d" % i, ()) for i in range(3)]


def refusal(data: bytes) -> KafkaError:
    with pytest.raises(KafkaError) as info:
        records.assign_offsets(data, 0, 0)
    return info.value


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_an_unknown_codec_is_refused_with_unsupported_compression_type(codec: int) -> None:
    error = refusal(poison_batch(codec))
    assert error.code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    assert f"codec {codec}" in error.message
    # the same batch behind a good one: the whole request is refused
    assert refusal(encode_batch(SAMPLE) + poison_batch(codec)).code == (
        ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    )


@pytest.mark.parametrize("codec", list(Compression), ids=lambda c: c.name)
def test_every_codec_kafka_defines_is_accepted(codec: Compression) -> None:
    data, headers = records.assign_offsets(encode_batch(SAMPLE, compression=codec), 7, 1)
    assert [h.base_offset for h in headers] == [7]
    assert [r.offset for r in records.decode_records(data)] == [7, 8, 9]


def test_control_and_log_append_time_batches_are_refused() -> None:
    plain = encode_batch(SAMPLE)
    control = refusal(with_attributes(plain, 0x20))
    assert control.code == ErrorCode.INVALID_RECORD and "control" in control.message
    log_append = refusal(encode_batch(SAMPLE, timestamp_type=TimestampType.LOG_APPEND_TIME))
    assert log_append.code == ErrorCode.INVALID_TIMESTAMP
    assert "LogAppendTime" in log_append.message


def test_a_transactional_batch_passes_and_a_control_batch_only_for_a_coordinator() -> None:
    # Whether a producer may write transactionally is the produce path's question (its
    # transactional id) and the producer state's (an ongoing transaction), not the codec's.
    txn = encode_batch(SAMPLE, is_transactional=True, producer_id=5, base_sequence=0)
    _, headers = records.assign_offsets(txn, 3, 1)
    assert headers[0].is_transactional and headers[0].base_offset == 3
    marker = records.encode_end_txn_marker(5, 0, 1, records.ControlType.COMMIT, 1)
    assert refusal(marker).code == ErrorCode.INVALID_RECORD
    _, headers = records.assign_offsets(marker, 4, 1, allow_control=True)
    assert headers[0].is_control and headers[0].base_sequence == -1


def test_a_producer_id_needs_a_sequence() -> None:
    error = refusal(encode_batch(SAMPLE, producer_id=9, producer_epoch=0))  # sequence -1
    assert error.code == ErrorCode.INVALID_RECORD
    assert "sequence number -1" in error.message
    records.assign_offsets(
        encode_batch(SAMPLE, producer_id=9, producer_epoch=0, base_sequence=0), 0, 0
    )


@pytest.mark.parametrize(
    ("count", "last_offset_delta", "words"),
    [
        (0, 0, "reported count"),
        (-1, 0, "recordCount"),
        (3, 1, "Inconsistent"),
        (2, 2, "Inconsistent"),
    ],
)
def test_the_record_count_must_match_the_offsets(
    count: int, last_offset_delta: int, words: str
) -> None:
    data = bytearray(encode_batch(SAMPLE))
    struct.pack_into(">i", data, 57, count)
    struct.pack_into(">i", data, 23, last_offset_delta)
    error = refusal(recrc(data))
    assert error.code in (ErrorCode.INVALID_RECORD, ErrorCode.CORRUPT_MESSAGE)
    assert words in error.message


def test_followers_keep_what_a_leader_accepted() -> None:
    """Only a leader's append from a client checks these: replication validates structure and
    CRC alone, as Kafka's follower appends do."""
    data = poison_batch(5) + with_attributes(encode_batch(SAMPLE, base_offset=2), 0x20)
    assert [h.base_offset for h in records.validate_batches(data)] == [0, 2]


def test_a_header_with_an_unknown_codec_raises_a_kafka_error_not_a_value_error() -> None:
    header = records.read_header(poison_batch(6, base_offset=40))
    with pytest.raises(UnsupportedCompressionTypeError, match=r"offset 40 .* codec 6"):
        header.compression  # noqa: B018
    with pytest.raises(UnsupportedCompressionTypeError):
        records.decode_batch(poison_batch(6))
    with pytest.raises(UnsupportedCompressionTypeError):
        list(records.decode_records(poison_batch(7)))


def test_the_reader_returns_the_records_before_a_poison_batch_then_raises_for_ever() -> None:
    data = (
        encode_batch(SAMPLE) + poison_batch(5, base_offset=3) + encode_batch(SAMPLE, base_offset=5)
    )
    reader = records.RecordsReader(data, records.Record)
    assert [r.offset for r in reader.read(500)] == [0, 1, 2]
    assert reader.next_offset == 3
    for _ in range(2):  # never skips the bad batch to the good one after it
        with pytest.raises(UnsupportedCompressionTypeError):
            reader.read(500)
        with pytest.raises(UnsupportedCompressionTypeError):
            reader.exhausted  # noqa: B018
    assert reader.next_offset == 3


def test_a_batch_whose_records_do_not_decode_is_corrupt() -> None:
    broken = bytearray(encode_batch(SAMPLE, base_offset=3))
    broken[61] = 0x7F  # the first record's length varint: far past the batch's end
    data = encode_batch(SAMPLE) + recrc(broken)
    reader = records.RecordsReader(data, records.Record)
    assert [r.offset for r in reader.read(500)] == [0, 1, 2]
    with pytest.raises(CorruptRecordError):
        reader.read(500)
    with pytest.raises(CorruptRecordError):
        reader.read(500)


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.ZSTD])
def test_log_append_time_stamps_the_batch_and_keeps_its_crc_valid(codec: Compression) -> None:
    data = encode_batch(SAMPLE, compression=codec) + encode_batch(SAMPLE[:1], compression=codec)
    out, headers = records.assign_offsets(data, 10, 3, log_append_time_ms=42)
    assert [h.max_timestamp for h in headers] == [42, 42]
    assert all(h.timestamp_type is TimestampType.LOG_APPEND_TIME for h in headers)
    assert [h.compression for h in headers] == [codec, codec]
    # the stored bytes say so too, CRC included, and every record reads as appended at 42
    assert records.validate_batches(out) == headers
    _, decoded = records.decode_batch(out, 0)
    assert [(r.offset, r.timestamp, r.key) for r in decoded] == [
        (10, 42, b"k0"),
        (11, 42, b"k1"),
        (12, 42, b"k2"),
    ]


def test_a_record_outside_the_timestamp_range_refuses_the_request() -> None:
    first, last = SAMPLE[0][0], SAMPLE[-1][0]
    records.assign_offsets(encode_batch(SAMPLE), 0, 0, timestamp_range=(first, last))
    for bounds in ((first + 1, last), (first, last - 1)):
        with pytest.raises(KafkaError) as info:
            records.assign_offsets(encode_batch(SAMPLE), 0, 0, timestamp_range=bounds)
        assert info.value.code == ErrorCode.INVALID_TIMESTAMP
        assert "is out of range" in info.value.message
    # LogAppendTime replaces the producer's timestamps: no range applies to them
    records.assign_offsets(encode_batch(SAMPLE), 0, 0, timestamp_range=(0, 1), log_append_time_ms=5)


@pytest.mark.parametrize(
    ("source", "target", "level"),
    [
        (Compression.NONE, Compression.ZSTD, 7),
        (Compression.LZ4, Compression.GZIP, 9),
        (Compression.GZIP, Compression.NONE, None),
        (Compression.SNAPPY, Compression.LZ4, 1),
    ],
)
def test_the_leader_rewrites_a_batch_in_the_topics_codec(
    source: Compression, target: Compression, level: int | None
) -> None:
    data = encode_batch(SAMPLE, compression=source) + encode_batch(SAMPLE[:1], compression=source)
    out, headers = records.assign_offsets(
        data, 5, 2, recompression=records.Recompression(target, level), log_append_time_ms=9
    )
    assert [h.compression for h in headers] == [target, target]
    assert records.validate_batches(out) == headers  # lengths and CRCs rewritten
    _, decoded = records.decode_batch(out, 0)
    assert [(r.offset, r.key, r.value) for r in decoded] == [
        (5 + i, key, value) for i, (_, key, value, _) in enumerate(SAMPLE)
    ]


def test_a_batch_already_in_the_topics_codec_is_kept_as_the_producer_wrote_it() -> None:
    data = encode_batch(SAMPLE, compression=Compression.ZSTD)
    # offset 0 and epoch -1, as encode_batch wrote them: nothing else may change
    out, _ = records.assign_offsets(
        data, 0, -1, recompression=records.Recompression(Compression.ZSTD, 19)
    )
    assert bytes(out) == data


def test_a_batch_too_large_after_recompression_is_refused() -> None:
    big = [(1, None, os.urandom(4000), ())]
    data = encode_batch(big, compression=Compression.NONE)
    limit = len(data) + 10  # gzip of random bytes is a little larger than the bytes
    with pytest.raises(KafkaError) as info:
        records.assign_offsets(
            data, 0, 0, max_batch_size=limit, recompression=records.Recompression(Compression.GZIP)
        )
    assert info.value.code == ErrorCode.MESSAGE_TOO_LARGE
