"""Metadata and DescribeCluster on plain values, answered from the MetadataCache.

As Kafka: only live brokers are listed, each by its endpoint on the listener the client came in
on (a broker without one is left out, and a partition it leads answers LISTENER_NOT_FOUND); a
partition whose leader is -1 or not alive answers LEADER_NOT_AVAILABLE with leader -1. A
requested topic the cache does not know:

* an illegal name: INVALID_TOPIC_EXCEPTION;
* ``__consumer_offsets``: created (with its own partition count and configs), LEADER_NOT_AVAILABLE;
* ``allow_auto_topic_creation`` from the client and ``auto.create.topics.enable`` on this broker:
  created with ``num.partitions`` / ``default.replication.factor``, LEADER_NOT_AVAILABLE until the
  controller has elected its leaders (or the creation's error, e.g. INVALID_REPLICATION_FACTOR);
* otherwise UNKNOWN_TOPIC_OR_PARTITION.

With an authorizer (core/authorization.py): a topic the principal may not Describe is left out
of an all-topics answer and answered TOPIC_AUTHORIZATION_FAILED when named, before anything
looks it up, so the answer does not tell whether it exists; creating a topic here needs Create
on the cluster or on the topic (else TOPIC_AUTHORIZATION_FAILED, nothing created). Asked for,
each topic's and the cluster's authorized operations are answered as bit sets (the cluster's:
0 without Describe on it, as Kafka). DescribeCluster needs no ACL, as on Kafka's brokers.

The cluster id is the MetadataCache's, read once from /cluster/id when the cache lacks it.
Runs on the broker's event loop.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import Protocol

import structlog

from minikafka.broker.config import BrokerConfig
from minikafka.broker.security.acl import ResourceType
from minikafka.broker.security.principal import ANONYMOUS, Session
from minikafka.broker.server.core.authorization import (
    AUTHORIZED_OPERATIONS_OMITTED,
    AuthHelper,
)
from minikafka.broker.server.core.topic_creation import TopicCreator
from minikafka.broker.server.metadata_cache import BrokerInfo, MetadataCache
from minikafka.controller.topics import validate_topic_name
from minikafka.proto.common import INTERNAL_TOPICS, Node
from minikafka.proto.errors import ErrorCode, KafkaError

__all__ = [
    "ClusterIdSource",
    "ClusterMetadata",
    "MetadataApi",
    "PartitionMetadata",
    "TopicMetadata",
]

_log = structlog.get_logger(__name__)

_NO_SESSION = Session(ANONYMOUS, "")


class ClusterIdSource(Protocol):
    def get_or_create_cluster_id(self) -> str: ...


@dataclass(frozen=True)
class PartitionMetadata:
    partition_index: int
    leader_id: int
    leader_epoch: int
    replica_nodes: tuple[int, ...]
    isr_nodes: tuple[int, ...]
    offline_replicas: tuple[int, ...]
    error: ErrorCode = ErrorCode.NONE


@dataclass(frozen=True)
class TopicMetadata:
    name: str
    error: ErrorCode = ErrorCode.NONE
    error_message: str = ""
    topic_id: str = ""  # ZooKeeper's text form (URL-safe base64, no padding); "" = unknown
    is_internal: bool = False
    partitions: tuple[PartitionMetadata, ...] = ()
    authorized_operations: int = AUTHORIZED_OPERATIONS_OMITTED  # a bit set, when asked for


@dataclass(frozen=True)
class ClusterMetadata:
    cluster_id: str
    controller_id: int
    brokers: tuple[Node, ...]
    topics: tuple[TopicMetadata, ...] = ()
    cluster_authorized_operations: int = AUTHORIZED_OPERATIONS_OMITTED


class MetadataApi:
    """Cluster and topic metadata for clients (see the module docstring)."""

    def __init__(
        self,
        config: BrokerConfig,
        metadata_cache: MetadataCache,
        zk: ClusterIdSource | None = None,
        topic_creator: TopicCreator | None = None,
        auth: AuthHelper | None = None,
    ) -> None:
        self._config = config
        self._cache = metadata_cache
        self._zk = zk
        self._creator = topic_creator
        self._auth = auth or AuthHelper()

    async def metadata(
        self,
        topics: list[str] | None,
        *,
        listener: str | None = None,
        allow_auto_topic_creation: bool = False,
        session: Session = _NO_SESSION,
        include_topic_authorized_operations: bool = False,
        include_cluster_authorized_operations: bool = False,
    ) -> ClusterMetadata:
        """``topics`` None: every topic. ``listener`` None: each broker's first endpoint."""
        auth = self._auth
        brokers = self._brokers(listener)
        listed = {node.id for node in brokers}
        names = self._cache.topics() if topics is None else list(dict.fromkeys(topics))
        # Probing every topic for an all-topics answer is no refusal worth logging.
        describable = auth.allowed_names(
            session, "Metadata", ResourceType.TOPIC, names, log_if_denied=topics is not None
        )
        may_create = allow_auto_topic_creation and topics is not None
        answers = []
        for name in names:
            if name not in describable:
                if topics is not None:
                    answers.append(_denied(name))
                continue
            answer = await self._topic(name, listed, may_create, session)
            if include_topic_authorized_operations:
                answer = replace(
                    answer,
                    authorized_operations=auth.authorized_operations(
                        session, ResourceType.TOPIC, name
                    ),
                )
            answers.append(answer)
        return ClusterMetadata(
            await self._cluster_id(),
            self._cache.controller_id,
            brokers,
            tuple(answers),
            self._cluster_operations(
                session,
                "Metadata (cluster authorized operations)",
                include_cluster_authorized_operations,
            ),
        )

    async def describe_cluster(
        self,
        *,
        listener: str | None = None,
        session: Session = _NO_SESSION,
        include_cluster_authorized_operations: bool = False,
    ) -> ClusterMetadata:
        return ClusterMetadata(
            await self._cluster_id(),
            self._cache.controller_id,
            self._brokers(listener),
            cluster_authorized_operations=self._cluster_operations(
                session,
                "DescribeCluster (authorized operations)",
                include_cluster_authorized_operations,
            ),
        )

    def _cluster_operations(self, session: Session, api: str, wanted: bool) -> int:
        """The cluster's authorized operations when asked for: 0 to a principal that may not
        Describe the cluster, as Kafka answers."""
        if not wanted:
            return AUTHORIZED_OPERATIONS_OMITTED
        if not self._auth.allows(session, api, ResourceType.CLUSTER):
            return 0
        return self._auth.authorized_operations(session, ResourceType.CLUSTER)

    def _brokers(self, listener: str | None) -> tuple[Node, ...]:
        nodes = []
        for broker in self._cache.alive_brokers():
            endpoint = self._endpoint(broker, listener)
            if endpoint is not None:
                nodes.append(Node(broker.broker_id, endpoint[0], endpoint[1], broker.rack))
        return tuple(nodes)

    def _endpoint(self, broker: BrokerInfo, listener: str | None) -> tuple[str, int] | None:
        """The broker's endpoint on ``listener``; None when it has none, and then, as in Kafka,
        it is left out of the answer (a client must never be sent to a port that speaks another
        protocol, nor to another network's names)."""
        if listener is None:
            return broker.host, broker.port
        return self._cache.get_listener_endpoint(broker.broker_id, listener)

    async def _cluster_id(self) -> str:
        if self._cache.cluster_id is None and self._zk is not None:
            try:
                self._cache.cluster_id = await asyncio.to_thread(self._zk.get_or_create_cluster_id)
            except Exception as exc:
                _log.warning("cluster_id.unreadable", error=str(exc))
        return self._cache.cluster_id or ""

    async def _topic(
        self, name: str, listed: set[int], may_create: bool, session: Session
    ) -> TopicMetadata:
        cache = self._cache
        internal = name in INTERNAL_TOPICS
        infos = cache.partitions_of(name)
        if not infos:
            return await self._unknown_topic(name, internal, may_create, session)
        partitions = []
        for info in infos:
            leader, error = info.leader, ErrorCode.NONE
            if info.leader < 0 or not cache.is_alive(info.leader):
                leader, error = -1, ErrorCode.LEADER_NOT_AVAILABLE
            elif info.leader not in listed:  # alive, but not on this listener
                leader, error = -1, ErrorCode.LISTENER_NOT_FOUND
            partitions.append(
                PartitionMetadata(
                    info.partition,
                    leader,
                    info.leader_epoch,
                    info.replicas,
                    info.isr,
                    info.offline_replicas,
                    error,
                )
            )
        return TopicMetadata(
            name, topic_id=infos[0].topic_id, is_internal=internal, partitions=tuple(partitions)
        )

    async def _unknown_topic(
        self, name: str, internal: bool, may_create: bool, session: Session
    ) -> TopicMetadata:
        try:
            validate_topic_name(name)
        except KafkaError as exc:
            return TopicMetadata(name, exc.code, exc.message, is_internal=internal)
        creatable = internal or (may_create and self._config.auto_create_topics_enable)
        if not creatable or self._creator is None:
            return TopicMetadata(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, is_internal=internal)
        api = "Metadata (auto-creation)"
        auth = self._auth
        if not auth.allows(
            session, api, ResourceType.CLUSTER, log_if_denied=False
        ) and not auth.allows(session, api, ResourceType.TOPIC, name):
            return _denied(name, internal)
        refused = await self._creator.create(name)
        if refused is not None:
            return TopicMetadata(name, refused.code, refused.message, is_internal=internal)
        # Created (here or a moment ago): leaders come once the controller has elected them.
        return TopicMetadata(name, ErrorCode.LEADER_NOT_AVAILABLE, is_internal=internal)


def _denied(name: str, internal: bool = False) -> TopicMetadata:
    return TopicMetadata(
        name,
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        f"Not authorized to access topics: [{name}]",
        is_internal=internal,
    )
