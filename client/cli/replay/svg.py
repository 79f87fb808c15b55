"""A replay's timeline as an SVG picture: the diagram the articles draw, from measured data.

    Path("lost-ack-hw.svg").write_text(render_svg(run))

Top to bottom: the title and the verdict; a strip of leader epochs (who led, which epoch, and
when the partition had no leader); one lane per replica with its log end offset (solid) and
high watermark (dashed) over time, shaded while the broker was paused or down; vertical marks
for what the replay did (kill, pause, power cut, start, ...) and what the cluster did (elections,
a new controller, a fenced request), each labelled; then every produced record (acknowledged or
refused, kept or LOST) and each replica's log at the end, offset by offset, a cell red where
the replicas disagree.

Every element that stands for an event carries ``class`` and ``data-*`` attributes
(``class="mark kill" data-label="kill -9 1"``, ``class="record lost" data-value="m2"``), so a
test or a script can find the events without reading pixels. Hand-written SVG: a pure function
of the Run, no I/O (docs/architecture.md says why no plotting library).
"""

from __future__ import annotations

from collections.abc import Sequence
from xml.sax.saxutils import escape, quoteattr

from minikafka.client.cli.replay.timeline import UNKNOWN, Run, Sample

__all__ = ["render_svg"]

WIDTH = 980
LEFT = 120  # lane labels
RIGHT = 20
LANE_H = 70
TOP = 96  # below the title
STRIP_H = 22  # the leader strip
MARK_LABEL_H = 16

COLORS = {
    "kill": "#c62828",
    "stop": "#6d4c41",
    "pause": "#ef6c00",
    "resume": "#2e7d32",
    "start": "#2e7d32",
    "power-cut": "#b71c1c",
    "produce": "#455a64",
    "config": "#455a64",
    "elect": "#1565c0",
    "election": "#1565c0",
    "controller": "#6a1b9a",
    "isr": "#00838f",
    "fenced": "#000000",
    "truncated": "#ad1457",
}
_EPOCH_FILLS = ("#bbdefb", "#c8e6c9", "#ffe0b2", "#e1bee7", "#b2dfdb", "#f8bbd0", "#d7ccc8")


def _attr(**attrs: object) -> str:
    return " ".join(
        f"{name.rstrip('_').replace('__', '-').replace('_', '-')}={quoteattr(str(value))}"
        for name, value in attrs.items()
    )


def _tag(name: str, text: str = "", **attrs: object) -> str:
    if text:
        return f"<{name} {_attr(**attrs)}>{escape(text)}</{name}>"
    return f"<{name} {_attr(**attrs)}/>"


class _Scale:
    """Time from just before the first narrated step (the cluster's start is not the story)
    to the end; offsets from 0 to the highest any replica reached."""

    def __init__(self, run: Run) -> None:
        self.start = max(run.steps[0].t - 1.0, 0.0) if run.steps else 0.0
        end = max([run.duration_s, *(s.t for s in run.samples), *(m.t for m in run.marks), 1.0])
        self.end = max(end - self.start, 1.0)
        self.max_offset = max(
            [
                1,
                *(max(r.log_end_offset, r.high_watermark) for s in run.samples for r in s.replicas),
            ]
        )

    def x(self, t: float) -> float:
        shown = min(max(t - self.start, 0.0), self.end)
        return round(LEFT + (WIDTH - LEFT - RIGHT) * shown / self.end, 1)

    def y(self, lane_top: float, offset: int) -> float:
        usable = LANE_H - 18
        return round(lane_top + LANE_H - 8 - usable * offset / self.max_offset, 1)


def _steps(points: Sequence[tuple[float, float]]) -> str:
    """An SVG path through ``points`` as steps (a value holds until the next sample)."""
    parts: list[str] = []
    for index, (x, y) in enumerate(points):
        if index == 0:
            parts.append(f"M{x},{y}")
        else:
            parts.append(f"H{x}V{y}")
    return " ".join(parts)


def _series(
    samples: Sequence[Sample], broker_id: int, field: str, start: float = 0.0
) -> list[list[tuple[float, int]]]:
    """Runs of (t, value) where the replica answered: a gap wherever it did not."""
    runs: list[list[tuple[float, int]]] = []
    current: list[tuple[float, int]] = []
    for sample in samples:
        if sample.t < start:
            continue
        value = getattr(sample.replica(broker_id), field)
        if value == UNKNOWN:
            if current:
                runs.append(current)
                current = []
            continue
        current.append((sample.t, value))
    if current:
        runs.append(current)
    return runs


_PROCESS_AFTER = {"pause": "paused", "kill": "down", "stop": "down", "resume": "up", "start": "up"}


