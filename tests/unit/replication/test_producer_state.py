"""Idempotent producers: duplicates answered with the original offsets,
sequence and epoch checks, and producer state carried to followers."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from minikafka.broker.replication.producer_state import ProducerStateManager
from minikafka.proto.errors import ErrorCode, OutOfOrderSequenceError
from minikafka.proto.records import BatchHeader, encode_batch, read_header
from tests.unit.replication.harness import Cluster, produce_request, run, wait_until
from tests.unit.storage.helpers import T0


def idempotent(value: bytes, producer_id: int, epoch: int, sequence: int, count: int = 1) -> bytes:
    now = int(time.time() * 1000)
    return encode_batch(
        [(now, None, value, ())] * count,
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=sequence,
    )


async def send(cluster: Cluster, broker: int, data: bytes) -> tuple[int, int]:
    [result] = await cluster[broker].replica_manager.append_records(produce_request(data))
    return result.error_code, result.base_offset


def test_duplicates_are_not_appended_and_sequences_are_checked(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1, 2))
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1, 2], [1, 2])
            assert await send(cluster, 1, idempotent(b"a", 7, 0, 0, count=2)) == (0, 0)
            assert await send(cluster, 1, idempotent(b"b", 7, 0, 2)) == (0, 2)
            # the retry of the first batch: its original offset, nothing appended
            assert await send(cluster, 1, idempotent(b"a", 7, 0, 0, count=2)) == (0, 0)
            assert cluster[1].log().log_end_offset == 3
            code, _ = await send(cluster, 1, idempotent(b"c", 7, 0, 5))
            assert code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
            code, _ = await send(cluster, 1, idempotent(b"c", 7, 1, 3))
            assert code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # a new epoch starts at 0
            assert await send(cluster, 1, idempotent(b"c", 7, 1, 0)) == (0, 3)
            code, _ = await send(cluster, 1, idempotent(b"d", 7, 0, 3))
            assert code == ErrorCode.INVALID_PRODUCER_EPOCH
            assert cluster[1].log().log_end_offset == 4

            # the follower learnt the producers: after a leader change, a retry is still caught
            await wait_until(lambda: cluster[2].log().log_end_offset == 4)
            await cluster.elect(2, 2, [1, 2], [1, 2])
            assert await send(cluster, 2, idempotent(b"c", 7, 1, 0)) == (0, 3)
            assert cluster[2].log().log_end_offset == 4
            assert await send(cluster, 2, idempotent(b"e", 7, 1, 1)) == (0, 4)
        finally:
            await cluster.stop()

    run(scenario)


def test_producer_state_is_rebuilt_from_the_log_after_a_restart(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1,))
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1], [1])
            assert await send(cluster, 1, idempotent(b"a", 3, 0, 0)) == (0, 0)
            assert await send(cluster, 1, idempotent(b"b", 3, 0, 1)) == (0, 1)
            await cluster.restart(1)
            await cluster.elect(1, 2, [1], [1])
            assert await send(cluster, 1, idempotent(b"b", 3, 0, 1)) == (0, 1)
            code, _ = await send(cluster, 1, idempotent(b"d", 3, 0, 5))
            assert code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
            assert cluster[1].log().log_end_offset == 2
        finally:
            await cluster.stop()

    run(scenario)


def test_idle_producers_expire_after_producer_id_expiration_ms() -> None:
    state = ProducerStateManager()
    day = 86_400_000

    def header(producer_id: int, sequence: int, timestamp: int) -> BatchHeader:
        data = encode_batch(
            [(timestamp, None, b"v", ())],
            producer_id=producer_id,
            producer_epoch=0,
            base_sequence=sequence,
        )
        return read_header(data)

    state.update([header(1, 0, T0), header(2, 0, T0 + day // 2)])
    assert state.remove_expired_producers(T0 + day - 1, day) == 0  # not yet: 1 ms short
    assert state.remove_expired_producers(T0 + day, day) == 1  # producer 1's last batch: a day
    assert [e.producer_id for e in state.snapshot_entries()] == [2]
    # Producer 1 is now unknown: its next batch is taken at any sequence, not refused as a gap.
    assert state.check_append([header(1, 7, T0 + day)]) is None
    # Producer 2 is still known: a gap is refused.
    with pytest.raises(OutOfOrderSequenceError):
        state.check_append([header(2, 5, T0 + day)])
