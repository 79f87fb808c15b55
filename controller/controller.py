"""KafkaController: the cluster's controller, as Kafka runs it in ZooKeeper mode.

Every broker runs one; the one whose broker holds the ephemeral ``/controller`` znode is
active, the others wait for that znode to go away::

    controller = KafkaController(zk, broker_id=1, config=ControllerConfig(num_partitions=3))
    controller.startup()                          # joins the election, returns at once
    results = controller.create_topics([NewTopic("orders", 3, 2)]).result()
    results["orders"].error                       # ErrorCode.NONE, or NOT_CONTROLLER, ...
    controller.shutdown()

Design: one thread and one queue of events (Kafka's ControllerEventManager). ZooKeeper watch
callbacks, session-state changes, admin calls, controlled shutdowns, broker responses and the
auto-rebalance timer only put an event on the queue; the thread handles events one at a time,
so the state (controller.state.ControllerContext) needs no lock. Admin calls return
``concurrent.futures.Future`` of per-item results with Kafka error codes; they never raise.

Becoming controller (``controller_elected``): win ZkStore.elect_controller (creates /controller
and bumps /controller_epoch in one multi-op), watch /brokers/ids, /brokers/topics (and each
topic), /admin/delete_topics, /isr_change_notification and /admin/preferred_replica_election,
load brokers (with broker epochs), topics, assignments and partition states, then resync every
broker: UpdateMetadata to all, LeaderAndIsr for each partition to its live replicas, leaders
elected for partitions that have none. Every request carries controller_id, controller_epoch and
the target's broker_epoch.

Fencing: every write of a partition state or an assignment is conditional on the znode version
of /controller_epoch seen at election. When a newer controller has been elected the write fails
with ControllerMovedError and this controller resigns (``controller_resigned``), as it does when
its ZooKeeper session is lost; it then takes part in the next election. A broker's answer
STALE_CONTROLLER_EPOCH makes it re-read /controller_epoch and resign if it moved on.

This module is the event loop; the work is delegated, per term as controller, to the
partition state machine (controller.partition_state_machine: every partition state write, with
the leader election rules of controller.election), the replica state machine
(controller.replica_state_machine: replicas going online/offline, leaving the ISR), the topic
deletion manager (controller.topic_deletion) and the reassignment manager
(controller.reassignment: KIP-455, resumed from ZooKeeper by each new controller). Imbalance
is in controller.rebalance, the requests per broker in controller.request_batch.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import queue
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

import grpc
import structlog

from minikafka.controller import rebalance
from minikafka.controller.admin_validation import validate_create_partitions, validate_create_topic
from minikafka.controller.channels import BrokerChannels, GrpcBrokerChannels, inter_broker_endpoint
from minikafka.controller.config import ControllerConfig
from minikafka.controller.partition_state_machine import PartitionStateMachine
from minikafka.controller.reassignment import ReassignmentManager
from minikafka.controller.replica_state_machine import ReplicaStateMachine
from minikafka.controller.request_batch import RequestBatch
from minikafka.controller.state import (
    ApiResult,
    ControllerContext,
    LiveBroker,
    ReplicaAssignment,
)
from minikafka.controller.topic_deletion import TopicDeletionManager
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto.cluster_state import BadZNodeVersionError, Versioned
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode, KafkaError
from minikafka.zk.errors import ControllerMovedError
from minikafka.zk.zk_data import TopicAssignment, random_uuid_base64
from minikafka.zk.zk_store import KazooState, Watch, ZkStore

__all__ = [
    "ApiResult",
    "ControlledShutdownResult",
    "ControllerMetrics",
    "CreateTopicResult",
    "ElectionType",
    "KafkaController",
    "ListReassignmentsResult",
    "NewPartitions",
    "NewTopic",
    "ReplicaAssignment",
]

log = structlog.get_logger("controller")

R = TypeVar("R")


class ElectionType(enum.IntEnum):
    """Kafka's ElectionType (proto ElectionType has the same numbers)."""

    PREFERRED = 0
    UNCLEAN = 1


@dataclass(frozen=True)
class NewTopic:
    """One topic of a CreateTopics request. -1 means the broker default (num.partitions,
    default.replication.factor); with ``assignments`` (partition -> replicas) both must be -1."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    assignments: Mapping[int, Sequence[int]] | None = None
    configs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class NewPartitions:
    """CreatePartitions for one topic: the new total, and replicas of each new partition."""

    count: int
    assignments: Sequence[Sequence[int]] | None = None


class CreateTopicResult(NamedTuple):
    error: ErrorCode = ErrorCode.NONE
    message: str = ""
    topic_id: str = ""
    num_partitions: int = -1
    replication_factor: int = -1


class ListReassignmentsResult(NamedTuple):
    """ListPartitionReassignments: the partitions being reassigned, or a request's error."""

    error: ErrorCode = ErrorCode.NONE
    message: str = ""
    reassignments: dict[TopicPartition, ReplicaAssignment] = {}


class ControlledShutdownResult(NamedTuple):
    error: ErrorCode
    remaining: list[TopicPartition]


class ControllerMetrics(NamedTuple):
    """Kafka's ``kafka.controller:type=KafkaController`` gauges, recomputed by the event thread
    after every event (as Kafka's updateMetrics); zero on a broker that is not controller."""

    offline_partitions_count: int = 0  # partitions without a live leader
    global_partition_count: int = 0
    global_topic_count: int = 0
    preferred_replica_imbalance_count: int = 0  # led by a replica other than the first


class _Event(NamedTuple):
    name: str
    action: Callable[[], None]


_STOP = _Event("Stop", lambda: None)


