"""DescribeReplicas on plain values: the partition replicas this broker hosts, as it sees them.

Kafka's operators read replica state from DescribeLogDirs and the leaders' JMX metrics; here one
request asks one broker for every replica it hosts: role, leader epoch, replicas, ISR, high
watermark, log start and log end offsets, and on a leader the log end offset it last learnt
from each follower's fetch (what acks=all and the high watermark are computed from). The answer
is read from memory, so ``minikafka watch`` can ask every live broker once a second. The
broker's own registration epoch and the newest controller epoch it has seen come with it.
It needs Describe on the cluster (as Kafka's DescribeLogDirs): refused, ``describe_replicas``
raises a KafkaError of CLUSTER_AUTHORIZATION_FAILED.

Runs on the broker's event loop.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Protocol

from minikafka.broker.replication.requests import PartitionReplicaStatus
from minikafka.broker.security.acl import ResourceType
from minikafka.broker.security.principal import ANONYMOUS, Session
from minikafka.broker.server.core.authorization import AuthHelper
from minikafka.proto.errors import ErrorCode, error_for_code

__all__ = ["BrokerReplicas", "ReplicaApi", "ReplicaStatusSource"]

_NO_SESSION = Session(ANONYMOUS, "")


class ReplicaStatusSource(Protocol):
    """The part of the ReplicaManager this reads (the ReplicaManager satisfies it)."""

    broker_id: int

    @property
    def controller_epoch(self) -> int: ...

    def replica_statuses(self) -> list[PartitionReplicaStatus]: ...


@dataclass(frozen=True)
class BrokerReplicas:
    broker_id: int
    broker_epoch: int  # the czxid of its /brokers/ids registration; -1 before it registered
    controller_epoch: int  # the newest this broker has seen
    partitions: tuple[PartitionReplicaStatus, ...]


class ReplicaApi:
    """See the module docstring."""

    def __init__(
        self,
        replica_manager: ReplicaStatusSource,
        broker_epoch: Callable[[], int],
        auth: AuthHelper | None = None,
    ):
        self._replicas = replica_manager
        self._broker_epoch = broker_epoch
        self._auth = auth or AuthHelper()

    def describe_replicas(
        self, topics: Collection[str] | None = None, *, session: Session = _NO_SESSION
    ) -> BrokerReplicas:
        """``topics`` None or empty: every hosted partition."""
        if not self._auth.allows(session, "DescribeReplicas", ResourceType.CLUSTER):
            raise error_for_code(
                ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."
            )
        wanted = set(topics or ())
        return BrokerReplicas(
            self._replicas.broker_id,
            self._broker_epoch(),
            self._replicas.controller_epoch,
            tuple(
                status
                for status in self._replicas.replica_statuses()
                if not wanted or status.topic in wanted
            ),
        )
