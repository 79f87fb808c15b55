"""What the Kafka-protocol handlers call: the same core the gRPC servicers serve.

The handlers decode Kafka's messages and call the core's plain-valued APIs of
broker/server/core/ (data, fetch, metadata, groups, topic admin) with the values of
broker/replication/requests.py, which the gRPC servicers adapt as well; Fetch, Metadata and
FindCoordinator are told the listener the request came in on, and every call carries the
request's Session, which the core asks the authorizer about. Neither front door holds logic
the other lacks.

Lives on the broker's event loop.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from minikafka.broker.config import BrokerConfig
from minikafka.broker.replication.producer_id_manager import ProducerIdManager
from minikafka.broker.replication.replica_manager import ReplicaManager
from minikafka.broker.security.acl import Authorizer
from minikafka.broker.security.sasl.server import SaslServerFactory
from minikafka.broker.server.core.acls import AclApi
from minikafka.broker.server.core.admin import TopicAdmin
from minikafka.broker.server.core.authorization import AuthHelper
from minikafka.broker.server.core.client_quotas import ClientQuotaAdmin
from minikafka.broker.server.core.data import DataApi
from minikafka.broker.server.core.fetch import FetchApi
from minikafka.broker.server.core.groups import GroupApi
from minikafka.broker.server.core.log_dirs import LogDirApi
from minikafka.broker.server.core.metadata import MetadataApi
from minikafka.broker.server.core.transactions import TransactionApi
from minikafka.broker.server.core.users import UserScramAdmin
from minikafka.broker.server.metadata_cache import MetadataCache
from minikafka.broker.server.metrics import RequestMetrics
from minikafka.broker.server.quotas import ClientQuotaManager

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
    fetches: FetchApi
    requests: RequestMetrics = field(default_factory=RequestMetrics)  # off unless metrics are on
    # SCRAM credentials administration (DescribeUserScramCredentials, AlterUserScram...).
    users: UserScramAdmin | None = None
    # The SASL mechanisms of each SASL listener, by listener name (PLAINTEXT ones: absent).
    sasl: Mapping[str, SaslServerFactory] = field(default_factory=dict)
    # authorizer.class.name's authorizer (None: every request allowed) and the ACL APIs.
    authorizer: Authorizer | None = None
    acls: AclApi = field(default_factory=lambda: AclApi(None, None))
    # Produce, ListOffsets, OffsetsForLeaderEpoch, InitProducerId; None: one without an
    # authorizer on the replica manager and producer ids above.
    data_api: DataApi | None = None

    @property
    def data(self) -> DataApi:
        if self.data_api is None:
            self.data_api = DataApi(self.replica_manager, self.producer_ids)
        return self.data_api

    @property
    def log_dirs(self) -> LogDirApi:
        """DescribeLogDirs and AlterReplicaLogDirs (core/log_dirs.py)."""
        return LogDirApi(self.replica_manager, AuthHelper(self.authorizer))

    # Client quotas: DescribeClientQuotas / AlterClientQuotas, and the quotas in force.
    client_quotas: ClientQuotaAdmin | None = None
    quotas: ClientQuotaManager = field(default_factory=ClientQuotaManager)
    # The transaction APIs (core/transactions.py); None: a broker without a transaction
    # coordinator answers them COORDINATOR_NOT_AVAILABLE.
    transactions: TransactionApi | None = None
