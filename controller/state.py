"""The active controller's in-memory view of the cluster (Kafka's ControllerContext).

Loaded from ZooKeeper when the broker becomes controller, kept up to date by the events it
handles, dropped when it resigns. ZooKeeper stays the truth: every partition state here carries
the znode version it was read or written at, and the next write is conditional on it.

    live brokers        broker id -> (registration, broker epoch = czxid of /brokers/ids/<id>)
    shutting down       broker ids in a controlled shutdown: alive, but never elected leader
    topics              topic -> topic id; assigned replicas per partition (AR order)
    reassignments       per partition being reassigned (KIP-455), its adding and removing
                        replicas; the assigned replicas are then ORS + TRS (ReplicaAssignment)
    partition states    partition -> Versioned[PartitionState] (leader, leader_epoch, isr)
    deletion            topics being deleted, and their replicas not yet deleted

Not thread-safe: only the controller's event thread touches it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from minikafka.proto.cluster_state import PartitionState, Versioned
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode
from minikafka.zk.zk_data import NO_LEADER, BrokerRegistration

__all__ = ["ApiResult", "ControllerContext", "LiveBroker", "PartitionReplica", "ReplicaAssignment"]


class ApiResult(NamedTuple):
    """One item's answer to an admin call: a Kafka error code and its message."""

    error: ErrorCode = ErrorCode.NONE
    message: str = ""


@dataclass(frozen=True)
class LiveBroker:
    registration: BrokerRegistration
    broker_epoch: int

    @property
    def broker_id(self) -> int:
        return self.registration.broker_id


@dataclass(frozen=True, order=True)
class PartitionReplica:
    """One replica of one partition: the unit topic deletion tracks."""

    partition: TopicPartition
    broker_id: int


@dataclass(frozen=True)
class ReplicaAssignment:
    """A partition's replicas and, while it is reassigned, those being added and removed (the
    ``adding_replicas``/``removing_replicas`` of /brokers/topics/<t>).

    ``replicas`` (RS) is then the target replicas (TRS) followed by the original ones (ORS) not
    in it, so TRS[0] is the preferred leader::

        >>> ReplicaAssignment((0, 1, 2)).reassign_to((1, 2, 3))
        ReplicaAssignment(replicas=(1, 2, 3, 0), adding_replicas=(3,), removing_replicas=(0,))

    A cancellation is a reassignment back to the origin replicas. The origin order is lost
    where the target overlaps it (Kafka's caveat): [1, 2, 3] moved to [3, 4, 2] is [3, 4, 2, 1]
    while it runs, and cancelled it is [3, 2, 1].
    """

    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()

    @property
    def origin_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.adding_replicas)

    @property
    def target_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.removing_replicas)

    @property
    def is_being_reassigned(self) -> bool:
        return bool(self.adding_replicas or self.removing_replicas)

    def reassign_to(self, target: Iterable[int]) -> ReplicaAssignment:
        target = tuple(target)
        origin = self.origin_replicas
        full = tuple(dict.fromkeys((*target, *origin)))
        return ReplicaAssignment(
            full,
            tuple(r for r in full if r not in origin),
            tuple(r for r in full if r not in target),
        )


