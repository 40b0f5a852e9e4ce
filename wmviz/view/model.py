"""What each panel shows at a step, as plain pandas tables and dataclasses (no Streamlit here).

The renderer only lays these out; everything a test wants to assert about a panel is decided here.
Every time goes through one `TimeFormat` (`t`): readable in one column, the raw number in the next.
The operator's panels (timers, windows, changelog, drops) are in `wmviz.view.operator_model`; where
the output is stuck and who holds it, in `wmviz.view.stall`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from wmviz.core.pipeline import InstancePipeline
from wmviz.core.types import MAX_MS, MIN_MS, Profile, Status, ValveState
from wmviz.timeline.cursor import InstanceCursor
from wmviz.trace.payload import decode_payload, payload_text
from wmviz.view.timefmt import DEFAULT, TimeFormat, is_epoch, raw

HOLDS = "◀ holds it"
"""The channel table's mark, under the header `minimum`, for the channel(s) the valve's output
waits on; short, so a two-input table with dated times fits beside the step at 1440 px (`◀ holds
the minimum` was cut there)."""


@dataclass(frozen=True)
class ValveView:
    """One valve at a step: its channel table, heap, and output."""

    input: str
    channels: pd.DataFrame
    heap: tuple[tuple[int, int], ...]
    output_wm: int
    output_status: str
    min_channels: tuple[int, ...]


def valve_view(
    name: str,
    state: ValveState,
    profile: Profile,
    finished: set[tuple[str, int]],
    t: TimeFormat = DEFAULT,
) -> ValveView:
    """The channel table of one valve: the watermark readable and raw, status, aligned, who holds
    the minimum.

    Released profiles have no FINISHED status: a finished channel is an ACTIVE channel at MAX, and
    the table says so rather than showing a plain ACTIVE. The raw column is left out when it would
    repeat the readable one (small demo values, or `ms` mode).
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
                "watermark": t(c.watermark_ms),
                "raw (ms)": raw(c.watermark_ms),
                "status": status,
                "aligned": "yes" if c.aligned else "no",
                "minimum": HOLDS if c.channel in holders else "",
            }
        )
    table = pd.DataFrame(rows, columns=["channel", "watermark", "raw (ms)", "status", "aligned", "minimum"])
    if (table["watermark"] == table["raw (ms)"]).all():
        table = table.drop(columns="raw (ms)")
    heap = tuple((n.channel, n.watermark_ms) for n in state.heap)
    return ValveView(name, table, heap, state.last_watermark_ms, state.last_status.value, holders)


def valve_views(
    cursor: InstanceCursor,
    pipeline: InstancePipeline,
    step: int,
    profile: Profile,
    t: TimeFormat = DEFAULT,
) -> list[ValveView]:
    """Every valve of the instance after `step` (one, or L and R for a two-input operator)."""
    finished = cursor.finished_by(step)
    return [valve_view(name, v.state(), profile, finished, t) for name, v in pipeline.valves.items()]


def merged_channels(views: list[ValveView]) -> pd.DataFrame:
    """The channel tables of several valves as one, an `input` column first (each valve's minimum
    is marked within that valve)."""
    frames = []
    for view in views:
        frame = view.channels.copy()
        frame.insert(0, "input", view.input)
        frames.append(frame)
    merged = pd.concat(frames, ignore_index=True)
    if "raw (ms)" in merged:
        merged["raw (ms)"] = merged["raw (ms)"].fillna(merged["watermark"])
    order = ["input", "channel", "watermark", "raw (ms)", "status", "aligned", "minimum"]
    return merged[[c for c in order if c in merged.columns]]


def holders(views: list[ValveView]) -> list[tuple[str, int]]:
    """The (input, channel) pairs that hold the output at this step: the channels at the minimum of
    the valve whose output is lowest (for a two-input operator, the input that holds it back)."""
    if not views:
        return []
    lowest = min(v.output_wm for v in views)
    return [(v.input, c) for v in views if len(views) == 1 or v.output_wm == lowest for c in v.min_channels]


@dataclass(frozen=True)
class OutputCard:
    """One watermark the output panel shows: what it is, readable, raw (for the hover), status."""

    label: str
    value: str
    raw: str
    status: str | None
    dated: bool = False
    """The date went into the label (an epoch time shown as its clock time)."""


def output_cards(
    views: list[ValveView],
    pipeline: InstancePipeline,
    operator: int | None,
    t: TimeFormat = DEFAULT,
) -> list[OutputCard]:
    """The output watermark(s) after the step: each valve's, the combined input's for a two-input
    operator, and what the operator itself sent downstream (a window forwards its input's, an
    interval join holds it back by its bounds)."""
    cards = [
        _card("output watermark" if len(views) == 1 else f"input {v.input}: valve output", v.output_wm,
              v.output_status, t)
        for v in views
    ]  # fmt: skip
    if len(views) > 1:
        wm = pipeline.output_watermark_ms
        cards.append(_card("combined (min of L and R)", wm, pipeline.output_status.value, t))
    if operator is not None:
        cards.append(_card("operator output (downstream)", operator, None, t))
    return cards


