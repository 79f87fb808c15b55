"""The broker's configuration: ``server.properties``, environment and ``--override``, as one object.

Sources, each overriding the one before (as ``kafka-server-start.sh server.properties --override
k=v`` in a container that also sets ``KAFKA_*`` variables)::

    1. a server.properties file (Java properties syntax, see ``parse_properties``)
    2. the environment: ``KAFKA_<KEY>`` with the key upper-cased and ``.`` written ``_``, as the
       Kafka container images read them: KAFKA_BROKER_ID -> broker.id,
       KAFKA_ADVERTISED_LISTENERS -> advertised.listeners. A key's own ``_`` is written ``__``
       and ``-`` is written ``___``. The images' JVM and launcher variables (KAFKA_HEAP_OPTS,
       KAFKA_OPTS, KAFKA_*_OPTS, KAFKA_VERSION, ...) are not configs and are skipped.
    3. ``--override key=value`` arguments

Keys, with Kafka's names and defaults::

    broker.id                                  required, >= 0
    zookeeper.connect                          required, host:port[,host:port...][/chroot]
    listeners                                  PLAINTEXT://:9092 (empty host: every interface)
    advertised.listeners                       listeners; an empty host becomes this machine's
                                               fully qualified name, 0.0.0.0 is refused
    listener.security.protocol.map             PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:...
    inter.broker.listener.name                 PLAINTEXT: the listener followers fetch on; an
                                               advertised gRPC listener, or a Kafka one
                                               (kafka.advertised.listeners): followers then fetch
                                               with Kafka's Fetch and OffsetsForLeaderEpoch
    control.plane.listener.name                inter.broker.listener.name (KIP-291): the gRPC
                                               listener the controller's LeaderAndIsr,
                                               UpdateMetadata and StopReplica (and controlled
                                               shutdown) go over; required when
                                               inter.broker.listener.name is a Kafka listener;
                                               when set, another listener than that one
    broker.rack                                none (KIP-36: rack-aware replica assignment when
                                               every broker has one)
    replica.selector.class                     none: consumers read from leaders (KIP-392);
                                               org.apache.kafka.common.replica.
                                               RackAwareReplicaSelector: a consumer with
                                               client.rack is sent to a replica in its rack
    metrics.listener                           empty: no metrics; http://host:port serves
                                               Prometheus' GET /metrics (empty host: every
                                               interface)
    log.dirs (log.dir when absent)             /tmp/kafka-logs, comma-separated
    zookeeper.session.timeout.ms               18000
    zookeeper.connection.timeout.ms            zookeeper.session.timeout.ms
    zookeeper.set.acl                          false: true gives the znodes brokers create
                                               Kafka's ACLs (needs the SASL login to ZooKeeper
                                               of a JAAS Client section, zk/zk_auth.py)
    num.partitions                             1
    default.replication.factor                 1
    min.insync.replicas                        1
    replica.lag.time.max.ms                    30000
    replica.fetch.wait.max.ms                  500
    replica.fetch.min.bytes                    1
    replica.fetch.max.bytes                    1048576
    replica.fetch.response.max.bytes           10485760 (a follower's whole fetch answer)
    replica.fetch.backoff.ms                   1000 (a follower's pause after a failed fetch)
    fetch.max.bytes                            57671680 (a consumer's whole fetch answer)
    max.incremental.fetch.session.cache.slots  1000 (fetch sessions, KIP-227, a leader keeps)
    min.incremental.fetch.session.eviction.ms  120000 (a session younger than this is evicted
                                               only when stale or by a follower's; a constant
                                               in Kafka, a key here so tests can shorten it)
    socket.request.max.bytes                   104857600
    queued.max.request.bytes                   -1 (unbounded): bytes of requests read and not
                                               yet handled, all Kafka connections together;
                                               when set, at least socket.request.max.bytes
    max.connections                            2147483647: Kafka connections at once (a new one
                                               waits in the listen backlog for a slot; those on
                                               inter.broker.listener.name are not counted)
    max.connections.per.ip                     2147483647: Kafka connections from one address
                                               (more are closed at once); 0 only with overrides
    max.connections.per.ip.overrides           empty: host:count,... (an address or host name)
    replica.socket.timeout.ms                  30000
    replica.high.watermark.checkpoint.interval.ms  5000
    request.timeout.ms                         30000
    unclean.leader.election.enable             false
    auto.create.topics.enable                  true
    auto.leader.rebalance.enable               true
    leader.imbalance.check.interval.seconds    300
    leader.imbalance.per.broker.percentage     10
    controlled.shutdown.enable                 true
    controlled.shutdown.max.retries            3
    controlled.shutdown.retry.backoff.ms       5000
    delete.topic.enable                        true
    offsets.topic.num.partitions               50
    offsets.topic.replication.factor           3
    group.initial.rebalance.delay.ms           3000
    group.min.session.timeout.ms               6000
    group.max.session.timeout.ms               1800000
    offset.metadata.max.bytes                  4096
    log.flush.offset.checkpoint.interval.ms    60000
    log.retention.check.interval.ms            300000
    producer.id.expiration.ms                  86400000
    producer.id.expiration.check.interval.ms   600000
    log.cleaner.enable                         true
    compression.type                           producer (keep the producer's codec)
    log.cleaner.threads                        1
    log.cleaner.backoff.ms                     15000 (sleep when no log needs cleaning)
    log.cleaner.dedupe.buffer.size             134217728 (offset map memory, all threads)
    log.cleaner.io.buffer.size                 524288
    offsets.topic.segment.bytes                104857600
    offsets.topic.compression.codec            0 (none)
    offsets.commit.required.acks               -1
    offsets.commit.timeout.ms                  5000
    offsets.load.buffer.size                   5242880
    offsets.retention.minutes                  10080
    offsets.retention.check.interval.ms        600000
    transaction.state.log.num.partitions       50
    transaction.state.log.replication.factor   3 (capped by the live brokers, as for offsets)
    transaction.state.log.min.isr              2
    transaction.state.log.segment.bytes        104857600
    transaction.max.timeout.ms                 900000 (a producer's transaction.timeout.ms cap)
    transactional.id.expiration.ms             604800000
    transaction.abort.timed.out.transaction.cleanup.interval.ms  10000
    transaction.remove.expired.transaction.cleanup.interval.ms   3600000

TLS (SSL and SASL_SSL listeners, and the broker's own connections to such listeners), Kafka's
keys; each may be given for one listener as ``listener.name.<listener, lower case>.<key>``
(``listener.name.internal.ssl.client.auth=required``), which beats the broker-wide key for
that listener (see ``listener_config``)::

    ssl.keystore.type                          PEM (JKS and PKCS12 are refused: PEM only)
    ssl.keystore.location                      PEM file: the private key, then the chain
    ssl.keystore.key                           the private key as PEM text (instead of a file)
    ssl.keystore.certificate.chain             the chain as PEM text (with ssl.keystore.key)
    ssl.key.password                           the private key's password, if encrypted
    ssl.truststore.type                        PEM
    ssl.truststore.location                    PEM file: the CA certificates trusted
    ssl.truststore.certificates                the same as PEM text
    ssl.client.auth                            none | requested | required
    ssl.principal.mapping.rules                DEFAULT (RULE:pattern/replacement/[LU], ...)
    ssl.enabled.protocols                      TLSv1.2,TLSv1.3
    ssl.protocol                               TLSv1.3
    ssl.cipher.suites                          empty: the TLS library's defaults
    ssl.endpoint.identification.algorithm      https: a broker checks the host name in the
                                               certificate of a broker it connects to; empty
                                               turns the check off

Every other ``listener.name.<listener>.<key>`` is kept in ``listener_overrides`` for the
mechanism that reads it (``listener_config(name).get(key)``).

SASL (Kafka's keys; a listener's own ``listener.name.<listener>.`` key wins over the plain one,
the listener name lower-cased in the key)::

    sasl.enabled.mechanisms                    GSSAPI, which is not supported: a SASL_PLAINTEXT
    listener.name.<l>.sasl.enabled.mechanisms  Kafka listener must enable PLAIN, SCRAM-SHA-256
                                               and/or SCRAM-SHA-512
    sasl.mechanism.inter.broker.protocol       GSSAPI; when inter.broker.listener.name is a SASL
                                               Kafka listener, the mechanism followers log in
                                               with (enabled on that listener)
    listener.name.<l>.<mechanism>.sasl.jaas.config  none; else sasl.jaas.config: the login
    sasl.jaas.config                           module entry (PlainLoginModule's user_<name>
                                               options are the users PLAIN accepts; username
                                               and password what this broker logs in as)
    connections.max.reauth.ms                  0 (re-authentication, KIP-368, is not supported)
    connection.failed.authentication.delay.ms  100: a failed SASL login is answered (and its
                                               Kafka connection closed) this much later, on
                                               both doors, which slows password guessing

The JAAS values are secrets: never logged, described or kept in ``unknown``.

The broker keys that give every topic its default (log.segment.bytes, log.roll.ms/hours,
log.retention.ms/minutes/hours/bytes, message.max.bytes, log.cleanup.policy,
min.insync.replicas, unclean.leader.election.enable, compression.type, ...) are the synonyms of
the topic keys in proto/topic_config.py's table, parsed by those rows from the same merged
properties into ``BrokerConfig.log``, a TopicConfig (``min_insync_replicas`` and
``unclean_leader_election_enable`` read it). Every key, broker-level or topic-level, is a row of
the one spec class, ``proto.topic_config.ConfigKey``.

Unknown keys are kept in ``BrokerConfig.unknown`` and logged as a warning, as Kafka does (a
misspelt ``log.*`` key too, with the key it probably meant); a bad value raises
``InvalidConfigError`` naming the key and the value. Immutable; safe from any thread.

Dynamic broker configs (Kafka's, ZooKeeper mode): ``/config/brokers/<default>`` for the whole
cluster and ``/config/brokers/<id>`` for one broker override the static value of the keys in
``DYNAMIC_KEYS``, per-broker first. ``with_dynamic`` lays them over the static config;
``describe`` reports each key's source as Kafka's DescribeConfigs does.
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import os
import re
import socket
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

import javaproperties
import structlog

from minikafka.proto.common import EndPoint
from minikafka.proto.errors import InvalidConfigError
from minikafka.proto.topic_config import (
    BROKER_TOPIC_KEYS,
    INT_MAX,
    LONG_MAX,
    TOPIC_KEY_SYNONYMS,
    TOPIC_KEY_TYPES,
    ConfigKey,
    ConfigType,
    TopicConfig,
)

__all__ = [
    "ACL_AUTHORIZER_CLASS",
    "CONFIG_TYPES",
    "DYNAMIC_KEYS",
    "REPLICA_SELECTOR_CLASSES",
    "SASL_MECHANISMS",
    "SENSITIVE_KEYS",
    "TLS_PROTOCOLS",
    "BrokerConfig",
    "ConfigSource",
    "ListenerConfig",
    "SslConfig",
    "parse_metrics_listener",
    "parse_overrides",
    "parse_properties",
    "properties_from_environ",
    "read_properties",
    "validate_dynamic_update",
]

_log = structlog.get_logger(__name__)

_DEFAULT_PROTOCOL_MAP: Mapping[str, str] = MappingProxyType(
    {
        "PLAINTEXT": "PLAINTEXT",
        "SSL": "SSL",
        "SASL_PLAINTEXT": "SASL_PLAINTEXT",
        "SASL_SSL": "SASL_SSL",
    }
)
_SUPPORTED_PROTOCOLS = frozenset(_DEFAULT_PROTOCOL_MAP)
TLS_PROTOCOLS = frozenset({"SSL", "SASL_SSL"})
_LISTENER_PREFIX = "listener.name."
_UNROUTABLE_HOSTS = frozenset({"0.0.0.0", "::"})


class ConfigSource(enum.IntEnum):
    """Kafka's DescribeConfigs config source: where a value comes from."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1  # /config/topics/<topic>
    DYNAMIC_BROKER_CONFIG = 2  # /config/brokers/<id>
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3  # /config/brokers/<default>
    STATIC_BROKER_CONFIG = 4  # server.properties, env or --override
    DEFAULT_CONFIG = 5  # Kafka's default


