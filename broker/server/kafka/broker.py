"""What the Kafka-protocol handlers call: the same core the gRPC servicers serve.

The handlers decode Kafka's messages and call the ReplicaManager's data path directly, with the
values of broker/replication/requests.py that the gRPC DataService passes too; the
GroupCoordinator and the controller's admin paths they reach through the servicers the gRPC
front door uses (built here once per Kafka listener, so Metadata and FindCoordinator answer with
that listener's endpoints). Neither front door holds logic the other lacks.

Lives on the broker's event loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from minikafka.broker.config import BrokerConfig
from minikafka.broker.group.coordinator import GroupCoordinator
from minikafka.broker.replication.replica_manager import ReplicaManager
from minikafka.broker.server.admin_service import AdminService
from minikafka.broker.server.group_service import GroupService
from minikafka.broker.server.kafka.registry import Request
from minikafka.broker.server.metadata_cache import MetadataCache
from minikafka.broker.server.metadata_service import MetadataService
from minikafka.controller.controller import KafkaController
from minikafka.controller.zk_store import ZkStore

__all__ = ["KafkaBroker", "PeerContext", "peer_context"]


class PeerContext:
    """The part of a gRPC servicer context the servicers read: who is calling."""

    def __init__(self, host: str, port: int) -> None:
        self._peer = f"ipv6:[{host}]:{port}" if ":" in host else f"ipv4:{host}:{port}"

    def peer(self) -> str:
        return self._peer


def peer_context(request: Request) -> Any:
    """The context a servicer gets for a Kafka request: only its peer.

    Typed Any: the servicers are annotated with grpc.aio's context, which PeerContext mimics.
    """
    return PeerContext(request.client_host, request.client_port)


@dataclass
class KafkaBroker:
    config: BrokerConfig
    replica_manager: ReplicaManager
    metadata_cache: MetadataCache
    controller: KafkaController
    zk: ZkStore
    group_coordinator: GroupCoordinator | None
    _per_listener: dict[tuple[str, str], Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.admin = AdminService(self.config, self.controller, self.zk, self.replica_manager)

    def metadata(self, listener: str) -> MetadataService:
        key = ("metadata", listener)
        if key not in self._per_listener:
            self._per_listener[key] = MetadataService(
                self.config, self.metadata_cache, self.zk, listener=listener
            )
        service: MetadataService = self._per_listener[key]
        return service

    def group(self, listener: str) -> GroupService | None:
        if self.group_coordinator is None:
            return None
        key = ("group", listener)
        if key not in self._per_listener:
            self._per_listener[key] = GroupService(
                self.config,
                self.group_coordinator,
                self.metadata_cache,
                self.zk,
                listener=listener,
            )
        service: GroupService = self._per_listener[key]
        return service
