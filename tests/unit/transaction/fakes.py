"""Fakes for the transaction coordinator's three seams and its clock."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from minikafka.broker.transaction.coordinator import (
    MarkerEntry,
    TransactionConfig,
    TransactionCoordinator,
)
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode, KafkaError
from minikafka.proto.records import assign_offsets, decode_records, iter_batch_headers
from minikafka.proto.transaction_log import TransactionLogValue, decode_key, decode_value


@dataclass
class _Handle:
    due_ms: int
    seq: int
    callback: Callable[[], None]
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


class FakeTimers:
    """``call_later`` on a clock that moves only when the test says so."""

    def __init__(self) -> None:
        self.now_ms = 1_000_000
        self._handles: list[_Handle] = []
        self._seq = 0

    def call_later(self, delay_s: float, callback: Callable[[], None]) -> _Handle:
        self._seq += 1
        handle = _Handle(self.now_ms + round(delay_s * 1000), self._seq, callback)
        self._handles.append(handle)
        return handle

    async def advance(self, ms: int) -> None:
        await settle()
        target = self.now_ms + ms
        while True:
            due = [h for h in self._handles if not h.cancelled and h.due_ms <= target]
            if not due:
                break
            handle = min(due, key=lambda h: (h.due_ms, h.seq))
            self._handles.remove(handle)
            self.now_ms = max(self.now_ms, handle.due_ms)
            handle.callback()
            await settle()
        self.now_ms = target
        await settle()


class FakeStateLog:
    """One in-memory log per __transaction_state partition."""

    def __init__(self) -> None:
        self.epochs: dict[int, int] = {0: 3}
        self.logs: dict[int, bytearray] = {}
        self.fail_with: list[ErrorCode] = []  # next appends' errors, in order
        self.gate: asyncio.Event | None = None  # appends wait for it when set

    def leader_epoch(self, partition: int) -> int | None:
        return self.epochs.get(partition)

    def log_end_offset(self, partition: int) -> int:
        data = self.logs.get(partition, bytearray())
        return max((h.next_offset for _, h in iter_batch_headers(data)), default=0)

    async def append(self, partition: int, records: bytes, timeout_ms: int) -> tuple[int, int]:
        await asyncio.sleep(0)
        if self.gate is not None:
            await self.gate.wait()
        if self.fail_with:
            return self.fail_with.pop(0), -1
        base = self.log_end_offset(partition)
        data, _ = assign_offsets(records, base, self.epochs.get(partition, 0))
        self.logs.setdefault(partition, bytearray()).extend(data)
        return ErrorCode.NONE, base

    def read(self, partition: int, start: int, max_bytes: int) -> tuple[bytes, int]:
        data = bytes(self.logs.get(partition, b""))
        out = b"".join(
            data[pos : pos + h.size] for pos, h in iter_batch_headers(data) if h.next_offset > start
        )
        return out, self.log_end_offset(partition)

    def records(self, partition: int = 0) -> list[tuple[str | None, TransactionLogValue | None]]:
        return [
            (
                decode_key(r.key) if r.key is not None else None,
                None if r.value is None else decode_value(r.value),
            )
            for r in decode_records(bytes(self.logs.get(partition, b"")))
        ]

    def states(self, partition: int = 0) -> list[str]:
        return [v.state.kafka_name if v else "<tombstone>" for _, v in self.records(partition)]


class FakeProducerIds:
    def __init__(self, first: int = 1000) -> None:
        self.next = first
        self.fail: KafkaError | None = None

    async def generate_producer_id(self) -> int:
        await asyncio.sleep(0)
        if self.fail is not None:
            raise self.fail
        self.next += 1
        return self.next - 1


class FakeMarkerWriter:
    """Records each round; answers from ``script`` (per partition, in order), else NONE."""

    def __init__(self) -> None:
        self.calls: list[MarkerEntry] = []
        self.script: dict[TopicPartition, list[int]] = {}
        self.raise_next = 0
        self.gate: asyncio.Event | None = None

    async def write_markers(
        self, entries: Sequence[MarkerEntry]
    ) -> dict[tuple[int, TopicPartition], int]:
        await asyncio.sleep(0)
        if self.gate is not None:
            await self.gate.wait()
        self.calls.extend(entries)
        if self.raise_next:
            self.raise_next -= 1
            raise ConnectionError("leader went away")
        results: dict[tuple[int, TopicPartition], int] = {}
        for entry in entries:
            for tp in entry.partitions:
                queue = self.script.get(tp)
                results[(entry.producer_id, tp)] = queue.pop(0) if queue else ErrorCode.NONE
        return results


class Harness:
    def __init__(self, log: FakeStateLog | None = None, **config: int) -> None:
        self.timers = FakeTimers()
        self.log = log or FakeStateLog()
        self.producer_ids = FakeProducerIds()
        self.writer = FakeMarkerWriter()
        self.deleted: set[TopicPartition] = set()
        settings = {"transaction_state_log_num_partitions": 1, "offsets_topic_num_partitions": 5}
        settings.update(config)
        self.config = TransactionConfig(**settings)
        self.coordinator = TransactionCoordinator(
            1,
            self.config,
            self.log,
            self.producer_ids,
            self.writer,
            call_later=self.timers.call_later,
            now_ms=lambda: self.timers.now_ms,
            partition_exists=lambda tp: tp not in self.deleted,
        )

    async def start(self) -> None:
        self.coordinator.on_elected(0)
        await settle()

    def state(self, transactional_id: str = "t") -> str:
        (description,) = self.coordinator.describe_transactions([transactional_id])
        return description.state
