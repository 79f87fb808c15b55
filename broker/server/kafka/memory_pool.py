"""The broker's pool of request bytes (``queued.max.request.bytes``), Kafka's SimpleMemoryPool.

Every Kafka connection takes a request's size from the pool before it reads the request's
bytes and gives it back when the request's handler returns (a produce's once appended, before
its acks=all wait; or when the connection closes), as Kafka releases a request's buffer after
KafkaApis.handle: while the pool is spent, connections stop reading requests (Kafka mutes
them) and the bytes wait in the kernel's socket buffers. Not strict, as the broker's pool in
Kafka: a request gets in while any byte is free, so one larger than what is left still gets in
and ``available`` may go negative.
A size of -1 (or any value <= 0) is no pool at all: ``MemoryPool.of`` returns None.

    pool = MemoryPool.of(config.queued_max_request_bytes)
    await pool.allocate(size); ...; pool.release(size)

Owned by the broker's event loop.
"""

from __future__ import annotations

import asyncio

__all__ = ["MemoryPool"]


class MemoryPool:
    def __init__(self, size: int) -> None:
        self.size = size
        self.available = size
        self._freed = asyncio.Event()

    @classmethod
    def of(cls, size: int) -> MemoryPool | None:
        return cls(size) if size > 0 else None

    async def allocate(self, size: int) -> None:
        """Take ``size`` bytes once any byte is free."""
        while self.available <= 0:
            self._freed.clear()
            await self._freed.wait()
        self.available -= size

    def release(self, size: int) -> None:
        self.available += size
        if self.available > 0:
            self._freed.set()
