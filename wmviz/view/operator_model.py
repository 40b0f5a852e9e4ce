"""The operator's panels at a step, as plain tables: timers, window panes and firings, the join's
changelog and cache, dropped records; and which of them matters at this step.

Each panel has a per-step view and a cumulative one ("dropped so far", "fired so far", the whole
changelog up to the step). Rows of the trace are named the way the narration names them
(`order-1@10000`, `wmviz.core.story.label`), with their trace row one column away.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from wmviz.core.interval_join import IntervalJoin
from wmviz.core.pipeline import InstancePipeline
from wmviz.core.sessions import SessionWindowOperator
from wmviz.core.story import ALREADY_PENDING, REGISTERED_NOW, label
from wmviz.core.timetext import TimedText
from wmviz.core.windows import WindowOperator, max_timestamp
from wmviz.timeline.cursor import InstanceCursor
from wmviz.view.timefmt import DEFAULT, TimeFormat

TIMERS, WINDOWS, CHANGELOG, DROPPED = "Timers", "Windows", "Join changelog", "Dropped records"
SHOWN_ROWS = 500
"""Cumulative tables keep the latest rows up to this many (the count above them is exact)."""

MATCHED_HELP = (
    "Flink keeps the matched flag only on an outer side (the side that is padded with null): it "
    "decides whether an expired row still needs its null-padded row. On an inner side Flink never "
    "sets it, so the column says 'not tracked' there; 'joined' is wmviz's own note that the row "
    "took part in some output."
)


@dataclass(frozen=True)
class PanelChoice:
    """The operator panels this scenario has, the one to show at this step, and why."""

    names: tuple[str, ...]
    shown: str
    reason: str


def panel_choice(cursor: InstanceCursor, pipeline: InstancePipeline, step: int) -> PanelChoice:
    """The panel that matters at `step`: a retraction shows the changelog, a firing the windows,
    a drop the drops, a timer the timers (in that order when a step has several); else Timers."""
    names = [TIMERS]
    if isinstance(pipeline.operator, WindowOperator):
        names.append(WINDOWS)
    if isinstance(pipeline.operator, IntervalJoin):
        names.append(CHANGELOG)
    names.append(DROPPED)
    kinds = step_kinds(cursor, step)
    for kind, panel, reason in (
        ("retraction", CHANGELOG, "a row is retracted at this step"),
        ("join row", CHANGELOG, "the join emits a row at this step"),
        ("firing", WINDOWS, "a window fires at this step"),
        ("drop", DROPPED, "a record is dropped at this step"),
        ("timer", TIMERS, "a timer fires or is registered at this step"),
    ):
        if kind in kinds and panel in names:
            return PanelChoice(tuple(names), panel, reason)
    return PanelChoice(tuple(names), TIMERS, "")


def step_kinds(cursor: InstanceCursor, step: int) -> set[str]:
    """What the operator did at `step`: `retraction`, `join row`, `firing`, `drop`, `timer`."""
    kinds = set()
    out = cursor.outputs
    if not out.empty:
        here = set(out.loc[out["step"] == step, "kind"])
        if "-U" in here:
            kinds.add("retraction")
        if here & {"+I", "+U"}:
            kinds.add("join row")
        if "window" in here:
            kinds.add("firing")
    if cursor.steps.column("dropped_json")[step].is_valid:
        kinds.add("drop")
    if not cursor.timers.empty and (cursor.timers["step"] == step).any():
        kinds.add("timer")
    return kinds


# --- timers ------------------------------------------------------------------------------------------


def timers_table(
    cursor: InstanceCursor, pipeline: InstancePipeline, step: int, t: TimeFormat = DEFAULT
) -> pd.DataFrame:
    """Timers at this step: fired now, registered now (or already pending, registered again), and
    every pending one (the next due first). The words are the narration's (`wmviz.core.story`)."""
    rows = []
    now = cursor.timers[cursor.timers["step"] == step] if not cursor.timers.empty else cursor.timers
    for rec in now.itertuples(index=False):
        if rec.event == "fired":
            state = "fired now"
        else:
            state = REGISTERED_NOW if _true(getattr(rec, "new", True)) else ALREADY_PENDING
        rows.append(
            _timer_row(state, rec.domain, rec.at_ms, rec.timer_key, (rec.window_start, rec.window_end),
                       rec.purposes, t)
        )  # fmt: skip
    due: set[str] = set()
    for fired in pipeline.timers.pending():
        timer = fired.timer
        ns = timer.namespace or (None, None)
        state = "pending"
        if timer.domain.value not in due:  # pending() is in firing order: the first per domain is next
            due.add(timer.domain.value)
            state = "pending, next due"
        rows.append(
            _timer_row(state, timer.domain.value, timer.timestamp_ms, timer.key, ns,
                       "+".join(fired.purposes), t)
        )  # fmt: skip
    columns = ["state", "domain", "at", "at (ms)", "key", "window", "purposes"]
    table = pd.DataFrame(rows, columns=columns)
    return table.drop(columns="at (ms)") if (table["at"] == table["at (ms)"]).all() else table


