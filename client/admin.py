"""A minimal admin client: topics, partitions, leader elections and the cluster, over gRPC.

    with AdminClient("127.0.0.1:9092,127.0.0.1:9093") as admin:
        errors = admin.create_topics([NewTopic("orders", num_partitions=3, replication_factor=3)])
        raise_first(errors)                              # or look at errors["orders"]
        topics = admin.describe_topics(["orders"])       # {"orders": TopicDescription(...)}
        admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition("orders", 0)])

Routing, as Kafka's AdminClient does it: metadata (brokers, controller id, topics) comes from
any reachable broker, the bootstrap servers first and then the brokers they reported.
CreateTopics, DeleteTopics, CreatePartitions and ElectLeaders go to the broker whose id is the
controller_id in that metadata; NOT_CONTROLLER, an unknown controller or an unreachable broker
refresh the metadata and retry, with a short back-off, until the call's timeout (by default
``request_timeout_ms``), after which RequestTimedOutError is raised naming the last problem.
Before any broker has answered, bootstrap servers that all refuse connections fail the call at
once with BrokersUnreachableError (client/_bootstrap.py).

Errors: a whole request that fails raises the proto.errors exception for its Kafka code; per-item
outcomes are returned as ``{item: None | KafkaError}`` (None = success), as the futures of Kafka's
Admin API would each complete. ``raise_first`` turns such a map into an exception.

This module imports only grpc and proto (clients never touch ZooKeeper or broker code).
Thread-safe: calls from several threads may run at once; the cached metadata is guarded by a
lock and gRPC channels are shareable.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import NamedTuple, TypeVar

import grpc

from minikafka.client._bootstrap import raise_if_unreachable
from minikafka.client._channel import RETRIABLE_STATUS, ChannelPool, parse_bootstrap_servers
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.errors import ErrorCode, KafkaError, RequestTimedOutError, error_for_code

__all__ = [
    "EARLIEST",
    "LATEST",
    "MAX_TIMESTAMP",
    "AdminClient",
    "BrokerReplicas",
    "ClusterDescription",
    "ConfigEntry",
    "ConsumerGroupDescription",
    "ConsumerGroupListing",
    "ElectionType",
    "FollowerReplica",
    "ListOffsetsResultInfo",
    "MemberDescription",
    "NewTopic",
    "Node",
    "OffsetAndMetadata",
    "PartitionInfo",
    "PartitionReplicas",
    "TopicDescription",
    "TopicPartition",
    "raise_first",
]

R = TypeVar("R")
K = TypeVar("K")
V = TypeVar("V")

NO_LEADER = -1


class ElectionType(IntEnum):
    """Kafka's ElectionType; ``str()`` is the name Kafka prints (PREFERRED, UNCLEAN)."""

    PREFERRED = pb.ELECTION_TYPE_PREFERRED
    UNCLEAN = pb.ELECTION_TYPE_UNCLEAN

    def __str__(self) -> str:
        return self.name


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class Node:
    id: int
    host: str
    port: int
    rack: str | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class ClusterDescription:
    cluster_id: str
    controller_id: int  # -1 while no controller is known
    brokers: tuple[Node, ...]


@dataclass(frozen=True)
class PartitionInfo:
    partition: int
    leader: int  # -1 = no leader
    leader_epoch: int
    replicas: tuple[int, ...]  # assigned replicas, preferred leader first
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    error: ErrorCode = ErrorCode.NONE  # e.g. LEADER_NOT_AVAILABLE for an offline partition


@dataclass(frozen=True)
class TopicDescription:
    name: str
    topic_id: str
    is_internal: bool
    partitions: tuple[PartitionInfo, ...]  # by partition number

    @property
    def replication_factor(self) -> int:
        return len(self.partitions[0].replicas) if self.partitions else 0


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    value: str | None
    source: int  # pb.ConfigSource
    is_default: bool
    read_only: bool = False
    is_sensitive: bool = False