@dataclass(frozen=True)
class SslConfig:
    """A listener's TLS keys (Kafka's ``ssl.*`` without the prefix), checked for form; the
    files are read by broker/security/tls.py when the listener starts."""

    keystore_type: str = "PEM"
    keystore_location: str | None = None
    keystore_key: str | None = field(default=None, repr=False)
    keystore_certificate_chain: str | None = None
    key_password: str | None = field(default=None, repr=False)
    truststore_type: str = "PEM"
    truststore_location: str | None = None
    truststore_certificates: str | None = None
    client_auth: str = "none"
    principal_mapping_rules: str = "DEFAULT"
    enabled_protocols: tuple[str, ...] = ("TLSv1.2", "TLSv1.3")
    protocol: str = "TLSv1.3"
    cipher_suites: tuple[str, ...] = ()
    endpoint_identification_algorithm: str = "https"

    @property
    def has_key_store(self) -> bool:
        return self.keystore_location is not None or self.keystore_key is not None

    @property
    def has_trust_store(self) -> bool:
        return self.truststore_location is not None or self.truststore_certificates is not None


@dataclass(frozen=True)
class ListenerConfig:
    """One listener's settings: ``config.listener_config("INTERNAL").ssl.client_auth``.

    ``overrides`` holds every ``listener.name.<listener>.<key>`` given for it, raw, by key
    (``sasl.enabled.mechanisms``, ``plain.sasl.jaas.config``, ...): ``get(key)`` reads one.
    """

    name: str
    security_protocol: str
    ssl: SslConfig
    overrides: Mapping[str, str] = field(default_factory=dict, repr=False)

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in TLS_PROTOCOLS

    def get(self, key: str, default: str | None = None) -> str | None:
        """The listener's own value of ``key`` (listener.name.<listener>.<key>), else
        ``default`` (the caller's broker-wide value)."""
        return self.overrides.get(key, default)