def timers_so_far(cursor: InstanceCursor, step: int) -> str:
    """`timers fired so far: 12 (4 at this step) · registered: 30`."""
    timers = cursor.timers
    if timers.empty:
        return "No timer has been registered or fired so far."
    upto = timers[timers["step"] <= step]
    fired = upto[upto["event"] == "fired"]
    now = int((fired["step"] == step).sum())
    registered = int((upto["event"] != "fired").sum())
    return f"timers fired so far: {len(fired)} ({now} at this step) · registrations so far: {registered}"


def _true(value) -> bool:
    return bool(value) if value is not None and not (isinstance(value, float) and pd.isna(value)) else True


def _timer_row(state, domain, at_ms, key, window_ns: tuple, purposes, t: TimeFormat) -> dict:
    """One timer's row; `window_ns` is its window's (start, end), or (None, None) for none."""
    start, end = window_ns
    window = f"[{t(int(start))}, {t(int(end))})" if start is not None and pd.notna(start) else ""
    return {
        "state": state,
        "domain": domain,
        "at": t(int(at_ms)),
        "at (ms)": str(int(at_ms)),
        "key": "" if key is None or (isinstance(key, float) and pd.isna(key)) else str(key),
        "window": window,
        "purposes": purposes if isinstance(purposes, str) else "",
    }


# --- windows -----------------------------------------------------------------------------------------


def panes_heading(pipeline: InstancePipeline) -> str:
    """What the panes table lists: live sessions, or window panes."""
    return "Live sessions now" if isinstance(pipeline.operator, SessionWindowOperator) else "Window panes now"


def panes_table(pipeline: InstancePipeline, t: TimeFormat = DEFAULT) -> pd.DataFrame | None:
    """The window operator's panes after the step: key, window, contents, when it fires and is cleaned.

    Session windows add a `session` column: a session grows as records land near it, and merges
    with the sessions it comes to touch (how many merges made it, wmviz's own count)."""
    op = pipeline.operator
    if not isinstance(op, WindowOperator):
        return None
    merges = op.merges if isinstance(op, SessionWindowOperator) else None
    rows = []
    for key, (start, end), contents in sorted(op.live_panes(), key=lambda p: (p[1], str(p[0]))):
        fires_at = max_timestamp((start, end))
        row = {
            "key": "" if key is None else str(key),
            "window": f"[{t(start)}, {t(end)})",
            "contents": ", ".join(json.dumps(element) for _, element in contents),
            "records": len(contents),
            "fires when watermark ≥": t(fires_at),
            "cleaned when watermark ≥": t(op.cleanup_time((start, end))),
            "state": "fired, kept for late data" if op.watermark_ms >= fires_at else "waiting",
        }
        if merges is not None:
            n = merges.get((key, (start, end)), 0)
            row["session"] = f"merged {n} time{'s' if n != 1 else ''}" if n else "one window, not merged"
        rows.append(row)
    columns = ["key", "window", "contents", "records", "fires when watermark ≥", "cleaned when watermark ≥",
               "state"]  # fmt: skip
    if merges is not None:
        columns.insert(2, "session")
    return pd.DataFrame(rows, columns=columns)


