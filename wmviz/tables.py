"""Pure pandas tables built from simulation results (no Streamlit here, so they are testable)."""

from __future__ import annotations

import pandas as pd

from wmviz.core.scenario import Trace
from wmviz.core.simulate import simulate
from wmviz.core.story import explain_line
from wmviz.core.types import Profile, format_emission, format_input, format_ms


def steps_table(trace: Trace, profile: Profile | None = None) -> pd.DataFrame:
    """One row per step: input, rules applied, emissions, the output afterwards, the narration."""
    rows = []
    for result in simulate(trace, profile, explain=True):
        acc = result.account
        rows.append(
            {
                "instance": result.instance,
                "step": result.step,
                "line": result.row.row,
                "input": format_input(acc.input) if acc else result.row.kind.value,
                "rules": " ".join(acc.rules) if acc else "",
                "emitted": ", ".join(format_emission(e) for e in result.emissions),
                "output watermark": format_ms(acc.last_watermark_after_ms) if acc else "",
                "output status": acc.last_status_after.value if acc else "",
                "what happened": explain_line(result),
            }
        )
    return pd.DataFrame(rows)