@dataclass(frozen=True)
class BrokerConfig:
    """Every broker-level setting, typed. Build with ``load`` or ``from_properties``.

    Built in code (tests), it is held to the same rules: ``advertised_listeners=()`` means "the
    listeners", ``zookeeper_connection_timeout_ms=-1`` means "the session timeout" (in a file
    too), and bounds and cross-key rules are checked in ``__post_init__``, which also fills in
    each listener's security protocol from ``listener_security_protocol_map``.
    """

    broker_id: int
    zookeeper_connect: str
    listeners: tuple[EndPoint, ...] = (EndPoint("PLAINTEXT", "", 9092),)
    advertised_listeners: tuple[EndPoint, ...] = ()
    listener_security_protocol_map: Mapping[str, str] = field(
        default_factory=lambda: _DEFAULT_PROTOCOL_MAP, hash=False
    )
    inter_broker_listener_name: str = "PLAINTEXT"
    control_plane_listener_name: str | None = None  # None: inter_broker_listener_name
    # The Kafka-protocol front door (broker/server/kafka): none unless set.
    kafka_listeners: tuple[EndPoint, ...] = ()
    kafka_advertised_listeners: tuple[EndPoint, ...] = ()
    socket_request_max_bytes: int = 104_857_600
    connections_max_idle_ms: int = 600_000
    # Client quotas' rate windows (Kafka's ClientQuotaManagerConfig): the rate is measured
    # over quota.window.num samples of quota.window.size.seconds each.
    quota_window_num: int = 11
    quota_window_size_seconds: int = 1
    # Replication quotas (KIP-73, broker/server/replication_quotas.py): bytes/s of the
    # throttled replicas' fetches, the leader's side and the follower's; and of moves between
    # log dirs (KIP-113). Kafka's default, Long.MAX_VALUE, is no throttle. Dynamic.
    leader_replication_throttled_rate: int = LONG_MAX
    follower_replication_throttled_rate: int = LONG_MAX
    replica_alter_log_dirs_io_max_bytes_per_second: int = LONG_MAX
    # Their rate windows (Kafka's ReplicationQuotaManagerConfig), as the client quotas'.
    replication_quota_window_num: int = 11
    replication_quota_window_size_seconds: int = 1
    alter_log_dirs_replication_quota_window_num: int = 11
    alter_log_dirs_replication_quota_window_size_seconds: int = 1
    queued_max_request_bytes: int = -1  # <= 0: unbounded
    max_connections: int = INT_MAX
    max_connections_per_ip: int = INT_MAX
    max_connections_per_ip_overrides: Mapping[str, int] = field(default_factory=dict, hash=False)
    broker_rack: str | None = None
    replica_selector_class: str | None = None  # KIP-392; broker/replication/replica_selector.py
    metrics_listener: str = ""  # http://host:port, see parse_metrics_listener
    log_dirs: tuple[Path, ...] = (Path("/tmp/kafka-logs"),)
    zookeeper_session_timeout_ms: int = 18_000
    zookeeper_connection_timeout_ms: int = -1
    zookeeper_set_acl: bool = False
    num_partitions: int = 1
    default_replication_factor: int = 1
    replica_lag_time_max_ms: int = 30_000
    replica_fetch_wait_max_ms: int = 500
    replica_fetch_min_bytes: int = 1
    replica_fetch_max_bytes: int = 1_048_576
    replica_fetch_response_max_bytes: int = 10_485_760
    replica_fetch_backoff_ms: int = 1_000
    num_replica_fetchers: int = 1
    fetch_max_bytes: int = 57_671_680
    max_incremental_fetch_session_cache_slots: int = 1_000
    min_incremental_fetch_session_eviction_ms: int = 120_000
    replica_socket_timeout_ms: int = 30_000
    replica_high_watermark_checkpoint_interval_ms: int = 5_000
    request_timeout_ms: int = 30_000
    auto_create_topics_enable: bool = True
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_seconds: int = 300
    leader_imbalance_per_broker_percentage: int = 10
    controlled_shutdown_enable: bool = True
    controlled_shutdown_max_retries: int = 3
    controlled_shutdown_retry_backoff_ms: int = 5_000
    delete_topic_enable: bool = True
    offsets_topic_num_partitions: int = 50
    offsets_topic_replication_factor: int = 3
    group_initial_rebalance_delay_ms: int = 3_000
    group_min_session_timeout_ms: int = 6_000
    group_max_session_timeout_ms: int = 1_800_000
    offset_metadata_max_bytes: int = 4_096
    log_flush_offset_checkpoint_interval_ms: int = 60_000
    log_retention_check_interval_ms: int = 300_000
    producer_id_expiration_ms: int = 86_400_000
    producer_id_expiration_check_interval_ms: int = 600_000
    log_cleaner_enable: bool = True
    log_cleaner_threads: int = 1
    log_cleaner_backoff_ms: int = 15_000
    log_cleaner_dedupe_buffer_size: int = 134_217_728
    log_cleaner_io_buffer_size: int = 524_288
    offsets_topic_segment_bytes: int = 104_857_600
    offsets_topic_compression_codec: int = 0
    offsets_commit_required_acks: int = -1
    offsets_commit_timeout_ms: int = 5_000
    offsets_load_buffer_size: int = 5_242_880
    offsets_retention_minutes: int = 10_080
    offsets_retention_check_interval_ms: int = 600_000
    transaction_state_log_num_partitions: int = 50
    transaction_state_log_replication_factor: int = 3
    transaction_state_log_min_isr: int = 2
    transaction_state_log_segment_bytes: int = 104_857_600
    transaction_max_timeout_ms: int = 900_000
    transactional_id_expiration_ms: int = 604_800_000
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = 10_000
    transaction_remove_expired_transaction_cleanup_interval_ms: int = 3_600_000
    # TLS, broker-wide (listener_config(name).ssl has a listener's own, with its overrides).
    ssl_keystore_type: str = "PEM"
    ssl_keystore_location: str | None = None
    ssl_keystore_key: str | None = field(default=None, repr=False)
    ssl_keystore_certificate_chain: str | None = None
    ssl_key_password: str | None = field(default=None, repr=False)
    ssl_truststore_type: str = "PEM"
    ssl_truststore_location: str | None = None
    ssl_truststore_certificates: str | None = None
    ssl_client_auth: str = "none"
    ssl_principal_mapping_rules: str = "DEFAULT"
    ssl_enabled_protocols: tuple[str, ...] = ("TLSv1.2", "TLSv1.3")
    ssl_protocol: str = "TLSv1.3"
    ssl_cipher_suites: tuple[str, ...] = ()
    ssl_endpoint_identification_algorithm: str = "https"
    # listener.name.<listener>.<key> = value, by listener name (upper case) and key.
    listener_overrides: Mapping[str, Mapping[str, str]] = field(
        default_factory=dict, hash=False, repr=False
    )
    # SASL on the Kafka listeners (see the module docstring and sasl_enabled_mechanisms_for,
    # sasl_jaas_config_for).
    sasl_enabled_mechanisms: tuple[str, ...] = ("GSSAPI",)
    sasl_mechanism_inter_broker_protocol: str = "GSSAPI"
    connections_max_reauth_ms: int = 0
    connection_failed_authentication_delay_ms: int = 100
    # sasl.jaas.config and the listener.name.<l>.* SASL keys as given (keys lower-cased): the
    # JAAS values hold passwords, so they are no spec (never described) and never in a repr.
    sasl_settings: Mapping[str, str] = field(default_factory=dict, hash=False, repr=False)
    # ACLs (broker/security/authorizer.py): none unless authorizer.class.name names Kafka's
    # AclAuthorizer; super.users as principals ("User:admin").
    authorizer_class_name: str = ""
    super_users: tuple[str, ...] = ()
    allow_everyone_if_no_acl_found: bool = False
    # The defaults of every topic key (proto/topic_config.py): log.segment.bytes,
    # min.insync.replicas, unclean.leader.election.enable, ... as one TopicConfig.
    log: TopicConfig = field(default_factory=TopicConfig)
    # Keys nobody here knows, kept as given (Kafka keeps and warns about them too). Not in the
    # repr: a misspelt secret key (ssl.key.pasword, sasl.jass.config) holds a secret all the same.
    unknown: Mapping[str, str] = field(default_factory=dict, hash=False, repr=False)
    # Keys that were set by the file, the environment or an override (the rest are defaults).
    explicit: frozenset[str] = frozenset()
    # Dynamic broker configs in force (see with_dynamic): cluster-wide and this broker's.
    dynamic_default: Mapping[str, str] = field(default_factory=dict, hash=False)
    dynamic_broker: Mapping[str, str] = field(default_factory=dict, hash=False)
    # The config the dynamic ones were laid over (None: this one is static).
    static: BrokerConfig | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.zookeeper_connection_timeout_ms == -1:
            self._set("zookeeper_connection_timeout_ms", self.zookeeper_session_timeout_ms)
        for spec in _SPECS:
            spec.check(getattr(self, spec.field))
        if not self.zookeeper_connect.strip():
            raise InvalidConfigError("missing required configuration zookeeper.connect")
        if self.leader_imbalance_per_broker_percentage > 100:
            raise InvalidConfigError(
                f"invalid value {self.leader_imbalance_per_broker_percentage} for configuration "
                "leader.imbalance.per.broker.percentage: must be at most 100"
            )
        self._set(
            "listener_security_protocol_map",
            MappingProxyType(dict(self.listener_security_protocol_map)),
        )
        self._set("unknown", MappingProxyType(dict(self.unknown)))
        self._set(
            "max_connections_per_ip_overrides",
            MappingProxyType(dict(self.max_connections_per_ip_overrides)),
        )
        self._check_connection_limits()
        self._set("listeners", self._resolve_listeners("listeners", self.listeners))
        advertised = _with_hostname(self.advertised_listeners or self.listeners)
        self._set(
            "advertised_listeners", self._resolve_listeners("advertised.listeners", advertised)
        )
        self._check_advertised()
        self._resolve_kafka_listeners()
        self._check_inter_broker_listeners()
        self._check_replica_fetch_timing()
        self._check_listener_configs()
        self._set("sasl_settings", MappingProxyType(dict(self.sasl_settings)))
        self._check_sasl()

    def _set(self, name: str, value: object) -> None:
        object.__setattr__(self, name, value)  # only while __post_init__ completes the object

    def _resolve_listeners(self, key: str, endpoints: tuple[EndPoint, ...]) -> tuple[EndPoint, ...]:
        """Check the listeners and give each its security protocol from the protocol map."""
        text = _format(endpoints)
        if not endpoints:
            raise InvalidConfigError(f"invalid value '' for configuration {key}: no listener")
        names = [e.listener_name for e in endpoints]
        if len(set(names)) != len(names):
            raise InvalidConfigError(
                f"invalid value {text!r} for configuration {key}: "
                "each listener must have a different name"
            )
        if key in ("listeners", "kafka.listeners"):
            ports = [e.port for e in endpoints if e.port != 0]
            if len(set(ports)) != len(ports):
                raise InvalidConfigError(
                    f"invalid value {text!r} for configuration {key}: "
                    "each listener must have a different port"
                )
        resolved: list[EndPoint] = []
        for endpoint in endpoints:
            protocol = self.listener_security_protocol_map.get(endpoint.listener_name)
            if protocol is None:
                raise InvalidConfigError(
                    f"invalid value {text!r} for configuration {key}: listener "
                    f"{endpoint.listener_name} is not in listener.security.protocol.map"
                )
            if protocol not in _SUPPORTED_PROTOCOLS:
                raise InvalidConfigError(
                    f"invalid value {text!r} for configuration {key}: listener "
                    f"{endpoint.listener_name} uses security protocol {protocol}: must be one of "
                    f"{', '.join(sorted(_SUPPORTED_PROTOCOLS))}"
                )
            resolved.append(dataclasses.replace(endpoint, security_protocol=protocol))
        return tuple(resolved)

    def _check_advertised(self) -> None:
        text = _format(self.advertised_listeners)
        for endpoint in self.advertised_listeners:
            if endpoint.host in _UNROUTABLE_HOSTS:
                raise InvalidConfigError(
                    f"invalid value {text!r} for configuration advertised.listeners: cannot "
                    f"advertise the non-routable address {endpoint.host}; set "
                    "advertised.listeners to an address other brokers and clients can reach"
                )
        listener_names = {e.listener_name for e in self.listeners}
        advertised_names = {e.listener_name for e in self.advertised_listeners}
        if not advertised_names <= listener_names:
            raise InvalidConfigError(
                f"invalid value {text!r} for configuration advertised.listeners: its listener "
                f"names must be among those of listeners ({', '.join(sorted(listener_names))})"
            )

    def _resolve_kafka_listeners(self) -> None:
        """kafka.listeners and kafka.advertised.listeners follow the rules of listeners and
        advertised.listeners, and their names and ports differ from those of the gRPC
        listeners: both kinds are registered side by side in /brokers/ids/<id>."""
        if not self.kafka_listeners:
            if self.kafka_advertised_listeners:
                raise InvalidConfigError(
                    "invalid value for configuration kafka.advertised.listeners: "
                    "kafka.listeners is empty"
                )
            return
        listeners = self._resolve_listeners("kafka.listeners", self.kafka_listeners)
        advertised = self._resolve_listeners(
            "kafka.advertised.listeners",
            _with_hostname(self.kafka_advertised_listeners or self.kafka_listeners),
        )
        text = _format(listeners)
        grpc_names = {e.listener_name for e in self.listeners}
        clash = sorted({e.listener_name for e in listeners} & grpc_names)
        if clash:
            raise InvalidConfigError(
                f"invalid value {text!r} for configuration kafka.listeners: listener "
                f"{clash[0]} is also in listeners; each listener must have a different name"
            )
        grpc_ports = {e.port for e in self.listeners if e.port != 0}
        taken = sorted({e.port for e in listeners if e.port != 0} & grpc_ports)
        if taken:
            raise InvalidConfigError(
                f"invalid value {text!r} for configuration kafka.listeners: port {taken[0]} "
                "is also in listeners; each listener must have a different port"
            )
        for endpoint in advertised:
            if endpoint.host in _UNROUTABLE_HOSTS:
                raise InvalidConfigError(
                    f"invalid value {_format(advertised)!r} for configuration "
                    f"kafka.advertised.listeners: cannot advertise the non-routable address "
                    f"{endpoint.host}"
                )
        if not {e.listener_name for e in advertised} <= {e.listener_name for e in listeners}:
            raise InvalidConfigError(
                f"invalid value {_format(advertised)!r} for configuration "
                "kafka.advertised.listeners: its listener names must be among those of "
                "kafka.listeners"
            )
        self._set("kafka_listeners", listeners)
        self._set("kafka_advertised_listeners", advertised)

    def _check_inter_broker_listeners(self) -> None:
        """inter.broker.listener.name names an advertised gRPC or Kafka listener; the
        controller's requests go over control.plane.listener.name, which defaults to it and
        must be a gRPC listener (they are gRPC calls)."""
        grpc_names = {e.listener_name for e in self.advertised_listeners}
        kafka_names = {e.listener_name for e in self.kafka_advertised_listeners}
        inter_broker = self.inter_broker_listener_name
        if inter_broker not in grpc_names | kafka_names:
            raise InvalidConfigError(
                f"invalid value {inter_broker!r} for configuration inter.broker.listener.name: "
                "must be the name of a listener in advertised.listeners "
                f"({', '.join(sorted(grpc_names))})"
                + (
                    f" or kafka.advertised.listeners ({', '.join(sorted(kafka_names))})"
                    if kafka_names
                    else ""
                )
            )
        control = self.control_plane_listener_name or None  # empty in a file: unset
        if control is not None and control not in grpc_names:
            raise InvalidConfigError(
                f"invalid value {control!r} for configuration control.plane.listener.name: "
                "must be the name of a gRPC listener in advertised.listeners "
                f"({', '.join(sorted(grpc_names))})"
            )
        if control is not None and control == inter_broker:
            # Kafka's rule: a control plane listener is one of its own (unset, the controller's
            # requests share the inter-broker listener).
            raise InvalidConfigError(
                f"invalid value {control!r} for configuration control.plane.listener.name: "
                "must differ from inter.broker.listener.name (leave it unset to send the "
                "controller's requests over the inter-broker listener)"
            )
        if control is None and inter_broker in kafka_names:
            raise InvalidConfigError(
                f"invalid value {inter_broker!r} for configuration inter.broker.listener.name: "
                "a Kafka listener carries replication only; set control.plane.listener.name to "
                "a gRPC listener in advertised.listeners for the controller's requests "
                f"({', '.join(sorted(grpc_names))})"
            )

    def _check_listener_configs(self) -> None:
        """Each listener's own keys parse, and a TLS listener has a key store (its files are
        read when the listener starts: broker/security/tls.py)."""
        self._set(
            "listener_overrides",
            MappingProxyType(
                {k.upper(): MappingProxyType(dict(v)) for k, v in self.listener_overrides.items()}
            ),
        )
        names = {e.listener_name for e in self.listeners + self.kafka_listeners}
        for name in sorted(set(self.listener_overrides) - names):
            _log.warning("config.unknown_listener_override", listener=name)
        for endpoint in self.listeners + self.kafka_listeners:
            listener = self.listener_config(endpoint.listener_name)
            ssl = listener.ssl
            if ssl.keystore_location is not None and ssl.keystore_key is not None:
                raise InvalidConfigError(
                    f"listener {endpoint.listener_name}: set ssl.keystore.location or "
                    "ssl.keystore.key, not both"
                )
            if (ssl.keystore_key is None) != (ssl.keystore_certificate_chain is None):
                raise InvalidConfigError(
                    f"listener {endpoint.listener_name}: ssl.keystore.key and "
                    "ssl.keystore.certificate.chain are set together"
                )
            if ssl.truststore_location is not None and ssl.truststore_certificates is not None:
                raise InvalidConfigError(
                    f"listener {endpoint.listener_name}: set ssl.truststore.location or "
                    "ssl.truststore.certificates, not both"
                )
            if endpoint.security_protocol in TLS_PROTOCOLS and not listener.ssl.has_key_store:
                raise InvalidConfigError(
                    f"listener {endpoint.listener_name} uses security protocol "
                    f"{endpoint.security_protocol} and has no key store: set "
                    f"ssl.keystore.location (or listener.name.{endpoint.listener_name.lower()}"
                    ".ssl.keystore.location)"
                )

    def listener_config(self, name: str) -> ListenerConfig:
        """The settings of listener ``name`` (gRPC or Kafka): its protocol, and each key with
        its ``listener.name.<name>.<key>`` override laid over the broker-wide value."""
        name = name.upper()
        overrides = self.listener_overrides.get(name, MappingProxyType({}))
        prefix = f"{_LISTENER_PREFIX}{name.lower()}."
        values: dict[str, Any] = {}
        for spec in _SSL_SPECS:
            raw = overrides.get(spec.name)
            if raw is None:
                value = getattr(self, spec.field)
            else:
                value = spec.parse(prefix + spec.name, raw)
            values[spec.field.removeprefix("ssl_")] = value
        protocol = self.listener_security_protocol_map.get(name, "PLAINTEXT")
        return ListenerConfig(name, protocol, SslConfig(**values), overrides)

    def _check_connection_limits(self) -> None:
        # Kafka's rules: the request pool holds at least one request of the largest size, and
        # a per-address limit of 0 makes sense only with addresses allowed more.
        queued = self.queued_max_request_bytes
        if 0 < queued < self.socket_request_max_bytes:
            raise InvalidConfigError(
                f"invalid value {queued} for configuration queued.max.request.bytes: must be "
                f"at least socket.request.max.bytes ({self.socket_request_max_bytes}) or -1"
            )
        if self.max_connections_per_ip == 0 and not self.max_connections_per_ip_overrides:
            raise InvalidConfigError(
                "invalid value 0 for configuration max.connections.per.ip: 0 only when "
                "max.connections.per.ip.overrides is set"
            )

    def _check_replica_fetch_timing(self) -> None:
        # Kafka's rules: a fetch parked on the leader for the full wait must neither time out
        # its socket nor make the follower look lagging.
        wait = self.replica_fetch_wait_max_ms
        if wait > self.replica_socket_timeout_ms:
            raise InvalidConfigError(
                f"invalid value {wait} for configuration replica.fetch.wait.max.ms: must not "
                f"exceed replica.socket.timeout.ms ({self.replica_socket_timeout_ms})"
            )
        if wait > self.replica_lag_time_max_ms:
            raise InvalidConfigError(
                f"invalid value {wait} for configuration replica.fetch.wait.max.ms: must not "
                f"exceed replica.lag.time.max.ms ({self.replica_lag_time_max_ms})"
            )

    # --- derived values ---------------------------------------------------------------------

    @property
    def inter_broker_endpoint(self) -> EndPoint:
        """The advertised endpoint followers fetch from (gRPC or Kafka)."""
        return next(
            e
            for e in self.registered_endpoints
            if e.listener_name == self.inter_broker_listener_name
        )

    @property
    def replicates_over_kafka(self) -> bool:
        """Whether inter.broker.listener.name is a Kafka listener (followers fetch with Kafka's
        Fetch; see broker/server/kafka/leader_endpoint.py)."""
        return any(
            e.listener_name == self.inter_broker_listener_name
            for e in self.kafka_advertised_listeners
        )

    # --- SASL ---------------------------------------------------------------------------------

    def sasl_enabled_mechanisms_for(self, listener: str) -> tuple[str, ...]:
        """``listener.name.<listener>.sasl.enabled.mechanisms``, else sasl.enabled.mechanisms."""
        key = f"listener.name.{listener.lower()}.sasl.enabled.mechanisms"
        raw = self.sasl_settings.get(key)
        return self.sasl_enabled_mechanisms if raw is None else _mechanisms(key, raw)

    def sasl_jaas_config_for(self, listener: str, mechanism: str) -> tuple[str, str] | None:
        """``(key, value)`` of the JAAS config a SASL listener uses for ``mechanism``:
        ``listener.name.<listener>.<mechanism>.sasl.jaas.config``, else sasl.jaas.config;
        None when neither is set."""
        for key in (
            f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config",
            "sasl.jaas.config",
        ):
            value = self.sasl_settings.get(key)
            if value is not None:
                return key, value
        return None

    def sasl_kafka_listeners(self) -> tuple[EndPoint, ...]:
        return tuple(e for e in self.kafka_listeners if e.security_protocol.startswith("SASL_"))

    def sasl_grpc_listeners(self) -> tuple[EndPoint, ...]:
        """The SASL_* gRPC listeners (logins over the Security RPCs, tokens on every call)."""
        return tuple(e for e in self.listeners if e.security_protocol.startswith("SASL_"))

    def _check_sasl(self) -> None:
        """Every SASL listener (Kafka or gRPC) enables only mechanisms this broker has, PLAIN
        with a JAAS config for its users; a SASL listener this broker itself connects to (the
        inter-broker one, and the gRPC control plane one) enables the inter-broker mechanism
        and has a JAAS config for the broker's own login."""
        if self.connections_max_reauth_ms != 0:
            raise InvalidConfigError(
                f"invalid value {self.connections_max_reauth_ms} for configuration "
                "connections.max.reauth.ms: re-authentication (KIP-368) is not supported; "
                "leave it 0"
            )
        for endpoint in self.sasl_kafka_listeners() + self.sasl_grpc_listeners():
            name = endpoint.listener_name
            keys = (
                f"sasl.enabled.mechanisms or listener.name.{name.lower()}.sasl.enabled.mechanisms"
            )
            enabled = self.sasl_enabled_mechanisms_for(name)
            if not enabled:
                raise InvalidConfigError(
                    f"listener {name} is {endpoint.security_protocol} and enables no SASL "
                    f"mechanism: set {keys}"
                )
            unsupported = [m for m in enabled if m not in SASL_MECHANISMS]
            if unsupported:
                raise InvalidConfigError(
                    f"SASL mechanism {unsupported[0]} of listener {name} is not supported "
                    f"(only {', '.join(SASL_MECHANISMS)}): set {keys}"
                    + (" (Kafka's default is GSSAPI)" if unsupported[0] == "GSSAPI" else "")
                )
            if "PLAIN" in enabled and self.sasl_jaas_config_for(name, "PLAIN") is None:
                raise InvalidConfigError(
                    f"listener {name} enables PLAIN but has no JAAS config for its users: set "
                    f"listener.name.{name.lower()}.plain.sasl.jaas.config or sasl.jaas.config"
                )
        own = {self.inter_broker_listener_name: "inter.broker.listener.name"}
        own.setdefault(self.control_plane_listener, "control.plane.listener.name")
        for endpoint in self.advertised_listeners + self.kafka_advertised_listeners:
            role = own.get(endpoint.listener_name)
            if role is not None and endpoint.security_protocol.startswith("SASL_"):
                self._check_broker_login(endpoint.listener_name, role)

    def _check_broker_login(self, listener: str, role: str) -> None:
        mechanism = self.sasl_mechanism_inter_broker_protocol
        if mechanism not in self.sasl_enabled_mechanisms_for(listener):
            raise InvalidConfigError(
                f"sasl.mechanism.inter.broker.protocol {mechanism} must be included in the "
                f"enabled mechanisms of {role} {listener} "
                "when SASL is used for inter-broker communication"
            )
        if self.sasl_jaas_config_for(listener, mechanism) is None:
            raise InvalidConfigError(
                f"{role} {listener} uses SASL {mechanism}: set "
                f"listener.name.{listener.lower()}.{mechanism.lower()}"
                ".sasl.jaas.config or sasl.jaas.config with this broker's username and password"
            )

    @property
    def control_plane_listener(self) -> str:
        """The gRPC listener of the controller's requests: control.plane.listener.name, else
        inter.broker.listener.name (a gRPC one then)."""
        return self.control_plane_listener_name or self.inter_broker_listener_name

    @property
    def bind_addresses(self) -> tuple[str, ...]:
        """``host:port`` for the server to bind, one per listener (empty host: every interface)."""
        return tuple(_bind_address(e) for e in self.listeners)

    @property
    def kafka_bind_addresses(self) -> tuple[str, ...]:
        """``host:port`` to bind, one per Kafka-protocol listener."""
        return tuple(_bind_address(e) for e in self.kafka_listeners)

    @property
    def registered_endpoints(self) -> tuple[EndPoint, ...]:
        """What /brokers/ids/<id> lists: the gRPC endpoints first (the first PLAINTEXT one is
        the znode's host and port, and a listener-less lookup's answer), then the Kafka ones."""
        return self.advertised_listeners + self.kafka_advertised_listeners

    @property
    def message_max_bytes(self) -> int:
        return self.log.max_message_bytes

    # The broker-level defaults of topic keys live in ``log``, parsed by their topic key's row.

    @property
    def min_insync_replicas(self) -> int:
        return self.log.min_insync_replicas

    @property
    def unclean_leader_election_enable(self) -> bool:
        return self.log.unclean_leader_election_enable

    @property
    def compression_type(self) -> str:
        return self.log.compression_type

    @property
    def grpc_max_message_bytes(self) -> int:
        """The largest gRPC message this broker sends or takes (proto/transport.py): a request
        up to socket.request.max.bytes, a fetch answer up to fetch.max.bytes or
        replica.fetch.response.max.bytes, or one batch of message.max.bytes (a fetch answer
        always holds the first batch, however large)."""
        return max(
            self.socket_request_max_bytes,
            self.fetch_max_bytes,
            self.replica_fetch_response_max_bytes,
            self.message_max_bytes,
        )

    # --- building ---------------------------------------------------------------------------

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        overrides: Iterable[str] = (),
        environ: Mapping[str, str] | None = None,
    ) -> BrokerConfig:
        """Merge the file at ``path`` (optional), ``KAFKA_*`` variables and ``key=value`` overrides.

        ``environ`` defaults to ``os.environ``; pass ``{}`` to ignore the environment.
        """
        props: dict[str, str] = {}
        if path is not None:
            props.update(read_properties(path))
        props.update(properties_from_environ(os.environ if environ is None else environ))
        props.update(parse_overrides(overrides))
        return cls.from_properties(props)

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> BrokerConfig:
        """Build from merged ``key -> value`` properties (values as text, as in the file)."""
        values: dict[str, Any] = {}
        for spec in _SPECS:
            key, scale, raw = spec.lookup(props)
            if raw is not None:
                values[spec.field] = spec.parse(key, raw, scale)
        for spec in _SPECS:
            if spec.required and spec.field not in values:
                raise InvalidConfigError(f"missing required configuration {spec.name}")

        known = {key for spec in _SPECS for key, _ in spec.keys_by_precedence()}
        overrides = _listener_overrides(props)
        if overrides:
            values["listener_overrides"] = overrides
        sasl_settings = {k.lower(): v for k, v in props.items() if _is_sasl_setting(k)}
        unknown = {
            k: v
            for k, v in props.items()
            if k not in known
            and not _is_storage_key(k)
            and k not in _KAFKA_KEYS_NOT_USED
            and not k.startswith(_LISTENER_PREFIX)
            and not _is_sasl_setting(k)
        }
        for key in sorted(unknown):  # the key only: a value may be a secret
            meant = _suggestion(key, known | BROKER_TOPIC_KEYS)
            extra = {} if meant is None else {"did_you_mean": meant}
            _log.warning("config.unknown_key", key=key, **extra)
        ignored = sorted(k for k in props if k in _KAFKA_KEYS_NOT_USED)
        if ignored:
            _log.info("config.kafka_keys_not_used", keys=ignored)

        # Topic-level keys (segment.bytes, retention.ms, ...) mean nothing in server.properties;
        # only their broker keys (log.*, message.max.bytes, min.insync.replicas, ...) set the
        # defaults of every topic.
        log = TopicConfig.from_properties(
            {k: v for k, v in props.items() if k in BROKER_TOPIC_KEYS}
        )
        return cls(
            **values,
            log=log,
            sasl_settings=sasl_settings,
            unknown=unknown,
            explicit=frozenset(k for k in props if k not in unknown),
        )

    # --- dynamic broker configs --------------------------------------------------------------

    def with_dynamic(
        self, default: Mapping[str, str], per_broker: Mapping[str, str]
    ) -> BrokerConfig:
        """This (static) config with the dynamic configs laid over it: ``default`` from
        /config/brokers/<default>, ``per_broker`` from /config/brokers/<id>, which wins.
        InvalidConfigError when a key cannot change at run time or a value is bad."""
        merged = {**default, **per_broker}
        validate_dynamic_update(merged)
        base = self.static or self
        values: dict[str, Any] = {}
        for spec in _SPECS:
            if spec.name in merged:
                values[spec.field] = spec.parse(spec.name, merged[spec.name])
        log = TopicConfig.from_properties(
            {k: v for k, v in merged.items() if k in BROKER_TOPIC_KEYS}, base=base.log
        )
        return dataclasses.replace(
            base,
            **values,
            log=log,
            dynamic_default=MappingProxyType(dict(default)),
            dynamic_broker=MappingProxyType(dict(per_broker)),
            static=base,
        )

    # --- describing -------------------------------------------------------------------------

    def describe(self) -> dict[str, tuple[str | None, ConfigSource]]:
        """``key -> (value as text, source)`` for every broker key, for DescribeConfigs.

        Values are the effective ones (advertised.listeners shows the listeners when unset).
        The source is DEFAULT_CONFIG only when nothing set the key, so a value written out
        equal to Kafka's default still counts as set, as in Kafka's STATIC_BROKER_CONFIG.
        """
        out: dict[str, tuple[str | None, ConfigSource]] = {}
        for spec in _SPECS:
            source = self.source_of(name for name, _ in spec.keys_by_precedence())
            value = None if spec.name in SENSITIVE_KEYS else _format(getattr(self, spec.field))
            out[spec.name] = (value, source)
        for topic_key, value in self.log.to_properties().items():
            synonyms = TOPIC_KEY_SYNONYMS[topic_key]
            if synonyms:  # a topic-only key (remote.storage.enable) has no broker default
                out[synonyms[0]] = (value, self.source_of(synonyms))
        return dict(sorted(out.items()))

    def synonyms(self, keys: Iterable[str]) -> list[tuple[str, str | None, ConfigSource]]:
        """Kafka's synonyms of a broker key known by ``keys``, highest precedence first:
        ``(key, value, source)`` for this broker's dynamic value, the cluster-wide one, then
        the static value (server.properties or Kafka's default)."""
        keys = tuple(keys)
        out: list[tuple[str, str | None, ConfigSource]] = [
            (k, self.dynamic_broker[k], ConfigSource.DYNAMIC_BROKER_CONFIG)
            for k in keys
            if k in self.dynamic_broker
        ]
        out += [
            (k, self.dynamic_default[k], ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
            for k in keys
            if k in self.dynamic_default
        ]
        static = self.static or self
        described = static.describe().get(keys[0])
        if described is not None:
            out.append((keys[0], described[0], described[1]))
        return out

    def source_of(self, keys: Iterable[str]) -> ConfigSource:
        """Where the value of a key known by ``keys`` (its synonyms) comes from."""
        keys = tuple(keys)
        if any(k in self.dynamic_broker for k in keys):
            return ConfigSource.DYNAMIC_BROKER_CONFIG
        if any(k in self.dynamic_default for k in keys):
            return ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
        if any(k in self.explicit for k in keys):
            return ConfigSource.STATIC_BROKER_CONFIG
        return ConfigSource.DEFAULT_CONFIG


# --- keys ---------------------------------------------------------------------------------------


def _string(key: str, raw: str) -> str:
    return raw.strip()


def _optional_string(key: str, raw: str) -> str | None:
    return raw.strip() or None


def parse_metrics_listener(value: str) -> tuple[str, int] | None:
    """``http://host:port`` -> (host, port); empty -> None (metrics off). An empty host means
    every interface. ValueError with a one-line reason otherwise."""
    text = value.strip()
    if not text:
        return None
    parts = urlsplit(text)
    if parts.scheme != "http" or not parts.netloc or parts.path not in ("", "/"):
        raise ValueError(f"{text!r} is not of the form http://host:port")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"{text!r} has an invalid port") from None
    if port is None:
        raise ValueError(f"{text!r} has no port")
    return parts.hostname or "", port


