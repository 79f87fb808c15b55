"""Kafka's DelayedDeleteRecords: a DeleteRecords answer parked until every replica moved its log
start offset, or its timeout.

The leader moves its own log start offset at once (``Partition.delete_records_on_leader``);
the followers move theirs when their next fetch sees the leader's, and report it in the fetch
after. The answer waits until each partition's low watermark (the lowest log start offset over
the replicas on live brokers, ``Partition.low_watermark_if_leader``) reaches the offset asked.
A partition is checked again when its low watermark key is notified (a follower reported a new
log start offset) or its HW key (its leadership moved: the check then answers the error)::

    results = [DeleteRecordsPartitionResult(...), ...]     # what the leader did, in order
    required = {0: 120}                                    # result index -> offset to reach
    results = await DelayedDeleteRecords(results, required, low_watermark, purgatory).wait(
        timeout_ms
    )

``low_watermark(tp)`` raises the KafkaError to answer (this broker no longer leads ``tp``). A
partition still short of its offset at the timeout answers REQUEST_TIMED_OUT.

Not thread-safe: the broker's event loop only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence

import structlog

from minikafka.broker.replication.delayed import (
    Purgatory,
    WatchKey,
    complete_when,
    high_watermark_key,
    low_watermark_key,
)
from minikafka.broker.replication.requests import DeleteRecordsPartitionResult
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode, KafkaError

__all__ = ["DelayedDeleteRecords"]

_log = structlog.get_logger(__name__)


class DelayedDeleteRecords:
    """The wait of one DeleteRecords request (module docstring)."""

    def __init__(
        self,
        results: Sequence[DeleteRecordsPartitionResult],
        required: Mapping[int, int],
        low_watermark: Callable[[TopicPartition], int],
        purgatory: Purgatory,
    ) -> None:
        self._results = list(results)
        self._required = dict(required)
        self._waiting = dict(required)
        self._low_watermark = low_watermark
        self._purgatory = purgatory

    async def wait(self, timeout_ms: int) -> list[DeleteRecordsPartitionResult]:
        """One result per partition, in request order, once each reached its offset (or
        failed), or ``timeout_ms`` passed."""
        keys: list[WatchKey] = []
        for i in self._waiting:
            tp = self._topic_partition(i)
            keys += [low_watermark_key(tp), high_watermark_key(tp)]
        loop = asyncio.get_running_loop()
        await complete_when(
            self._check, keys, self._purgatory, loop.time() + max(timeout_ms, 0) / 1000
        )
        for i in self._waiting:
            result = self._results[i]
            self._results[i] = DeleteRecordsPartitionResult(
                result.topic,
                result.partition,
                result.low_watermark,
                ErrorCode.REQUEST_TIMED_OUT,
                f"The replicas' log start offsets did not reach {self._required[i]} "
                f"within {timeout_ms} ms",
            )
            _log.info(
                "delete_records_timed_out",
                topic=result.topic,
                partition=result.partition,
                required_offset=self._required[i],
                timeout_ms=timeout_ms,
            )
        return self._results

    def _topic_partition(self, i: int) -> TopicPartition:
        return TopicPartition(self._results[i].topic, self._results[i].partition)

    def _check(self) -> bool | None:
        for i in list(self._waiting):
            tp = self._topic_partition(i)
            try:
                low_watermark = self._low_watermark(tp)
            except KafkaError as exc:
                self._results[i] = DeleteRecordsPartitionResult(
                    tp.topic, tp.partition, -1, exc.code, exc.message
                )
            else:
                if low_watermark < self._required[i]:
                    continue
                self._results[i] = DeleteRecordsPartitionResult(
                    tp.topic, tp.partition, low_watermark, ErrorCode.NONE
                )
            del self._waiting[i]
        return True if not self._waiting else None
