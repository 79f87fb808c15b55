"""Partition replicas: leader and follower state, HW and ISR, fetchers, delayed operations.

Imports point one way: replication uses broker.storage, controller (ZooKeeper state types) and
proto; broker.server uses replication. Everything here lives on the broker's event loop.
"""

from broker.replication.delayed import Purgatory
from broker.replication.fetcher import ReplicaFetcher, ReplicaFetcherManager
from broker.replication.partition import Partition
from broker.replication.producer_state import ProducerIdManager, ProducerStateManager
from broker.replication.replica_manager import (
    FOLLOWER_TRUNCATION_KEY,
    MetadataView,
    PartitionStateStore,
    ReplicaManager,
)

__all__ = [
    "FOLLOWER_TRUNCATION_KEY",
    "MetadataView",
    "Partition",
    "PartitionStateStore",
    "ProducerIdManager",
    "ProducerStateManager",
    "Purgatory",
    "ReplicaFetcher",
    "ReplicaFetcherManager",
    "ReplicaManager",
]
