"""The broker's Prometheus metrics: ``GET /metrics`` on ``metrics.listener``.

Names follow the Prometheus JMX exporter's standard Kafka rules (``kafka_<domain>_<type>_<name>``
in lower case, ``_total`` on counters), so dashboards made for Kafka read them; README.md's
metrics table maps each to the MBean it mirrors.

    metrics = BrokerMetrics.create(config.metrics_listener)     # None when metrics are off
    metrics.requests.observe("Produce", started)                 # both front doors
    metrics.bind(MetricSources(loop, replica_manager, controller, ...)); metrics.start()
    ...
    metrics.stop()

Where the values come from, and when:
- **Gauges are read at scrape time**, by ``BrokerCollector`` (a custom collector): partition
  counts, under-replicated and under-min-ISR partitions, LEO / HW / log start offset / size,
  purgatory sizes, the replica fetchers' max lag and consumer lag. That state belongs to the
  broker's event loop, and the collector runs on the HTTP server's thread: it hops onto the
  loop (``asyncio.run_coroutine_threadsafe``, bounded by ``_SNAPSHOT_TIMEOUT_S``) and copies
  what it needs in one go there, so a scrape sees one consistent moment and the data path pays
  nothing between scrapes. A loop that does not answer in time (a broker stopping) gives a
  scrape without those families rather than a stale one.
- **Event counters** are plain integers bumped where the event happens (ISR shrinks and
  expands, messages and bytes in and out: broker/replication/stats.py), read in the same hop.
- **The controller's gauges** are an immutable value the controller's event thread replaces
  after every event (``KafkaController.metrics``); ActiveControllerCount is read live.
- **Requests** (count and TotalTimeMs histogram per Kafka request name, both front doors) and
  **ZooKeeper session** counters are prometheus-client metrics updated as they happen: they
  are thread-safe, and the request path adds about a microsecond.
- **Process** CPU seconds and resident memory: prometheus-client's ProcessCollector.

Each broker has its own CollectorRegistry (several brokers may share a process in tests).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias
from wsgiref.simple_server import WSGIServer

import grpc
import structlog
from kazoo.protocol.states import KazooState
from prometheus_client import CollectorRegistry, Counter, Histogram, ProcessCollector
from prometheus_client import start_http_server as _start_http_server
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.samples import Sample

from minikafka.broker.config import parse_metrics_listener
from minikafka.broker.replication.fetch_session import FetchSessionStats
from minikafka.broker.replication.stats import TopicStats
from minikafka.broker.server.quotas import ClientQuotaManager, QuotaKey, QuotaType
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto import transport
from minikafka.proto.sasl_channel import SaslCredentials, aio_sasl_channel

if TYPE_CHECKING:
    from kazoo.client import KazooClient

    from minikafka.broker.group.coordinator import GroupCoordinator
    from minikafka.broker.replication.replica_manager import ReplicaManager
    from minikafka.broker.server.metadata_cache import MetadataCache
    from minikafka.controller.controller import KafkaController

__all__ = [
    "BrokerCollector",
    "BrokerMetrics",
    "MetricSources",
    "RequestMetrics",
    "RequestMetricsInterceptor",
    "kafka_request_name",
]

_log = structlog.get_logger("broker.metrics")

_SNAPSHOT_TIMEOUT_S = 3.0
_END_OFFSETS_TIMEOUT_S = 1.0
# TotalTimeMs buckets, in milliseconds as Kafka's histogram is.
_LATENCY_BUCKETS_MS = (0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000)

# Kafka's ApiKeys names, for the requests of the Kafka front door.
_KAFKA_API_NAMES: Mapping[int, str] = {
    0: "Produce",
    1: "Fetch",
    2: "ListOffsets",
    3: "Metadata",
    8: "OffsetCommit",
    9: "OffsetFetch",
    10: "FindCoordinator",
    11: "JoinGroup",
    12: "Heartbeat",
    13: "LeaveGroup",
    14: "SyncGroup",
    15: "DescribeGroups",
    16: "ListGroups",
    17: "SaslHandshake",
    18: "ApiVersions",
    19: "CreateTopics",
    20: "DeleteTopics",
    21: "DeleteRecords",
    22: "InitProducerId",
    23: "OffsetForLeaderEpoch",
    32: "DescribeConfigs",
    33: "AlterConfigs",
    36: "SaslAuthenticate",
    37: "CreatePartitions",
    42: "DeleteGroups",
    44: "IncrementalAlterConfigs",
    60: "DescribeCluster",
}
# gRPC methods whose Kafka name differs (the others carry Kafka's name already).
_GRPC_NAMES: Mapping[str, str] = {"OffsetsForLeaderEpoch": "OffsetForLeaderEpoch"}


def kafka_request_name(api_key: int, *, from_follower: bool = False) -> str:
    """Kafka's request name for RequestMetrics: Fetch splits into FetchConsumer and
    FetchFollower, as Kafka's ``request`` tag does."""
    if api_key == 1:
        return "FetchFollower" if from_follower else "FetchConsumer"
    return _KAFKA_API_NAMES.get(api_key, f"ApiKey{api_key}")


