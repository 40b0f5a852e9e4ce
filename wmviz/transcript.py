"""The machine-readable transcript of trace-format.md §4: one JSON object per input element."""

from __future__ import annotations

import json
from typing import Any

from wmviz.core.simulate import StepResult
from wmviz.core.types import Emission, EmittedWatermark


def emission_json(em: Emission) -> dict[str, Any]:
    """`{"wm": N}` (MIN/MAX as plain integers) or `{"status": "IDLE"}`."""
    if isinstance(em, EmittedWatermark):
        return {"wm": em.watermark_ms}
    return {"status": em.status.value}


def transcript_record(result: StepResult, *, with_input: bool = False) -> dict[str, Any]:
    """The transcript object of one step. `input` is added only for multi-input traces."""
    record: dict[str, Any] = {"step": result.step, "instance": result.instance}
    if with_input:
        record["input"] = result.row.input
    record["out"] = [emission_json(e) for e in result.emissions]
    return record


def transcript_line(result: StepResult, *, with_input: bool = False) -> str:
    """One transcript line, formatted like the spec's examples."""
    return json.dumps(transcript_record(result, with_input=with_input))
