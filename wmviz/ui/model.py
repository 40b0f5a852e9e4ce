"""What each panel shows at a step, as plain pandas tables and dataclasses (no Streamlit here).

The renderer only lays these out; everything a test wants to assert about a panel is decided here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pandas as pd

from wmviz.core.interval_join import IntervalJoin
from wmviz.core.pipeline import InstancePipeline
from wmviz.core.types import MAX_MS, MIN_MS, Profile, Status, ValveState, format_ms
from wmviz.core.windows import WindowOperator
from wmviz.timeline.cursor import InstanceCursor

# Realistic event times are epoch milliseconds; small demo times (10, 25) read better as numbers.
_EPOCH_FROM_MS = 946_684_800_000  # 2000-01-01: anything later is shown as a UTC time too


def utc_text(ms: int) -> str:
    """A watermark as a UTC time: `2026-11-23 10:15:00.250 UTC`, `MIN`/`MAX` for the sentinels,
    `1970-01-01 00:00:00.010 UTC` for small values (never empty, never NaN)."""
    if ms == MIN_MS:
        return "MIN (no watermark yet)"
    if ms == MAX_MS:
        return "MAX (end of time)"
    stamp = pd.Timestamp(ms, unit="ms", tz="UTC")
    return stamp.strftime("%Y-%m-%d %H:%M:%S.") + f"{stamp.microsecond // 1000:03d} UTC"


def watermark_text(ms: int) -> str:
    """A watermark as the number a Flink engineer reads in logs (MIN/MAX spelled out)."""
    return format_ms(ms)


@dataclass(frozen=True)
class ValveView:
    """One valve at a step: its channel table, heap, and output."""

    input: str
    channels: pd.DataFrame
    heap: tuple[tuple[int, int], ...]
    output_wm: int
    output_status: str
    min_channels: tuple[int, ...]


def valve_view(name: str, state: ValveState, profile: Profile, finished: set[tuple[str, int]]) -> ValveView:
    """The channel table of one valve: number and UTC time, status, aligned, who holds the minimum.

    Released profiles have no FINISHED status: a finished channel is an ACTIVE channel at MAX, and
    the table says so rather than showing a plain ACTIVE.
    """
    aligned = state.aligned
    minimum = min(aligned.values()) if aligned else None
    holders = tuple(c for c, w in sorted(aligned.items()) if w == minimum)
    rows = []
    for c in state.channels:
        status = c.status.value
        if (name, c.channel) in finished and c.status is Status.ACTIVE and not profile.finished_status:
            status = "ACTIVE (FINISHED, replayed as MAX)"
        rows.append(
            {
                "channel": c.channel,
                "watermark": watermark_text(c.watermark_ms),
                "UTC time": utc_text(c.watermark_ms),
                "status": status,
                "aligned": "yes" if c.aligned else "no",
                "holds the minimum": "◀ min" if c.channel in holders else "",
            }
        )
    heap = tuple((n.channel, n.watermark_ms) for n in state.heap)
    return ValveView(
        name, pd.DataFrame(rows), heap, state.last_watermark_ms, state.last_status.value, holders
    )


def valve_views(
    cursor: InstanceCursor, pipeline: InstancePipeline, step: int, profile: Profile
) -> list[ValveView]:
    """Every valve of the instance after `step` (one, or L and R for a two-input operator)."""
    finished = cursor.finished_by(step)
    return [valve_view(name, v.state(), profile, finished) for name, v in pipeline.valves.items()]


CHART_STEPS = 2_000
"""The watermark chart shows at most this many steps around the cursor (the whole trace if shorter)."""


def chart_window(count: int, step: int, width: int = CHART_STEPS) -> tuple[int, int]:
    """The first and last step the watermark chart shows: all of them, or `width` around `step`."""
    if count <= width:
        return 0, count - 1
    first = min(max(step - width // 2, 0), count - width)
    return first, first + width - 1


def history_window(history: pd.DataFrame, output: pd.DataFrame, first: int, last: int):
    """The chart's input cut to steps `first..last`: each channel's state on entry as step first−1,
    then its changes inside the window; the output rows inside the window."""
    before = history[history["step"] < first]
    entry = before.groupby(["input", "channel"], sort=False).tail(1).assign(step=first - 1)
    inside = history[(history["step"] >= first) & (history["step"] <= last)]
    rows = output[(output["step"] >= first) & (output["step"] <= last)]
    return pd.concat([entry, inside], ignore_index=True), rows.reset_index(drop=True)


def input_table(record: dict) -> pd.DataFrame:
    """The input that just arrived: its non-empty fields, as text (user text is never markup)."""
    fields = [
        ("trace row", record.get("row")),
        ("kind", record.get("kind")),
        ("input", record.get("input")),
        ("channel", record.get("channel")),
        ("seq", record.get("seq")),
        ("event time", _time(record.get("event_ms"))),
        ("watermark", _time(record.get("watermark_ms"))),
        ("status", record.get("status")),
        ("processing time", _time(record.get("proc_ms"))),
        ("key", record.get("key")),
        ("value", record.get("value_json")),
    ]
    payload = json.loads(record.get("payload_json") or "[]")
    fields.extend((f"payload: {name}", json.dumps(value)) for name, value in payload)
    rows = [{"field": k, "value": str(v)} for k, v in fields if v is not None]
    return pd.DataFrame(rows, columns=["field", "value"])


def _time(ms: int | None) -> str | None:
    if ms is None:
        return None
    return f"{format_ms(ms)}  ({utc_text(ms)})" if MIN_MS < ms < MAX_MS else format_ms(ms)


def timers_table(cursor: InstanceCursor, pipeline: InstancePipeline, step: int) -> pd.DataFrame:
    """Timers at this step: fired now, registered now, and every pending one (the next due first)."""
    rows = []
    now = cursor.timers[cursor.timers["step"] == step] if not cursor.timers.empty else cursor.timers
    for rec in now.itertuples(index=False):
        rows.append(
            _timer_row(
                "fired now" if rec.event == "fired" else "registered now",
                rec.domain,
                rec.at_ms,
                rec.timer_key,
                rec.window_start,
                rec.window_end,
                rec.purposes,
            )
        )
    due: set[str] = set()
    for fired in pipeline.timers.pending():
        t = fired.timer
        ns = t.namespace or (None, None)
        state = "pending"
        if t.domain.value not in due:  # pending() is in firing order: the first per domain is next
            due.add(t.domain.value)
            state = "pending, next due"
        rows.append(
            _timer_row(state, t.domain.value, t.timestamp_ms, t.key, ns[0], ns[1], "+".join(fired.purposes))
        )
    columns = ["state", "domain", "at", "at (UTC)", "key", "window", "purposes"]
    return pd.DataFrame(rows, columns=columns)


def _timer_row(state, domain, at_ms, key, start, end, purposes) -> dict:
    window = (
        f"[{format_ms(int(start))}, {format_ms(int(end))})" if pd.notna(start) and start is not None else ""
    )
    return {
        "state": state,
        "domain": domain,
        "at": format_ms(int(at_ms)),
        "at (UTC)": utc_text(int(at_ms)),
        "key": "" if key is None or (isinstance(key, float) and pd.isna(key)) else str(key),
        "window": window,
        "purposes": purposes if isinstance(purposes, str) else "",
    }


def panes_table(pipeline: InstancePipeline) -> pd.DataFrame | None:
    """The window operator's panes after the step: key, window, contents, when it fires and is cleaned."""
    op = pipeline.operator
    if not isinstance(op, WindowOperator):
        return None
    rows = []
    for (key, (start, end)), contents in sorted(op.panes.items(), key=lambda kv: (kv[0][1], str(kv[0][0]))):
        fires_at = end - 1
        rows.append(
            {
                "key": "" if key is None else str(key),
                "window": f"[{format_ms(start)}, {format_ms(end)})",
                "contents": ", ".join(json.dumps(element) for _, element in contents),
                "records": len(contents),
                "fires when watermark ≥": format_ms(fires_at),
                "cleaned when watermark ≥": format_ms(fires_at + op.lateness_ms),
                "state": "fired, kept for late data" if op.watermark_ms >= fires_at else "waiting",
            }
        )
    columns = [
        "key",
        "window",
        "contents",
        "records",
        "fires when watermark ≥",
        "cleaned when watermark ≥",
        "state",
    ]
    return pd.DataFrame(rows, columns=columns)


