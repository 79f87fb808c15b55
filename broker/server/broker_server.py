"""One broker process: storage, ZooKeeper, replication, the gRPC services and the controller.

Startup, in Kafka's order (KafkaServer.startup in ZooKeeper mode)::

    1. ZooKeeper: connect (zookeeper.connect with its chroot; the SASL login of the JAAS
       Client section named in KAFKA_OPTS, zk/zk_auth.py), create the persistent paths (with
       Kafka's ACLs when zookeeper.set.acl is true), read or create /cluster/id
    2. the authorizer (authorizer.class.name): every ACL loaded and the ACL change paths
       watched (acl_manager.py), before anything that asks it is built
    3. LogManager over log.dirs: lock the dirs, check meta.properties (broker.id, cluster.id),
       load and recover every partition log
    4. MetadataCache, ReplicaManager, ProducerIdManager, GroupCoordinator (told of
       __consumer_offsets leadership by the ReplicaManager), and the servicers Data (with its
       RawData framing), Metadata, Admin, Control, Group on one grpc.aio server per listener
       of ``listeners`` (Control on the inter-broker one only)
    5. register /brokers/ids/<id> (Kafka's v5 JSON with advertised.listeners); its czxid is
       the broker epoch. A registration of the same id held by another session is waited for
       (the session of this broker's previous, crashed process expires); one still there
       after the session timeout fails the startup with "broker.id N is already registered
       in ZooKeeper", naming the live broker that holds it
    6. start the KafkaController (it joins the /controller election)
    7. serve GET /metrics on metrics.listener when it is set (broker/server/metrics.py)
    8. log ``broker_started`` with the listeners actually served

Shutdown (SIGTERM or SIGINT, see ``run_broker``)::

    1. controlled shutdown (controlled.shutdown.enable): ControlledShutdown(broker_id,
       broker_epoch) to the controller (a local call when it is this broker), retried
       controlled.shutdown.max.retries times, controlled.shutdown.retry.backoff.ms apart,
       until no partition is left that this broker leads and another could. Skipped when no
       other broker is registered, or when ZooKeeper is unreachable (the ZooKeeper session is
       then closed first, so that no later step waits for it)
    2. stop serving gRPC, stop the ReplicaManager (fetchers; high watermark checkpoint)
    3. stop the controller, close the logs (checkpoints, clean-shutdown marker)
    4. close the ZooKeeper session (its ephemeral znodes go with it)

Log dir failure (KIP-112): an I/O error on a log dir (LogDirFailureChannel) takes its replicas
offline on the loop, writes /log_dir_event_notification/log_dir_event_<seq> for the
controller and, with no log dir left, halts: an uncontrolled shutdown, exit status 1.

ZooKeeper session loss: when kazoo reconnects under a new session (the old one expired),
/brokers/ids/<id> is registered again and the broker epoch becomes the new znode's czxid. The
controller watches its own session and resigns or re-elects by itself.

Threading: everything here runs on the broker's event loop. ZooKeeper calls and the log
manager's startup and close (blocking I/O) go through ``asyncio.to_thread``; kazoo's session
listener runs on kazoo's thread and only hops onto the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

import grpc
import structlog
from kazoo.protocol.states import KazooState

from minikafka.broker.config import BrokerConfig
from minikafka.broker.group.coordinator import GroupConfig, GroupCoordinator
from minikafka.broker.group.offsets_log import ReplicaManagerOffsetsLog
from minikafka.broker.replication.leader_endpoint import LeaderEndpointFactory
from minikafka.broker.replication.producer_id_manager import ProducerIdManager
from minikafka.broker.replication.replica_manager import ReplicaManager
from minikafka.broker.replication.scheduler import Scheduler
from minikafka.broker.replication.topic_log import ReplicaManagerTopicLog
from minikafka.broker.security.authorizer import AclAuthorizer, authorizer_from_config
from minikafka.broker.security.sasl.credential_cache import CredentialCache
from minikafka.broker.security.session_tokens import SessionTokens
from minikafka.broker.security.tls import ListenerTls
from minikafka.broker.server import grpc_leader_endpoint, grpc_tls
from minikafka.broker.server.acl_manager import AclManager
from minikafka.broker.server.admin_service import AdminService
from minikafka.broker.server.cleaner_threads import CleanerThreads
from minikafka.broker.server.config_handler import ConfigHandler, ConfigTargets
from minikafka.broker.server.control_service import ControlService
from minikafka.broker.server.core.acls import AclApi
from minikafka.broker.server.core.admin import TopicAdmin
from minikafka.broker.server.core.authorization import AuthHelper
from minikafka.broker.server.core.client_quotas import ClientQuotaAdmin
from minikafka.broker.server.core.controller_fence import ControllerFence
from minikafka.broker.server.core.data import DataApi
from minikafka.broker.server.core.fetch import FetchApi
from minikafka.broker.server.core.groups import GroupApi, offsets_partition_count
from minikafka.broker.server.core.log_dirs import LogDirApi
from minikafka.broker.server.core.metadata import MetadataApi
from minikafka.broker.server.core.replicas import ReplicaApi
from minikafka.broker.server.core.topic_creation import TopicCreator
from minikafka.broker.server.core.transactions import TransactionApi
from minikafka.broker.server.core.users import UserScramAdmin
from minikafka.broker.server.data_service import DataService, raw_data_handler
from minikafka.broker.server.dynamic_config import DynamicConfigManager
from minikafka.broker.server.group_service import GroupService
from minikafka.broker.server.grpc_session import SaslServerInterceptor, configure_listener
from minikafka.broker.server.kafka import leader_endpoint as kafka_leader_endpoint
from minikafka.broker.server.kafka.broker import KafkaBroker
from minikafka.broker.server.kafka.listener import KafkaListeners
from minikafka.broker.server.metadata_cache import MetadataCache
from minikafka.broker.server.metadata_service import MetadataService
from minikafka.broker.server.metrics import (
    BrokerMetrics,
    MetricSources,
    RequestMetrics,
    RequestMetricsInterceptor,
)
from minikafka.broker.server.quotas import ClientQuotaManager
from minikafka.broker.server.replication_quotas import ReplicationQuotas
from minikafka.broker.server.sasl_setup import (
    grpc_broker_login,
    inter_broker_login,
    listener_sasl,
)
from minikafka.broker.server.security_service import SaslLogin, SecurityService
from minikafka.broker.server.transaction_service import TransactionService
from minikafka.broker.server.txn_markers import TxnMarkerChannel
from minikafka.broker.storage.log import PendingFlush
from minikafka.broker.storage.log_dir_failure import LogDirFailureChannel
from minikafka.broker.storage.log_manager import LogManager
from minikafka.broker.transaction.coordinator import TransactionCoordinator
from minikafka.broker.transaction.state_manager import TransactionConfig
from minikafka.controller.channels import inter_broker_endpoint
from minikafka.controller.config import ControllerConfig
from minikafka.controller.controller import KafkaController
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto import transport
from minikafka.proto.common import TRANSACTION_STATE_TOPIC, TopicPartition
from minikafka.proto.errors import ErrorCode, InvalidConfigError, error_for_code
from minikafka.proto.sasl_channel import aio_sasl_channel
from minikafka.zk.acl_store import AclZkStore
from minikafka.zk.errors import (
    BrokerIdAlreadyRegisteredError,
    ZkAuthenticationError,
    ZkDataError,
    ZkSecurityConfigError,
)
from minikafka.zk.zk_auth import zk_client_security_from_environ
from minikafka.zk.zk_data import (
    CONTROLLER_EPOCH_PATH,
    BrokerRegistration,
    ControllerRegistration,
    QuotaEntity,
)
from minikafka.zk.zk_store import ZkStore

__all__ = ["BrokerServer", "BrokerStartupError", "run_broker"]

_log = structlog.get_logger("broker.server")

_SERVER_OPTIONS = (
    ("grpc.so_reuseport", 0),  # a second broker on the same port must fail, not share it
)
_STOP_GRACE_S = 1.0
_REREGISTER_BACKOFF_S = 0.5
# ZooKeeper expires sessions once per tick (tickTime: 2 s by default), so a dead session's
# ephemeral znodes may outlive its timeout by up to that much.
_SESSION_EXPIRY_SLACK_MS = 2000
# How soon a rolled segment is flushed and the recovery point moved past it (Kafka schedules
# that flush at the roll); also how often flush.ms is checked.
_LOG_FLUSH_CHECK_MS = 1000


def _sync_flushes(flushes: list[PendingFlush]) -> None:
    """In the executor: fsync each flush's files (each closes its own, synced or not)."""
    for flush in flushes:
        flush.sync()