def _metrics_listener(key: str, raw: str) -> str:
    try:
        parse_metrics_listener(raw)
    except ValueError as exc:
        raise InvalidConfigError(f"invalid value {raw!r} for configuration {key}: {exc}") from None
    return raw.strip()


def _paths(key: str, raw: str) -> tuple[Path, ...]:
    paths = tuple(Path(p.strip()) for p in raw.split(",") if p.strip())
    if not paths:
        raise InvalidConfigError(f"invalid value {raw!r} for configuration {key}: no directory")
    return paths


def _endpoints(key: str, raw: str) -> tuple[EndPoint, ...]:
    """``NAME://host:port,...``; host may be empty or a bracketed IPv6 address.

    The security protocol is filled in by ``__post_init__`` from the protocol map: here it is
    the listener name, as Kafka's parser does before the map is applied.
    """
    endpoints: list[EndPoint] = []
    for item in (part.strip() for part in raw.split(",")):
        if not item:
            continue
        match = re.fullmatch(r"([A-Za-z0-9_-]+)://(\[[0-9A-Fa-f:.]*\]|[^:\[\]/]*):(\d+)", item)
        if match is None:
            raise InvalidConfigError(
                f"invalid value {raw!r} for configuration {key}: {item!r} is not of the form "
                "NAME://host:port"
            )
        name, host, port = match.group(1).upper(), match.group(2), int(match.group(3))
        if port > 65535:
            raise InvalidConfigError(
                f"invalid value {raw!r} for configuration {key}: port {port} is out of range"
            )
        endpoints.append(EndPoint(name, host.strip("[]"), port, name))
    return tuple(endpoints)


