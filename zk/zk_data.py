"""Every znode path and JSON layout of the cluster, as Kafka's ZooKeeper mode writes them.

Nobody else builds these paths or bytes: zk.zk_store reads and writes znodes with the
functions here. JSON is compact (no spaces), UTF-8, and has Kafka's field names and version
numbers, in the field order Kafka's own brokers happen to write. Timestamps are milliseconds
since the epoch, written as strings where Kafka writes them as strings.

``/brokers/ids/<id>`` (ephemeral, one per live broker; version 5)::

    {"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},
     "endpoints":["PLAINTEXT://host:9092"],"jmx_port":-1,"port":9092,"host":"host",
     "version":5,"timestamp":"1700000000000"}

  ``host``/``port`` repeat the first PLAINTEXT endpoint (null/-1 without one) for old readers;
  ``"rack":"r1"`` follows ``host`` when the broker has a rack.

``/brokers/topics/<topic>`` (persistent; version 3; partition ids as strings, replicas in
assignment order, the first being the preferred leader)::

    {"partitions":{"0":[2,1,0],"1":[0,2,1]},"topic_id":"<22-char base64url uuid>",
     "adding_replicas":{},"removing_replicas":{},"version":3}

``/brokers/topics/<topic>/partitions/<partition>/state`` (persistent; leader -1 = none; every
write is conditional on the znode version, which Kafka calls the partition epoch)::

    {"controller_epoch":1,"leader":2,"version":1,"leader_epoch":0,"isr":[2,1,0]}

``/controller`` (ephemeral, held by the elected broker)::

    {"version":2,"brokerid":1,"timestamp":"1700000000000","kraftControllerEpoch":-1}

``/controller_epoch`` (persistent): the epoch as decimal text, e.g. ``3``. Its znode version
fences controller writes (see zk_store).

``/admin/delete_topics/<topic>``: empty; its existence asks the controller to delete the topic.

``/admin/reassign_partitions``: partition reassignments asked for the old way (Kafka's tools before
KIP-455 wrote it; AlterPartitionReassignments supersedes it): the target replicas of each
partition. The controller starts them when the znode appears and removes each entry as its
reassignment completes, the znode with the last one. Other keys of an entry (``log_dirs``) are
ignored::

    {"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[1,2,3]}]}

``/admin/preferred_replica_election`` and ``/isr_change_notification/isr_change_<10-digit seq>``
(a sequential znode per notification) share one shape::

    {"version":1,"partitions":[{"topic":"orders","partition":0}]}

``/log_dir_event_notification/log_dir_event_<10-digit seq>``: a broker's log dir went offline
(event 1, the only one); the controller asks that broker which replicas it lost::

    {"version":1,"broker":2,"event":1}

``/config/topics/<topic>`` (values always strings)::

    {"version":1,"config":{"cleanup.policy":"compact"}}

``/config/users/<user>``: a user's SCRAM credentials, one key per mechanism (ScramCredentialUtils'
format, see broker/security/sasl/scram.py), beside the user's client quotas when it has any.
The user name in the path is sanitized as Kafka's Sanitizer does (URL-encoded, ``%20`` for a
space, ``*`` as ``%2A``), and so is it in the notification's ``users/<user>``::

    {"version":1,"config":{"SCRAM-SHA-256":"salt=...,stored_key=...,server_key=...,iterations=4096"}}

Client quotas (KIP-55) live in the same config shape, values as strings (Kafka writes the
double, ``"1048576.0"``), at one of these paths, ``<default>`` standing for every user or
client-id without a quota of its own; the notification's entity path is the part after
``/config/`` (``clients/app``, ``users/alice``, ``users/alice/clients/app``)::

    /config/users/<user>/clients/<client-id>     /config/users/<user>/clients/<default>
    /config/users/<user>                         /config/users/<default>/clients/<client-id>
    /config/users/<default>/clients/<default>    /config/users/<default>
    /config/clients/<client-id>                  /config/clients/<default>

    {"version":1,"config":{"producer_byte_rate":"1048576.0","request_percentage":"50.0"}}

``/cluster/id`` (note the version is a string here)::

    {"version":"1","id":"<22-char base64url uuid>"}

``/latest_producer_id_block`` (both ends inclusive, as strings; empty before the first block)::

    {"version":1,"broker":1,"block_start":"0","block_end":"999"}

``/kafka-acl/<ResourceType>/<name>`` (LITERAL patterns) and
``/kafka-acl-extended/prefixed/<ResourceType>/<name>`` (PREFIXED): a resource's ACLs, the type
as Kafka spells it (Topic, Group, Cluster, TransactionalId, DelegationToken, User); every
write is conditional on the znode version, and the znode goes when its last ACL does::

    {"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",
     "operation":"Read","host":"*"}]}

``/kafka-acl-changes/acl_changes_<10-digit seq>``: a LITERAL resource's ACLs changed; the data
is ``<RESOURCE TYPE>:<name>`` as text (``TOPIC:orders``: Kafka writes the enum's name; any case
is read). ``/kafka-acl-extended-changes/acl_changes_<seq>`` is the same for PREFIXED::

    {"version":1,"resourceType":"TOPIC","name":"sales-","patternType":"PREFIXED"}
"""

