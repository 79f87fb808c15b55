"""Producer ids for InitProducerId (Kafka's ZooKeeper-mode ProducerIdManager, and the
non-transactional half of its TransactionCoordinator.handleInitProducerId).

A broker claims blocks of ``PRODUCER_ID_BLOCK_SIZE`` (1000) ids from ``/latest_producer_id_block``
(ZkStore.allocate_producer_id_block, which owns that znode's JSON) and hands them out one by one;
the next block is claimed when one is used up. InitProducerId, which any broker answers:

* a new producer (``producer_id`` -1) gets (next id, epoch 0);
* a producer that presents its id and epoch again (KIP-360) gets the same id with the epoch
  bumped, so that a zombie with the old epoch is fenced; at the last epoch it gets a new id;
* a ``transactional_id`` is refused with INVALID_REQUEST: transactions are not supported (this
  is where a transaction coordinator would take the request);
* no block to be had (ZooKeeper away): COORDINATOR_NOT_AVAILABLE, which producers retry.

::

    producer_ids = ProducerIdManager(broker_id, zk.allocate_producer_id_block)
    result = await producer_ids.init_producer_id(InitProducerIdRequest())
    # InitProducerIdResult(error_code=0, producer_id=0, producer_epoch=0) on a new cluster

Not thread-safe: the broker's event loop owns it; blocks are claimed in the default executor.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import structlog

from minikafka.broker.replication.requests import InitProducerIdRequest, InitProducerIdResult
from minikafka.proto.cluster_state import ProducerIdBlock
from minikafka.proto.errors import ErrorCode, KafkaError, error_for_code
from minikafka.proto.records import MAX_PRODUCER_EPOCH

__all__ = ["ProducerIdManager"]

_log = structlog.get_logger(__name__)


class ProducerIdManager:
    """Producer ids from blocks claimed in ZooKeeper (see the module docstring)."""

    def __init__(self, broker_id: int, allocate_block: Callable[[int], ProducerIdBlock]) -> None:
        """``allocate_block(broker_id)`` claims the next block (blocking: run in a thread)."""
        self._broker_id = broker_id
        self._allocate_block = allocate_block
        self._block: ProducerIdBlock | None = None
        self._next = 0

    async def init_producer_id(self, request: InitProducerIdRequest) -> InitProducerIdResult:
        """An id and epoch for an idempotent producer, or the error to answer."""
        if request.transactional_id is not None:
            return InitProducerIdResult(ErrorCode.INVALID_REQUEST, "transactions are not supported")
        if request.producer_id >= 0 and 0 <= request.producer_epoch < MAX_PRODUCER_EPOCH - 1:
            return InitProducerIdResult(
                ErrorCode.NONE, "", request.producer_id, request.producer_epoch + 1
            )
        try:
            producer_id = await self.generate_producer_id()
        except KafkaError as exc:
            return InitProducerIdResult(exc.code, exc.message)
        return InitProducerIdResult(ErrorCode.NONE, "", producer_id, 0)

    async def generate_producer_id(self) -> int:
        """The next id of the block held, claiming a new block when it is used up; raises a
        KafkaError (COORDINATOR_NOT_AVAILABLE unless ZooKeeper said otherwise) without one."""
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