def _protocol_map(key: str, raw: str) -> Mapping[str, str]:
    result: dict[str, str] = {}
    for item in (part.strip() for part in raw.split(",")):
        if not item:
            continue
        name, sep, protocol = item.partition(":")
        if not sep or not name.strip() or not protocol.strip():
            raise InvalidConfigError(
                f"invalid value {raw!r} for configuration {key}: {item!r} is not of the form "
                "LISTENER_NAME:SECURITY_PROTOCOL"
            )
        result[name.strip().upper()] = protocol.strip().upper()
    return MappingProxyType(result)


def _connection_overrides(key: str, raw: str) -> Mapping[str, int]:
    """``host:count,...`` (Kafka's max.connections.per.ip.overrides): an IPv4 or IPv6 address
    or a host name, then a count >= 0."""
    result: dict[str, int] = {}
    for item in (part.strip() for part in raw.split(",")):
        if not item:
            continue
        host, sep, count = item.rpartition(":")
        host = host.strip().strip("[]")
        if not sep or not _HOST_PATTERN.fullmatch(host) or not count.strip().isdigit():
            raise InvalidConfigError(
                f"invalid value {raw!r} for configuration {key}: {item!r} is not of the form "
                "host:count"
            )
        result[host.lower()] = min(int(count), INT_MAX)
    return MappingProxyType(result)


