"""What `wmviz blame` answers: the chain of hops, why it ends there, and whether it is a stall.

`LAG_THRESHOLD_MS` is the line between a stall and a job that is merely not level
(docs/whole-job.md says why 10 s); under it the answer names the slowest path and says nothing is
stalled. The walk that fills these is `wmviz.analysis.blame.Walker`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from wmviz.core.errors import BadInputError
from wmviz.core.types import MAX_MS
from wmviz.view.timefmt import duration

LAG_THRESHOLD_MS = 10_000
"""How far behind the leading watermark (or how long standing still) a path must be to be a stall."""


@dataclass(frozen=True, slots=True)
class Hop:
    """One hop of the chain: this subtask is held by its `input` (None at a source), at
    `watermark_ms`, `behind_ms` behind the job's leading watermark, and held by it since
    `since_ms`; `held_by` says by what, in words."""

    vertex: str
    subtask: int
    input: int | None
    split: str | None
    watermark_ms: int
    behind_ms: int
    since_ms: int
    held_by: str = ""


@dataclass(frozen=True, slots=True)
class Blame:
    """The chain, root cause last, why it ends where it ends, and whether it is a stall."""

    at_ms: int
    chain: tuple[Hop, ...]
    ending: str
    stalled: bool = True
    lag_ms: int = 0
    """How far the first hop is behind the job's leading watermark."""
    first_ms: int | None = field(default=None)
    """The recording's first sample: a hop held `since` then was held at least that long."""

    def as_json(self) -> dict[str, object]:
        """The `--json` shape: {"chain": [hop, ...], "stalled", "lag_ms", "lag_threshold_ms", "ending"}."""
        return {
            "chain": [asdict(h) for h in self.chain],
            "stalled": self.stalled,
            "lag_ms": self.lag_ms,
            "lag_threshold_ms": LAG_THRESHOLD_MS,
            "ending": self.ending,
        }


class BlameError(BadInputError, ValueError):
    """The recording cannot answer (no samples, an unknown vertex, a time outside it)."""


def healthy_ending(hops: list[Hop], lag_ms: int) -> str:
    """The answer under the threshold: no stall, and the slowest path named end to end."""
    first, root = hops[0], hops[-1]
    where = f"{root.vertex!r} subtask {root.subtask}" + (f" split {root.split!r}" if root.split else "")
    path = f"{first.vertex!r} subtask {first.subtask}" + (f" back to {where}" if len(hops) > 1 else "")
    return (
        f"nothing is stalled; the slowest path is {path}, {duration(lag_ms)} behind the leading "
        f"watermark and moving (a stall is {duration(LAG_THRESHOLD_MS)} behind or standing still)"
    )


def gap(high: int | None, low: int) -> int:
    """high - low, saturated to a Java long (MIN_MS, 'no watermark yet', is far behind); 0 with
    no leading watermark (nothing live to be behind)."""
    return 0 if high is None else max(0, min(high - low, MAX_MS))
