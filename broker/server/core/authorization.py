"""Which operation each API needs on which resource, and the one place the core asks.

``REQUIRED`` is the table, as Kafka's KafkaApis and AuthHelper check it (ZooKeeper mode, 3.9):
for each API, the ACL operation it needs per resource type. Every core API (both doors call
the same ones) asks ``AuthHelper`` with its row's name, so the checks are written once::

    API                         resource: operation           refused with
    Produce                     Topic: Write                  TOPIC_AUTHORIZATION_FAILED, each
                                TransactionalId: Write        TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    Fetch                       Topic: Read                   TOPIC_AUTHORIZATION_FAILED, each
    Fetch (follower)            Cluster: ClusterAction        TOPIC_AUTHORIZATION_FAILED, each
    ListOffsets                 Topic: Describe               TOPIC_AUTHORIZATION_FAILED, each
    OffsetsForLeaderEpoch       Cluster: ClusterAction, or Topic: Describe (per topic)
    Metadata                    Topic: Describe               named: TOPIC_AUTHORIZATION_FAILED
                                                              all topics: left out
    Metadata (auto-creation)    Cluster: Create, or Topic: Create
    CreateTopics                Cluster: Create, or Topic: Create
    CreateTopics (configs)      Topic: DescribeConfigs        configs left out of the answer
    DeleteTopics                Topic: Delete
    CreatePartitions            Topic: Alter
    DeleteRecords               Topic: Delete
    ElectLeaders                Cluster: Alter                CLUSTER_AUTHORIZATION_FAILED
    AlterPartitionReassignments Cluster: Alter                CLUSTER_AUTHORIZATION_FAILED
    ListPartitionReassignments  Cluster: Describe             CLUSTER_AUTHORIZATION_FAILED
    DescribeConfigs             Topic / Cluster (broker resources): DescribeConfigs
    AlterConfigs                Topic / Cluster (broker resources): AlterConfigs
    InitProducerId              TransactionalId: Write if one is given, else Cluster:
                                IdempotentWrite or Write on any Topic (KIP-679)
    FindCoordinator             Group: Describe (key type 1: TransactionalId: Describe)
    JoinGroup, SyncGroup,
    Heartbeat, LeaveGroup       Group: Read                   GROUP_AUTHORIZATION_FAILED
    OffsetCommit                Group: Read, then Topic: Read per topic
    OffsetFetch                 Group: Describe, then Topic: Describe (all partitions: left out)
    OffsetDelete                Group: Delete, then Topic: Read per topic
    DescribeGroups              Group: Describe
    ListGroups                  Cluster: Describe lists all, else the groups with Group: Describe
    DeleteGroups                Group: Delete
    DescribeCluster             none; its authorized operations need Cluster: Describe
    DescribeReplicas (gRPC)     Cluster: Describe (as Kafka's DescribeLogDirs)
    DescribeLogDirs             Cluster: Describe             CLUSTER_AUTHORIZATION_FAILED
    AlterReplicaLogDirs         Cluster: Alter                CLUSTER_AUTHORIZATION_FAILED, each
    LeaderAndIsr, UpdateMetadata,
    StopReplica, ControlledShutdown   Cluster: ClusterAction   CLUSTER_AUTHORIZATION_FAILED
    AddPartitionsToTxn          TransactionalId: Write, then Topic: Write per topic
    AddOffsetsToTxn             TransactionalId: Write, then Group: Read
    EndTxn                      TransactionalId: Write
    TxnOffsetCommit             TransactionalId: Write, Group: Read, then Topic: Read per topic
    WriteTxnMarkers             Cluster: ClusterAction       CLUSTER_AUTHORIZATION_FAILED
    DescribeTransactions        TransactionalId: Describe; partitions of topics without
                                Topic: Describe left out
    ListTransactions            the ids with TransactionalId: Describe
    DescribeProducers           Topic: Read                   TOPIC_AUTHORIZATION_FAILED, each

A topic the principal may not Describe is answered TOPIC_AUTHORIZATION_FAILED before anything
looks it up, so an answer never tells whether it exists. A refused request changes nothing: the
checks come before the work. ``authorizer`` None (``authorizer.class.name`` unset) allows
everything, as Kafka without an authorizer, and authorized-operations bit sets then hold every
operation the resource type has (``SUPPORTED_OPERATIONS``, Kafka's AclEntry).

Runs on the broker's event loop; the Authorizer answers from its cache without blocking.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from minikafka.broker.security.acl import (
    CLUSTER_NAME,
    AclOperation,
    Action,
    Authorizer,
    ResourceType,
)
from minikafka.broker.security.principal import Session
from minikafka.proto.errors import ErrorCode

__all__ = [
    "AUTHORIZED_OPERATIONS_OMITTED",
    "REQUIRED",
    "SUPPORTED_OPERATIONS",
    "AuthHelper",
    "denied_error",
]

_Op = AclOperation
_R = ResourceType

# The table of the module docstring: API -> resource type -> the operation it needs.
REQUIRED: Mapping[str, Mapping[ResourceType, AclOperation]] = {
    "Produce": {_R.TOPIC: _Op.WRITE, _R.TRANSACTIONAL_ID: _Op.WRITE},
    "Fetch": {_R.TOPIC: _Op.READ},
    "Fetch (follower)": {_R.CLUSTER: _Op.CLUSTER_ACTION},
    "ListOffsets": {_R.TOPIC: _Op.DESCRIBE},
    "OffsetsForLeaderEpoch": {_R.CLUSTER: _Op.CLUSTER_ACTION, _R.TOPIC: _Op.DESCRIBE},
    "Metadata": {_R.TOPIC: _Op.DESCRIBE},
    "Metadata (auto-creation)": {_R.CLUSTER: _Op.CREATE, _R.TOPIC: _Op.CREATE},
    "Metadata (cluster authorized operations)": {_R.CLUSTER: _Op.DESCRIBE},
    "CreateTopics": {_R.CLUSTER: _Op.CREATE, _R.TOPIC: _Op.CREATE},
    "CreateTopics (configs)": {_R.TOPIC: _Op.DESCRIBE_CONFIGS},
    "DeleteTopics": {_R.TOPIC: _Op.DELETE},
    "CreatePartitions": {_R.TOPIC: _Op.ALTER},
    "DeleteRecords": {_R.TOPIC: _Op.DELETE},
    "ElectLeaders": {_R.CLUSTER: _Op.ALTER},
    "AlterPartitionReassignments": {_R.CLUSTER: _Op.ALTER},
    "ListPartitionReassignments": {_R.CLUSTER: _Op.DESCRIBE},
    "DescribeConfigs": {_R.TOPIC: _Op.DESCRIBE_CONFIGS, _R.CLUSTER: _Op.DESCRIBE_CONFIGS},
    "AlterConfigs": {_R.TOPIC: _Op.ALTER_CONFIGS, _R.CLUSTER: _Op.ALTER_CONFIGS},
    "InitProducerId": {
        _R.TRANSACTIONAL_ID: _Op.WRITE,
        _R.CLUSTER: _Op.IDEMPOTENT_WRITE,
        _R.TOPIC: _Op.WRITE,
    },
    "FindCoordinator": {_R.GROUP: _Op.DESCRIBE, _R.TRANSACTIONAL_ID: _Op.DESCRIBE},
    "JoinGroup": {_R.GROUP: _Op.READ},
    "SyncGroup": {_R.GROUP: _Op.READ},
    "Heartbeat": {_R.GROUP: _Op.READ},
    "LeaveGroup": {_R.GROUP: _Op.READ},
    "OffsetCommit": {_R.GROUP: _Op.READ, _R.TOPIC: _Op.READ},
    "OffsetFetch": {_R.GROUP: _Op.DESCRIBE, _R.TOPIC: _Op.DESCRIBE},
    "OffsetDelete": {_R.GROUP: _Op.DELETE, _R.TOPIC: _Op.READ},
    "DescribeGroups": {_R.GROUP: _Op.DESCRIBE},
    "ListGroups": {_R.CLUSTER: _Op.DESCRIBE, _R.GROUP: _Op.DESCRIBE},
    "DeleteGroups": {_R.GROUP: _Op.DELETE},
    "DescribeCluster (authorized operations)": {_R.CLUSTER: _Op.DESCRIBE},
    "DescribeReplicas": {_R.CLUSTER: _Op.DESCRIBE},
    "DescribeLogDirs": {_R.CLUSTER: _Op.DESCRIBE},
    "AlterReplicaLogDirs": {_R.CLUSTER: _Op.ALTER},
    "LeaderAndIsr": {_R.CLUSTER: _Op.CLUSTER_ACTION},
    "UpdateMetadata": {_R.CLUSTER: _Op.CLUSTER_ACTION},
    "StopReplica": {_R.CLUSTER: _Op.CLUSTER_ACTION},
    "ControlledShutdown": {_R.CLUSTER: _Op.CLUSTER_ACTION},
    "AddPartitionsToTxn": {_R.TRANSACTIONAL_ID: _Op.WRITE, _R.TOPIC: _Op.WRITE},
    "AddOffsetsToTxn": {_R.TRANSACTIONAL_ID: _Op.WRITE, _R.GROUP: _Op.READ},
    "EndTxn": {_R.TRANSACTIONAL_ID: _Op.WRITE},
    "TxnOffsetCommit": {_R.TRANSACTIONAL_ID: _Op.WRITE, _R.GROUP: _Op.READ, _R.TOPIC: _Op.READ},
    "WriteTxnMarkers": {_R.CLUSTER: _Op.CLUSTER_ACTION},
    "DescribeTransactions": {_R.TRANSACTIONAL_ID: _Op.DESCRIBE, _R.TOPIC: _Op.DESCRIBE},
    "ListTransactions": {_R.TRANSACTIONAL_ID: _Op.DESCRIBE},
    "DescribeProducers": {_R.TOPIC: _Op.READ},
}

# Kafka's AclEntry.supportedOperations: what an authorized-operations bit set can hold.
SUPPORTED_OPERATIONS: Mapping[ResourceType, tuple[AclOperation, ...]] = {
    _R.TOPIC: (
        _Op.READ,
        _Op.WRITE,
        _Op.CREATE,
        _Op.DESCRIBE,
        _Op.DELETE,
        _Op.ALTER,
        _Op.DESCRIBE_CONFIGS,
        _Op.ALTER_CONFIGS,
    ),
    _R.GROUP: (_Op.READ, _Op.DESCRIBE, _Op.DELETE),
    _R.CLUSTER: (
        _Op.CREATE,
        _Op.CLUSTER_ACTION,
        _Op.DESCRIBE_CONFIGS,
        _Op.ALTER_CONFIGS,
        _Op.IDEMPOTENT_WRITE,
        _Op.ALTER,
        _Op.DESCRIBE,
    ),
    _R.TRANSACTIONAL_ID: (_Op.DESCRIBE, _Op.WRITE),
    _R.DELEGATION_TOKEN: (_Op.DESCRIBE,),
    _R.USER: (_Op.CREATE_TOKENS, _Op.DESCRIBE_TOKENS),
}

# The schemas' default of an authorized_operations field: not asked for.
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)

_DENIED_ERRORS: Mapping[ResourceType, ErrorCode] = {
    _R.TOPIC: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    _R.GROUP: ErrorCode.GROUP_AUTHORIZATION_FAILED,
    _R.CLUSTER: ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    _R.TRANSACTIONAL_ID: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
}


def denied_error(resource_type: ResourceType) -> ErrorCode:
    """Kafka's error for a refusal on a resource of this type."""
    return _DENIED_ERRORS[resource_type]