_HOST_PATTERN = re.compile(r"[0-9A-Za-z.:_-]+")


def _mechanisms(key: str, raw: str) -> tuple[str, ...]:
    """A comma-separated list of SASL mechanism names (Kafka's are upper case)."""
    return tuple(m.strip() for m in raw.split(",") if m.strip())


def _upper(key: str, raw: str) -> str:
    return raw.strip().upper()


# The one authorizer this broker has (Kafka's ZooKeeper-mode AclAuthorizer); its older name
# (kafka.security.auth.SimpleAclAuthorizer) was removed in Kafka 3.0.
ACL_AUTHORIZER_CLASS = "kafka.security.authorizer.AclAuthorizer"


def _authorizer_class_name(key: str, raw: str) -> str:
    name = raw.strip()
    if name not in ("", ACL_AUTHORIZER_CLASS):
        raise InvalidConfigError(
            f"invalid value {name!r} for configuration {key}: the only authorizer supported is "
            f"{ACL_AUTHORIZER_CLASS} (leave it empty for none)"
        )
    return name


# Kafka's two replica selectors (KIP-392), broker/replication/replica_selector.py.
REPLICA_SELECTOR_CLASSES = (
    "org.apache.kafka.common.replica.LeaderSelector",
    "org.apache.kafka.common.replica.RackAwareReplicaSelector",
)


def _replica_selector_class(key: str, raw: str) -> str | None:
    name = raw.strip()
    if name and name not in REPLICA_SELECTOR_CLASSES:
        raise InvalidConfigError(
            f"invalid value {name!r} for configuration {key}: class not found (the selectors "
            f"supported are {', '.join(REPLICA_SELECTOR_CLASSES)}; leave it empty for none)"
        )
    return name or None


def _super_users(key: str, raw: str) -> tuple[str, ...]:
    """``User:admin;User:broker``: principals separated by semicolons."""
    users = tuple(part.strip() for part in raw.split(";") if part.strip())
    for user in users:
        principal_type, sep, name = user.partition(":")
        if not sep or not principal_type or not name:
            raise InvalidConfigError(
                f"invalid value {raw!r} for configuration {key}: {user!r} is not a principal "
                "of the form <type>:<name> (User:admin)"
            )
    return users


