"""Kafka's RecordBatch v2 (magic 2): the one place that knows its bytes.

Batch header, 61 bytes, big-endian::

    offset  size  field
         0     8  baseOffset            int64   first offset in the batch (assigned by the leader)
         8     4  batchLength           int32   bytes after this field (total size - 12)
        12     4  partitionLeaderEpoch  int32   leader epoch of the appending leader
        16     1  magic                 int8    always 2
        17     4  crc                   uint32  CRC32C (Castagnoli) of bytes [21, end of batch)
        21     2  attributes            int16   bits 0-2 compression, 3 timestamp type,
                                                4 transactional, 5 control, 6 delete horizon
        23     4  lastOffsetDelta       int32
        27     8  baseTimestamp         int64
        35     8  maxTimestamp          int64
        43     8  producerId            int64
        51     2  producerEpoch         int16
        53     4  baseSequence          int32
        57     4  recordCount           int32
        61     …  records (compressed as one block when attributes say so)

The CRC starts at ``attributes``, so it does not cover baseOffset, batchLength or
partitionLeaderEpoch: a leader assigns offsets by patching bytes 0-8 and 12-16 without
recomputing it (``assign_offsets``).

Each record (all varints are zig-zag encoded, as protobuf's sint32/sint64)::

    length          varint   bytes after this field
    attributes      int8     unused, 0
    timestampDelta  varlong  timestamp - baseTimestamp
    offsetDelta     varint   offset - baseOffset
    keyLength       varint   -1 for a null key
    key             bytes
    valueLength     varint   -1 for a null value
    value           bytes
    headerCount     varint
    headers         [headerKeyLength varint, headerKey utf-8, headerValueLength varint
                     (-1 = null), headerValue]

Compression codecs are Kafka's: gzip, snappy (xerial-framed, as Kafka's Java client writes it; raw
snappy is accepted when reading), lz4 (LZ4 frame, independent blocks), zstd (zstd frame).

Everything here is pure functions over bytes; safe from any thread.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterable, Iterator, Sequence
from enum import IntEnum
from types import ModuleType
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

import cramjam
import crc32c as _crc32c
import lz4.frame as _lz4
import zstandard as _zstd

from minikafka.proto.errors import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidTimestampError,
    KafkaError,
    RecordTooLargeError,
    UnsupportedCompressionTypeError,
)

__all__ = [
    "HEADER_SIZE",
    "LOG_OVERHEAD",
    "MAGIC",
    "MAX_PRODUCER_EPOCH",
    "NO_PARTITION_LEADER_EPOCH",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "NO_TIMESTAMP",
    "BatchHeader",
    "Compression",
    "ControlType",
    "EndTxnMarker",
    "Header",
    "Recompression",
    "Record",
    "RecordBatchBuilder",
    "RecordInput",
    "RecordsReader",
    "TimestampType",
    "assign_offsets",
    "batch_crc",
    "control_type_of",
    "decode_batch",
    "decode_end_txn_marker",
    "decode_records",
    "encode_batch",
    "encode_end_txn_marker",
    "end_txn_marker_of",
    "iter_batch_headers",
    "read_header",
    "rebuild_batch",
    "scan_records",
    "validate_batch",
    "validate_batches",
    "validate_produced_batch",
]

MAGIC = 2
HEADER_SIZE = 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: the part of a batch outside batchLength
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_PRODUCER_EPOCH = 2**15 - 1  # the epoch is an int16; Kafka bumps it up to one below this
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1
NO_TIMESTAMP = -1

_HEADER = struct.Struct(">qiibIhiqqqhii")
_BASE_OFFSET = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_MAGIC_POS = 16
_CRC_POS = 17
_ATTRIBUTES_POS = 21
_LEADER_EPOCH_POS = 12
_LENGTH_POS = 8
_MAX_TIMESTAMP_POS = 35
_MAX_TIMESTAMP = struct.Struct(">q")
_MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD

_COMPRESSION_MASK = 0x07
_TIMESTAMP_TYPE_MASK = 0x08
_TRANSACTIONAL_MASK = 0x10
_CONTROL_MASK = 0x20
_DELETE_HORIZON_MASK = 0x40  # KIP-534: baseTimestamp holds the batch's delete horizon


class Compression(IntEnum):
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @classmethod
    def parse(cls, name: str | int | Compression | None) -> Compression:
        """From Kafka's config spelling (``compression.type=lz4``) or a code."""
        if name is None:
            return cls.NONE
        if isinstance(name, int):
            return cls(name)
        try:
            return cls[name.strip().upper()]
        except KeyError:
            raise UnsupportedCompressionTypeError(f"unknown compression type {name!r}") from None


class TimestampType(IntEnum):
    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


Header = tuple[str, bytes | None]


_R = TypeVar("_R", bound=tuple)  # type: ignore[type-arg]


class Record(NamedTuple):
    """One decoded record, with absolute offset and timestamp."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]


class BatchHeader(NamedTuple):
    """The 61-byte batch header, field for field."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def size(self) -> int:
        """Bytes the whole batch occupies (header included)."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def compression(self) -> Compression:
        """The batch's codec; UnsupportedCompressionTypeError for an id Kafka defines none for
        (5-7), so that every reader fails on such a batch with a message, not a ValueError."""
        codec = self.attributes & _COMPRESSION_MASK
        try:
            return Compression(codec)
        except ValueError:
            raise UnsupportedCompressionTypeError(
                f"record batch at offset {self.base_offset} names compression codec {codec}, "
                "which Kafka does not define (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd)"
            ) from None

    @property
    def timestamp_type(self) -> TimestampType:
        if self.attributes & _TIMESTAMP_TYPE_MASK:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & _TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & _CONTROL_MASK)

    @property
    def delete_horizon_ms(self) -> int | None:
        """When the log cleaner may drop this batch's tombstones (KIP-534), if it has set it."""
        if self.attributes & _DELETE_HORIZON_MASK:
            return self.base_timestamp
        return None

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF


# --- header-level operations (the broker's hot path: no record decoding) ----------------------


