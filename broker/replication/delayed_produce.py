"""Kafka's DelayedProduce: an acks=all produce parked until the high watermark of each
partition it appended to passes its append, or its timeout.

Each partition's outcome is decided on its own: when the partition's HW key is notified
(its HW moved, or its leadership or ISR changed, or it went offline) the operation checks
that partition alone, and answers once none is left waiting. With a thousand partitions in
one request, a follower's fetch that moves the HW of some of them costs the operation the
partitions that moved, not the thousand (``Purgatory.watch``, delayed.py)::

    statuses = {high_watermark_key(tp): status, ...}          # the appends still waiting
    await DelayedProduce(statuses, outcome, purgatory).wait(timeout_s)
    # each status is now done: its outcome, or still not done if the timeout came first

``outcome(tp, status)`` is the check Kafka makes per partition (None while waiting).

Not thread-safe: the broker's event loop only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from minikafka.broker.replication.delayed import Purgatory, WatchKey
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode, RecordError

__all__ = ["DelayedProduce", "ProducePartitionStatus"]


@dataclass
class ProducePartitionStatus:
    """A Produce request's outcome for one partition, between the append and the answer."""

    code: ErrorCode
    message: str = ""
    record_errors: tuple[RecordError, ...] = ()  # KIP-467: the records a batch was refused for
    base_offset: int = -1
    log_start_offset: int = -1
    required_offset: int = -1  # acks=all: the HW it waits for
    leader_epoch: int = -1  # the leader epoch of the append
    done: bool = True
    log_append_time: int = -1  # the time a LogAppendTime topic's leader stamped, else -1


Outcome = Callable[[TopicPartition, ProducePartitionStatus], "ErrorCode | None"]


class DelayedProduce:
    """The wait of one acks=all produce (module docstring)."""

    def __init__(
        self,
        waiting: dict[WatchKey, ProducePartitionStatus],
        outcome: Outcome,
        purgatory: Purgatory,
    ) -> None:
        self._waiting = dict(waiting)
        self._outcome = outcome
        self._purgatory = purgatory
        self._completed: asyncio.Future[bool] | None = None
        self.checks = 0  # partitions checked: follows the partitions that moved

    async def wait(self, timeout_s: float) -> None:
        """Until every partition has its outcome, or ``timeout_s`` (those left stay not done)."""
        for key, status in list(self._waiting.items()):
            self._check(key, status)
        if not self._waiting:
            return
        loop = asyncio.get_running_loop()
        self._completed = completed = loop.create_future()
        for key in self._waiting:
            self._purgatory.watch(key, self)
        deadline = loop.call_later(max(timeout_s, 0.0), _complete, completed)
        try:
            await completed
        finally:
            deadline.cancel()
            for key in self._waiting:
                self._purgatory.unwatch(key, self)

    def on_notify(self, key: Hashable) -> None:
        if not isinstance(key, WatchKey):
            return
        status = self._waiting.get(key)
        if status is not None and self._check(key, status):
            self._purgatory.unwatch(key, self)
            if not self._waiting and self._completed is not None:
                _complete(self._completed)

    def _check(self, key: WatchKey, status: ProducePartitionStatus) -> bool:
        self.checks += 1
        outcome = self._outcome(key.topic_partition, status)
        if outcome is None:
            return False
        status.code = outcome
        status.done = True
        del self._waiting[key]
        return True


def _complete(future: asyncio.Future[bool]) -> None:
    if not future.done():
        future.set_result(True)