# --- requests ---------------------------------------------------------------------------------


class RequestMetrics:
    """Kafka's RequestMetrics per request name: RequestsPerSec and TotalTimeMs.

    ``observe(name, started)`` with ``started`` from ``time.perf_counter()`` when the request
    was read; ``records_sent(path, size)`` counts a Kafka Fetch answer's file records by how they
    left (minikafka's own counter: which answers went zero-copy). Thread-safe (prometheus-client's
    own locks). Without a registry it does nothing.
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.enabled = registry is not None
        self._children: dict[str, tuple[Any, Any]] = {}
        if registry is None:
            return
        self._requests = Counter(
            "kafka_network_requestmetrics_requests",
            "Requests answered, per Kafka request name (Kafka's RequestsPerSec).",
            ["request"],
            registry=registry,
        )
        self._total_time = Histogram(
            "kafka_network_requestmetrics_totaltimems",
            "Milliseconds from reading a request to answering it (Kafka's TotalTimeMs).",
            ["request"],
            buckets=_LATENCY_BUCKETS_MS,
            registry=registry,
        )
        records = Counter(
            "minikafka_kafka_fetch_records_bytes",
            "Record bytes of Kafka-door Fetch answers left in the segment files, by how they "
            "reached the socket: sendfile, or read (a small answer's, or through TLS). "
            "Not a Kafka MBean.",
            ["path"],
            registry=registry,
        )
        self._records_sent = {path: records.labels(path) for path in ("sendfile", "read")}

    def observe(self, request: str, started: float) -> None:
        if not self.enabled:
            return
        children = self._children.get(request)
        if children is None:
            children = self._children[request] = (
                self._requests.labels(request),
                self._total_time.labels(request),
            )
        children[0].inc()
        children[1].observe((time.perf_counter() - started) * 1000)

    def records_sent(self, path: str, size: int) -> None:
        """``size`` bytes of a Fetch answer's file records went out by ``path``: "sendfile"
        (page cache to socket) or "read" (into the broker's memory first)."""
        if self.enabled and size:
            self._records_sent[path].inc(size)


_Handler: TypeAlias = "grpc.RpcMethodHandler[Any, Any]"


class RequestMetricsInterceptor(grpc.aio.ServerInterceptor):
    """Times every unary gRPC call into RequestMetrics under its Kafka name.

    The Produce and Fetch streams are timed per message by DataService itself: wrapping a
    stream's handler here put two more async generators between gRPC and the servicer, and
    that cost 20-30% of the produce throughput (docs/benchmarks.md, issue 19).
    """

    def __init__(self, metrics: RequestMetrics) -> None:
        self._metrics = metrics
        self._handlers: dict[str, _Handler] = {}

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[_Handler | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> _Handler | None:
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler
        path: str = handler_call_details.method
        wrapped = self._handlers.get(path)
        if wrapped is None:
            wrapped = self._handlers[path] = self._wrap(path.rsplit("/", 1)[-1], handler)
        return wrapped

    def _wrap(self, method: str, handler: _Handler) -> _Handler:
        metrics = self._metrics
        is_fetch = method == "Fetch"
        fixed_name = _GRPC_NAMES.get(method, method)

        def name_of(request: Any) -> str:
            if is_fetch:
                return "FetchFollower" if request.replica_id >= 0 else "FetchConsumer"
            return fixed_name

        if not handler.request_streaming and not handler.response_streaming:
            unary = handler.unary_unary
            if unary is None or not inspect.iscoroutinefunction(unary):
                return handler

            async def timed_unary(request: Any, context: Any) -> Any:
                started = time.perf_counter()
                try:
                    return await unary(request, context)
                finally:
                    metrics.observe(name_of(request), started)

            return grpc.unary_unary_rpc_method_handler(
                timed_unary,
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        return handler


# --- ZooKeeper --------------------------------------------------------------------------------


class ZooKeeperSessionMetrics:
    """Kafka's SessionExpireListener meters: expirations and disconnects, counted by a kazoo
    connection listener (kazoo's thread; prometheus-client counters are thread-safe)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.expires = Counter(
            "kafka_server_sessionexpirelistener_zookeeperexpires",
            "ZooKeeper sessions of this broker that expired (Kafka's ZooKeeperExpiresPerSec).",
            registry=registry,
        )
        self.disconnects = Counter(
            "kafka_server_sessionexpirelistener_zookeeperdisconnects",
            "Connections to ZooKeeper lost (Kafka's ZooKeeperDisconnectsPerSec).",
            registry=registry,
        )

    def on_state(self, state: str) -> None:
        if state == KazooState.LOST:
            self.expires.inc()
        elif state == KazooState.SUSPENDED:
            self.disconnects.inc()


# --- the scrape-time collector ----------------------------------------------------------------


@dataclass
class MetricSources:
    """What the collector reads. ``loop`` owns the replica manager, the coordinator and the
    metadata cache; the controller and the kazoo client are safe to read from any thread."""

    loop: asyncio.AbstractEventLoop
    replica_manager: ReplicaManager
    controller: KafkaController
    zk_client: KazooClient
    metadata_cache: MetadataCache
    group_coordinator: GroupCoordinator | None = None
    inter_broker_listener: str = "PLAINTEXT"
    max_message_bytes: int = 100 * 1024 * 1024
    credentials: grpc.ChannelCredentials | None = None  # TLS, on an SSL listener
    # The broker's own login, on a SASL_* listener (a call without one is refused there).
    sasl: SaslCredentials | None = None
    quotas: ClientQuotaManager | None = None


@dataclass(frozen=True)
class _PartitionSnapshot:
    topic: str
    partition: int
    is_leader: bool
    replicas: int
    isr: int
    min_isr: int
    size: int
    log_start_offset: int
    log_end_offset: int
    high_watermark: int


@dataclass
class _Snapshot:
    partitions: list[_PartitionSnapshot] = field(default_factory=list)
    isr_shrinks: int = 0
    isr_expands: int = 0
    delayed_produce: int = 0
    delayed_fetch: int = 0
    max_lag: int = 0
    topic_stats: dict[str, TopicStats] = field(default_factory=dict)
    all_topics: TopicStats = field(default_factory=TopicStats)
    committed: dict[str, dict[tuple[str, int], int]] = field(default_factory=dict)
    end_offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    fetch_sessions: FetchSessionStats = field(default_factory=FetchSessionStats)
    quota_rates: dict[tuple[QuotaType, QuotaKey], float] = field(default_factory=dict)
    quota_throttle_ms: dict[tuple[QuotaType, QuotaKey], int] = field(default_factory=dict)


def _copy(stats: TopicStats) -> TopicStats:
    return TopicStats(**vars(stats))


class BrokerCollector:
    """Reads the broker's live state at scrape time (module docstring)."""

    def __init__(self, sources: MetricSources) -> None:
        self._sources = sources

    def describe(self) -> Iterable[Metric]:
        return []  # nothing to check at registration; collect() is called per scrape only

    def collect(self) -> Iterator[Metric]:
        yield from self._controller_families()
        yield self._session_state()
        try:
            future = asyncio.run_coroutine_threadsafe(self._snapshot(), self._sources.loop)
            snapshot = future.result(_SNAPSHOT_TIMEOUT_S)
        except Exception as exc:  # the loop is busy or gone (stopping): the rest of the scrape
            _log.warning("metrics_snapshot_failed", error=str(exc) or type(exc).__name__)
            return
        yield from self._replica_families(snapshot)
        yield from self._topic_families(snapshot)
        yield from self._log_families(snapshot)
        yield from self._group_families(snapshot)
        yield from self._quota_families(snapshot)

    # --- on the loop ---------------------------------------------------------------------------

    async def _snapshot(self) -> _Snapshot:
        # Everything up to the first await happens at one moment of the loop.
        rm = self._sources.replica_manager
        snap = _Snapshot(
            isr_shrinks=rm.stats.isr_shrinks,
            isr_expands=rm.stats.isr_expands,
            delayed_produce=rm.stats.delayed_produce,
            delayed_fetch=rm.stats.delayed_fetch,
            topic_stats={t: _copy(s) for t, s in rm.topic_stats.topics.items()},
            all_topics=_copy(rm.topic_stats.all),
            fetch_sessions=FetchSessionStats(**vars(rm.fetch_sessions.stats)),
        )
        quotas = self._sources.quotas
        if quotas is not None:
            snap.quota_rates = quotas.rates()
            snap.quota_throttle_ms = dict(quotas.throttle_time_ms)
        for tp, partition in rm.partitions.items():
            state = partition.state
            if state is None:
                continue
            log = partition.log
            snap.partitions.append(
                _PartitionSnapshot(
                    tp.topic,
                    tp.partition,
                    partition.is_leader,
                    len(state.replicas),
                    len(state.isr),
                    partition.min_insync_replicas,
                    log.size,
                    log.log_start_offset,
                    log.log_end_offset,
                    partition.high_watermark,
                )
            )
            if partition.is_leader:
                snap.end_offsets[(tp.topic, tp.partition)] = partition.high_watermark
        snap.max_lag = max(
            (lag for fetcher in rm.fetchers.all_fetchers for lag in fetcher.lags.values()),
            default=0,
        )
        coordinator = self._sources.group_coordinator
        if coordinator is not None:
            snap.committed = coordinator.committed_offsets()
            wanted = {tp for offsets in snap.committed.values() for tp in offsets}
            await self._remote_end_offsets(wanted - set(snap.end_offsets), snap.end_offsets)
        return snap

    async def _remote_end_offsets(
        self, wanted: set[tuple[str, int]], into: dict[tuple[str, int], int]
    ) -> None:
        """The consumers' end offsets (the leader's high watermark, as kafka-lag-exporter reads
        with ListOffsets latest) of partitions led by other brokers; missing ones are left out."""
        if not wanted:
            return
        cache = self._sources.metadata_cache
        by_leader: dict[int, list[tuple[str, int]]] = {}
        for topic, index in sorted(wanted):
            info = cache.get_partition(topic, index)
            if info is not None and info.leader >= 0:
                by_leader.setdefault(info.leader, []).append((topic, index))

        async def ask(leader: int, partitions: list[tuple[str, int]]) -> None:
            endpoint = cache.get_alive_broker_endpoint(leader, self._sources.inter_broker_listener)
            if endpoint is None:
                return
            topics: dict[str, list[int]] = {}
            for topic, index in partitions:
                topics.setdefault(topic, []).append(index)
            request = pb.ListOffsetsRequest(
                replica_id=-1,
                topics=[
                    pb.ListOffsetsRequest.ListOffsetsTopic(
                        name=topic,
                        partitions=[
                            pb.ListOffsetsRequest.ListOffsetsPartition(
                                partition_index=i, current_leader_epoch=-1, timestamp=-1
                            )
                            for i in indexes
                        ],
                    )
                    for topic, indexes in topics.items()
                ],
            )
            address = f"{endpoint[0]}:{endpoint[1]}"
            sources = self._sources
            async with (
                transport.aio_channel(
                    address, sources.max_message_bytes, credentials=sources.credentials
                )
                if sources.sasl is None
                else aio_sasl_channel(
                    address, sources.max_message_bytes, sources.sasl, (), sources.credentials
                )
            ) as ch:
                response = await pb_grpc.DataStub(ch).ListOffsets(
                    request, timeout=_END_OFFSETS_TIMEOUT_S
                )
            for topic_answer in response.topics:
                for answer in topic_answer.partitions:
                    if answer.error_code == 0 and answer.offset >= 0:
                        into[(topic_answer.name, answer.partition_index)] = answer.offset

        await asyncio.gather(
            *(ask(leader, parts) for leader, parts in by_leader.items()), return_exceptions=True
        )

    # --- families ------------------------------------------------------------------------------

    def _controller_families(self) -> Iterator[Metric]:
        controller = self._sources.controller
        values = controller.metrics
        for name, doc, value in (
            (
                "activecontrollercount",
                "1 on the broker that is the controller, 0 elsewhere.",
                1 if controller.is_active else 0,
            ),
            (
                "offlinepartitionscount",
                "Partitions without a live leader (controller only).",
                values.offline_partitions_count,
            ),
            (
                "globalpartitioncount",
                "Partitions in the cluster (controller only).",
                values.global_partition_count,
            ),
            (
                "globaltopiccount",
                "Topics in the cluster (controller only).",
                values.global_topic_count,
            ),
            (
                "preferredreplicaimbalancecount",
                "Partitions not led by their preferred replica (controller only).",
                values.preferred_replica_imbalance_count,
            ),
        ):
            yield GaugeMetricFamily(f"kafka_controller_kafkacontroller_{name}", doc, value=value)

    def _session_state(self) -> Metric:
        family = GaugeMetricFamily(
            "kafka_server_sessionexpirelistener_sessionstate",
            "The ZooKeeper session's state: 1 for the current one (Kafka's SessionState).",
            labels=["state"],
        )
        current = str(self._sources.zk_client.state)
        for state in (KazooState.CONNECTED, KazooState.SUSPENDED, KazooState.LOST):
            family.add_metric([str(state)], 1 if current == state else 0)
        return family

    def _replica_families(self, snap: _Snapshot) -> Iterator[Metric]:
        leaders = [p for p in snap.partitions if p.is_leader]
        prefix = "kafka_server_replicamanager_"
        for name, doc, value in (
            ("partitioncount", "Partitions hosted by this broker.", len(snap.partitions)),
            ("leadercount", "Partitions this broker leads.", len(leaders)),
            (
                "underreplicatedpartitions",
                "Partitions led here whose ISR is smaller than their replicas.",
                sum(1 for p in leaders if p.isr < p.replicas),
            ),
            (
                "underminisrpartitioncount",
                "Partitions led here whose ISR is below min.insync.replicas.",
                sum(1 for p in leaders if p.isr < p.min_isr),
            ),
            (
                "atminisrpartitioncount",
                "Partitions led here whose ISR is exactly min.insync.replicas.",
                sum(1 for p in leaders if p.isr == p.min_isr),
            ),
        ):
            yield GaugeMetricFamily(prefix + name, doc, value=value)
        yield CounterMetricFamily(
            prefix + "isrshrinks", "ISR shrinks written by this leader.", value=snap.isr_shrinks
        )
        yield CounterMetricFamily(
            prefix + "isrexpands", "ISR expansions written by this leader.", value=snap.isr_expands
        )
        purgatory = GaugeMetricFamily(
            "kafka_server_delayedoperationpurgatory_purgatorysize",
            "Requests waiting in the purgatory: acks=all produces, long-poll fetches.",
            labels=["delayedOperation"],
        )
        purgatory.add_metric(["Produce"], snap.delayed_produce)
        purgatory.add_metric(["Fetch"], snap.delayed_fetch)
        yield purgatory
        lag = GaugeMetricFamily(
            "kafka_server_replicafetchermanager_maxlag",
            "The largest lag, in messages, of a partition this broker follows.",
            labels=["clientId"],
        )
        lag.add_metric(["Replica"], snap.max_lag)
        yield lag
        yield from self._fetch_session_families(snap.fetch_sessions)

    @staticmethod
    def _fetch_session_families(stats: FetchSessionStats) -> Iterator[Metric]:
        """Kafka's FetchSessionCache metrics, and what the sessions save (fetch_session.py)."""
        prefix = "kafka_server_fetchsessioncache_"
        yield GaugeMetricFamily(
            prefix + "numincrementalfetchsessions",
            "Incremental fetch sessions (KIP-227) the cache holds.",
            value=stats.sessions,
        )
        yield GaugeMetricFamily(
            prefix + "numincrementalfetchpartitionscached",
            "Partitions held by the incremental fetch sessions.",
            value=stats.partitions_cached,
        )
        yield CounterMetricFamily(
            prefix + "incrementalfetchsessionevictions",
            "Fetch sessions evicted to make room for new ones.",
            value=stats.evictions,
        )
        requests = CounterMetricFamily(
            "minikafka_fetch_session_requests",
            "Fetches served, by session kind: full (opening a session), incremental, "
            "sessionless, or refused with a session error.",
            labels=["kind"],
        )
        for kind, value in (
            ("full", stats.full_fetches),
            ("incremental", stats.incremental_fetches),
            ("sessionless", stats.sessionless_fetches),
            ("error", stats.session_errors),
        ):
            requests.add_metric([kind], value)
        yield requests
        partitions = CounterMetricFamily(
            "minikafka_fetch_session_partitions",
            "Partitions over all fetches: listed in the requests (forgotten ones included), "
            "read for them, and carried in the answers.",
            labels=["stage"],
        )
        for stage, value in (
            ("requested", stats.partitions_requested),
            ("read", stats.partitions_read),
            ("answered", stats.partitions_answered),
        ):
            partitions.add_metric([stage], value)
        yield partitions

    def _topic_families(self, snap: _Snapshot) -> Iterator[Metric]:
        for attribute, name, doc in (
            ("messages_in", "messagesin", "Records appended to leaders here"),
            ("bytes_in", "bytesin", "Bytes appended to leaders here by producers"),
            ("bytes_out", "bytesout", "Bytes of records sent to consumers"),
            (
                "replication_bytes_out",
                "replicationbytesout",
                "Bytes of records sent to followers",
            ),
            ("produce_requests", "totalproducerequests", "Partition appends asked of leaders"),
            (
                "failed_produce_requests",
                "failedproducerequests",
                "Partition appends refused or failed",
            ),
            ("fetch_requests", "totalfetchrequests", "Partition reads answered"),
        ):
            family = CounterMetricFamily(
                f"kafka_server_brokertopicmetrics_{name}",
                f"{doc}; per topic, and without the topic label for all topics.",
            )
            # As the JMX exporter shows Kafka's meters: the all-topics one without a label.
            family.samples.append(
                Sample(family.name + "_total", {}, getattr(snap.all_topics, attribute))
            )
            for topic, stats in sorted(snap.topic_stats.items()):
                family.samples.append(
                    Sample(family.name + "_total", {"topic": topic}, getattr(stats, attribute))
                )
            yield family

    @staticmethod
    def _quota_families(snap: _Snapshot) -> Iterator[Metric]:
        """Kafka's client quota sensors, per user and client-id (the entity the usage is
        counted for): Produce/Fetch ``byte-rate``, Request ``request-time`` (percent of a
        handler), and the throttle time given (here a counter of milliseconds)."""
        for quota_type, group, rate_name, unit in (
            (QuotaType.PRODUCE, "produce", "byte_rate", "bytes per second"),
            (QuotaType.FETCH, "fetch", "byte_rate", "bytes per second"),
            (QuotaType.REQUEST, "request", "request_time", "percent of a request handler"),
        ):
            rate = GaugeMetricFamily(
                f"kafka_server_{group}_{rate_name}",
                f"Client quota usage, {unit}, over quota.window.num windows.",
                labels=["user", "client_id"],
            )
            throttle = CounterMetricFamily(
                f"kafka_server_{group}_throttle_time",
                "Milliseconds of throttle given to clients by their quota.",
                labels=["user", "client_id"],
            )
            for (kind, key), value in sorted(snap.quota_rates.items(), key=_quota_order):
                if kind is quota_type:
                    rate.add_metric([key.user, key.client_id], value)
            for (kind, key), ms in sorted(snap.quota_throttle_ms.items(), key=_quota_order):
                if kind is quota_type:
                    throttle.add_metric([key.user, key.client_id], ms)
            yield rate
            yield throttle

    def _log_families(self, snap: _Snapshot) -> Iterator[Metric]:
        labels = ["topic", "partition"]
        size = GaugeMetricFamily(
            "kafka_log_log_size", "Bytes of the partition's log.", labels=labels
        )
        leo = GaugeMetricFamily(
            "kafka_log_log_logendoffset", "The replica's log end offset.", labels=labels
        )
        start = GaugeMetricFamily(
            "kafka_log_log_logstartoffset", "The replica's log start offset.", labels=labels
        )
        hw = GaugeMetricFamily(
            "kafka_cluster_partition_highwatermark", "The replica's high watermark.", labels=labels
        )
        under = GaugeMetricFamily(
            "kafka_cluster_partition_underreplicated",
            "1 when this leader's ISR is smaller than the replicas.",
            labels=labels,
        )
        isr = GaugeMetricFamily(
            "kafka_cluster_partition_insyncreplicascount",
            "The ISR's size, on the leader.",
            labels=labels,
        )
        for p in sorted(snap.partitions, key=lambda p: (p.topic, p.partition)):
            key = [p.topic, str(p.partition)]
            size.add_metric(key, p.size)
            leo.add_metric(key, p.log_end_offset)
            start.add_metric(key, p.log_start_offset)
            hw.add_metric(key, p.high_watermark)
            if p.is_leader:
                under.add_metric(key, 1 if p.isr < p.replicas else 0)
                isr.add_metric(key, p.isr)
        yield from (size, leo, start, hw, under, isr)

    def _group_families(self, snap: _Snapshot) -> Iterator[Metric]:
        labels = ["group", "topic", "partition"]
        offset = GaugeMetricFamily(
            "kafka_consumergroup_group_offset",
            "The group's committed offset (groups this broker coordinates).",
            labels=labels,
        )
        lag = GaugeMetricFamily(
            "kafka_consumergroup_group_lag",
            "The partition's high watermark minus the group's committed offset.",
            labels=labels,
        )
        max_lag = GaugeMetricFamily(
            "kafka_consumergroup_group_max_lag",
            "The group's largest partition lag.",
            labels=["group"],
        )
        for group, offsets in sorted(snap.committed.items()):
            worst: int | None = None
            for (topic, index), committed in sorted(offsets.items()):
                key = [group, topic, str(index)]
                offset.add_metric(key, committed)
                end = snap.end_offsets.get((topic, index))
                if end is not None:
                    value = max(0, end - committed)
                    lag.add_metric(key, value)
                    worst = value if worst is None else max(worst, value)
            if worst is not None:
                max_lag.add_metric([group], worst)
        yield from (offset, lag, max_lag)


# --- the whole ------------------------------------------------------------------------------


class BrokerMetrics:
    """One broker's registry, its request metrics and the HTTP server that serves them.

    ``create`` builds it before the broker's parts exist (the front doors need ``requests``
    when they are built); ``bind`` adds the scrape-time collector once they do; ``start``
    serves ``/metrics`` on a daemon thread; ``stop`` closes the socket.
    """

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self.registry = CollectorRegistry(auto_describe=False)
        self.requests = RequestMetrics(self.registry)
        self.zookeeper = ZooKeeperSessionMetrics(self.registry)
        ProcessCollector(registry=self.registry)
        self._server: WSGIServer | None = None
        self._zk_client: KazooClient | None = None

    @classmethod
    def create(cls, listener: str) -> BrokerMetrics | None:
        address = parse_metrics_listener(listener)
        return None if address is None else cls(*address)

    def bind(self, sources: MetricSources) -> None:
        self.registry.register(BrokerCollector(sources))
        self._zk_client = sources.zk_client
        self._zk_client.add_listener(self.zookeeper.on_state)

    def start(self) -> int:
        """Serve; the port actually bound (``metrics.listener`` may say port 0)."""
        self._server, _ = _start_http_server(self.port, self.host or "0.0.0.0", self.registry)
        return int(self._server.server_port)

    def stop(self) -> None:
        if self._zk_client is not None:
            self._zk_client.remove_listener(self.zookeeper.on_state)
            self._zk_client = None
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


def _quota_order(item: tuple[tuple[QuotaType, QuotaKey], object]) -> tuple[str, str, str]:
    (kind, key), _ = item
    return kind.value, key.user, key.client_id