@dataclass(frozen=True)
class NewTopic:
    """A topic to create; -1 partitions or replication factor = the broker's default."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    replica_assignment: Mapping[int, Sequence[int]] = field(default_factory=dict)
    configs: Mapping[str, str] = field(default_factory=dict)


def raise_first(results: Mapping[K, KafkaError | None]) -> None:
    """Raise the first error of a per-item result map, if there is one."""
    for error in results.values():
        if error is not None:
            raise error


def _error(code: int, message: str) -> KafkaError | None:
    return None if code == ErrorCode.NONE else error_for_code(code, message)


class _NotController(Exception):
    """The request reached a broker that is not (or no longer) the controller: find it again."""


@dataclass
class _Metadata:
    brokers: dict[int, Node]
    controller_id: int
    cluster_id: str


class AdminClient:
    """See the module docstring."""

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str],
        *,
        request_timeout_ms: int = 30_000,
        retry_backoff_ms: int = 100,
    ) -> None:
        self._bootstrap = parse_bootstrap_servers(bootstrap_servers)
        self.request_timeout_ms = request_timeout_ms
        self._retry_backoff_s = retry_backoff_ms / 1000
        self._pool = ChannelPool()
        self._lock = threading.Lock()
        self._cached: _Metadata | None = None

    def close(self) -> None:
        self._pool.close()

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- cluster and topics (any broker) ------------------------------------------------------

    def describe_cluster(self, *, timeout_ms: int | None = None) -> ClusterDescription:
        metadata = self._describe_cluster(timeout_ms)
        return ClusterDescription(
            cluster_id=metadata.cluster_id,
            controller_id=metadata.controller_id,
            brokers=tuple(sorted(metadata.brokers.values(), key=lambda n: n.id)),
        )

    def list_topics(
        self, *, include_internal: bool = True, timeout_ms: int | None = None
    ) -> list[str]:
        response = self._metadata([], timeout_ms)
        return sorted(
            t.name
            for t in response.topics
            if t.error_code == ErrorCode.NONE and (include_internal or not t.is_internal)
        )

    def describe_topics(
        self, topics: Sequence[str] | None = None, *, timeout_ms: int | None = None
    ) -> dict[str, TopicDescription]:
        """Leaders, replicas and ISR of the named topics (None = every topic), by name.

        A named topic that does not exist raises UnknownTopicOrPartitionError (or the topic's
        own error, e.g. INVALID_TOPIC_EXCEPTION).
        """
        response = self._metadata(list(topics or []), timeout_ms)
        described: dict[str, TopicDescription] = {}
        for topic in response.topics:
            error = _error(topic.error_code, topic.error_message)
            if error is not None:
                if topics:
                    raise error
                continue
            partitions = sorted(
                (
                    PartitionInfo(
                        partition=p.partition_index,
                        leader=p.leader_id,
                        leader_epoch=p.leader_epoch,
                        replicas=tuple(p.replica_nodes),
                        isr=tuple(p.isr_nodes),
                        offline_replicas=tuple(p.offline_replicas),
                        error=ErrorCode(p.error_code)
                        if p.error_code in ErrorCode._value2member_map_
                        else ErrorCode.UNKNOWN_SERVER_ERROR,
                    )
                    for p in topic.partitions
                ),
                key=lambda p: p.partition,
            )
            described[topic.name] = TopicDescription(
                topic.name, topic.topic_id, topic.is_internal, tuple(partitions)
            )
        return dict(sorted(described.items()))

    def describe_replicas(
        self,
        broker_ids: Iterable[int] | None = None,
        *,
        topics: Sequence[str] = (),
        timeout_ms: int | None = None,
    ) -> dict[int, BrokerReplicas | KafkaError]:
        """What each broker knows of the replicas it hosts (DescribeReplicas, asked of every
        named broker at once; None = every live broker), as Kafka's describeLogDirs: a broker
        that does not answer within the timeout, or that is not live, maps to its error.
        ``topics`` empty = every hosted partition."""
        timeout_s = self._timeout(timeout_ms) / 1000
        brokers = self._cluster(refresh=broker_ids is None, timeout_s=timeout_s).brokers
        wanted = sorted(brokers) if broker_ids is None else sorted(set(broker_ids))
        request = pb.DescribeReplicasRequest(topics=list(topics))
        calls: dict[int, grpc.Future[pb.DescribeReplicasResponse]] = {}
        results: dict[int, BrokerReplicas | KafkaError] = {}
        for broker_id in wanted:
            node = brokers.get(broker_id)
            if node is None:
                results[broker_id] = error_for_code(
                    ErrorCode.BROKER_NOT_AVAILABLE, f"broker {broker_id} is not alive"
                )
                continue
            stub = pb_grpc.AdminStub(self._pool.get(node.address))
            calls[broker_id] = stub.DescribeReplicas.future(request, timeout=timeout_s)
        for broker_id, call in calls.items():
            try:
                response: pb.DescribeReplicasResponse = call.result()
            except grpc.RpcError as exc:
                results[broker_id] = error_for_code(
                    ErrorCode.NETWORK_EXCEPTION, f"broker {broker_id}: {exc.code().name}"
                )
                continue
            error = _error(response.error_code, response.error_message)
            results[broker_id] = error if error is not None else _broker_replicas(response)
        return dict(sorted(results.items()))

    def describe_topic_configs(
        self, topic: str, *, timeout_ms: int | None = None
    ) -> dict[str, ConfigEntry]:
        """The topic's configs (overrides and defaults) by name, from any broker."""
        request = pb.DescribeConfigsRequest(
            resources=[
                pb.DescribeConfigsRequest.DescribeConfigsResource(
                    resource_type=pb.CONFIG_RESOURCE_TYPE_TOPIC, resource_name=topic
                )
            ]
        )

        def send(address: str, timeout_s: float) -> pb.DescribeConfigsResponse:
            stub = pb_grpc.AdminStub(self._pool.get(address))
            return stub.DescribeConfigs(request, timeout=timeout_s)

        response = self._to_any_broker("describeConfigs", send, timeout_ms)
        entries: dict[str, ConfigEntry] = {}
        for result in response.results:
            error = _error(result.error_code, result.error_message)
            if error is not None:
                raise error
            for c in result.configs:
                entries[c.name] = ConfigEntry(
                    name=c.name,
                    value=c.value if c.HasField("value") else None,
                    source=c.config_source,
                    is_default=c.is_default,
                    read_only=c.read_only,
                    is_sensitive=c.is_sensitive,
                )
        return dict(sorted(entries.items()))

    # --- controller requests --------------------------------------------------------------------

    def create_topics(
        self,
        new_topics: Iterable[NewTopic],
        *,
        timeout_ms: int | None = None,
        validate_only: bool = False,
    ) -> dict[str, KafkaError | None]:
        """Create topics; waits (up to the timeout) until the controller has elected leaders."""
        pending = {t.name: t for t in new_topics}
        timeout_ms = self._timeout(timeout_ms)

        def request() -> pb.CreateTopicsRequest:
            return pb.CreateTopicsRequest(
                topics=[
                    pb.CreateTopicsRequest.CreatableTopic(
                        name=t.name,
                        num_partitions=-1 if t.replica_assignment else t.num_partitions,
                        replication_factor=-1 if t.replica_assignment else t.replication_factor,
                        assignments=[
                            pb.CreateTopicsRequest.CreatableReplicaAssignment(
                                partition_index=p, broker_ids=list(t.replica_assignment[p])
                            )
                            for p in sorted(t.replica_assignment)
                        ],
                        configs=dict(t.configs),
                    )
                    for t in pending.values()
                ],
                timeout_ms=timeout_ms,
                validate_only=validate_only,
            )

        def send(stub: pb_grpc.AdminStub, timeout_s: float) -> pb.CreateTopicsResponse:
            return stub.CreateTopics(request(), timeout=timeout_s)

        return self._per_item(
            "createTopics",
            pending,
            send,
            lambda r: ((t.name, t.error_code, t.error_message) for t in r.topics),
            timeout_ms,
        )

    def delete_topics(
        self, topics: Iterable[str], *, timeout_ms: int | None = None
    ) -> dict[str, KafkaError | None]:
        pending = {name: name for name in topics}
        timeout_ms = self._timeout(timeout_ms)

        def send(stub: pb_grpc.AdminStub, timeout_s: float) -> pb.DeleteTopicsResponse:
            request = pb.DeleteTopicsRequest(topic_names=list(pending), timeout_ms=timeout_ms)
            return stub.DeleteTopics(request, timeout=timeout_s)

        return self._per_item(
            "deleteTopics",
            pending,
            send,
            lambda r: ((t.name, t.error_code, t.error_message) for t in r.responses),
            timeout_ms,
        )

    def create_partitions(
        self,
        new_counts: Mapping[str, int],
        *,
        assignments: Mapping[str, Sequence[Sequence[int]]] | None = None,
        timeout_ms: int | None = None,
        validate_only: bool = False,
    ) -> dict[str, KafkaError | None]:
        """Grow topics to ``new_counts[topic]`` partitions (the new total, as in Kafka)."""
        pending = dict(new_counts)
        assignments = assignments or {}
        timeout_ms = self._timeout(timeout_ms)

        def send(stub: pb_grpc.AdminStub, timeout_s: float) -> pb.CreatePartitionsResponse:
            request = pb.CreatePartitionsRequest(
                topics=[
                    pb.CreatePartitionsRequest.CreatePartitionsTopic(
                        name=name,
                        count=count,
                        assignments=[
                            pb.CreatePartitionsRequest.CreatePartitionsAssignment(
                                broker_ids=list(replicas)
                            )
                            for replicas in assignments.get(name, ())
                        ],
                    )
                    for name, count in pending.items()
                ],
                timeout_ms=timeout_ms,
                validate_only=validate_only,
            )
            return stub.CreatePartitions(request, timeout=timeout_s)

        return self._per_item(
            "createPartitions",
            pending,
            send,
            lambda r: ((t.name, t.error_code, t.error_message) for t in r.results),
            timeout_ms,
        )

    def elect_leaders(
        self,
        election_type: ElectionType,
        partitions: Iterable[TopicPartition] | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, KafkaError | None]:
        """Preferred or unclean election; None = every partition of the cluster.

        ELECTION_NOT_NEEDED comes back as that error for partitions whose preferred replica
        already leads.
        """
        timeout_ms = self._timeout(timeout_ms)
        by_topic: dict[str, list[int]] = {}
        for tp in partitions or ():
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        if partitions is not None and not by_topic:
            return {}
        request = pb.ElectLeadersRequest(
            election_type=int(election_type),  # type: ignore[arg-type]
            topic_partitions=[
                pb.ElectLeadersRequest.TopicPartitions(topic=t, partitions=sorted(ps))
                for t, ps in sorted(by_topic.items())
            ],
            timeout_ms=timeout_ms,
        )

        def send(stub: pb_grpc.AdminStub, timeout_s: float) -> pb.ElectLeadersResponse:
            response = stub.ElectLeaders(request, timeout=timeout_s)
            if response.error_code == ErrorCode.NOT_CONTROLLER:
                raise _NotController()
            error = _error(response.error_code, "")
            if error is not None:
                raise error
            return response

        response = self._to_controller("electLeaders", send, timeout_ms)
        results: dict[TopicPartition, KafkaError | None] = {}
        for topic in response.replica_election_results:
            for p in topic.partition_result:
                tp = TopicPartition(topic.topic, p.partition_id)
                results[tp] = _error(p.error_code, p.error_message)
        return dict(sorted(results.items()))

    # --- routing ------------------------------------------------------------------------------

    def _timeout(self, timeout_ms: int | None) -> int:
        return self.request_timeout_ms if timeout_ms is None else timeout_ms

    def _per_item(
        self,
        what: str,
        pending: dict[K, V],
        send: Callable[[pb_grpc.AdminStub, float], R],
        items_of: Callable[[R], Iterable[tuple[K, int, str]]],
        timeout_ms: int,
    ) -> dict[K, KafkaError | None]:
        """Send to the controller; items answered NOT_CONTROLLER are sent again, alone."""
        results: dict[K, KafkaError | None] = {}
        if not pending:
            return results

        def attempt(stub: pb_grpc.AdminStub, timeout_s: float) -> None:
            for key, code, message in items_of(send(stub, timeout_s)):
                if code == ErrorCode.NOT_CONTROLLER or key not in pending:
                    continue
                results[key] = _error(code, message)
                del pending[key]
            if pending:
                raise _NotController()

        self._to_controller(what, attempt, timeout_ms)
        return results

    def _to_controller(
        self, what: str, send: Callable[[pb_grpc.AdminStub, float], R], timeout_ms: int
    ) -> R:
        deadline = time.monotonic() + timeout_ms / 1000
        refresh = False
        last_problem = "no answer yet"
        while True:
            remaining = deadline - time.monotonic()
            try:
                metadata = self._cluster(refresh, max(remaining, 0.001))
                node = metadata.brokers.get(metadata.controller_id)
                if node is None:
                    last_problem = "no controller is known (an election may be running)"
                else:
                    stub = pb_grpc.AdminStub(self._pool.get(node.address))
                    return send(stub, max(deadline - time.monotonic(), 0.001))
            except _NotController:
                last_problem = f"broker {metadata.controller_id} is no longer the controller"
            except grpc.RpcError as exc:
                if exc.code() not in RETRIABLE_STATUS:
                    raise _rpc_error(exc) from None
                last_problem = f"{exc.code().name}: {exc.details()}"
            except RequestTimedOutError as exc:
                last_problem = exc.message
            refresh = True
            if time.monotonic() + self._retry_backoff_s >= deadline:
                raise RequestTimedOutError(
                    f"call {what} timed out after {timeout_ms} ms ({last_problem})"
                )
            time.sleep(self._retry_backoff_s)

    def _to_any_broker(
        self, what: str, send: Callable[[str, float], R], timeout_ms: int | None
    ) -> R:
        """``send(address, timeout_s)`` to each known broker in turn until one answers."""
        timeout_ms = self._timeout(timeout_ms)
        deadline = time.monotonic() + timeout_ms / 1000
        last_problem = "no broker answered"
        while True:
            addresses = self._addresses()
            unavailable: list[str] = []
            for address in addresses:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    return send(address, remaining)
                except grpc.RpcError as exc:
                    if exc.code() not in RETRIABLE_STATUS:
                        raise _rpc_error(exc) from None
                    if exc.code() == grpc.StatusCode.UNAVAILABLE:
                        unavailable.append(address)
                    last_problem = f"{address}: {exc.code().name}: {exc.details()}"
            if self._cached is None:  # never reached a broker: fail at once if none can be
                raise_if_unreachable(addresses, unavailable)
            if time.monotonic() + self._retry_backoff_s >= deadline:
                raise RequestTimedOutError(
                    f"call {what} timed out after {timeout_ms} ms ({last_problem})"
                )
            time.sleep(self._retry_backoff_s)

    def _addresses(self) -> list[str]:
        """Known brokers, then the bootstrap servers, each once."""
        with self._lock:
            known = [n.address for n in self._cached.brokers.values()] if self._cached else []
        return list(dict.fromkeys([*known, *self._bootstrap]))

    def _metadata(self, topics: Sequence[str], timeout_ms: int | None) -> pb.MetadataResponse:
        """A Metadata answer from any broker; no topics named = every topic."""
        request = pb.MetadataRequest(
            topics=[pb.MetadataRequest.MetadataRequestTopic(name=t) for t in topics]
        )

        def send(address: str, timeout_s: float) -> pb.MetadataResponse:
            stub = pb_grpc.MetadataStub(self._pool.get(address))
            return stub.Metadata(request, timeout=timeout_s)

        response = self._to_any_broker("metadata", send, timeout_ms)
        self._remember(_Metadata(_nodes(response), response.controller_id, response.cluster_id))
        return response

    def _describe_cluster(self, timeout_ms: int | None) -> _Metadata:
        """Brokers and controller from DescribeCluster (no topics), from any broker."""

        def send(address: str, timeout_s: float) -> pb.DescribeClusterResponse:
            stub = pb_grpc.MetadataStub(self._pool.get(address))
            return stub.DescribeCluster(pb.DescribeClusterRequest(), timeout=timeout_s)

        response = self._to_any_broker("describeCluster", send, timeout_ms)
        error = _error(response.error_code, response.error_message)
        if error is not None:
            raise error
        nodes = {
            b.broker_id: Node(b.broker_id, b.host, b.port, b.rack if b.HasField("rack") else None)
            for b in response.brokers
        }
        metadata = _Metadata(nodes, response.controller_id, response.cluster_id)
        self._remember(metadata)
        return metadata

    def _cluster(self, refresh: bool, timeout_s: float) -> _Metadata:
        with self._lock:
            cached = self._cached
        if cached is None or refresh:
            cached = self._describe_cluster(max(int(timeout_s * 1000), 1))
        return cached

    def _remember(self, metadata: _Metadata) -> None:
        with self._lock:
            self._cached = metadata

    # --- consumer groups (the group's coordinator) ---------------------------------------------
    # Appended to the class below the routing helpers so the older methods stay untouched; the
    # value types these return are defined after the class.

    def find_coordinator(self, group_id: str, *, timeout_ms: int | None = None) -> Node:
        """The broker coordinating ``group_id`` (FindCoordinator at any broker, retried while
        COORDINATOR_NOT_AVAILABLE, e.g. before ``__consumer_offsets`` has leaders)."""
        timeout_ms = self._timeout(timeout_ms)
        deadline = time.monotonic() + timeout_ms / 1000
        request = pb.FindCoordinatorRequest(key=group_id, key_type=0)
        while True:

            def send(address: str, timeout_s: float) -> pb.FindCoordinatorResponse:
                stub = pb_grpc.GroupStub(self._pool.get(address))
                return stub.FindCoordinator(request, timeout=timeout_s)

            remaining_ms = max(int((deadline - time.monotonic()) * 1000), 1)
            response = self._to_any_broker("findCoordinator", send, remaining_ms)
            if response.error_code == ErrorCode.NONE:
                return Node(response.node_id, response.host, response.port)
            error = error_for_code(response.error_code, response.error_message)
            if not error.retriable or time.monotonic() + self._retry_backoff_s >= deadline:
                raise error
            time.sleep(self._retry_backoff_s)

    def list_groups(
        self, *, states: Sequence[str] = (), timeout_ms: int | None = None
    ) -> list[ConsumerGroupListing]:
        """Every group of the cluster (ListGroups at every broker: each knows its own groups),
        by group id; ``states`` filters by Kafka's state names (Stable, Empty, ...)."""
        timeout_ms = self._timeout(timeout_ms)
        deadline = time.monotonic() + timeout_ms / 1000
        request = pb.ListGroupsRequest(states_filter=list(states))
        listings: dict[str, ConsumerGroupListing] = {}
        for node in self.describe_cluster(timeout_ms=timeout_ms).brokers:
            while True:
                stub = pb_grpc.GroupStub(self._pool.get(node.address))
                remaining = max(deadline - time.monotonic(), 0.001)
                try:
                    response = stub.ListGroups(request, timeout=remaining)
                except grpc.RpcError as exc:
                    if exc.code() not in RETRIABLE_STATUS:
                        raise _rpc_error(exc) from None
                    error: KafkaError = error_for_code(
                        ErrorCode.NETWORK_EXCEPTION,
                        f"broker {node.id} ({node.address}): {exc.code().name}",
                    )
                else:
                    if response.error_code == ErrorCode.NONE:
                        for g in response.groups:
                            listings[g.group_id] = ConsumerGroupListing(
                                g.group_id, g.protocol_type == "", g.group_state
                            )
                        break
                    error = error_for_code(response.error_code, response.error_message)
                if not error.retriable or time.monotonic() + self._retry_backoff_s >= deadline:
                    raise error
                time.sleep(self._retry_backoff_s)
        return [listings[g] for g in sorted(listings)]

    def describe_groups(
        self, group_ids: Iterable[str], *, timeout_ms: int | None = None
    ) -> dict[str, ConsumerGroupDescription]:
        """State, assignor and members (with their assigned partitions) of each group.

        A group the coordinator does not know comes back in state ``Dead`` with no members, as
        Kafka's DescribeGroups answers; other errors (e.g. INVALID_GROUP_ID) are raised.
        """
        from minikafka.client.consumer.assignors import Assignment

        described: dict[str, ConsumerGroupDescription] = {}
        for group_id in group_ids:

            def send(
                stub: pb_grpc.GroupStub, timeout_s: float, group_id: str = group_id
            ) -> pb.DescribeGroupsResponse:
                request = pb.DescribeGroupsRequest(groups=[group_id])
                return stub.DescribeGroups(request, timeout=timeout_s)

            def code_of(response: pb.DescribeGroupsResponse) -> int:
                return response.groups[0].error_code if response.groups else ErrorCode.NONE

            response, coordinator = self._to_coordinator(
                "describeGroups", group_id, send, code_of, timeout_ms
            )
            for g in response.groups:
                error = _error(g.error_code, g.error_message)
                if error is not None:
                    raise error
                members = []
                for m in g.members:
                    try:
                        assignment = Assignment.decode(m.member_assignment)
                    except KafkaError:
                        assignment = Assignment()  # not a consumer's assignment: show none
                    members.append(
                        MemberDescription(
                            member_id=m.member_id,
                            group_instance_id=m.group_instance_id
                            if m.HasField("group_instance_id")
                            else None,
                            client_id=m.client_id,
                            host=m.client_host,
                            assignment=tuple(
                                TopicPartition(t, p) for t, p in assignment.topic_partitions()
                            ),
                        )
                    )
                described[g.group_id] = ConsumerGroupDescription(
                    group_id=g.group_id,
                    is_simple_consumer_group=g.protocol_type == "",
                    members=tuple(members),
                    partition_assignor=g.protocol_data,
                    state=g.group_state,
                    coordinator=coordinator,
                )
        return described

    def list_consumer_group_offsets(
        self,
        group_id: str,
        partitions: Iterable[TopicPartition] | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """The group's committed offsets (OffsetFetch); None = every partition it committed.

        Partitions without a committed offset are left out.
        """
        by_topic: dict[str, list[int]] = {}
        for tp in partitions or ():
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        request = pb.OffsetFetchRequest(
            group_id=group_id,
            topics=[
                pb.OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=sorted(ps))
                for t, ps in sorted(by_topic.items())
            ],
            all_topics=partitions is None,
        )

        def send(stub: pb_grpc.GroupStub, timeout_s: float) -> pb.OffsetFetchResponse:
            return stub.OffsetFetch(request, timeout=timeout_s)

        response, _ = self._to_coordinator(
            "listConsumerGroupOffsets", group_id, send, lambda r: r.error_code, timeout_ms
        )
        error = _error(response.error_code, response.error_message)
        if error is not None:
            raise error
        offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        for topic in response.topics:
            for p in topic.partitions:
                error = _error(p.error_code, p.error_message)
                if error is not None:
                    raise error
                if p.committed_offset >= 0:
                    offsets[TopicPartition(topic.name, p.partition_index)] = OffsetAndMetadata(
                        p.committed_offset,
                        p.metadata if p.HasField("metadata") else "",
                        p.committed_leader_epoch if p.committed_leader_epoch >= 0 else None,
                    )
        return dict(sorted(offsets.items()))

    def alter_consumer_group_offsets(
        self,
        group_id: str,
        offsets: Mapping[TopicPartition, int | OffsetAndMetadata],
        *,
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, KafkaError | None]:
        """Commit offsets for the group from outside it (generation -1, no member id), as
        Kafka's Admin does; the coordinator refuses while the group has members."""
        by_topic: dict[str, list[pb.OffsetCommitRequest.OffsetCommitRequestPartition]] = {}
        for tp, value in offsets.items():
            om = value if isinstance(value, OffsetAndMetadata) else OffsetAndMetadata(value)
            part = pb.OffsetCommitRequest.OffsetCommitRequestPartition(
                partition_index=tp.partition,
                committed_offset=om.offset,
                committed_leader_epoch=-1 if om.leader_epoch is None else om.leader_epoch,
                committed_metadata=om.metadata,
            )
            by_topic.setdefault(tp.topic, []).append(part)
        if not by_topic:
            return {}
        request = pb.OffsetCommitRequest(
            group_id=group_id,
            generation_id=-1,
            member_id="",
            topics=[
                pb.OffsetCommitRequest.OffsetCommitRequestTopic(name=t, partitions=ps)
                for t, ps in sorted(by_topic.items())
            ],
        )

        def send(stub: pb_grpc.GroupStub, timeout_s: float) -> pb.OffsetCommitResponse:
            return stub.OffsetCommit(request, timeout=timeout_s)

        def code_of(response: pb.OffsetCommitResponse) -> int:
            # a coordinator move answers every partition with the same code
            codes = {p.error_code for t in response.topics for p in t.partitions}
            return codes.pop() if len(codes) == 1 else ErrorCode.NONE

        response, _ = self._to_coordinator(
            "alterConsumerGroupOffsets", group_id, send, code_of, timeout_ms
        )
        results: dict[TopicPartition, KafkaError | None] = {}
        for topic in response.topics:
            for p in topic.partitions:
                tp = TopicPartition(topic.name, p.partition_index)
                results[tp] = _error(p.error_code, p.error_message)
        return dict(sorted(results.items()))

    def delete_groups(
        self, group_ids: Iterable[str], *, timeout_ms: int | None = None
    ) -> dict[str, KafkaError | None]:
        """Delete groups (each at its coordinator); NON_EMPTY_GROUP while one has members,
        GROUP_ID_NOT_FOUND for a group that does not exist."""
        results: dict[str, KafkaError | None] = {}
        for group_id in group_ids:

            def send(
                stub: pb_grpc.GroupStub, timeout_s: float, group_id: str = group_id
            ) -> pb.DeleteGroupsResponse:
                request = pb.DeleteGroupsRequest(groups_names=[group_id])
                return stub.DeleteGroups(request, timeout=timeout_s)

            def code_of(response: pb.DeleteGroupsResponse) -> int:
                return response.results[0].error_code if response.results else ErrorCode.NONE

            response, _ = self._to_coordinator("deleteGroups", group_id, send, code_of, timeout_ms)
            for r in response.results:
                results[r.group_id] = _error(r.error_code, r.error_message)
        return results

    def _to_coordinator(
        self,
        what: str,
        group_id: str,
        send: Callable[[pb_grpc.GroupStub, float], R],
        code_of: Callable[[R], int],
        timeout_ms: int | None,
    ) -> tuple[R, Node]:
        """Send to the group's coordinator; look it up again while the answer says it moved
        (NOT_COORDINATOR), is not there yet or is still loading the group."""
        timeout_ms = self._timeout(timeout_ms)
        deadline = time.monotonic() + timeout_ms / 1000
        last_problem = "no answer yet"
        while True:
            remaining_ms = max(int((deadline - time.monotonic()) * 1000), 1)
            node = self.find_coordinator(group_id, timeout_ms=remaining_ms)
            stub = pb_grpc.GroupStub(self._pool.get(node.address))
            try:
                response = send(stub, max(deadline - time.monotonic(), 0.001))
            except grpc.RpcError as exc:
                if exc.code() not in RETRIABLE_STATUS:
                    raise _rpc_error(exc) from None
                last_problem = f"coordinator {node.id}: {exc.code().name}: {exc.details()}"
            else:
                code = code_of(response)
                if code not in _COORDINATOR_MOVED:
                    return response, node
                last_problem = f"coordinator {node.id}: {ErrorCode(code).name}"
            if time.monotonic() + self._retry_backoff_s >= deadline:
                raise RequestTimedOutError(
                    f"call {what} timed out after {timeout_ms} ms ({last_problem})"
                )
            time.sleep(self._retry_backoff_s)

    # --- offsets and records (partition leaders) ------------------------------------------------

    def list_offsets(
        self, specs: Mapping[TopicPartition, int], *, timeout_ms: int | None = None
    ) -> dict[TopicPartition, ListOffsetsResultInfo]:
        """ListOffsets at each partition's leader. A spec is ``EARLIEST`` (-2, the log start
        offset), ``LATEST`` (-1, the high watermark), ``MAX_TIMESTAMP`` (-3) or a timestamp in
        ms (the first offset whose timestamp is at least that, -1 when there is none)."""

        def request(leader_items: Mapping[TopicPartition, int]) -> pb.ListOffsetsRequest:
            by_topic: dict[str, list[pb.ListOffsetsRequest.ListOffsetsPartition]] = {}
            for tp, spec in leader_items.items():
                by_topic.setdefault(tp.topic, []).append(
                    pb.ListOffsetsRequest.ListOffsetsPartition(
                        partition_index=tp.partition, current_leader_epoch=-1, timestamp=spec
                    )
                )
            return pb.ListOffsetsRequest(
                replica_id=-1,
                topics=[
                    pb.ListOffsetsRequest.ListOffsetsTopic(name=t, partitions=ps)
                    for t, ps in by_topic.items()
                ],
            )

        def send(
            address: str, items: Mapping[TopicPartition, int], timeout_s: float
        ) -> dict[TopicPartition, tuple[int, str, ListOffsetsResultInfo]]:
            stub = pb_grpc.DataStub(self._pool.get(address))
            response = stub.ListOffsets(request(items), timeout=timeout_s)
            return {
                TopicPartition(t.name, p.partition_index): (
                    p.error_code,
                    p.error_message,
                    ListOffsetsResultInfo(p.offset, p.timestamp, p.leader_epoch),
                )
                for t in response.topics
                for p in t.partitions
            }

        return self._to_leaders("listOffsets", dict(specs), send, timeout_ms)

    def delete_records(
        self, before_offsets: Mapping[TopicPartition, int], *, timeout_ms: int | None = None
    ) -> dict[TopicPartition, int]:
        """Move each partition's log start offset up to the given offset (-1 = the high
        watermark), at its leader; returns the new low watermarks. Raises the first error."""
        timeout_ms = self._timeout(timeout_ms)

        def send(
            address: str, items: Mapping[TopicPartition, int], timeout_s: float
        ) -> dict[TopicPartition, tuple[int, str, int]]:
            by_topic: dict[str, list[pb.DeleteRecordsRequest.DeleteRecordsPartition]] = {}
            for tp, offset in items.items():
                by_topic.setdefault(tp.topic, []).append(
                    pb.DeleteRecordsRequest.DeleteRecordsPartition(
                        partition_index=tp.partition, offset=offset
                    )
                )
            request = pb.DeleteRecordsRequest(
                topics=[
                    pb.DeleteRecordsRequest.DeleteRecordsTopic(name=t, partitions=ps)
                    for t, ps in by_topic.items()
                ],
                timeout_ms=timeout_ms,
            )
            response = pb_grpc.AdminStub(self._pool.get(address)).DeleteRecords(
                request, timeout=timeout_s
            )
            return {
                TopicPartition(t.name, p.partition_index): (
                    p.error_code,
                    p.error_message,
                    p.low_watermark,
                )
                for t in response.topics
                for p in t.partitions
            }

        return self._to_leaders("deleteRecords", dict(before_offsets), send, timeout_ms)

    def _to_leaders(
        self,
        what: str,
        pending: dict[TopicPartition, K],
        send: Callable[
            [str, Mapping[TopicPartition, K], float], dict[TopicPartition, tuple[int, str, V]]
        ],
        timeout_ms: int | None,
    ) -> dict[TopicPartition, V]:
        """Send each partition's item to its leader; items answered with a retriable error
        (a leader moved, none elected yet) are sent again after a metadata refresh. The first
        other error is raised."""
        timeout_ms = self._timeout(timeout_ms)
        deadline = time.monotonic() + timeout_ms / 1000
        results: dict[TopicPartition, V] = {}
        last_problem = "no answer yet"
        while pending:
            remaining_ms = max(int((deadline - time.monotonic()) * 1000), 1)
            response = self._metadata(sorted({tp.topic for tp in pending}), remaining_ms)
            nodes = _nodes(response)
            leaders: dict[int, dict[TopicPartition, K]] = {}
            for topic in response.topics:
                if topic.error_code != ErrorCode.NONE:
                    error = error_for_code(topic.error_code, topic.error_message)
                    # a topic missing from the metadata is not waited for: it is a typo far
                    # more often than a topic being created at this moment
                    if not error.retriable or error.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                        raise error
                    last_problem = f"{topic.name}: {error}"
                    continue
                for p in topic.partitions:
                    tp = TopicPartition(topic.name, p.partition_index)
                    if tp in pending and p.leader_id in nodes:
                        leaders.setdefault(p.leader_id, {})[tp] = pending[tp]
            known = {
                TopicPartition(t.name, p.partition_index)
                for t in response.topics
                for p in t.partitions
            }
            missing = [tp for tp in pending if tp not in known]
            if missing and all(t.error_code == ErrorCode.NONE for t in response.topics):
                raise error_for_code(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"partition {missing[0]} does not exist"
                )
            for leader, items in leaders.items():
                try:
                    answers = send(
                        nodes[leader].address, items, max(deadline - time.monotonic(), 0.001)
                    )
                except grpc.RpcError as exc:
                    if exc.code() not in RETRIABLE_STATUS:
                        raise _rpc_error(exc) from None
                    last_problem = f"broker {leader}: {exc.code().name}: {exc.details()}"
                    continue
                for tp, (code, message, value) in answers.items():
                    if tp not in pending:
                        continue
                    if code == ErrorCode.NONE:
                        results[tp] = value
                        del pending[tp]
                        continue
                    error = error_for_code(code, message)
                    if not error.retriable:
                        raise error
                    last_problem = f"{tp}: {error}"
            if not pending:
                break
            if time.monotonic() + self._retry_backoff_s >= deadline:
                raise RequestTimedOutError(
                    f"call {what} timed out after {timeout_ms} ms ({last_problem})"
                )
            time.sleep(self._retry_backoff_s)
        return dict(sorted(results.items()))

    # --- configs ---------------------------------------------------------------------------------

    def incremental_alter_configs(
        self,
        topic: str,
        operations: Mapping[str, str | None],
        *,
        validate_only: bool = False,
        timeout_ms: int | None = None,
    ) -> None:
        """Set topic configs (``{name: value}``) or remove overrides (``{name: None}``), as
        Kafka's incrementalAlterConfigs with SET / DELETE; raises the topic's error."""
        request = pb.IncrementalAlterConfigsRequest(
            resources=[
                pb.IncrementalAlterConfigsRequest.AlterConfigsResource(
                    resource_type=pb.CONFIG_RESOURCE_TYPE_TOPIC,
                    resource_name=topic,
                    configs=[
                        pb.IncrementalAlterConfigsRequest.AlterableConfig(
                            name=name,
                            config_operation=pb.CONFIG_OPERATION_DELETE
                            if value is None
                            else pb.CONFIG_OPERATION_SET,
                            value=value,
                        )
                        for name, value in operations.items()
                    ],
                )
            ],
            validate_only=validate_only,
        )

        def send(address: str, timeout_s: float) -> pb.IncrementalAlterConfigsResponse:
            stub = pb_grpc.AdminStub(self._pool.get(address))
            return stub.IncrementalAlterConfigs(request, timeout=timeout_s)

        response = self._to_any_broker("incrementalAlterConfigs", send, timeout_ms)
        for r in response.responses:
            error = _error(r.error_code, r.error_message)
            if error is not None:
                raise error


