"""What the page adds for an imported incident: the source subtasks' split stage, drawn above the
channels it feeds, and the replay check against the watermark the job itself reported.

`split_table` and `replay_check_text` are plain functions of the step's state (tested without a
browser); `split_stage` and `replay_check` draw them.
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import streamlit as st

from wmviz.core.pipeline import InstancePipeline, StepResult
from wmviz.core.splits import SplitReader, SplitState
from wmviz.record.agreement import reported_of
from wmviz.view.plain import literal
from wmviz.view.timefmt import TimeFormat

VISIBLE_SPLITS = 4
ROW_PX = 35  # Streamlit's dataframe row height
SPLIT_HELP = (
    "Each source subtask (a channel below) reads several splits, each with its own watermark "
    "generator. The subtask sends the minimum over its splits that are not idle, only when it rises "
    "above what it sent before; it goes idle when every split is idle. A split that resumes behind "
    "holds its subtask until it catches up."
)


def split_readers(pipeline: InstancePipeline) -> list[SplitReader]:
    """The channels of the instance that read splits, in channel order."""
    readers = [g for g in pipeline.generators.values() if isinstance(g, SplitReader)]
    return sorted(readers, key=lambda r: r.channel)


def split_table(pipeline: InstancePipeline, t: TimeFormat) -> pd.DataFrame | None:
    """One row per split: its subtask, watermark, status, maxSeen, and whether it holds the subtask."""
    readers = split_readers(pipeline)
    if not readers:
        return None
    rows = []
    for reader in readers:
        holder = reader.holder()
        # The split holding its subtask first: with many splits the table scrolls, and that row is
        # the one the step is about.
        states = sorted(reader.splits.values(), key=lambda s: s.split != holder)
        for state in states:
            holds = state.split == holder
            rows.append(
                {
                    "subtask": reader.channel,
                    "split": state.split,
                    "watermark": t(state.partial_ms),
                    "status": _split_status(reader, state),
                    "holds": f"holds subtask {reader.channel}" if holds else "",
                    "subtask sent": t(reader.sent_ms) + (" (IDLE)" if reader.idle else ""),
                    "max seen": t(state.generator.max_seen_ms) if state.generator.has_seen_records else "—",
                    "raw (ms)": str(state.partial_ms),
                }
            )
    return pd.DataFrame(rows)


def _split_status(reader: SplitReader, state: SplitState) -> str:
    """PAUSED (watermark alignment holds its records back) before IDLE or ACTIVE."""
    if state.paused or reader.paused:
        return "PAUSED"
    return "IDLE" if state.partial_idle else "ACTIVE"


def split_stage(pipeline: InstancePipeline, t: TimeFormat) -> None:
    """The split stage above the channel table, when the trace has split readers."""
    table = split_table(pipeline, replace(t, short=True))  # clock times, as the narration reads
    if table is None:
        return
    box = st.container(key="split_stage")
    box.markdown("**Source splits → channels**", help=SPLIT_HELP)
    styled = table.style.map(
        lambda v: "color: #b45309; font-weight: 600" if v in ("IDLE", "PAUSED") else "", subset=["status"]
    ).map(lambda v: "font-weight: 700" if v else "", subset=["holds"])
    # At most VISIBLE_SPLITS rows before the table scrolls, so the channels stay above the fold.
    height = ROW_PX * (min(len(table), VISIBLE_SPLITS) + 1) + 3
    box.dataframe(styled, hide_index=True, width="stretch", height=height, key="split_stage_table")


def replay_check_text(
    result: StepResult, pipeline: InstancePipeline, t: TimeFormat
) -> tuple[bool, str] | None:
    """(agrees, sentence) when the step's row carries the job's reported watermark."""
    reported = reported_of(result)
    if reported is None:
        return None
    replay = pipeline.output_watermark_ms
    if replay == reported:
        return True, f"The job reported {t(reported)} at this sample: the replay agrees."
    side = "ahead of" if replay > reported else "behind"
    return False, (
        f"The job reported {t(reported)} at this sample, the replay has {t(replay)}: the replay is "
        f"{side} the job (a watermark in flight, an inferred status off by a sample, or a channel "
        "mapping that does not match the job)."
    )


def inferred_text(result: StepResult) -> str | None:
    """The row's `inferred` column: a status the recorder inferred rather than read from Flink."""
    value = dict(result.row.payload).get("inferred")
    return f"This status is inferred, not reported by Flink ({value})." if value else None


def replay_check(result: StepResult, pipeline: InstancePipeline, t: TimeFormat) -> None:
    """Under the output, on the rows of a recorded or imported trace: whether the row's status was
    inferred, and the check against the watermark the job reported."""
    inferred = inferred_text(result)
    if inferred is not None:
        st.caption(literal(inferred))  # the column's value is the trace's text
    found = replay_check_text(result, pipeline, replace(t, short=True))  # as the narration reads
    if found is None:
        return
    agrees, text = found
    if agrees:
        st.success(text, icon=":material/check_circle:")
    else:
        st.warning(text, icon=":material/rule:")
