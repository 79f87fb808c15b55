"""Typed reads and writes of the cluster's znodes over one kazoo client.

Paths and JSON layouts live in zk.zk_data (each written out in its docstring); this
module only moves them in and out of ZooKeeper, and turns ZooKeeper's answers into the errors of
zk.errors. Kazoo is imported only in this package and in the broker's server layer (its session
listener and metrics; .importlinter).

    with ZkStore.connect("127.0.0.1:2181/minikafka", session_timeout_ms=6000) as zk:
        zk.ensure_paths()
        zk.register_broker(BrokerRegistration(1, (EndPoint("PLAINTEXT", "10.0.0.1", 9092),)))
        won = zk.elect_controller(broker_id=1)     # Versioned(epoch, epoch znode version) | None

Fencing, as Kafka does it in ZooKeeper mode:

- Becoming controller creates the ephemeral ``/controller`` *and* bumps ``/controller_epoch``
  in one multi-op, conditional on the epoch's znode version. A broker that only created
  ``/controller`` could otherwise lose its session, see another controller elected, and then
  still bump the epoch past the real controller's.
- Controller writes may pass ``controller_epoch_zk_version`` (the ``zk_version`` that
  elect_controller returned): the write then goes in a multi-op with a check that
  ``/controller_epoch`` is still at that version, and raises ControllerMovedError when another
  broker has been elected since. A zombie controller can never overwrite partition state.
- Partition state writes are conditional on the state znode's version (``expected_zk_version``)
  and raise BadZNodeVersionError when someone wrote first: re-read, decide again.

Security (zk_auth): ``connect(..., security=...)`` logs in with SASL DIGEST-MD5 (on every
connection kazoo makes) and fails with ZkAuthenticationError when ZooKeeper refuses the login;
every znode the store creates, parents included, gets ``security.acls(path)`` through
``_create`` / ``_ensure_path`` and the transactions' creates (open to anyone unless
zookeeper.set.acl).

Connection trouble: a call whose connection drops retries until a deadline (the session
timeout) and then raises kazoo's RetryFailedError. A call made while the connection is down
is held by kazoo until it reconnects, however long that takes, or until ``close()`` fails it:
a caller that must not wait (a broker shutting down) checks ``connected`` first. A retried
write whose first attempt did land may report BadZNodeVersionError or an exists error;
callers re-read in either case.

Thread-safety: a ZkStore may be used from any thread at once. Kazoo's client is thread-safe and
the store keeps no other mutable state (retry policies are copied per call). Every method is a
blocking round trip to ZooKeeper, so an asyncio loop must call them through an executor. Watch
callbacks run first in the thread that registers the watch, then on kazoo's event thread: they
must be quick and must not block on ZooKeeper (hop to the loop with call_soon_threadsafe).
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import structlog
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    AuthFailedError,
    BadVersionError,
    NodeExistsError,
    NoNodeError,
    RolledBackError,
    SessionClosedRequireSaslError,
    UnimplementedError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KeeperState
from kazoo.recipe.watchers import ChildrenWatch, DataWatch
from kazoo.retry import KazooRetry
from kazoo.security import ACL

from minikafka.proto.cluster_state import (
    BadZNodeVersionError,
    PartitionState,
    ProducerIdBlock,
    Versioned,
)
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode, UnknownTopicOrPartitionError, error_for_code
from minikafka.zk.errors import (
    BrokerIdAlreadyRegisteredError,
    ControllerMovedError,
    ElectionInProgressError,
    ZkAuthenticationError,
    ZkStoreError,
    ZNodeExistsError,
)
from minikafka.zk.zk_auth import NO_SECURITY, ZkClientSecurity
from minikafka.zk.zk_data import (
    BROKER_IDS_PATH,
    CLUSTER_ID_PATH,
    CONFIG_CHANGES_PATH,
    CONFIG_CLIENTS_PATH,
    CONFIG_USERS_PATH,
    CONTROLLER_EPOCH_PATH,
    CONTROLLER_PATH,
    DELETE_TOPICS_PATH,
    INITIAL_CONTROLLER_EPOCH,
    ISR_CHANGE_NOTIFICATION_PATH,
    LOG_DIR_EVENT_NOTIFICATION_PATH,
    PERSISTENT_PATHS,
    PREFERRED_REPLICA_ELECTION_PATH,
    PRODUCER_ID_BLOCK_PATH,
    PRODUCER_ID_BLOCK_SIZE,
    REASSIGN_PARTITIONS_PATH,
    TOPICS_PATH,
    BrokerRegistration,
    ControllerRegistration,
    QuotaEntity,
    TopicAssignment,
    broker_config_path,
    broker_path,
    config_change_path,
    decode_broker,
    decode_broker_config,
    decode_cluster_id,
    decode_config_change,
    decode_controller,
    decode_controller_epoch,
    decode_isr_change,
    decode_log_dir_event,
    decode_partition_reassignment,
    decode_partition_state,
    decode_preferred_replica_election,
    decode_producer_id_block,
    decode_quota_config,
    decode_topic,
    decode_topic_config,
    decode_user_config,
    delete_topic_path,
    desanitize_entity_name,
    encode_broker,
    encode_cluster_id,
    encode_config_change,
    encode_controller,
    encode_controller_epoch,
    encode_isr_change,
    encode_log_dir_event,
    encode_partition_reassignment,
    encode_partition_state,
    encode_preferred_replica_election,
    encode_producer_id_block,
    encode_topic,
    encode_topic_config,
    isr_change_path,
    log_dir_event_path,
    partition_path,
    partition_state_path,
    random_uuid_base64,
    sanitize_entity_name,
    topic_config_path,
    topic_partitions_path,
    topic_path,
    user_config_path,
)
from minikafka.zk.zk_multi_read import multi_read_async

_log = structlog.get_logger(__name__)

# KazooState: what a session-state listener on ``ZkStore.client`` receives; exported so that
# the controller names it without importing kazoo.
__all__ = ["KazooState", "Watch", "ZkStore"]

R = TypeVar("R")
K = TypeVar("K", bound=Hashable)

MAX_PRODUCER_ID = 2**63 - 1
# Requests in flight at once in a pipelined bulk read or write: enough to hide the round trip,
# few enough that one answer's wait holds little memory.
_PIPELINE_DEPTH = 1000
# Partitions per multi-op in a batched write of partition states. Each request costs kazoo
# (a Python thread sharing the GIL with the broker) far more than each operation in it: 10,000
# fenced writes took 2.3 s one multi-op each, 0.2 s two hundred to a multi-op. Two hundred
# state writes are some 40 KB, far below ZooKeeper's jute.maxbuffer (1 MB) per request, and a
# refused batch costs two hundred writes made again one by one.
_KEYS_PER_MULTI = 200


class Watch:
    """A registered watch. ``cancel()`` stops its callbacks; kazoo drops it at its next event."""

    def __init__(self) -> None:
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()


class ZkStore:
    """The cluster's znodes over one started KazooClient; see the module docstring."""

    def __init__(
        self,
        client: KazooClient,
        *,
        deadline_s: float = 18.0,
        security: ZkClientSecurity = NO_SECURITY,
    ) -> None:
        """Wrap a started client; ``close()`` stops and closes it. ``security`` gives the ACLs
        of every znode this store creates (zk_auth; the client's login is made before)."""
        self._client = client
        self._security = security
        # False once the server answered a multiRead UNIMPLEMENTED (before ZooKeeper 3.6),
        # which it follows by closing the connection: not asked again.
        self._multi_read = True
        self._retry = KazooRetry(
            max_tries=-1, delay=0.05, backoff=2, max_delay=1.0, deadline=deadline_s
        )

    @classmethod
    def connect(
        cls,
        zookeeper_connect: str,
        *,
        session_timeout_ms: int = 18_000,
        connection_timeout_ms: int | None = None,
        security: ZkClientSecurity = NO_SECURITY,
    ) -> ZkStore:
        """Connect to ``host:port[,host:port...][/chroot]``, creating the chroot when missing.

        Named after Kafka's zookeeper.connect, zookeeper.session.timeout.ms and
        zookeeper.connection.timeout.ms (which defaults to the session timeout). ``security``
        (zk_auth): the SASL login, made and checked before this returns (ZkAuthenticationError
        when ZooKeeper refuses it), and the ACLs of the znodes created, the chroot's included.
        """
        connect_timeout_s = (connection_timeout_ms or session_timeout_ms) / 1000
        deadline_s = session_timeout_ms / 1000
        hosts, slash, chroot = zookeeper_connect.partition("/")
        if slash and chroot.strip("/"):
            root = _started_client(hosts, session_timeout_ms, connect_timeout_s, security)
            with cls(root, deadline_s=deadline_s, security=security) as root_store:
                root_store._ensure_path("/" + chroot.strip("/"))
        client = _started_client(zookeeper_connect, session_timeout_ms, connect_timeout_s, security)
        return cls(client, deadline_s=deadline_s, security=security)

    def close(self) -> None:
        self._client.stop()
        self._client.close()

    def __enter__(self) -> ZkStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def client(self) -> KazooClient:
        """The kazoo client, for session-state listeners (``client.add_listener``)."""
        return self._client

    @property
    def connected(self) -> bool:
        """Whether the session is connected now. While it is not, kazoo holds new requests
        until it reconnects, so a caller that must not wait (a broker shutting down) checks
        this first."""
        return bool(self._client.connected)

    @property
    def session_id(self) -> int | None:
        client_id = self._client.client_id
        return int(client_id[0]) if client_id else None

    def ensure_paths(self) -> None:
        """Create the persistent parent znodes (Kafka's persistent paths) that are missing."""
        for path in PERSISTENT_PATHS:
            self._ensure_path(path)

    # --- brokers: /brokers/ids/<id> ------------------------------------------------------------

    def register_broker(self, registration: BrokerRegistration) -> int:
        """Create the broker's ephemeral znode, living as long as this client's session.

        Returns the broker epoch: the znode's czxid, as Kafka uses it (KIP-380), so a broker
        that registers again under a new session gets a larger epoch. A znode already held by
        this same session (a retried create) counts as success; one held by any other session
        raises BrokerIdAlreadyRegisteredError naming that session and its endpoints (see
        ``wait_for_broker_deregistration`` for a restart within the session timeout).
        """
        path = broker_path(registration.broker_id)
        try:
            self._create(path, encode_broker(registration), ephemeral=True)
        except NodeExistsError:
            self._check_own_registration(registration.broker_id)
        epoch = self.get_broker_epoch(registration.broker_id)
        if epoch is None:
            raise ZkStoreError(f"{path} vanished right after its creation: the session expired")
        return epoch

    def _check_own_registration(self, broker_id: int) -> None:
        """Raise BrokerIdAlreadyRegisteredError, naming the holder, unless this session holds
        ``/brokers/ids/<id>`` (or nobody does any more)."""
        try:
            data, stat = self._call(self._client.get, broker_path(broker_id))
        except NoNodeError:
            return  # gone meanwhile: the caller's read of the epoch reports it
        owner = int(stat.ephemeralOwner)
        if owner == self.session_id:
            return
        try:
            endpoints = tuple(
                e.connection_string for e in decode_broker(broker_id, bytes(data or b"")).endpoints
            )
        except ZkStoreError:
            endpoints = ()
        raise BrokerIdAlreadyRegisteredError(broker_id, owner, endpoints)

    def wait_for_broker_deregistration(self, broker_id: int, timeout_s: float) -> bool:
        """Block until ``/brokers/ids/<id>`` does not exist, at most ``timeout_s``.

        Returns whether it is gone. A broker restarted within its ZooKeeper session timeout
        finds its previous registration still there, held by the session of its dead
        process, and waits here for ZooKeeper to expire that session (as Kafka does).
        """
        path = broker_path(broker_id)
        deadline = time.monotonic() + timeout_s
        changed = threading.Event()
        while True:
            changed.clear()
            if self._call(self._client.exists, path, watch=lambda event: changed.set()) is None:
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            changed.wait(remaining)

    def get_broker_epoch(self, broker_id: int) -> int | None:
        """The broker epoch (czxid of ``/brokers/ids/<id>``), or None when not registered."""
        stat = self._call(self._client.exists, broker_path(broker_id))
        return None if stat is None else int(stat.czxid)

    def get_broker(self, broker_id: int) -> BrokerRegistration | None:
        data = self._get_data(broker_path(broker_id))
        return None if data is None else decode_broker(broker_id, data)

    def get_broker_and_epoch(self, broker_id: int) -> tuple[BrokerRegistration, int] | None:
        """The registration and the broker epoch: the czxid of ``/brokers/ids/<id>``, as Kafka.

        A broker that re-registers (a restart, a new session) gets a larger epoch, so requests
        addressed to its previous incarnation can be told apart.
        """
        try:
            data, stat = self._call(self._client.get, broker_path(broker_id))
        except NoNodeError:
            return None
        return decode_broker(broker_id, bytes(data or b"")), int(stat.czxid)

    def get_live_broker_ids(self) -> list[int]:
        return _broker_ids(self._call(self._client.get_children, BROKER_IDS_PATH))

    def get_live_brokers(self) -> list[BrokerRegistration]:
        """Registrations of the live brokers, by id; one that vanishes meanwhile is left out."""
        brokers = (self.get_broker(broker_id) for broker_id in self.get_live_broker_ids())
        return [b for b in brokers if b is not None]

    def watch_broker_ids(self, callback: Callable[[list[int]], None]) -> Watch:
        """``callback(sorted live broker ids)`` now and after every change."""
        return self._watch_children(BROKER_IDS_PATH, lambda names: callback(_broker_ids(names)))

    # --- topics: /brokers/topics/<t> and /config/topics/<t> -----------------------------------

    def create_topic(
        self, assignment: TopicAssignment, config: Mapping[str, str] | None = None
    ) -> None:
        """Write the topic's config and assignment in one multi-op.

        Raises TopicAlreadyExistsError when ``/brokers/topics/<t>`` exists. A config znode left
        over from an earlier topic of the same name is overwritten, as Kafka does.
        """
        topic = assignment.topic
        config_path = topic_config_path(topic)
        config_data = encode_topic_config(config or {})

        def attempt() -> list[Any]:
            txn = self._client.transaction()
            if self._client.exists(config_path):
                txn.set_data(config_path, config_data)
            else:
                txn.create(config_path, config_data, acl=self._acl(config_path))
            txn.create(
                topic_path(topic), encode_topic(assignment), acl=self._acl(topic_path(topic))
            )
            return list(txn.commit())

        while True:
            config_result, topic_result = self._call(attempt)
            if isinstance(topic_result, NodeExistsError) or (
                isinstance(config_result, NodeExistsError) and self._exists(topic_path(topic))
            ):
                # TOPIC_ALREADY_EXISTS: the class controller.errors names TopicAlreadyExistsError
                raise error_for_code(
                    ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {topic!r} already exists"
                )
            if isinstance(config_result, (NodeExistsError, NoNodeError)):
                continue  # the config znode appeared or vanished meanwhile: decide again
            _raise_first_error([config_result, topic_result])
            return

    def get_topic(self, topic: str) -> Versioned[TopicAssignment] | None:
        read = self._get(topic_path(topic))
        if read is None:
            return None
        data, zk_version = read
        return Versioned(decode_topic(topic, data), zk_version)

    def get_all_topics(self) -> list[str]:
        return sorted(self._call(self._client.get_children, TOPICS_PATH))

    def update_topic(
        self,
        assignment: TopicAssignment,
        expected_zk_version: int,
        *,
        controller_epoch_zk_version: int | None = None,
    ) -> int:
        """Overwrite the assignment if the znode is still at ``expected_zk_version``.

        Returns the new znode version; BadZNodeVersionError when someone wrote first.
        """
        return self._set_data(
            topic_path(assignment.topic),
            encode_topic(assignment),
            expected_zk_version,
            controller_epoch_zk_version,
        )

    def watch_topics(self, callback: Callable[[list[str]], None]) -> Watch:
        """``callback(sorted topic names)`` now and after every change of /brokers/topics."""
        return self._watch_children(TOPICS_PATH, callback)

    def watch_topic(self, topic: str, callback: Callable[[TopicAssignment | None], None]) -> Watch:
        """``callback(assignment or None)`` now and after every change of /brokers/topics/<t>."""
        return self._watch_data(
            topic_path(topic),
            lambda data: callback(None if data is None else decode_topic(topic, data)),
        )

    def get_topic_config(self, topic: str) -> dict[str, str]:
        """The topic's config overrides; empty when it has none."""
        data = self._get_data(topic_config_path(topic))
        return {} if data is None else decode_topic_config(topic, data)

    def set_topic_config(self, topic: str, config: Mapping[str, str]) -> None:
        """Replace the topic's overrides, then tell every broker (a config change
        notification), as Kafka's AdminZkClient.changeTopicConfig."""
        self._set_or_create(topic_config_path(topic), encode_topic_config(config))
        self.create_config_change_notification(f"topics/{topic}")

    # --- dynamic broker configs: /config/brokers/<id> and /config/brokers/<default> ----------

    def get_broker_config(self, entity: str) -> dict[str, str]:
        """The dynamic configs of broker ``entity`` (an id, or ``<default>`` for the
        cluster-wide defaults); empty when none are set."""
        data = self._get_data(broker_config_path(entity))
        return {} if data is None else decode_broker_config(entity, data)

    def set_broker_config(self, entity: str, config: Mapping[str, str]) -> None:
        self._set_or_create(broker_config_path(entity), encode_topic_config(config))
        self.create_config_change_notification(f"brokers/{entity}")

    # --- users: /config/users/<user> (SCRAM credentials, quotas) -----------------------------

    def list_users(self) -> list[str]:
        """The users with a /config/users znode (names desanitized), sorted."""
        try:
            children = self._call(self._client.get_children, CONFIG_USERS_PATH)
        except NoNodeError:
            return []
        return sorted(desanitize_entity_name(c) for c in children)

    def get_user_config(self, user: str) -> dict[str, str]:
        """The user's config (SCRAM credentials by mechanism, quotas); empty when none."""
        data = self._get_data(user_config_path(user))
        return {} if data is None else decode_user_config(user, data)

    def update_user_configs(
        self, changes: Mapping[str, Callable[[dict[str, str]], dict[str, str]]]
    ) -> None:
        """For each user, ``change(current config) -> new config`` written with a version check
        (a concurrent writer makes it read and change again, so keys another writer set, as
        quotas, are kept), then one notification ``users/<user>`` per user, as Kafka's
        AdminZkClient.changeConfigs."""
        for user, change in changes.items():
            self._update_config(
                user_config_path(user), functools.partial(decode_user_config, user), change
            )
            self.create_config_change_notification(f"users/{sanitize_entity_name(user)}")

    def _update_config(
        self,
        path: str,
        decode: Callable[[bytes], dict[str, str]],
        change: Callable[[dict[str, str]], dict[str, str]],
    ) -> None:
        """Read, change and write a config znode with a version check, again on a race."""
        while True:
            read = self._get(path)
            current = {} if read is None else decode(read[0])
            data = encode_topic_config(change(dict(current)))
            if read is None:
                if self._create_if_absent(path, data):
                    return
                continue
            try:
                self._call(self._client.set, path, data, read[1])
                return
            except (BadVersionError, NoNodeError):
                continue

    # --- client quotas (KIP-55): /config/users, /config/clients and users/<u>/clients -------

    def get_quota_config(self, entity: QuotaEntity) -> dict[str, str]:
        """The entity's config (a user's SCRAM keys included); empty when it has none."""
        data = self._get_data(entity.path)
        return {} if data is None else decode_quota_config(entity, data)

    def list_quota_entities(self) -> list[QuotaEntity]:
        """Every entity with a config znode: users (``<default>`` too), their client-ids,
        client-ids. Those whose config is empty are listed all the same."""
        entities: list[QuotaEntity] = []
        for user_child in self._children(CONFIG_USERS_PATH):
            user = QuotaEntity.from_entity_path(f"users/{user_child}")
            entities.append(user)
            for client_child in self._children(f"{CONFIG_USERS_PATH}/{user_child}/clients"):
                entities.append(
                    QuotaEntity.from_entity_path(f"users/{user_child}/clients/{client_child}")
                )
        entities.extend(
            QuotaEntity.from_entity_path(f"clients/{child}")
            for child in self._children(CONFIG_CLIENTS_PATH)
        )
        return entities

    def update_quota_configs(
        self, changes: Mapping[QuotaEntity, Callable[[dict[str, str]], dict[str, str]]]
    ) -> None:
        """As ``update_user_configs``, for any quota entity; one notification per entity,
        its ``entity_path`` (``users/<u>/clients/<c>`` for a user's client-id, as Kafka)."""
        for entity, change in changes.items():
            self._update_config(entity.path, functools.partial(decode_quota_config, entity), change)
            self.create_config_change_notification(entity.entity_path)

    def _children(self, path: str) -> list[str]:
        try:
            return sorted(self._call(self._client.get_children, path))
        except NoNodeError:
            return []

    # --- config change notifications: /config/changes/config_change_<seq> ---------------------

    def create_config_change_notification(self, entity_path: str) -> str:
        """``entity_path`` is ``topics/<t>``, ``brokers/<id|<default>>`` or ``users/<user>``;
        returns the name."""
        path = self._create(
            config_change_path(), encode_config_change(entity_path), sequence=True, makepath=True
        )
        return str(path).rsplit("/", 1)[1]

    def get_config_change(self, node_name: str) -> tuple[str, str, int] | None:
        """``(entity type, entity name, creation time in ms)``; None when it is gone."""
        try:
            data, stat = self._call(self._client.get, config_change_path(node_name))
        except NoNodeError:
            return None
        entity_type, entity_name = decode_config_change(node_name, bytes(data or b""))
        return entity_type, entity_name, int(stat.ctime)

    def delete_config_changes(self, node_names: Iterable[str]) -> None:
        for name in node_names:
            self._delete_if_present(config_change_path(name))

    def watch_config_changes(self, callback: Callable[[list[str]], None]) -> Watch:
        """``callback(sorted notification names)`` now and after every change."""
        self._ensure_path(CONFIG_CHANGES_PATH)
        return self._watch_children(CONFIG_CHANGES_PATH, callback)

    def delete_topic_znodes(self, topic: str) -> None:
        """The last step of a deletion: the topic's znodes, its config, then its delete marker."""
        for path in (topic_path(topic), topic_config_path(topic), delete_topic_path(topic)):
            self._call(self._client.delete, path, recursive=True)

    # --- partition state: /brokers/topics/<t>/partitions/<p>/state ----------------------------

    def create_partition_state(
        self,
        topic: str,
        partition: int,
        state: PartitionState,
        *,
        controller_epoch_zk_version: int | None = None,
    ) -> int:
        """Create the state znode (its parents too); returns its znode version, 0.

        Raises ZNodeExistsError when the partition already has a state.
        """
        self._ensure_path(partition_path(topic, partition))
        path = partition_state_path(topic, partition)
        data = encode_partition_state(state)
        if controller_epoch_zk_version is None:
            try:
                self._create(path, data)
            except NodeExistsError:
                raise ZNodeExistsError(path) from None
        else:
            self._fenced(
                controller_epoch_zk_version,
                lambda txn: txn.create(path, data, acl=self._acl(path)),
                path,
            )
        return 0

    def get_partition_state(self, topic: str, partition: int) -> Versioned[PartitionState] | None:
        read = self._get(partition_state_path(topic, partition))
        if read is None:
            return None
        data, zk_version = read
        return Versioned(decode_partition_state(topic, partition, data), zk_version)

    def watch_partition_state(
        self, tp: TopicPartition, callback: Callable[[PartitionState | None], None]
    ) -> Watch:
        """``callback(state or None)`` now and after every change of the partition's state
        znode (the controller follows the ISR of a partition being reassigned so)."""
        return self._watch_data(
            partition_state_path(tp.topic, tp.partition),
            lambda data: callback(
                None if data is None else decode_partition_state(tp.topic, tp.partition, data)
            ),
        )

    def update_partition_state(
        self,
        topic: str,
        partition: int,
        state: PartitionState,
        expected_zk_version: int,
        *,
        controller_epoch_zk_version: int | None = None,
    ) -> int:
        """Write the state if its znode is still at ``expected_zk_version``.

        Returns the new znode version. Raises BadZNodeVersionError when someone wrote first
        (re-read with get_partition_state), ControllerMovedError when fenced (see module
        docstring), UnknownTopicOrPartitionError when the partition has no state znode.
        """
        return self._set_data(
            partition_state_path(topic, partition),
            encode_partition_state(state),
            expected_zk_version,
            controller_epoch_zk_version,
        )

    # --- many partition states at once: pipelined round trips ---------------------------------
    #
    # As Kafka's KafkaZkClient (getTopicPartitionStatesRaw, createTopicPartitionStatesRaw,
    # updateLeaderAndIsr): thousands of partitions are read or written with their requests in
    # flight together, not one round trip after another. Writes go further than Kafka's: up to
    # _KEYS_PER_MULTI partitions share one multi-op (behind one check of /controller_epoch when
    # fenced), each write in it conditional on its own znode version. ZooKeeper applies a
    # multi-op whole or not at all, so a batch with one refused write is made again one
    # multi-op per partition, and every partition still gets the answer of its own.

    def get_partition_states(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, Versioned[PartitionState]]:
        """The states of ``partitions``, read together; those without a state znode are left
        out. Read in multiRead requests of up to ``_KEYS_PER_MULTI`` znodes (ZooKeeper 3.6+;
        an older server, or a request that fails, is read again one getData per znode)."""
        paths = {tp: partition_state_path(tp.topic, tp.partition) for tp in partitions}
        keys = list(paths)
        chunks = [
            tuple(keys[i : i + _KEYS_PER_MULTI]) for i in range(0, len(keys), _KEYS_PER_MULTI)
        ]
        read = (
            self._pipelined(
                {chunk: chunk for chunk in chunks},
                lambda chunk: multi_read_async(self._client, [paths[tp] for tp in chunk]),
                lambda chunk: multi_read_async(self._client, [paths[tp] for tp in chunk]).get(),
            )
            if self._multi_read
            else {}
        )
        results: dict[TopicPartition, Any] = {}
        unread: list[TopicPartition] = [] if self._multi_read else keys
        for chunk, answer in read.items():
            if isinstance(answer, Exception):
                if isinstance(answer, UnimplementedError) and self._multi_read:
                    self._multi_read = False
                    _log.info("zookeeper.multi_read_unsupported", error=str(answer))
                unread.extend(chunk)
            else:
                results.update(zip(chunk, answer, strict=True))
        if unread:
            results.update(
                self._pipelined(
                    {tp: tp for tp in unread},
                    lambda tp: self._client.get_async(paths[tp]),
                    lambda tp: self._client.get(paths[tp]),
                )
            )
        states: dict[TopicPartition, Versioned[PartitionState]] = {}
        for tp in keys:
            result = results[tp]
            if isinstance(result, NoNodeError):
                continue
            if isinstance(result, Exception):
                raise result
            data, stat = result
            states[tp] = Versioned(
                decode_partition_state(tp.topic, tp.partition, bytes(data or b"")),
                int(stat.version),
            )
        return states

    def create_partition_states(
        self, states: Mapping[TopicPartition, PartitionState], *, controller_epoch_zk_version: int
    ) -> dict[TopicPartition, int | Exception]:
        """Create the state znodes (and their parents), each fenced as create_partition_state:
        0 (the znode version) per partition created, ZNodeExistsError per partition that
        already had a state, and the ZooKeeper error per partition whose request failed
        otherwise (it may have landed: read it back). ControllerMovedError when fenced.

        Written in batches (see "many partition states at once"): ``partitions/<p>`` and its
        ``state`` in the same multi-op, one ``partitions`` per topic before."""
        topics = {topic_partitions_path(tp.topic): None for tp in states}
        self._create_parents(list(topics))

        def add_creates(tp: TopicPartition, txn: Any) -> None:
            parent, path = partition_path(*tp), partition_state_path(*tp)
            txn.create(parent, acl=self._acl(parent))
            txn.create(path, encode_partition_state(states[tp]), acl=self._acl(path))

        def one_by_one(partitions: list[TopicPartition]) -> dict[TopicPartition, Any]:
            # Some already exist: the parents that do not, then one multi-op per state.
            self._create_parents([partition_path(*tp) for tp in partitions])
            return self._fenced_each(
                controller_epoch_zk_version,
                partitions,
                lambda tp, txn: txn.create(
                    partition_state_path(*tp),
                    encode_partition_state(states[tp]),
                    acl=self._acl(partition_state_path(*tp)),
                ),
            )

        results = self._batched(controller_epoch_zk_version, states, add_creates, one_by_one)
        answers: dict[TopicPartition, int | Exception] = {}
        for tp, result in results.items():
            if isinstance(result, NodeExistsError):
                answers[tp] = ZNodeExistsError(partition_state_path(*tp))
            elif isinstance(result, Exception):
                answers[tp] = result
            else:
                answers[tp] = 0
        return answers

    def _create_parents(self, paths: list[str]) -> None:
        """Create the persistent znodes, those already there left as they are; their own
        parents must exist."""
        created = self._pipelined(
            {path: path for path in paths},
            lambda path: self._client.create_async(path, acl=self._acl(path)),
            lambda path: self._client.create(path, acl=self._acl(path)),
        )
        for result in created.values():
            if isinstance(result, Exception) and not isinstance(result, NodeExistsError):
                raise result

    def update_partition_states(
        self,
        updates: Mapping[TopicPartition, tuple[PartitionState, int]],
        *,
        controller_epoch_zk_version: int | None = None,
    ) -> dict[TopicPartition, int | Exception]:
        """Write each ``(state, expected znode version)`` as update_partition_state does, in
        batches: the new znode version per partition written, BadZNodeVersionError per
        partition someone wrote first (re-read, decide again), UnknownTopicOrPartitionError
        (a KafkaError) per partition without a state znode, and the ZooKeeper error per
        partition whose request failed otherwise (it may have landed: read it back).
        Fenced (ControllerMovedError) when ``controller_epoch_zk_version`` is given, as the
        controller's writes are; a partition leader's ISR writes are not."""

        def add_set(tp: TopicPartition, txn: Any) -> None:
            state, expected = updates[tp]
            txn.set_data(partition_state_path(*tp), encode_partition_state(state), expected)

        def one_by_one(partitions: list[TopicPartition]) -> dict[TopicPartition, Any]:
            if controller_epoch_zk_version is not None:
                return self._fenced_each(controller_epoch_zk_version, partitions, add_set)

            def data(tp: TopicPartition) -> tuple[str, bytes, int]:
                state, expected = updates[tp]
                return partition_state_path(*tp), encode_partition_state(state), expected

            return self._pipelined(
                {tp: tp for tp in partitions},
                lambda tp: self._client.set_async(*data(tp)),
                lambda tp: self._client.set(*data(tp)),
            )

        results = self._batched(controller_epoch_zk_version, updates, add_set, one_by_one)
        answers: dict[TopicPartition, int | Exception] = {}
        for tp, result in results.items():
            path = partition_state_path(*tp)
            if isinstance(result, BadVersionError):
                answers[tp] = BadZNodeVersionError(path, updates[tp][1])
            elif isinstance(result, NoNodeError):
                answers[tp] = UnknownTopicOrPartitionError(f"{path} does not exist")
            elif isinstance(result, Exception):
                answers[tp] = result
            else:
                answers[tp] = int(result.version)
        return answers

    # --- controller: /controller and /controller_epoch ----------------------------------------

    def elect_controller(self, broker_id: int) -> Versioned[int] | None:
        """Try to become controller; see "Fencing" in the module docstring.

        Returns the new controller epoch with the znode version of /controller_epoch after the
        bump (pass it as ``controller_epoch_zk_version`` to later writes), or None when another
        broker holds /controller. The first controller of a cluster gets epoch 1.
        """
        controller_data = encode_controller(ControllerRegistration(broker_id))
        while True:
            current = self.get_controller_epoch()
            if current is None:
                self._create_if_absent(
                    CONTROLLER_EPOCH_PATH, encode_controller_epoch(INITIAL_CONTROLLER_EPOCH)
                )
                continue
            new_epoch = current.value + 1

            def attempt(epoch: Versioned[int] = current, new_epoch: int = new_epoch) -> list[Any]:
                txn = self._client.transaction()
                txn.create(
                    CONTROLLER_PATH,
                    controller_data,
                    acl=self._acl(CONTROLLER_PATH),
                    ephemeral=True,
                )
                txn.set_data(
                    CONTROLLER_EPOCH_PATH, encode_controller_epoch(new_epoch), epoch.zk_version
                )
                return list(txn.commit())

            created, epoch_stat = self._call(attempt)
            if isinstance(created, NodeExistsError):
                if self._owner_session(CONTROLLER_PATH) == self.session_id:
                    # our own multi-op landed but its reply was lost: it bumped the epoch too
                    return self.get_controller_epoch()
                return None
            if isinstance(epoch_stat, (BadVersionError, NoNodeError)):
                continue  # another broker bumped the epoch in between: read it again
            _raise_first_error([created, epoch_stat])
            return Versioned(new_epoch, int(epoch_stat.version))

    def resign_controller(self) -> bool:
        """Delete ``/controller`` if this session holds it, so another broker takes over now.

        Returns whether it was deleted. Used by a controller that shuts down cleanly; one that
        lost its session needs nothing (ZooKeeper removed the ephemeral znode).
        """
        stat = self._call(self._client.exists, CONTROLLER_PATH)
        if stat is None or int(stat.ephemeralOwner) != self.session_id:
            return False
        try:
            self._call(self._client.delete, CONTROLLER_PATH, int(stat.version))
        except (NoNodeError, BadVersionError):
            return False
        return True

    def get_controller(self) -> ControllerRegistration | None:
        data = self._get_data(CONTROLLER_PATH)
        return None if data is None else decode_controller(data)

    def get_controller_epoch(self) -> Versioned[int] | None:
        """The current controller epoch and its znode version; None before any election."""
        read = self._get(CONTROLLER_EPOCH_PATH)
        if read is None:
            return None
        data, zk_version = read
        return Versioned(decode_controller_epoch(data), zk_version)

    def watch_controller(self, callback: Callable[[ControllerRegistration | None], None]) -> Watch:
        """``callback(current controller or None)`` now and after every change of /controller."""
        return self._watch_data(
            CONTROLLER_PATH,
            lambda data: callback(None if data is None else decode_controller(data)),
        )

    # --- admin requests: /admin/... -----------------------------------------------------------

    def mark_topic_for_deletion(self, topic: str) -> bool:
        """Ask the controller to delete the topic; False when it was already marked.

        Raises UnknownTopicOrPartitionError when the topic does not exist.
        """
        if not self._exists(topic_path(topic)):
            raise UnknownTopicOrPartitionError(f"topic {topic!r} does not exist")
        return self._create_if_absent(delete_topic_path(topic), b"")

    def delete_topic_deletion_mark(self, topic: str) -> None:
        """Drop ``/admin/delete_topics/<t>`` alone (deletion disabled, or no such topic)."""
        self._delete_if_present(delete_topic_path(topic))

    def get_topics_marked_for_deletion(self) -> list[str]:
        return sorted(self._call(self._client.get_children, DELETE_TOPICS_PATH))

    def watch_topic_deletions(self, callback: Callable[[list[str]], None]) -> Watch:
        """``callback(sorted topics marked for deletion)`` now and after every change."""
        return self._watch_children(DELETE_TOPICS_PATH, callback)

    def create_preferred_replica_election(self, partitions: Iterable[TopicPartition]) -> None:
        """Ask the controller to move leadership back to preferred replicas.

        Raises ElectionInProgressError while an earlier request is still there.
        """
        data = encode_preferred_replica_election(partitions)
        try:
            self._create(PREFERRED_REPLICA_ELECTION_PATH, data, makepath=True)
        except NodeExistsError:
            raise ElectionInProgressError() from None

    def get_preferred_replica_election(self) -> frozenset[TopicPartition] | None:
        data = self._get_data(PREFERRED_REPLICA_ELECTION_PATH)
        return None if data is None else decode_preferred_replica_election(data)

    def delete_preferred_replica_election(self) -> None:
        self._delete_if_present(PREFERRED_REPLICA_ELECTION_PATH)

    def watch_preferred_replica_election(
        self, callback: Callable[[frozenset[TopicPartition] | None], None]
    ) -> Watch:
        """``callback(requested partitions or None)`` now and after every change."""
        return self._watch_data(
            PREFERRED_REPLICA_ELECTION_PATH,
            lambda data: callback(
                None if data is None else decode_preferred_replica_election(data)
            ),
        )

    # --- /admin/reassign_partitions (reassignments the pre-KIP-455 way) ---------------------------

    def create_partition_reassignment(
        self, reassignment: Mapping[TopicPartition, Sequence[int]]
    ) -> None:
        """Ask for reassignments the old way; ZNodeExistsError while earlier ones run."""
        try:
            self._create(
                REASSIGN_PARTITIONS_PATH, encode_partition_reassignment(reassignment), makepath=True
            )
        except NodeExistsError:
            raise ZNodeExistsError(REASSIGN_PARTITIONS_PATH) from None

    def get_partition_reassignment(self) -> dict[TopicPartition, tuple[int, ...]] | None:
        """The reassignments asked for in the znode; None when there is none."""
        data = self._get_data(REASSIGN_PARTITIONS_PATH)
        return None if data is None else decode_partition_reassignment(data)

    def set_partition_reassignment(
        self,
        reassignment: Mapping[TopicPartition, Sequence[int]],
        *,
        controller_epoch_zk_version: int,
    ) -> None:
        """The controller's rewrite of the znode (fenced): deleted when nothing is left."""
        if not reassignment:
            self._fenced(
                controller_epoch_zk_version,
                lambda txn: txn.delete(REASSIGN_PARTITIONS_PATH),
                REASSIGN_PARTITIONS_PATH,
            )
            return
        data = encode_partition_reassignment(reassignment)
        self._fenced(
            controller_epoch_zk_version,
            lambda txn: txn.set_data(REASSIGN_PARTITIONS_PATH, data),
            REASSIGN_PARTITIONS_PATH,
        )

    def watch_partition_reassignment(self, callback: Callable[[bool], None]) -> Watch:
        """``callback(whether the znode exists)`` now and after every change of it; its content
        is read with ``get_partition_reassignment`` (a hand-written one may not decode)."""
        return self._watch_data(REASSIGN_PARTITIONS_PATH, lambda data: callback(data is not None))

    # --- ISR change notifications: /isr_change_notification/isr_change_<seq> ------------------

    def create_isr_change_notification(self, partitions: Iterable[TopicPartition]) -> str:
        """Tell the controller these partitions' ISR changed; returns the new node's name."""
        path = self._create(isr_change_path(), encode_isr_change(partitions), sequence=True)
        return str(path).rsplit("/", 1)[1]

    def get_isr_change_notification_names(self) -> list[str]:
        """Names of pending notifications, oldest first."""
        return sorted(self._call(self._client.get_children, ISR_CHANGE_NOTIFICATION_PATH))

    def get_isr_change_notification(self, node_name: str) -> frozenset[TopicPartition] | None:
        data = self._get_data(isr_change_path(node_name))
        return None if data is None else decode_isr_change(node_name, data)

    def delete_isr_change_notifications(self, node_names: Iterable[str]) -> None:
        for name in node_names:
            self._delete_if_present(isr_change_path(name))

    def watch_isr_change_notifications(self, callback: Callable[[list[str]], None]) -> Watch:
        """``callback(sorted pending notification names)`` now and after every change."""
        return self._watch_children(ISR_CHANGE_NOTIFICATION_PATH, callback)

    # --- log dir events: /log_dir_event_notification/log_dir_event_<seq> ---------------------

    def create_log_dir_event_notification(self, broker_id: int) -> str:
        """Tell the controller a log dir of ``broker_id`` went offline (KIP-112); returns the
        new node's name. The parent is created when missing (a cluster older than it)."""
        path = self._create(
            log_dir_event_path(), encode_log_dir_event(broker_id), sequence=True, makepath=True
        )
        return str(path).rsplit("/", 1)[1]

    def get_log_dir_event_notification_names(self) -> list[str]:
        """Names of pending log dir events, oldest first."""
        try:
            names = self._call(self._client.get_children, LOG_DIR_EVENT_NOTIFICATION_PATH)
        except NoNodeError:
            return []
        return sorted(names)

    def get_log_dir_event_notification(self, node_name: str) -> int | None:
        """The broker id the event names; None when it is gone."""
        data = self._get_data(log_dir_event_path(node_name))
        return None if data is None else decode_log_dir_event(node_name, data)

    def delete_log_dir_event_notifications(self, node_names: Iterable[str]) -> None:
        for name in node_names:
            self._delete_if_present(log_dir_event_path(name))

    def watch_log_dir_event_notifications(self, callback: Callable[[list[str]], None]) -> Watch:
        """``callback(sorted pending event names)`` now and after every change."""
        return self._watch_children(LOG_DIR_EVENT_NOTIFICATION_PATH, callback)

    # --- /cluster/id and /latest_producer_id_block --------------------------------------------

    def get_or_create_cluster_id(self) -> str:
        """The cluster id; the first broker to ask creates it, every later one reads it."""
        while True:
            data = self._get_data(CLUSTER_ID_PATH)
            if data is not None:
                return decode_cluster_id(data)
            cluster_id = random_uuid_base64()
            try:
                self._create(CLUSTER_ID_PATH, encode_cluster_id(cluster_id), makepath=True)
                return cluster_id
            except NodeExistsError:
                continue  # another broker created it first: use theirs

    def allocate_producer_id_block(
        self, broker_id: int, block_size: int = PRODUCER_ID_BLOCK_SIZE
    ) -> ProducerIdBlock:
        """Claim the next ``block_size`` producer ids for this broker (conditional-set loop).

        Blocks never overlap across brokers: each claim is a write conditional on the version
        of the latest claim. The first block starts at 0.
        """
        while True:
            read = self._get(PRODUCER_ID_BLOCK_PATH)
            if read is None:
                self._create_if_absent(PRODUCER_ID_BLOCK_PATH, b"")
                continue
            data, zk_version = read
            latest = decode_producer_id_block(data)
            start = 0 if latest is None else latest.block_end + 1
            block = ProducerIdBlock(broker_id, start, start + block_size - 1)
            if block.block_end > MAX_PRODUCER_ID:
                raise ZkStoreError("producer ids are exhausted: the next block passes 2^63-1")
            try:
                self._call(
                    self._client.set,
                    PRODUCER_ID_BLOCK_PATH,
                    encode_producer_id_block(block),
                    zk_version,
                )
                return block
            except BadVersionError:
                continue  # another broker claimed a block first: go after theirs

    # --- plumbing ------------------------------------------------------------------------------

    def _call(self, func: Callable[..., R], *args: Any, **kwargs: Any) -> R:
        """``func`` retried through connection loss, with a fresh copy of the retry policy."""
        result: R = self._retry.copy()(func, *args, **kwargs)
        return result

    def _acl(self, path: str) -> list[ACL]:
        return self.acls_for(path)

    def acls_for(self, path: str) -> list[ACL]:
        """The ACLs of a znode created at ``path`` (zk_auth.default_acls), for this store and
        for the stores that share its client (the ACL store), so that with zookeeper.set.acl
        no znode of the cluster is left writable by anyone."""
        return self._security.acls(path)

    def _create(
        self,
        path: str,
        data: bytes = b"",
        *,
        ephemeral: bool = False,
        sequence: bool = False,
        makepath: bool = False,
    ) -> str:
        """Create a znode with its ACLs; returns its path (a sequential one's with the number).

        ``makepath`` creates the missing parents too, each with the ACLs of its own path, as
        Kafka's createRecursive (kazoo's makepath would give them the child's: a sensitive
        child would then hide its parent from everyone else)."""

        def create() -> str:
            created = self._client.create(
                path, data, acl=self._acl(path), ephemeral=ephemeral, sequence=sequence
            )
            return str(created)

        try:
            return self._call(create)
        except NoNodeError:
            if not makepath:
                raise
        self._ensure_path(path.rsplit("/", 1)[0])
        return self._call(create)

    def _ensure_path(self, path: str) -> None:
        """Create the persistent znode ``path`` and its missing parents, each with the ACLs of
        its own path; those already there keep theirs."""
        if path in ("", "/") or self._exists(path):
            return
        self._ensure_path(path.rsplit("/", 1)[0])
        with contextlib.suppress(NodeExistsError):  # created meanwhile, or a retried create
            self._call(self._client.create, path, b"", acl=self._acl(path))

    def _get(self, path: str) -> tuple[bytes, int] | None:
        """(data, znode version), or None when the znode does not exist."""
        try:
            data, stat = self._call(self._client.get, path)
        except NoNodeError:
            return None
        return bytes(data or b""), int(stat.version)

    def _get_data(self, path: str) -> bytes | None:
        read = self._get(path)
        return None if read is None else read[0]

    def _exists(self, path: str) -> bool:
        return self._call(self._client.exists, path) is not None

    def _owner_session(self, path: str) -> int | None:
        stat = self._call(self._client.exists, path)
        return int(stat.ephemeralOwner) if stat is not None else None

    def _create_if_absent(self, path: str, data: bytes) -> bool:
        """Create a persistent znode; False when it already existed."""
        try:
            self._create(path, data, makepath=True)
            return True
        except NodeExistsError:
            return False

    def _set_or_create(self, path: str, data: bytes) -> None:
        while True:
            try:
                self._call(self._client.set, path, data)
                return
            except NoNodeError:
                if self._create_if_absent(path, data):
                    return

    def _delete_if_present(self, path: str) -> None:
        with contextlib.suppress(NoNodeError):
            self._call(self._client.delete, path)

    def _set_data(self, path: str, data: bytes, expected_zk_version: int, fence: int | None) -> int:
        """Conditional set_data, optionally fenced; returns the new znode version."""
        if fence is None:
            try:
                stat = self._call(self._client.set, path, data, expected_zk_version)
            except BadVersionError:
                raise BadZNodeVersionError(path, expected_zk_version) from None
            except NoNodeError:
                raise UnknownTopicOrPartitionError(f"{path} does not exist") from None
            return int(stat.version)
        result = self._fenced(
            fence, lambda txn: txn.set_data(path, data, expected_zk_version), path
        )
        if isinstance(result, BadVersionError):
            raise BadZNodeVersionError(path, expected_zk_version)
        return int(result.version)

    def _fenced(
        self, controller_epoch_zk_version: int, add_op: Callable[[Any], None], path: str
    ) -> Any:
        """Run one write in a multi-op with a check on /controller_epoch's znode version.

        Returns the write's result (or its BadVersionError, for the caller to word). Raises
        ControllerMovedError when the check fails, and maps the other ZooKeeper refusals.
        """

        def attempt() -> list[Any]:
            txn = self._client.transaction()
            txn.check(CONTROLLER_EPOCH_PATH, controller_epoch_zk_version)
            add_op(txn)
            return list(txn.commit())

        check, result = self._call(attempt)
        _check_fence(check, controller_epoch_zk_version)
        if isinstance(result, BadVersionError):
            return result
        self._check_fenced_result(result, path)
        return result

    @staticmethod
    def _check_fenced_result(result: Any, path: str) -> None:
        """Raise what a fenced write's own result says went wrong, if anything."""
        if isinstance(result, NodeExistsError):
            raise ZNodeExistsError(path)
        if isinstance(result, NoNodeError):
            raise UnknownTopicOrPartitionError(f"{path} (or its parent) does not exist")
        if isinstance(result, Exception):
            raise result

    def _batched(
        self,
        controller_epoch_zk_version: int | None,
        keys: Iterable[K],
        add_ops: Callable[[K, Any], None],
        one_by_one: Callable[[list[K]], Mapping[K, Any]],
    ) -> dict[K, Any]:
        """Each key's writes (``add_ops`` adds them to a transaction) in multi-ops of up to
        ``_KEYS_PER_MULTI`` keys, pipelined, each behind a check of /controller_epoch when
        fenced; each key with the result of its last write (a znode stat or path), or the
        error that refused it, or the error its request met. Raises ControllerMovedError
        when a check fails.

        A multi-op is all or nothing: when ZooKeeper refuses one of its writes (a version
        conflict, a znode missing or already there), none of them landed and ZooKeeper
        names only the first refused. Those keys are then written again by ``one_by_one``,
        which answers each key on its own (one multi-op per key, as before batching)."""
        pending = list(keys)
        chunks = [
            tuple(pending[i : i + _KEYS_PER_MULTI]) for i in range(0, len(pending), _KEYS_PER_MULTI)
        ]
        last_ops: dict[tuple[K, ...], list[int]] = {}

        def transaction(chunk: tuple[K, ...]) -> Any:
            txn = self._client.transaction()
            if controller_epoch_zk_version is not None:
                txn.check(CONTROLLER_EPOCH_PATH, controller_epoch_zk_version)
            ends = []
            for key in chunk:
                add_ops(key, txn)
                ends.append(len(txn.operations) - 1)
            last_ops[chunk] = ends
            return txn

        results = self._pipelined(
            {chunk: chunk for chunk in chunks},
            lambda chunk: transaction(chunk).commit_async(),
            lambda chunk: list(transaction(chunk).commit()),
        )
        answers: dict[K, Any] = {}
        refused: list[K] = []
        for chunk, result in results.items():
            if isinstance(result, Exception):
                answers.update((key, result) for key in chunk)
                continue
            if controller_epoch_zk_version is not None:
                _check_fence(result[0], controller_epoch_zk_version)
            if any(isinstance(op, Exception) for op in result):
                refused.extend(chunk)
                continue
            answers.update(
                (key, result[end]) for key, end in zip(chunk, last_ops[chunk], strict=True)
            )
        if refused:
            answers.update(one_by_one(refused))
        return answers

    def _fenced_each(
        self,
        controller_epoch_zk_version: int,
        keys: Iterable[K],
        add_op: Callable[[K, Any], None],
    ) -> dict[K, Any]:
        """One fenced multi-op per key (see ``_fenced``), pipelined; each key with its write's
        result (the znode stat), or the ZooKeeper error that refused it, or the error its
        request met. Raises ControllerMovedError when a check fails."""

        def transaction(key: K) -> Any:
            txn = self._client.transaction()
            txn.check(CONTROLLER_EPOCH_PATH, controller_epoch_zk_version)
            add_op(key, txn)
            return txn

        results = self._pipelined(
            {key: key for key in keys},
            lambda key: transaction(key).commit_async(),
            lambda key: list(transaction(key).commit()),
        )
        answers: dict[K, Any] = {}
        for key, result in results.items():
            if isinstance(result, Exception):
                answers[key] = result
                continue
            check, write = result
            _check_fence(check, controller_epoch_zk_version)
            answers[key] = write
        return answers

    def _pipelined(
        self,
        keys: Mapping[K, object],
        start: Callable[[K], Any],
        again: Callable[[K], R],
    ) -> dict[K, R | Exception]:
        """Each key's request sent with up to ``_PIPELINE_DEPTH`` in flight (``start`` returns
        kazoo's async result), then its answer or the exception it raised. A request that
        met a connection loss is made again on its own, retried as ``_call`` retries."""
        results: dict[K, R | Exception] = {}
        pending = list(keys)
        for first in range(0, len(pending), _PIPELINE_DEPTH):
            chunk = pending[first : first + _PIPELINE_DEPTH]
            in_flight = [(key, start(key)) for key in chunk]
            for key, async_result in in_flight:
                try:
                    results[key] = async_result.get()
                except KazooRetry.RETRY_EXCEPTIONS:
                    try:
                        results[key] = self._call(again, key)
                    except Exception as exc:
                        results[key] = exc
                except Exception as exc:
                    results[key] = exc
        return results

    def _watch_children(self, path: str, callback: Callable[[list[str]], None]) -> Watch:
        watch = Watch()

        def on_children(children: list[str]) -> bool | None:
            if watch.cancelled:
                return False  # tells kazoo to drop the watch
            callback(sorted(children))
            return None

        ChildrenWatch(self._client, path, on_children)
        return watch

    def _watch_data(self, path: str, callback: Callable[[bytes | None], None]) -> Watch:
        watch = Watch()

        def on_data(data: bytes | None, stat: Any) -> bool | None:
            if watch.cancelled:
                return False
            callback(None if stat is None else bytes(data or b""))
            return None

        DataWatch(self._client, path, on_data)
        return watch