def read_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Unpack the header at ``pos``; raises CorruptRecordError if fewer than 61 bytes remain."""
    if len(buf) - pos < HEADER_SIZE:
        raise CorruptRecordError(
            f"record batch header at position {pos} is truncated "
            f"({len(buf) - pos} of {HEADER_SIZE} bytes)"
        )
    return BatchHeader._make(_HEADER.unpack_from(buf, pos))


def batch_crc(buf: bytes | bytearray | memoryview, pos: int, size: int) -> int:
    """CRC32C of a batch's CRC-covered bytes (from attributes to the end)."""
    if pos == 0 and size == len(buf) and isinstance(buf, bytes):
        # Most produced partitions carry one batch: CRC it without a slice copy.
        return int(_crc32c.crc32c(memoryview(buf)[_ATTRIBUTES_POS:]))
    with memoryview(buf) as view:
        return int(_crc32c.crc32c(view[pos + _ATTRIBUTES_POS : pos + size]))


def validate_batch(
    buf: bytes | bytearray | memoryview, pos: int = 0, *, max_batch_size: int | None = None
) -> BatchHeader:
    """Check the batch at ``pos``: complete, magic 2, sane lengths, CRC. Returns its header.

    Raises CorruptRecordError for anything structurally wrong, RecordTooLargeError when the
    batch exceeds ``max_batch_size`` (Kafka's ``max.message.bytes``).
    """
    header = read_header(buf, pos)
    if header.magic != MAGIC:
        raise CorruptRecordError(f"record batch at position {pos} has magic {header.magic}, not 2")
    if header.batch_length < _MIN_BATCH_LENGTH:
        raise CorruptRecordError(
            f"record batch at position {pos} has batchLength {header.batch_length} "
            f"(at least {_MIN_BATCH_LENGTH})"
        )
    size = header.size
    if max_batch_size is not None and size > max_batch_size:
        raise RecordTooLargeError(
            f"record batch of {size} bytes exceeds the maximum of {max_batch_size} bytes"
        )
    if pos + size > len(buf):
        raise CorruptRecordError(
            f"record batch at position {pos} is truncated ({len(buf) - pos} of {size} bytes)"
        )
    if header.record_count < 0 or header.last_offset_delta < 0:
        raise CorruptRecordError(
            f"record batch at position {pos} has recordCount {header.record_count} and "
            f"lastOffsetDelta {header.last_offset_delta}"
        )
    actual = batch_crc(buf, pos, size)
    if actual != header.crc:
        raise CorruptRecordError(
            f"record batch at position {pos} fails its CRC (stored {header.crc}, computed {actual})"
        )
    return header


def validate_batches(
    data: bytes | bytearray | memoryview, *, max_batch_size: int | None = None
) -> list[BatchHeader]:
    """Validate a buffer that must consist of whole, valid batches; returns their headers."""
    headers = []
    pos = 0
    end = len(data)
    if end == 0:
        raise InvalidRecordError("no record batches in the request")
    while pos < end:
        header = validate_batch(data, pos, max_batch_size=max_batch_size)
        headers.append(header)
        pos += header.size
    return headers


def validate_produced_batch(header: BatchHeader, *, allow_control: bool = False) -> None:
    """The header checks Kafka's LogValidator makes of a batch a client produced.

    A leader makes them before appending (``assign_offsets``); a follower never does, as it
    keeps what its leader accepted. Raises, with Kafka's code:

    - UNSUPPORTED_COMPRESSION_TYPE: a codec id Kafka does not define (5-7);
    - INVALID_RECORD: a record count below 1 or one lastOffsetDelta does not account for, a
      control batch (only the broker writes those, for a transaction coordinator:
      ``allow_control``, Kafka's AppendOrigin.COORDINATOR), a producer id without a base
      sequence;
    - INVALID_TIMESTAMP: timestamp type LogAppendTime (the broker, not a producer, sets it).

    The transactional bit passes here: whether the producer may write transactionally (a
    transactional id, its ACL, an ongoing transaction) is for the produce path and the
    partition's producer state to say, as in Kafka.

    Kafka also reads every record here (timestamps, keys, the count against the records the
    body holds); this broker does not decode records on the produce path, so a body that does
    not decode is found by the reader, which reports it as CORRUPT_MESSAGE.
    """
    codec = header.attributes & _COMPRESSION_MASK
    if codec > Compression.ZSTD:
        raise UnsupportedCompressionTypeError(
            f"record batch names compression codec {codec}, which Kafka does not define "
            "(0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd)"
        )
    count = header.record_count
    if count < 1:
        raise InvalidRecordError(f"Invalid reported count for record batch: {count}")
    if header.last_offset_delta != count - 1:
        raise InvalidRecordError(
            f"Inconsistent batch offset range [0, {header.last_offset_delta}] and count of "
            f"records {count}"
        )
    if header.is_control and not allow_control:
        raise InvalidRecordError("Clients are not allowed to write control records")
    if header.producer_id != NO_PRODUCER_ID and header.base_sequence < 0 and not header.is_control:
        raise InvalidRecordError(
            f"Invalid sequence number {header.base_sequence} in record batch with producerId "
            f"{header.producer_id}"
        )
    if header.attributes & _TIMESTAMP_TYPE_MASK:
        raise InvalidTimestampError(
            "Invalid timestamp type in record batch: a producer must not set timestamp type "
            "LogAppendTime"
        )