from __future__ import annotations

import base64
import json
import time
import urllib.parse
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from minikafka.proto.acl import (
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    kafka_name,
    parse_kafka_name,
)
from minikafka.proto.cluster_state import PartitionState, ProducerIdBlock
from minikafka.proto.common import EndPoint, TopicPartition
from minikafka.zk.errors import ZkDataError

# --- paths -------------------------------------------------------------------------------------

BROKERS_PATH = "/brokers"
BROKER_IDS_PATH = "/brokers/ids"
TOPICS_PATH = "/brokers/topics"
CONTROLLER_PATH = "/controller"
CONTROLLER_EPOCH_PATH = "/controller_epoch"
ADMIN_PATH = "/admin"
DELETE_TOPICS_PATH = "/admin/delete_topics"
PREFERRED_REPLICA_ELECTION_PATH = "/admin/preferred_replica_election"
REASSIGN_PARTITIONS_PATH = "/admin/reassign_partitions"
ISR_CHANGE_NOTIFICATION_PATH = "/isr_change_notification"
ISR_CHANGE_PREFIX = "isr_change_"
LOG_DIR_EVENT_NOTIFICATION_PATH = "/log_dir_event_notification"
LOG_DIR_EVENT_PREFIX = "log_dir_event_"
LOG_DIR_FAILURE_EVENT = 1  # the only event Kafka defines
CONFIG_PATH = "/config"
CONFIG_TOPICS_PATH = "/config/topics"
CONFIG_BROKERS_PATH = "/config/brokers"
CONFIG_USERS_PATH = "/config/users"
CONFIG_CLIENTS_PATH = "/config/clients"
DEFAULT_QUOTA_ENTITY = "<default>"  # a user or client-id quota that applies to all without one
CONFIG_CHANGES_PATH = "/config/changes"
CONFIG_CHANGE_PREFIX = "config_change_"
DEFAULT_BROKER_ENTITY = "<default>"  # /config/brokers/<default>: the cluster-wide defaults
CLUSTER_PATH = "/cluster"
CLUSTER_ID_PATH = "/cluster/id"
PRODUCER_ID_BLOCK_PATH = "/latest_producer_id_block"
DELEGATION_TOKENS_PATH = "/delegation_token"  # Kafka's; no delegation tokens here yet
LITERAL_ACL_PATH = "/kafka-acl"
EXTENDED_ACL_PATH = "/kafka-acl-extended"
LITERAL_ACL_CHANGES_PATH = "/kafka-acl-changes"
EXTENDED_ACL_CHANGES_PATH = "/kafka-acl-extended-changes"
ACL_CHANGE_PREFIX = "acl_changes_"

# Created at startup by every broker, like Kafka's persistent paths; the rest appear on demand.
PERSISTENT_PATHS = (
    BROKER_IDS_PATH,
    TOPICS_PATH,
    DELETE_TOPICS_PATH,
    ISR_CHANGE_NOTIFICATION_PATH,
    LOG_DIR_EVENT_NOTIFICATION_PATH,
    CONFIG_TOPICS_PATH,
    CONFIG_BROKERS_PATH,
    CONFIG_USERS_PATH,
    CONFIG_CHANGES_PATH,
    PRODUCER_ID_BLOCK_PATH,
)

