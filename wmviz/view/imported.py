"""What the page adds for an imported incident, as plain values: the source subtasks' split stage
(the table above the channels it feeds), and the check of the replay against the watermark the job
itself reported. `wmviz.ui.import_views` draws them.
"""

from __future__ import annotations

import pandas as pd

from wmviz.core.pipeline import InstancePipeline
from wmviz.core.splits import SplitReader, SplitState
from wmviz.core.step_result import StepResult
from wmviz.trace.cellrules import reported_ms
from wmviz.view.timefmt import TimeFormat, raw


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
                    "raw (ms)": raw(state.partial_ms),
                }
            )
    table = pd.DataFrame(rows)
    # As the channel table: raw ms only when the times are not already shown raw, MIN and MAX by name.
    if (table["watermark"] == table["raw (ms)"]).all():
        table = table.drop(columns="raw (ms)")
    return table


def _split_status(reader: SplitReader, state: SplitState) -> str:
    """PAUSED (watermark alignment holds its records back) before IDLE or ACTIVE."""
    if state.paused or reader.paused:
        return "PAUSED"
    return "IDLE" if state.partial_idle else "ACTIVE"


def replay_check_text(
    result: StepResult, pipeline: InstancePipeline, t: TimeFormat
) -> tuple[bool, str] | None:
    """(agrees, sentence) when the step's row carries the job's reported watermark."""
    reported = reported_ms(result.row.payload)
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