def assign_offsets(
    data: bytes | bytearray | memoryview,
    base_offset: int,
    partition_leader_epoch: int,
    *,
    max_batch_size: int | None = None,
    log_append_time_ms: int | None = None,
    timestamp_range: tuple[int, int] | None = None,
    recompression: Recompression | None = None,
    allow_control: bool = False,
) -> tuple[bytearray, list[BatchHeader]]:
    """What a leader does to a produce request's batches before appending them.

    Validates every batch, then patches baseOffset and partitionLeaderEpoch (the CRC does not
    cover them): in place when ``data`` is a bytearray, else in a copy. Batches produced by a
    client must start at offset delta 0 and carry at least one record. Returns the patched
    buffer and the patched headers, in order.

    The topic's message.timestamp.* keys, as Kafka's LogValidator applies them:
    ``log_append_time_ms`` (message.timestamp.type=LogAppendTime) stamps every batch: its
    maxTimestamp becomes that time and its attributes say LogAppendTime, so every record reads
    as appended then (the records themselves are untouched, the CRC recomputed).
    ``timestamp_range`` (CreateTime, from message.timestamp.before/after.max.ms): every
    record's timestamp must lie within ``[low, high]``, else INVALID_TIMESTAMP for the whole
    request; the records are decoded for it only when a range is given.

    ``recompression`` (a compression.type other than producer): a batch in another codec is
    rewritten in the topic's, its records' bytes unchanged, as Kafka's LogValidator does; a
    batch already in that codec is kept as the producer compressed it, whatever its level.

    ``allow_control``: the batches come from the broker itself for a transaction coordinator
    (COMMIT/ABORT markers), which may be control batches.
    """
    headers = validate_batches(data, max_batch_size=max_batch_size)
    for header in headers:
        validate_produced_batch(header, allow_control=allow_control)
    if timestamp_range is not None and log_append_time_ms is None:
        _check_timestamps(data, headers, *timestamp_range)
    if recompression is not None and any(
        header.compression is not recompression.codec for header in headers
    ):
        data, headers = _recompress(data, headers, recompression, max_batch_size)
    out = data if isinstance(data, bytearray) else bytearray(data)
    make = BatchHeader._make
    patched = []
    pos = 0
    next_offset = base_offset
    for header in headers:
        _BASE_OFFSET.pack_into(out, pos, next_offset)
        _INT32.pack_into(out, pos + _LEADER_EPOCH_POS, partition_leader_epoch)
        if log_append_time_ms is not None:
            header = _stamp_log_append_time(out, pos, header, log_append_time_ms)
        patched.append(make((next_offset, header[1], partition_leader_epoch, *header[3:])))
        next_offset += header.record_count
        pos += header.size
    return out, patched


class Recompression(NamedTuple):
    """The codec a leader rewrites produced batches in, and its level (None: the codec's
    default)."""

    codec: Compression
    level: int | None = None


def _recompress(
    data: bytes | bytearray | memoryview,
    headers: Sequence[BatchHeader],
    target: Recompression,
    max_batch_size: int | None,
) -> tuple[bytearray, list[BatchHeader]]:
    out = bytearray()
    new_headers = []
    pos = 0
    for header in headers:
        if header.compression is target.codec:
            out += data[pos : pos + header.size]
            new_headers.append(header)
            pos += header.size
            continue
        body = _batch_body(data, pos, header)
        if target.codec is not Compression.NONE:
            body = _compress(target.codec, body, target.level)
        size = HEADER_SIZE + len(body)
        if max_batch_size is not None and size > max_batch_size:
            raise RecordTooLargeError(
                f"record batch of {size} bytes in {target.codec.name} exceeds the maximum of "
                f"{max_batch_size} bytes"
            )
        attributes = (header.attributes & ~_COMPRESSION_MASK) | int(target.codec)
        rewritten = header._replace(batch_length=size - LOG_OVERHEAD, attributes=attributes)
        start = len(out)
        out += _HEADER.pack(*rewritten)
        out += body
        crc = batch_crc(out, start, size)
        struct.pack_into(">I", out, start + _CRC_POS, crc)
        new_headers.append(rewritten._replace(crc=crc))
        pos += header.size
    return out, new_headers


def _stamp_log_append_time(
    out: bytearray, pos: int, header: BatchHeader, now_ms: int
) -> BatchHeader:
    attributes = header.attributes | _TIMESTAMP_TYPE_MASK
    struct.pack_into(">h", out, pos + _ATTRIBUTES_POS, attributes)
    _MAX_TIMESTAMP.pack_into(out, pos + _MAX_TIMESTAMP_POS, now_ms)
    crc = batch_crc(out, pos, header.size)
    struct.pack_into(">I", out, pos + _CRC_POS, crc)
    return header._replace(attributes=attributes, max_timestamp=now_ms, crc=crc)


def _check_timestamps(
    data: bytes | bytearray | memoryview, headers: Sequence[BatchHeader], low: int, high: int
) -> None:
    pos = 0
    for header in headers:
        # Every record, not the header's max: record deltas may be negative, and a producer
        # writes maxTimestamp itself.
        _, records = decode_batch(data, pos, verify_crc=False)
        for record in records:
            if record.timestamp != NO_TIMESTAMP and not low <= record.timestamp <= high:
                raise InvalidTimestampError(
                    f"Timestamp {record.timestamp} of message with offset {record.offset} "
                    f"is out of range. The timestamp should be within [{low}, {high}]"
                )
        pos += header.size


def iter_batch_headers(
    buf: bytes | bytearray | memoryview, pos: int = 0, end: int | None = None
) -> Iterator[tuple[int, BatchHeader]]:
    """(position, header) of each complete batch in ``buf[pos:end]``, without validating CRCs.

    Stops silently at a trailing partial batch (a fetch response may end with one).
    """
    limit = len(buf) if end is None else end
    while limit - pos >= HEADER_SIZE:
        header = BatchHeader._make(_HEADER.unpack_from(buf, pos))
        size = header.batch_length + LOG_OVERHEAD
        if header.batch_length < _MIN_BATCH_LENGTH or pos + size > limit:
            return
        yield pos, header
        pos += size


# --- varints ----------------------------------------------------------------------------------

_CACHE_SIZE = 1 << 15


def _varint_slow(value: int) -> bytes:
    """Zig-zag varint of a signed 64-bit value."""
    v = (value << 1) ^ (value >> 63)
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


# Varint bytes for every zig-zag value below _CACHE_SIZE, i.e. for -16384 <= n < 16384: offset
# deltas, lengths and timestamp deltas are looked up instead of computed, which is most of the
# encoder's speed. _BY_ZIGZAG[z] is the encoding of zig-zag value z, so a non-negative n below
# _NON_NEGATIVE_CACHE is _BY_ZIGZAG[n << 1].
_BY_ZIGZAG = [_varint_slow((z >> 1) ^ -(z & 1)) for z in range(_CACHE_SIZE)]
_NULL_LENGTH = _varint_slow(-1)
_NON_NEGATIVE_CACHE = _CACHE_SIZE // 2
_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_SAFE_BASE = 2**63 - 2**14  # a base within this takes any inline (two-byte) varint delta


def _varint(value: int) -> bytes:
    zigzag = (value << 1) ^ (value >> 63)
    if zigzag < _CACHE_SIZE:
        return _BY_ZIGZAG[zigzag]
    return _varint_slow(value)


