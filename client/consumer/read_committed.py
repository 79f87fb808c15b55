"""read_committed on the consumer's side: drop the batches of aborted transactions from a fetch.

    kept, end = drop_aborted(records, [(producer_id, first_offset), ...])
    # kept: the batches a read_committed consumer may return (control batches stay: the
    #       records reader skips them); end: the offset after the last complete batch, where
    #       the consumer goes on from once it has read ``kept`` (dropped batches included)

A read_committed fetch stops at the last stable offset and names the aborted transactions its
records may overlap: (producer id, offset of the transaction's first record). As Kafka's
Fetcher does it, batch by batch in offset order:

1. before a batch of a producer is looked at, every aborted transaction whose first offset is
   at or below the batch's last offset makes its producer id "aborted";
2. that producer's ABORT marker (a control batch) ends it: the producer id is no longer
   aborted for the batches after the marker (its next transaction may commit);
3. a transactional batch of an aborted producer id is dropped.

Non-transactional batches are never dropped, and neither is anything when the list is empty,
so ``records`` is returned as it is then (no copy). Pure functions, no I/O; safe from any
thread.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

from minikafka.proto.errors import KafkaError
from minikafka.proto.records import (
    NO_PRODUCER_ID,
    ControlType,
    decode_end_txn_marker,
    iter_batch_headers,
)

__all__ = ["READ_COMMITTED", "READ_UNCOMMITTED", "drop_aborted", "isolation_level"]

READ_UNCOMMITTED = 0
READ_COMMITTED = 1


def isolation_level(name: str) -> int:
    """Kafka's ``isolation.level`` value -> the wire's number; ValueError for anything else."""
    levels = {"read_uncommitted": READ_UNCOMMITTED, "read_committed": READ_COMMITTED}
    try:
        return levels[name.strip().lower()]
    except KeyError:
        raise ValueError(
            f"isolation_level must be read_uncommitted or read_committed, not {name!r}"
        ) from None


def _is_abort_marker(records: bytes | memoryview, pos: int) -> bool:
    try:
        return decode_end_txn_marker(records, pos).control_type is ControlType.ABORT
    except KafkaError:  # another kind of control record: not a transaction's end
        return False


def drop_aborted(
    records: bytes | memoryview, aborted: Iterable[tuple[int, int]]
) -> tuple[bytes | memoryview, int]:
    """See the module docstring. ``end`` is -1 when ``records`` holds no complete batch."""
    pending = sorted((first_offset, producer_id) for producer_id, first_offset in aborted)
    end = -1
    if not pending:
        for _, header in iter_batch_headers(records):
            end = header.next_offset
        return records, end
    heapq.heapify(pending)
    aborted_ids: set[int] = set()
    kept: list[memoryview] = []
    view = memoryview(records)
    dropped = False
    for pos, header in iter_batch_headers(records):
        end = header.next_offset
        size = header.size
        if header.producer_id != NO_PRODUCER_ID:
            while pending and pending[0][0] <= header.last_offset:
                aborted_ids.add(heapq.heappop(pending)[1])
            if header.is_control:
                if header.producer_id in aborted_ids and _is_abort_marker(records, pos):
                    aborted_ids.discard(header.producer_id)
            elif header.is_transactional and header.producer_id in aborted_ids:
                dropped = True
                continue
        kept.append(view[pos : pos + size])
    if not dropped:
        return records, end
    return b"".join(kept), end
