"""Replication quotas (KIP-73) as the fetch paths see them: Kafka's ``ReplicaQuota`` seam.

Three quotas, each a byte rate over the whole broker that only *throttled* replicas count
against and are held back by (the server's ReplicationQuotaManager measures them, with the
client quotas' rate, and knows which replicas are throttled: broker/server/replication_quotas.py)::

    leader          the leader's answers to followers. A follower fetch is answered without
                    records for a throttled partition while the quota is exceeded, unless the
                    follower is in the ISR; the bytes of every throttled partition answered
                    are recorded (ReplicaManager).
    follower        the follower's fetches. While the quota is exceeded a throttled partition
                    that has not caught up with the leader's HW is left out of the fetch; the
                    bytes fetched for throttled partitions are recorded (ReplicaFetcher).
    alter_log_dirs  copies into ``-future`` logs (KIP-113): every one is throttled; no copy
                    while the quota is exceeded (ReplicaAlterLogDirsFetcher).

The quota is checked before the bytes are counted, as Kafka does: one fetch may overshoot by
its size, the next waits until the measured rate is back under the quota.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from minikafka.proto.common import TopicPartition

__all__ = ["NO_QUOTAS", "UNTHROTTLED", "ReplicaQuota", "ReplicaQuotas"]


class ReplicaQuota(Protocol):
    """One replication quota. Called on the broker's event loop."""

    def is_throttled(self, tp: TopicPartition) -> bool:
        """Whether ``tp``'s replica here counts against this quota."""
        ...

    def is_quota_exceeded(self) -> bool:
        """Whether the measured rate is above the quota now."""
        ...

    def record(self, value: int) -> None:
        """``value`` bytes of throttled replicas moved."""
        ...


class _Unthrottled:
    def is_throttled(self, tp: TopicPartition) -> bool:
        return False

    def is_quota_exceeded(self) -> bool:
        return False

    def record(self, value: int) -> None:
        pass


UNTHROTTLED: ReplicaQuota = _Unthrottled()


@dataclass(frozen=True)
class ReplicaQuotas:
    """The three quotas (the module docstring); unthrottled unless the server passes its own."""

    leader: ReplicaQuota = UNTHROTTLED
    follower: ReplicaQuota = UNTHROTTLED
    alter_log_dirs: ReplicaQuota = UNTHROTTLED


NO_QUOTAS = ReplicaQuotas()