# Kafka's ZkData.SensitiveRootPaths: what is under them (SCRAM credentials, dynamic broker
# configs that may hold passwords, delegation tokens) is never world-readable when
# zookeeper.set.acl is on (zk/zk_auth.py). A prefix, as Kafka compares it.
SENSITIVE_ROOT_PATHS = (CONFIG_USERS_PATH, CONFIG_BROKERS_PATH, DELEGATION_TOKENS_PATH)


def is_sensitive_path(path: str) -> bool:
    """Whether ``path`` is at or under one of Kafka's sensitive root paths.

    >>> is_sensitive_path("/config/users/alice"), is_sensitive_path("/config/topics/t")
    (True, False)
    """
    return path.startswith(SENSITIVE_ROOT_PATHS)


NO_LEADER = -1
INITIAL_CONTROLLER_EPOCH = 0  # /controller_epoch before any election; the first controller is 1
PRODUCER_ID_BLOCK_SIZE = 1000


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS_PATH}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{TOPICS_PATH}/{topic}"


def topic_partitions_path(topic: str) -> str:
    return f"{topic_path(topic)}/partitions"


def partition_path(topic: str, partition: int) -> str:
    return f"{topic_partitions_path(topic)}/{partition}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{partition_path(topic, partition)}/state"


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS_PATH}/{topic}"


def topic_config_path(topic: str) -> str:
    return f"{CONFIG_TOPICS_PATH}/{topic}"


def broker_config_path(entity: str) -> str:
    """``entity`` is a broker id or DEFAULT_BROKER_ENTITY."""
    return f"{CONFIG_BROKERS_PATH}/{entity}"


def sanitize_entity_name(name: str) -> str:
    """A user name as a znode name, as Kafka's Sanitizer.sanitize: UTF-8, URL-encoded, every
    character but letters, digits and ``.-_~`` as %XX.

    >>> sanitize_entity_name("CN=alice, O=x*")
    'CN%3Dalice%2C%20O%3Dx%2A'
    """
    return urllib.parse.quote(name, safe="")


def desanitize_entity_name(sanitized: str) -> str:
    return urllib.parse.unquote(sanitized)


def user_config_path(user: str) -> str:
    """``/config/users/<sanitized user>``."""
    return f"{CONFIG_USERS_PATH}/{sanitize_entity_name(user)}"


@dataclass(frozen=True)
class QuotaEntity:
    """A client quota's entity: a user, a client-id or a user's client-id; each name is
    None (not part of the entity), DEFAULT_QUOTA_ENTITY or a name (unsanitized).

    >>> QuotaEntity(user="CN=a b", client_id="app").entity_path
    'users/CN%3Da%20b/clients/app'
    >>> QuotaEntity.from_entity_path("clients/<default>")
    QuotaEntity(user=None, client_id='<default>')
    """

    user: str | None = None
    client_id: str | None = None

    def __post_init__(self) -> None:
        if self.user is None and self.client_id is None:
            raise ValueError("a quota entity names a user, a client-id or both")

    @property
    def entity_path(self) -> str:
        """The path under /config, which is also the notification's ``entity_path``."""
        user = None if self.user is None else f"users/{_sanitize_quota_name(self.user)}"
        client = (
            None if self.client_id is None else f"clients/{_sanitize_quota_name(self.client_id)}"
        )
        return "/".join(part for part in (user, client) if part is not None)

    @property
    def path(self) -> str:
        return f"/config/{self.entity_path}"

    @classmethod
    def from_entity_path(cls, entity_path: str) -> QuotaEntity:
        """The inverse of ``entity_path``; ValueError when it names no quota entity."""
        parts = entity_path.split("/")
        if len(parts) == 2 and parts[0] in ("users", "clients"):
            name = _desanitize_quota_name(parts[1])
            return cls(user=name) if parts[0] == "users" else cls(client_id=name)
        if len(parts) == 4 and parts[0] == "users" and parts[2] == "clients":
            return cls(_desanitize_quota_name(parts[1]), _desanitize_quota_name(parts[3]))
        raise ValueError(f"{entity_path!r} is no client quota entity")


