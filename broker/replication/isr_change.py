"""ISR changes told to the controller in batches (Kafka's ZooKeeper-mode isr change propagation).

A leader writes each ISR change to the partition's state znode at once; the controller learns
of it through ``/isr_change_notification/isr_change_<seq>`` znodes, which make it re-read those
states and send UpdateMetadata. Kafka's ReplicaManager does not write one notification per
change: it records the changed partitions and, every ``check_interval_ms`` (2500), writes one
notification for all of them once no change came for ``linger_ms`` (5000) or the last
notification is ``max_delay_ms`` (60000) old (its IsrChangePropagationConfig). A broker
restarting beside thousands of partitions thus costs the controller a handful of notifications,
not one per partition rejoining an ISR::

    changes = IsrChangePropagation()
    changes.record(TopicPartition("orders", 0), now_ms)
    for partitions in changes.due(now_ms + 6000):     # one notification per list
        zk.create_isr_change_notification(partitions)

Not thread-safe: owned by the broker's event loop, like the ReplicaManager.
"""

from __future__ import annotations

from dataclasses import dataclass

from minikafka.proto.common import TopicPartition

__all__ = [
    "MAX_PARTITIONS_PER_NOTIFICATION",
    "IsrChangePropagation",
    "IsrChangePropagationConfig",
]

# ZooKeeper refuses a znode over jute.maxbuffer (1 MB): with topic names up to 249 characters a
# notification of 3000 partitions stays under it. Kafka writes one znode whatever the count.
MAX_PARTITIONS_PER_NOTIFICATION = 3000


@dataclass(frozen=True)
class IsrChangePropagationConfig:
    """Kafka's constants (ZkIsrManager); not broker config keys there either."""

    check_interval_ms: int = 2500
    linger_ms: int = 5000
    max_delay_ms: int = 60000


class IsrChangePropagation:
    """The partitions whose ISR changed since the last notification, and when to send it."""

    def __init__(
        self, config: IsrChangePropagationConfig | None = None, *, now_ms: int = 0
    ) -> None:
        self.config = config or IsrChangePropagationConfig()
        self._changed: set[TopicPartition] = set()
        self._last_change_ms = now_ms
        self._last_propagation_ms = now_ms

    def __len__(self) -> int:
        return len(self._changed)

    def record(self, tp: TopicPartition, now_ms: int) -> None:
        """The leader wrote a new ISR for ``tp`` to its state znode."""
        self._changed.add(tp)
        self._last_change_ms = now_ms

    def due(self, now_ms: int) -> list[list[TopicPartition]]:
        """The notifications to write now (each a list of partitions), emptying the record;
        none while changes keep coming, unless the last notification is too old."""
        config = self.config
        if not self._changed or (
            self._last_change_ms + config.linger_ms >= now_ms
            and self._last_propagation_ms + config.max_delay_ms >= now_ms
        ):
            return []
        changed = sorted(self._changed)
        self._changed.clear()
        self._last_propagation_ms = now_ms
        step = MAX_PARTITIONS_PER_NOTIFICATION
        return [changed[i : i + step] for i in range(0, len(changed), step)]

    def restore(self, partitions: list[TopicPartition]) -> None:
        """A notification could not be written: send its partitions with the next one."""
        self._changed.update(partitions)
