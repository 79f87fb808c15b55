"""The live view of ``minikafka watch``: one rich renderable per snapshot.

    console.print(render(snapshot, recent_changes, interval_s=1.0))   # or inside rich's Live

Four tables and the latest change lines: brokers (alive or dead, the controller, answering,
registration epoch), partitions (leader, leader epoch, replicas, ISR, high watermark, each
replica's log end offset with the leader's view of its followers; under-replicated rows yellow,
offline rows red), consumer groups (state, total lag, lag per partition), then the last change
lines (model.change_lines), so a failover reads as it happens.

Pure functions of their arguments; rich does the drawing.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from minikafka.client.cli.watch.model import UNKNOWN, GroupView, PartitionView, Snapshot

__all__ = ["render"]

_DEAD = "bold red"
_WARN = "yellow"


def render(snapshot: Snapshot, recent: Sequence[str], *, interval_s: float = 1.0) -> RenderableType:
    parts: list[RenderableType] = [_header(snapshot, interval_s)]
    if snapshot.error:
        parts.append(Text(f"no broker answers: {snapshot.error}", style=_DEAD))
    parts += [_brokers(snapshot), _partitions(snapshot), _groups(snapshot.groups)]
    changes = Text("\n".join(recent[-8:]) if recent else "(none yet)")
    parts.append(Text("Recent changes", style="bold"))
    parts.append(changes)
    return Group(*parts)


def _header(snapshot: Snapshot, interval_s: float) -> Text:
    stamp = time.strftime("%H:%M:%S", time.localtime(snapshot.time))
    controller = "none" if snapshot.controller_id < 0 else str(snapshot.controller_id)
    under = sum(p.under_replicated for p in snapshot.partitions)
    offline = sum(p.offline for p in snapshot.partitions)
    text = Text()
    text.append("minikafka watch", style="bold")
    text.append(f"  cluster {snapshot.cluster_id or '?'}  controller {controller}")
    text.append(f" (epoch {_num(snapshot.controller_epoch)})  {stamp}")
    text.append(f"  every {interval_s:g}s  Ctrl-C quits\n")
    text.append(f"under-replicated partitions: {under}", style=_WARN if under else "")
    text.append("  ")
    text.append(f"offline partitions: {offline}", style=_DEAD if offline else "")
    return text


def _brokers(snapshot: Snapshot) -> Table:
    table = Table(title="Brokers", title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1))
    for column in ("broker", "state", "address", "broker epoch"):
        table.add_column(column)
    for b in snapshot.brokers:
        if not b.alive:
            state, style = "DEAD", _DEAD
        elif not b.answering:
            state, style = "alive, not answering", _WARN
        else:
            state, style = "alive", ""
        if b.broker_id == snapshot.controller_id:
            state += " (controller)"
        table.add_row(str(b.broker_id), state, b.address or "-", _num(b.broker_epoch), style=style)
    return table


def _partitions(snapshot: Snapshot) -> Table:
    table = Table(title="Partitions", title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1))
    for column in ("partition", "leader", "epoch", "replicas", "isr", "HW", "LEO per replica"):
        table.add_column(column, justify="right" if column in ("epoch", "HW") else "left")
    table.add_column("state")
    alive = {b.broker_id for b in snapshot.brokers if b.alive}
    for p in snapshot.partitions:
        if p.offline:
            style, state = _DEAD, "OFFLINE"
        elif p.reassigning:
            style, state = _WARN, "reassigning"
        elif p.under_replicated:
            style, state = _WARN, "under-replicated"
        else:
            style, state = "", "ok"
        table.add_row(
            p.name,
            "none" if p.leader < 0 else str(p.leader),
            str(p.leader_epoch),
            _replicas(p),
            ",".join(map(str, p.isr)),
            _num(p.high_watermark),
            _log_end_offsets(p, alive),
            state,
            style=style,
        )
    return table


def _replicas(p: PartitionView) -> str:
    """The replicas, and while the partition moves those being added and removed:
    ``1,2,3,0 +3 -0``."""
    text = ",".join(map(str, p.replicas))
    if p.adding_replicas:
        text += " +" + ",".join(map(str, p.adding_replicas))
    if p.removing_replicas:
        text += " -" + ",".join(map(str, p.removing_replicas))
    return text


def _log_end_offsets(p: PartitionView, alive: set[int]) -> Text:
    text = Text()
    for index, (replica, leo) in enumerate(p.log_end_offsets):
        if index:
            text.append(" ")
        style = "bold" if replica == p.leader else ""
        if replica not in alive:
            style = _DEAD
        elif replica not in p.isr:
            style = _WARN
        text.append(f"{replica}:{_num(leo)}", style=style)
    return text


def _groups(groups: Sequence[GroupView]) -> Table:
    table = Table(
        title="Consumer groups", title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1)
    )
    for column in ("group", "state", "lag", "lag per partition (committed/HW)"):
        table.add_column(column, justify="right" if column == "lag" else "left")
    for g in groups:
        lag = g.total_lag
        per_partition = " ".join(
            f"{p.topic}-{p.partition}:{'?' if p.lag is None else p.lag}"
            f"({p.committed_offset}/{_num(p.end_offset)})"
            for p in g.partitions
        )
        table.add_row(
            g.group_id,
            g.state,
            "-" if lag is None else str(lag),
            per_partition,
            style=_WARN if lag else "",
        )
    return table


def _num(value: int) -> str:
    return "?" if value == UNKNOWN else str(value)
