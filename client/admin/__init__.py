"""A minimal admin client: topics, partitions, configs, groups, offsets and the cluster, over gRPC.

    with AdminClient("127.0.0.1:9092,127.0.0.1:9093") as admin:
        errors = admin.create_topics([NewTopic("orders", num_partitions=3, replication_factor=3)])
        raise_first(errors)                              # or look at errors["orders"]
        topics = admin.describe_topics(["orders"])       # {"orders": TopicDescription(...)}
        admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition("orders", 0)])

One class, AdminClient, made of one part per concern, each a module of this package:

    _routing.py  AdminBase: connection, cached metadata, where a request goes, the retries
    cluster.py   describe_cluster, list_topics, describe_topics, describe_replicas (any broker)
    topics.py    create_topics, delete_topics, create_partitions, elect_leaders (controller)
    reassignments.py  alter/list_partition_reassignments (controller, KIP-455)
    log_dirs.py  describe_log_dirs, alter_replica_log_dirs (each broker, KIP-113)
    configs.py   describe/alter topic and broker configs
    acls.py      describe_acls, create_acls, delete_acls (any broker)
    groups.py    consumer groups and their committed offsets (the group's coordinator)
    records.py   list_offsets, delete_records (partition leaders)
    users.py     describe/alter_user_scram_credentials (any broker; alter: the controller)
    transactions.py  list/describe_transactions, describe_producers, abort_transaction

Errors: a whole request that fails raises the proto.errors exception for its Kafka code; per-item
outcomes are returned as ``{item: None | KafkaError}`` (None = success), as the futures of Kafka's
Admin API would each complete. ``raise_first`` turns such a map into an exception. A call that
cannot reach its broker retries until its timeout (``request_timeout_ms`` by default), then
raises RequestTimedOutError naming the last problem (_routing.py).

This package imports only grpc and proto (clients never touch ZooKeeper or broker code).
Thread-safe: calls from several threads may run at once; the cached metadata is guarded by a
lock and gRPC channels are shareable.
"""

from __future__ import annotations

from minikafka.client.admin._routing import raise_first
from minikafka.client.admin.acls import AclAdmin
from minikafka.client.admin.cluster import (
    NO_LEADER,
    BrokerReplicas,
    ClusterAdmin,
    ClusterDescription,
    FollowerReplica,
    PartitionInfo,
    PartitionReplicas,
    TopicDescription,
)
from minikafka.client.admin.configs import ConfigAdmin, ConfigEntry, ConfigSynonym
from minikafka.client.admin.groups import (
    ConsumerGroupDescription,
    ConsumerGroupListing,
    GroupAdmin,
    MemberDescription,
)
from minikafka.client.admin.log_dirs import (
    LogDirAdmin,
    LogDirDescription,
    ReplicaInfo,
    TopicPartitionReplica,
)
from minikafka.client.admin.quotas import (
    ClientQuotaAlteration,
    ClientQuotaEntity,
    ClientQuotaFilterComponent,
    QuotaAdmin,
)
from minikafka.client.admin.reassignments import PartitionReassignment, ReassignmentAdmin
from minikafka.client.admin.records import (
    EARLIEST,
    LATEST,
    MAX_TIMESTAMP,
    ListOffsetsResultInfo,
    RecordAdmin,
)
from minikafka.client.admin.topics import ElectionType, NewTopic, TopicAdmin
from minikafka.client.admin.transactions import (
    AbortTransactionSpec,
    ProducerState,
    TransactionAdmin,
    TransactionDescription,
    TransactionListing,
)
from minikafka.client.admin.users import (
    ScramCredentialInfo,
    UserAdmin,
    UserScramCredentialDeletion,
    UserScramCredentialsDescription,
    UserScramCredentialUpsertion,
)
from minikafka.proto.common import Node, OffsetAndMetadata, TopicPartition

__all__ = [
    "EARLIEST",
    "LATEST",
    "MAX_TIMESTAMP",
    "AbortTransactionSpec",
    "AdminClient",
    "BrokerReplicas",
    "ClientQuotaAlteration",
    "ClientQuotaEntity",
    "ClientQuotaFilterComponent",
    "ClusterDescription",
    "ConfigEntry",
    "ConfigSynonym",
    "ConsumerGroupDescription",
    "ConsumerGroupListing",
    "ElectionType",
    "FollowerReplica",
    "ListOffsetsResultInfo",
    "LogDirDescription",
    "MemberDescription",
    "NewTopic",
    "Node",
    "OffsetAndMetadata",
    "PartitionInfo",
    "PartitionReassignment",
    "PartitionReplicas",
    "ProducerState",
    "ReplicaInfo",
    "ScramCredentialInfo",
    "TopicDescription",
    "TopicPartition",
    "TopicPartitionReplica",
    "TransactionDescription",
    "TransactionListing",
    "UserScramCredentialDeletion",
    "UserScramCredentialUpsertion",
    "UserScramCredentialsDescription",
    "raise_first",
]

_ = NO_LEADER  # kept importable from here, as before the split


class AdminClient(
    ClusterAdmin,
    TopicAdmin,
    ReassignmentAdmin,
    LogDirAdmin,
    ConfigAdmin,
    GroupAdmin,
    TransactionAdmin,
    RecordAdmin,
    AclAdmin,
    UserAdmin,
    QuotaAdmin,
):
    """See the module docstring; the methods are the parts' (one part a concern)."""

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
