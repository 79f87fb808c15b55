"""IsrChangePropagation: Kafka's rules for when ISR changes are told to the controller."""

from __future__ import annotations

from minikafka.broker.replication.isr_change import (
    MAX_PARTITIONS_PER_NOTIFICATION,
    IsrChangePropagation,
    IsrChangePropagationConfig,
)
from minikafka.proto.common import TopicPartition

CONFIG = IsrChangePropagationConfig(check_interval_ms=2500, linger_ms=5000, max_delay_ms=60000)


def tp(partition: int) -> TopicPartition:
    return TopicPartition("t", partition)


def test_nothing_recorded_nothing_due() -> None:
    changes = IsrChangePropagation(CONFIG, now_ms=0)
    assert changes.due(1_000_000) == []


def test_changes_wait_for_a_pause_of_linger_ms_then_go_in_one_notification() -> None:
    changes = IsrChangePropagation(CONFIG, now_ms=0)
    changes.record(tp(0), 1000)
    changes.record(tp(1), 3000)
    changes.record(tp(0), 4000)
    assert changes.due(9000) == []  # 5000 ms after the last change, not more
    assert changes.due(9001) == [[tp(0), tp(1)]]
    assert len(changes) == 0
    assert changes.due(20_000) == []


def test_changes_that_never_pause_go_out_after_max_delay_ms() -> None:
    changes = IsrChangePropagation(CONFIG, now_ms=0)
    now = 0
    sent: list[list[TopicPartition]] = []
    while not sent:
        now += CONFIG.check_interval_ms
        changes.record(tp(now), now - 1)  # a change before every check
        sent = changes.due(now)
    assert now == 62_500  # the first check past 60000 ms since the last propagation
    assert len(sent) == 1 and len(sent[0]) == now // CONFIG.check_interval_ms
    changes.record(tp(-1), now + 1)
    assert changes.due(now + CONFIG.check_interval_ms) == []  # max delay counts afresh


def test_thousands_of_changes_split_into_notifications_znodes_accept() -> None:
    changes = IsrChangePropagation(CONFIG, now_ms=0)
    count = 2 * MAX_PARTITIONS_PER_NOTIFICATION + 1
    for partition in range(count):
        changes.record(tp(partition), 0)
    sent = changes.due(10_000)
    assert [len(n) for n in sent] == [
        MAX_PARTITIONS_PER_NOTIFICATION,
        MAX_PARTITIONS_PER_NOTIFICATION,
        1,
    ]
    assert sorted(p for n in sent for p in n) == [tp(p) for p in range(count)]


def test_a_failed_write_is_sent_with_the_next_notification() -> None:
    changes = IsrChangePropagation(CONFIG, now_ms=0)
    changes.record(tp(0), 0)
    [failed] = changes.due(6000)
    changes.restore(failed)
    changes.record(tp(1), 6000)
    assert changes.due(11_001) == [[tp(0), tp(1)]]