def _sanitize_quota_name(name: str) -> str:
    # <default> is written as it is, not URL-encoded, as Kafka's ConfigEntityName.Default.
    return name if name == DEFAULT_QUOTA_ENTITY else sanitize_entity_name(name)


def _desanitize_quota_name(name: str) -> str:
    return name if name == DEFAULT_QUOTA_ENTITY else desanitize_entity_name(name)


def decode_quota_config(entity: QuotaEntity, data: bytes) -> dict[str, str]:
    """A quota entity's znode: the same shape as a topic's config (a user's holds its SCRAM
    credentials too)."""
    return _decode_config(entity.path, data)


def acl_store_path(pattern_type: PatternType) -> str:
    """Where the ACLs of one pattern type live: /kafka-acl, /kafka-acl-extended/prefixed."""
    if pattern_type is PatternType.LITERAL:
        return LITERAL_ACL_PATH
    if pattern_type is PatternType.PREFIXED:
        return f"{EXTENDED_ACL_PATH}/{pattern_type.name.lower()}"
    raise ValueError(f"no ACLs are stored for pattern type {pattern_type.name}")


def acl_resource_type_path(pattern_type: PatternType, resource_type: ResourceType) -> str:
    return f"{acl_store_path(pattern_type)}/{kafka_name(resource_type)}"


def acl_path(pattern: ResourcePattern) -> str:
    return f"{acl_resource_type_path(pattern.pattern_type, pattern.resource_type)}/{pattern.name}"


def acl_changes_path(pattern_type: PatternType, node_name: str = "") -> str:
    """The change notifications of a pattern type (LITERAL: /kafka-acl-changes, the rest
    /kafka-acl-extended-changes), or one of them."""
    root = (
        LITERAL_ACL_CHANGES_PATH
        if pattern_type is PatternType.LITERAL
        else EXTENDED_ACL_CHANGES_PATH
    )
    return f"{root}/{node_name}" if node_name else root


def config_change_path(node_name: str = "") -> str:
    """The path of one config change notification, or (no name) the sequential prefix."""
    return f"{CONFIG_CHANGES_PATH}/{node_name or CONFIG_CHANGE_PREFIX}"


def isr_change_path(node_name: str = "") -> str:
    """The path of one notification, or (no name) the prefix to create a sequential node at."""
    return f"{ISR_CHANGE_NOTIFICATION_PATH}/{node_name or ISR_CHANGE_PREFIX}"


def log_dir_event_path(node_name: str = "") -> str:
    """The path of one log dir event, or (no name) the prefix to create a sequential node at."""
    return f"{LOG_DIR_EVENT_NOTIFICATION_PATH}/{node_name or LOG_DIR_EVENT_PREFIX}"


# --- values ------------------------------------------------------------------------------------
# (PartitionState, ProducerIdBlock and Versioned are proto/cluster_state.py's: a partition's
# leader, in broker/replication, uses them too. Their JSON is written and read here only.)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def random_uuid_base64() -> str:
    """A random UUID as Kafka prints one: 22 chars of unpadded base64url, never starting '-'.

    Used for topic ids and the cluster id. Kafka avoids a leading '-' so that an id can be
    passed to a command-line tool as an argument.
    """
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode("ascii")
        if not text.startswith("-"):
            return text


@dataclass(frozen=True)
class BrokerRegistration:
    """The content of ``/brokers/ids/<id>``. ``features`` is written empty and not kept."""

    broker_id: int
    endpoints: tuple[EndPoint, ...]
    timestamp_ms: int = field(default_factory=now_ms)
    jmx_port: int = -1
    rack: str | None = None
    version: int = 5

    @property
    def plaintext_endpoint(self) -> EndPoint | None:
        return next((e for e in self.endpoints if e.security_protocol == "PLAINTEXT"), None)


