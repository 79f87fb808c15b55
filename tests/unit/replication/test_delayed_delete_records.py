"""DelayedDeleteRecords on a real Purgatory and a hand-moved low watermark: each partition answers
when its own low watermark reaches its offset or its leadership goes, the rest time out."""

from __future__ import annotations

import asyncio

from minikafka.broker.replication.delayed import Purgatory, high_watermark_key, low_watermark_key
from minikafka.broker.replication.delayed_delete_records import DelayedDeleteRecords
from minikafka.broker.replication.requests import DeleteRecordsPartitionResult
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode, NotLeaderOrFollowerError

A, B, C = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2)


def test_each_partition_answers_on_its_own_move_and_the_rest_time_out() -> None:
    async def scenario() -> list[DeleteRecordsPartitionResult]:
        purgatory = Purgatory()
        low_watermarks = {A: 0, B: 0, C: 0}
        leading = {A, B, C}

        def low_watermark(tp: TopicPartition) -> int:
            if tp not in leading:
                raise NotLeaderOrFollowerError(f"broker 1 is not the leader of {tp}")
            return low_watermarks[tp]

        results = [
            DeleteRecordsPartitionResult(tp.topic, tp.partition, 5, ErrorCode.NONE)
            for tp in (A, B, C)
        ]
        results.append(
            DeleteRecordsPartitionResult("t", 3, -1, ErrorCode.OFFSET_OUT_OF_RANGE, "beyond")
        )
        delayed = DelayedDeleteRecords(results, {0: 5, 1: 5, 2: 5}, low_watermark, purgatory)
        waiting = asyncio.ensure_future(delayed.wait(300))
        await asyncio.sleep(0.02)
        low_watermarks[A] = 4  # not there yet
        purgatory.notify(low_watermark_key(A))
        await asyncio.sleep(0.02)
        assert not waiting.done()
        low_watermarks[A] = 5
        purgatory.notify(low_watermark_key(A))
        leading.discard(B)  # B's leadership moved: its HW key is notified
        purgatory.notify(high_watermark_key(B))
        return await waiting

    results = asyncio.run(scenario())
    assert [(r.partition, r.error_code, r.low_watermark) for r in results] == [
        (0, ErrorCode.NONE, 5),
        (1, ErrorCode.NOT_LEADER_OR_FOLLOWER, -1),
        (2, ErrorCode.REQUEST_TIMED_OUT, 5),  # the leader's own log start offset
        (3, ErrorCode.OFFSET_OUT_OF_RANGE, -1),  # never waited for
    ]
    assert "did not reach 5 within 300 ms" in results[2].error_message