def _read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Decode a zig-zag varint at ``pos``; returns (value, next position)."""
    result = 0
    shift = 0
    while True:
        try:
            b = buf[pos]
        except IndexError:
            raise CorruptRecordError("varint runs past the end of the record data") from None
        pos += 1
        if shift == 63 and b > 1:
            raise CorruptRecordError("varint does not fit in 64 bits")
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise CorruptRecordError("varint is longer than 10 bytes")


# --- compression ------------------------------------------------------------------------------

_XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024
_LZ4_FRAME_KWARGS = {
    "block_size": _lz4.BLOCKSIZE_MAX64KB,
    "block_linked": False,
    "content_checksum": False,
}


def _compress(codec: Compression, data: bytes, level: int | None = None) -> bytes:
    """``data`` compressed with ``codec``, at ``level`` (the topic's compression.<codec>.level,
    when a leader recompresses) or the codec's default; snappy has no levels."""
    if codec is Compression.GZIP:
        compressor = zlib.compressobj(6 if level is None else level, zlib.DEFLATED, 31)
        return compressor.compress(data) + compressor.flush()
    if codec is Compression.SNAPPY:
        parts = [_XERIAL_HEADER]
        for start in range(0, len(data), _XERIAL_BLOCK):
            block = bytes(cramjam.snappy.compress_raw(data[start : start + _XERIAL_BLOCK]))
            parts.append(_INT32.pack(len(block)))
            parts.append(block)
        return b"".join(parts)
    if codec is Compression.LZ4:
        if level is None:
            return bytes(_lz4.compress(data, **_LZ4_FRAME_KWARGS))
        return bytes(_lz4.compress(data, compression_level=level, **_LZ4_FRAME_KWARGS))
    if codec is Compression.ZSTD:
        return bytes(_zstd.ZstdCompressor(level=3 if level is None else level).compress(data))
    raise UnsupportedCompressionTypeError(f"compression codec {codec!r}")


def _decompress(codec: Compression, data: bytes) -> bytes:
    try:
        if codec is Compression.GZIP:
            return zlib.decompress(data, 47)
        if codec is Compression.SNAPPY:
            if data[:16] == _XERIAL_HEADER[:16] or data[:8] == _XERIAL_HEADER[:8]:
                parts = []
                pos = 16
                while pos < len(data):
                    (length,) = _INT32.unpack_from(data, pos)
                    pos += 4
                    parts.append(bytes(cramjam.snappy.decompress_raw(data[pos : pos + length])))
                    pos += length
                return b"".join(parts)
            return bytes(cramjam.snappy.decompress_raw(data))
        if codec is Compression.LZ4:
            return bytes(_lz4.decompress(data))
        if codec is Compression.ZSTD:
            return bytes(_zstd.ZstdDecompressor().decompressobj().decompress(data))
    except (zlib.error, RuntimeError, ValueError, struct.error, _zstd.ZstdError) as exc:
        raise CorruptRecordError(f"cannot decompress {codec.name} record data: {exc}") from exc
    except Exception as exc:  # cramjam raises its own DecompressionError type
        raise CorruptRecordError(f"cannot decompress {codec.name} record data: {exc}") from exc
    raise UnsupportedCompressionTypeError(f"compression codec {int(codec)} is not supported")


# --- encoding ---------------------------------------------------------------------------------

RecordInput = tuple[int, bytes | None, bytes | None, Sequence[Header]]


def _encode_headers(headers: Sequence[Header]) -> bytes:
    if not headers:
        return b"\x00"
    parts = [_varint(len(headers))]
    for hkey, hvalue in headers:
        raw_key = hkey.encode("utf-8")
        parts.append(_varint(len(raw_key)))
        parts.append(raw_key)
        if hvalue is None:
            parts.append(_NULL_LENGTH)
        else:
            parts.append(_varint(len(hvalue)))
            parts.append(hvalue)
    return b"".join(parts)


def _finish_batch(
    records_data: bytes,
    *,
    count: int,
    base_offset: int,
    base_timestamp: int,
    max_timestamp: int,
    compression: Compression,
    timestamp_type: TimestampType,
    is_transactional: bool,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    partition_leader_epoch: int,
    is_control: bool = False,
) -> bytes:
    if compression is not Compression.NONE:
        records_data = _compress(compression, records_data)
    attributes = int(compression)
    if timestamp_type is TimestampType.LOG_APPEND_TIME:
        attributes |= _TIMESTAMP_TYPE_MASK
    if is_transactional:
        attributes |= _TRANSACTIONAL_MASK
    if is_control:
        attributes |= _CONTROL_MASK
    batch_length = HEADER_SIZE - LOG_OVERHEAD + len(records_data)
    header = bytearray(
        _HEADER.pack(
            base_offset,
            batch_length,
            partition_leader_epoch,
            MAGIC,
            0,
            attributes,
            max(count - 1, 0),
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            count,
        )
    )
    crc = _crc32c.crc32c(memoryview(header)[_ATTRIBUTES_POS:])
    crc = _crc32c.crc32c(records_data, crc)
    struct.pack_into(">I", header, _CRC_POS, crc)
    return bytes(header) + records_data