def window_firings_table(cursor: InstanceCursor, step: int, t: TimeFormat = DEFAULT) -> pd.DataFrame:
    """Window firings up to `step` (on time and late), the latest SHOWN_ROWS of them."""
    columns = ["step", "key", "window", "result", "late", "now"]
    out = cursor.outputs
    if out.empty or "window" not in set(out["kind"]):
        return pd.DataFrame(columns=columns)
    fired = out[(out["step"] <= step) & (out["kind"] == "window")].tail(SHOWN_ROWS)
    return pd.DataFrame(
        [
            {
                "step": int(r.step),
                "key": "" if r.key is None else str(r.key),
                "window": f"[{t(int(r.window_start))}, {t(int(r.window_end))})",
                "result": firing_result(r.result_json),
                "late": "late firing" if r.late else "",
                "now": "◀" if r.step == step else "",
            }
            for r in fired.itertuples(index=False)
        ],
        columns=columns,
    )


def firing_result(result_json: str | None) -> str:
    """A firing's result as a person reads it: the aggregate's value, or the window's contents
    (the recorded JSON also holds the window's start and end in ms, which the `window` column
    already says in the reader's time format: issue 30 found them raw in this column)."""
    if not result_json:
        return ""
    item = json.loads(result_json)
    if "result" in item:
        return str(item["result"])
    return ", ".join(str(element) for element in item.get("elements", ()))


def firings_so_far(cursor: InstanceCursor, step: int) -> str:
    """`fired so far: 17 (3 at this step, 1 late)`."""
    out = cursor.outputs
    fired = out[(out["step"] <= step) & (out["kind"] == "window")] if not out.empty else out
    if fired.empty:
        return "No window has fired so far."
    now = int((fired["step"] == step).sum())
    late = int((fired["late"] == True).sum())  # noqa: E712 (None where a row has no late flag)
    return f"fired so far: {len(fired)} ({now} at this step, {late} late)"


# --- the join ----------------------------------------------------------------------------------------


def join_cache_table(pipeline: InstancePipeline, t: TimeFormat = DEFAULT) -> pd.DataFrame | None:
    """Rows the interval join still caches, waiting for partners. `matched` is Flink's flag, which
    it keeps on an outer side only (see MATCHED_HELP); `joined` says whether the row took part in
    any output, on either side."""
    op = pipeline.operator
    if not isinstance(op, IntervalJoin):
        return None
    rows = []
    for key, state in sorted(op.keys.items()):
        for side, cache in state.caches.items():
            outer = op.outer[side]
            for time_ms, cached in sorted(cache.items()):
                for c in cached:
                    rows.append(
                        {
                            "row": label(c.row, t),
                            "key": key,
                            "side": f"{side} ({'outer' if outer else 'inner'})",
                            "time": t(time_ms),
                            "trace row": c.row.row,
                            "matched (outer only)": ("yes" if c.matched else "no")
                            if outer
                            else "not tracked",
                            "joined": "yes" if c.joined else "no",
                            "early-fired": "yes" if c.fired else "no",
                        }
                    )
    columns = ["row", "key", "side", "time", "trace row", "matched (outer only)", "joined", "early-fired"]
    return pd.DataFrame(rows, columns=columns)


def _matched(matched: bool, outer: bool) -> str:
    if not outer:
        return "not tracked"
    return "yes" if matched else "no"


def changelog_table(cursor: InstanceCursor, step: int, t: TimeFormat = DEFAULT) -> pd.DataFrame:
    """The join's changelog up to `step`: `+I` / `-U` / `+U` naming each side by its value and time
    (`order-1@10000`, or `null`), the trace rows one column away, each `-U` linked to the row (#)
    it corrects; the latest SHOWN_ROWS rows."""
    columns = ["step", "#", "kind", "left", "right", "cause", "corrects", "trace rows", "now"]
    out = cursor.outputs
    if out.empty:
        return pd.DataFrame(columns=columns)
    out = out[(out["step"] <= step) & out["kind"].isin(["+I", "-U", "+U"])].reset_index(drop=True)
    names = _row_names(cursor, t)
    rows: list[dict[str, object]] = []
    latest: dict[tuple[int | None, int | None], int] = {}  # (left, right) -> its latest +I/+U
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
                "left": _side(left, names),
                "right": _side(right, names),
                "cause": rec.cause,
                "corrects": corrects,
                "trace rows": f"L {_line(left)} · R {_line(right)}",
                "now": "◀" if rec.step == step else "",
            }
        )
    return pd.DataFrame(rows[-SHOWN_ROWS:], columns=columns)


