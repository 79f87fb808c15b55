"""What the Kafka-protocol handlers call: the same core the gRPC servicers serve.

The handlers decode Kafka's messages and call the ReplicaManager's data path directly, with the
values of broker/replication/requests.py that the gRPC DataService passes too, and the core's
plain-valued APIs of broker/server/core/ (metadata, groups and the GroupCoordinator, topic
admin) that the gRPC servicers adapt as well; Metadata and FindCoordinator are asked for the
endpoints of the listener the request came in on. Neither front door holds logic the other
lacks.

Lives on the broker's event loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from minikafka.broker.config import BrokerConfig
from minikafka.broker.replication.producer_id_manager import ProducerIdManager
from minikafka.broker.replication.replica_manager import ReplicaManager
from minikafka.broker.server.core.admin import TopicAdmin
from minikafka.broker.server.core.groups import GroupApi
from minikafka.broker.server.core.metadata import MetadataApi
from minikafka.broker.server.metadata_cache import MetadataCache
from minikafka.broker.server.metrics import RequestMetrics

__all__ = ["KafkaBroker"]


@dataclass
class KafkaBroker:
    config: BrokerConfig
    replica_manager: ReplicaManager
    metadata_cache: MetadataCache
    metadata_api: MetadataApi
    groups: GroupApi | None  # None: this broker has no group coordinator
    admin: TopicAdmin
    producer_ids: ProducerIdManager
    requests: RequestMetrics = field(default_factory=RequestMetrics)  # off unless metrics are on
    # (listener, replica id) this broker has warned of refusing a follower's fetch from
    # (handlers/fetch.py): a refused follower retries every back-off, so once per pair.
    refused_replicas: set[tuple[str, int]] = field(default_factory=set)