def _card(label: str, ms: int, status: str | None, t: TimeFormat) -> OutputCard:
    """A date-time is split so that it fits a card: the clock time as the value (`10:05:15.000Z`),
    the date in the label."""
    text = t(ms)
    if status is not None:
        label = f"{label} · {status}"
    if t.mode == "utc" and is_epoch(ms):
        return OutputCard(f"{label} · {text[:10]}", text[11:], raw(ms), status, dated=True)
    return OutputCard(label, text, raw(ms), status)


CHART_STEPS = 2_000
"""The watermark chart shows at most this many steps around the cursor (the whole trace if shorter)."""


def chart_window(count: int, step: int, width: int = CHART_STEPS) -> tuple[int, int]:
    """The first and last step the watermark chart shows: all of them, or `width` around `step`."""
    if count <= width:
        return 0, count - 1
    first = min(max(step - width // 2, 0), count - width)
    return first, first + width - 1


def history_window(
    history: pd.DataFrame, output: pd.DataFrame, first: int, last: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The chart's input cut to steps `first..last`: each channel's state on entry as step first−1,
    then its changes inside the window; the output rows inside the window."""
    before = history[history["step"] < first]
    entry = before.groupby(["input", "channel"], sort=False).tail(1).assign(step=first - 1)
    inside = history[(history["step"] >= first) & (history["step"] <= last)]
    rows = output[(output["step"] >= first) & (output["step"] <= last)]
    return pd.concat([entry, inside], ignore_index=True), rows.reset_index(drop=True)


def input_table(record: dict, t: TimeFormat = DEFAULT) -> pd.DataFrame:
    """The input that just arrived: its non-empty fields, as text (user text is never markup);
    times readable with the raw number beside them."""
    fields = [
        ("trace row", record.get("row")),
        ("kind", record.get("kind")),
        ("input", record.get("input")),
        ("channel", record.get("channel")),
        ("seq", record.get("seq")),
        ("event time", _time(record.get("event_ms"), t)),
        ("watermark", _time(record.get("watermark_ms"), t)),
        ("status", record.get("status")),
        ("processing time", _time(record.get("proc_ms"), t)),
        ("key", record.get("key")),
        ("value", record.get("value_json")),
    ]
    payload = decode_payload(record.get("payload_json"))
    fields.extend((f"payload: {name}", payload_text(value)) for name, value in payload)
    rows = [{"field": k, "value": str(v)} for k, v in fields if v is not None]
    return pd.DataFrame(rows, columns=["field", "value"])


def _time(ms: int | None, t: TimeFormat) -> str | None:
    return None if ms is None else t.with_raw(ms)


def input_summary(record: dict, t: TimeFormat = DEFAULT) -> str:
    """The input in one line for the step's header: `watermark 10:05:15.000Z on ch2`,
    `record key=user-1 value="click-9" at … on R ch0`, `IDLE on ch1` (plain text)."""
    kind = record.get("kind")
    where = f"ch{record.get('channel')}"
    if record.get("input") not in (None, "0"):
        where = f"{record['input']} {where}"
    if kind == "watermark":
        return f"watermark {t(record['watermark_ms'])} on {where}"
    if kind == "status":
        return f"{record['status']} on {where}"
    if kind == "proctime":
        return f"processing time reaches {t(record['proc_ms'])}"
    parts = ["record"]
    if record.get("key") is not None:
        parts.append(f"key={record['key']}")
    if record.get("value_json") is not None:
        parts.append(f"value={record['value_json']}")
    if record.get("event_ms") is not None:
        parts.append(f"at {t(record['event_ms'])}")
    return " ".join(parts) + f" on {where}"


def trace_times(steps) -> int | None:
    """The relative origin of a steps table (Arrow), as `wmviz.view.timefmt.trace_origin` for a trace:
    its smallest finite event time or watermark, else its first processing time (None: none)."""

    def smallest(names: tuple[str, ...]) -> int | None:
        best = None
        for name in names:
            if name not in steps.column_names:
                continue
            values = steps.column(name).drop_null().to_numpy(zero_copy_only=False).astype(np.int64)
            values = values[(values != MIN_MS) & (values != MAX_MS)]
            if len(values):
                best = int(values.min()) if best is None else min(best, int(values.min()))
        return best

    found = smallest(("event_ms", "watermark_ms"))
    return found if found is not None else smallest(("proc_ms",))


def step_for_order(orders: np.ndarray, order: int) -> int:
    """The step of an instance whose arrival `order` is the last at or before `order` (0 when the
    instance had no row yet): changing instance keeps the moment, not the step number."""
    return max(int(np.searchsorted(orders, order, side="right")) - 1, 0)
