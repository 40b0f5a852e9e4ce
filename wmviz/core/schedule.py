"""When periodic work falls due on the processing clock: the generators' probes and watermark
alignment's updates both run at every multiple of their interval from the first clock reading."""

from __future__ import annotations

from collections.abc import Iterable


def due_times(
    clock_start_ms: int, last_run_ms: int | None, interval_ms: int, now_ms: int, inclusive: bool
) -> range:
    """The run times due by `now_ms` (inclusive or not): interval, 2·interval, …, none before the
    first clock reading, each after the last run."""
    if last_run_ms is not None:
        first = last_run_ms + interval_ms
    else:
        first = max(interval_ms, -(-clock_start_ms // interval_ms) * interval_ms)
    last = now_ms if inclusive else now_ms - 1
    return range(first, last + 1, interval_ms)


def ends_of(due: range) -> list[int]:
    """The first two and the last of a long run of due times."""
    return sorted({due[0], due[1] if len(due) > 1 else due[0], due[-1]})


def relevant_probes(
    due: range, timeout_ms: int | None, countdowns: Iterable[tuple[int | None, bool]]
) -> list[int]:
    """A long quiet gap: the first two probes (reset, start countdown), each expiry, the last.

    Between them nothing can change: no record arrives during one clock jump, so the periodic
    candidate is constant and only the idleness countdowns move.
    """
    first, last, interval = due[0], due[-1], due.step
    times = set(ends_of(due))
    if timeout_ms is None:
        return sorted(times)
    for countdown_start, unseen in countdowns:
        # The countdown starts at the first quiet probe: `first`, or the next one if the first
        # still sees activity. An extra quiet probe changes nothing: take both.
        starts = (
            [countdown_start] if countdown_start is not None and not unseen else [first, first + interval]
        )
        for start in starts:
            expiry = start + timeout_ms + 1
            expiry += (-(expiry - first)) % interval
            if first <= expiry <= last:
                times.add(expiry)
    return sorted(times)
