# The C module proto/_crecords.c (optional: proto.records falls back to its Python code).
from collections.abc import Sequence
from typing import TypeVar

_R = TypeVar("_R", bound=tuple)  # type: ignore[type-arg]

class RecordsBuffer:
    record_count: int
    size: int
    base_timestamp: int
    max_timestamp: int
    def append(
        self,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[tuple[str, bytes | None]] = (),
    ) -> int: ...
    def records(self) -> bytes: ...
    def append_many(
        self,
        timestamp: int,
        keys: Sequence[bytes | None] | None,
        values: Sequence[bytes | None],
        headers: Sequence[Sequence[tuple[str, bytes | None]] | None] | None,
        start: int,
        stop: int,
        limit: int,
        full_at: int,
    ) -> int: ...

def scan_records(
    keys: Sequence[bytes | None] | None,
    values: Sequence[bytes | None],
    headers: Sequence[Sequence[tuple[str, bytes | None]] | None] | None,
) -> tuple[int, int]: ...
def decode_records(
    data: bytes,
    pos: int,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: bool,
    record_type: type[_R],
    leading: tuple[object, ...],
    middle: tuple[object, ...],
) -> tuple[list[_R], int]: ...
