"""The Admin RPC family over gRPC: protobuf to and from TopicAdmin's values.

    AdminService(admin: TopicAdmin, replicas: ReplicaApi | None = None, *,
                 acls: AclApi | None = None, listener: str = "")

What each RPC does, and every check and error, is TopicAdmin's (broker/server/core/admin.py),
which the Kafka listener's handlers call too; this servicer only translates. DescribeReplicas is
ReplicaApi's (broker/server/core/replicas.py); without one it is UNIMPLEMENTED, and so are
DescribeLogDirs and AlterReplicaLogDirs without a LogDirApi (broker/server/core/log_dirs.py), the
users' SCRAM RPCs without a UserScramAdmin (broker/server/core/users.py), the client
quota RPCs without a ClientQuotaAdmin (broker/server/core/client_quotas.py), and
DescribeProducers without the TransactionApi (broker/server/core/transactions.py). DescribeAcls,
CreateAcls and DeleteAcls are AclApi's (broker/server/core/acls.py), asked as the call's
Session on ``listener``; without one they answer SECURITY_DISABLED as the core does.
Protobuf's enums (ConfigResourceType, ConfigSource, ConfigOperation, ElectionType) carry Kafka's
numbers, so they pass through as ints. Every call hands the core its Session
(``grpc_session``), which the core asks the authorizer about; a refused DescribeReplicas, whose
answer has no error field, is PERMISSION_DENIED. Runs on the broker's event loop (grpc.aio).
"""

from __future__ import annotations

import itertools
from typing import Any, cast

import grpc

from minikafka.broker.replication.requests import DeleteRecordsPartition, by_request_topic
from minikafka.broker.security.principal import Session
from minikafka.broker.server.core.acls import (
    AclApi,
    binding_from_wire,
    filter_from_wire,
)
from minikafka.broker.server.core.admin import TopicAdmin
from minikafka.broker.server.core.client_quotas import (
    ClientQuotaAdmin,
    QuotaAlteration,
    QuotaComponent,
    QuotaFilterComponent,
    QuotaOp,
)
from minikafka.broker.server.core.configs import (
    AlterableConfig,
    AlterConfigsResource,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
)
from minikafka.broker.server.core.log_dirs import LogDirApi
from minikafka.broker.server.core.replicas import ReplicaApi
from minikafka.broker.server.core.topics import CreatePartitionsTopic
from minikafka.broker.server.core.users import ScramDeletion, ScramUpsertion, UserScramAdmin
from minikafka.broker.server.grpc_session import grpc_session
from minikafka.broker.server.transaction_service import TransactionCore
from minikafka.controller.controller import NewTopic
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.acl import AclBindingFilter
from minikafka.proto.acl_messages import binding_message
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import KafkaError

__all__ = ["AdminService"]

_Context = grpc.aio.ServicerContext[Any, Any]


