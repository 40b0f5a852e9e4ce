"""Compare two runs of one instance: where they first differ, and every step where they do.

A run is an `InstanceCursor` (one instance of a timeline). Two runs differ at a step when the
step's emissions (`out_json`), operator output (`emit_json`), dropped records (`dropped_json`),
output watermark or output status differ, or when any channel's (watermark, status, aligned)
after the step does. Rules and narration are not compared: two profiles name the same outcome
differently. Channel states come from the `channels` change tables, compared interval by
interval, so no step's state is ever rebuilt.

Steps are paired in one of two ways:

* `aligned_by="step"`: step i with step i. An Insert or Delete in a what-if shifts every later
  step by one, so those steps differ by construction; `step_map` translates a step of the
  original into the what-if's so a UI can keep both sides on the same row.
* `aligned_by="row"`: by the trace rows themselves. The longest common prefix and suffix of the
  two runs' input rows are paired; what is left in between (one hunk, exactly what one edit
  leaves) is paired position by position, and a row present in one run only is set against
  "nothing arrived" in the other: no emissions, state as after its previous step. So an inserted
  row that changes nothing is no divergence. Step numbers reported are those of `a`. Where
  identical neighbouring rows leave an edit's place ambiguous, the longest prefix wins (a deleted
  row may be taken to be its identical successor); the inputs paired are the same either way.

Pure: no streamlit, pyspark or plotly.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from wmviz.analysis.whatif_edit import Change, Configure, Delete, Edit, Insert
from wmviz.core.types import MIN_MS
from wmviz.timeline.cursor import InstanceCursor
from wmviz.timeline.tables import INPUT_COLUMNS
from wmviz.view.timefmt import DEFAULT, TimeFormat

__all__ = ["Divergence", "divergence_steps", "first_divergence", "step_map"]

# (column, aspect name, value when the step is missing). What a step caused is empty where a row
# is missing on one side ...
_EVENT_ASPECTS = (
    ("out_json", "emissions", ""),
    ("emit_json", "operator output", None),
    ("dropped_json", "dropped records", None),
)
# ... and the output state is carried forward from the last step (before the first: MIN / ACTIVE).
_STATE_ASPECTS = (("output_wm", "output watermark", MIN_MS), ("output_status", "output status", "ACTIVE"))
# A channel's state before its first change (docs/engines.md, "The timeline dataset").
_CHANNEL_FIELDS = (
    ("watermark_ms", "watermark", MIN_MS),
    ("status", "status", "ACTIVE"),
    ("aligned", "aligned", True),
)
# What identifies a row across two runs: everything but `row` and `seq`, which an edit renumbers.
_INPUT_COLUMNS = tuple(c for c in INPUT_COLUMNS if c not in ("row", "seq"))
ONLY_IN_ONE_RUN = "only in one run"


@dataclass(frozen=True)
class Divergence:
    """Where two runs of an instance first differ.

    `step` is the step of the left run (`a`); for a row only the right run has (an insert, row
    alignment) it is the left step that row arrived before. `right_step` is the right run's step
    there (None where it has no row).
    """

    step: int
    what: tuple[str, ...]
    left: str
    right: str
    right_step: int | None = None


def first_divergence(
    a: InstanceCursor,
    b: InstanceCursor,
    *,
    aligned_by: str = "step",
    output: bool = False,
    t: TimeFormat = DEFAULT,
) -> Divergence | None:
    """The first step where runs `a` and `b` differ, or None when they never do.

    With `output=True`, the first step where what they *send on* differs (emissions, operator
    output, dropped records, output watermark or status), ignoring channel states that have not
    reached the output yet: what a person debugging a wrong result looks for first.
    With `aligned_by="step"` a run longer than the other diverges at the first step past the
    shorter one ("only in one run"); with `aligned_by="row"` see the module docstring.
    """
    cmp = _Comparison(a, b, aligned_by)
    slots = np.flatnonzero(cmp.output_mask if output else cmp.mask)
    if not len(slots):
        return None
    slot = int(slots[0])
    ia, ib = int(cmp.ia[slot]), int(cmp.ib[slot])
    if aligned_by == "step" and (ia < 0 or ib < 0):
        what: tuple[str, ...] = (ONLY_IN_ONE_RUN,)
        channels: list[tuple[str, int]] = []
    else:
        what, channels = cmp.aspects_at(slot)
    return Divergence(
        step=int(cmp.left_step[slot]),
        what=what,
        left=cmp.summary(0, slot, what, channels, t),
        right=cmp.summary(1, slot, what, channels, t),
        right_step=ib if ib >= 0 else None,
    )


def divergence_steps(
    a: InstanceCursor, b: InstanceCursor, *, aligned_by: str = "step", output: bool = False
) -> list[int]:
    """Every step of `a` where the runs differ (`output=True`: where what they send on differs),
    ascending (for marking a chart). With `aligned_by="step"` the steps past the shorter run are
    all included.
    """
    cmp = _Comparison(a, b, aligned_by)
    return np.unique(cmp.left_step[cmp.output_mask if output else cmp.mask]).tolist()


def step_map(
    edit: Edit, count: int, *, instance: str | None = None, inverse: bool = False
) -> Callable[[int], int | None]:
    """Map a step of the original run to the what-if's (None: that row was deleted).

    `count` is the original instance's step count. For another `instance` than the edit's the map
    is the identity. `inverse=True` maps a what-if step back (None: the inserted row). Step −1
    (before the first) maps to −1; any other step outside the run is a ValueError.
    """
    if not isinstance(edit, Insert | Delete | Change | Configure):
        raise TypeError(f"not an edit: {edit!r}")
    shift = {Insert: 1, Delete: -1}.get(type(edit), 0)
    if instance is not None and instance != edit.instance:
        shift = 0
    size = count + shift if inverse else count
    if inverse:
        shift = -shift
    at = edit.step

    def mapped(step: int) -> int | None:
        if step == -1:
            return -1
        if not 0 <= step < size:
            raise ValueError(f"step {step} is not in a run of {size} steps")
        if shift == 0 or step < at:
            return step
        if shift < 0 and step == at:
            return None  # the row is not in the other run
        return step + shift

    return mapped


# --- the comparison ---------------------------------------------------------------------------------


class _Comparison:
    """Both runs laid out on common slots, and a mask of the slots where they differ."""

    def __init__(self, a: InstanceCursor, b: InstanceCursor, aligned_by: str) -> None:
        if aligned_by not in ("step", "row"):
            raise ValueError(f"aligned_by must be 'step' or 'row', not {aligned_by!r}")
        self.runs = (a, b)
        self.ia, self.ib = _align_rows(a, b) if aligned_by == "row" else _align_steps(a.count, b.count)
        self.n = len(self.ia)
        if aligned_by == "step":
            self.left_step = np.arange(self.n, dtype=np.int64)
        else:
            # A right-only row belongs to the left step it arrived before (Insert's own convention).
            nxt = np.where(self.ia >= 0, self.ia, np.iinfo(np.int64).max)
            self.left_step = np.minimum.accumulate(nxt[::-1])[::-1] if self.n else nxt
            self.left_step = np.where(self.left_step == np.iinfo(np.int64).max, a.count, self.left_step)
        self.values = [self._slot_values(run, idx) for run, idx in zip(self.runs, (self.ia, self.ib))]
        mask = np.zeros(self.n, dtype=bool)
        for column, *_ in (*_EVENT_ASPECTS, *_STATE_ASPECTS):
            mask |= self.values[0][column] != self.values[1][column]
        if aligned_by == "step":
            mask |= (self.ia < 0) | (self.ib < 0)
        self.output_mask = mask  # what leaves the valve or operator: emissions, output, drops
        self.changes = [self._channel_changes(run, idx) for run, idx in zip(self.runs, (self.ia, self.ib))]
        self.mask = mask | self._channel_mask()

    def _slot_values(self, run: InstanceCursor, idx: np.ndarray) -> dict[str, np.ndarray]:
        present = idx >= 0
        # A missing row changes nothing: the state is the one after the last row that did arrive.
        held = np.maximum.accumulate(idx) if len(idx) else idx
        values = {}
        for column, _, empty in _EVENT_ASPECTS:
            values[column] = _take(_column(run, column), idx, present, empty)
        for column, _, initial in _STATE_ASPECTS:
            values[column] = _take(_column(run, column), held, held >= 0, initial)
        return values

    def _channel_changes(self, run: InstanceCursor, idx: np.ndarray) -> pd.DataFrame:
        """The run's channel changes, each placed at the slot of the step that made it."""
        ch = run.channels
        columns = ["slot", "input", "channel", "pos"]
        if ch.empty:
            return pd.DataFrame({c: pd.Series(dtype="int64" if c != "input" else object) for c in columns})
        slot_of_step = np.full(run.count, -1, dtype=np.int64)
        present = idx >= 0
        slot_of_step[idx[present]] = np.flatnonzero(present)
        steps = ch["step"].to_numpy(dtype=np.int64)
        return pd.DataFrame(
            {
                "slot": slot_of_step[steps],
                "input": ch["input"].astype(str).to_numpy(),
                "channel": ch["channel"].to_numpy(dtype=np.int64),
                "pos": np.arange(len(ch), dtype=np.int64),
            }
        ).sort_values("slot", kind="stable")

    def _states(self, side: int, keys: pd.DataFrame) -> dict[str, np.ndarray]:
        """Each side's channel (watermark, status, aligned) at each key (slot, input, channel)."""
        changes = self.changes[side]
        if changes.empty:
            pos = np.full(len(keys), -1, dtype=np.int64)
        else:
            found = pd.merge_asof(keys, changes, on="slot", by=["input", "channel"], direction="backward")
            pos = found["pos"].fillna(-1).to_numpy(dtype=np.int64)
        ch = self.runs[side].channels
        return {
            field: _take(ch[field].to_numpy() if len(ch) else np.array([]), pos, pos >= 0, initial)
            for field, _, initial in _CHANNEL_FIELDS
        }

    def _channel_keys(self, upto: int | None = None) -> pd.DataFrame:
        keys = pd.concat([c[["slot", "input", "channel"]] for c in self.changes], ignore_index=True)
        if upto is not None:
            keys = keys[keys["slot"] <= upto]
        return keys.drop_duplicates().sort_values("slot", kind="stable").reset_index(drop=True)

    def _channel_mask(self) -> np.ndarray:
        """Slots where some channel differs: a state holds from its key to the channel's next key."""
        keys = self._channel_keys()
        keys = keys[keys["slot"] >= 0].reset_index(drop=True)
        delta = np.zeros(self.n + 1, dtype=np.int64)
        if keys.empty:
            return delta[:-1] > 0
        left, right = self._states(0, keys), self._states(1, keys)
        differ = np.zeros(len(keys), dtype=bool)
        for field, *_ in _CHANNEL_FIELDS:
            differ |= left[field] != right[field]
        end = keys.groupby(["input", "channel"], sort=False)["slot"].shift(-1, fill_value=self.n)
        np.add.at(delta, keys["slot"].to_numpy()[differ], 1)
        np.add.at(delta, end.to_numpy(dtype=np.int64)[differ], -1)
        return np.cumsum(delta)[:-1] > 0

    def aspects_at(self, slot: int) -> tuple[tuple[str, ...], list[tuple[str, int]]]:
        """Which aspects differ at `slot`, and the channels among them."""
        what = [
            label
            for column, label, _ in (*_EVENT_ASPECTS, *_STATE_ASPECTS)
            if self.values[0][column][slot] != self.values[1][column][slot]
        ]
        channels = []
        keys = self._channel_keys(slot).drop_duplicates(["input", "channel"], keep="last")
        keys = keys.assign(slot=slot).sort_values(["input", "channel"]).reset_index(drop=True)
        if not keys.empty:
            left, right = self._states(0, keys), self._states(1, keys)
            for i, (inp, channel) in enumerate(zip(keys["input"], keys["channel"])):
                fields = [name for f, name, _ in _CHANNEL_FIELDS if left[f][i] != right[f][i]]
                if fields:
                    channels.append((inp, int(channel)))
                    what.extend(f"{_channel_name(inp, int(channel))} {name}" for name in fields)
        return tuple(what), channels

    def summary(
        self, side: int, slot: int, what: tuple[str, ...], channels: list[tuple[str, int]], t: TimeFormat
    ) -> str:
        """One line: the row that arrived, what it emitted, the output, the differing channels."""
        run, idx = self.runs[side], (self.ia, self.ib)[side][slot]
        values = self.values[side]
        if idx < 0:
            if ONLY_IN_ONE_RUN in what:
                return f"no step {slot}: this run has {run.count} steps"
            head = "no such row in this run (state as after its previous step)"
        else:
            head = f"step {idx} {_describe_input(run.row(int(idx)), t)}: " + (
                f"emit {emitted_text(values['out_json'][slot], t)}"
                if values["out_json"][slot]
                else "nothing emitted"
            )
        parts = [head, f"output {t(int(values['output_wm'][slot]))} {values['output_status'][slot]}"]
        for column, label, _ in _EVENT_ASPECTS[1:]:
            if label in what:
                parts.append(f"{label}: {_count(values[column][slot])}")
        if channels:
            keys = pd.DataFrame(
                {"slot": slot, "input": [c[0] for c in channels], "channel": [c[1] for c in channels]}
            )
            state = self._states(side, keys)
            for i, (inp, channel) in enumerate(channels):
                aligned = "aligned" if state["aligned"][i] else "not aligned"
                wm = t(int(state["watermark_ms"][i]))
                parts.append(f"{_channel_name(inp, channel, short=True)} {wm} {state['status'][i]} {aligned}")
        return "; ".join(parts)