class AuthHelper:
    """The core's one way to the Authorizer (Kafka's AuthHelper): each call names the API, and
    ``REQUIRED`` says which operation that API needs on the resource type. Not thread-safe:
    the broker's event loop only."""

    def __init__(self, authorizer: Authorizer | None = None) -> None:
        self.authorizer = authorizer

    @property
    def enabled(self) -> bool:
        return self.authorizer is not None

    def allows(
        self,
        session: Session,
        api: str,
        resource_type: ResourceType,
        name: str = CLUSTER_NAME,
        *,
        log_if_denied: bool = True,
    ) -> bool:
        """Whether ``api``'s operation on the resource (the cluster by default) is allowed."""
        authorizer = self.authorizer
        if authorizer is None:
            return True
        action = Action(
            REQUIRED[api][resource_type], resource_type, name, log_if_denied=log_if_denied
        )
        return authorizer.authorize(session, [action])[0]

    def allowed_names(
        self,
        session: Session,
        api: str,
        resource_type: ResourceType,
        names: Iterable[str],
        *,
        log_if_denied: bool = True,
    ) -> set[str]:
        """The names among ``names`` whose resource ``api`` may act on (each asked once)."""
        unique = list(dict.fromkeys(names))
        authorizer = self.authorizer
        if authorizer is None:
            return set(unique)
        operation = REQUIRED[api][resource_type]
        answers = authorizer.authorize(
            session,
            [Action(operation, resource_type, n, log_if_denied=log_if_denied) for n in unique],
        )
        return {name for name, allowed in zip(unique, answers, strict=True) if allowed}

    def allows_any(self, session: Session, api: str, resource_type: ResourceType) -> bool:
        """Whether ``api``'s operation is allowed on at least one resource of the type
        (KIP-679's authorizeByResourceType)."""
        authorizer = self.authorizer
        if authorizer is None:
            return True
        return authorizer.authorize_by_resource_type(
            session, REQUIRED[api][resource_type], resource_type
        )

    def authorized_operations(
        self, session: Session, resource_type: ResourceType, name: str = CLUSTER_NAME
    ) -> int:
        """The bit set (``1 << code``) of the operations the principal has on the resource,
        among those its type supports; all of them without an authorizer. Probes, not
        requests: a denial is not logged."""
        supported = SUPPORTED_OPERATIONS[resource_type]
        authorizer = self.authorizer
        if authorizer is None:
            allowed: Iterable[AclOperation] = supported
        else:
            answers = authorizer.authorize(
                session,
                [Action(op, resource_type, name, log_if_denied=False) for op in supported],
            )
            allowed = [op for op, ok in zip(supported, answers, strict=True) if ok]
        bits = 0
        for op in allowed:
            bits |= 1 << int(op)
        return bits
