"""Hand-built RecordBatch v2 bytes for hostile-input tests: a batch whose header says what no
client of ours would write, with a CRC that still holds (so only the header checks catch it)."""

from __future__ import annotations

import struct

import crc32c

from minikafka.proto.records import encode_batch

_ATTRIBUTES = 21  # the CRC covers the bytes from here to the end
_CRC = 17


def recrc(batch: bytes | bytearray) -> bytes:
    """The batch with its CRC recomputed over its (changed) bytes."""
    out = bytearray(batch)
    struct.pack_into(">I", out, _CRC, crc32c.crc32c(bytes(out[_ATTRIBUTES:])))
    return bytes(out)


def with_attributes(batch: bytes, attributes: int) -> bytes:
    """``batch`` with its attributes int16 replaced, CRC fixed."""
    out = bytearray(batch)
    struct.pack_into(">h", out, _ATTRIBUTES, attributes)
    return recrc(out)


def poison_batch(codec: int, *, base_offset: int = 0, count: int = 2) -> bytes:
    """Uncompressed records under a header that names compression codec ``codec`` (5-7: none
    that Kafka defines), with a valid CRC: the batch of issue 16's poisoned partition."""
    records = [(1_700_000_000_000 + i, b"k%d" % i, b"poison-%d" % i, ()) for i in range(count)]
    return with_attributes(encode_batch(records, base_offset=base_offset), codec)
