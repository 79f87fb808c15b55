"""The client's view of the cluster: live brokers and, per partition, leader and leader epoch.

    metadata = ClusterMetadata(pool, ["127.0.0.1:9092"])
    metadata.wait_for_topic("orders", timeout_s=60)   # fetch it, or raise
    metadata.leader_for(TopicPartition("orders", 0))  # -> Node or None
    metadata.request_update()                         # after NOT_LEADER_OR_FOLLOWER & co.

Clients never talk to ZooKeeper: they bootstrap from the Metadata RPC of any broker they know,
the bootstrap list first, then every live broker learnt from earlier answers. Before any broker
has answered, bootstrap servers that all refuse connections fail at once with
BrokersUnreachableError (client/_bootstrap.py) instead of being retried until a timeout.

Thread-safe: one lock guards the snapshot; a refresh swaps in a new immutable snapshot.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from minikafka.client._bootstrap import ask_any_broker
from minikafka.client._channel import ChannelPool
from minikafka.client._retry import RetryLater, RetryPolicy
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.common import Node, TopicPartition
from minikafka.proto.errors import ErrorCode, KafkaError, error_for_code

__all__ = ["ClusterMetadata", "PartitionMetadata"]

# A producer's Metadata asks for a missing topic to be created; a topic the brokers still call
# unknown this long is one they will not create (auto.create.topics.enable=false). The wait
# covers a topic created a moment ago that the broker asked has not heard of yet.
_UNKNOWN_TOPIC_GRACE_S = 1.0


class PartitionMetadata(NamedTuple):
    leader: int  # -1 = no leader
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    error: ErrorCode


@dataclass(frozen=True)
class _Snapshot:
    brokers: dict[int, Node] = field(default_factory=dict)
    topics: dict[str, dict[int, PartitionMetadata]] = field(default_factory=dict)
    topic_errors: dict[str, KafkaError] = field(default_factory=dict)
    cluster_id: str = ""
    controller_id: int = -1


def _code(code: int) -> ErrorCode:
    try:
        return ErrorCode(code)
    except ValueError:
        return ErrorCode.UNKNOWN_SERVER_ERROR


class ClusterMetadata:
    """Brokers and partition leaders, refreshed from the Metadata RPC when asked."""

    def __init__(
        self,
        pool: ChannelPool,
        bootstrap: Iterable[str],
        *,
        request_timeout_ms: int = 30_000,
        metadata_max_age_ms: int = 300_000,
        retry_backoff_ms: int = 100,
        allow_auto_topic_creation: bool = False,
    ) -> None:
        self._pool = pool
        # Ask the brokers to create a missing topic (auto.create.topics.enable permitting), as
        # Kafka's producers do. A topic still unknown after that is one they will not create.
        self._allow_auto_topic_creation = allow_auto_topic_creation
        self._bootstrap = list(bootstrap)
        self._timeout_s = request_timeout_ms / 1000
        self._max_age_s = metadata_max_age_ms / 1000
        self._backoff_s = retry_backoff_ms / 1000
        self._retry = RetryPolicy(backoff_s=self._backoff_s, overrun=True)
        self._lock = threading.Lock()
        self._snapshot = _Snapshot()
        self._topics: set[str] = set()  # the topics this client cares about
        self._updated_at = 0.0
        self._attempted_at = -float("inf")  # the last update() began
        self._need_update = True
        self.version = 0  # bumped by every refresh: callers cache per version

    # --- reads ----------------------------------------------------------------------------

    @property
    def bootstrap(self) -> list[str]:
        return list(self._bootstrap)

    @property
    def cluster_id(self) -> str:
        return self._snapshot.cluster_id

    def brokers(self) -> dict[int, Node]:
        return dict(self._snapshot.brokers)

    def node(self, node_id: int) -> Node | None:
        return self._snapshot.brokers.get(node_id)

    def partitions_for(self, topic: str) -> dict[int, PartitionMetadata] | None:
        return self._snapshot.topics.get(topic)

    def leader_for(self, tp: TopicPartition) -> Node | None:
        snapshot = self._snapshot
        partition = snapshot.topics.get(tp.topic, {}).get(tp.partition)
        if partition is None or partition.leader < 0:
            return None
        return snapshot.brokers.get(partition.leader)

    def topic_error(self, topic: str) -> KafkaError | None:
        return self._snapshot.topic_errors.get(topic)

    # --- refreshing -----------------------------------------------------------------------

    def add_topics(self, topics: Iterable[str]) -> None:
        with self._lock:
            new = set(topics) - self._topics
            if new:
                self._topics |= new
                self._need_update = True

    def request_update(self) -> None:
        self._need_update = True

    def needs_update(self) -> bool:
        """Stale or asked for, and not tried within retry.backoff.ms (as Kafka's refresh
        back-off: with every broker down, a sender loop would otherwise ask every few ms)."""
        now = time.monotonic()
        if now - self._attempted_at < self._backoff_s:
            return False
        return self._need_update or now - self._updated_at > self._max_age_s

    def maybe_update(self) -> None:
        if self.needs_update():
            self.update()

    def wait_for_topic(
        self, topic: str, timeout_s: float, *, partition: int | None = None
    ) -> dict[int, PartitionMetadata]:
        """The partitions of ``topic``, refreshing until it is known (with ``partition``
        among them, when given: one added a moment ago) or ``timeout_s`` passes."""
        self.add_topics([topic])
        unknown_since: float | None = None

        def known(partitions: dict[int, PartitionMetadata]) -> bool:
            return partition is None or partition in partitions

        def attempt() -> dict[int, PartitionMetadata]:
            nonlocal unknown_since
            partitions = self._snapshot.topics.get(topic)
            if partitions and known(partitions) and not self._need_update:
                return partitions
            try:
                self.update()
            except KafkaError as exc:  # retried until the timeout, unless there is no point
                if not exc.retriable:
                    raise
            partitions = self._snapshot.topics.get(topic)
            if partitions and known(partitions):
                return partitions
            if partitions:
                raise RetryLater(f"partition {partition} of topic {topic} not in the metadata yet")
            error = self._snapshot.topic_errors.get(topic)
            if error is not None and not error.retriable:
                raise error
            if error is not None and error.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                unknown_since = time.monotonic() if unknown_since is None else unknown_since
                if (
                    self._allow_auto_topic_creation
                    and time.monotonic() - unknown_since >= _UNKNOWN_TOPIC_GRACE_S
                ):
                    raise error_for_code(
                        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        f"topic {topic} does not exist, and the brokers do not create topics "
                        "on first use (auto.create.topics.enable=false)",
                    )
            else:
                unknown_since = None
            raise RetryLater(f"topic {topic} not in the metadata yet")

        return self._retry.call(
            attempt,
            deadline=time.monotonic() + timeout_s,
            timed_out=lambda last: error_for_code(
                ErrorCode.REQUEST_TIMED_OUT,
                f"topic {topic} not present in metadata after {timeout_s * 1000:.0f} ms"
                if not self._snapshot.topics.get(topic)
                else f"partition {partition} of topic {topic} with partition count "
                f"{len(self._snapshot.topics[topic])} is not present in metadata after "
                f"{timeout_s * 1000:.0f} ms",
            ),
        )

    def list_topics(self) -> list[str]:
        """Every topic in the cluster (one Metadata RPC for all topics; the cache is kept)."""
        response = self._call(pb.MetadataRequest(topics=[], allow_auto_topic_creation=False))
        return sorted(t.name for t in response.topics if not t.error_code)

    def update(self) -> None:
        """One Metadata RPC to the first broker that answers; raises if none does."""
        with self._lock:
            topics = sorted(self._topics)
            candidates = [n.address for n in self._snapshot.brokers.values()]
            self._attempted_at = time.monotonic()
        request = pb.MetadataRequest(
            topics=[pb.MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=self._allow_auto_topic_creation,
        )
        self._install(self._call(request, candidates), set(topics))

    def _call(
        self, request: pb.MetadataRequest, candidates: list[str] | None = None
    ) -> pb.MetadataResponse:
        if candidates is None:
            candidates = [n.address for n in self._snapshot.brokers.values()]

        def ask(address: str) -> pb.MetadataResponse:
            stub = pb_grpc.MetadataStub(self._pool.get(address))
            return stub.Metadata(request, timeout=self._timeout_s)

        try:
            return ask_any_broker(candidates, self._bootstrap, ask)
        except RetryLater as exc:
            raise error_for_code(
                ErrorCode.NETWORK_EXCEPTION, f"no broker answered a Metadata request ({exc})"
            ) from None

    def _install(self, response: pb.MetadataResponse, wanted: set[str]) -> None:
        brokers = {b.node_id: Node(b.node_id, b.host, b.port) for b in response.brokers}
        topics: dict[str, dict[int, PartitionMetadata]] = {}
        errors: dict[str, KafkaError] = {}
        for topic in response.topics:
            if topic.error_code:
                errors[topic.name] = error_for_code(topic.error_code, topic.error_message)
                continue
            topics[topic.name] = {
                p.partition_index: PartitionMetadata(
                    p.leader_id,
                    p.leader_epoch,
                    tuple(p.replica_nodes),
                    tuple(p.isr_nodes),
                    _code(p.error_code),
                )
                for p in topic.partitions
            }
        with self._lock:
            self._snapshot = _Snapshot(
                brokers, topics, errors, response.cluster_id, response.controller_id
            )
            self._updated_at = time.monotonic()
            self.version += 1
            self._need_update = bool(wanted - set(topics) - set(errors)) or any(
                p.leader < 0 for parts in topics.values() for p in parts.values()
            )
