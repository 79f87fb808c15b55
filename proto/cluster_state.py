"""The cluster state both the controller and a partition's leader write in ZooKeeper, as values.

The controller elects leaders into a partition's state znode; the leader then writes its ISR
changes to the same znode, conditional on the znode version (Kafka's partition epoch), and
takes producer id blocks from ``/latest_producer_id_block``. So these values are shared by
``minikafka.controller``, ``minikafka.zk`` and ``minikafka.broker.replication``, and live here,
below all three: the replication layer imports nothing of the controller or of zk. The JSON of
each znode is written and read in one place only, zk/zk_data.py; ZooKeeper itself is reached
through zk/zk_store.py.

    Versioned(PartitionState(leader=2, leader_epoch=7, isr=(2, 1), controller_epoch=3), 12)
    ProducerIdBlock(broker_id=1, block_start=0, block_end=999).size   # 1000

Immutable values; safe from any thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["BadZNodeVersionError", "PartitionState", "ProducerIdBlock", "Versioned"]

T = TypeVar("T")


@dataclass(frozen=True)
class Versioned(Generic[T]):
    """A decoded znode with the znode version it was read at, for a conditional write."""

    value: T
    zk_version: int


@dataclass(frozen=True)
class PartitionState:
    """The content of a partition's ``state`` znode (Kafka's LeaderIsrAndControllerEpoch)."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int


@dataclass(frozen=True)
class ProducerIdBlock:
    """Producer ids ``block_start`` to ``block_end`` (inclusive), owned by ``broker_id``."""

    broker_id: int
    block_start: int
    block_end: int

    @property
    def size(self) -> int:
        return self.block_end - self.block_start + 1


class BadZNodeVersionError(Exception):
    """A write conditional on a znode version found another version: someone wrote first.

    Raised by the store (zk/zk_store.py) and caught by whoever wrote: the controller's
    state machines and a leader's ISR update, which re-read and decide again.
    """

    def __init__(self, path: str, expected_zk_version: int) -> None:
        super().__init__(f"{path} is no longer at zk version {expected_zk_version}; re-read it")
        self.path = path
        self.expected_zk_version = expected_zk_version