class BrokerStartupError(Exception):
    """The broker cannot start; the message is one line for the operator."""


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _session_hex(session_id: int | None) -> str:
    return "unknown" if session_id is None else f"0x{session_id:x}"


class BrokerServer:
    """See the module docstring. Build, ``await startup()``, later ``await shutdown()``."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.broker_id = config.broker_id
        self.cluster_id: str | None = None
        self._zk: ZkStore | None = None
        self._log_manager: LogManager | None = None
        self._metadata_cache: MetadataCache | None = None
        self._replica_manager: ReplicaManager | None = None
        self._producer_ids: ProducerIdManager | None = None
        self._controller: KafkaController | None = None
        self._group_coordinator: GroupCoordinator | None = None
        self._transaction_coordinator: TransactionCoordinator | None = None
        self._transaction_api: TransactionApi | None = None
        self._txn_marker_channel: TxnMarkerChannel | None = None
        self._topic_admin: TopicAdmin | None = None
        self._metadata_api: MetadataApi | None = None
        self._fetch_api: FetchApi | None = None
        self._data_api: DataApi | None = None
        self._auth = AuthHelper()
        self._group_api: GroupApi | None = None
        self._controller_fence: ControllerFence | None = None
        self._servers: list[grpc.aio.Server] = []
        self._kafka_listeners: KafkaListeners | None = None
        # Each SSL/SASL_SSL listener's key store, trust store and mapping rules, read at startup.
        self._tls: dict[str, ListenerTls] = {}
        self._metrics = BrokerMetrics.create(config.metrics_listener)  # None: metrics.listener=
        self._loop: asyncio.AbstractEventLoop | None = None
        # KIP-112: I/O errors on log dirs; with none left online the broker halts (exit 1).
        self._log_dir_failures = LogDirFailureChannel()
        self._log_dir_failure_tasks: set[asyncio.Task[None]] = set()
        self.halted = False
        self._broker_epoch = -1
        self._registered_session: int | None = None
        self._reregistering = False
        self._tasks: list[asyncio.Task[None]] = []
        self._scheduler = Scheduler()  # the periodic log work below
        self._dynamic_config: DynamicConfigManager | None = None
        self._config_handler: ConfigHandler | None = None
        self._replication_quotas: ReplicationQuotas | None = None
        self._cleaner: CleanerThreads | None = None
        self._shutdown_requested: asyncio.Event | None = None
        self._signals = 0
        self._controller_asked: int | None = None  # by the last controlled shutdown attempt
        self._stopped = False
        # SCRAM credentials of every user, and each SASL Kafka listener's mechanisms (the JAAS
        # configs are parsed now: a bad one fails the start before anything else).
        self._credentials = CredentialCache()
        self._client_quotas = ClientQuotaManager()  # remade with the config's windows at start
        try:
            self._sasl = listener_sasl(config, self._credentials.get)
            inter_broker_login(config)
            # This broker's own logins to other brokers' SASL_* gRPC listeners: the control
            # plane one (the controller's requests, controlled shutdown) and, when followers
            # fetch over gRPC, the inter-broker one.
            self._control_login = grpc_broker_login(config, config.control_plane_listener)
            self._fetch_login = grpc_broker_login(config, config.inter_broker_listener_name)
        except InvalidConfigError as exc:
            raise BrokerStartupError(exc.message) from None
        # authorizer.class.name's authorizer (None: every request allowed), the ZooKeeper
        # half that keeps its ACLs (acl_manager.py) and the ACL APIs of both doors.
        self.authorizer: AclAuthorizer | None = None
        self._acl_manager: AclManager | None = None
        self._acl_api = AclApi(None, None)

    @property
    def broker_epoch(self) -> int:
        """The czxid of this broker's current /brokers/ids registration; -1 before it."""
        return self._broker_epoch

    @property
    def zk(self) -> ZkStore:
        assert self._zk is not None, "startup() has not connected ZooKeeper yet"
        return self._zk

    # --- startup ----------------------------------------------------------------------------

    async def _start_authorizer(self, config: BrokerConfig) -> None:
        """Kafka builds its authorizer before it serves: every ACL is loaded (and the change
        paths watched) before the first request is read."""
        self.authorizer = authorizer_from_config(config)
        if self.authorizer is None:
            return
        self._acl_manager = AclManager(AclZkStore(self.zk), self.authorizer)
        await self._acl_manager.startup()
        self._acl_api = AclApi(self.authorizer, self._acl_manager)

    async def startup(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._shutdown_event()
        config = self.config
        _log.info("broker_starting", listeners=[e.connection_string for e in config.listeners])
        self._tls = _load_tls(config)  # a bad key store stops the start before ZooKeeper

        try:
            # The JAAS file named in KAFKA_OPTS, as Kafka's JVM finds it (zk/zk_auth.py).
            security = await asyncio.to_thread(
                zk_client_security_from_environ, os.environ, set_acl=config.zookeeper_set_acl
            )
            self._zk = await asyncio.to_thread(
                ZkStore.connect,
                config.zookeeper_connect,
                session_timeout_ms=config.zookeeper_session_timeout_ms,
                connection_timeout_ms=config.zookeeper_connection_timeout_ms,
                security=security,
            )
        except (ZkSecurityConfigError, ZkAuthenticationError) as exc:
            raise BrokerStartupError(str(exc)) from None
        await asyncio.to_thread(self._zk.ensure_paths)
        self.cluster_id = await asyncio.to_thread(self._zk.get_or_create_cluster_id)
        _log.info(
            "zookeeper_connected",
            zookeeper_connect=config.zookeeper_connect,
            session_id=hex(self._zk.session_id or 0),
            cluster_id=self.cluster_id,
            sasl_user=None if security.sasl is None else security.sasl.username,
            secure_acls=security.set_acl,
        )

        # Dynamic broker configs (/config/brokers) apply before the logs open, as in Kafka.
        quotas = self._replication_quotas = ReplicationQuotas(config)
        handler = self._config_handler = ConfigHandler(
            config, self._zk.get_topic_config, on_topic_overrides=quotas.update_topic
        )
        self._dynamic_config = DynamicConfigManager(
            self._zk,
            config,
            on_topic_config=handler.apply_topic_config,
            on_broker_config=handler.apply_broker_config,
            on_user_config=self._on_user_config,
            on_quota_config=self._on_quota_config,
        )
        config = self.config = await self._dynamic_config.load()
        await handler.apply_broker_config(config)  # nothing built yet: only its defaults
        quotas.reconfigure(config)
        # The authorizer exists, its ACLs loaded, before anything that may ask it is built.
        await self._start_authorizer(config)
        self._log_manager = await asyncio.to_thread(self._open_logs)
        self._metadata_cache = MetadataCache(self.broker_id, self.cluster_id)
        self._replica_manager = ReplicaManager(
            config,
            self._log_manager,
            self._zk,
            self._metadata_cache,
            broker_epoch=lambda: self._broker_epoch,
            leader_endpoint=self._leader_endpoint(self._metadata_cache),
            quotas=quotas.replica_quotas,
        )
        self._producer_ids = ProducerIdManager(self.broker_id, self._zk.allocate_producer_id_block)
        self._controller = KafkaController(
            self._zk,
            self.broker_id,
            ControllerConfig.from_attributes(config, control_plane_sasl=self._control_login),
            credentials=self._channel_credentials(config.control_plane_listener),
        )
        loop = self._loop
        self._group_coordinator = GroupCoordinator(
            self.broker_id,
            GroupConfig.from_broker_config(config),
            ReplicaManagerOffsetsLog(self._replica_manager),
            call_later=lambda delay, callback: loop.call_later(delay, callback),
            partition_count=offsets_partition_count(
                self._metadata_cache, config.offsets_topic_num_partitions
            ),
        )
        self._replica_manager.add_leadership_listener(self._group_coordinator.on_leadership_change)
        self._log_dir_failures.add_listener(self._on_log_dir_offline)
        topic_creator = TopicCreator(config, self._zk)
        await self._start_authorizer(config)
        # The one AuthHelper every core API of both doors asks (core/authorization.py).
        auth = self._auth = AuthHelper(self.authorizer)
        self._metadata_api = MetadataApi(
            config, self._metadata_cache, self._zk, topic_creator, auth
        )
        self._fetch_api = FetchApi(self._replica_manager, config.inter_broker_listener_name, auth)
        self._data_api = DataApi(self._replica_manager, self._producer_ids, auth)
        self._group_api = GroupApi(
            self._group_coordinator, self._metadata_cache, topic_creator, auth
        )
        self._start_transaction_coordinator(config, topic_creator, auth)
        self._topic_admin = TopicAdmin(
            config,
            self._controller,
            self._zk,
            self._replica_manager,
            metadata_cache=self._metadata_cache,
            auth=auth,
        )
        self._cleaner = CleanerThreads(
            self._log_manager, self._replica_manager, self._log_dir_failures
        )
        handler.attach(
            ConfigTargets(
                self._log_manager,
                self._replica_manager,
                self._controller,
                self._cleaner,
                reconfigured=(
                    self._reconfigured,
                    self._topic_admin.reconfigure,
                    quotas.reconfigure,
                ),
            )
        )
        zk_client = self._zk.client
        self._controller_fence = ControllerFence(
            self._zk,
            broker_id=self.broker_id,
            broker_epoch=lambda: self._broker_epoch,
            sync=lambda: zk_client.sync(CONTROLLER_EPOCH_PATH),
            auth=auth,
        )
        # Every user's SCRAM credentials before a SASL listener opens (those written before
        # the brokers started count); users/<user> notifications keep the cache current.
        await asyncio.to_thread(self._load_credentials)
        self._client_quotas = ClientQuotaManager(
            config.quota_window_num, config.quota_window_size_seconds
        )
        await asyncio.to_thread(self._load_quotas)
        self._servers = self._grpc_servers()
        for server in self._servers:
            await server.start()
        kafka_bound: list[str] = []
        if config.kafka_listeners:
            self._kafka_listeners = KafkaListeners(
                KafkaBroker(
                    config,
                    self._replica_manager,
                    self._metadata_cache,
                    self._metadata_api,
                    self._group_api,
                    self._topic_admin,
                    self._producer_ids,
                    self._fetch_api,
                    self._metrics.requests if self._metrics else RequestMetrics(),
                    users=UserScramAdmin(self._zk, self.authorizer),
                    sasl=self._sasl,
                    data_api=self._data_api,
                    authorizer=self.authorizer,
                    acls=self._acl_api,
                    client_quotas=ClientQuotaAdmin(self._zk, self.authorizer),
                    quotas=self._client_quotas,
                    transactions=self._transaction_api,
                ),
                self._tls,
            )
            try:
                kafka_bound = await self._kafka_listeners.start()
            except OSError as exc:
                raise BrokerStartupError(f"cannot listen on kafka.listeners: {exc}") from None
        await self._replica_manager.startup()

        self._zk.client.add_listener(self._on_zk_state)
        await self._register()
        await asyncio.to_thread(self._controller.startup)
        await self._dynamic_config.startup()
        metrics_bound = self._start_metrics()
        self._scheduler.schedule(
            "log_checkpoint",
            self._checkpoint_log_offsets,
            period_ms=config.log_flush_offset_checkpoint_interval_ms,
        )
        self._scheduler.schedule("log_flush", self._flush_logs, period_ms=_LOG_FLUSH_CHECK_MS)
        self._scheduler.schedule(
            "retention", self._log_retention, period_ms=config.log_retention_check_interval_ms
        )
        self._scheduler.schedule(
            "file_delete",
            lambda: self._log_manager.delete_due_files(_now_ms()) if self._log_manager else None,
            period_ms=_LOG_FLUSH_CHECK_MS,
        )
        self._cleaner.start(config)
        self._scheduler.schedule(
            "producer_id_expiration",
            self._expire_producer_ids,
            period_ms=config.producer_id_expiration_check_interval_ms,
        )
        _log.info(
            "broker_started",
            listeners=[e.connection_string for e in config.listeners],
            advertised_listeners=[e.connection_string for e in config.advertised_listeners],
            kafka_listeners=kafka_bound,
            kafka_advertised_listeners=[
                e.connection_string for e in config.kafka_advertised_listeners
            ],
            metrics_listener=metrics_bound,
            event_loop=type(asyncio.get_running_loop()).__module__.partition(".")[0],
            broker_epoch=self._broker_epoch,
            cluster_id=self.cluster_id,
        )

    def _load_credentials(self) -> None:
        users = self.zk.list_users()
        for user in users:
            try:
                self._credentials.update_user(user, self.zk.get_user_config(user))
            except ZkDataError:
                # The error would quote the znode, credentials included: the user only.
                _log.error("user_config_unreadable", user=user)
        _log.info("scram_credentials_loaded", users=len(users))

    def _load_quotas(self) -> None:
        """Every client quota in ZooKeeper; notifications keep them current."""
        for entity in self.zk.list_quota_entities():
            try:
                self._client_quotas.update(entity, self.zk.get_quota_config(entity))
            except ZkDataError:
                _log.error("quota_config_unreadable", entity=entity.entity_path)

    async def _on_quota_config(self, entity: QuotaEntity, config: Mapping[str, str]) -> None:
        self._client_quotas.update(entity, config)

    async def _on_user_config(self, user: str, config: Mapping[str, str]) -> None:
        self._credentials.update_user(user, config)
        _log.info(
            "user_credentials_updated",
            user=user,
            mechanisms=[m.mechanism_name for m, _ in self._credentials.mechanisms(user)],
        )

    def _start_transaction_coordinator(
        self, config: BrokerConfig, topic_creator: TopicCreator, auth: AuthHelper
    ) -> None:
        """The transaction coordinator (told of ``__transaction_state`` leadership by the
        ReplicaManager), the TransactionApi both doors call, and the channel its markers take
        to the partition leaders: the control plane listener, as the controller's requests."""
        assert self._replica_manager is not None and self._metadata_cache is not None
        assert self._producer_ids is not None and self._data_api is not None
        assert self._group_api is not None and self._loop is not None
        cache = self._metadata_cache
        loop = self._loop
        self._txn_marker_channel = channel = TxnMarkerChannel(
            self.broker_id,
            cache,
            lambda markers: self._transactions().write_markers_locally(markers),
            listener=config.control_plane_listener,
            max_message_bytes=config.grpc_max_message_bytes,
            timeout_s=config.request_timeout_ms / 1000,
            credentials=self._channel_credentials(config.control_plane_listener),
            sasl=self._control_login,
        )
        coordinator = self._transaction_coordinator = TransactionCoordinator(
            self.broker_id,
            TransactionConfig(
                transaction_state_log_num_partitions=config.transaction_state_log_num_partitions,
                transaction_max_timeout_ms=config.transaction_max_timeout_ms,
                transactional_id_expiration_ms=config.transactional_id_expiration_ms,
                transaction_abort_timed_out_transaction_cleanup_interval_ms=(
                    config.transaction_abort_timed_out_transaction_cleanup_interval_ms
                ),
                transaction_remove_expired_transaction_cleanup_interval_ms=(
                    config.transaction_remove_expired_transaction_cleanup_interval_ms
                ),
                offsets_topic_num_partitions=config.offsets_topic_num_partitions,
                request_timeout_ms=config.request_timeout_ms,
            ),
            ReplicaManagerTopicLog(self._replica_manager, TRANSACTION_STATE_TOPIC),
            self._producer_ids,
            channel,
            call_later=lambda delay, callback: loop.call_later(delay, callback),
            partition_count=lambda: (
                len(cache.partitions_of(TRANSACTION_STATE_TOPIC))
                or config.transaction_state_log_num_partitions
            ),
            partition_exists=lambda tp: cache.contains_partition(tp.topic, tp.partition),
        )
        self._replica_manager.add_leadership_listener(coordinator.on_leadership_change)
        self._transaction_api = TransactionApi(
            coordinator,
            self._replica_manager,
            self._group_coordinator,
            cache,
            topic_creator,
            auth,
            marker_timeout_ms=config.request_timeout_ms,
        )
        self._data_api.transactions = self._transaction_api
        self._group_api.transactions = self._transaction_api

    def _transactions(self) -> TransactionApi:
        assert self._transaction_api is not None
        return self._transaction_api

    def _leader_endpoint(self, metadata_cache: MetadataCache) -> LeaderEndpointFactory:
        """Followers fetch from leaders' inter-broker listener (KIP-291's split), through the
        door that listener is: Kafka's Fetch on a Kafka listener, else gRPC's FetchStream."""
        config = self.config
        timeout_s = config.replica_socket_timeout_ms / 1000
        # either way a fetch answer may exceed the fetch's limits by one batch
        if config.replicates_over_kafka:
            tls = self._tls.get(config.inter_broker_listener_name)
            return kafka_leader_endpoint.factory(
                timeout_s=timeout_s,
                max_response_bytes=config.grpc_max_message_bytes,
                client_id=f"broker-{config.broker_id}-fetcher",
                topic_ids=metadata_cache,
                sasl=inter_broker_login(config),
                ssl_context=None if tls is None else tls.client_context(),
            )
        return grpc_leader_endpoint.factory(
            timeout_s=timeout_s,
            max_message_bytes=config.grpc_max_message_bytes,
            sasl=self._fetch_login,
            credentials=self._channel_credentials(config.inter_broker_listener_name),
        )

    def _channel_credentials(self, listener: str) -> grpc.ChannelCredentials | None:
        """TLS for this broker's gRPC connections to ``listener`` on other brokers (None:
        a plaintext listener): its own key store and the listener's trust store."""
        tls = self._tls.get(listener)
        return None if tls is None else grpc_tls.channel_credentials(tls)

    def _start_metrics(self) -> str | None:
        """Serve GET /metrics on metrics.listener (broker/server/metrics.py); its URL."""
        if self._metrics is None:
            return None
        assert self._loop is not None and self._replica_manager is not None
        assert self._controller is not None and self._metadata_cache is not None
        self._metrics.bind(
            MetricSources(
                loop=self._loop,
                replica_manager=self._replica_manager,
                controller=self._controller,
                zk_client=self.zk.client,
                metadata_cache=self._metadata_cache,
                group_coordinator=self._group_coordinator,
                # Its ListOffsets to other leaders are gRPC calls: the control plane listener
                # is the gRPC one every broker serves inter-broker requests on.
                inter_broker_listener=self.config.control_plane_listener,
                max_message_bytes=self.config.grpc_max_message_bytes,
                credentials=self._channel_credentials(self.config.control_plane_listener),
                sasl=self._control_login,
                quotas=self._client_quotas,
            )
        )
        try:
            port = self._metrics.start()
        except OSError as exc:
            raise BrokerStartupError(f"cannot listen on metrics.listener: {exc}") from None
        return f"http://{self._metrics.host}:{port}/metrics"

    def _open_logs(self) -> LogManager:
        assert self._config_handler is not None
        started = time.monotonic()
        manager = LogManager(
            self.config.log_dirs,
            self.config.log,
            broker_id=self.broker_id,
            cluster_id=self.cluster_id,
            topic_config=self._config_handler.topic_log_config,
            failure_channel=self._log_dir_failures,
        )
        _log.info(
            "logs_loaded",
            log_dirs=[str(d) for d in manager.log_dirs],
            logs=len(manager.logs),
            duration_ms=int((time.monotonic() - started) * 1000),
        )
        return manager

    def _grpc_servers(self) -> list[grpc.aio.Server]:
        """One gRPC server per listener, so that Metadata and FindCoordinator can answer with
        the endpoints of the listener the client came in on (as Kafka does): a client on the
        host's EXTERNAL listener must not be sent to the INTERNAL names of a container network.
        """
        servers = []
        for endpoint, address in zip(
            self.config.listeners, self.config.bind_addresses, strict=True
        ):
            server = self._grpc_server(endpoint.listener_name)
            tls = self._tls.get(endpoint.listener_name)
            configure_listener(endpoint.listener_name, endpoint.security_protocol, tls)
            try:
                if tls is None:
                    port = server.add_insecure_port(address)
                else:
                    port = server.add_secure_port(address, grpc_tls.server_credentials(tls))
            except RuntimeError as exc:
                raise BrokerStartupError(f"cannot listen on {address}: {exc}") from None
            if port == 0:
                raise BrokerStartupError(f"cannot listen on {address}: address in use?")
            servers.append(server)
        return servers

    def _grpc_server(self, listener: str) -> grpc.aio.Server:
        assert self._replica_manager is not None and self._metadata_cache is not None
        assert self._controller is not None and self._zk is not None
        assert self._metadata_api is not None and self._producer_ids is not None
        assert self._fetch_api is not None
        interceptors: list[grpc.aio.ServerInterceptor] = []
        protocol = next(
            e.security_protocol for e in self.config.listeners if e.listener_name == listener
        )
        mechanisms = self._sasl.get(listener)
        login = None
        if mechanisms is not None:  # a SASL_* listener: every call logged in but the login's
            tokens = SessionTokens(idle_ms=self.config.connections_max_idle_ms)
            login = SaslLogin(
                mechanisms,
                tokens,
                self.config.connections_max_reauth_ms,
                self.config.connection_failed_authentication_delay_ms,
            )
            interceptors.append(SaslServerInterceptor(tokens, listener))
        if self._metrics is not None:
            interceptors.append(RequestMetricsInterceptor(self._metrics.requests))
        server = transport.aio_server(
            self.config.grpc_max_message_bytes, _SERVER_OPTIONS, interceptors
        )
        requests = self._metrics.requests if self._metrics is not None else None
        control_plane = listener == self.config.control_plane_listener
        data = DataService(
            self._replica_manager,
            self._fetch_api,
            producer_ids=self._producer_ids,
            listener=listener,
            metrics=requests,
            data=self._data_api,
            quotas=self._client_quotas,
        )
        pb_grpc.add_DataServicer_to_server(data, server)
        server.add_generic_rpc_handlers((raw_data_handler(data),))  # proto/raw_records.py
        pb_grpc.add_MetadataServicer_to_server(
            MetadataService(self._metadata_api, listener=listener),
            server,
        )
        assert self._topic_admin is not None
        replicas = ReplicaApi(self._replica_manager, lambda: self._broker_epoch, self._auth)
        pb_grpc.add_AdminServicer_to_server(
            AdminService(
                self._topic_admin,
                replicas,
                acls=self._acl_api,
                listener=listener,
                users=UserScramAdmin(self._zk, self.authorizer),
                client_quotas=ClientQuotaAdmin(self._zk, self.authorizer),
                transactions=self._transaction_api,
                log_dirs=LogDirApi(self._replica_manager, self._auth),
            ),
            server,
        )
        if self._transaction_api is not None:
            pb_grpc.add_TransactionServicer_to_server(
                TransactionService(self._transaction_api, listener=listener), server
            )
        pb_grpc.add_SecurityServicer_to_server(SecurityService(listener, protocol, login), server)
        # Controller requests come in on the control plane listener only (KIP-291; by default
        # the inter-broker one, with one listener that is it), never on one meant for clients.
        if control_plane:
            assert self._controller_fence is not None
            pb_grpc.add_ControlServicer_to_server(
                ControlService(
                    self._replica_manager,
                    self._metadata_cache,
                    self._controller,
                    fence=self._controller_fence,
                    on_partitions_deleted=(
                        None
                        if self._group_coordinator is None
                        else self._group_coordinator.on_partitions_deleted
                    ),
                    listener=listener,
                    markers=self._transaction_api,
                ),
                server,
            )
        if self._group_api is not None:
            pb_grpc.add_GroupServicer_to_server(
                GroupService(
                    self._group_api, listener=listener, transactions=self._transaction_api
                ),
                server,
            )
        return server

    async def _register(self) -> None:
        registration = BrokerRegistration(
            self.broker_id, self.config.registered_endpoints, rack=self.config.broker_rack
        )
        try:
            epoch = await asyncio.to_thread(self.zk.register_broker, registration)
        except BrokerIdAlreadyRegisteredError as held:
            epoch = await self._register_once_expired(registration, held)
        previous, self._broker_epoch = self._broker_epoch, epoch
        self._registered_session = self.zk.session_id
        if self._replica_manager is not None:
            self._replica_manager.registered()  # controller requests held until now go on
        _log.info(
            "broker_registered",
            path=f"/brokers/ids/{self.broker_id}",
            endpoints=[e.connection_string for e in registration.endpoints],
            broker_epoch=epoch,
            previous_broker_epoch=previous,
        )

    async def _register_once_expired(
        self, registration: BrokerRegistration, held: BrokerIdAlreadyRegisteredError
    ) -> int:
        """Register after the session holding /brokers/ids/<id> has expired.

        A broker started again within zookeeper.session.timeout.ms of a crash finds its id
        held by the session of its dead process: ZooKeeper removes that registration once
        the session expires, which it checks once per tick (_SESSION_EXPIRY_SLACK_MS). Only a
        registration still there after that wait belongs to a live broker with the same id.
        """
        path = f"/brokers/ids/{self.broker_id}"
        wait_ms = self.config.zookeeper_session_timeout_ms + _SESSION_EXPIRY_SLACK_MS
        _log.warning(
            "broker_registration_held",
            path=path,
            owner_session=_session_hex(held.owner_session),
            endpoints=list(held.endpoints),
            wait_ms=wait_ms,
            detail="waiting for that session to expire (this broker restarted within "
            "zookeeper.session.timeout.ms?); a live broker with this broker.id keeps it",
        )
        gone = await asyncio.to_thread(
            self.zk.wait_for_broker_deregistration, self.broker_id, wait_ms / 1000
        )
        if gone:
            try:
                return await asyncio.to_thread(self.zk.register_broker, registration)
            except BrokerIdAlreadyRegisteredError as exc:  # another broker took it meanwhile
                held = exc
        holder = ", ".join([*held.endpoints, f"session {_session_hex(held.owner_session)}"])
        _log.error(
            "broker_id_already_registered",
            path=path,
            owner_session=_session_hex(held.owner_session),
            endpoints=list(held.endpoints),
        )
        raise BrokerStartupError(
            f"broker.id {self.broker_id} is already registered in ZooKeeper: {path} is held by "
            f"another live broker ({holder}), still there {wait_ms / 1000:g} s later"
        )

    # --- ZooKeeper session ------------------------------------------------------------------

    def _on_zk_state(self, state: str) -> None:
        """Kazoo's session listener (kazoo's thread): only hop onto the loop."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        if state == KazooState.LOST:
            loop.call_soon_threadsafe(_log.warning, "zookeeper_session_lost")
        elif state == KazooState.SUSPENDED:
            loop.call_soon_threadsafe(_log.warning, "zookeeper_connection_suspended")
        elif state == KazooState.CONNECTED:
            loop.call_soon_threadsafe(self._on_zk_connected)

    def _on_zk_connected(self) -> None:
        if self._stopped or self._reregistering or self._zk is None:
            return
        if self._zk.session_id == self._registered_session:
            _log.info("zookeeper_reconnected", session_id=hex(self._zk.session_id or 0))
            return
        self._reregistering = True
        self._tasks.append(asyncio.create_task(self._reregister()))

    async def _reregister(self) -> None:
        """Register again under the new session, until it works or the broker stops."""
        try:
            while not self._stopped:
                _log.info("zookeeper_new_session", session_id=hex(self.zk.session_id or 0))
                try:
                    await self._register()
                    return
                except Exception as exc:  # ZooKeeper trouble: try again shortly
                    _log.warning("broker_reregistration_failed", error=str(exc))
                await asyncio.sleep(_REREGISTER_BACKOFF_S)
        finally:
            self._reregistering = False
            # the session may have changed again while registering
            if not self._stopped and self.zk.session_id != self._registered_session:
                self._on_zk_connected()

    # --- periodic log work ------------------------------------------------------------------

    # Each runs every period on the scheduler (broker/replication/scheduler.py), from startup.

    def _checkpoint_log_offsets(self) -> None:
        # On the loop, not in the executor: the LogManager's map of logs belongs to the loop
        # (LeaderAndIsr adds logs to it), and two small fsynced files once a minute are cheap.
        assert self._log_manager is not None
        self._log_manager.checkpoint_recovery_points()
        self._log_manager.checkpoint_log_start_offsets()

    async def _flush_logs(self) -> None:
        # Prepared and completed on the loop (it owns the logs), fsynced in the executor.
        assert self._log_manager is not None
        pending = self._log_manager.prepare_flushes(_now_ms())
        if not pending:
            return
        await asyncio.to_thread(_sync_flushes, [flush for _, flush in pending])
        self._log_manager.complete_flushes(pending)

    def _log_retention(self) -> None:
        assert self._log_manager is not None and self._replica_manager is not None
        high_watermarks = self._replica_manager.high_watermarks()
        deleted = self._log_manager.cleanup(_now_ms(), high_watermarks)
        if deleted:
            _log.info("log_retention", segments_deleted=deleted)

    def _reconfigured(self, config: BrokerConfig) -> None:
        """A dynamic broker config change (broker/server/config_handler.py) took effect."""
        self.config = config

    def _expire_producer_ids(self) -> None:
        # Every replica forgets idle producers, as each Kafka log does: a follower that becomes
        # leader then holds the same producers as the old leader did.
        assert self._replica_manager is not None
        expiration_ms = self.config.producer_id_expiration_ms
        now = _now_ms()
        for partition in self._replica_manager.partitions.values():
            partition.producer_state.remove_expired_producers(now, expiration_ms)

    # --- log dir failure (KIP-112) ----------------------------------------------------------

    def _on_log_dir_offline(self, log_dir: Path) -> None:
        """The failure channel's listener (any thread): hop onto the loop."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return

        def start() -> None:
            task = loop.create_task(self._handle_log_dir_failure(log_dir))
            self._log_dir_failure_tasks.add(task)
            task.add_done_callback(self._log_dir_failure_tasks.discard)

        loop.call_soon_threadsafe(start)

    async def _handle_log_dir_failure(self, log_dir: Path) -> None:
        """Kafka's LogDirFailureHandler: the dir's replicas go offline here, the controller
        hears of it through /log_dir_event_notification and moves their leadership; with no
        log dir left the broker halts (without a controlled shutdown: it has nothing to hand
        over, and its logs must not be touched)."""
        if self._stopped or self._replica_manager is None or self._log_manager is None:
            return
        await self._replica_manager.handle_log_dir_failure(log_dir)
        try:
            name = await asyncio.to_thread(
                self.zk.create_log_dir_event_notification, self.broker_id
            )
            _log.info("log_dir_event_sent", log_dir=str(log_dir), znode=name)
        except Exception as exc:  # ZooKeeper away: the controller learns at its next resync
            _log.warning("log_dir_event_failed", log_dir=str(log_dir), error=str(exc))
        if not self._log_manager.online_log_dirs:
            _log.error(
                "broker_halting",
                reason="all log dirs are offline",
                log_dirs=[str(d) for d in self._log_manager.log_dirs],
            )
            self.halted = True
            self._shutdown_event().set()

    # --- shutdown ---------------------------------------------------------------------------

    def _shutdown_event(self) -> asyncio.Event:
        if self._shutdown_requested is None:
            self._shutdown_requested = asyncio.Event()
        return self._shutdown_requested

    def request_shutdown(self) -> None:
        """Signal handler (on the loop): the first signal starts a controlled shutdown; a
        second one skips what is left of the controlled-shutdown retries."""
        self._signals += 1
        _log.info("shutdown_requested", signals=self._signals)
        self._shutdown_event().set()

    async def wait_for_shutdown_request(self) -> None:
        await self._shutdown_event().wait()

    async def controlled_shutdown(self) -> bool:
        """Move leadership off this broker through the controller; True when none is left.

        Nothing to do when no other broker is alive to take leadership (the last broker of a
        cluster). With ZooKeeper unreachable no controller can move anything: the broker
        stops without waiting, and its partitions fail over when its session expires.
        """
        retries = self.config.controlled_shutdown_max_retries
        backoff_s = self.config.controlled_shutdown_retry_backoff_ms / 1000
        timeout_s = self.config.request_timeout_ms / 1000
        for attempt in range(1, retries + 1):
            if not self.zk.connected:
                _log.warning(
                    "controlled_shutdown_skipped",
                    reason="ZooKeeper is unreachable: no controller can move leadership; "
                    "the partitions this broker leads fail over when its session expires",
                )
                return False
            try:
                live = await asyncio.wait_for(
                    asyncio.to_thread(self.zk.get_live_broker_ids), timeout_s
                )
                if not set(live) - {self.broker_id}:
                    _log.info(
                        "controlled_shutdown_skipped",
                        reason="no other broker is alive to take leadership",
                    )
                    return True
                # Bounded: a ZooKeeper call made while the connection is down would wait
                # for it to come back.
                remaining = await asyncio.wait_for(self._send_controlled_shutdown(), timeout_s)
            except Exception as exc:  # any failure is one more attempt
                _log.warning(
                    "controlled_shutdown_attempt_failed",
                    attempt=attempt,
                    error=str(exc) or repr(exc),
                )
                if attempt < retries and self._signals < 2:
                    await self._wait_for_another_controller(backoff_s)
            else:
                if not remaining:
                    _log.info("controlled_shutdown_succeeded", attempt=attempt)
                    return True
                _log.warning(
                    "controlled_shutdown_incomplete",
                    attempt=attempt,
                    remaining_partitions=[str(tp) for tp in remaining],
                )
                if attempt < retries and self._signals < 2:
                    await asyncio.sleep(backoff_s)
            if self._signals >= 2:
                break
        _log.warning(
            "controlled_shutdown_failed",
            detail="proceeding with an unclean shutdown: every controlled shutdown attempt failed",
        )
        return False

    async def _wait_for_another_controller(self, timeout_s: float) -> None:
        """The backoff after an attempt that reached no working controller: the controller was
        stopping itself (all brokers stopped together) or none was elected. It ends early as
        soon as another broker is controller, which then has the answer."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        asked = self._controller_asked
        elected = asyncio.Event()

        def on_controller(controller: ControllerRegistration | None) -> None:  # kazoo's thread
            if controller is not None and controller.broker_id != asked and not loop.is_closed():
                loop.call_soon_threadsafe(elected.set)

        watch = None
        try:
            watch = await asyncio.wait_for(
                asyncio.to_thread(self.zk.watch_controller, on_controller), timeout_s
            )
            await asyncio.wait_for(elected.wait(), max(0.0, deadline - loop.time()))
        except Exception:  # the timeout, or ZooKeeper trouble: the whole backoff then
            await asyncio.sleep(max(0.0, deadline - loop.time()))
        finally:
            if watch is not None:
                watch.cancel()

    async def _send_controlled_shutdown(self) -> list[TopicPartition]:
        timeout_s = self.config.request_timeout_ms / 1000
        self._controller_asked = None
        controller = await asyncio.to_thread(self.zk.get_controller)
        if controller is None:
            raise error_for_code(ErrorCode.NOT_CONTROLLER, "no controller is elected")
        self._controller_asked = controller.broker_id
        _log.info(
            "controlled_shutdown_sending",
            controller_id=controller.broker_id,
            broker_epoch=self._broker_epoch,
        )
        if controller.broker_id == self.broker_id and self._controller is not None:
            future = self._controller.controlled_shutdown(self.broker_id, self._broker_epoch)
            result = await asyncio.wait_for(asyncio.wrap_future(future), timeout_s)
            error = ErrorCode(result.error)
            remaining = [TopicPartition(tp.topic, tp.partition) for tp in result.remaining]
        else:
            registration = await asyncio.to_thread(self.zk.get_broker, controller.broker_id)
            if registration is None:
                raise error_for_code(
                    ErrorCode.NOT_CONTROLLER, f"controller {controller.broker_id} is gone"
                )
            endpoint = inter_broker_endpoint(registration, self.config.control_plane_listener)
            request = pb.ControlledShutdownRequest(
                broker_id=self.broker_id, broker_epoch=self._broker_epoch
            )
            address = f"{endpoint.host}:{endpoint.port}"
            max_bytes = self.config.grpc_max_message_bytes
            credentials = self._channel_credentials(self.config.control_plane_listener)
            async with (
                transport.aio_channel(address, max_bytes, credentials=credentials)
                if self._control_login is None
                else aio_sasl_channel(address, max_bytes, self._control_login, (), credentials)
            ) as channel:
                response = await pb_grpc.ControlStub(channel).ControlledShutdown(
                    request, timeout=timeout_s
                )
            error = ErrorCode(response.error_code)
            remaining = [
                TopicPartition(p.topic_name, p.partition_index)
                for p in response.remaining_partitions
            ]
        if error != ErrorCode.NONE:
            raise error_for_code(error)
        return remaining

    async def shutdown(self, *, controlled: bool = True) -> None:
        """Controlled shutdown (when enabled and registered), then stop everything started."""
        if self._stopped:
            return
        _log.info("broker_shutting_down", controlled=controlled)
        if controlled and self.config.controlled_shutdown_enable and self._broker_epoch >= 0:
            if self._replica_manager is not None:
                self._replica_manager.begin_shutdown()
            await self.controlled_shutdown()
        self._stopped = True
        if self._dynamic_config is not None:
            await self._dynamic_config.shutdown()
        if self._acl_manager is not None:
            await self._acl_manager.shutdown()
        await self._scheduler.shutdown()
        if self._cleaner is not None:
            await self._cleaner.shutdown()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        steps: list[tuple[str, Callable[[], Awaitable[Any]]]] = []
        if self._metrics is not None:
            stop_metrics = partial(asyncio.to_thread, self._metrics.stop)
            steps.append(("metrics_listener_stopped", stop_metrics))
        if self._kafka_listeners is not None:
            steps.append(("kafka_listeners_stopped", self._kafka_listeners.stop))
        for server in self._servers:
            steps.append(("grpc_server_stopped", partial(server.stop, _STOP_GRACE_S)))
        if self._group_coordinator is not None:
            self._group_coordinator.shutdown()
        if self._transaction_coordinator is not None:
            self._transaction_coordinator.shutdown()
        if self._txn_marker_channel is not None:
            steps.append(("txn_marker_channel_closed", self._txn_marker_channel.close))
        if self._replica_manager is not None:
            steps.append(("replica_manager_stopped", self._replica_manager.shutdown))
        if self._controller is not None:
            steps.append(
                ("controller_stopped", partial(asyncio.to_thread, self._controller.shutdown))
            )
        if self._log_manager is not None:
            steps.append(("logs_closed", partial(asyncio.to_thread, self._log_manager.close)))
        if self._zk is not None:
            self._zk.client.remove_listener(self._on_zk_state)
            close_zk = ("zookeeper_closed", partial(asyncio.to_thread, self._zk.close))
            if self._zk.connected:
                steps.append(close_zk)
            else:
                # Kazoo holds every request until the connection comes back: closing the
                # session first fails them at once, so that no step below waits for ZooKeeper.
                steps.insert(0, close_zk)
        for event, step in steps:
            try:
                await step()
            except Exception as exc:  # stop the rest anyway; a failed step is logged
                _log.exception(event.replace("stopped", "stop_failed"), error=str(exc))
            else:
                _log.info(event)
        _log.info("broker_stopped", broker_epoch=self._broker_epoch)


async def _run(config: BrokerConfig) -> int:
    server = BrokerServer(config)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, server.request_shutdown)
    try:
        await server.startup()
    except BaseException:
        await server.shutdown(controlled=False)
        raise
    await server.wait_for_shutdown_request()
    await server.shutdown(controlled=not server.halted)
    return 1 if server.halted else 0


def event_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop (libuv; a dependency wherever it builds), unless it is missing or
    ``MINIKAFKA_EVENT_LOOP=asyncio`` asks for the standard library's (None).

    At 10,000 records/s over RF3 acks=all the brokers are mostly event-loop work: socket
    writes, readiness polling, callbacks. uvloop's loop roughly halves the median end-to-end
    latency (docs/benchmarks.md, "End-to-end latency")."""
    choice = os.environ.get("MINIKAFKA_EVENT_LOOP") or "uvloop"
    if choice not in ("uvloop", "asyncio"):
        raise BrokerStartupError(f"MINIKAFKA_EVENT_LOOP must be uvloop or asyncio, not {choice!r}")
    if choice == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def _load_tls(config: BrokerConfig) -> dict[str, ListenerTls]:
    """Every SSL/SASL_SSL listener's TLS, read and checked (BrokerStartupError: one line)."""
    loaded: dict[str, ListenerTls] = {}
    grpc_names = {e.listener_name for e in config.listeners}
    for endpoint in config.listeners + config.kafka_listeners:
        listener = config.listener_config(endpoint.listener_name)
        if not listener.uses_tls:
            continue
        try:
            loaded[listener.name] = ListenerTls.load(listener)
        except InvalidConfigError as exc:
            raise BrokerStartupError(f"invalid TLS configuration: {exc.message}") from None
        if listener.name in grpc_names and listener.ssl.client_auth == "requested":
            _log.warning(
                "tls.client_auth_requested_not_supported",
                listener=listener.name,
                detail="gRPC cannot ask for a certificate without requiring one: served as "
                "ssl.client.auth=none",
            )
        inter_broker = {config.inter_broker_listener_name, config.control_plane_listener}
        if (
            listener.name in grpc_names & inter_broker
            and listener.ssl.endpoint_identification_algorithm == ""
        ):
            _log.warning(
                "tls.endpoint_identification_always_on",
                listener=listener.name,
                detail="gRPC always checks the host name of the broker it connects to",
            )
    return loaded


def run_broker(config: BrokerConfig) -> int:
    """Run a broker until SIGTERM/SIGINT; 0 after a clean stop. BrokerStartupError on failure."""
    try:
        with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
            return runner.run(_run(config))
    except BrokerStartupError as exc:
        _log.error("broker_startup_failed", error=str(exc))
        raise
    except Exception as exc:
        _log.exception("broker_startup_failed", error=str(exc))
        raise BrokerStartupError(f"broker {config.broker_id} failed to start: {exc}") from exc