def join_cache_table(pipeline: InstancePipeline) -> pd.DataFrame | None:
    """Rows the interval join still caches, waiting for partners."""
    op = pipeline.operator
    if not isinstance(op, IntervalJoin):
        return None
    rows = []
    for key, state in sorted(op.keys.items()):
        for side, cache in state.caches.items():
            for t, cached in sorted(cache.items()):
                for c in cached:
                    rows.append(
                        {
                            "key": key,
                            "side": side,
                            "time": format_ms(t),
                            "trace row": c.row.row,
                            "matched": "yes" if c.matched else "no",
                            "early-fired": "yes" if c.fired else "no",
                        }
                    )
    return pd.DataFrame(rows, columns=["key", "side", "time", "trace row", "matched", "early-fired"])


def changelog_table(cursor: InstanceCursor, step: int) -> pd.DataFrame:
    """The join's changelog up to `step`: `+I` / `-U` / `+U`, each `-U` linked to the row it corrects."""
    out = cursor.outputs
    if out.empty:
        return pd.DataFrame(
            columns=["step", "#", "kind", "cause", "left row", "right row", "corrects", "now"]
        )
    out = out[(out["step"] <= step) & out["kind"].isin(["+I", "-U", "+U"])].reset_index(drop=True)
    rows, latest = [], {}
    for i, rec in enumerate(out.itertuples(index=False)):
        left, right = _row_no(rec.left_row), _row_no(rec.right_row)
        corrects = ""
        if rec.kind == "-U":
            target = latest.get((left, right))
            corrects = f"#{target}" if target is not None else "(not found)"
        else:
            latest[(left, right)] = i
        rows.append(
            {
                "step": int(rec.step),
                "#": i,
                "kind": rec.kind,
                "cause": rec.cause,
                "left row": "null" if left is None else f"line {left}",
                "right row": "null" if right is None else f"line {right}",
                "corrects": corrects,
                "now": "◀" if rec.step == step else "",
            }
        )
    return pd.DataFrame(rows)