@dataclass
class ControllerContext:
    epoch: int = -1
    epoch_zk_version: int = -1
    live_brokers: dict[int, LiveBroker] = field(default_factory=dict)
    shutting_down: set[int] = field(default_factory=set)
    topic_ids: dict[str, str | None] = field(default_factory=dict)
    assignments: dict[TopicPartition, tuple[int, ...]] = field(default_factory=dict)
    partition_states: dict[TopicPartition, Versioned[PartitionState]] = field(default_factory=dict)
    # KIP-455: the partitions with adding or removing replicas (``assignments`` holds ORS + TRS)
    adding_replicas: dict[TopicPartition, tuple[int, ...]] = field(default_factory=dict)
    removing_replicas: dict[TopicPartition, tuple[int, ...]] = field(default_factory=dict)
    topics_to_delete: set[str] = field(default_factory=set)
    replicas_to_delete: set[PartitionReplica] = field(default_factory=set)
    # KIP-112: per live broker, the replicas it answered KAFKA_STORAGE_ERROR for (a log dir of
    # its went offline); cleared when the broker registers again.
    replicas_on_offline_dirs: dict[int, set[TopicPartition]] = field(default_factory=dict)

    # --- brokers -------------------------------------------------------------------------------

    def is_alive(self, broker_id: int) -> bool:
        """Alive and eligible as leader: registered and not in a controlled shutdown."""
        return broker_id in self.live_brokers and broker_id not in self.shutting_down

    @property
    def live_broker_ids(self) -> set[int]:
        """Brokers that may lead (registered, not shutting down)."""
        return {b for b in self.live_brokers if b not in self.shutting_down}

    @property
    def live_or_shutting_down_ids(self) -> set[int]:
        return set(self.live_brokers)

    @property
    def broker_racks(self) -> dict[int, str]:
        """The ``broker.rack`` of each registered broker that has one (KIP-36)."""
        return {
            broker_id: broker.registration.rack
            for broker_id, broker in self.live_brokers.items()
            if broker.registration.rack is not None
        }

    def broker_epoch(self, broker_id: int) -> int:
        broker = self.live_brokers.get(broker_id)
        return broker.broker_epoch if broker is not None else -1

    # --- topics and partitions -----------------------------------------------------------------

    @property
    def topics(self) -> list[str]:
        return sorted(self.topic_ids)

    def partitions_of(self, topic: str) -> list[TopicPartition]:
        return sorted(tp for tp in self.assignments if tp.topic == topic)

    def all_partitions(self) -> list[TopicPartition]:
        return sorted(self.assignments)

    def partitions_on_broker(self, broker_id: int) -> list[TopicPartition]:
        return sorted(tp for tp, replicas in self.assignments.items() if broker_id in replicas)

    def partitions_led_by(self, broker_id: int) -> list[TopicPartition]:
        return sorted(
            tp for tp, state in self.partition_states.items() if state.value.leader == broker_id
        )

    def leader(self, tp: TopicPartition) -> int:
        state = self.partition_states.get(tp)
        return state.value.leader if state is not None else NO_LEADER

    def live_replicas(self, tp: TopicPartition) -> list[int]:
        """The partition's registered replicas (shutting down included), in AR order."""
        return [r for r in self.assignments.get(tp, ()) if r in self.live_brokers]

    def has_live_leader(self, tp: TopicPartition) -> bool:
        leader = self.leader(tp)
        return leader != NO_LEADER and leader in self.live_brokers

    def add_topic(
        self,
        topic: str,
        topic_id: str | None,
        partitions: dict[int, tuple[int, ...]],
        adding_replicas: Mapping[int, tuple[int, ...]] | None = None,
        removing_replicas: Mapping[int, tuple[int, ...]] | None = None,
    ) -> None:
        self.topic_ids[topic] = topic_id
        for partition, replicas in partitions.items():
            tp = TopicPartition(topic, partition)
            self.set_full_assignment(
                tp,
                ReplicaAssignment(
                    tuple(replicas),
                    tuple((adding_replicas or {}).get(partition, ())),
                    tuple((removing_replicas or {}).get(partition, ())),
                ),
            )

    def full_assignment(self, tp: TopicPartition) -> ReplicaAssignment:
        """The partition's replicas with those being added and removed (empty if unknown)."""
        return ReplicaAssignment(
            self.assignments.get(tp, ()),
            self.adding_replicas.get(tp, ()),
            self.removing_replicas.get(tp, ()),
        )

    def set_full_assignment(self, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
        self.assignments[tp] = assignment.replicas
        for field_map, value in (
            (self.adding_replicas, assignment.adding_replicas),
            (self.removing_replicas, assignment.removing_replicas),
        ):
            if value:
                field_map[tp] = value
            else:
                field_map.pop(tp, None)

    def partitions_being_reassigned(self) -> list[TopicPartition]:
        return sorted(set(self.adding_replicas) | set(self.removing_replicas))

    def remove_topic(self, topic: str) -> None:
        self.topic_ids.pop(topic, None)
        for tp in self.partitions_of(topic):
            self.assignments.pop(tp, None)
            self.partition_states.pop(tp, None)
            self.adding_replicas.pop(tp, None)
            self.removing_replicas.pop(tp, None)
        self.topics_to_delete.discard(topic)
        self.replicas_to_delete = {r for r in self.replicas_to_delete if r.partition.topic != topic}

    def is_being_deleted(self, topic: str) -> bool:
        return topic in self.topics_to_delete

    def leaders(self) -> dict[TopicPartition, int]:
        return {tp: s.value.leader for tp, s in self.partition_states.items()}

    def offline_replicas(self, tp: TopicPartition) -> list[int]:
        return [r for r in self.assignments.get(tp, ()) if not self.is_replica_online(r, tp)]

    def is_replica_online(self, broker_id: int, tp: TopicPartition) -> bool:
        """Registered and the replica's log dir online (Kafka's isReplicaOnline)."""
        return broker_id in self.live_brokers and tp not in self.replicas_on_offline_dirs.get(
            broker_id, ()
        )

    def iter_states(
        self, partitions: Iterable[TopicPartition]
    ) -> Iterator[tuple[TopicPartition, Versioned[PartitionState]]]:
        for tp in partitions:
            state = self.partition_states.get(tp)
            if state is not None:
                yield tp, state