def encode_batch(
    records: Iterable[RecordInput],
    *,
    base_offset: int = 0,
    compression: Compression = Compression.NONE,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    is_transactional: bool = False,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """Encode ``(timestamp_ms, key, value, headers)`` tuples as one RecordBatch v2.

    Offset deltas are 0, 1, 2, ...; baseTimestamp is the first record's timestamp, as Kafka's
    Java client does.
    """
    builder = RecordBatchBuilder(
        compression=compression,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        is_transactional=is_transactional,
    )
    for timestamp, key, value, headers in records:
        builder.append(timestamp, key, value, headers)
    return builder.build(
        base_offset,
        timestamp_type=timestamp_type,
        partition_leader_epoch=partition_leader_epoch,
    )


def rebuild_batch(
    header: BatchHeader, records: Sequence[Record], *, delete_horizon_ms: int | None = None
) -> bytes:
    """What the log cleaner writes for a batch it kept only ``records`` of (in offset order).

    As Kafka's cleaner: the base offset, lastOffsetDelta (so the producer's last sequence
    stays what it was), producer fields, leader epoch, timestamp type and compression codec of
    ``header`` are kept and each record keeps its offset; the records are recompressed with the
    batch's codec. With no records the batch is an empty, uncompressed header that still covers
    the batch's offsets. ``delete_horizon_ms`` (or the horizon ``header`` already carries) sets
    the delete-horizon attribute and becomes baseTimestamp, record timestamps counting from it.
    """
    horizon = delete_horizon_ms if delete_horizon_ms is not None else header.delete_horizon_ms
    log_append_time = header.timestamp_type is TimestampType.LOG_APPEND_TIME
    if not records:
        base_timestamp = max_timestamp = header.max_timestamp
        compression = Compression.NONE
    else:
        compression = header.compression
        base_timestamp = records[0].timestamp
        if log_append_time:
            max_timestamp = header.max_timestamp
        else:
            max_timestamp = max(record.timestamp for record in records)
    if horizon is not None:
        base_timestamp = horizon
    parts: list[bytes] = []
    for record in records:
        body = b"".join(
            (
                b"\x00",
                _varint(0 if log_append_time else record.timestamp - base_timestamp),
                _varint(record.offset - header.base_offset),
                _NULL_LENGTH if record.key is None else _varint(len(record.key)) + record.key,
                _NULL_LENGTH if record.value is None else _varint(len(record.value)) + record.value,
                _encode_headers(record.headers),
            )
        )
        parts.append(_varint(len(body)) + body)
    data = b"".join(parts)
    if records and compression is not Compression.NONE:
        data = _compress(compression, data)
    attributes = (header.attributes & ~_COMPRESSION_MASK) | int(compression)
    if horizon is not None:
        attributes |= _DELETE_HORIZON_MASK
    packed = bytearray(
        _HEADER.pack(
            header.base_offset,
            HEADER_SIZE - LOG_OVERHEAD + len(data),
            header.partition_leader_epoch,
            MAGIC,
            0,
            attributes,
            header.last_offset_delta,
            base_timestamp,
            max_timestamp,
            header.producer_id,
            header.producer_epoch,
            header.base_sequence,
            len(records),
        )
    )
    crc = _crc32c.crc32c(memoryview(packed)[_ATTRIBUTES_POS:])
    crc = _crc32c.crc32c(data, crc)
    struct.pack_into(">I", packed, _CRC_POS, crc)
    return bytes(packed) + data


# --- control batches: transaction markers -------------------------------------------------


class ControlType(IntEnum):
    """The type in a control record's key (Kafka's ControlRecordType; only the transaction
    markers are written here)."""

    ABORT = 0
    COMMIT = 1


class EndTxnMarker(NamedTuple):
    """What a COMMIT/ABORT control record says (Kafka's EndTransactionMarker)."""

    control_type: ControlType
    coordinator_epoch: int


_CONTROL_KEY = struct.Struct(">hh")  # version 0, type
_END_TXN_VALUE = struct.Struct(">hi")  # version 0, coordinator epoch
_CONTROL_KEY_VERSION = 0
_END_TXN_MARKER_VERSION = 0


def encode_end_txn_marker(
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    control_type: ControlType,
    timestamp_ms: int,
) -> bytes:
    """One COMMIT or ABORT marker as Kafka writes it (MemoryRecords.withEndTransactionMarker).

    A control batch (attributes transactional | control, uncompressed, CreateTime) of the
    producer's id and epoch, base offset 0 (the leader assigns it), base sequence -1, holding
    one record at offset delta 0 and ``timestamp_ms``, no headers::

        key    int16 version (0)   int16 type (0 ABORT, 1 COMMIT)
        value  int16 version (0)   int32 coordinator epoch
    """
    key = _CONTROL_KEY.pack(_CONTROL_KEY_VERSION, int(control_type))
    value = _END_TXN_VALUE.pack(_END_TXN_MARKER_VERSION, coordinator_epoch)
    body = b"".join(
        (
            b"\x00",  # record attributes
            _varint(0),  # timestamp delta
            _varint(0),  # offset delta
            _varint(len(key)),
            key,
            _varint(len(value)),
            value,
            b"\x00",  # no headers
        )
    )
    return _finish_batch(
        _varint(len(body)) + body,
        count=1,
        base_offset=0,
        base_timestamp=timestamp_ms,
        max_timestamp=timestamp_ms,
        compression=Compression.NONE,
        timestamp_type=TimestampType.CREATE_TIME,
        is_transactional=True,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=NO_SEQUENCE,
        partition_leader_epoch=NO_PARTITION_LEADER_EPOCH,
        is_control=True,
    )


def control_type_of(key: bytes | None) -> int | None:
    """The type id in a control record's key (any type, not only markers); None when the key
    is too short to hold one."""
    if key is None or len(key) < _CONTROL_KEY.size:
        return None
    return int(_CONTROL_KEY.unpack_from(key)[1])


def decode_end_txn_marker(batch: bytes | bytearray | memoryview, pos: int = 0) -> EndTxnMarker:
    """The marker in the control batch at ``pos`` (its first record); InvalidRecordError when
    the batch is not a control batch holding a COMMIT or ABORT record (Kafka's
    EndTransactionMarker.deserialize refuses the same). The CRC is not checked here."""
    header, records = decode_batch(batch, pos, verify_crc=False)
    if not header.is_control or not records:
        raise InvalidRecordError(
            f"batch at offset {header.base_offset} is not a control batch with a record"
        )
    return end_txn_marker_of(records[0])


def end_txn_marker_of(record: Record) -> EndTxnMarker:
    """The marker a control record holds; InvalidRecordError when it is of another control
    type or its value is not an EndTransactionMarker."""
    type_id = control_type_of(record.key)
    if type_id not in (ControlType.ABORT, ControlType.COMMIT):
        raise InvalidRecordError(
            f"control record at offset {record.offset} is of type {type_id}, not a "
            "transaction marker"
        )
    value = record.value
    if value is None or len(value) < _END_TXN_VALUE.size:
        raise InvalidRecordError(
            f"transaction marker at offset {record.offset} has a value of "
            f"{-1 if value is None else len(value)} bytes, expected {_END_TXN_VALUE.size}"
        )
    version, coordinator_epoch = _END_TXN_VALUE.unpack_from(value)
    if version < 0:
        raise InvalidRecordError(
            f"transaction marker at offset {record.offset} has version {version}"
        )
    return EndTxnMarker(ControlType(type_id), coordinator_epoch)


class PyRecordsBuffer:
    """The encoded records of one batch being built, in Python: what ``RecordBatchBuilder``
    extends when the C version (``proto._crecords.RecordsBuffer``, same interface and bytes) is
    not there.

    ``record_count``, ``size`` (the uncompressed batch so far, header included),
    ``base_timestamp`` (the first record's, -1 before it) and ``max_timestamp`` are plain
    attributes, read on the producer's hot path; only ``append`` changes them. Not thread-safe.
    """

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self.record_count = 0
        self.size = HEADER_SIZE
        self.base_timestamp = -1
        self.max_timestamp = -1

    def append(
        self,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[Header] = (),
    ) -> int:
        """Add a record; returns its offset delta within the batch."""
        count = self.record_count
        if count == 0:
            self.base_timestamp = timestamp
        if timestamp > self.max_timestamp:
            self.max_timestamp = timestamp
        # Table lookups for the usual small varints, the record's pieces appended as they are
        # (joined once, by records()).
        table = _BY_ZIGZAG
        delta = timestamp - self.base_timestamp
        zz = (delta << 1) ^ (delta >> 63)
        ts_bytes = table[zz] if 0 <= zz < _CACHE_SIZE else _varint_slow(delta)
        offset_bytes = table[count << 1] if count < _NON_NEGATIVE_CACHE else _varint_slow(count)
        if key is None:
            key_length = _NULL_LENGTH
            key = b""
        else:
            if type(key) is not bytes:  # copied now, and counted in bytes, not items
                key = bytes(key)
            n = len(key)
            key_length = table[n << 1] if n < _NON_NEGATIVE_CACHE else _varint_slow(n)
        if value is None:
            value_length = _NULL_LENGTH
            value = b""
        else:
            if type(value) is not bytes:
                value = bytes(value)
            n = len(value)
            value_length = table[n << 1] if n < _NON_NEGATIVE_CACHE else _varint_slow(n)
        header_part = _encode_headers(headers) if headers else b"\x00"
        # attributes byte + the rest
        n = (
            1
            + len(ts_bytes)
            + len(offset_bytes)
            + len(key_length)
            + len(key)
            + len(value_length)
            + len(value)
            + len(header_part)
        )
        prefix = table[n << 1] if n < _NON_NEGATIVE_CACHE else _varint_slow(n)
        self._parts += (
            prefix,
            b"\x00",
            ts_bytes,
            offset_bytes,
            key_length,
            key,
            value_length,
            value,
            header_part,
        )
        self.size += len(prefix) + n
        self.record_count = count + 1
        return count

    def records(self) -> bytes:
        """The records appended so far, uncompressed."""
        return b"".join(self._parts)

    def append_many(
        self,
        timestamp: int,
        keys: Sequence[bytes | None] | None,
        values: Sequence[bytes | None],
        headers: Sequence[Sequence[Header] | None] | None,
        start: int,
        stop: int,
        limit: int,
        full_at: int,
    ) -> int:
        """Append records ``start``, ``start + 1``, ... of the columns (``keys`` and
        ``headers`` None: none) with one timestamp, as ``append`` would one by one, while the
        batch has room: a record whose ``estimate_record_size`` would take ``size`` past
        ``limit`` is left out unless the batch is empty. Stops after the record that takes
        ``size`` to ``full_at`` or more, or at ``stop``; returns the index it stopped at.
        Keys and values must be bytes or None."""
        if start < 0 or stop < start:
            raise ValueError("start and stop out of range")
        _check_columns(keys, values, headers, stop)
        i = start
        while i < stop:
            key = None if keys is None else keys[i]
            value = values[i]
            record_headers = None if headers is None else headers[i]
            estimate = _estimate_strict(key, value, record_headers)
            if self.record_count > 0 and self.size + estimate > limit:
                break
            self.append(timestamp, key, value, record_headers or ())
            i += 1
            if self.size >= full_at:
                break
        return i


def _check_columns(
    keys: Sequence[object] | None,
    values: Sequence[object],
    headers: Sequence[object] | None,
    need: int,
) -> None:
    if values is None:
        raise TypeError("values must be a sequence")
    for name, column in (("values", values), ("keys", keys), ("headers", headers)):
        if column is not None and len(column) < need:
            raise ValueError(f"{name} has {len(column)} items, fewer than the {need} records")


def _estimate_strict(
    key: bytes | None, value: bytes | None, headers: Sequence[Header] | None
) -> int:
    """``RecordBatchBuilder.estimate_record_size`` for a key and value that must be bytes or
    None (the many-record calls take nothing else)."""
    for what, item in (("a key", key), ("a value", value)):
        if item is not None and type(item) is not bytes:
            raise TypeError(f"{what} must be bytes or None, not {type(item).__name__}")
    size = 21 + (len(key) if key else 0) + (len(value) if value else 0)
    for pair in headers or ():
        hkey, hvalue = _header_pair(pair)
        size += len(hkey) + (len(hvalue) if hvalue else 0) + 10
    return size


def _header_pair(pair: Iterable[Any]) -> tuple[str, bytes | None]:
    items = tuple(pair)
    if len(items) != 2:
        raise ValueError("a header must be a (key, value) pair")
    return items[0], items[1]


def _py_scan_records(
    keys: Sequence[bytes | None] | None,
    values: Sequence[bytes | None],
    headers: Sequence[Sequence[Header] | None] | None,
) -> tuple[int, int]:
    """(the largest ``estimate_record_size`` of the columns' records, the first record with
    neither key nor value or -1): what the producer checks before appending any of them."""
    _check_columns(keys, values, headers, 0)
    n = len(values)
    _check_columns(keys, values, headers, n)
    largest, empty = 0, -1
    for i in range(n):
        key = None if keys is None else keys[i]
        value = values[i]
        record_headers = None if headers is None else headers[i]
        largest = max(largest, _estimate_strict(key, value, record_headers))
        if empty < 0 and key is None and value is None:
            empty = i
    return largest, empty


# The producer's hot path and the consumer's decoding run in C when proto._crecords was built
# (pip builds it where there is a compiler; it is optional) and MINIKAFKA_PURE_PYTHON is unset.
# ACCELERATED says which one this process uses.
_crecords: ModuleType | None = None
if not os.environ.get("MINIKAFKA_PURE_PYTHON"):
    try:
        from minikafka.proto import _crecords
    except ImportError:
        _crecords = None
ACCELERATED = _crecords is not None

# An if block, not a conditional expression: mypy then sees one base class.
if TYPE_CHECKING or _crecords is None:  # noqa: SIM108
    _RecordsBuffer = PyRecordsBuffer
else:
    _RecordsBuffer = _crecords.RecordsBuffer
scan_records = _py_scan_records if _crecords is None else _crecords.scan_records


class RecordBatchBuilder(_RecordsBuffer):
    """Builds one batch record by record, tracking its size (the producer's accumulator uses it).

    ``append`` and the counters come from the records buffer (``PyRecordsBuffer``, or its C
    twin); this adds the batch-level fields and ``build``. Not thread-safe: one builder belongs
    to one accumulator slot, guarded by its owner's lock.
    """

    def __init__(
        self,
        *,
        compression: Compression = Compression.NONE,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        base_sequence: int = NO_SEQUENCE,
        is_transactional: bool = False,
    ) -> None:
        super().__init__()
        self.compression = compression
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.is_transactional = is_transactional

    @staticmethod
    def estimate_record_size(
        key: bytes | None, value: bytes | None, headers: Sequence[Header]
    ) -> int:
        size = 21 + (len(key) if key else 0) + (len(value) if value else 0)
        for hkey, hvalue in headers:
            size += len(hkey) + (len(hvalue) if hvalue else 0) + 10
        return size

    def build(
        self,
        base_offset: int = 0,
        *,
        timestamp_type: TimestampType = TimestampType.CREATE_TIME,
        partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    ) -> bytes:
        return _finish_batch(
            self.records(),
            count=self.record_count,
            base_offset=base_offset,
            base_timestamp=self.base_timestamp,
            max_timestamp=self.max_timestamp,
            compression=self.compression,
            timestamp_type=timestamp_type,
            is_transactional=self.is_transactional,
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            base_sequence=self.base_sequence,
            partition_leader_epoch=partition_leader_epoch,
        )


# --- decoding ---------------------------------------------------------------------------------


def _timestamps(header: BatchHeader) -> tuple[int, bool]:
    """(the timestamp record deltas count from, whether the batch is LogAppendTime): a
    LogAppendTime batch gives every record its maxTimestamp."""
    if header.timestamp_type is TimestampType.LOG_APPEND_TIME:
        return header.max_timestamp, True
    return header.base_timestamp, False


def _py_decode_records(
    data: bytes,
    pos: int,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: bool,
    record_type: type[_R],
    leading: tuple[object, ...],
    middle: tuple[object, ...],
) -> tuple[list[_R], int]:
    """Decode ``count`` records from ``data[pos:]``, each made straight into a
    ``record_type``: ``(*leading, offset, timestamp, *middle, key, value, headers)``, where
    ``leading`` and ``middle`` are both empty (``Record``) or hold two fields and one (the
    consumer's record: topic, partition; timestamp type). Two fixed shapes, because unpacking
    a tuple into each record would cost a fifth of the decoding. Returns the records and the
    position after them."""
    wide = bool(leading or middle)
    if wide:
        if len(leading) != 2 or len(middle) != 1:
            raise ValueError("leading takes two fields and middle one, or neither any")
        lead0, lead1 = leading
        (mid0,) = middle
    records: list[_R] = []
    append = records.append
    new = tuple.__new__
    record_cls = record_type
    read = _read_varint
    end = len(data)
    # A record's offset and timestamp must fit in 64 bits, as in the C decoder. Checked per
    # record only when they might not: a base near the limits, or a delta too big for the
    # inline varints below (which sets ``check`` for the rest of the call).
    check = not (
        -_SAFE_BASE <= base_offset <= _SAFE_BASE and -_SAFE_BASE <= base_timestamp <= _SAFE_BASE
    )
    try:
        for _ in range(count):
            # Each varint below is decoded inline when it takes one or two bytes (|value| < 8192):
            # a function call per field would cost more than the rest of the record.
            b = data[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                b = (b & 0x7F) | (data[pos + 1] << 7)
                length = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                length, pos = read(data, pos)
            record_end = pos + length
            if length < 6 or record_end > end:
                raise CorruptRecordError(f"record of length {length} overruns its batch")
            pos += 1  # attributes
            b = data[pos]
            if b < 0x80:
                ts_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                b = (b & 0x7F) | (data[pos + 1] << 7)
                ts_delta = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                ts_delta, pos = read(data, pos)
                check = True
            b = data[pos]
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                b = (b & 0x7F) | (data[pos + 1] << 7)
                offset_delta = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                offset_delta, pos = read(data, pos)
                check = True
            b = data[pos]
            if b < 0x80:
                klen = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                b = (b & 0x7F) | (data[pos + 1] << 7)
                klen = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                klen, pos = read(data, pos)
            if klen < 0:
                key = None
            else:
                key = data[pos : pos + klen]
                pos += klen
            b = data[pos]
            if b < 0x80:
                vlen = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                b = (b & 0x7F) | (data[pos + 1] << 7)
                vlen = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                vlen, pos = read(data, pos)
            if vlen < 0:
                value = None
            else:
                value = data[pos : pos + vlen]
                pos += vlen
            b = data[pos]
            if b == 0:
                headers: tuple[Header, ...] = ()
                pos += 1
            else:
                hcount, pos = read(data, pos)
                if hcount < 0:
                    raise CorruptRecordError(f"record has {hcount} headers")
                hlist: list[Header] = []
                for _h in range(hcount):
                    hklen, pos = read(data, pos)
                    if hklen < 0:
                        raise CorruptRecordError("record header with a null key")
                    hkey = data[pos : pos + hklen].decode("utf-8")
                    pos += hklen
                    hvlen, pos = read(data, pos)
                    if hvlen < 0:
                        hlist.append((hkey, None))
                    else:
                        hlist.append((hkey, data[pos : pos + hvlen]))
                        pos += hvlen
                headers = tuple(hlist)
            if pos != record_end:
                raise CorruptRecordError(
                    f"record at offset delta {offset_delta} has length {length} but its "
                    f"fields take {length + pos - record_end}"
                )
            timestamp = base_timestamp if log_append_time else base_timestamp + ts_delta
            if check and not (
                _INT64_MIN <= base_offset + offset_delta <= _INT64_MAX
                and _INT64_MIN <= timestamp <= _INT64_MAX
            ):
                raise CorruptRecordError(
                    f"record at offset delta {offset_delta} is out of the 64-bit range"
                )
            if wide:
                append(
                    new(
                        record_cls,
                        (lead0, lead1, base_offset + offset_delta, timestamp, mid0, key, value,
                         headers),
                    )
                )  # fmt: skip
            else:
                append(
                    new(record_cls, (base_offset + offset_delta, timestamp, key, value, headers))
                )
    except IndexError:
        raise CorruptRecordError("record data ends in the middle of a record") from None
    except UnicodeDecodeError as exc:
        raise CorruptRecordError(f"record header key is not UTF-8: {exc}") from None
    return records, pos


_decode_records = _py_decode_records if _crecords is None else _crecords.decode_records


def decode_batch(
    buf: bytes | bytearray | memoryview, pos: int = 0, *, verify_crc: bool = True
) -> tuple[BatchHeader, list[Record]]:
    """Decode the batch at ``pos`` into its header and records (decompressing as needed)."""
    header = validate_batch(buf, pos) if verify_crc else read_header(buf, pos)
    body = _batch_body(buf, pos, header)
    base_timestamp, log_append_time = _timestamps(header)
    records, end = _decode_records(
        body,
        0,
        header.record_count,
        header.base_offset,
        base_timestamp,
        log_append_time,
        Record,
        (),
        (),
    )
    if end != len(body):
        raise CorruptRecordError(
            f"{len(body) - end} bytes left over after {header.record_count} records"
        )
    return header, records


def _batch_body(buf: bytes | bytearray | memoryview, pos: int, header: BatchHeader) -> bytes:
    body = bytes(buf[pos + HEADER_SIZE : pos + header.size])
    if header.compression is not Compression.NONE:
        body = _decompress(header.compression, body)
    return body


class RecordsReader(Generic[_R]):
    """The records of a fetched records section, decoded a few at a time.

        reader = RecordsReader(data, ConsumerRecord, ("orders", 0), from_offset=42)
        while not reader.exhausted:
            records = reader.read(500)

    As Kafka's consumer drains a completed fetch: ``read(n)`` decodes the next ``n`` records
    only, so a poll of 500 makes 500 objects, not a megabyte's worth. Objects the caller drops
    before the garbage collector's next pass never reach its older generations, whose passes
    over them cost as much as the decoding itself. Records are ``record_type`` objects laid out as
    ``(*leading, offset, timestamp, timestamp_type, key, value, headers)`` with ``leading``
    two fields (or ``Record`` objects, with ``leading`` empty). Control batches and records below
    ``from_offset`` are skipped; a trailing partial batch is ignored. A batch that does not
    decode (CRC, codec, records) raises a KafkaError once the records before it have been
    read, and raises it again on every later call: the reader never skips past it. Not
    thread-safe.
    """

    def __init__(
        self,
        data: bytes | bytearray | memoryview,
        record_type: type[_R],
        leading: tuple[object, ...] = (),
        *,
        from_offset: int = 0,
        verify_crc: bool = True,
    ) -> None:
        self._data = data
        self._batches = iter_batch_headers(data)
        self._record_type = record_type
        self._leading = leading
        self._offset_field = len(leading)
        self._from_offset = from_offset
        self._verify_crc = verify_crc
        self._body = b""
        self._pos = 0
        self._left = 0  # records of the current batch not yet decoded
        self._base_offset = 0
        self._base_timestamp = 0
        self._log_append_time = False
        self._middle: tuple[object, ...] = ()
        # The offset after the batches wholly read (skipped ones and those a log cleaner
        # emptied included): where a reader goes on from, as Kafka's consumer does.
        self.next_offset = from_offset
        self._batch_next_offset = from_offset
        self._error: KafkaError | None = None

    @property
    def exhausted(self) -> bool:
        return not self._checked_next_batch()

    def read(self, max_records: int) -> list[_R]:
        out: list[_R] = []
        try:
            self._read_into(out, max_records)
        except KafkaError as exc:
            self._error = exc
            if not out:
                raise
        return out

    def _checked_next_batch(self) -> bool:
        if self._error is not None:
            raise self._error
        try:
            return self._next_batch()
        except KafkaError as exc:
            self._error = exc
            raise

    def _read_into(self, out: list[_R], max_records: int) -> None:
        while len(out) < max_records and self._checked_next_batch():
            count = min(max_records - len(out), self._left)
            records, self._pos = _decode_records(
                self._body,
                self._pos,
                count,
                self._base_offset,
                self._base_timestamp,
                self._log_append_time,
                self._record_type,
                self._leading,
                self._middle,
            )
            self._left -= count
            if self._left == 0 and self._pos != len(self._body):
                raise CorruptRecordError(
                    f"{len(self._body) - self._pos} bytes left over after the batch's records"
                )
            field = self._offset_field
            if records and records[0][field] < self._from_offset:  # the fetch began mid-batch
                records = [r for r in records if r[field] >= self._from_offset]
            out += records

    def _next_batch(self) -> bool:
        """Make sure a batch with records left is current; False when there is none."""
        while self._left == 0:
            self.next_offset = max(self.next_offset, self._batch_next_offset)
            found = next(self._batches, None)
            if found is None:
                return False
            pos, header = found
            self._batch_next_offset = header.next_offset
            if header.last_offset < self._from_offset or header.is_control:
                continue
            if self._verify_crc:
                validate_batch(self._data, pos)
            self._body = _batch_body(self._data, pos, header)
            self._pos = 0
            self._left = header.record_count
            self._base_offset = header.base_offset
            self._base_timestamp, self._log_append_time = _timestamps(header)
            self._middle = (int(header.timestamp_type),) if self._leading else ()
        return True


def decode_records(
    buf: bytes | bytearray | memoryview, *, include_control: bool = False, verify_crc: bool = True
) -> Iterator[Record]:
    """Every record of every complete batch in ``buf`` (a trailing partial batch is ignored)."""
    for pos, header in iter_batch_headers(buf):
        if header.is_control and not include_control:
            continue
        yield from decode_batch(buf, pos, verify_crc=verify_crc)[1]