def _listener_overrides(props: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """``listener.name.<listener>.<key>`` properties by listener name (upper case) and key."""
    result: dict[str, dict[str, str]] = {}
    for key, value in props.items():
        if not key.startswith(_LISTENER_PREFIX):
            continue
        listener, dot, rest = key[len(_LISTENER_PREFIX) :].partition(".")
        if not dot or not listener or not rest:
            raise InvalidConfigError(
                f"invalid configuration {key}: expected listener.name.<listener>.<key>"
            )
        result.setdefault(listener.upper(), {})[rest] = value
    return result


def _pem_store_type(key: str, raw: str) -> str:
    value = raw.strip().upper()
    if value != "PEM":
        raise InvalidConfigError(
            f"invalid value {raw.strip()!r} for configuration {key}: only PEM stores are "
            "supported (convert a JKS or PKCS12 store with keytool and openssl)"
        )
    return value


def _one_of(*allowed: str, lower: bool = True) -> Callable[[str, str], str]:
    def parse(key: str, raw: str) -> str:
        value = raw.strip().lower() if lower else raw.strip()
        if value not in allowed:
            shown = ", ".join(a or "empty" for a in allowed)
            raise InvalidConfigError(
                f"invalid value {raw.strip()!r} for configuration {key}: must be one of {shown}"
            )
        return value

    return parse


_TLS_VERSIONS = ("TLSv1.2", "TLSv1.3")


def _tls_versions(key: str, raw: str) -> tuple[str, ...]:
    versions = tuple(v.strip() for v in raw.split(",") if v.strip())
    bad = [v for v in versions if v not in _TLS_VERSIONS]
    if bad or not versions:
        raise InvalidConfigError(
            f"invalid value {raw.strip()!r} for configuration {key}: "
            f"{'only TLSv1.2 and TLSv1.3 are supported' if bad else 'no protocol'}"
        )
    return versions


def _names(key: str, raw: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in raw.split(",") if v.strip())


_INT, _LONG, _SHORT = ConfigType.INT, ConfigType.LONG, ConfigType.SHORT
_BOOLEAN, _STRING = ConfigType.BOOLEAN, ConfigType.STRING


def _spec(
    name: str,
    field: str,
    parse: ConfigType | Callable[[str, str], Any],
    *,
    minimum: int | None = None,
    required: bool = False,
    fallbacks: tuple[str, ...] = (),
) -> ConfigKey:
    """A broker key's row: typed by ConfigDef type, or read by ``parse`` (a STRING in
    Kafka's ConfigDef, as listeners, paths and names are); ``fallbacks``: older spellings."""
    config_type = parse if isinstance(parse, ConfigType) else _STRING
    parser = None if isinstance(parse, ConfigType) else parse
    return ConfigKey(
        name,
        field,
        config_type,
        minimum=minimum,
        parser=parser,
        synonyms=tuple((key, 1) for key in fallbacks),
        required=required,
    )


_SPECS: tuple[ConfigKey, ...] = (
    _spec("broker.id", "broker_id", _INT, minimum=0, required=True),
    _spec("zookeeper.connect", "zookeeper_connect", _string, required=True),
    _spec("listener.security.protocol.map", "listener_security_protocol_map", _protocol_map),
    _spec("listeners", "listeners", _endpoints),
    _spec("advertised.listeners", "advertised_listeners", _endpoints),
    _spec("inter.broker.listener.name", "inter_broker_listener_name", _upper),
    _spec("control.plane.listener.name", "control_plane_listener_name", _upper),
    _spec("kafka.listeners", "kafka_listeners", _endpoints),
    _spec("kafka.advertised.listeners", "kafka_advertised_listeners", _endpoints),
    _spec("socket.request.max.bytes", "socket_request_max_bytes", _INT, minimum=1),
    _spec("connections.max.idle.ms", "connections_max_idle_ms", _LONG, minimum=1),
    _spec("quota.window.num", "quota_window_num", _INT, minimum=1),
    _spec("quota.window.size.seconds", "quota_window_size_seconds", _INT, minimum=1),
    _spec(
        "leader.replication.throttled.rate", "leader_replication_throttled_rate", _LONG, minimum=0
    ),
    _spec(
        "follower.replication.throttled.rate",
        "follower_replication_throttled_rate",
        _LONG,
        minimum=0,
    ),
    _spec(
        "replica.alter.log.dirs.io.max.bytes.per.second",
        "replica_alter_log_dirs_io_max_bytes_per_second",
        _LONG,
        minimum=0,
    ),
    _spec("replication.quota.window.num", "replication_quota_window_num", _INT, minimum=1),
    _spec(
        "replication.quota.window.size.seconds",
        "replication_quota_window_size_seconds",
        _INT,
        minimum=1,
    ),
    _spec(
        "alter.log.dirs.replication.quota.window.num",
        "alter_log_dirs_replication_quota_window_num",
        _INT,
        minimum=1,
    ),
    _spec(
        "alter.log.dirs.replication.quota.window.size.seconds",
        "alter_log_dirs_replication_quota_window_size_seconds",
        _INT,
        minimum=1,
    ),
    _spec("queued.max.request.bytes", "queued_max_request_bytes", _LONG),
    _spec("max.connections", "max_connections", _INT, minimum=0),
    _spec("max.connections.per.ip", "max_connections_per_ip", _INT, minimum=0),
    _spec(
        "max.connections.per.ip.overrides",
        "max_connections_per_ip_overrides",
        _connection_overrides,
    ),
    _spec("broker.rack", "broker_rack", _optional_string),
    _spec("replica.selector.class", "replica_selector_class", _replica_selector_class),
    _spec("metrics.listener", "metrics_listener", _metrics_listener),
    _spec("log.dirs", "log_dirs", _paths, fallbacks=("log.dir",)),
    _spec("zookeeper.session.timeout.ms", "zookeeper_session_timeout_ms", _INT, minimum=1),
    _spec("zookeeper.connection.timeout.ms", "zookeeper_connection_timeout_ms", _INT, minimum=1),
    _spec("zookeeper.set.acl", "zookeeper_set_acl", _BOOLEAN),
    _spec("num.partitions", "num_partitions", _INT, minimum=1),
    _spec("default.replication.factor", "default_replication_factor", _INT, minimum=1),
    _spec("replica.lag.time.max.ms", "replica_lag_time_max_ms", _LONG, minimum=0),
    _spec("replica.fetch.wait.max.ms", "replica_fetch_wait_max_ms", _INT, minimum=0),
    _spec("replica.fetch.min.bytes", "replica_fetch_min_bytes", _INT, minimum=0),
    _spec("replica.fetch.max.bytes", "replica_fetch_max_bytes", _INT, minimum=0),
    _spec(
        "replica.fetch.response.max.bytes",
        "replica_fetch_response_max_bytes",
        _INT,
        minimum=0,
    ),
    _spec("fetch.max.bytes", "fetch_max_bytes", _INT, minimum=0),
    _spec(
        "max.incremental.fetch.session.cache.slots",
        "max_incremental_fetch_session_cache_slots",
        _INT,
        minimum=0,
    ),
    _spec(
        "min.incremental.fetch.session.eviction.ms",
        "min_incremental_fetch_session_eviction_ms",
        _LONG,
        minimum=0,
    ),
    _spec("replica.fetch.backoff.ms", "replica_fetch_backoff_ms", _INT, minimum=0),
    _spec("num.replica.fetchers", "num_replica_fetchers", _INT, minimum=1),
    _spec("replica.socket.timeout.ms", "replica_socket_timeout_ms", _INT, minimum=0),
    _spec(
        "replica.high.watermark.checkpoint.interval.ms",
        "replica_high_watermark_checkpoint_interval_ms",
        _LONG,
        minimum=1,
    ),
    _spec("request.timeout.ms", "request_timeout_ms", _INT, minimum=0),
    _spec("auto.create.topics.enable", "auto_create_topics_enable", _BOOLEAN),
    _spec("auto.leader.rebalance.enable", "auto_leader_rebalance_enable", _BOOLEAN),
    _spec(
        "leader.imbalance.check.interval.seconds",
        "leader_imbalance_check_interval_seconds",
        _LONG,
        minimum=1,
    ),
    _spec(
        "leader.imbalance.per.broker.percentage",
        "leader_imbalance_per_broker_percentage",
        _INT,
        minimum=0,
    ),
    _spec("controlled.shutdown.enable", "controlled_shutdown_enable", _BOOLEAN),
    _spec("controlled.shutdown.max.retries", "controlled_shutdown_max_retries", _INT, minimum=0),
    _spec(
        "controlled.shutdown.retry.backoff.ms",
        "controlled_shutdown_retry_backoff_ms",
        _LONG,
        minimum=0,
    ),
    _spec("delete.topic.enable", "delete_topic_enable", _BOOLEAN),
    _spec("offsets.topic.num.partitions", "offsets_topic_num_partitions", _INT, minimum=1),
    _spec(
        "offsets.topic.replication.factor",
        "offsets_topic_replication_factor",
        _SHORT,
        minimum=1,
    ),
    _spec("group.initial.rebalance.delay.ms", "group_initial_rebalance_delay_ms", _INT, minimum=0),
    _spec("group.min.session.timeout.ms", "group_min_session_timeout_ms", _INT, minimum=0),
    _spec("group.max.session.timeout.ms", "group_max_session_timeout_ms", _INT, minimum=0),
    _spec("offset.metadata.max.bytes", "offset_metadata_max_bytes", _INT, minimum=0),
    _spec(
        "log.flush.offset.checkpoint.interval.ms",
        "log_flush_offset_checkpoint_interval_ms",
        _INT,
        minimum=0,
    ),
    _spec(
        "log.retention.check.interval.ms",
        "log_retention_check_interval_ms",
        _LONG,
        minimum=1,
    ),
    _spec("producer.id.expiration.ms", "producer_id_expiration_ms", _INT, minimum=1),
    _spec(
        "producer.id.expiration.check.interval.ms",
        "producer_id_expiration_check_interval_ms",
        _INT,
        minimum=1,
    ),
    _spec("log.cleaner.enable", "log_cleaner_enable", _BOOLEAN),
    _spec("log.cleaner.threads", "log_cleaner_threads", _INT, minimum=0),
    _spec("log.cleaner.backoff.ms", "log_cleaner_backoff_ms", _LONG, minimum=0),
    _spec("log.cleaner.dedupe.buffer.size", "log_cleaner_dedupe_buffer_size", _LONG, minimum=0),
    _spec("log.cleaner.io.buffer.size", "log_cleaner_io_buffer_size", _INT, minimum=0),
    _spec("offsets.topic.segment.bytes", "offsets_topic_segment_bytes", _INT, minimum=1),
    _spec(
        "transaction.state.log.num.partitions",
        "transaction_state_log_num_partitions",
        _INT,
        minimum=1,
    ),
    _spec(
        "transaction.state.log.replication.factor",
        "transaction_state_log_replication_factor",
        _SHORT,
        minimum=1,
    ),
    _spec("transaction.state.log.min.isr", "transaction_state_log_min_isr", _INT, minimum=1),
    _spec(
        "transaction.state.log.segment.bytes",
        "transaction_state_log_segment_bytes",
        _INT,
        minimum=1,
    ),
    _spec("transaction.max.timeout.ms", "transaction_max_timeout_ms", _INT, minimum=1),
    _spec("transactional.id.expiration.ms", "transactional_id_expiration_ms", _INT, minimum=1),
    _spec(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        "transaction_abort_timed_out_transaction_cleanup_interval_ms",
        _INT,
        minimum=1,
    ),
    _spec(
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        "transaction_remove_expired_transaction_cleanup_interval_ms",
        _INT,
        minimum=1,
    ),
    _spec("offsets.topic.compression.codec", "offsets_topic_compression_codec", _INT, minimum=0),
    _spec("offsets.commit.required.acks", "offsets_commit_required_acks", _SHORT, minimum=-1),
    _spec("offsets.commit.timeout.ms", "offsets_commit_timeout_ms", _INT, minimum=1),
    _spec("offsets.load.buffer.size", "offsets_load_buffer_size", _INT, minimum=1),
    _spec("offsets.retention.minutes", "offsets_retention_minutes", _INT, minimum=1),
    _spec(
        "offsets.retention.check.interval.ms",
        "offsets_retention_check_interval_ms",
        _LONG,
        minimum=1,
    ),
    _spec("sasl.enabled.mechanisms", "sasl_enabled_mechanisms", _mechanisms),
    _spec("sasl.mechanism.inter.broker.protocol", "sasl_mechanism_inter_broker_protocol", _string),
    _spec("connections.max.reauth.ms", "connections_max_reauth_ms", _LONG, minimum=0),
    _spec(
        "connection.failed.authentication.delay.ms",
        "connection_failed_authentication_delay_ms",
        _INT,
        minimum=0,
    ),
    _spec("authorizer.class.name", "authorizer_class_name", _authorizer_class_name),
    _spec("super.users", "super_users", _super_users),
    _spec("allow.everyone.if.no.acl.found", "allow_everyone_if_no_acl_found", _BOOLEAN),
)

# The TLS keys, also read per listener (listener.name.<listener>.<key>, see listener_config).
_SSL_SPECS: tuple[ConfigKey, ...] = (
    _spec("ssl.keystore.type", "ssl_keystore_type", _pem_store_type),
    _spec("ssl.keystore.location", "ssl_keystore_location", _optional_string),
    _spec("ssl.keystore.key", "ssl_keystore_key", _optional_string),
    _spec("ssl.keystore.certificate.chain", "ssl_keystore_certificate_chain", _optional_string),
    _spec("ssl.key.password", "ssl_key_password", _optional_string),
    _spec("ssl.truststore.type", "ssl_truststore_type", _pem_store_type),
    _spec("ssl.truststore.location", "ssl_truststore_location", _optional_string),
    _spec("ssl.truststore.certificates", "ssl_truststore_certificates", _optional_string),
    _spec("ssl.client.auth", "ssl_client_auth", _one_of("none", "requested", "required")),
    _spec("ssl.principal.mapping.rules", "ssl_principal_mapping_rules", _string),
    _spec("ssl.enabled.protocols", "ssl_enabled_protocols", _tls_versions),
    _spec("ssl.protocol", "ssl_protocol", _one_of("TLS", *_TLS_VERSIONS, lower=False)),
    _spec("ssl.cipher.suites", "ssl_cipher_suites", _names),
    _spec(
        "ssl.endpoint.identification.algorithm",
        "ssl_endpoint_identification_algorithm",
        _one_of("https", ""),
    ),
)
_SPECS += _SSL_SPECS

# Keys whose value DescribeConfigs never shows (Kafka's PASSWORD keys and the inline key).
SENSITIVE_KEYS = frozenset(
    {"ssl.key.password", "ssl.keystore.key", "ssl.keystore.password", "ssl.truststore.password"}
)

# Every key this broker reads -> its type in Kafka's ConfigDef (DescribeConfigs' config_type).
CONFIG_TYPES: Mapping[str, ConfigType] = {
    **TOPIC_KEY_TYPES,
    **{spec.name: spec.type for spec in _SPECS},
}

# The keys a running broker takes from /config/brokers (Kafka's DynamicBrokerConfig, those of
# them this broker has): the defaults of every topic key but log.message.format.version (as
# Kafka: a deprecated key that a restart reads), the cleaner's, producer-id expiry and the
# replication throttles (Kafka's DynamicConfig.Broker).
DYNAMIC_KEYS: frozenset[str] = (BROKER_TOPIC_KEYS - {"log.message.format.version"}) | frozenset(
    {
        "log.cleaner.threads",
        "log.cleaner.backoff.ms",
        "log.cleaner.dedupe.buffer.size",
        "log.cleaner.io.buffer.size",
        "producer.id.expiration.ms",
        "leader.replication.throttled.rate",
        "follower.replication.throttled.rate",
        "replica.alter.log.dirs.io.max.bytes.per.second",
    }
)


def validate_dynamic_update(props: Mapping[str, str]) -> None:
    """InvalidConfigError with Kafka's message when a key cannot change without a restart (or
    is no key at all), or a value is invalid."""
    known = {spec.name for spec in _SPECS} | BROKER_TOPIC_KEYS
    unknown = sorted(k for k in props if k not in known)
    if unknown:
        raise InvalidConfigError(f"Unknown broker configs: Set({', '.join(unknown)})")
    static = sorted(k for k in props if k not in DYNAMIC_KEYS)
    if static:
        raise InvalidConfigError(
            f"Cannot update these configs dynamically: Set({', '.join(static)})"
        )
    for spec in _SPECS:
        if spec.name in props:
            spec.parse(spec.name, props[spec.name])
    TopicConfig.from_properties({k: v for k, v in props.items() if k in BROKER_TOPIC_KEYS})


# Keys of Kafka's stock server.properties that have no meaning here (thread pools, socket
# buffers): accepted quietly so that Kafka's own file works unchanged.
_KAFKA_KEYS_NOT_USED = frozenset(
    {
        "num.network.threads",
        "num.io.threads",
        "socket.send.buffer.bytes",
        "socket.receive.buffer.bytes",
        "num.recovery.threads.per.data.dir",
        "security.inter.broker.protocol",
        # Kafka's log.* keys for mechanisms this broker does not have
        "log.flush.scheduler.interval.ms",
        "log.flush.start.offset.checkpoint.interval.ms",
        "log.cleaner.io.buffer.load.factor",
        "log.cleaner.io.max.bytes.per.second",
    }
)


# The SASL mechanisms this broker's listeners can enable (broker/security/sasl).
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")

_SASL_LISTENER_KEY = re.compile(
    r"listener\.name\.[^.]+\.(?:sasl\.enabled\.mechanisms|[^.]+\.sasl\.jaas\.config)",
    re.IGNORECASE,
)


def _is_sasl_setting(key: str) -> bool:
    """sasl.jaas.config and the per-listener SASL keys (kept in BrokerConfig.sasl_settings)."""
    return key == "sasl.jaas.config" or _SASL_LISTENER_KEY.fullmatch(key) is not None


def _is_storage_key(key: str) -> bool:
    return key in BROKER_TOPIC_KEYS


def _suggestion(key: str, known: Iterable[str]) -> str | None:
    """The known key ``key`` is most probably a misspelling of, if any (``log.retention.hour``
    -> ``log.retention.hours``)."""
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.8)
    return close[0] if close else None