# Answers after which the group's coordinator is looked up again.
_COORDINATOR_MOVED = frozenset(
    {
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    }
)

EARLIEST = -2  # ListOffsets specs, as the wire spells them
LATEST = -1
MAX_TIMESTAMP = -3


@dataclass(frozen=True)
class ConsumerGroupListing:
    group_id: str
    is_simple_consumer_group: bool  # no protocol type: offsets committed by admin or assign()
    state: str  # Kafka's names: Empty, PreparingRebalance, CompletingRebalance, Stable, Dead


@dataclass(frozen=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class ConsumerGroupDescription:
    group_id: str
    is_simple_consumer_group: bool
    members: tuple[MemberDescription, ...]
    partition_assignor: str  # "" unless Stable / CompletingRebalance
    state: str
    coordinator: Node


class OffsetAndMetadata(NamedTuple):
    offset: int
    metadata: str = ""
    leader_epoch: int | None = None


class ListOffsetsResultInfo(NamedTuple):
    offset: int  # -1 when nothing matched a timestamp
    timestamp: int  # -1 unless the spec was a timestamp
    leader_epoch: int


@dataclass(frozen=True)
class FollowerReplica:
    """A follower as its leader sees it."""

    broker_id: int
    log_end_offset: int  # as of its last fetch; -1 = none since this leader's epoch began
    last_caught_up_time_ms: int  # wall clock; 0 = never


@dataclass(frozen=True)
class PartitionReplicas:
    """One replica as the broker hosting it sees it."""

    topic: str
    partition: int
    is_leader: bool
    leader: int  # -1 = offline
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    followers: tuple[FollowerReplica, ...]  # on the leader only

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True)
class BrokerReplicas:
    broker_id: int
    broker_epoch: int  # its registration in ZooKeeper (czxid); -1 before it registered
    controller_epoch: int  # the newest it has seen
    partitions: tuple[PartitionReplicas, ...]