def _align_steps(count_a: int, count_b: int) -> tuple[np.ndarray, np.ndarray]:
    slots = np.arange(max(count_a, count_b), dtype=np.int64)
    return np.where(slots < count_a, slots, -1), np.where(slots < count_b, slots, -1)


def _align_rows(a: InstanceCursor, b: InstanceCursor) -> tuple[np.ndarray, np.ndarray]:
    """Pair the common prefix and suffix of the input rows; the hunk between position by position."""
    ca, cb = a.count, b.count
    common = min(ca, cb)
    same = np.ones(common, dtype=bool)
    same_tail = np.ones(common, dtype=bool)
    for column in _INPUT_COLUMNS:
        x, y = a.steps.column(column), b.steps.column(column)
        same &= _same(x.slice(0, common), y.slice(0, common))
        same_tail &= _same(x.slice(ca - common), y.slice(cb - common))
    prefix = int(np.argmin(same)) if not same.all() else common
    tail = same_tail[::-1][: common - prefix]  # the suffix may not overlap the prefix
    suffix = int(np.argmin(tail)) if not tail.all() else len(tail)
    hunk_a, hunk_b = ca - prefix - suffix, cb - prefix - suffix
    paired = min(hunk_a, hunk_b)
    head = np.arange(prefix + paired, dtype=np.int64)
    only_a = np.arange(prefix + paired, prefix + hunk_a, dtype=np.int64)
    only_b = np.arange(prefix + paired, prefix + hunk_b, dtype=np.int64)
    ia = np.concatenate([head, only_a, np.full(len(only_b), -1), np.arange(ca - suffix, ca)])
    ib = np.concatenate([head, np.full(len(only_a), -1), only_b, np.arange(cb - suffix, cb)])
    return ia.astype(np.int64), ib.astype(np.int64)


