"""What ``minikafka watch`` shows, as values: one ``Snapshot`` of the cluster per refresh, and
the change lines between two snapshots.

    lines = change_lines(previous, snapshot)   # previous None: the whole cluster, line by line
    # 02:10:03 broker 1 dead
    # 02:10:03 orders-0 leader 1 -> 2 epoch 4 -> 5 isr [1,2,3] -> [2,3] under-replicated

A change line names one thing and each of its fields that changed, old -> new: a broker
(alive / dead, answering or not, its registration epoch), the controller and its epoch, a
partition (leader, leader epoch, replicas, ISR, and whether it became under-replicated, offline
or fully replicated again), a consumer group (appeared, its state, gone), and the cluster as a
whole when no broker answers. Offsets and lag move with every produce and are shown by the live
view, not as lines. ISRs are kept sorted, so a reordered ISR is not a change.

Pure values and functions: no I/O, safe from any thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

__all__ = [
    "BrokerView",
    "GroupPartitionLag",
    "GroupView",
    "PartitionView",
    "ReplicaReport",
    "Snapshot",
    "change_lines",
    "changes",
    "format_ids",
]

UNKNOWN = -1

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
T = TypeVar("T")


def format_ids(ids: Iterable[int]) -> str:
    return "[" + ",".join(str(i) for i in ids) + "]"


@dataclass(frozen=True)
class BrokerView:
    broker_id: int
    alive: bool  # registered in ZooKeeper, as the brokers' metadata says
    answering: bool = False  # answered DescribeReplicas this round
    address: str = ""  # host:port; "" = never seen
    broker_epoch: int = UNKNOWN  # the czxid of its registration; the last one known


@dataclass(frozen=True)
class ReplicaReport:
    """One replica as the broker hosting it reports itself (DescribeReplicas): its own LEO and
    HW, and the leader epoch it knows of. A follower's HW lags the leader's by a fetch."""

    broker_id: int
    log_end_offset: int
    high_watermark: int
    leader_epoch: int
    is_leader: bool


@dataclass(frozen=True)
class PartitionView:
    topic: str
    partition: int
    leader: int  # -1 = none
    leader_epoch: int
    replicas: tuple[int, ...]  # assigned, preferred leader first
    isr: tuple[int, ...]  # sorted
    high_watermark: int = UNKNOWN  # -1 = no leader answered
    log_start_offset: int = UNKNOWN
    log_end_offsets: tuple[tuple[int, int], ...] = ()  # (replica, LEO); -1 = not known
    reports: tuple[ReplicaReport, ...] = ()  # each answering replica's own view, by broker id
    adding_replicas: tuple[int, ...] = ()  # while the partition is being moved (KIP-455)
    removing_replicas: tuple[int, ...] = ()

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def offline(self) -> bool:
        return self.leader < 0

    @property
    def reassigning(self) -> bool:
        return bool(self.adding_replicas or self.removing_replicas)

    @property
    def under_replicated(self) -> bool:
        return not self.offline and len(self.isr) < len(self.replicas)

    def log_end_offset(self, replica: int) -> int:
        return dict(self.log_end_offsets).get(replica, UNKNOWN)


@dataclass(frozen=True)
class GroupPartitionLag:
    topic: str
    partition: int
    committed_offset: int
    end_offset: int  # the partition's high watermark; -1 = not known

    @property
    def lag(self) -> int | None:
        if self.end_offset < 0:
            return None
        return max(self.end_offset - self.committed_offset, 0)


@dataclass(frozen=True)
class GroupView:
    group_id: str
    state: str  # Kafka's names: Stable, Empty, PreparingRebalance, ...
    partitions: tuple[GroupPartitionLag, ...] = ()

    @property
    def total_lag(self) -> int | None:
        lags = [p.lag for p in self.partitions]
        if any(lag is None for lag in lags):
            return None
        return sum(lag for lag in lags if lag is not None)


@dataclass(frozen=True)
class Snapshot:
    time: float  # seconds since the epoch
    cluster_id: str = ""
    controller_id: int = UNKNOWN
    controller_epoch: int = UNKNOWN
    brokers: tuple[BrokerView, ...] = ()  # by id, dead ones included
    partitions: tuple[PartitionView, ...] = ()  # by topic and partition
    groups: tuple[GroupView, ...] = ()  # by id
    error: str = ""  # the last refresh failed: the rest is from an earlier one

    def broker(self, broker_id: int) -> BrokerView | None:
        return next((b for b in self.brokers if b.broker_id == broker_id), None)


def change_lines(old: Snapshot | None, new: Snapshot) -> list[str]:
    """``changes`` with the new snapshot's local time in front: ``HH:MM:SS <change>``."""
    stamp = time.strftime("%H:%M:%S", time.localtime(new.time))
    return [f"{stamp} {change}" for change in changes(old, new)]


