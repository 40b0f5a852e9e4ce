"""The story sections of the incident report: where it went wrong (the stall, compare mode's first
divergence, both narrations there) and the key steps, ranked so that a drop or a status change is
never buried under routine emissions. Pure, like `wmviz.report`; every string is escaped there or
by `wmviz.report.html`.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from wmviz.analysis.compare import Divergence, emitted_text
from wmviz.core.story import explain_parts
from wmviz.report.html import bullet_list, esc, table
from wmviz.timeline.cursor import InstanceCursor
from wmviz.trace.payload import decode_payload, payload_text
from wmviz.view.model import ValveView, holders
from wmviz.view.stall import longest_stalls, stall_at, stall_text
from wmviz.view.timefmt import DEFAULT, TimeFormat

KEY_KINDS = (
    ("first output divergence", 0),
    ("late drop", 1),
    ("status change", 2),
    ("stall", 3),
    ("timer firing", 4),
    ("retraction", 5),
    ("output watermark", 9),
)
"""Why a step is worth narrating, and its rank: drops, status changes, the start of a stall,
firings, retractions and the first divergence come before routine output-watermark changes."""
_RANK = dict(KEY_KINDS)


def step_reasons(
    cursor: InstanceCursor, *, step: int | None = None, divergence: int | None = None
) -> dict[int, list[str]]:
    """Every step with an event, each with its reasons in rank order; `step` (the one the person
    was looking at) and `divergence` (compare mode's first output divergence) included."""
    reasons: dict[int, list[str]] = {}
    for kind, steps in cursor.events.items():
        for s in np.asarray(steps, dtype=np.int64).tolist():
            reasons.setdefault(s, []).append(kind)
    for found in longest_stalls(cursor):
        reasons.setdefault(found.start, []).append("stall")
    if divergence is not None and 0 <= divergence < cursor.count:
        reasons.setdefault(divergence, []).append("first output divergence")
    if step is not None and 0 <= step < cursor.count:
        reasons.setdefault(step, []).append("the report's step")
    return {s: sorted(r, key=lambda k: _RANK.get(k, 8)) for s, r in sorted(reasons.items())}


def key_steps(
    cursor: InstanceCursor, limit: int = 40, *, step: int | None = None, divergence: int | None = None
) -> list[int]:
    """The steps worth narrating, sorted, at most `limit`: `step` itself (the one the person was
    looking at) always, then whole ranks in KEY_KINDS order (a drop before a routine emission).
    A rank that no longer fits whole gives its earliest quarter of the room left (how it began)
    and the rest to the steps nearest `step` (ties: the earlier); without a `step`, its earliest."""
    if limit <= 0:
        return []
    reasons = step_reasons(cursor, divergence=divergence)
    chosen = [step] if step is not None and 0 <= step < cursor.count else []
    tiers: dict[int, list[int]] = {}
    for s, why in reasons.items():
        tiers.setdefault(min(_RANK.get(k, 8) for k in why), []).append(s)
    for rank in sorted(tiers):
        room = limit - len(chosen)
        if room <= 0:
            break
        candidates = [s for s in tiers[rank] if s not in chosen]
        chosen += candidates if len(candidates) <= room else _spread(candidates, room, step)
    return sorted(chosen)


def _spread(steps: list[int], room: int, step: int | None) -> list[int]:
    if step is None:
        return steps[:room]
    head = room // 4
    rest = np.asarray(steps[head:], dtype=np.int64)
    nearest = rest[np.lexsort((rest, np.abs(rest - step)))][: room - head]
    return [*steps[:head], *nearest.tolist()]


def where_section(
    cursor: InstanceCursor,
    step: int,
    views: list[ValveView],
    t: TimeFormat,
    compare,
    output_split: Divergence | None,
    state_split: Divergence | None,
) -> list[str]:
    """Where it went wrong: the stall at the step and the longest ones; in compare mode, where the
    runs' outputs and states first differ, with both narrations at the output divergence."""
    items = []
    found = stall_at(cursor, step, holders(views))
    if found is not None:
        items.append(f"At step {step}: {stall_text(found, cursor.count, t)}.")
    for other in longest_stalls(cursor):
        if found is None or other.start != found.start:
            items.append(f"Longest stall: {stall_text(other, cursor.count, t)}.")
            break
    out = ["<h2>Where it went wrong</h2>"]
    if compare is not None:
        if output_split is None:
            items.append(f"The outputs of this run and {compare.label} never differ.")
        else:
            items.append(
                f"The outputs first differ at step {output_split.step} ({', '.join(output_split.what)}). "
                f"This run: {output_split.left}. {compare.label}: {output_split.right}."
            )
        if state_split is not None and (output_split is None or state_split.step < output_split.step):
            items.append(
                f"The state first differs earlier, at step {state_split.step} "
                f"({', '.join(state_split.what)}), without changing the output there."
            )
    if not items:
        return []
    out.append(bullet_list(items))
    if compare is not None and output_split is not None:
        out.append(_side_by_side(cursor, compare, output_split, t))
    return out


def _side_by_side(cursor: InstanceCursor, compare, split: Divergence, t: TimeFormat) -> str:
    """Both runs' narration at the first output divergence, side by side."""
    short = replace(t, short=True)
    left = explain_parts(cursor.explain(split.step)[0], short)
    right_step = split.right_step
    right = (
        explain_parts(compare.cursor.explain(right_step)[0], short)
        if right_step is not None
        else ["(no such row in this run)"]
    )
    return table(
        [f"this run, step {split.step}", f"{compare.label}, step {right_step}"],
        [(bullet_list(left), bullet_list(right))],
        css_class="compare",
    )


def key_steps_section(cursor: InstanceCursor, step: int, t: TimeFormat, divergence: int | None) -> list[str]:
    """Each key step: why it matters, its input, what the valve emitted, and the narration, the
    current step marked."""
    steps = key_steps(cursor, step=step, divergence=divergence)
    reasons = step_reasons(cursor, step=step, divergence=divergence)
    short = replace(t, short=True)
    rows, classes = [], []
    for s in steps:
        record = cursor.row(s)
        parts = explain_parts(cursor.explain(s)[0], short)
        here = " ◀ this step" if s == step else ""
        rows.append(
            (
                f"{s}{here}",
                ", ".join(reasons.get(s, [])),
                record.get("row"),
                compact_input(record, t),
                emitted_text(record["out_json"], t) if record.get("out_json") else "—",
                bullet_list(parts),
            )
        )
        classes.append("current" if s == step else "")
    note = (
        "Steps ranked by what they did: drops, status changes, the start of a stall, timer firings, "
        "retractions (and the first divergence in compare mode) before routine output-watermark changes"
    )
    total = len(reasons)
    if len(steps) < total:
        note += f"; {len(steps)} of {total} shown"
    note += "."
    if short.day:
        note += f" Times are {short.zone_label} on {short.day} unless dated."
    return [
        "<h2>Key steps</h2>",
        f"<p>{esc(note)}</p>",
        table(["step", "why", "trace row", "input", "emitted", "what happened"], rows, row_classes=classes),
    ]


def compact_input(record: dict, t: TimeFormat = DEFAULT) -> str:
    """A steps record's input in one line: `W10@2`, `L: IDLE@0`, `record key=1 value="a"
    event_ms=10 @0 note="x"`, `proctime 1000` (plain text; the caller escapes it)."""
    kind, channel = record.get("kind"), record.get("channel")
    where = "" if record.get("input") in (None, "0") else f"{record['input']}: "
    if kind == "watermark":
        return f"{where}W{t.token(record['watermark_ms'])}@{channel}"
    if kind == "status":
        return f"{where}{record['status']}@{channel}"
    if kind == "proctime":
        return f"proctime {t(record['proc_ms'])}"
    parts = [f"{where}{kind}"]
    if record.get("key") is not None:
        parts.append(f"key={record['key']}")
    if record.get("value_json") is not None:
        parts.append(f"value={record['value_json']}")
    for name in ("event_ms", "proc_ms"):
        if record.get(name) is not None:
            parts.append(f"{name}={t(record[name])}")
    if channel is not None:
        parts.append(f"@{channel}")
    payload = decode_payload(record.get("payload_json"))
    parts.extend(f"{name}={payload_text(value)}" for name, value in payload)
    return " ".join(parts)
