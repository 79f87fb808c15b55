"""minikafka watch's collector: snapshots from the admin client's answers (a fake here)."""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence

import pytest
from rich.console import Console

from minikafka.client.admin import (
    BrokerReplicas,
    ClusterDescription,
    ConsumerGroupListing,
    FollowerReplica,
    PartitionInfo,
    PartitionReassignment,
    PartitionReplicas,
    TopicDescription,
)
from minikafka.client.cli.watch.collect import ClusterWatcher
from minikafka.client.cli.watch.render import render
from minikafka.proto.common import Node, OffsetAndMetadata, TopicPartition
from minikafka.proto.errors import ErrorCode, KafkaError, RequestTimedOutError, error_for_code


class FakeAdmin:
    def __init__(self) -> None:
        self.live = [0, 1, 2]
        self.controller = 0
        # the metadata still has the ISR before the leader's shrink
        self.topics = {
            "orders": TopicDescription(
                "orders", "id", False, (PartitionInfo(0, 1, 4, (1, 2, 0), (0, 1, 2)),)
            ),
            "__consumer_offsets": TopicDescription(
                "__consumer_offsets", "id2", True, (PartitionInfo(0, 0, 0, (0,), (0,)),)
            ),
        }
        self.answers: dict[int, BrokerReplicas | KafkaError] = {
            0: BrokerReplicas(0, 100, 3, (self._replica(0, False, 9, ()),)),
            1: BrokerReplicas(
                1,
                101,
                3,
                (
                    self._replica(
                        1,
                        True,
                        12,
                        (FollowerReplica(2, 12, 1), FollowerReplica(0, -1, 0)),
                        isr=(1, 2),
                    ),
                ),
            ),
        }
        self.fail: KafkaError | None = None
        self.groups_fail: KafkaError | None = None

    @staticmethod
    def _replica(
        broker: int,
        leader: bool,
        leo: int,
        followers: tuple[FollowerReplica, ...],
        isr: tuple[int, ...] = (0, 1, 2),
    ) -> PartitionReplicas:
        return PartitionReplicas("orders", 0, leader, 1, 4, (1, 2, 0), isr, 10, 0, leo, followers)

    def describe_cluster(self, *, timeout_ms: int | None = None) -> ClusterDescription:
        if self.fail is not None:
            raise self.fail
        return ClusterDescription(
            "c1", self.controller, tuple(Node(b, "h", 9000 + b) for b in self.live)
        )

    def describe_topics(
        self, topics: Sequence[str] | None = None, *, timeout_ms: int | None = None
    ) -> dict[str, TopicDescription]:
        return dict(self.topics)

    def describe_replicas(
        self,
        broker_ids: Iterable[int] | None = None,
        *,
        topics: Sequence[str] = (),
        timeout_ms: int | None = None,
    ) -> dict[int, BrokerReplicas | KafkaError]:
        assert list(topics) == ["orders"]
        return {
            b: self.answers.get(b, error_for_code(ErrorCode.BROKER_NOT_AVAILABLE))
            for b in broker_ids or ()
        }

    def list_groups(
        self, *, states: Sequence[str] = (), timeout_ms: int | None = None
    ) -> list[ConsumerGroupListing]:
        if self.groups_fail is not None:
            raise self.groups_fail
        return [ConsumerGroupListing("billing", False, "Stable")]

    def list_consumer_group_offsets(
        self,
        group_id: str,
        partitions: Iterable[TopicPartition] | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        return {
            TopicPartition("orders", 0): OffsetAndMetadata(7),
            TopicPartition("__consumer_offsets", 0): OffsetAndMetadata(1),
        }


def test_the_leaders_answer_wins_and_followers_fill_in_what_it_does_not_know() -> None:
    admin = FakeAdmin()
    snapshot = ClusterWatcher(admin, clock=lambda: 5.0).snapshot()
    assert [p.name for p in snapshot.partitions] == ["orders-0"]  # internal topics hidden
    p = snapshot.partitions[0]
    assert (p.leader, p.leader_epoch, p.isr, p.high_watermark) == (1, 4, (1, 2), 10)
    # the leader's own LEO, its view of follower 2, and follower 0's own word (leader: -1)
    assert p.log_end_offsets == ((1, 12), (2, 12), (0, 9))
    assert p.under_replicated
    assert [(b.broker_id, b.alive, b.answering, b.broker_epoch) for b in snapshot.brokers] == [
        (0, True, True, 100),
        (1, True, True, 101),
        (2, True, False, -1),
    ]
    assert snapshot.controller_epoch == 3
    (group,) = snapshot.groups
    assert (group.group_id, group.state, group.total_lag) == ("billing", "Stable", 3)


def test_a_dead_broker_is_remembered_and_a_failed_refresh_keeps_the_last_view() -> None:
    admin = FakeAdmin()
    watcher = ClusterWatcher(admin, clock=lambda: 5.0)
    watcher.snapshot()
    admin.live = [0, 2]
    del admin.answers[1]
    admin.groups_fail = error_for_code(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    snapshot = watcher.snapshot()
    dead = snapshot.broker(1)
    assert dead is not None and not dead.alive and dead.address == "h:9001"
    assert dead.broker_epoch == 101
    assert snapshot.groups[0].group_id == "billing"  # kept from the last refresh
    # no leader answered: the metadata's view, without a high watermark
    p = snapshot.partitions[0]
    assert (p.leader, p.isr, p.high_watermark) == (1, (0, 1, 2), -1)
    admin.fail = RequestTimedOutError("nobody")
    failed = watcher.snapshot()
    assert failed.error and failed.partitions == snapshot.partitions


def test_the_first_refresh_failing_raises() -> None:
    admin = FakeAdmin()
    admin.fail = RequestTimedOutError("nobody")
    with pytest.raises(RequestTimedOutError):
        ClusterWatcher(admin).snapshot()


class MovingAdmin(FakeAdmin):
    """An admin that lists reassignments: orders-0 is moving from 1,2,0 to 1,2,3."""

    def __init__(self) -> None:
        super().__init__()
        self.moves: dict[TopicPartition, PartitionReassignment] | KafkaError = {
            TopicPartition("orders", 0): PartitionReassignment((1, 2, 3, 0), (3,), (0,))
        }

    def list_partition_reassignments(
        self, partitions: Iterable[TopicPartition] | None = None, *, timeout_ms: int | None = None
    ) -> dict[TopicPartition, PartitionReassignment]:
        if isinstance(self.moves, KafkaError):
            raise self.moves
        return self.moves


def test_a_partition_being_moved_shows_its_adding_and_removing_replicas() -> None:
    admin = MovingAdmin()
    watcher = ClusterWatcher(admin, clock=lambda: 5.0)
    p = watcher.snapshot().partitions[0]
    assert (p.adding_replicas, p.removing_replicas, p.reassigning) == ((3,), (0,), True)
    text = Console(width=200, record=True, file=io.StringIO())
    text.print(render(watcher.snapshot(), []))
    shown = text.export_text()
    assert "1,2,0 +3 -0" in shown and "reassigning" in shown
    admin.moves = error_for_code(ErrorCode.NOT_CONTROLLER)
    assert not watcher.snapshot().partitions[0].reassigning
    # An admin without the call (FakeAdmin) shows no move.
    assert not ClusterWatcher(FakeAdmin()).snapshot().partitions[0].reassigning