@dataclass(frozen=True)
class TopicAssignment:
    """The content of ``/brokers/topics/<topic>``: assigned replicas per partition.

    ``topic_id`` is None only for topics written by software that predates topic ids.
    """

    topic: str
    topic_id: str | None
    partitions: Mapping[int, tuple[int, ...]]
    adding_replicas: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    removing_replicas: Mapping[int, tuple[int, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class ControllerRegistration:
    """The content of ``/controller``."""

    broker_id: int
    timestamp_ms: int = field(default_factory=now_ms)
    kraft_controller_epoch: int = -1  # Kafka's marker for a ZooKeeper-mode (not KRaft) controller


# --- codecs ------------------------------------------------------------------------------------


def _dump(value: Mapping[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


class _Fields:
    """Typed access to a decoded JSON object; any mismatch is a ZkDataError naming the path."""

    def __init__(self, path: str, data: bytes) -> None:
        self.path = path
        self.data = data
        try:
            value = json.loads(data)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ZkDataError(path, f"not JSON ({exc})", data) from None
        if not isinstance(value, dict):
            raise ZkDataError(path, "not a JSON object", data)
        self.obj: dict[str, Any] = value

    def error(self, reason: str) -> ZkDataError:
        return ZkDataError(self.path, reason, self.data)

    def get(self, key: str) -> Any:
        if key not in self.obj:
            raise self.error(f"missing {key!r}")
        return self.obj[key]

    def integer(self, key: str) -> int:
        return self.as_int(repr(key), self.get(key))

    def as_int(self, what: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(f"{what} is not an integer")
        return value

    def string(self, key: str) -> str:
        value = self.get(key)
        if not isinstance(value, str):
            raise self.error(f"{key!r} is not a string")
        return value

    def integer_text(self, key: str) -> int:
        """An integer Kafka writes as a string ("timestamp", "block_start", ...)."""
        try:
            return int(self.string(key))
        except ValueError:
            raise self.error(f"{key!r} is not a decimal string") from None

    def int_list(self, what: str, value: Any) -> tuple[int, ...]:
        if not isinstance(value, list):
            raise self.error(f"{what} is not a list")
        return tuple(self.as_int(what, v) for v in value)

    def mapping(self, key: str, default: dict[str, Any] | None = None) -> dict[str, Any]:
        value = self.obj.get(key, default) if default is not None else self.get(key)
        if not isinstance(value, dict):
            raise self.error(f"{key!r} is not a JSON object")
        return value

    def replicas_by_partition(self, key: str) -> dict[int, tuple[int, ...]]:
        result = {}
        for partition, replicas in self.mapping(key, default={}).items():
            try:
                partition_id = int(partition)
            except ValueError:
                raise self.error(f"partition id {partition!r} in {key!r}") from None
            result[partition_id] = self.int_list(f"replicas of partition {partition}", replicas)
        return result


def encode_broker(registration: BrokerRegistration) -> bytes:
    plaintext = registration.plaintext_endpoint
    value: dict[str, Any] = {
        "features": {},
        "listener_security_protocol_map": {
            e.listener_name: e.security_protocol for e in registration.endpoints
        },
        "endpoints": [e.connection_string for e in registration.endpoints],
        "jmx_port": registration.jmx_port,
        "port": plaintext.port if plaintext else -1,
        "host": plaintext.host if plaintext else None,
    }
    if registration.rack is not None:
        value["rack"] = registration.rack
    value["version"] = registration.version
    value["timestamp"] = str(registration.timestamp_ms)
    return _dump(value)


def decode_broker(broker_id: int, data: bytes) -> BrokerRegistration:
    fields = _Fields(broker_path(broker_id), data)
    version = fields.integer("version")
    if version < 1:
        raise fields.error(f"unsupported broker registration version {version}")
    if version == 1:
        endpoints: tuple[EndPoint, ...] = (
            EndPoint("PLAINTEXT", fields.string("host"), fields.integer("port")),
        )
    else:
        protocol_map = fields.mapping("listener_security_protocol_map", default={})
        listeners = fields.get("endpoints")
        if not isinstance(listeners, list):
            raise fields.error("'endpoints' is not a list")
        try:
            endpoints = tuple(EndPoint.parse(str(e), protocol_map) for e in listeners)
        except ValueError as exc:
            raise fields.error(str(exc)) from None
    rack = fields.obj.get("rack")
    return BrokerRegistration(
        broker_id=broker_id,
        endpoints=endpoints,
        timestamp_ms=fields.integer_text("timestamp"),
        jmx_port=fields.integer("jmx_port"),
        rack=rack if isinstance(rack, str) else None,
        version=version,
    )


def encode_topic(assignment: TopicAssignment) -> bytes:
    def by_partition(replicas: Mapping[int, tuple[int, ...]]) -> dict[str, list[int]]:
        return {str(p): list(replicas[p]) for p in sorted(replicas)}

    value: dict[str, Any] = {"partitions": by_partition(assignment.partitions)}
    if assignment.topic_id is not None:
        value["topic_id"] = assignment.topic_id
    value["adding_replicas"] = by_partition(assignment.adding_replicas)
    value["removing_replicas"] = by_partition(assignment.removing_replicas)
    value["version"] = 3
    return _dump(value)


def decode_topic(topic: str, data: bytes) -> TopicAssignment:
    fields = _Fields(topic_path(topic), data)
    topic_id = fields.obj.get("topic_id")
    if topic_id is not None and not isinstance(topic_id, str):
        raise fields.error("'topic_id' is not a string")
    return TopicAssignment(
        topic=topic,
        topic_id=topic_id,
        partitions=fields.replicas_by_partition("partitions"),
        adding_replicas=fields.replicas_by_partition("adding_replicas"),
        removing_replicas=fields.replicas_by_partition("removing_replicas"),
    )


def encode_partition_state(state: PartitionState) -> bytes:
    return _dump(
        {
            "controller_epoch": state.controller_epoch,
            "leader": state.leader,
            "version": 1,
            "leader_epoch": state.leader_epoch,
            "isr": list(state.isr),
        }
    )


def decode_partition_state(topic: str, partition: int, data: bytes) -> PartitionState:
    fields = _Fields(partition_state_path(topic, partition), data)
    return PartitionState(
        leader=fields.integer("leader"),
        leader_epoch=fields.integer("leader_epoch"),
        isr=fields.int_list("'isr'", fields.get("isr")),
        controller_epoch=fields.integer("controller_epoch"),
    )


def encode_controller(registration: ControllerRegistration) -> bytes:
    return _dump(
        {
            "version": 2,
            "brokerid": registration.broker_id,
            "timestamp": str(registration.timestamp_ms),
            "kraftControllerEpoch": registration.kraft_controller_epoch,
        }
    )


def decode_controller(data: bytes) -> ControllerRegistration:
    fields = _Fields(CONTROLLER_PATH, data)
    kraft_epoch = fields.obj.get("kraftControllerEpoch", -1)  # absent in version 1
    return ControllerRegistration(
        broker_id=fields.integer("brokerid"),
        timestamp_ms=fields.integer_text("timestamp"),
        kraft_controller_epoch=fields.as_int("'kraftControllerEpoch'", kraft_epoch),
    )


def encode_controller_epoch(epoch: int) -> bytes:
    return str(epoch).encode("ascii")


def decode_controller_epoch(data: bytes) -> int:
    try:
        return int(data.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        raise ZkDataError(CONTROLLER_EPOCH_PATH, "not a decimal integer", data) from None


def _encode_partition_list(partitions: Iterable[TopicPartition]) -> bytes:
    items = [{"topic": tp.topic, "partition": tp.partition} for tp in sorted(set(partitions))]
    return _dump({"version": 1, "partitions": items})


def _decode_partition_list(path: str, data: bytes) -> frozenset[TopicPartition]:
    fields = _Fields(path, data)
    items = fields.get("partitions")
    if not isinstance(items, list):
        raise fields.error("'partitions' is not a list")
    result = set()
    for item in items:
        if not isinstance(item, dict):
            raise fields.error("a partition entry is not a JSON object")
        topic, partition = item.get("topic"), item.get("partition")
        if not isinstance(topic, str):
            raise fields.error("a partition entry has no string 'topic'")
        result.add(TopicPartition(topic, fields.as_int("'partition'", partition)))
    return frozenset(result)


def encode_preferred_replica_election(partitions: Iterable[TopicPartition]) -> bytes:
    return _encode_partition_list(partitions)


def decode_preferred_replica_election(data: bytes) -> frozenset[TopicPartition]:
    return _decode_partition_list(PREFERRED_REPLICA_ELECTION_PATH, data)


def encode_partition_reassignment(reassignment: Mapping[TopicPartition, Sequence[int]]) -> bytes:
    items = [
        {"topic": tp.topic, "partition": tp.partition, "replicas": list(reassignment[tp])}
        for tp in sorted(reassignment)
    ]
    return _dump({"version": 1, "partitions": items})


def decode_partition_reassignment(data: bytes) -> dict[TopicPartition, tuple[int, ...]]:
    fields = _Fields(REASSIGN_PARTITIONS_PATH, data)
    items = fields.get("partitions")
    if not isinstance(items, list):
        raise fields.error("'partitions' is not a list")
    result: dict[TopicPartition, tuple[int, ...]] = {}
    for item in items:
        if not isinstance(item, dict):
            raise fields.error("a partition entry is not a JSON object")
        topic = item.get("topic")
        if not isinstance(topic, str):
            raise fields.error("a partition entry has no string 'topic'")
        tp = TopicPartition(topic, fields.as_int("'partition'", item.get("partition")))
        result[tp] = fields.int_list("'replicas'", item.get("replicas"))
    return result


def encode_isr_change(partitions: Iterable[TopicPartition]) -> bytes:
    return _encode_partition_list(partitions)


def decode_isr_change(node_name: str, data: bytes) -> frozenset[TopicPartition]:
    return _decode_partition_list(isr_change_path(node_name), data)


def encode_log_dir_event(broker_id: int) -> bytes:
    """A broker's log dir went offline (Kafka's LogDirEventNotificationSequenceZNode)."""
    return _dump({"version": 1, "broker": broker_id, "event": LOG_DIR_FAILURE_EVENT})


def decode_log_dir_event(node_name: str, data: bytes) -> int:
    """The id of the broker that wrote the event."""
    fields = _Fields(log_dir_event_path(node_name), data)
    return fields.as_int("'broker'", fields.get("broker"))


def encode_topic_config(config: Mapping[str, str]) -> bytes:
    return _dump({"version": 1, "config": {k: str(config[k]) for k in sorted(config)}})


def decode_topic_config(topic: str, data: bytes) -> dict[str, str]:
    return _decode_config(topic_config_path(topic), data)


def decode_broker_config(entity: str, data: bytes) -> dict[str, str]:
    """/config/brokers/<id> or <default>: the same shape as a topic's config."""
    return _decode_config(broker_config_path(entity), data)


def decode_user_config(user: str, data: bytes) -> dict[str, str]:
    """/config/users/<user>: the same shape as a topic's config (SCRAM credentials by
    mechanism name, and client quotas)."""
    return _decode_config(user_config_path(user), data)


def _decode_config(path: str, data: bytes) -> dict[str, str]:
    if not data:  # Kafka treats a config znode without data as an empty config
        return {}
    fields = _Fields(path, data)
    config = fields.mapping("config", default={})
    if not all(isinstance(v, str) for v in config.values()):
        raise fields.error("a config value is not a string")
    return dict(config)


def encode_config_change(entity_path: str) -> bytes:
    """A /config/changes notification, as Kafka's version 2: ``entity_path`` is
    ``topics/<topic>``, ``brokers/<id>`` / ``brokers/<default>`` or ``users/<sanitized user>``."""
    return _dump({"version": 2, "entity_path": entity_path})


def decode_config_change(node_name: str, data: bytes) -> tuple[str, str]:
    """``(entity type, entity name)`` of a notification: ``("topics", "t")``,
    ``("brokers", "1")``. Version 1 (``entity_type`` and ``entity_name``) is read too."""
    fields = _Fields(config_change_path(node_name), data)
    version = fields.integer("version")
    if version == 1:
        return fields.string("entity_type"), fields.string("entity_name")
    if version != 2:
        raise fields.error(f"unknown version {version}")
    entity_type, sep, entity_name = fields.string("entity_path").partition("/")
    if not sep or not entity_type or not entity_name:
        raise fields.error("entity_path is not <type>/<name>")
    return entity_type, entity_name


def encode_cluster_id(cluster_id: str) -> bytes:
    return _dump({"version": "1", "id": cluster_id})


def decode_cluster_id(data: bytes) -> str:
    return _Fields(CLUSTER_ID_PATH, data).string("id")


def encode_producer_id_block(block: ProducerIdBlock) -> bytes:
    return _dump(
        {
            "version": 1,
            "broker": block.broker_id,
            "block_start": str(block.block_start),
            "block_end": str(block.block_end),
        }
    )


def decode_producer_id_block(data: bytes) -> ProducerIdBlock | None:
    """The latest block, or None while the znode is still empty (no block handed out yet)."""
    if not data:
        return None
    fields = _Fields(PRODUCER_ID_BLOCK_PATH, data)
    block = ProducerIdBlock(
        broker_id=fields.integer("broker"),
        block_start=fields.integer_text("block_start"),
        block_end=fields.integer_text("block_end"),
    )
    if block.block_end < block.block_start:
        raise fields.error("block_end is before block_start")
    return block


def encode_acls(entries: Iterable[AccessControlEntry]) -> bytes:
    """A resource's ACLs, sorted so that the same set always writes the same bytes."""
    ordered = sorted(entries, key=lambda e: (e.principal, e.permission_type, e.operation, e.host))
    return _dump(
        {
            "version": 1,
            "acls": [
                {
                    "principal": e.principal,
                    "permissionType": kafka_name(e.permission_type),
                    "operation": kafka_name(e.operation),
                    "host": e.host,
                }
                for e in ordered
            ],
        }
    )


def decode_acls(pattern: ResourcePattern, data: bytes) -> frozenset[AccessControlEntry]:
    if not data:  # Kafka reads a resource znode without data as no ACLs
        return frozenset()
    fields = _Fields(acl_path(pattern), data)
    version = fields.integer("version")
    if version != 1:
        raise fields.error(f"unknown version {version}")
    acls = fields.get("acls")
    if not isinstance(acls, list):
        raise fields.error("'acls' is not a list")
    entries = set()
    for item in acls:
        if not isinstance(item, dict):
            raise fields.error("an ACL is not a JSON object")
        acl = _Fields(fields.path, _dump(item))
        try:
            entry = AccessControlEntry(
                principal=acl.string("principal"),
                host=acl.string("host"),
                operation=parse_kafka_name(AclOperation, acl.string("operation")),
                permission_type=parse_kafka_name(AclPermissionType, acl.string("permissionType")),
            )
        except ValueError as exc:
            raise fields.error(str(exc)) from None
        entries.add(entry)
    return frozenset(entries)


def encode_acl_change(pattern: ResourcePattern) -> bytes:
    """The data of a change notification for ``pattern`` (the path: ``acl_changes_path``)."""
    if pattern.pattern_type is PatternType.LITERAL:
        return f"{pattern.resource_type.name}:{pattern.name}".encode()
    return _dump(
        {
            "version": 1,
            "resourceType": pattern.resource_type.name,
            "name": pattern.name,
            "patternType": pattern.pattern_type.name,
        }
    )


def decode_acl_change(pattern_type: PatternType, node_name: str, data: bytes) -> ResourcePattern:
    """The resource a change notification under ``acl_changes_path(pattern_type)`` names."""
    path = acl_changes_path(pattern_type, node_name)
    try:
        if pattern_type is PatternType.LITERAL:
            resource_type, sep, name = data.decode("utf-8").partition(":")
            if not sep:
                raise ZkDataError(path, "not <ResourceType>:<name>", data)
            return ResourcePattern(
                parse_kafka_name(ResourceType, resource_type), name, PatternType.LITERAL
            )
        fields = _Fields(path, data)
        version = fields.integer("version")
        if version > 1:
            raise fields.error(f"unknown version {version}")
        changed = ResourcePattern(
            parse_kafka_name(ResourceType, fields.string("resourceType")),
            fields.string("name"),
            parse_kafka_name(PatternType, fields.string("patternType")),
        )
    except (ValueError, UnicodeDecodeError) as exc:
        raise ZkDataError(path, str(exc), data) from None
    if changed.pattern_type is not PatternType.PREFIXED:
        raise ZkDataError(path, f"pattern type {changed.pattern_type.name} is not stored", data)
    return changed
