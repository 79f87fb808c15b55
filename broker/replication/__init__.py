"""Partition replicas: leader and follower state, HW and ISR, fetchers, delayed operations.

Imports point one way: replication uses broker.storage, broker.config and proto (the ZooKeeper
state types included); broker.server uses replication. Everything here lives on the broker's
event loop.
"""

from minikafka.broker.replication.delayed import Purgatory
from minikafka.broker.replication.fetcher import ReplicaFetcher, ReplicaFetcherManager
from minikafka.broker.replication.partition import Partition
from minikafka.broker.replication.producer_id_manager import ProducerIdManager
from minikafka.broker.replication.producer_state import ProducerStateManager
from minikafka.broker.replication.replica_manager import (
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
