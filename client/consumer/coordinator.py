"""The consumer's side of a group: Kafka's ConsumerCoordinator (eager rebalance protocol).

    coordinator = ConsumerCoordinator("g", metadata, pool, GroupSettings(...), hooks)
    coordinator.poll(deadline)            # join/sync when needed; the poll thread calls it
    coordinator.commit_sync({tp: OffsetAndMetadata(42)}, timeout_s=30)
    coordinator.fetch_committed([tp])     # {tp: OffsetAndMetadata | None}
    coordinator.close()                   # leave the group, stop the heartbeat thread

* FindCoordinator to any broker; NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE or a broker that
  does not answer make it look again (but bootstrap servers that all refuse connections, before
  any broker has answered, raise BrokersUnreachableError: client/_bootstrap.py).
* Joining: JoinGroup (an empty member id first; MEMBER_ID_REQUIRED gives one to join with),
  then SyncGroup. The leader decodes every member's Subscription, runs the assignor the group
  chose (``partition_assignment_strategy`` names them in order of preference) and sends the
  assignments. Before rejoining, the hooks revoke what it owned (committing first with auto
  commit); after SyncGroup, they assign what it got.
* A heartbeat thread sends Heartbeat every ``heartbeat_interval_ms`` while the member is
  Stable. REBALANCE_IN_PROGRESS asks the poll thread to rejoin; UNKNOWN_MEMBER_ID and
  ILLEGAL_GENERATION drop the generation first. When the poll thread has not polled for
  ``max_poll_interval_ms`` the heartbeat thread leaves the group, as Kafka's does.
* A static member (``group_instance_id``, KIP-345) sends its instance id with every group
  request, joins without the MEMBER_ID_REQUIRED round and never sends LeaveGroup: when it
  restarts within ``session_timeout_ms`` it takes its old place and partitions, and the other
  members do not rebalance. Another consumer with the same instance id fences it
  (FENCED_INSTANCE_ID, raised).

Thread-safety: ``_lock`` guards the membership fields (member id, generation, coordinator,
flags); the poll thread and the heartbeat thread both take it. gRPC stubs are thread-safe.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol, TypeVar

import grpc

from minikafka.client._bootstrap import ask_any_broker
from minikafka.client._channel import RETRIABLE_STATUS, ChannelPool
from minikafka.client._log import event_logger
from minikafka.client._retry import RetryLater, RetryPolicy
from minikafka.client.consumer.assignors import (
    ASSIGNORS,
    Assignment,
    PartitionAssignor,
    Subscription,
)
from minikafka.client.metadata import ClusterMetadata
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.common import Node, OffsetAndMetadata, TopicPartition
from minikafka.proto.errors import ErrorCode, InvalidConfigError, KafkaError, error_for_code

__all__ = [
    "ConsumerCoordinator",
    "ConsumerRebalanceListener",
    "GroupSettings",
    "MembershipHooks",
]

_log = event_logger(__name__)

R = TypeVar("R")

PROTOCOL_TYPE = "consumer"
_COORDINATOR_ERRORS = frozenset(
    {ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.REQUEST_TIMED_OUT}
)


class ConsumerRebalanceListener(Protocol):
    """kafka-python's listener: called from ``poll`` around a rebalance."""

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None: ...

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None: ...


class MembershipHooks(Protocol):
    """What the Consumer does when partitions are taken away or given (poll thread)."""

    def subscribed_topics(self) -> set[str]: ...

    def on_revoke(self) -> None: ...

    def on_assign(self, partitions: set[TopicPartition]) -> None: ...


@dataclass(frozen=True)
class GroupSettings:
    session_timeout_ms: int = 10_000
    heartbeat_interval_ms: int = 3_000
    max_poll_interval_ms: int = 300_000
    request_timeout_ms: int = 30_000
    retry_backoff_ms: int = 100
    partition_assignment_strategy: tuple[str, ...] = ("range",)
    client_id: str = "minikafka-consumer"
    group_instance_id: str | None = None  # a static member (KIP-345)

    def __post_init__(self) -> None:
        if not self.partition_assignment_strategy:
            raise InvalidConfigError("partition_assignment_strategy is empty")
        for name in self.partition_assignment_strategy:
            if name not in ASSIGNORS:
                raise InvalidConfigError(
                    f"unknown partition assignor {name!r}: use one of {sorted(ASSIGNORS)}"
                )
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise InvalidConfigError("heartbeat_interval_ms must be below session_timeout_ms")