def _new_client(hosts: str, session_timeout_ms: int, security: ZkClientSecurity) -> KazooClient:
    # Reconnect attempts back off to at most 1 s, like ZooKeeper's own Java client; kazoo's
    # default lets the pause grow to an hour, so a broker would stay away long after ZooKeeper
    # came back.
    reconnect = KazooRetry(max_tries=-1, delay=0.1, backoff=2, max_delay=1.0)
    client = KazooClient(
        hosts=hosts,
        timeout=session_timeout_ms / 1000,
        connection_retry=reconnect,
        # kazoo makes the SASL exchange on every connection, before any other request.
        sasl_options=None if security.sasl is None else security.sasl.kazoo_sasl_options(),
    )
    if security.sasl is not None:
        _refused_login_is_auth_failure(client)
    return client


def _refused_login_is_auth_failure(client: KazooClient) -> None:
    """Make a SASL login that a ZooKeeper enforcing SASL (enforce.auth.enabled) refuses end
    the client as any refused login does (AUTH_FAILED).

    Such a server answers a failed exchange with SESSION_CLOSED_REQUIRE_SASL_AUTH, which kazoo
    2.11 raises out of its connection thread: the thread dies with a traceback on stderr and
    the client's calls only see connection losses. Wrapped on this client's own connection
    handler; a kazoo without that method is left as it is."""
    connection = getattr(client, "_connection", None)
    authenticate = getattr(connection, "_authenticate_with_sasl", None)
    if connection is None or authenticate is None:
        return

    def authenticate_or_fail(host: str, timeout: float) -> None:
        try:
            authenticate(host, timeout)
        except SessionClosedRequireSaslError as exc:
            raise AuthFailedError("the server requires a SASL login and refused this one") from exc

    connection._authenticate_with_sasl = authenticate_or_fail