def changelog_so_far(cursor: InstanceCursor, step: int) -> str:
    """`changelog so far: 4 rows (2 +I, 1 -U, 1 +U); 2 at this step`."""
    out = cursor.outputs
    log = out[(out["step"] <= step) & out["kind"].isin(["+I", "-U", "+U"])] if not out.empty else out
    if log.empty:
        return "The join has emitted nothing so far."
    counts = log["kind"].value_counts()
    kinds = ", ".join(f"{int(counts[k])} {k}" for k in ("+I", "-U", "+U") if k in counts)
    return f"changelog so far: {len(log)} rows ({kinds}); {int((log['step'] == step).sum())} at this step"


def _row_names(cursor: InstanceCursor, t: TimeFormat) -> dict[int, str]:
    """Trace row number → the narration's name of that row (`order-1@10000`), for joined rows."""
    out = cursor.outputs
    wanted: set[int] = set()
    for column in ("left_row", "right_row"):
        wanted.update(int(v) for v in out[column].dropna())
    rows = cursor.steps.column("row").to_numpy(zero_copy_only=False)
    found = np.flatnonzero(np.isin(rows, np.fromiter(wanted, dtype=np.int64, count=len(wanted))))
    return {int(rows[s]): label(cursor.trace_row(int(s)), t) for s in found}


def _side(row: int | None, names: dict[int, str]) -> str:
    return "null" if row is None else names.get(row, f"line {row}")


def _line(row: int | None) -> str:
    return "—" if row is None else f"line {row}"


def _row_no(value) -> int | None:
    return None if value is None or pd.isna(value) else int(value)


# --- drops -------------------------------------------------------------------------------------------


def dropped_table(
    cursor: InstanceCursor, step: int, t: TimeFormat = DEFAULT, *, so_far: bool = False
) -> pd.DataFrame:
    """Records dropped at this step (or, `so_far`, at every step up to it: the latest SHOWN_ROWS),
    with the step, the trace row and why (its times through `t`)."""
    steps = cursor.events["late drop"]
    chosen: np.ndarray | list[int]
    if so_far:
        chosen = steps[: int(np.searchsorted(steps, step, side="right"))][-SHOWN_ROWS:]
    else:
        chosen = [step] if cursor.steps.column("dropped_json")[step].is_valid else []
    rows = []
    for s in chosen:
        for d in json.loads(cursor.steps.column("dropped_json")[int(s)].as_py()):
            rows.append({"step": int(s), "trace row": d["row"], "reason": drop_reason(d, t)})
    return pd.DataFrame(rows, columns=["step", "trace row", "reason"])


def drop_reason(stored: dict, t: TimeFormat) -> str:
    """A stored drop's reason in the reader's time format (an older timeline kept only the text)."""
    if "template" not in stored:
        return stored["reason"]
    return TimedText(stored["template"], tuple(stored["times"])).text(t)


def dropped_so_far(cursor: InstanceCursor, step: int) -> int:
    """How many records were dropped at or before `step`."""
    steps = cursor.events["late drop"]
    upto = steps[: int(np.searchsorted(steps, step, side="right"))]
    if not len(upto):
        return 0
    texts = cursor.steps.column("dropped_json").take(pa.array(upto, type=pa.int64()))
    return sum(len(json.loads(text)) for text in texts.to_pylist())


def operator_watermark(cursor: InstanceCursor, step: int) -> int | None:
    """The watermark the operator itself last emitted downstream at or before `step` (a window
    operator forwards its input's; an interval join holds it back by its bounds), None if none."""
    out = cursor.outputs
    if out.empty:
        return None
    emitted = out[(out["kind"] == "wm") & (out["step"] <= step)]
    return None if emitted.empty else int(emitted["watermark_ms"].iloc[-1])
