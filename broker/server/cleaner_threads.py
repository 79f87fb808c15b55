"""The log cleaner's threads in a running broker: Kafka's LogCleaner start, reconfigure and stop.

    threads = CleanerThreads(log_manager, replica_manager, failure_channel)
    threads.start(config)          # log.cleaner.threads coroutines, when log.cleaner.enable
    await threads.reconfigure(new) # a dynamic change of a log.cleaner.* key: stop, start anew
    await threads.shutdown()

Each thread is a coroutine on the loop, which owns the logs: it picks and swaps there and
cleans in a worker thread (broker/storage/cleaner.py, ``run_cleaner_thread``). Lives on the
broker's event loop.
"""

from __future__ import annotations

import asyncio
import contextlib

from minikafka.broker.config import BrokerConfig
from minikafka.broker.replication.replica_manager import ReplicaManager
from minikafka.broker.storage.cleaner import CleanerConfig, LogCleaner, run_cleaner_thread
from minikafka.broker.storage.log_dir_failure import LogDirFailureChannel
from minikafka.broker.storage.log_manager import LogManager
from minikafka.proto.common import TopicPartition

__all__ = ["CleanerThreads"]


def _settings(config: BrokerConfig) -> tuple[object, ...]:
    return (
        config.log_cleaner_enable,
        config.log_cleaner_threads,
        config.log_cleaner_backoff_ms,
        config.log_cleaner_dedupe_buffer_size,
        config.log_cleaner_io_buffer_size,
    )


class CleanerThreads:
    """See the module docstring. Lives on the broker's event loop."""

    def __init__(
        self,
        log_manager: LogManager,
        replica_manager: ReplicaManager,
        failure_channel: LogDirFailureChannel,
    ) -> None:
        self._log_manager = log_manager
        self._replica_manager = replica_manager
        self._failure_channel = failure_channel
        self._config: BrokerConfig | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopped = False

    def start(self, config: BrokerConfig) -> None:
        self._config = config
        self._task = asyncio.create_task(self._run(config))

    async def reconfigure(self, config: BrokerConfig) -> None:
        """Kafka's LogCleaner.reconfigure: when a cleaner setting changed, stop the threads and
        start them anew with it."""
        old, self._config = self._config, config
        if self._stopped or old is None or _settings(config) == _settings(old):
            return
        await self._stop()
        self._task = asyncio.create_task(self._run(config))

    async def shutdown(self) -> None:
        self._stopped = True
        await self._stop()

    async def _stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None

    async def _run(self, config: BrokerConfig) -> None:
        if not config.log_cleaner_enable or config.log_cleaner_threads < 1:
            return
        log_manager, replica_manager = self._log_manager, self._replica_manager
        cleaner = LogCleaner(
            CleanerConfig(
                threads=config.log_cleaner_threads,
                dedupe_buffer_size=config.log_cleaner_dedupe_buffer_size,
                io_buffer_size=config.log_cleaner_io_buffer_size,
                backoff_ms=config.log_cleaner_backoff_ms,
            )
        )

        def producer_last_offsets(tp: TopicPartition) -> frozenset[int]:
            partition = replica_manager.partitions.get(tp)
            if partition is None:
                return frozenset()
            return frozenset(e.last_offset for e in partition.producer_state.snapshot_entries())

        try:
            await asyncio.gather(
                *(
                    run_cleaner_thread(
                        cleaner,
                        lambda: log_manager.cleanable_logs,
                        high_watermarks=replica_manager.high_watermarks,
                        last_stable_offsets=replica_manager.last_stable_offsets,
                        producer_last_offsets=producer_last_offsets,
                        failure_channel=self._failure_channel,
                    )
                    for _ in range(config.log_cleaner_threads)
                )
            )
        finally:
            # Cancelled at shutdown: a cleaning in a worker thread stops within a batch
            # instead of holding the process until it ends.
            cleaner.shutdown()
