"""ISR changes a leader proposes, written to ZooKeeper (Kafka's AlterPartitionManager in its
ZooKeeper-mode form, ZkAlterPartitionManager).

The partition asks, this manager writes and answers. A leader's ``Partition`` says when a
follower joins (``isr_to_expand``) or leaves (``out_of_sync_replicas``) the ISR; the
ReplicaManager hands the new ISR to ``submit``. In ZooKeeper mode the leader writes the
partition's state znode itself, conditional on the znode version it holds (its partition
epoch), and tells the controller afterwards through ``/isr_change_notification``:

* ``submit`` sets the partition's ``pending_isr`` (until the write ends its maximal ISR, which
  the HW goes by, counts a replica being added and still counts one being removed) and queues
  the change; a partition has one change in flight.
* Every change queued while a batch is written goes into the next batch, written as one
  pipelined ``update_partition_states``: after a broker dies or comes back, thousands of
  partitions change their ISR in one check. A partition proposed twice in one batch (a
  LeaderAndIsr of a newer epoch reset its pending ISR meanwhile) keeps its latest proposal.
* Each change is answered with the znode version ZooKeeper now holds. After a version conflict
  or a ZooKeeper error (some writes of the batch may have landed before it) the znode is read
  back: the same leader and epoch with our ISR means the write landed; the same leader and
  epoch with another ISR is adopted (someone changed it meanwhile; the leader decides again at
  its next check rather than overwrite it); a newer leader or epoch abandons the change.
* The changes applied are recorded for the controller and written as
  ``/isr_change_notification`` znodes every ``check_interval_ms``, many in one, when due
  (isr_change.py holds Kafka's rules for when).

Who listens::

    manager = AlterPartitionManager(
        broker_id, zk, on_written=apply, on_settled=revisit, time_ms=clock_ms
    )
    manager.start(scheduler)                  # the isr-change-propagation task
    manager.submit(partition, frozenset({1, 2}), "shrink")
    # later, on the loop: apply(change, zk_version, adopted_isr_or_None) -> applied?
    #                     revisit(tp) once the change is written or given up

``on_written`` (the ReplicaManager) applies the answer if the partition still has the
leadership the change was proposed under; it returns whether the proposed ISR was applied,
which is what the controller is told of. ``on_settled`` follows every change, written or not.

Not thread-safe: the broker's event loop owns it. ZooKeeper calls go to the default executor
with ``asyncio.to_thread``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable, Mapping
from typing import Literal, NamedTuple, Protocol

import structlog

from minikafka.broker.replication.isr_change import (
    IsrChangePropagation,
    IsrChangePropagationConfig,
)
from minikafka.broker.replication.partition import LeaderState, Partition
from minikafka.broker.replication.scheduler import Scheduler
from minikafka.proto.cluster_state import BadZNodeVersionError, PartitionState, Versioned
from minikafka.proto.common import TopicPartition

__all__ = [
    "AlterPartitionItem",
    "AlterPartitionManager",
    "IsrChange",
    "IsrStore",
    "IsrWritten",
]

_log = structlog.get_logger(__name__)

IsrChange = Literal["shrink", "expand"]


class IsrStore(Protocol):
    """The part of ZkStore the ISR writes use (ZkStore satisfies it)."""

    def get_partition_states(
        self, partitions: Iterable[TopicPartition]
    ) -> Mapping[TopicPartition, Versioned[PartitionState]]: ...

    def update_partition_states(
        self,
        updates: Mapping[TopicPartition, tuple[PartitionState, int]],
        *,
        controller_epoch_zk_version: int | None = None,
    ) -> Mapping[TopicPartition, int | Exception]: ...

    def create_isr_change_notification(self, partitions: Iterable[TopicPartition]) -> str: ...


class AlterPartitionItem(NamedTuple):
    """An ISR change a leader proposed, waiting to be written to its state znode."""

    partition: Partition
    state: LeaderState  # the leader state it was proposed under
    new_isr: frozenset[int]
    change: IsrChange

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.partition.topic, self.partition.partition)


# ``on_written(item, zk_version, adopted)``: the state znode holds ``item.new_isr`` (``adopted``
# None) or ``adopted`` at ``zk_version``. True when the proposed ISR was applied.
IsrWritten = Callable[[AlterPartitionItem, int, "frozenset[int] | None"], bool]


class AlterPartitionManager:
    """Writes proposed ISR changes and tells the controller of them (module docstring)."""

    def __init__(
        self,
        broker_id: int,
        store: IsrStore,
        *,
        on_written: IsrWritten,
        on_settled: Callable[[TopicPartition], None],
        time_ms: Callable[[], int],
        isr_change_propagation: IsrChangePropagationConfig | None = None,
    ) -> None:
        self._broker_id = broker_id
        self._store = store
        self._on_written = on_written
        self._on_settled = on_settled
        self._time_ms = time_ms
        self._pending: list[AlterPartitionItem] = []  # submitted, not being written yet
        self._writer: asyncio.Task[None] | None = None
        self._writes: set[asyncio.Task[None]] = set()
        self.isr_changes = IsrChangePropagation(isr_change_propagation, now_ms=time_ms())

    def start(self, scheduler: Scheduler) -> None:
        """Tell the controller of the ISR changes on ``scheduler`` (Kafka's
        isr-change-propagation task)."""
        scheduler.schedule(
            f"isr-change-propagation-{self._broker_id}",
            self.propagate_isr_changes,
            period_ms=self.isr_changes.config.check_interval_ms,
        )

    async def shutdown(self) -> None:
        """Cancel the writes in flight (a leader that stops needs no answer)."""
        tasks = list(self._writes)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    def submit(self, partition: Partition, new_isr: frozenset[int], change: IsrChange) -> None:
        """Write ``new_isr`` for ``partition``, which must lead and have no change in flight
        (else nothing is done)."""
        state = partition.state
        if not isinstance(state, LeaderState) or partition.pending_isr is not None:
            return
        partition.pending_isr = new_isr
        self._pending.append(AlterPartitionItem(partition, state, new_isr, change))
        if self._writer is None or self._writer.done():
            task = asyncio.get_running_loop().create_task(self._write_pending())
            self._writer = task
            self._writes.add(task)
            task.add_done_callback(self._writes.discard)

    async def _write_pending(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, []
            try:
                await self._write_batch(batch)
            finally:
                for item in batch:
                    if item.partition.pending_isr == item.new_isr:
                        item.partition.pending_isr = None
                    self._on_settled(item.topic_partition)

    async def _write_batch(self, batch: list[AlterPartitionItem]) -> None:
        items = {item.topic_partition: item for item in batch}  # the latest proposal wins
        updates = {
            tp: (
                PartitionState(
                    leader=self._broker_id,
                    leader_epoch=item.state.leader_epoch,
                    isr=tuple(sorted(item.new_isr)),
                    controller_epoch=item.state.controller_epoch,
                ),
                item.state.partition_epoch,
            )
            for tp, item in items.items()
        }
        answers: Mapping[TopicPartition, int | Exception]
        try:
            answers = await asyncio.to_thread(self._store.update_partition_states, updates)
        except Exception as exc:
            # Some writes of the batch may have landed before the error: go by what ZooKeeper
            # holds, read back below, as after a version conflict.
            _log.warning("isr_update.failed", partitions=len(updates), error=str(exc))
            answers = {tp: exc for tp in updates}
        unsure = [tp for tp, answer in answers.items() if isinstance(answer, Exception)]
        reads: Mapping[TopicPartition, Versioned[PartitionState]] = {}
        if unsure:
            try:
                reads = await asyncio.to_thread(self._store.get_partition_states, unsure)
            except Exception as exc:
                _log.warning("isr_update.read_failed", partitions=len(unsure), error=str(exc))
        for tp, item in items.items():
            answer = answers[tp]
            adopted: frozenset[int] | None = None
            if isinstance(answer, Exception):
                read = reads.get(tp)
                if read is None and not isinstance(answer, BadZNodeVersionError):
                    _log.warning(
                        "isr_update.failed",
                        topic=tp.topic,
                        partition=tp.partition,
                        error=str(answer),
                    )
                    continue
                if (
                    read is None
                    or read.value.leader != self._broker_id
                    or read.value.leader_epoch != item.state.leader_epoch
                ):
                    _log.info(
                        "isr_update.abandoned",
                        topic=tp.topic,
                        partition=tp.partition,
                        leader_epoch=item.state.leader_epoch,
                        reason="the partition state znode has a newer leader or epoch",
                    )
                    continue
                version = read.zk_version
                if set(read.value.isr) != item.new_isr:
                    adopted = frozenset(read.value.isr)
            else:
                version = answer
            if item.partition.pending_isr == item.new_isr:
                item.partition.pending_isr = None
            if self._on_written(item, version, adopted):
                self.isr_changes.record(tp, self._time_ms())

    async def propagate_isr_changes(self) -> None:
        """Tell the controller of the recorded ISR changes when they are due (isr_change.py)."""
        for partitions in self.isr_changes.due(self._time_ms()):
            try:
                await asyncio.to_thread(self._store.create_isr_change_notification, partitions)
            except Exception as exc:
                self.isr_changes.restore(partitions)
                _log.warning(
                    "isr_change_notification.failed", partitions=len(partitions), error=str(exc)
                )