def _started_client(
    hosts: str, session_timeout_ms: int, connect_timeout_s: float, security: ZkClientSecurity
) -> KazooClient:
    """A connected client, its SASL login (if any) accepted; ZkAuthenticationError when
    ZooKeeper refuses the login.

    kazoo reports the connection up before it makes the SASL exchange, and a refused login
    then ends the connection for good (AUTH_FAILED: every call fails at once). So the login is
    checked here with a first request, which waits for the exchange to finish."""
    client = _new_client(hosts, session_timeout_ms, security)
    auth_failed = threading.Event()

    def on_state(state: str) -> None:
        if client.client_state == KeeperState.AUTH_FAILED:
            auth_failed.set()

    client.add_listener(on_state)
    try:
        client.start(timeout=connect_timeout_s)
        if security.sasl is not None:
            client.exists("/")
    except (AuthFailedError, KazooTimeoutError) as exc:
        client.stop()
        client.close()
        if security.sasl is None or not (auth_failed.is_set() or isinstance(exc, AuthFailedError)):
            raise
        raise ZkAuthenticationError(
            f"ZooKeeper at {hosts} refused the SASL DIGEST-MD5 login of user "
            f"{security.sasl.username!r}: a wrong username or password, or a ZooKeeper "
            "without SASL"
        ) from None
    finally:
        client.remove_listener(on_state)
    return client


def _broker_ids(names: Iterable[str]) -> list[int]:
    return sorted(int(name) for name in names if name.isdigit())


def _check_fence(check: Any, controller_epoch_zk_version: int) -> None:
    """ControllerMovedError when a fenced multi-op's check on /controller_epoch failed."""
    if isinstance(check, (BadVersionError, NoNodeError)):
        raise ControllerMovedError(
            f"/controller_epoch is no longer at zk version {controller_epoch_zk_version}: "
            "another broker was elected controller"
        )
    if isinstance(check, Exception) and not isinstance(check, RolledBackError):
        raise check


def _raise_first_error(results: list[Any]) -> None:
    """Raise the first exception a kazoo multi-op reported, if it reported any."""
    for result in results:
        if isinstance(result, Exception):
            raise result
