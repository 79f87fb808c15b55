"""One module per Kafka API family; importing this package registers every handler.

api_versions   ApiVersions
metadata       Metadata, DescribeCluster
produce        Produce
fetch          Fetch
offsets        ListOffsets, OffsetsForLeaderEpoch, DeleteRecords
producer_ids   InitProducerId
groups         FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
               DescribeGroups, ListGroups, DeleteGroups
group_offsets  OffsetCommit, OffsetFetch, OffsetDelete
topics         CreateTopics, DeleteTopics, CreatePartitions, ElectLeaders
log_dirs       AlterReplicaLogDirs, DescribeLogDirs
reassignments  AlterPartitionReassignments, ListPartitionReassignments
sasl           SaslHandshake, SaslAuthenticate once authenticated or on a PLAINTEXT
               listener: ILLEGAL_SASL_STATE (the exchange itself: sasl_authenticator.py)
users          DescribeUserScramCredentials, AlterUserScramCredentials
client_quotas  DescribeClientQuotas, AlterClientQuotas
configs        DescribeConfigs, AlterConfigs, IncrementalAlterConfigs
acls           DescribeAcls, CreateAcls, DeleteAcls
transactions   AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, WriteTxnMarkers,
               TxnOffsetCommit, DescribeProducers, DescribeTransactions, ListTransactions
"""

from minikafka.broker.server.kafka.handlers import (
    acls,
    api_versions,
    client_quotas,
    configs,
    fetch,
    group_offsets,
    groups,
    log_dirs,
    metadata,
    offsets,
    produce,
    producer_ids,
    reassignments,
    sasl,
    topics,
    transactions,
    users,
)

__all__ = [
    "acls",
    "api_versions",
    "client_quotas",
    "configs",
    "fetch",
    "group_offsets",
    "groups",
    "log_dirs",
    "metadata",
    "offsets",
    "produce",
    "producer_ids",
    "reassignments",
    "sasl",
    "topics",
    "transactions",
    "users",
]