class AdminService(pb_grpc.AdminServicer):
    """See the module docstring."""

    def __init__(
        self,
        admin: TopicAdmin,
        replicas: ReplicaApi | None = None,
        *,
        acls: AclApi | None = None,
        listener: str = "",
        users: UserScramAdmin | None = None,
        client_quotas: ClientQuotaAdmin | None = None,
        transactions: TransactionCore | None = None,
        log_dirs: LogDirApi | None = None,
    ) -> None:
        self._admin = admin
        self._log_dirs = log_dirs
        self._transactions = transactions
        self._client_quotas = client_quotas
        self._replicas = replicas
        self._users = users
        self._acls = acls if acls is not None else AclApi(None, None)
        self._listener = listener

    async def DescribeAcls(
        self, request: pb.DescribeAclsRequest, context: _Context
    ) -> pb.DescribeAclsResponse:
        result = await self._acls.describe_acls(
            grpc_session(context, self._listener), _filter(request.filter)
        )
        return pb.DescribeAclsResponse(
            error_code=result.error.error_code,
            error_message=result.error.error_message or "",
            acls=[binding_message(b) for b in result.bindings],
        )

    async def CreateAcls(
        self, request: pb.CreateAclsRequest, context: _Context
    ) -> pb.CreateAclsResponse:
        results = await self._acls.create_acls(
            grpc_session(context, self._listener),
            [
                binding_from_wire(
                    c.resource_type,
                    c.resource_name,
                    c.pattern_type,
                    c.principal,
                    c.host,
                    c.operation,
                    c.permission_type,
                )
                for c in request.creations
            ],
        )
        return pb.CreateAclsResponse(
            results=[
                pb.CreateAclsResponse.AclCreationResult(
                    error_code=r.error_code, error_message=r.error_message or ""
                )
                for r in results
            ]
        )

    async def DeleteAcls(
        self, request: pb.DeleteAclsRequest, context: _Context
    ) -> pb.DeleteAclsResponse:
        results = await self._acls.delete_acls(
            grpc_session(context, self._listener), [_filter(f) for f in request.filters]
        )
        return pb.DeleteAclsResponse(
            filter_results=[
                pb.DeleteAclsResponse.DeleteAclsFilterResult(
                    error_code=r.error.error_code,
                    error_message=r.error.error_message or "",
                    matching_acls=[
                        pb.DeleteAclsResponse.DeleteAclsMatchingAcl(
                            error_code=d.error.error_code,
                            error_message=d.error.error_message or "",
                            acl=binding_message(d.binding),
                        )
                        for d in r.deleted
                    ],
                )
                for r in results
            ]
        )

    def _session(self, context: _Context) -> Session:
        return grpc_session(context, self._listener)

    async def CreateTopics(
        self, request: pb.CreateTopicsRequest, context: _Context
    ) -> pb.CreateTopicsResponse:
        results = await self._admin.create_topics(
            [
                NewTopic(
                    t.name,
                    t.num_partitions,
                    t.replication_factor,
                    {a.partition_index: list(a.broker_ids) for a in t.assignments} or None,
                    dict(t.configs),
                )
                for t in request.topics
            ],
            validate_only=request.validate_only,
            timeout_ms=request.timeout_ms,
            session=self._session(context),
        )
        return pb.CreateTopicsResponse(
            topics=[
                pb.CreateTopicsResponse.CreatableTopicResult(
                    name=r.name,
                    topic_id=r.topic_id,
                    error_code=r.error_code,
                    error_message=r.error_message,
                    num_partitions=r.num_partitions,
                    replication_factor=r.replication_factor,
                    configs=[
                        pb.CreateTopicsResponse.CreatableTopicConfigs(
                            name=c.name,
                            value=c.value,
                            read_only=c.read_only,
                            config_source=_pb_source(c.source),
                            is_sensitive=c.is_sensitive,
                        )
                        for c in r.configs
                    ],
                )
                for r in results
            ]
        )

    async def DeleteTopics(
        self, request: pb.DeleteTopicsRequest, context: _Context
    ) -> pb.DeleteTopicsResponse:
        results = await self._admin.delete_topics(
            list(request.topic_names),
            timeout_ms=request.timeout_ms,
            session=self._session(context),
        )
        return pb.DeleteTopicsResponse(
            responses=[
                pb.DeleteTopicsResponse.DeletableTopicResult(
                    name=r.name,
                    topic_id=r.topic_id,
                    error_code=r.error_code,
                    error_message=r.error_message,
                )
                for r in results
            ]
        )

    async def CreatePartitions(
        self, request: pb.CreatePartitionsRequest, context: _Context
    ) -> pb.CreatePartitionsResponse:
        results = await self._admin.create_partitions(
            [
                CreatePartitionsTopic(
                    t.name, t.count, [list(a.broker_ids) for a in t.assignments] or None
                )
                for t in request.topics
            ],
            validate_only=request.validate_only,
            timeout_ms=request.timeout_ms,
            session=self._session(context),
        )
        return pb.CreatePartitionsResponse(
            results=[
                pb.CreatePartitionsResponse.CreatePartitionsTopicResult(
                    name=r.name, error_code=r.error_code, error_message=r.error_message
                )
                for r in results
            ]
        )

    async def ElectLeaders(
        self, request: pb.ElectLeadersRequest, context: _Context
    ) -> pb.ElectLeadersResponse:
        partitions = (
            [TopicPartition(t.topic, p) for t in request.topic_partitions for p in t.partitions]
            if request.topic_partitions
            else None
        )
        result = await self._admin.elect_leaders(
            int(request.election_type), partitions, session=self._session(context)
        )
        response = pb.ElectLeadersResponse(error_code=result.error_code)
        for topic, items in itertools.groupby(result.partitions, key=lambda r: r.topic):
            response.replica_election_results.add(
                topic=topic,
                partition_result=[
                    pb.ElectLeadersResponse.PartitionResult(
                        partition_id=r.partition,
                        error_code=r.error_code,
                        error_message=r.error_message,
                    )
                    for r in items
                ],
            )
        return response

    async def AlterPartitionReassignments(
        self, request: pb.AlterPartitionReassignmentsRequest, context: _Context
    ) -> pb.AlterPartitionReassignmentsResponse:
        requests: dict[TopicPartition, list[int] | None] = {
            TopicPartition(t.name, p.partition_index): None if p.cancel else list(p.replicas)
            for t in request.topics
            for p in t.partitions
        }
        result = await self._admin.alter_partition_reassignments(
            requests, session=self._session(context)
        )
        response = pb.AlterPartitionReassignmentsResponse(
            error_code=result.error_code, error_message=result.error_message
        )
        for topic, items in itertools.groupby(result.partitions, key=lambda r: r.topic):
            response.responses.add(
                name=topic,
                partitions=[
                    pb.AlterPartitionReassignmentsResponse.ReassignablePartitionResponse(
                        partition_index=r.partition,
                        error_code=r.error_code,
                        error_message=r.error_message,
                    )
                    for r in items
                ],
            )
        return response

    async def ListPartitionReassignments(
        self, request: pb.ListPartitionReassignmentsRequest, context: _Context
    ) -> pb.ListPartitionReassignmentsResponse:
        partitions = (
            [TopicPartition(t.name, p) for t in request.topics for p in t.partition_indexes]
            if request.topics
            else None
        )
        result = await self._admin.list_partition_reassignments(
            partitions, session=self._session(context)
        )
        response = pb.ListPartitionReassignmentsResponse(
            error_code=result.error_code, error_message=result.error_message
        )
        for topic, items in itertools.groupby(result.reassignments, key=lambda r: r.topic):
            response.topics.add(
                name=topic,
                partitions=[
                    pb.ListPartitionReassignmentsResponse.OngoingPartitionReassignment(
                        partition_index=r.partition,
                        replicas=r.replicas,
                        adding_replicas=r.adding_replicas,
                        removing_replicas=r.removing_replicas,
                    )
                    for r in items
                ],
            )
        return response

    async def DescribeConfigs(
        self, request: pb.DescribeConfigsRequest, context: _Context
    ) -> pb.DescribeConfigsResponse:
        results = await self._admin.describe_configs(
            [
                ConfigResource(int(r.resource_type), r.resource_name, tuple(r.configuration_keys))
                for r in request.resources
            ],
            session=self._session(context),
        )
        return pb.DescribeConfigsResponse(
            results=[
                pb.DescribeConfigsResponse.DescribeConfigsResult(
                    error_code=r.error_code,
                    error_message=r.error_message,
                    resource_type=_pb_resource_type(r.resource_type),
                    resource_name=r.resource_name,
                    configs=[_describe_entry(c) for c in r.configs],
                )
                for r in results
            ]
        )

    async def IncrementalAlterConfigs(
        self, request: pb.IncrementalAlterConfigsRequest, context: _Context
    ) -> pb.IncrementalAlterConfigsResponse:
        results = await self._admin.incremental_alter_configs(
            [
                AlterConfigsResource(
                    int(r.resource_type),
                    r.resource_name,
                    [
                        AlterableConfig(
                            c.name,
                            int(c.config_operation),
                            c.value if c.HasField("value") else None,
                        )
                        for c in r.configs
                    ],
                )
                for r in request.resources
            ],
            validate_only=request.validate_only,
            session=self._session(context),
        )
        return pb.IncrementalAlterConfigsResponse(
            responses=[
                pb.IncrementalAlterConfigsResponse.AlterConfigsResourceResponse(
                    error_code=r.error_code,
                    error_message=r.error_message,
                    resource_type=_pb_resource_type(r.resource_type),
                    resource_name=r.resource_name,
                )
                for r in results
            ]
        )

    async def DeleteRecords(
        self, request: pb.DeleteRecordsRequest, context: _Context
    ) -> pb.DeleteRecordsResponse:
        results = await self._admin.delete_records(
            [
                DeleteRecordsPartition(topic.name, p.partition_index, p.offset)
                for topic in request.topics
                for p in topic.partitions
            ],
            request.timeout_ms,
            session=self._session(context),
        )
        # One result per partition in request order: answered in the request's topic layout.
        return pb.DeleteRecordsResponse(
            topics=[
                pb.DeleteRecordsResponse.DeleteRecordsTopicResult(
                    name=topic.name,
                    partitions=[
                        pb.DeleteRecordsResponse.DeleteRecordsPartitionResult(
                            partition_index=r.partition,
                            low_watermark=r.low_watermark,
                            error_code=r.error_code,
                            error_message=r.error_message,
                        )
                        for r in answers
                    ],
                )
                for topic, answers in by_request_topic(request.topics, results)
            ]
        )

    async def DescribeUserScramCredentials(
        self, request: pb.DescribeUserScramCredentialsRequest, context: _Context
    ) -> pb.DescribeUserScramCredentialsResponse:
        if self._users is None:
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, "users are not served")
        assert self._users is not None
        results = await self._users.describe(
            list(request.users) or None, grpc_session(context, self._listener)
        )
        Result = pb.DescribeUserScramCredentialsResponse.DescribeUserScramCredentialsResult
        Info = pb.DescribeUserScramCredentialsResponse.CredentialInfo
        return pb.DescribeUserScramCredentialsResponse(
            results=[
                Result(
                    user=r.user,
                    error_code=r.error_code,
                    error_message=r.error_message or "",
                    credential_infos=[
                        Info(
                            mechanism=cast(pb.ScramMechanism, i.mechanism), iterations=i.iterations
                        )
                        for i in r.credential_infos
                    ],
                )
                for r in results
            ]
        )

    async def AlterUserScramCredentials(
        self, request: pb.AlterUserScramCredentialsRequest, context: _Context
    ) -> pb.AlterUserScramCredentialsResponse:
        if self._users is None:
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, "users are not served")
        assert self._users is not None
        results = await self._users.alter(
            [
                ScramUpsertion(u.name, u.mechanism, u.iterations, u.salt, u.salted_password)
                for u in request.upsertions
            ],
            [ScramDeletion(d.name, d.mechanism) for d in request.deletions],
            grpc_session(context, self._listener),
        )
        Result = pb.AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult
        return pb.AlterUserScramCredentialsResponse(
            results=[
                Result(user=r.user, error_code=r.error_code, error_message=r.error_message or "")
                for r in results
            ]
        )

    async def DescribeProducers(
        self, request: pb.DescribeProducersRequest, context: _Context
    ) -> pb.DescribeProducersResponse:
        if self._transactions is None:
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, "transactions are not served")
        assert self._transactions is not None
        partitions = [
            TopicPartition(topic.name, p)
            for topic in request.topics
            for p in topic.partition_indexes
        ]
        answers = self._transactions.describe_producers(
            partitions, grpc_session(context, self._listener)
        )
        response = pb.DescribeProducersResponse()
        for topic in request.topics:
            entry = response.topics.add(name=topic.name)
            for index in topic.partition_indexes:
                code, message, producers = answers[TopicPartition(topic.name, index)]
                part = entry.partitions.add(
                    partition_index=index, error_code=code, error_message=message
                )
                for p in producers:
                    part.active_producers.add(
                        producer_id=p.producer_id,
                        producer_epoch=p.producer_epoch,
                        last_sequence=p.last_sequence,
                        last_timestamp=p.last_timestamp,
                        coordinator_epoch=p.coordinator_epoch,
                        current_txn_start_offset=p.current_txn_start_offset,
                    )
        return response

    async def DescribeClientQuotas(
        self, request: pb.DescribeClientQuotasRequest, context: _Context
    ) -> pb.DescribeClientQuotasResponse:
        if self._client_quotas is None:
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, "client quotas are not served")
        assert self._client_quotas is not None
        try:
            entries = await self._client_quotas.describe(
                [
                    QuotaFilterComponent(
                        c.entity_type, c.match_type, c.match if c.HasField("match") else None
                    )
                    for c in request.components
                ],
                request.strict,
                grpc_session(context, self._listener),
            )
        except KafkaError as exc:
            return pb.DescribeClientQuotasResponse(error_code=exc.code, error_message=exc.message)
        return pb.DescribeClientQuotasResponse(
            entries=[
                pb.DescribeClientQuotasResponse.Entry(
                    entity=[_pb_quota_component(c) for c in e.entity], values=dict(e.values)
                )
                for e in entries
            ]
        )

    async def AlterClientQuotas(
        self, request: pb.AlterClientQuotasRequest, context: _Context
    ) -> pb.AlterClientQuotasResponse:
        if self._client_quotas is None:
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, "client quotas are not served")
        assert self._client_quotas is not None
        results = await self._client_quotas.alter(
            [
                QuotaAlteration(
                    tuple(
                        QuotaComponent(c.entity_type, c.name if c.HasField("name") else None)
                        for c in entry.entity
                    ),
                    tuple(QuotaOp(op.key, op.value, op.remove) for op in entry.ops),
                )
                for entry in request.entries
            ],
            request.validate_only,
            grpc_session(context, self._listener),
        )
        return pb.AlterClientQuotasResponse(
            results=[
                pb.AlterClientQuotasResponse.Result(
                    entity=[_pb_quota_component(c) for c in r.entity],
                    error_code=r.error_code,
                    error_message=r.error_message or "",
                )
                for r in results
            ]
        )

    async def DescribeLogDirs(
        self, request: pb.DescribeLogDirsRequest, context: _Context
    ) -> pb.DescribeLogDirsResponse:
        if self._log_dirs is None:
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, "DescribeLogDirs is not served")
        assert self._log_dirs is not None
        partitions = (
            None
            if request.all_topics
            else [TopicPartition(t.topic, p) for t in request.topics for p in t.partitions]
        )
        answer = self._log_dirs.describe_log_dirs(partitions, session=self._session(context))
        Result = pb.DescribeLogDirsResponse.Result
        Topic = pb.DescribeLogDirsResponse.Topic
        Partition = pb.DescribeLogDirsResponse.Partition
        results = []
        for d in answer.log_dirs:
            by_topic: dict[str, list[pb.DescribeLogDirsResponse.Partition]] = {
                topic: [] for topic in d.topics
            }
            for p in d.partitions:
                by_topic.setdefault(p.topic, []).append(
                    Partition(
                        partition_index=p.partition,
                        partition_size=p.size,
                        offset_lag=p.offset_lag,
                        is_future_key=p.is_future,
                    )
                )
            results.append(
                Result(
                    error_code=d.error_code,
                    log_dir=d.log_dir,
                    topics=[Topic(name=t, partitions=ps) for t, ps in by_topic.items()],
                    total_bytes=d.total_bytes,
                    usable_bytes=d.usable_bytes,
                )
            )
        return pb.DescribeLogDirsResponse(error_code=answer.error_code, results=results)

    async def AlterReplicaLogDirs(
        self, request: pb.AlterReplicaLogDirsRequest, context: _Context
    ) -> pb.AlterReplicaLogDirsResponse:
        if self._log_dirs is None:
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, "AlterReplicaLogDirs is not served")
        assert self._log_dirs is not None
        destinations = {
            TopicPartition(t.name, p): d.path
            for d in request.dirs
            for t in d.topics
            for p in t.partitions
        }
        errors = self._log_dirs.alter_replica_log_dirs(destinations, session=self._session(context))
        by_topic: dict[str, list[pb.AlterReplicaLogDirsResponse.PartitionResult]] = {}
        for tp, code in errors.items():
            by_topic.setdefault(tp.topic, []).append(
                pb.AlterReplicaLogDirsResponse.PartitionResult(
                    partition_index=tp.partition, error_code=code
                )
            )
        return pb.AlterReplicaLogDirsResponse(
            results=[
                pb.AlterReplicaLogDirsResponse.TopicResult(topic_name=t, partitions=ps)
                for t, ps in by_topic.items()
            ]
        )

    async def DescribeReplicas(
        self, request: pb.DescribeReplicasRequest, context: _Context
    ) -> pb.DescribeReplicasResponse:
        if self._replicas is None:
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, "DescribeReplicas is not served")
        assert self._replicas is not None
        try:
            answer = self._replicas.describe_replicas(
                list(request.topics), session=self._session(context)
            )
        except KafkaError as exc:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, str(exc))
            raise  # abort raises; this only tells the type checker
        Hosted = pb.DescribeReplicasResponse.HostedPartition
        Follower = pb.DescribeReplicasResponse.FollowerReplica
        return pb.DescribeReplicasResponse(
            broker_id=answer.broker_id,
            broker_epoch=answer.broker_epoch,
            controller_epoch=answer.controller_epoch,
            partitions=[
                Hosted(
                    topic=p.topic,
                    partition_index=p.partition,
                    is_leader=p.is_leader,
                    leader_id=p.leader_id,
                    leader_epoch=p.leader_epoch,
                    replica_nodes=p.replicas,
                    isr_nodes=p.isr,
                    high_watermark=p.high_watermark,
                    log_start_offset=p.log_start_offset,
                    log_end_offset=p.log_end_offset,
                    followers=[
                        Follower(
                            broker_id=f.broker_id,
                            log_end_offset=f.log_end_offset,
                            last_caught_up_time_ms=f.last_caught_up_time_ms,
                        )
                        for f in p.followers
                    ],
                )
                for p in answer.partitions
            ],
        )