def _same(x: pa.ChunkedArray, y: pa.ChunkedArray) -> np.ndarray:
    """Element-wise equality where two nulls are equal (Arrow's `equal` gives null for them)."""
    equal = pc.fill_null(pc.equal(x, y), False)
    return pc.or_(equal, pc.and_(pc.is_null(x), pc.is_null(y))).to_numpy(zero_copy_only=False)


def _column(run: InstanceCursor, name: str) -> np.ndarray:
    """A steps column as numpy: strings as objects (None for null), integers exact."""
    column = run.steps.column(name)
    if column.null_count and not pa.types.is_string(column.type):
        # to_numpy would turn a nullable int64 into float64 and lose MAX_MS; objects keep it.
        return np.asarray(column.to_pylist(), dtype=object)
    return column.to_numpy(zero_copy_only=False)


def _take(values: np.ndarray, idx: np.ndarray, present: np.ndarray, missing: object) -> np.ndarray:
    """values[idx] where present, else `missing`, keeping int64 exact (no float detour)."""
    exact_int = isinstance(missing, int) and not isinstance(missing, bool)
    if not len(values):
        return np.full(len(idx), missing, dtype=np.int64 if exact_int else object)
    out = values[np.where(present, idx, 0)]
    if not exact_int or out.dtype.kind not in "iu":
        out = out.astype(object)
    out[~present] = missing
    return out