class _Retry(Exception):
    """A retriable group error: back off, maybe find the coordinator again, try again."""


class ConsumerCoordinator:
    """Group membership and offsets for one Consumer (see the module docstring)."""

    def __init__(
        self,
        group_id: str,
        metadata: ClusterMetadata,
        pool: ChannelPool,
        settings: GroupSettings,
        hooks: MembershipHooks,
    ) -> None:
        self.group_id = group_id
        self._metadata = metadata
        self._pool = pool
        self._settings = settings
        self._hooks = hooks
        self._assignors: dict[str, PartitionAssignor] = {
            name: ASSIGNORS[name]() for name in settings.partition_assignment_strategy
        }
        self._lock = threading.RLock()  # _reset_generation runs inside and outside it
        self._coordinator: Node | None = None
        self.member_id = ""
        self.generation = -1
        self.protocol: str | None = None
        self._stable = False
        self._rejoin_needed = True
        self._revoked = True  # nothing owned yet
        # The leader's view of the partition counts its last assignment used (Kafka's
        # ConsumerCoordinator metadata snapshot); empty on other members.
        self._assigned_counts: dict[str, int] = {}
        self._last_poll = time.monotonic()
        self._last_heartbeat_ok = time.monotonic()
        self._closed = threading.Event()
        # Until each call's deadline has passed; closing the consumer cuts a back-off short.
        self._retry = RetryPolicy(
            backoff_s=settings.retry_backoff_ms / 1000, overrun=True, sleep=self._closed.wait
        )
        self._heartbeat_thread = threading.Thread(
            target=self._heartbeat_loop, name=f"heartbeat-{group_id}", daemon=True
        )
        self._heartbeat_thread.start()

    # --- coordinator discovery ----------------------------------------------------------------

    def _timeout_s(self) -> float:
        return self._settings.request_timeout_ms / 1000

    def coordinator(self) -> Node | None:
        with self._lock:
            return self._coordinator

    def mark_coordinator_unknown(self, reason: str) -> None:
        with self._lock:
            if self._coordinator is not None:
                _log.info(
                    "group.coordinator_unknown",
                    group_id=self.group_id,
                    coordinator=self._coordinator.id,
                    reason=reason,
                )
            self._coordinator = None

    def _find_coordinator(self) -> Node | None:
        """One FindCoordinator round over the known brokers; None when no answer was usable."""
        known = [n.address for n in self._metadata.brokers().values()]
        request = pb.FindCoordinatorRequest(key=self.group_id, key_type=0)

        def ask(address: str) -> pb.FindCoordinatorResponse:
            stub = pb_grpc.GroupStub(self._pool.get(address))
            return stub.FindCoordinator(request, timeout=self._timeout_s())

        try:
            response = ask_any_broker(known, self._metadata.bootstrap, ask)
        except RetryLater:
            return None
        if response.error_code == ErrorCode.NONE:
            node = Node(response.node_id, response.host, response.port)
            with self._lock:
                self._coordinator = node
            _log.info("group.coordinator_found", group_id=self.group_id, node_id=node.id)
            return node
        error = error_for_code(response.error_code, response.error_message)
        if not error.retriable:
            raise error
        return None

    def ensure_coordinator(self, deadline: float) -> Node:
        def attempt() -> Node:
            node = self.coordinator() or self._find_coordinator()
            if node is None:
                raise RetryLater(f"no coordinator found for group {self.group_id}")
            return node

        return self._retry.call(
            attempt,
            deadline=deadline,
            timed_out=lambda last: error_for_code(ErrorCode.COORDINATOR_NOT_AVAILABLE, str(last)),
        )

    def _retrying(
        self,
        what: str,
        attempt: Callable[[], R],
        deadline: float,
        timed_out: Callable[[RetryLater], Exception],
    ) -> R:
        """``attempt()`` until it returns or ``deadline`` passes, retrying a retriable group
        error (_Retry) and a gRPC failure retrying may fix (the coordinator is then looked up
        again: ``what`` prefixes the reason logged)."""

        def once() -> R:
            try:
                return attempt()
            except _Retry:
                raise RetryLater(f"{what}retriable group error") from None
            except grpc.RpcError as exc:
                if exc.code() not in RETRIABLE_STATUS:
                    raise
                self.mark_coordinator_unknown(f"{what}grpc {exc.code().name}")
                raise RetryLater(f"{what}grpc {exc.code().name}") from None

        return self._retry.call(once, deadline=deadline, timed_out=timed_out)

    def _stub(self, node: Node) -> pb_grpc.GroupStub:
        return pb_grpc.GroupStub(self._pool.get(node.address))

    def _coordinator_error(self, code: int, message: str = "") -> KafkaError:
        error = error_for_code(code, message)
        if code in _COORDINATOR_ERRORS:
            self.mark_coordinator_unknown(error.code.name)
        return error

    # --- membership (poll thread) -------------------------------------------------------------

    def note_poll(self) -> None:
        self._last_poll = time.monotonic()

    def need_rejoin(self) -> bool:
        with self._lock:
            return self._rejoin_needed or self.generation < 0

    def request_rejoin(self) -> None:
        with self._lock:
            self._rejoin_needed = True

    def poll(self, deadline: float) -> bool:
        """Join the group if needed; True when the member is Stable when this returns."""
        self.note_poll()
        if not self.need_rejoin():
            return True
        if not self._hooks.subscribed_topics():
            return False

        def attempt() -> bool:
            if self._closed.is_set():
                return False
            self.ensure_coordinator(max(deadline, time.monotonic() + self._timeout_s()))
            if not self._revoked:
                self._hooks.on_revoke()
                self._revoked = True
            if not self._join_and_sync():
                raise _Retry
            return True

        try:
            return self._retrying("", attempt, deadline, timed_out=lambda last: last)
        except RetryLater:  # not joined by the deadline: the next poll goes on
            return False

    def _join_and_sync(self) -> bool:
        node = self.coordinator()
        if node is None:
            raise _Retry
        settings = self._settings
        topics = sorted(self._hooks.subscribed_topics())
        subscription = Subscription(tuple(topics)).encode()
        with self._lock:
            self._stable = False
            member_id = self.member_id
        request = pb.JoinGroupRequest(
            group_id=self.group_id,
            session_timeout_ms=settings.session_timeout_ms,
            rebalance_timeout_ms=settings.max_poll_interval_ms,
            member_id=member_id,
            protocol_type=PROTOCOL_TYPE,
            protocols=[
                pb.JoinGroupRequest.JoinGroupRequestProtocol(name=name, metadata=subscription)
                for name in self._assignors
            ],
            client_id=settings.client_id,
            **self._instance_id(),
        )
        timeout = (settings.max_poll_interval_ms + 5_000) / 1000
        join = self._stub(node).JoinGroup(request, timeout=timeout)
        code = join.error_code
        if code == ErrorCode.MEMBER_ID_REQUIRED:
            with self._lock:
                self.member_id = join.member_id
            return self._join_and_sync()
        if code != ErrorCode.NONE:
            self._handle_membership_error(code, join.error_message, "JoinGroup")
        with self._lock:
            self.member_id = join.member_id
            self.generation = join.generation_id
            self.protocol = join.protocol_name
        _log.info(
            "group.joined",
            group_id=self.group_id,
            member_id=join.member_id,
            generation_id=join.generation_id,
            protocol=join.protocol_name,
            leader=join.leader == join.member_id,
        )
        assignments: list[pb.SyncGroupRequest.SyncGroupRequestAssignment] = []
        self._assigned_counts = {}
        if join.leader == join.member_id:
            assignments = self._perform_assignment(join)
        sync = self._stub(node).SyncGroup(
            pb.SyncGroupRequest(
                group_id=self.group_id,
                generation_id=join.generation_id,
                member_id=join.member_id,
                protocol_type=PROTOCOL_TYPE,
                protocol_name=join.protocol_name,
                assignments=assignments,
                **self._instance_id(),
            ),
            timeout=timeout,
        )
        if sync.error_code != ErrorCode.NONE:
            self._handle_membership_error(sync.error_code, sync.error_message, "SyncGroup")
        assignment = Assignment.decode(sync.assignment)
        partitions = {TopicPartition(t, p) for t, p in assignment.topic_partitions()}
        with self._lock:
            if self.generation != join.generation_id:
                return False  # reset meanwhile by the heartbeat thread
            self._stable = True
            self._rejoin_needed = False
            # the heartbeat thread starts afresh, as Kafka's resetTimeouts on enable
            self._last_heartbeat_ok = self._last_poll = time.monotonic()
        _log.info(
            "group.assigned",
            group_id=self.group_id,
            member_id=join.member_id,
            generation_id=join.generation_id,
            partitions=sorted(str(tp) for tp in partitions),
        )
        self._revoked = False
        self._hooks.on_assign(partitions)
        return True

    def check_partition_counts(self) -> bool:
        """On the leader: when a subscribed topic's partition count changed since the last
        assignment, ask for a rebalance (True). Poll thread, after a metadata refresh."""
        if not self._assigned_counts or self.need_rejoin():
            return False
        for topic, count in self._assigned_counts.items():
            partitions = self._metadata.partitions_for(topic)
            current = len(partitions) if partitions is not None else 0
            if current != count:
                _log.info(
                    "group.partition_count_changed",
                    group_id=self.group_id,
                    topic=topic,
                    assigned_with=count,
                    now=current,
                )
                self.request_rejoin()
                return True
        return False

    def _handle_membership_error(self, code: int, message: str, request: str) -> None:
        _log.info(
            "group.membership_error",
            group_id=self.group_id,
            request=request,
            error=ErrorCode(code).name if code in ErrorCode._value2member_map_ else code,
        )
        if code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
            self._reset_generation(reset_member_id=code == ErrorCode.UNKNOWN_MEMBER_ID)
            raise _Retry
        if code in (ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS):
            raise _Retry
        error = self._coordinator_error(code, message)
        if error.retriable:
            raise _Retry
        raise error

    def _reset_generation(self, *, reset_member_id: bool) -> None:
        with self._lock:
            self.generation = -1
            self.protocol = None
            self._stable = False
            self._rejoin_needed = True
            if reset_member_id:
                self.member_id = ""

    def _perform_assignment(
        self, join: pb.JoinGroupResponse
    ) -> list[pb.SyncGroupRequest.SyncGroupRequestAssignment]:
        assignor = self._assignors.get(join.protocol_name)
        if assignor is None:
            raise error_for_code(
                ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                f"the group chose assignor {join.protocol_name!r}, which this consumer lacks",
            )
        subscriptions = {m.member_id: Subscription.decode(m.metadata) for m in join.members}
        topics = sorted({t for s in subscriptions.values() for t in s.topics})
        counts: dict[str, int] = {}
        for topic in topics:
            try:
                counts[topic] = len(self._metadata.wait_for_topic(topic, self._timeout_s()))
            except KafkaError as exc:
                _log.warning("group.assign_topic_unknown", topic=topic, error=str(exc))
        result = assignor.assign(counts, subscriptions)
        self._assigned_counts = {t: counts.get(t, 0) for t in topics}
        _log.info(
            "group.assignment_computed",
            group_id=self.group_id,
            generation_id=join.generation_id,
            assignor=join.protocol_name,
            assignment={m: a.topic_partitions() for m, a in result.items()},
        )
        return [
            pb.SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a.encode())
            for m, a in result.items()
        ]

    def _instance_id(self) -> dict[str, str]:
        """The requests' ``group_instance_id`` field, set only for a static member."""
        instance_id = self._settings.group_instance_id
        return {} if instance_id is None else {"group_instance_id": instance_id}

    def maybe_leave_group(self, reason: str) -> None:
        """LeaveGroup (best effort) and forget the membership. A static member sends none,
        as Kafka's consumer does: its place waits for it until its session times out, so a
        restart gets its partitions back without a rebalance."""
        with self._lock:
            member_id, generation, node = self.member_id, self.generation, self._coordinator
        static = self._settings.group_instance_id is not None
        if member_id and node is not None and not static:
            _log.info(
                "group.leaving",
                group_id=self.group_id,
                member_id=member_id,
                generation_id=generation,
                reason=reason,
            )
            try:
                self._stub(node).LeaveGroup(
                    pb.LeaveGroupRequest(
                        group_id=self.group_id,
                        members=[pb.LeaveGroupRequest.MemberIdentity(member_id=member_id)],
                    ),
                    timeout=min(self._timeout_s(), 5.0),
                )
            except grpc.RpcError as exc:
                _log.info("group.leave_failed", group_id=self.group_id, error=exc.code().name)
        self._reset_generation(reset_member_id=True)

    # --- heartbeat thread ---------------------------------------------------------------------

    def _heartbeat_loop(self) -> None:
        interval = self._settings.heartbeat_interval_ms / 1000
        while not self._closed.wait(interval):
            try:
                self._heartbeat_once()
            except Exception as exc:  # the thread must live on; the next round tries again
                _log.warning("group.heartbeat_failed", group_id=self.group_id, error=str(exc))

    def _heartbeat_once(self) -> None:
        settings = self._settings
        with self._lock:
            stable, member_id, generation = self._stable, self.member_id, self.generation
        if not stable:
            return
        now = time.monotonic()
        if now - self._last_poll > settings.max_poll_interval_ms / 1000:
            _log.warning(
                "group.poll_timeout",
                group_id=self.group_id,
                member_id=member_id,
                max_poll_interval_ms=settings.max_poll_interval_ms,
            )
            self.maybe_leave_group("max.poll.interval.ms expired")
            return
        if now - self._last_heartbeat_ok > settings.session_timeout_ms / 1000:
            self.mark_coordinator_unknown("session timeout without a heartbeat answer")
        node = self.coordinator() or self._find_coordinator()
        if node is None:
            return
        try:
            response = self._stub(node).Heartbeat(
                pb.HeartbeatRequest(
                    group_id=self.group_id,
                    generation_id=generation,
                    member_id=member_id,
                    **self._instance_id(),
                ),
                timeout=min(self._timeout_s(), settings.session_timeout_ms / 1000),
            )
        except grpc.RpcError as exc:
            self.mark_coordinator_unknown(f"heartbeat: grpc {exc.code().name}")
            return
        code = response.error_code
        if code == ErrorCode.NONE:
            self._last_heartbeat_ok = time.monotonic()
        elif code == ErrorCode.REBALANCE_IN_PROGRESS:
            self._last_heartbeat_ok = time.monotonic()
            _log.info("group.rebalance_requested", group_id=self.group_id, member_id=member_id)
            self.request_rejoin()
        elif code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
            _log.info(
                "group.heartbeat_rejected",
                group_id=self.group_id,
                member_id=member_id,
                generation_id=generation,
                error=ErrorCode(code).name,
            )
            with self._lock:
                if self.generation == generation:
                    self._reset_generation(reset_member_id=code == ErrorCode.UNKNOWN_MEMBER_ID)
        else:
            self._coordinator_error(code, response.error_message)

    # --- offsets ------------------------------------------------------------------------------

    def commit_sync(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], timeout_s: float
    ) -> None:
        """Commit, retrying coordinator moves until ``timeout_s``; raises on other errors."""
        if not offsets:
            return
        deadline = time.monotonic() + timeout_s
        self._retrying(
            "commit: ",
            lambda: self._commit_once(offsets, deadline),
            deadline,
            timed_out=lambda last: error_for_code(
                ErrorCode.REQUEST_TIMED_OUT,
                f"offset commit for group {self.group_id} did not complete in time",
            ),
        )

    def _commit_once(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], deadline: float
    ) -> None:
        node = self.ensure_coordinator(deadline)
        with self._lock:
            generation, member_id = self.generation, self.member_id
        if generation < 0:
            member_id = ""
        by_topic: dict[str, list[pb.OffsetCommitRequest.OffsetCommitRequestPartition]] = {}
        for tp, committed in offsets.items():
            by_topic.setdefault(tp.topic, []).append(
                pb.OffsetCommitRequest.OffsetCommitRequestPartition(
                    partition_index=tp.partition,
                    committed_offset=committed.offset,
                    committed_leader_epoch=committed.leader_epoch,
                    committed_metadata=committed.metadata,
                )
            )
        response = self._stub(node).OffsetCommit(
            pb.OffsetCommitRequest(
                group_id=self.group_id,
                generation_id=generation,
                member_id=member_id,
                **self._instance_id(),
                topics=[
                    pb.OffsetCommitRequest.OffsetCommitRequestTopic(name=t, partitions=parts)
                    for t, parts in by_topic.items()
                ],
            ),
            timeout=self._timeout_s(),
        )
        for topic in response.topics:
            for part in topic.partitions:
                code = part.error_code
                if code == ErrorCode.NONE:
                    continue
                if code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                    raise _Retry
                if code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
                    with self._lock:
                        current = self.generation == generation  # not rejoined meanwhile
                    if current and generation >= 0:
                        self._reset_generation(reset_member_id=code == ErrorCode.UNKNOWN_MEMBER_ID)
                    raise error_for_code(
                        code,
                        "commit failed: the group rebalanced and gave the partitions to another "
                        "member; poll again to rejoin",
                    )
                if code == ErrorCode.REBALANCE_IN_PROGRESS:
                    self.request_rejoin()
                    raise error_for_code(code, "commit failed: the group is rebalancing")
                error = self._coordinator_error(code, part.error_message)
                if error.retriable:
                    raise _Retry
                raise error
        _log.debug(
            "group.committed",
            group_id=self.group_id,
            generation_id=generation,
            offsets={str(tp): o.offset for tp, o in offsets.items()},
        )

    def fetch_committed(
        self, partitions: Iterable[TopicPartition], timeout_s: float | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        wanted = list(partitions)
        if not wanted:
            return {}
        deadline = time.monotonic() + (timeout_s if timeout_s is not None else self._timeout_s())
        by_topic: dict[str, list[int]] = {}
        for tp in wanted:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        request = pb.OffsetFetchRequest(
            group_id=self.group_id,
            topics=[
                pb.OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=p)
                for t, p in by_topic.items()
            ],
        )

        def attempt() -> dict[TopicPartition, OffsetAndMetadata | None]:
            node = self.ensure_coordinator(deadline)
            response = self._stub(node).OffsetFetch(request, timeout=self._timeout_s())
            if response.error_code != ErrorCode.NONE:
                if response.error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                    raise _Retry
                error = self._coordinator_error(response.error_code, response.error_message)
                if error.retriable:
                    raise _Retry
                raise error
            result: dict[TopicPartition, OffsetAndMetadata | None] = dict.fromkeys(wanted)
            for topic in response.topics:
                for part in topic.partitions:
                    tp = TopicPartition(topic.name, part.partition_index)
                    if part.error_code != ErrorCode.NONE:
                        raise error_for_code(part.error_code, part.error_message)
                    if part.committed_offset >= 0:
                        result[tp] = OffsetAndMetadata(
                            part.committed_offset, part.metadata, part.committed_leader_epoch
                        )
            return result

        return self._retrying(
            "offset fetch: ",
            attempt,
            deadline,
            timed_out=lambda last: error_for_code(
                ErrorCode.REQUEST_TIMED_OUT,
                f"committed offsets of group {self.group_id} not fetched in time",
            ),
        )

    # --- lifecycle ----------------------------------------------------------------------------

    def close(self, *, leave: bool = True) -> None:
        self._closed.set()
        if self._heartbeat_thread.is_alive():
            self._heartbeat_thread.join(timeout=5)
        if leave:
            self.maybe_leave_group("the consumer is closing")

    def abandon(self) -> None:
        """Stop heartbeating without leaving, as a crashed consumer would (tests)."""
        self._closed.set()