def _process_spans(run: Run, broker_id: int) -> list[tuple[float, float, str]]:
    """(from, to, state) for the times the broker was paused or down, from the replay's own
    marks (the moment it sent the signal)."""
    spans: list[tuple[float, float, str]] = []
    state, since = "up", 0.0
    for mark in run.marks:
        now = _PROCESS_AFTER.get(mark.kind)
        if mark.broker_id != broker_id or now is None or now == state:
            continue
        if state != "up":
            spans.append((since, mark.t, state))
        state, since = now, mark.t
    if state != "up":
        spans.append((since, run.duration_s, state))
    return spans


def render_svg(run: Run) -> str:
    scale = _Scale(run)
    lanes_top = TOP + STRIP_H + 28
    lanes_bottom = lanes_top + LANE_H * len(run.replicas)
    records_top = lanes_bottom + 40
    logs_top = records_top + 26 + 18 * max(len(run.records), 1)
    height = logs_top + 30 + 22 * len(run.replicas) + 20
    out: list[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" font-family="DejaVu Sans, Helvetica, sans-serif" '
        f'font-size="12" data-run={quoteattr(run.name)}>',
        _tag("rect", x=0, y=0, width=WIDTH, height=height, fill="#ffffff"),
        _tag("text", f"minikafka replay {run.name}", x=12, y=22, font_size=16, font_weight="bold"),
        _tag("text", run.title, x=12, y=42),
        _tag("text", f"Promise: {run.promise}", x=12, y=60, fill="#37474f"),
        _tag(
            "text",
            _verdict(run),
            x=12,
            y=78,
            fill="#2e7d32" if run.held else "#c62828",
            font_weight="bold",
            class_="verdict",
        ),
    ]
    out += _leader_strip(run, scale, TOP + 14)
    for index, broker_id in enumerate(run.replicas):
        out += _lane(run, scale, broker_id, lanes_top + index * LANE_H)
    out += _marks(run, scale, TOP + 8, lanes_bottom)
    out += _axis(scale, lanes_bottom)
    out += _records(run, records_top)
    out += _logs(run, logs_top)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _verdict(run: Run) -> str:
    if run.expect_violation:
        return (
            "Without the mechanism the promise broke, as measured"
            if run.held
            else "Expected the promise to break without the mechanism; it did not"
        )
    return "The promise held, as measured" if run.held else "The promise did NOT hold"


def _leader_strip(run: Run, scale: _Scale, y: float) -> list[str]:
    out = [_tag("text", "leader/epoch", x=12, y=y + 15, fill="#37474f")]
    spans: list[tuple[float, float, int, int]] = []
    for sample in run.samples:
        if sample.t < scale.start:
            continue
        key = (sample.leader, sample.leader_epoch)
        if spans and (spans[-1][2], spans[-1][3]) == key:
            continue
        if spans:
            t0, _, leader, epoch = spans[-1]
            spans[-1] = (t0, sample.t, leader, epoch)
        spans.append((sample.t, run.duration_s, *key))
    for t0, t1, leader, epoch in spans:
        x0, x1 = scale.x(t0), scale.x(max(t1, t0))
        offline = leader < 0
        fill = "#ef9a9a" if offline else _EPOCH_FILLS[max(epoch, 0) % len(_EPOCH_FILLS)]
        text = "offline" if offline else f"{leader} / e{epoch}"
        out.append(
            _tag(
                "rect",
                x=x0,
                y=y,
                width=max(round(x1 - x0, 1), 0.5),
                height=STRIP_H,
                fill=fill,
                stroke="#ffffff",
                class_="leader-span offline" if offline else "leader-span",
                data_leader=leader,
                data_leader_epoch=epoch,
            )
        )
        if x1 - x0 > 44:
            out.append(_tag("text", text, x=x0 + 4, y=y + 15, font_size=11))
    return out


def _lane(run: Run, scale: _Scale, broker_id: int, top: float) -> list[str]:
    out = [
        _tag(
            "rect",
            x=LEFT,
            y=top + 4,
            width=WIDTH - LEFT - RIGHT,
            height=LANE_H - 8,
            fill="#fafafa",
            stroke="#e0e0e0",
        ),
        _tag("text", f"broker {broker_id}", x=12, y=top + 30, font_weight="bold"),
        _tag("text", "— LEO  - - HW", x=12, y=top + 48, fill="#607d8b", font_size=10),
    ]
    for t0, t1, state in _process_spans(run, broker_id):
        x0, x1 = scale.x(t0), scale.x(t1)
        out.append(
            _tag(
                "rect",
                x=x0,
                y=top + 4,
                width=max(round(x1 - x0, 1), 0.5),
                height=LANE_H - 8,
                fill="#ffe0b2" if state == "paused" else "#cfd8dc",
                opacity=0.8,
                class_=f"process {state}",
                data_broker=broker_id,
            )
        )
        out.append(_tag("text", state, x=x0 + 4, y=top + 16, font_size=10, fill="#5d4037"))
    for field, dash, color in (
        ("log_end_offset", "", "#1565c0"),
        ("high_watermark", "5,3", "#2e7d32"),
    ):
        for series in _series(run.samples, broker_id, field, scale.start):
            points = [(scale.x(t), scale.y(top, v)) for t, v in series]
            out.append(
                f'<path d="{_steps(points)}" fill="none" stroke="{color}" stroke-width="2"'
                + (f' stroke-dasharray="{dash}"' if dash else "")
                + f' class="{field}" data-broker="{broker_id}"/>'
            )
            # the value at each change, so a truncation reads as a number, not a slope
            shown = None
            for t, v in series:
                if v == shown:
                    continue
                shown = v
                out.append(
                    _tag(
                        "text",
                        str(v),
                        x=scale.x(t) + 3,
                        y=scale.y(top, v) - (3 if field == "log_end_offset" else -11),
                        font_size=10,
                        fill=color,
                    )
                )
    return out


