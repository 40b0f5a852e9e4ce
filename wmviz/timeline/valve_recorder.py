"""Record a valve-only instance: per step only the few values a step decides, the rest vectorized.

The general recorder compares each touched channel with its last state at every step; a valve-only
step touches exactly one channel (the row's), so this recorder keeps that channel's state after
every step and finds the changes (the `channels` table) and the heap's joins, leaves and moves
(the `heap` table) with numpy at the end. `tests/timeline/test_timeline.py` checks both recorders write the
same timeline.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from wmviz.core.pipeline import InstancePipeline
from wmviz.core.types import Emission, Status, format_emission
from wmviz.core.valve import Outcome
from wmviz.timeline import keyframe
from wmviz.timeline.recorder import StepsCaused, status_text, steps_table
from wmviz.timeline.tables import SCHEMAS

_RULE_TEXT = {id(outcome): " ".join(outcome.rules) for outcome in Outcome}  # by id: an Enum's hash is slow
_ACTIVE, _IDLE = Status.ACTIVE, Status.IDLE
_STATUS_NAMES = np.array(["ACTIVE", "IDLE", "FINISHED"], object)


def _code(status: Status, aligned: bool) -> int:
    """(status, aligned) as one small int: 2 × status index + aligned."""
    return (0 if status is _ACTIVE else 2 if status is _IDLE else 4) + aligned


class ValveOnlyRecorder:
    """One valve-only instance's timeline rows (see the module docstring)."""

    def __init__(self, pipeline: InstancePipeline, keyframe_every: int, refs: dict[str, Any]) -> None:
        self.instance = pipeline.instance
        self.keyframe_every = keyframe_every
        self.refs = refs
        self.first_valve = pipeline.valves[pipeline.inputs[0]]
        self.initial = {
            (name, c): valve.channel_tuple(c)
            for name, valve in pipeline.valves.items()
            for c in range(valve.channels)
        }
        self.rules: list[str] = []
        self.out: list[str] = []
        self.output_wm: list[int] = []
        self.output_status: list[str] = []
        self.channel_wm: list[int] = []
        self.channel_code: list[int] = []  # -1: the row passed the valve
        self.keyframes: tuple[list[int], list[bytes]] = ([], [])
        self._until_keyframe = keyframe_every
        self.keyframe(pipeline, -1)

    def record(
        self,
        pipeline: InstancePipeline,
        step: int,
        input_name: str,
        channel: int | None,
        outcome: Outcome | None,
        out: list[Emission],
    ) -> None:
        """A step of `InstancePipeline.process_valve_only`."""
        if outcome is None:
            valve = self.first_valve
            self.rules.append("")
            self.out.append("")
            self.channel_wm.append(0)
            self.channel_code.append(-1)
        else:
            valve = pipeline.valves[input_name]
            self.rules.append(_RULE_TEXT[id(outcome)])
            self.out.append(" ".join([format_emission(e) for e in out]) if out else "")
            wm, status, aligned = valve.channel_tuple(channel)  # type: ignore[arg-type]
            self.channel_wm.append(wm)
            self.channel_code.append(_code(status, aligned))
        self.output_wm.append(valve.last_watermark_ms)
        self.output_status.append(status_text(valve.last_status))
        self._until_keyframe -= 1
        if not self._until_keyframe:
            self.keyframe(pipeline, step)
            self._until_keyframe = self.keyframe_every

    def keyframe(self, pipeline: InstancePipeline, step: int) -> None:
        self.keyframes[0].append(step)
        self.keyframes[1].append(keyframe.encode(pipeline, self.refs))

    # ---- the tables ------------------------------------------------------------------------------

    def tables(self, rows: pa.Table) -> dict[str, pa.Table]:
        """Every table of this instance; `rows` are its trace rows (ROW_SCHEMA) in step order."""
        n = rows.num_rows
        nulls = pa.nulls(n, pa.string())
        result = {
            "steps": steps_table(
                self.instance,
                rows,
                StepsCaused(self.rules, self.out, nulls, nulls, self.output_wm, self.output_status),
            )
        }
        result.update(self._changes(rows))
        steps, states = self.keyframes
        result["keyframes"] = self._table(
            "keyframes", len(steps), step=pa.array(steps, pa.int64()), state=pa.array(states, pa.binary())
        )
        return result

    def _table(self, name: str, count: int, **columns: pa.Array) -> pa.Table:
        schema = SCHEMAS[name]
        arrays = {"instance": pa.repeat(pa.scalar(self.instance, pa.string()), count), **columns}
        return pa.table(arrays, schema=schema)

    def _changes(self, rows: pa.Table) -> dict[str, pa.Table]:
        """`channels` and `heap`: each step whose channel's (watermark, status, aligned) changed."""
        code = np.asarray(self.channel_code, np.int64)
        touched = np.flatnonzero(code >= 0)
        if not len(touched):
            return {}
        wm = np.asarray(self.channel_wm, np.int64)[touched]
        code = code[touched]
        inputs = rows.column("input").take(pa.array(touched))
        channels = (
            rows.column("channel").take(pa.array(touched)).to_numpy(zero_copy_only=False).astype(np.int64)
        )
        encoded = pc.dictionary_encode(inputs).combine_chunks()
        names = encoded.dictionary.to_pylist()
        input_codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        key = input_codes * (1 << 32) + channels
        order = np.lexsort((touched, key))  # by channel, then step
        key_sorted = key[order]
        first = np.concatenate(([True], key_sorted[1:] != key_sorted[:-1]))
        before_wm = np.concatenate(([0], wm[order][:-1]))
        before_code = np.concatenate(([0], code[order][:-1]))
        for i in np.flatnonzero(first).tolist():  # a channel's first step compares with its start
            j = order[i]
            start_wm, start_status, start_aligned = self.initial[(names[input_codes[j]], int(channels[j]))]
            before_wm[i], before_code[i] = start_wm, _code(start_status, start_aligned)
        prev_wm, prev_code = np.empty_like(wm), np.empty_like(code)
        prev_wm[order], prev_code[order] = before_wm, before_code
        changed = (wm != prev_wm) | (code != prev_code)
        aligned, prev_aligned = code & 1 == 1, prev_code & 1 == 1
        joined_or_left = changed & (aligned != prev_aligned)
        moved = changed & aligned & prev_aligned & (wm != prev_wm)
        steps = touched.astype(np.int64)
        result = {}
        if changed.any():
            at = np.flatnonzero(changed)
            result["channels"] = self._table(
                "channels",
                len(at),
                step=pa.array(steps[at]),
                input=inputs.take(pa.array(at)),
                channel=pa.array(channels[at], pa.int32()),
                watermark_ms=pa.array(wm[at]),
                status=pa.array(_STATUS_NAMES[code[at] >> 1], pa.string()),
                aligned=pa.array(aligned[at]),
            )
        heap = joined_or_left | moved
        if heap.any():
            at = np.flatnonzero(heap)
            events = np.where(moved[at], "move", np.where(aligned[at], "join", "leave")).astype(object)
            result["heap"] = self._table(
                "heap",
                len(at),
                step=pa.array(steps[at]),
                input=inputs.take(pa.array(at)),
                channel=pa.array(channels[at], pa.int32()),
                event=pa.array(events, pa.string()),
                watermark_ms=pa.array(wm[at]),
            )
        return result
