"""Idempotent producers: producer ids handed out in blocks, and per-partition sequence state.

``ProducerIdManager`` (Kafka's ZK-mode ProducerIdManager): a broker claims blocks of
``PRODUCER_ID_BLOCK_SIZE`` ids from ``/latest_producer_id_block`` (ZkStore) and hands them out
one by one to InitProducerId; a new producer gets (next id, epoch 0). A producer that presents
its id and epoch again (KIP-360) gets the same id with the epoch bumped.

``ProducerStateManager`` (Kafka's class of the same name, without transactions): per producer id
the epoch and the last ``MAX_BATCHES_PER_PRODUCER`` (5, as Kafka) batches' sequence and offset
ranges. On the leader a produced batch is checked before it is appended:

* a batch equal (same first and last sequence) to one of the cached batches is a retry: it is
  not appended again, and the producer is answered with the offsets the original got;
* an older producer epoch -> INVALID_PRODUCER_EPOCH; a newer epoch must start at sequence 0;
* otherwise the first sequence must follow the last one (mod 2^31) -> else
  OUT_OF_ORDER_SEQUENCE_NUMBER. A producer this partition has no state for is accepted at any
  sequence. There are no ``.snapshot`` files as in Kafka: a Partition rebuilds the state from
  the batch headers of its newest segments when it is opened.

Followers record the batches they fetch (no checks) so that a new leader knows the producers;
truncation forgets batches at or beyond the truncation offset.

Not thread-safe: the broker's event loop only (ProducerIdManager claims blocks in the executor).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

import structlog

from controller.zk_data import ProducerIdBlock
from proto.errors import ErrorCode, KafkaError, OutOfOrderSequenceError, error_for_code
from proto.records import NO_PRODUCER_ID, BatchHeader

__all__ = [
    "MAX_BATCHES_PER_PRODUCER",
    "BatchMetadata",
    "ProducerIdManager",
    "ProducerStateManager",
]

MAX_BATCHES_PER_PRODUCER = 5
_SEQUENCE_MODULO = 2**31
_MAX_EPOCH = 2**15 - 1

_log = structlog.get_logger(__name__)


class BatchMetadata(NamedTuple):
    first_sequence: int
    last_sequence: int
    first_offset: int
    last_offset: int


@dataclass
class _ProducerEntry:
    epoch: int
    batches: deque[BatchMetadata] = field(
        default_factory=lambda: deque(maxlen=MAX_BATCHES_PER_PRODUCER)
    )

    def find_duplicate(self, header: BatchHeader) -> BatchMetadata | None:
        for batch in self.batches:
            if (
                batch.first_sequence == header.base_sequence
                and batch.last_sequence == header.last_sequence
            ):
                return batch
        return None

    @property
    def last_sequence(self) -> int | None:
        return self.batches[-1].last_sequence if self.batches else None


class ProducerStateManager:
    """Producer epochs and recent batches of one partition (see the module docstring)."""

    def __init__(self) -> None:
        self._producers: dict[int, _ProducerEntry] = {}

    def __len__(self) -> int:
        return len(self._producers)

    def check_append(self, headers: Iterable[BatchHeader]) -> BatchMetadata | None:
        """Leader: check produced batches before they get offsets.

        Returns the original batch when the (single) batch is a retry of one already appended;
        None when the batches may be appended; raises a KafkaError when they must be refused.
        """
        headers = list(headers)
        pending: dict[int, tuple[int, int | None]] = {}  # pid -> (epoch, last seq) so far
        for header in headers:
            pid = header.producer_id
            if pid == NO_PRODUCER_ID:
                continue
            entry = self._producers.get(pid)
            if len(headers) == 1 and entry is not None and header.producer_epoch == entry.epoch:
                duplicate = entry.find_duplicate(header)
                if duplicate is not None:
                    return duplicate
            epoch, last = pending.get(
                pid, (entry.epoch, entry.last_sequence) if entry is not None else (-1, None)
            )
            if entry is not None or pid in pending:
                if header.producer_epoch < epoch:
                    raise error_for_code(
                        ErrorCode.INVALID_PRODUCER_EPOCH,
                        f"producer {pid} has epoch {header.producer_epoch}, older than {epoch}",
                    )
                if header.producer_epoch > epoch:
                    if header.base_sequence != 0:
                        raise OutOfOrderSequenceError(
                            f"producer {pid} starts epoch {header.producer_epoch} at sequence "
                            f"{header.base_sequence}, not 0"
                        )
                elif last is not None and header.base_sequence != (last + 1) % _SEQUENCE_MODULO:
                    raise OutOfOrderSequenceError(
                        f"producer {pid} sent sequence {header.base_sequence} after "
                        f"{last} (epoch {epoch})"
                    )
            pending[pid] = (header.producer_epoch, header.last_sequence)
        return None

    def update(self, headers: Iterable[BatchHeader]) -> None:
        """Record appended batches (leader after append, follower after fetch)."""
        for header in headers:
            pid = header.producer_id
            if pid == NO_PRODUCER_ID:
                continue
            entry = self._producers.get(pid)
            if entry is None or header.producer_epoch > entry.epoch:
                entry = _ProducerEntry(header.producer_epoch)
                self._producers[pid] = entry
            elif header.producer_epoch < entry.epoch:
                continue
            entry.batches.append(
                BatchMetadata(
                    header.base_sequence,
                    header.last_sequence,
                    header.base_offset,
                    header.last_offset,
                )
            )

    def truncate_to(self, offset: int) -> None:
        """Forget batches at or beyond ``offset`` (log truncation)."""
        for pid in list(self._producers):
            entry = self._producers[pid]
            kept = [b for b in entry.batches if b.last_offset < offset]
            if len(kept) != len(entry.batches):
                entry.batches = deque(kept, maxlen=MAX_BATCHES_PER_PRODUCER)
                if not kept:
                    del self._producers[pid]

    def clear(self) -> None:
        self._producers.clear()


class ProducerIdManager:
    """Producer ids from blocks claimed in ZooKeeper (see the module docstring)."""

    def __init__(self, broker_id: int, allocate_block: Callable[[int], ProducerIdBlock]) -> None:
        self._broker_id = broker_id
        self._allocate_block = allocate_block
        self._block: ProducerIdBlock | None = None
        self._next = 0

    async def init_producer_id(self, producer_id: int, producer_epoch: int) -> tuple[int, int]:
        """(producer id, epoch) for InitProducerId; raises a KafkaError when none can be had."""
        if producer_id >= 0 and 0 <= producer_epoch < _MAX_EPOCH - 1:
            return producer_id, producer_epoch + 1  # KIP-360: the same producer, fenced epoch
        return await self.generate_producer_id(), 0

    async def generate_producer_id(self) -> int:
        if self._block is None or self._next > self._block.block_end:
            try:
                block = await asyncio.to_thread(self._allocate_block, self._broker_id)
            except KafkaError:
                raise
            except Exception as exc:
                raise error_for_code(
                    ErrorCode.COORDINATOR_NOT_AVAILABLE, f"no producer id block: {exc}"
                ) from exc
            self._block = block
            self._next = block.block_start
            _log.info(
                "producer_id_block.claimed",
                broker_id=self._broker_id,
                block_start=block.block_start,
                block_end=block.block_end,
            )
        producer_id = self._next
        self._next += 1
        return producer_id
