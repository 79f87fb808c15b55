"""Reading Kafka's big-endian protocol primitives out of a byte string.

Kafka's non-flexible schemas (the consumer protocol's Subscription and Assignment, the records
of ``__consumer_offsets``) are built from: int16, int32, int64 (two's complement, big-endian);
STRING = int16 length + UTF-8 bytes (NULLABLE_STRING: length -1 is null); BYTES = int32
length + bytes (length -1 is null). The modules that own those layouts write them out and
read them back with this::

    reader = WireReader(data, InvalidRequestError, "consumer protocol data")
    version = reader.int16()
    topics = [reader.string() for _ in range(reader.int32())]

Running out of bytes, or a null where a value is required, raises ``error`` with ``what`` in
its message. Not thread-safe: one reader per byte string.
"""

from __future__ import annotations

import struct

from minikafka.proto.errors import KafkaError

__all__ = ["WireReader"]

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


class WireReader:
    def __init__(self, data: bytes, error: type[KafkaError], what: str) -> None:
        self._data = data
        self._pos = 0
        self._error = error
        self._what = what

    def remaining(self) -> int:
        return len(self._data) - self._pos

    def _take(self, fmt: struct.Struct) -> int:
        if self._pos + fmt.size > len(self._data):
            raise self._error(f"{self._what} is truncated")
        (value,) = fmt.unpack_from(self._data, self._pos)
        self._pos += fmt.size
        return int(value)

    def int16(self) -> int:
        return self._take(_INT16)

    def int32(self) -> int:
        return self._take(_INT32)

    def int64(self) -> int:
        return self._take(_INT64)

    def _raw(self, length: int) -> bytes:
        if self._pos + length > len(self._data):
            raise self._error(f"{self._what} is truncated")
        value = self._data[self._pos : self._pos + length]
        self._pos += length
        return value

    def nullable_string(self) -> str | None:
        length = self.int16()
        return None if length < 0 else self._raw(length).decode()

    def string(self) -> str:
        value = self.nullable_string()
        if value is None:
            raise self._error(f"a null string in {self._what}")
        return value

    def nullable_bytes(self) -> bytes | None:
        length = self.int32()
        return None if length < 0 else self._raw(length)
