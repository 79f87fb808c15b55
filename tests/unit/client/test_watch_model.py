"""minikafka watch's view model: change lines between two snapshots, and the rendered view."""

from __future__ import annotations

import io
import time
from dataclasses import replace

from rich.console import Console

from minikafka.client.cli.watch import follow_lines
from minikafka.client.cli.watch.model import (
    BrokerView,
    GroupPartitionLag,
    GroupView,
    PartitionView,
    Snapshot,
    change_lines,
    changes,
)
from minikafka.client.cli.watch.render import render

T0 = time.mktime((2026, 11, 25, 2, 10, 3, 0, 0, -1))


def _brokers(*dead: int) -> tuple[BrokerView, ...]:
    return tuple(
        BrokerView(
            b,
            alive=b not in dead,
            answering=b not in dead,
            address=f"h:{9091 + b}",
            broker_epoch=100 + b,
        )
        for b in (1, 2, 3)
    )


def healthy() -> Snapshot:
    return Snapshot(
        time=T0,
        cluster_id="c1",
        controller_id=1,
        controller_epoch=3,
        brokers=_brokers(),
        partitions=(
            PartitionView(
                "orders", 0, 1, 4, (1, 2, 3), (1, 2, 3), 10, 0, ((1, 10), (2, 10), (3, 10))
            ),
            PartitionView("orders", 1, 2, 0, (2, 3, 1), (1, 2, 3), 7, 0, ((2, 7), (3, 7), (1, 7))),
        ),
        groups=(GroupView("billing", "Stable", (GroupPartitionLag("orders", 0, 6, 10),)),),
    )


def after_kill() -> Snapshot:
    before = healthy()
    return replace(
        before,
        time=T0 + 7,
        controller_id=2,
        controller_epoch=4,
        brokers=_brokers(1),
        partitions=(
            replace(before.partitions[0], leader=2, leader_epoch=5, isr=(2, 3)),
            replace(before.partitions[1], isr=(2, 3)),
        ),
    )


def test_first_snapshot_lists_the_whole_cluster() -> None:
    assert changes(None, healthy()) == [
        "controller 1 epoch 3",
        "broker 1 alive h:9092 epoch 101",
        "broker 2 alive h:9093 epoch 102",
        "broker 3 alive h:9094 epoch 103",
        "orders-0 leader 1 epoch 4 replicas [1,2,3] isr [1,2,3]",
        "orders-1 leader 2 epoch 0 replicas [2,3,1] isr [1,2,3]",
        "group billing Stable lag 4",
    ]


def test_a_kill_reads_as_dead_broker_new_leader_epoch_bump_and_shrunk_isr() -> None:
    lines = change_lines(healthy(), after_kill())
    assert lines == [
        "02:10:10 controller 1 -> 2 epoch 3 -> 4",
        "02:10:10 broker 1 dead",
        "02:10:10 orders-0 leader 1 -> 2 epoch 4 -> 5 isr [1,2,3] -> [2,3] under-replicated",
        "02:10:10 orders-1 isr [1,2,3] -> [2,3] under-replicated",
    ]


def test_the_rejoin_reads_as_alive_with_a_new_epoch_and_isr_expanding() -> None:
    dead = after_kill()
    back = replace(
        dead,
        brokers=tuple(
            replace(b, alive=True, answering=True, broker_epoch=200) if b.broker_id == 1 else b
            for b in dead.brokers
        ),
        partitions=tuple(replace(p, isr=(1, 2, 3)) for p in dead.partitions),
    )
    assert changes(dead, back) == [
        "broker 1 alive epoch 200",
        "orders-0 isr [2,3] -> [1,2,3] fully replicated",
        "orders-1 isr [2,3] -> [1,2,3] fully replicated",
    ]


def test_offsets_moving_and_lag_are_not_change_lines() -> None:
    before = healthy()
    moved = replace(
        before,
        partitions=tuple(
            replace(p, high_watermark=p.high_watermark + 5, log_end_offsets=())
            for p in before.partitions
        ),
        groups=(GroupView("billing", "Stable", (GroupPartitionLag("orders", 0, 6, 15),)),),
    )
    assert changes(before, moved) == []


def test_offline_partition_group_state_and_a_silent_broker() -> None:
    before = healthy()
    after = replace(
        before,
        brokers=tuple(
            replace(b, answering=False) if b.broker_id == 3 else b for b in before.brokers
        ),
        partitions=(replace(before.partitions[0], leader=-1, isr=(1,)), before.partitions[1]),
        groups=(replace(before.groups[0], state="PreparingRebalance"),),
    )
    assert changes(before, after) == [
        "broker 3 not answering",
        "orders-0 leader 1 -> none isr [1,2,3] -> [1] offline",
        "group billing state Stable -> PreparingRebalance",
    ]


def test_no_broker_answering_is_one_line_until_it_recovers() -> None:
    before = healthy()
    failed = replace(before, error="RequestTimedOutError")
    assert changes(before, failed) == ["no broker answers: RequestTimedOutError"]
    assert changes(failed, replace(failed, time=T0 + 1)) == []
    assert changes(failed, before) == ["brokers answer again"]


def test_a_broker_back_before_it_answers_gets_its_epoch_when_it_does() -> None:
    dead = after_kill()
    registered = replace(
        dead,
        brokers=tuple(
            replace(b, alive=True, broker_epoch=-1) if b.broker_id == 1 else b for b in dead.brokers
        ),
    )
    answering = replace(
        registered,
        brokers=tuple(
            replace(b, answering=True, broker_epoch=200) if b.broker_id == 1 else b
            for b in registered.brokers
        ),
    )
    assert changes(dead, registered) == ["broker 1 alive not answering"]
    assert changes(registered, answering) == ["broker 1 answering epoch 200"]
    assert changes(answering, dead) == ["broker 1 dead"]


def test_broker_re_registration_is_an_epoch_change() -> None:
    before = healthy()
    after = replace(
        before,
        brokers=tuple(
            replace(b, broker_epoch=500) if b.broker_id == 2 else b for b in before.brokers
        ),
    )
    assert changes(before, after) == ["broker 2 epoch 102 -> 500"]


def test_the_view_shows_brokers_partitions_groups_and_highlights() -> None:
    console = Console(width=200, record=True, color_system="truecolor", force_terminal=True)
    snapshot = after_kill()
    console.print(render(snapshot, change_lines(healthy(), snapshot), interval_s=1))
    text = console.export_text(clear=False)
    assert "controller 2 (epoch 4)" in text
    assert "DEAD" in text and "alive (controller)" in text
    assert "under-replicated partitions: 2" in text
    row = next(line for line in text.splitlines() if "orders-0" in line and "under" in line)
    assert row.split()[:5] == ["orders-0", "2", "5", "1,2,3", "2,3"]
    assert "1:10 2:10 3:10" in row
    assert "billing" in text and "orders-0:4(6/10)" in text
    assert "02:10:10 broker 1 dead" in text
    styles = console.export_html()
    assert "color: #808000" in styles or "yellow" in styles  # the under-replicated rows


def test_line_mode_prints_the_cluster_then_only_what_changed() -> None:
    class Source:
        def __init__(self) -> None:
            self.snapshots = [healthy(), replace(healthy(), time=T0 + 1), after_kill()]

        def snapshot(self) -> Snapshot:
            return self.snapshots.pop(0)

    out = io.StringIO()
    follow_lines(Source(), out, interval_s=0.01, rounds=3)
    lines = out.getvalue().splitlines()
    assert lines[:7] == [f"02:10:03 {line}" for line in changes(None, healthy())]
    assert lines[7:] == change_lines(healthy(), after_kill())
