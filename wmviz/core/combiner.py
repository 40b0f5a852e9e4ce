"""The two-input combination, rule JW1 of docs/rules.md (Flink's combined watermark status).

Each logical input has its own valve; the operator's watermark is the minimum over the inputs that
are not idle, and the operator acts only when that minimum strictly increases. One input is the
degenerate case: the valve's output passes through unchanged.
"""

from __future__ import annotations

from wmviz.core.types import MAX_MS, MIN_MS, Emission, EmittedStatus, EmittedWatermark, Status


class InputCombiner:
    """Minimum over non-idle inputs; statuses combine as ACTIVE > IDLE > FINISHED."""

    def __init__(self, inputs: list[str], *, flush_when_all_idle: bool = False) -> None:
        self.watermark_ms = MIN_MS
        self.status = Status.ACTIVE
        self.flush_when_all_idle = flush_when_all_idle
        self.partial = {name: MIN_MS for name in inputs}
        self.partial_status = {name: Status.ACTIVE for name in inputs}

    def on_valve_emission(self, input_name: str, emission: Emission) -> list[Emission]:
        """Fold one valve emission in; return what the combined input emits (watermark first)."""
        if isinstance(emission, EmittedWatermark):
            # A watermark means the input is active again (Flink's partial watermark does the same),
            # except after FINISHED (flip-38477), which is terminal like the valve's FS3.
            if self.partial_status[input_name] is not Status.FINISHED:
                self.partial_status[input_name] = Status.ACTIVE
            self.partial[input_name] = max(self.partial[input_name], emission.watermark_ms)
            return self._recompute()
        self.partial_status[input_name] = emission.status
        before = self.status
        out = self._recompute()
        if self.status is not before:
            out.append(EmittedStatus(self.status))
        return out

    def snapshot(self) -> tuple:
        """Comparable state: combined watermark and status, and each input's partial view."""
        return (
            self.watermark_ms,
            self.status,
            tuple(self.partial.items()),
            tuple(self.partial_status.items()),
        )

    def _recompute(self) -> list[Emission]:
        statuses = self.partial_status.values()
        active = [self.partial[n] for n, s in self.partial_status.items() if s is Status.ACTIVE]
        self.status = Status.ACTIVE if active else Status.IDLE if Status.IDLE in statuses else Status.FINISHED
        if active:
            candidate = min(active)
        elif Status.IDLE in statuses and self.flush_when_all_idle:
            candidate = max(self.partial.values())  # FLINK-38454, unverified for two inputs
        elif Status.IDLE not in statuses and all(w == MAX_MS for w in self.partial.values()):
            candidate = MAX_MS  # all FINISHED at MAX: by analogy with the valve's CAND (docs/rules.md)
        else:
            return []
        if candidate > self.watermark_ms:
            self.watermark_ms = candidate
            return [EmittedWatermark(candidate)]
        return []