def _row_no(value) -> int | None:
    return None if value is None or pd.isna(value) else int(value)


def window_firings_table(cursor: InstanceCursor, step: int) -> pd.DataFrame:
    """Window firings up to `step` (on time and late)."""
    out = cursor.outputs
    if out.empty or "window" not in set(out["kind"]):
        return pd.DataFrame(columns=["step", "key", "window", "result", "late", "now"])
    fired = out[(out["step"] <= step) & (out["kind"] == "window")]
    return pd.DataFrame(
        [
            {
                "step": int(r.step),
                "key": "" if r.key is None else str(r.key),
                "window": f"[{format_ms(int(r.window_start))}, {format_ms(int(r.window_end))})",
                "result": str(r.result_json),
                "late": "late firing" if r.late else "",
                "now": "◀" if r.step == step else "",
            }
            for r in fired.itertuples(index=False)
        ],
        columns=["step", "key", "window", "result", "late", "now"],
    )


def dropped_table(cursor: InstanceCursor, step: int) -> pd.DataFrame:
    """Records dropped at this step, and why."""
    text = cursor.steps.column("dropped_json")[step].as_py()
    items = json.loads(text) if text else []
    return pd.DataFrame(
        [{"trace row": d["row"], "reason": d["reason"]} for d in items], columns=["trace row", "reason"]
    )


def operator_watermark(cursor: InstanceCursor, step: int) -> int | None:
    """The watermark the operator itself last emitted downstream at or before `step` (a window
    operator forwards its input's; an interval join holds it back by its bounds), None if none."""
    out = cursor.outputs
    if out.empty:
        return None
    emitted = out[(out["kind"] == "wm") & (out["step"] <= step)]
    return None if emitted.empty else int(emitted["watermark_ms"].iloc[-1])