def _marks(run: Run, scale: _Scale, top: float, bottom: float) -> list[str]:
    out: list[str] = []
    rows: list[float] = []  # the right end of the last label in each row, to avoid overlaps
    for mark in run.marks:
        if mark.t < scale.start:
            continue  # the cluster's own start: not an event of the story
        x = scale.x(mark.t)
        color = COLORS.get(mark.kind, "#455a64")
        row = next((i for i, end in enumerate(rows) if end < x), len(rows))
        if row == len(rows):
            rows.append(0.0)
        width = 6.2 * len(mark.label) + 6
        rows[row] = x + width
        label_y = bottom + 34 + row * MARK_LABEL_H
        out.append(
            f'<g class="mark {mark.kind}" data-kind="{mark.kind}" '
            f"data-label={quoteattr(mark.label)} data-t={quoteattr(str(mark.t))}>"
        )
        dash = "" if mark.kind in ("kill", "election", "power-cut", "fenced") else "3,3"
        out.append(
            f'<line x1="{x}" y1="{top}" x2="{x}" y2="{label_y - 10}" stroke="{color}" '
            f'stroke-width="{2 if mark.kind in ("kill", "election", "power-cut") else 1}"'
            + (f' stroke-dasharray="{dash}"' if dash else "")
            + "/>"
        )
        out.append(_tag("text", mark.label, x=x + 2, y=label_y, font_size=10, fill=color))
        out.append("</g>")
    return out


def _axis(scale: _Scale, y: float) -> list[str]:
    out = [f'<line x1="{LEFT}" y1="{y + 2}" x2="{WIDTH - RIGHT}" y2="{y + 2}" stroke="#90a4ae"/>']
    step = 1 if scale.end <= 12 else 2 if scale.end <= 30 else 5
    t = 0
    while t <= scale.end:
        x = scale.x(scale.start + t)
        out.append(f'<line x1="{x}" y1="{y + 2}" x2="{x}" y2="{y + 6}" stroke="#90a4ae"/>')
        out.append(_tag("text", f"{t}s", x=x - 6, y=y + 17, font_size=9, fill="#78909c"))
        t += step
    return out


def _records(run: Run, top: float) -> list[str]:
    out = [_tag("text", "Records produced", x=12, y=top, font_weight="bold")]
    for index, record in enumerate(run.records):
        y = top + 20 + 18 * index
        if record.acked and not record.kept:
            state, color, word = "lost", "#c62828", "acknowledged, then LOST"
        elif record.acked:
            state, color, word = "kept", "#2e7d32", "acknowledged, kept"
        else:
            state, color, word = "refused", "#6d4c41", f"refused: {record.answer}"
        where = f"at offset {record.offset}" if record.offset >= 0 else ""
        out.append(
            _tag(
                "text",
                f"{record.value}  {word}  {where}",
                x=24,
                y=y,
                fill=color,
                class_=f"record {state}",
                data_value=record.value,
            )
        )
    return out


def _logs(run: Run, top: float) -> list[str]:
    out = [_tag("text", "Each replica's log at the end", x=12, y=top, font_weight="bold")]
    logs = {b: dict(log) for b, log in run.replica_logs.items()}
    offsets = sorted({o for log in logs.values() for o in log})
    for row, broker_id in enumerate(run.replicas):
        y = top + 14 + 22 * row
        out.append(_tag("text", f"broker {broker_id}", x=24, y=y + 14))
        log = logs.get(broker_id, {})
        for column, offset in enumerate(offsets):
            if offset not in log:
                continue
            value = log[offset]
            differs = any(other.get(offset, value) != value for other in logs.values())
            x = LEFT + 52 * column
            out.append(
                _tag(
                    "rect",
                    x=x,
                    y=y,
                    width=48,
                    height=19,
                    fill="#ffcdd2" if differs else "#e3f2fd",
                    stroke="#90a4ae",
                    class_="cell diverged" if differs else "cell",
                    data_broker=broker_id,
                    data_offset=offset,
                    data_value=value,
                )
            )
            out.append(_tag("text", f"{offset}:{value}", x=x + 4, y=y + 14, font_size=11))
    return out
