"""read_committed on the consumer: aborted transactions' batches dropped as Kafka's Fetcher does
(by producer id, from the aborted transaction's first offset until that producer's ABORT
marker), control batches skipped, the position moved past what was dropped, and the last
stable offset (not the high watermark) as the end of what there is to fetch."""

from __future__ import annotations

import struct
from concurrent.futures import Future
from typing import Any

import pytest

from minikafka.client.consumer.fetcher import FetchConfig, Fetcher
from minikafka.client.consumer.read_committed import (
    READ_COMMITTED,
    drop_aborted,
    isolation_level,
)
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto.records import ControlType, decode_records, encode_batch, encode_end_txn_marker
from tests.raw_data import raw_fetch_response
from tests.unit.client.test_fetcher import P0, FakeMetadata, FakePool


def txn_batch(producer_id: int, base_offset: int, count: int = 2) -> bytes:
    return encode_batch(
        [(1_000, None, b"p%d-%d" % (producer_id, base_offset + i), ()) for i in range(count)],
        base_offset=base_offset,
        is_transactional=True,
        producer_id=producer_id,
        producer_epoch=0,
        base_sequence=base_offset,
    )


def plain_batch(base_offset: int) -> bytes:
    return encode_batch([(1_000, None, b"plain-%d" % base_offset, ())], base_offset=base_offset)


def marker(producer_id: int, offset: int, control_type: ControlType) -> bytes:
    batch = bytearray(encode_end_txn_marker(producer_id, 0, 0, control_type, 1_000))
    struct.pack_into(">q", batch, 0, offset)  # the base offset is outside the CRC
    return bytes(batch)


# Offsets: 0-1 producer 7 (aborted), 2 plain, 3-4 producer 8 (committed), 5 ABORT of 7,
# 6 COMMIT of 8, 7-8 producer 7 again (committed: its earlier abort must not drop them), 9 COMMIT.
LOG = b"".join(
    [
        txn_batch(7, 0),
        plain_batch(2),
        txn_batch(8, 3),
        marker(7, 5, ControlType.ABORT),
        marker(8, 6, ControlType.COMMIT),
        txn_batch(7, 7),
        marker(7, 9, ControlType.COMMIT),
    ]
)


def offsets(records: bytes | memoryview) -> list[int]:
    return [r.offset for r in decode_records(records)]


def test_an_aborted_transaction_is_dropped_until_its_abort_marker() -> None:
    kept, end = drop_aborted(LOG, [(7, 0)])
    assert offsets(kept) == [2, 3, 4, 7, 8]
    assert end == 10


def test_nothing_is_dropped_or_copied_without_aborted_transactions() -> None:
    kept, end = drop_aborted(LOG, [])
    assert kept is LOG
    assert offsets(kept) == [0, 1, 2, 3, 4, 7, 8]
    assert end == 10


def test_an_aborted_transaction_that_starts_later_spares_earlier_batches() -> None:
    # Producer 7's transaction from offset 7 was aborted, not the one at 0 (whose marker is at 5).
    kept, _ = drop_aborted(LOG, [(7, 7)])
    assert offsets(kept) == [0, 1, 2, 3, 4]


def test_isolation_level_names() -> None:
    assert isolation_level("read_committed") == READ_COMMITTED
    assert isolation_level("READ_UNCOMMITTED") == 0
    with pytest.raises(ValueError, match="read_uncommitted or read_committed"):
        isolation_level("serializable")


def answer(future: Future[Any], records: bytes, *, lso: int, hw: int, aborted: Any) -> None:
    message = pb.FetchResponse(
        responses=[
            pb.FetchResponse.FetchableTopicResponse(
                topic="t",
                partitions=[
                    pb.FetchResponse.PartitionData(
                        partition_index=0,
                        high_watermark=hw,
                        last_stable_offset=lso,
                        records=records,
                        aborted_transactions=[
                            pb.FetchResponse.AbortedTransaction(producer_id=pid, first_offset=first)
                            for pid, first in aborted
                        ],
                    )
                ],
            )
        ]
    )
    future.set_result(raw_fetch_response(message))


def test_the_fetcher_asks_read_committed_and_moves_past_a_trailing_aborted_batch() -> None:
    pool = FakePool()
    fetcher = Fetcher(
        FetchConfig(isolation_level=READ_COMMITTED),
        FakeMetadata(),  # type: ignore[arg-type]
        pool,  # type: ignore[arg-type]
    )
    fetcher.assign([P0])
    fetcher.seek(P0, 0)
    fetcher.send_fetches()
    ((request, future),) = pool.fetch_stream.sent
    assert request.isolation_level == READ_COMMITTED
    # The answer ends with producer 9's aborted batch (its marker is beyond this answer).
    answer(
        future,
        plain_batch(0) + txn_batch(9, 1),
        lso=3,
        hw=5,
        aborted=[(9, 1)],
    )
    fetcher.wait_for_fetches(1)
    assert [r.offset for r in fetcher.fetched_records(500)[P0]] == [0]
    assert fetcher.fetched_records(500) == {}
    assert fetcher.position(P0) == 3  # past the aborted batch, not stuck in front of it
    # Caught up at the LSO (3), though the high watermark is 5: nothing to fetch yet, and the
    # next fetch starts at 3.
    fetcher.send_fetches()
    ((request, _),) = pool.fetch_stream.sent[1:]
    assert request.topics[0].partitions[0].fetch_offset == 3