def _format(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        return ",".join(f"{k}:{v}" for k, v in value.items())
    if isinstance(value, tuple):
        return ",".join(v.connection_string if isinstance(v, EndPoint) else str(v) for v in value)
    return str(value)


def _with_hostname(endpoints: tuple[EndPoint, ...]) -> tuple[EndPoint, ...]:
    # As Kafka: an advertised listener without a host advertises the machine's canonical name.
    if all(e.host for e in endpoints):
        return endpoints
    hostname = socket.getfqdn()
    return tuple(e if e.host else dataclasses.replace(e, host=hostname) for e in endpoints)


def _bind_address(endpoint: EndPoint) -> str:
    host = endpoint.host or "0.0.0.0"
    return f"[{host}]:{endpoint.port}" if ":" in host else f"{host}:{endpoint.port}"


# --- sources ------------------------------------------------------------------------------------

_WHITESPACE = " \t\f"


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java properties text (the ``server.properties`` format) into ``key -> value``,
    with javaproperties (``java.util.Properties.load``'s rules: comments, continuation lines,
    ``=``/``:``/whitespace separators, escapes). Unlike Java, trailing whitespace of a value is
    dropped too. A key given twice keeps its last value. A malformed ``\\uXXXX`` escape is
    InvalidConfigError."""
    try:
        parsed = javaproperties.loads(text)
    except ValueError as exc:  # javaproperties' InvalidUEscapeError
        raise InvalidConfigError(f"malformed \\uXXXX escape in properties: {exc}") from None
    return {key: value.rstrip(_WHITESPACE) for key, value in parsed.items()}


def read_properties(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read a properties file (UTF-8; Java's default of ISO-8859-1 only differs beyond ASCII)."""
    return parse_properties(Path(path).read_text(encoding="utf-8"))


# The container images' launcher variables: they configure the JVM or the script, not Kafka.
_NOT_CONFIG_ENV = frozenset(
    {
        "KAFKA_VERSION",
        "KAFKA_HOME",
        "KAFKA_DEBUG",
        "KAFKA_LOG4J_ROOT_LOGLEVEL",
        "KAFKA_LOG4J_LOGGERS",
        "KAFKA_TOOLS_LOG4J_LOGLEVEL",
    }
)


def properties_from_environ(environ: Mapping[str, str]) -> dict[str, str]:
    """``KAFKA_<KEY>`` variables as properties: ``_`` -> ``.``, ``__`` -> ``_``, ``___`` -> ``-``.

    >>> properties_from_environ({"KAFKA_BROKER_ID": "1", "KAFKA_HEAP_OPTS": "-Xmx1G"})
    {'broker.id': '1'}
    """
    result: dict[str, str] = {}
    for name, value in environ.items():
        if not name.startswith("KAFKA_") or name in _NOT_CONFIG_ENV or name.endswith("_OPTS"):
            continue
        encoded = name[len("KAFKA_") :].lower()
        if not encoded:
            continue
        # The images' order: ___ first, then __, then _ (with placeholders in between).
        key = encoded.replace("___", "\0").replace("__", "\1").replace("_", ".")
        result[key.replace("\0", "-").replace("\1", "_")] = value
    return result


def parse_overrides(items: Iterable[str]) -> dict[str, str]:
    """``key=value`` strings (``--override`` arguments) as properties; the value may contain ``=``.

    >>> parse_overrides(["broker.id=2", "listeners=PLAINTEXT://:9093"])
    {'broker.id': '2', 'listeners': 'PLAINTEXT://:9093'}
    """
    result: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InvalidConfigError(f"override {item!r} is not of the form key=value")
        result[key.strip()] = value.strip()
    return result