def _channel_name(inp: str, channel: int, *, short: bool = False) -> str:
    name = f"ch{channel}" if short else f"channel {channel}"
    return name if inp == "0" else f"input {inp} {name}"


def _describe_input(row: dict, t: TimeFormat = DEFAULT) -> str:
    """The row in the conformance notation where it has one: `W10@2`, `IDLE@0`, `record@1`."""
    prefix = f"{row['input']}:" if row.get("input") not in (None, "0") else ""
    kind, channel = row["kind"], row.get("channel")
    if kind == "watermark":
        return f"{prefix}W{t.token(row['watermark_ms'])}@{channel}"
    if kind == "status":
        return f"{prefix}{row['status']}@{channel}"
    if kind == "record":
        event = row.get("event_ms")
        return f"{prefix}record {t(event) if event is not None else ''}@{channel}"
    return f"proctime {t(row.get('proc_ms'))}"


def emitted_text(out: str, t: TimeFormat = DEFAULT) -> str:
    """A step's emissions as stored (`W10 S:IDLE`, `WMAX`) with their times formatted by `t`."""
    tokens = []
    for token in out.split():
        body = token[1:]
        if token.startswith("W") and body.lstrip("-").isdigit():
            token = "W" + t.token(int(body))
        tokens.append(token)
    return " ".join(tokens)


def _count(emit_json: str | None) -> str:
    return "none" if emit_json is None else f"{len(json.loads(emit_json))} item(s)"