def _broker_replicas(response: pb.DescribeReplicasResponse) -> BrokerReplicas:
    return BrokerReplicas(
        response.broker_id,
        response.broker_epoch,
        response.controller_epoch,
        tuple(
            PartitionReplicas(
                p.topic,
                p.partition_index,
                p.is_leader,
                p.leader_id,
                p.leader_epoch,
                tuple(p.replica_nodes),
                tuple(p.isr_nodes),
                p.high_watermark,
                p.log_start_offset,
                p.log_end_offset,
                tuple(
                    FollowerReplica(f.broker_id, f.log_end_offset, f.last_caught_up_time_ms)
                    for f in p.followers
                ),
            )
            for p in response.partitions
        ),
    )


def _nodes(response: pb.MetadataResponse) -> dict[int, Node]:
    return {
        b.node_id: Node(b.node_id, b.host, b.port, b.rack if b.HasField("rack") else None)
        for b in response.brokers
    }


def _rpc_error(exc: grpc.RpcError) -> KafkaError:
    """A gRPC failure that retrying will not fix, as a Kafka error."""
    code = exc.code()
    if code == grpc.StatusCode.UNIMPLEMENTED:
        return error_for_code(ErrorCode.UNSUPPORTED_VERSION, f"not served: {exc.details()}")
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        return error_for_code(ErrorCode.INVALID_REQUEST, str(exc.details()))
    return error_for_code(ErrorCode.UNKNOWN_SERVER_ERROR, f"{code.name}: {exc.details()}")