class KafkaController:
    """See the module docstring. Public methods may be called from any thread."""

    def __init__(
        self,
        zk: ZkStore,
        broker_id: int,
        config: ControllerConfig | None = None,
        channels: BrokerChannels | None = None,
        credentials: grpc.ChannelCredentials | None = None,
    ) -> None:
        """``credentials``: TLS to the brokers' control plane listener when it is SSL."""
        self._zk = zk
        self.broker_id = broker_id
        self.config = config or ControllerConfig()
        self._channels: BrokerChannels = channels or GrpcBrokerChannels(
            request_timeout_ms=self.config.request_timeout_ms,
            retry_backoff_ms=self.config.retry_backoff_ms,
            max_message_bytes=self.config.socket_request_max_bytes,
            sasl=self.config.control_plane_sasl,
            credentials=credentials,
        )
        self._queue: queue.Queue[_Event] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._session_lost = False
        self._controller_watch: Watch | None = None
        # The fields below belong to the event thread.
        self._context: ControllerContext | None = None
        # Per term as controller, on the context: see _on_controller_failover.
        self._partition_sm: PartitionStateMachine | None = None
        self._replica_sm: ReplicaStateMachine | None = None
        self._deletion_manager: TopicDeletionManager | None = None
        self._reassignment_manager: ReassignmentManager | None = None
        self._zk_reassignment_present = False
        self._watches: list[Watch] = []
        self._topic_watches: dict[str, Watch] = {}
        self._next_rebalance: float | None = None
        self._last_controller_id: int | None = None  # the controller this broker last saw
        # Read from any thread: plain attribute reads.
        self._active = False
        self._epoch = -1
        self._metrics = ControllerMetrics()

    # --- lifecycle -----------------------------------------------------------------------------

    def startup(self) -> None:
        """Start the event thread and join the election."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(
            target=self._run, name=f"controller-event-thread-{self.broker_id}", daemon=True
        )
        self._thread.start()
        self._zk.client.add_listener(self._on_session_state)
        self._enqueue("Startup", self._on_startup)

    def shutdown(self) -> None:
        """Resign (deleting /controller if held, so another broker takes over at once), stop."""
        if self._thread is None or self._stopping.is_set():
            return
        self._enqueue("Shutdown", self._on_shutdown)
        self._stopping.set()
        self._queue.put(_STOP)
        self._thread.join(timeout=30)
        self._zk.client.remove_listener(self._on_session_state)
        self._channels.close()

    @property
    def is_active(self) -> bool:
        """Whether this broker is the controller now."""
        return self._active

    @property
    def epoch(self) -> int:
        """The controller epoch while active, else -1."""
        return self._epoch if self._active else -1

    @property
    def metrics(self) -> ControllerMetrics:
        """As of the last event processed (an immutable value: safe from any thread)."""
        return self._metrics

    # --- the API (any thread) ------------------------------------------------------------------

    def create_topics(
        self, new_topics: Sequence[NewTopic], *, validate_only: bool = False
    ) -> Future[dict[str, CreateTopicResult]]:
        return self._submit(
            "CreateTopics",
            lambda: self._create_topics(new_topics, validate_only),
            lambda code, msg: {t.name: CreateTopicResult(code, msg) for t in new_topics},
        )

    def delete_topics(self, names: Sequence[str]) -> Future[dict[str, ApiResult]]:
        return self._submit(
            "DeleteTopics",
            lambda: self._delete_topics(names),
            lambda code, msg: {name: ApiResult(code, msg) for name in names},
        )

    def create_partitions(
        self, requests: Mapping[str, NewPartitions], *, validate_only: bool = False
    ) -> Future[dict[str, ApiResult]]:
        return self._submit(
            "CreatePartitions",
            lambda: self._create_partitions(requests, validate_only),
            lambda code, msg: {name: ApiResult(code, msg) for name in requests},
        )

    def elect_leaders(
        self,
        election_type: ElectionType | int,
        partitions: Iterable[TopicPartition] | None = None,
    ) -> Future[dict[TopicPartition, ApiResult]]:
        """Preferred or unclean election; ``partitions`` None means every partition.

        On NOT_CONTROLLER with ``partitions`` None the result is empty: the caller answers the
        whole request with the error.
        """
        wanted = None if partitions is None else list(partitions)
        kind = ElectionType(int(election_type))
        return self._submit(
            "ElectLeaders",
            lambda: self._elect_leaders(kind, wanted),
            lambda code, msg: {tp: ApiResult(code, msg) for tp in wanted or ()},
        )

    def alter_partition_reassignments(
        self, requests: Mapping[TopicPartition, Sequence[int] | None]
    ) -> Future[dict[TopicPartition, ApiResult]]:
        """KIP-455: target replicas per partition, None to cancel its reassignment. On
        NOT_CONTROLLER every partition gets the error."""
        wanted = {tp: None if r is None else tuple(r) for tp, r in requests.items()}
        return self._submit(
            "ApiPartitionReassignment",
            lambda: self._reassignments.reassign(wanted),
            lambda code, msg: {tp: ApiResult(code, msg) for tp in wanted},
        )

    def list_partition_reassignments(
        self, partitions: Iterable[TopicPartition] | None = None
    ) -> Future[ListReassignmentsResult]:
        """The named partitions being reassigned (the others are left out), or all (None)."""
        wanted = None if partitions is None else list(partitions)
        return self._submit(
            "ListPartitionReassignments",
            lambda: ListReassignmentsResult(
                reassignments=self._reassignments.list_reassignments(wanted)
            ),
            lambda code, msg: ListReassignmentsResult(code, msg, {}),
        )

    def controlled_shutdown(
        self, broker_id: int, broker_epoch: int
    ) -> Future[ControlledShutdownResult]:
        return self._submit(
            "ControlledShutdown",
            lambda: self._controlled_shutdown(broker_id, broker_epoch),
            lambda code, msg: ControlledShutdownResult(code, []),
        )

    def enable_unclean_leader_election(
        self, topic: str | None = None, *, default: bool | None = None
    ) -> None:
        """A config change turned ``unclean.leader.election.enable`` on, for ``topic`` or (None)
        as the broker default, which ``default`` replaces when given: partitions left without a
        leader are elected again under the new setting, as Kafka's controller does on its
        TopicUncleanLeaderElectionEnable event."""

        def action() -> None:
            if default is not None:
                self.config = dataclasses.replace(
                    self.config, unclean_leader_election_enable=default
                )
            if not self._active:
                return
            ctx = self._ctx
            offline = [
                tp
                for tp in ctx.all_partitions()
                if (topic is None or tp.topic == topic)
                and tp in ctx.partition_states
                and not ctx.has_live_leader(tp)
            ]
            if not offline:
                return
            batch = self._new_batch()
            self._partitions.online_partition_state_change(offline, batch)
            batch.send(self._channels)

        self._enqueue("UncleanLeaderElectionEnable", action)

    # --- the event thread ----------------------------------------------------------------------

    def _enqueue(self, name: str, action: Callable[[], None]) -> None:
        self._queue.put(_Event(name, action))

    def _submit(
        self,
        name: str,
        work: Callable[[], R],
        on_error: Callable[[ErrorCode, str], R],
    ) -> Future[R]:
        future: Future[R] = Future()
        if self._stopping.is_set() or self._thread is None:
            future.set_result(on_error(ErrorCode.NOT_CONTROLLER, "the controller is not running"))
            return future

        def action() -> None:
            if not future.set_running_or_notify_cancel():
                return
            if not self._active:
                future.set_result(
                    on_error(ErrorCode.NOT_CONTROLLER, f"broker {self.broker_id} is not controller")
                )
                return
            try:
                future.set_result(work())
            except ControllerMovedError as exc:
                future.set_result(on_error(ErrorCode.NOT_CONTROLLER, str(exc)))
                raise
            except KafkaError as exc:
                future.set_result(on_error(exc.code, exc.message))
            except Exception as exc:
                future.set_result(on_error(ErrorCode.UNKNOWN_SERVER_ERROR, repr(exc)))
                raise

        self._enqueue(name, action)
        return future

    def _run(self) -> None:
        while True:
            timeout = None
            if self._next_rebalance is not None:
                timeout = max(0.0, self._next_rebalance - time.monotonic())
            try:
                event = self._queue.get(timeout=timeout)
            except queue.Empty:
                event = _Event("AutoPreferredReplicaLeaderElection", self._on_auto_rebalance)
            if event is _STOP:
                break
            self._process(event)
        # Futures still queued after shutdown get NOT_CONTROLLER from their own action.
        self._active = False
        while True:
            try:
                event = self._queue.get_nowait()
            except queue.Empty:
                break
            if event is not _STOP:
                self._process(event)

    def _process(self, event: _Event) -> None:
        try:
            event.action()
        except ControllerMovedError as exc:
            log.warning(
                "controller_fenced", broker_id=self.broker_id, epoch=self._epoch, reason=str(exc)
            )
            self._resign("a newer controller was elected")
            self._process(_Event("Reelect", self._maybe_elect))
        except Exception:
            log.exception(
                "controller_event_failed", controller_event=event.name, broker_id=self.broker_id
            )
        finally:
            if self._partition_sm is not None:
                self._partition_sm.event_done()
            self._update_metrics()

    def _update_metrics(self) -> None:
        ctx = self._context
        if ctx is None or not self._active:
            self._metrics = ControllerMetrics()
            return
        offline = imbalanced = 0
        for tp, replicas in ctx.assignments.items():
            if ctx.is_being_deleted(tp.topic):
                continue
            if not ctx.has_live_leader(tp):
                offline += 1
            elif replicas and ctx.leader(tp) != replicas[0]:
                imbalanced += 1
        self._metrics = ControllerMetrics(
            offline_partitions_count=offline,
            global_partition_count=len(ctx.assignments),
            global_topic_count=len(ctx.topic_ids),
            preferred_replica_imbalance_count=imbalanced,
        )

    # --- election and resignation --------------------------------------------------------------

    def _on_startup(self) -> None:
        self._controller_watch = self._zk.watch_controller(
            lambda registration: self._enqueue("ControllerChange", self._on_controller_change)
        )
        self._maybe_elect()

    def _on_shutdown(self) -> None:
        if self._controller_watch is not None:
            self._controller_watch.cancel()
        if self._active:
            self._resign("shutting down")
            # Without ZooKeeper the znode cannot be deleted (kazoo would hold the request until
            # it reconnects); it goes when the session expires.
            if self._zk.connected:
                try:
                    self._zk.resign_controller()
                except Exception:
                    log.warning("controller_znode_not_deleted", broker_id=self.broker_id)
        self._stopping.set()

    def _on_session_state(self, state: str) -> None:
        # kazoo's thread: only note and enqueue.
        if state == KazooState.LOST:
            self._session_lost = True
            self._enqueue("Expire", self._on_session_expired)
        elif state == KazooState.CONNECTED and self._session_lost:
            self._session_lost = False
            self._enqueue("Reelect", self._maybe_elect)

    def _on_session_expired(self) -> None:
        if self._active:
            self._resign("zookeeper session expired")

    def _on_controller_change(self) -> None:
        if self._stopping.is_set():
            return
        current = self._zk.get_controller()
        if current is None:
            self._maybe_elect()
        else:
            self._last_controller_id = current.broker_id
            if current.broker_id != self.broker_id and self._active:
                self._resign(f"broker {current.broker_id} is controller now")

    def _maybe_elect(self) -> None:
        if self._active or self._stopping.is_set():
            return
        won = self._zk.elect_controller(self.broker_id)
        if won is None:
            current = self._zk.get_controller()
            if current is not None:
                self._last_controller_id = current.broker_id
            log.info(
                "controller_standby",
                broker_id=self.broker_id,
                controller_id=current.broker_id if current else None,
            )
            return
        try:
            self._on_controller_failover(won)
        except ControllerMovedError:
            raise
        except Exception:
            # Kafka's "controller move": give the role up so that another broker (or this one,
            # when the /controller watch fires) starts over from ZooKeeper.
            log.exception("controller_failover_failed", broker_id=self.broker_id, epoch=won.value)
            self._resign("failover failed")
            try:
                self._zk.resign_controller()
            except Exception:
                log.warning("controller_znode_not_deleted", broker_id=self.broker_id)

    def _resign(self, reason: str) -> None:
        if not self._active and self._context is None:
            return
        for watch in self._watches:
            watch.cancel()
        for watch in self._topic_watches.values():
            watch.cancel()
        self._watches.clear()
        self._topic_watches.clear()
        self._channels.remove_all()
        if self._reassignment_manager is not None:
            self._reassignment_manager.close()
        self._reassignment_manager = None
        self._zk_reassignment_present = False
        self._context = None
        self._partition_sm = self._replica_sm = self._deletion_manager = None
        self._next_rebalance = None
        self._active = False
        log.info("controller_resigned", broker_id=self.broker_id, epoch=self._epoch, reason=reason)

    def _on_controller_failover(self, won: Versioned[int]) -> None:
        ctx = ControllerContext(epoch=won.value, epoch_zk_version=won.zk_version)
        self._context = ctx
        self._partition_sm = PartitionStateMachine(ctx, self._zk, lambda: self.config)
        self._replica_sm = ReplicaStateMachine(ctx, self._partition_sm)
        self._deletion_manager = TopicDeletionManager(
            ctx, self._zk, lambda: self.config, self._new_batch, self._channels, self._forget_topic
        )
        self._reassignment_manager = ReassignmentManager(
            ctx,
            self._zk,
            self._partition_sm,
            self._new_batch,
            self._channels,
            self._watch_reassigning_partition,
        )
        self._epoch = won.value
        self._active = True
        log.info("controller_elected", broker_id=self.broker_id, epoch=won.value)
        zk = self._zk
        self._watches = [
            zk.watch_broker_ids(lambda ids: self._enqueue("BrokerChange", self._on_broker_change)),
            zk.watch_topics(lambda names: self._enqueue("TopicChange", self._on_topic_change)),
            zk.watch_topic_deletions(
                lambda names: self._enqueue("TopicDeletion", self._on_topic_deletion)
            ),
            zk.watch_isr_change_notifications(
                lambda names: self._enqueue("IsrChangeNotification", self._on_isr_change)
            ),
            zk.watch_log_dir_event_notifications(
                lambda names: self._enqueue("LogDirEventNotification", self._on_log_dir_event)
            ),
            zk.watch_preferred_replica_election(
                lambda partitions: self._enqueue(
                    "ReplicaLeaderElection", self._on_preferred_replica_election_znode
                )
            ),
        ]
        for broker in self._read_live_brokers().values():
            self._add_live_broker(broker)
        previous, self._last_controller_id = self._last_controller_id, self.broker_id
        if previous is not None and previous != self.broker_id and previous not in ctx.live_brokers:
            # The old controller is gone: nobody else saw it die (it was the one watching).
            log.warning(
                "broker_failed", broker_id=previous, controller_epoch=ctx.epoch, was_controller=True
            )
        for topic in zk.get_all_topics():
            self._load_topic(topic, with_states=True)
        for topic in zk.get_topics_marked_for_deletion():
            self._deletions.enqueue(topic)
            self._reassignments.forget_topic(topic)
        # Fresh states were just read: the pending notifications say nothing new.
        zk.delete_isr_change_notifications(zk.get_isr_change_notification_names())
        # As Kafka: the LeaderAndIsr sent below to every replica learns offline log dirs anew.
        zk.delete_log_dir_event_notifications(zk.get_log_dir_event_notification_names())

        batch = self._new_batch()
        batch.add_update_metadata(ctx.live_brokers, ctx.all_partitions())
        for tp in ctx.all_partitions():
            if ctx.is_being_deleted(tp.topic):
                continue
            if tp in ctx.partition_states and ctx.has_live_leader(tp):
                batch.add_leader_and_isr(ctx.live_replicas(tp), tp)
        self._partitions.online_partition_state_change(ctx.all_partitions(), batch)
        batch.send(self._channels)  # leaders first, as in _on_broker_failure
        # Brokers that died while no controller was watching: their replicas go offline.
        registered = set(ctx.live_brokers)
        self._replicas.replicas_offline(
            {r for replicas in ctx.assignments.values() for r in replicas} - registered, batch
        )
        batch.send(self._channels)
        self._deletions.resume()
        self._on_preferred_replica_election_znode()
        # KIP-455: reassignments left by the previous controller go on; the znode's watch
        # fires at once and starts what /admin/reassign_partitions asks for.
        self._reassignments.resume(lambda tp, assignment: True)
        self._watches.append(zk.watch_partition_reassignment(self._on_reassign_znode_threadsafe))
        self._schedule_rebalance()

    @property
    def _ctx(self) -> ControllerContext:
        if self._context is None:
            raise ControllerMovedError(f"broker {self.broker_id} is not the controller")
        return self._context

    @property
    def _partitions(self) -> PartitionStateMachine:
        if self._partition_sm is None:
            raise ControllerMovedError(f"broker {self.broker_id} is not the controller")
        return self._partition_sm

    @property
    def _replicas(self) -> ReplicaStateMachine:
        if self._replica_sm is None:
            raise ControllerMovedError(f"broker {self.broker_id} is not the controller")
        return self._replica_sm

    @property
    def _reassignments(self) -> ReassignmentManager:
        if self._reassignment_manager is None:
            raise ControllerMovedError(f"broker {self.broker_id} is not the controller")
        return self._reassignment_manager

    @property
    def _deletions(self) -> TopicDeletionManager:
        if self._deletion_manager is None:
            raise ControllerMovedError(f"broker {self.broker_id} is not the controller")
        return self._deletion_manager

    # --- loading -------------------------------------------------------------------------------

    def _read_live_brokers(self) -> dict[int, LiveBroker]:
        brokers = {}
        for broker_id in self._zk.get_live_broker_ids():
            found = self._zk.get_broker_and_epoch(broker_id)
            if found is not None:
                brokers[broker_id] = LiveBroker(*found)
        return brokers

    def _add_live_broker(self, broker: LiveBroker) -> None:
        self._ctx.live_brokers[broker.broker_id] = broker
        # KIP-291: the controller's requests go over the control plane listener.
        endpoint = inter_broker_endpoint(broker.registration, self.config.control_plane_listener)
        self._channels.add_broker(broker.broker_id, endpoint)

    def _load_topic(self, topic: str, *, with_states: bool) -> TopicAssignment | None:
        ctx = self._ctx
        read = self._zk.get_topic(topic)
        if read is None:
            return None
        assignment = read.value
        if assignment.topic_id is None:
            # Written by a tool that predates topic ids: give it one, as Kafka's controller does.
            assignment = TopicAssignment(
                topic,
                random_uuid_base64(),
                assignment.partitions,
                assignment.adding_replicas,
                assignment.removing_replicas,
            )
            try:
                self._zk.update_topic(
                    assignment, read.zk_version, controller_epoch_zk_version=ctx.epoch_zk_version
                )
                log.info("topic_id_assigned", topic=topic, topic_id=assignment.topic_id)
            except BadZNodeVersionError:
                return self._load_topic(topic, with_states=with_states)
        ctx.add_topic(
            topic,
            assignment.topic_id,
            dict(assignment.partitions),
            assignment.adding_replicas,
            assignment.removing_replicas,
        )
        if with_states:
            self._partitions.reload_states(
                TopicPartition(topic, partition) for partition in assignment.partitions
            )
        if topic not in self._topic_watches:

            def on_topic_change(_: TopicAssignment | None) -> None:
                self._enqueue(
                    "PartitionModifications", lambda: self._on_partition_modifications(topic)
                )

            self._topic_watches[topic] = self._zk.watch_topic(topic, on_topic_change)
        return assignment

    # --- requests to the brokers ---------------------------------------------------------------

    def _new_batch(self) -> RequestBatch:
        batch = RequestBatch(self._ctx, self.broker_id, self.config.inter_broker_listener_name)
        batch.response_callback = functools.partial(self._on_response_threadsafe, self._ctx)
        return batch

    # --- brokers -------------------------------------------------------------------------------

    def _on_broker_change(self) -> None:
        if not self._active:
            return
        ctx = self._ctx
        current = self._read_live_brokers()
        known = dict(ctx.live_brokers)
        dead = set(known) - set(current)
        new = set(current) - set(known)
        bounced = {
            b for b in set(known) & set(current) if known[b].broker_epoch != current[b].broker_epoch
        }
        if not (dead or new or bounced):
            return
        for broker_id in sorted(dead | bounced):
            ctx.live_brokers.pop(broker_id, None)
            ctx.replicas_on_offline_dirs.pop(broker_id, None)  # a restart brings its dirs back
            ctx.shutting_down.discard(broker_id)
            self._channels.remove_broker(broker_id)
        if dead | bounced:
            self._on_broker_failure(dead | bounced)
        for broker_id in sorted(new | bounced):
            self._add_live_broker(current[broker_id])
        if new | bounced:
            self._on_broker_startup(new | bounced)

    def _on_broker_failure(self, dead: set[int]) -> None:
        ctx = self._ctx
        for broker_id in sorted(dead):
            log.warning("broker_failed", broker_id=broker_id, controller_epoch=ctx.epoch)
        # As Kafka's onReplicasBecomeOffline: the new leaders are told before the dead
        # replicas leave the other partitions' ISRs (with thousands of partitions those
        # writes take seconds, and the partitions without a leader should not wait for them).
        batch = self._new_batch()
        self._partitions.elect_for_failed_leaders(dead, batch)
        batch.add_update_metadata(ctx.live_brokers)  # every broker learns who is gone
        batch.send(self._channels)
        self._replicas.replicas_offline(dead, batch)
        batch.send(self._channels)

    def _on_broker_startup(self, new: set[int]) -> None:
        ctx = self._ctx
        for broker_id in sorted(new):
            log.info(
                "broker_added",
                broker_id=broker_id,
                broker_epoch=ctx.broker_epoch(broker_id),
                controller_epoch=ctx.epoch,
            )
        batch = self._new_batch()
        batch.add_update_metadata(new, ctx.all_partitions())
        batch.add_update_metadata(set(ctx.live_brokers) - new)
        self._replicas.replicas_online(new, batch)
        self._partitions.online_partition_state_change(ctx.all_partitions(), batch)
        batch.send(self._channels)
        self._deletions.resume()
        # A broker of a reassignment's target is back: its replica starts again.
        self._reassignments.resume(lambda tp, a: bool(set(a.target_replicas) & new))

    # --- topics --------------------------------------------------------------------------------

    def _on_topic_change(self) -> None:
        if not self._active:
            return
        ctx = self._ctx
        names = set(self._zk.get_all_topics())
        for topic in sorted(set(ctx.topic_ids) - names):
            self._forget_topic(topic)
        batch = self._new_batch()
        for topic in sorted(names - set(ctx.topic_ids)):
            # A new topic's states are not read first, as in Kafka: creating them finds any
            # left by an earlier controller (online_partition_state_change goes by those).
            assignment = self._load_topic(topic, with_states=False)
            if assignment is None:
                continue
            log.info(
                "topic_created",
                topic=topic,
                topic_id=assignment.topic_id,
                partitions={p: list(r) for p, r in sorted(assignment.partitions.items())},
            )
            self._partitions.online_partition_state_change(ctx.partitions_of(topic), batch)
        batch.send(self._channels)

    def _forget_topic(self, topic: str) -> None:
        self._reassignments.forget_topic(topic)
        self._ctx.remove_topic(topic)
        watch = self._topic_watches.pop(topic, None)
        if watch is not None:
            watch.cancel()

    def _on_partition_modifications(self, topic: str) -> None:
        if not self._active:
            return
        ctx = self._ctx
        if topic not in ctx.topic_ids or ctx.is_being_deleted(topic):
            return
        read = self._zk.get_topic(topic)
        if read is None:
            return
        added = {
            p: r
            for p, r in read.value.partitions.items()
            if TopicPartition(topic, p) not in ctx.assignments
        }
        if not added:
            return
        ctx.add_topic(topic, ctx.topic_ids.get(topic), added)
        log.info(
            "partitions_added",
            topic=topic,
            partitions={p: list(r) for p, r in sorted(added.items())},
        )
        batch = self._new_batch()
        self._partitions.online_partition_state_change(
            [TopicPartition(topic, p) for p in added], batch
        )
        batch.send(self._channels)

    def _create_topics(
        self, new_topics: Sequence[NewTopic], validate_only: bool
    ) -> dict[str, CreateTopicResult]:
        results: dict[str, CreateTopicResult] = {}
        existing = self._zk.get_all_topics()
        created = False
        for new_topic in new_topics:
            try:
                result = self._create_topic(new_topic, existing, validate_only)
            except KafkaError as exc:
                result = CreateTopicResult(exc.code, exc.message)
            results[new_topic.name] = result
            if result.error == ErrorCode.NONE and not validate_only:
                existing.append(new_topic.name)
                created = True
        if created:
            self._on_topic_change()  # elect leaders now rather than when the watch fires
        return results

    def _create_topic(
        self, new_topic: NewTopic, existing: list[str], validate_only: bool
    ) -> CreateTopicResult:
        assignment = validate_create_topic(
            new_topic,
            existing,
            self._ctx.live_brokers,
            self._ctx.live_broker_ids,
            default_num_partitions=self.config.num_partitions,
            default_replication_factor=self.config.default_replication_factor,
            racks=self._ctx.broker_racks,
        )
        rf = len(next(iter(assignment.values())))
        if validate_only:
            return CreateTopicResult(
                num_partitions=len(assignment), replication_factor=rf, topic_id=""
            )
        topic_id = random_uuid_base64()
        self._zk.create_topic(
            TopicAssignment(new_topic.name, topic_id, assignment), dict(new_topic.configs)
        )
        return CreateTopicResult(
            topic_id=topic_id, num_partitions=len(assignment), replication_factor=rf
        )

    def _create_partitions(
        self, requests: Mapping[str, NewPartitions], validate_only: bool
    ) -> dict[str, ApiResult]:
        results: dict[str, ApiResult] = {}
        for topic, request in requests.items():
            try:
                results[topic] = self._create_partitions_for(topic, request, validate_only)
            except KafkaError as exc:
                results[topic] = ApiResult(exc.code, exc.message)
        return results

    def _create_partitions_for(
        self, topic: str, request: NewPartitions, validate_only: bool
    ) -> ApiResult:
        ctx = self._ctx
        read = self._zk.get_topic(topic)
        current = None if read is None else read.value.partitions
        added = validate_create_partitions(
            topic,
            current,
            request,
            ctx.live_brokers,
            ctx.live_broker_ids,
            queued_for_deletion=ctx.is_being_deleted(topic),
            racks=ctx.broker_racks,
        )
        assert read is not None and current is not None
        if validate_only:
            return ApiResult()
        partitions = {**current, **added}
        assignment = TopicAssignment(
            topic,
            read.value.topic_id,
            partitions,
            read.value.adding_replicas,
            read.value.removing_replicas,
        )
        self._zk.update_topic(
            assignment, read.zk_version, controller_epoch_zk_version=ctx.epoch_zk_version
        )
        self._on_partition_modifications(topic)
        return ApiResult()

    # --- topic deletion ------------------------------------------------------------------------

    def _delete_topics(self, names: Sequence[str]) -> dict[str, ApiResult]:
        results: dict[str, ApiResult] = {}
        for name in names:
            if not self.config.delete_topic_enable:
                results[name] = ApiResult(
                    ErrorCode.TOPIC_DELETION_DISABLED, "Topic deletion is disabled."
                )
                continue
            try:
                self._zk.mark_topic_for_deletion(name)
            except KafkaError as exc:
                results[name] = ApiResult(exc.code, exc.message)
                continue
            results[name] = ApiResult()
        self._on_topic_deletion()
        return results

    def _on_topic_deletion(self) -> None:
        if not self._active:
            return
        marked = self._zk.get_topics_marked_for_deletion()
        self._deletions.on_marked(marked)
        for topic in marked:
            # Its deletion stops every replica, those being added too (Kafka lets a running
            # reassignment finish first; a topic being deleted has no use for it).
            self._reassignments.forget_topic(topic)

    def _on_response_threadsafe(
        self, context: ControllerContext, broker_id: int, request: Any, response: Any
    ) -> None:
        # A sender thread: only enqueue. ``context`` is the term as controller that sent it.
        if response.error_code == ErrorCode.STALE_CONTROLLER_EPOCH:
            self._enqueue("ControllerEpochCheck", self._check_controller_epoch)
        if isinstance(request, pb.LeaderAndIsrRequest):
            self._enqueue(
                "LeaderAndIsrResponseReceived",
                lambda: self._on_leader_and_isr_response(context, broker_id, request, response),
            )
        if isinstance(request, pb.StopReplicaRequest):
            self._enqueue(
                "TopicDeletionStopReplicaResponseReceived",
                lambda: self._on_stop_replica_response(context, broker_id, request, response),
            )

    def _check_controller_epoch(self) -> None:
        """A broker saw a newer controller epoch than ours: resign if ZooKeeper agrees."""
        if not self._active:
            return
        ctx = self._ctx
        current = self._zk.get_controller_epoch()
        if current is not None and (
            current.value != ctx.epoch or current.zk_version != ctx.epoch_zk_version
        ):
            raise ControllerMovedError(
                f"/controller_epoch is {current.value}, this controller has epoch {ctx.epoch}"
            )

    def _on_stop_replica_response(
        self,
        context: ControllerContext | None,
        broker_id: int,
        request: pb.StopReplicaRequest,
        response: pb.StopReplicaResponse,
    ) -> None:
        if context is None or context is not self._context:
            return  # sent by an earlier term as controller
        self._deletions.on_stop_replica_response(broker_id, request, response)

    # --- log dir failures (KIP-112) -------------------------------------------------------------

    def _on_log_dir_event(self) -> None:
        """A broker lost a log dir: send it LeaderAndIsr for every replica it holds; its
        answer (KAFKA_STORAGE_ERROR per partition) says which replicas went offline."""
        if not self._active:
            return
        ctx = self._ctx
        names = self._zk.get_log_dir_event_notification_names()
        if not names:
            return
        brokers: set[int] = set()
        try:
            for name in names:
                broker_id = self._zk.get_log_dir_event_notification(name)
                if broker_id is not None:
                    brokers.add(broker_id)
            batch = self._new_batch()
            for broker_id in sorted(brokers):
                log.warning(
                    "log_dir_event",
                    broker_id=broker_id,
                    controller_epoch=ctx.epoch,
                    kind="failure",
                )
                self._replicas.probe_replicas(broker_id, batch)
            batch.send(self._channels)
        finally:
            self._zk.delete_log_dir_event_notifications(names)

    def _on_leader_and_isr_response(
        self,
        context: ControllerContext | None,
        broker_id: int,
        request: pb.LeaderAndIsrRequest,
        response: pb.LeaderAndIsrResponse,
    ) -> None:
        if context is None or context is not self._context:
            return  # sent by an earlier term as controller
        ctx = self._ctx
        if response.error_code or request.broker_epoch != ctx.broker_epoch(broker_id):
            return  # refused whole, or sent to an earlier registration of the broker
        new = self._replicas.record_log_dir_answers(broker_id, response)
        if new:
            batch = self._new_batch()
            self._replicas.log_dir_replicas_offline(broker_id, new, batch)
            batch.send(self._channels)

    # --- ISR changes and preferred elections ---------------------------------------------------

    def _on_isr_change(self) -> None:
        if not self._active:
            return
        ctx = self._ctx
        names = self._zk.get_isr_change_notification_names()
        if not names:
            return
        changed: set[TopicPartition] = set()
        for name in names:
            partitions = self._zk.get_isr_change_notification(name)
            if partitions:
                changed |= partitions
        self._zk.delete_isr_change_notifications(names)
        updated = []
        wanted = [
            tp
            for tp in sorted(changed)
            if tp in ctx.assignments and not ctx.is_being_deleted(tp.topic)
        ]
        previous = {tp: ctx.partition_states.get(tp) for tp in wanted}
        states = self._partitions.reload_states(wanted)
        for tp in wanted:
            old = previous[tp]
            new = states.get(tp)
            if new is None:
                continue
            updated.append(tp)
            log.info(
                "isr_changed",
                topic=tp.topic,
                partition=tp.partition,
                leader=new.value.leader,
                leader_epoch=new.value.leader_epoch,
                isr=list(new.value.isr),
                previous_isr=list(old.value.isr) if old else None,
                reason="isr change notification",
            )
        if updated:
            batch = self._new_batch()
            batch.add_update_metadata(ctx.live_brokers, updated)
            batch.send(self._channels)
        for tp in updated:
            if tp in ctx.adding_replicas or tp in ctx.removing_replicas:
                self._reassignments.on_isr_change(tp)

    # --- partition reassignment (KIP-455) ------------------------------------------------------

    def _watch_reassigning_partition(self, tp: TopicPartition) -> Watch:
        def on_state(_: Any) -> None:
            # kazoo's thread: only enqueue.
            self._enqueue("PartitionReassignmentIsrChange", lambda: self._on_reassign_isr(tp))

        return self._zk.watch_partition_state(tp, on_state)

    def _on_reassign_isr(self, tp: TopicPartition) -> None:
        if self._active:
            self._reassignments.on_isr_change(tp)

    def _on_reassign_znode_threadsafe(self, exists: bool) -> None:
        # kazoo's thread: only enqueue. Kafka's handler acts on the znode's creation only: the
        # controller's own rewrites of it (entries completed) start nothing again.
        def action() -> None:
            appeared = exists and not self._zk_reassignment_present
            self._zk_reassignment_present = exists
            if appeared and self._active:
                self._reassignments.on_zk_reassignment()

        self._enqueue("ZkPartitionReassignment", action)

    def _on_preferred_replica_election_znode(self) -> None:
        if not self._active:
            return
        partitions = self._zk.get_preferred_replica_election()
        if partitions is None:
            return
        wanted = sorted(partitions) if partitions else self._ctx.all_partitions()
        self._elect_leaders(ElectionType.PREFERRED, wanted)
        self._zk.delete_preferred_replica_election()

    def _elect_leaders(
        self, kind: ElectionType, partitions: Sequence[TopicPartition] | None
    ) -> dict[TopicPartition, ApiResult]:
        ctx = self._ctx
        wanted = ctx.all_partitions() if partitions is None else list(partitions)
        results: dict[TopicPartition, ApiResult] = {}
        batch = self._new_batch()
        for tp in wanted:
            if tp not in ctx.assignments or tp not in ctx.partition_states:
                results[tp] = ApiResult(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Partition {tp} does not exist."
                )
                continue
            if ctx.is_being_deleted(tp.topic):
                results[tp] = ApiResult(
                    ErrorCode.INVALID_TOPIC_EXCEPTION, f"Deletion of topic {tp.topic} in progress."
                )
                continue
            results[tp] = self._elect_one(kind, tp, batch)
        batch.send(self._channels)
        elected = [str(tp) for tp, r in results.items() if r.error == ErrorCode.NONE]
        log.info(
            "preferred_election" if kind == ElectionType.PREFERRED else "unclean_election",
            requested=len(wanted),
            elected=elected,
            controller_epoch=ctx.epoch,
        )
        return results

    def _elect_one(self, kind: ElectionType, tp: TopicPartition, batch: RequestBatch) -> ApiResult:
        ctx = self._ctx
        if kind == ElectionType.PREFERRED:
            if ctx.leader(tp) == ctx.assignments[tp][0]:
                return ApiResult(ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed.")
            if self._partitions.elect_preferred(tp) is None:
                return ApiResult(
                    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                    f"Failed to elect leader for partition {tp} under strategy "
                    "PreferredReplicaPartitionLeaderElectionStrategy",
                )
        else:
            if ctx.has_live_leader(tp) and ctx.leader(tp) not in ctx.shutting_down:
                return ApiResult(ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed.")
            if self._partitions.elect_unclean(tp) is None:
                return ApiResult(
                    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                    f"Failed to elect leader for partition {tp} under strategy "
                    "OfflinePartitionLeaderElectionStrategy(true)",
                )
        self._partitions.announce(tp, batch)
        return ApiResult()

    def _schedule_rebalance(self) -> None:
        if self._active and self.config.auto_leader_rebalance_enable:
            interval = self.config.leader_imbalance_check_interval_seconds
            self._next_rebalance = time.monotonic() + interval
        else:
            self._next_rebalance = None

    def _on_auto_rebalance(self) -> None:
        self._schedule_rebalance()
        if not self._active:
            return
        ctx = self._ctx

        def eligible(tp: TopicPartition) -> bool:
            state = ctx.partition_states.get(tp)
            preferred = ctx.assignments[tp][0]
            return (
                state is not None
                and not ctx.is_being_deleted(tp.topic)
                and ctx.is_alive(preferred)
                and preferred in state.value.isr
            )

        assignments = {
            tp: r for tp, r in ctx.assignments.items() if not ctx.is_being_deleted(tp.topic)
        }
        candidates = rebalance.partitions_to_rebalance(
            assignments,
            ctx.leaders(),
            self.config.leader_imbalance_per_broker_percentage,
            eligible,
        )
        if candidates:
            log.info("auto_leader_rebalance", partitions=[str(tp) for tp in candidates])
            self._elect_leaders(ElectionType.PREFERRED, candidates)

    # --- controlled shutdown -------------------------------------------------------------------

    def _controlled_shutdown(self, broker_id: int, broker_epoch: int) -> ControlledShutdownResult:
        ctx = self._ctx
        if broker_id not in ctx.live_brokers:
            return ControlledShutdownResult(ErrorCode.BROKER_NOT_AVAILABLE, [])
        known_epoch = ctx.broker_epoch(broker_id)
        if broker_epoch != -1 and broker_epoch != known_epoch:
            log.warning(
                "controlled_shutdown_stale_broker_epoch",
                broker_id=broker_id,
                broker_epoch=broker_epoch,
                known_broker_epoch=known_epoch,
            )
            return ControlledShutdownResult(ErrorCode.STALE_BROKER_EPOCH, [])
        ctx.shutting_down.add(broker_id)
        log.info("controlled_shutdown", broker_id=broker_id, broker_epoch=broker_epoch)
        batch = self._new_batch()
        for tp in ctx.partitions_on_broker(broker_id):
            assignment = ctx.assignments[tp]
            state = ctx.partition_states.get(tp)
            if state is None or len(assignment) < 2 or ctx.is_being_deleted(tp.topic):
                continue
            if state.value.leader == broker_id:
                if self._partitions.elect_away_from(tp, broker_id) is not None:
                    self._partitions.announce(tp, batch)
            else:
                self._replicas.shut_down_follower(broker_id, tp, state, batch)
        batch.send(self._channels)
        # Still led by the broker: partitions some other live replica could take over (the
        # broker retries for those). Where every other replica is dead or shutting down too,
        # leadership has nowhere to go, and waiting cannot change that: the last broker of a
        # cluster stops at once.
        led = [
            tp for tp in ctx.partitions_led_by(broker_id) if len(ctx.assignments.get(tp, ())) > 1
        ]
        remaining = [
            tp for tp in led if any(ctx.is_alive(r) for r in ctx.assignments[tp] if r != broker_id)
        ]
        log.info(
            "controlled_shutdown_done",
            broker_id=broker_id,
            remaining=[str(tp) for tp in remaining],
            kept_without_successor=len(led) - len(remaining),
        )
        return ControlledShutdownResult(ErrorCode.NONE, remaining)