def _describe_entry(entry: ConfigEntry) -> pb.DescribeConfigsResponse.DescribeConfigsResourceResult:
    return pb.DescribeConfigsResponse.DescribeConfigsResourceResult(
        name=entry.name,
        value=entry.value,
        read_only=entry.read_only,
        is_default=entry.is_default,
        config_source=_pb_source(entry.source),
        is_sensitive=entry.is_sensitive,
        synonyms=[
            pb.DescribeConfigsResponse.DescribeConfigsSynonym(
                name=y.name, value=y.value, source=_pb_source(y.source)
            )
            for y in entry.synonyms
        ],
    )


# Protobuf's enums have Kafka's numbers (and take numbers they do not name): a value is its int.
def _pb_source(source: ConfigSource) -> pb.ConfigSource:
    return cast(pb.ConfigSource, int(source))


def _pb_resource_type(resource_type: int) -> pb.ConfigResourceType:
    return cast(pb.ConfigResourceType, resource_type)


def _filter(f: pb.AclBindingFilter) -> AclBindingFilter:
    return filter_from_wire(
        f.resource_type,
        f.resource_name if f.HasField("resource_name") else None,
        f.pattern_type,
        f.principal if f.HasField("principal") else None,
        f.host if f.HasField("host") else None,
        f.operation,
        f.permission_type,
    )


def _pb_quota_component(component: QuotaComponent) -> pb.QuotaEntityComponent:
    if component.name is None:
        return pb.QuotaEntityComponent(entity_type=component.entity_type)
    return pb.QuotaEntityComponent(entity_type=component.entity_type, name=component.name)