def changes(old: Snapshot | None, new: Snapshot) -> list[str]:
    """What changed from ``old`` to ``new`` (everything, when ``old`` is None)."""
    if new.error:
        if old is None or not old.error:
            return [f"no broker answers: {new.error}"]
        return []
    lines = [] if old is None or not old.error else ["brokers answer again"]
    base = old if old is not None else Snapshot(new.time)
    lines += _controller(base, new)
    lines += _keyed(
        {b.broker_id: b for b in base.brokers},
        {b.broker_id: b for b in new.brokers},
        _broker_new,
        _broker_changed,
        lambda b: f"broker {b.broker_id} gone",
    )
    lines += _keyed(
        {(p.topic, p.partition): p for p in base.partitions},
        {(p.topic, p.partition): p for p in new.partitions},
        _partition_new,
        _partition_changed,
        lambda p: f"{p.name} gone",
    )
    lines += _keyed(
        {g.group_id: g for g in base.groups},
        {g.group_id: g for g in new.groups},
        lambda g: f"group {g.group_id} {g.state}{_lag_text(g)}",
        _group_changed,
        lambda g: f"group {g.group_id} gone",
    )
    return lines


def _keyed(
    old: Mapping[K, V],
    new: Mapping[K, V],
    added: Callable[[V], str],
    changed: Callable[[V, V], str],
    removed: Callable[[V], str],
) -> list[str]:
    lines = []
    for key, value in new.items():
        before = old.get(key)
        if before is None:
            lines.append(added(value))
        elif before != value:
            line = changed(before, value)
            if line:
                lines.append(line)
    lines += [removed(value) for key, value in old.items() if key not in new]
    return lines


def _controller(old: Snapshot, new: Snapshot) -> list[str]:
    if (old.controller_id, old.controller_epoch) == (new.controller_id, new.controller_epoch):
        return []
    if old.controller_id == UNKNOWN and old.controller_epoch == UNKNOWN:
        return [f"controller {_id(new.controller_id)} epoch {_num(new.controller_epoch)}"]
    parts = ["controller"]
    parts += _field("", old.controller_id, new.controller_id, _id)
    if new.controller_epoch != UNKNOWN:
        parts += _field("epoch", old.controller_epoch, new.controller_epoch, _num)
    if len(parts) == 1:  # only the epoch went unknown: nothing to say
        return []
    if old.controller_id == new.controller_id:
        parts.insert(1, _id(new.controller_id))
    return [" ".join(parts)]


def _broker_new(broker: BrokerView) -> str:
    text = f"broker {broker.broker_id} {'alive' if broker.alive else 'dead'}"
    if broker.address:
        text += f" {broker.address}"
    if broker.alive and broker.broker_epoch != UNKNOWN:
        text += f" epoch {broker.broker_epoch}"
    if broker.alive and not broker.answering:
        text += " not answering"
    return text


def _broker_changed(old: BrokerView, new: BrokerView) -> str:
    name = f"broker {new.broker_id}"
    if not new.alive:
        return f"{name} dead" if old.alive else ""
    parts = [name]
    if not old.alive:
        parts.append("alive")
    elif old.answering != new.answering:
        parts.append("answering" if new.answering else "not answering")
    if new.broker_epoch != UNKNOWN and new.broker_epoch != old.broker_epoch:
        if old.alive and old.broker_epoch != UNKNOWN:
            parts.append(f"epoch {old.broker_epoch} -> {new.broker_epoch}")
        else:
            parts.append(f"epoch {new.broker_epoch}")
    if not old.alive and not new.answering:
        parts.append("not answering")
    return " ".join(parts) if len(parts) > 1 else ""


def _partition_new(p: PartitionView) -> str:
    text = (
        f"{p.name} leader {_id(p.leader)} epoch {p.leader_epoch} "
        f"replicas {format_ids(p.replicas)} isr {format_ids(p.isr)}"
    )
    return text + _health(p)


def _partition_changed(old: PartitionView, new: PartitionView) -> str:
    parts = [new.name]
    parts += _field("leader", old.leader, new.leader, _id)
    parts += _field("epoch", old.leader_epoch, new.leader_epoch, str)
    parts += _field("replicas", old.replicas, new.replicas, format_ids)
    parts += _field("isr", old.isr, new.isr, format_ids)
    if len(parts) == 1:  # offsets only
        return ""
    health = _health(new)
    if not health and (old.offline or old.under_replicated):
        health = " fully replicated" if len(new.isr) == len(new.replicas) else ""
    return " ".join(parts) + health


def _health(p: PartitionView) -> str:
    if p.offline:
        return " offline"
    if p.under_replicated:
        return " under-replicated"
    return ""


def _group_changed(old: GroupView, new: GroupView) -> str:
    if old.state == new.state:
        return ""
    return f"group {new.group_id} state {old.state} -> {new.state}"


def _lag_text(group: GroupView) -> str:
    lag = group.total_lag
    return "" if lag is None or not group.partitions else f" lag {lag}"


def _field(name: str, old: T, new: T, show: Callable[[T], str]) -> list[str]:
    if old == new:
        return []
    words = [name] if name else []
    return [*words, f"{show(old)} -> {show(new)}"]


def _id(broker_id: int) -> str:
    return "none" if broker_id < 0 else str(broker_id)


def _num(value: int) -> str:
    return "?" if value == UNKNOWN else str(value)
