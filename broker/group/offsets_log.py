"""``__consumer_offsets`` through the broker's ReplicaManager (the coordinator's OffsetsLog):
the internal-topic log of broker/replication/topic_log.py, for that topic.

Not thread-safe: the broker's event loop.
"""

from __future__ import annotations

from minikafka.broker.group.coordinator import GROUP_METADATA_TOPIC
from minikafka.broker.replication.replica_manager import ReplicaManager
from minikafka.broker.replication.topic_log import ReplicaManagerTopicLog

__all__ = ["ReplicaManagerOffsetsLog"]


class ReplicaManagerOffsetsLog(ReplicaManagerTopicLog):
    def __init__(self, replica_manager: ReplicaManager) -> None:
        super().__init__(replica_manager, GROUP_METADATA_TOPIC)
