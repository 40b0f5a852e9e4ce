"""The pattern matcher behind MATCH_RECOGNIZE, as Flink 2.3.0's CEP library runs a SQL pattern
(`NFA`, fed by `CepOperator`; docs/rules.md, SQL-MR4 … SQL-MR7).

The modelled patterns are a concatenation of variables, each with a quantifier (none, `+`, `*`,
`?`, `{n}`, `{n,m}`, `{n,}`), in strict contiguity: a match is a run of consecutive rows of one
partition, in the order they reach the matcher. The planner makes every quantifier but `?` and
`{n}` greedy: while a loop can still take a row that satisfies its condition, no later variable
may take that row.

The matcher keeps partial matches, each knowing the row it started at. Every row reaching the
matcher may start a new one (the start state never ends) and moves every partial match along
each way the pattern allows; a way no row can continue ends. A partial match that reaches the end
of the pattern is complete, but it is emitted only once no partial match that started earlier is
still alive (Flink keeps completed matches in a queue ordered by their first row); emitting it
discards, by the skip strategy, every partial and completed match starting at or before the
match's last row (SKIP PAST LAST ROW) or its first row (SKIP TO NEXT ROW). A `WITHIN` bound ends
a partial match once time reaches its first row's time + the bound.

The conditions themselves are not computed here: `Judge` (given by the caller) says whether a row
satisfies a variable's DEFINE, seeing the partial match it would extend.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

R = TypeVar("R")

Skip = Literal["past_last_row", "to_next_row"]


@dataclass(frozen=True, slots=True)
class Variable:
    """One pattern variable and its quantifier: at least `low`, at most `high` rows (None: no
    bound); `greedy` as the planner sets it (every quantifier but `?` and `{n}`)."""

    name: str
    low: int = 1
    high: int | None = 1
    greedy: bool = False


@dataclass(frozen=True, slots=True)
class Seq:
    """A row's place in the order it reached the matcher: its time, then its arrival among rows of
    that time (Flink's `EventId`)."""

    ts_ms: int
    index: int


@dataclass(frozen=True, slots=True)
class Partial(Generic[R]):
    """A partial (or, with `done`, complete) match: the rows taken, each with its variable, and
    how many rows the last variable holds so far."""

    taken: tuple[tuple[str, Seq, R], ...]
    at: int
    """The index of the variable that took the last row."""
    count: int

    @property
    def start(self) -> Seq:
        return self.taken[0][1]

    @property
    def last(self) -> Seq:
        return self.taken[-1][1]

    def rows_of(self, variable: str) -> list[R]:
        return [row for name, _, row in self.taken if name == variable]


Judge = Callable[[str, "Partial[R] | None", R], bool]
"""(variable, the partial match the row would extend (None: a new one), row) -> whether the row
satisfies the variable's DEFINE (a NULL condition does not)."""


class Matcher(Generic[R]):
    """One partition's matcher: its partial matches and its completed matches waiting to leave."""

    def __init__(self, pattern: Sequence[Variable], skip: Skip, within_ms: int | None, judge: Judge) -> None:
        self.pattern = tuple(pattern)
        self.skip = skip
        self.within_ms = within_ms
        self.judge = judge
        self.partials: list[Partial[R]] = []
        self.completed: list[Partial[R]] = []
        self.seen: dict[int, int] = {}
        """Rows taken per timestamp so far (the next row of a time gets the next index)."""
        self.started = False
        """Whether the last row started a partial match (CepOperator then registers a WITHIN timer)."""

    # --- rules ---------------------------------------------------------------------------------

    def mr4_advance_time(self, time_ms: int) -> list[Partial[R]]:
        """SQL-MR4: a partial match whose first row is `within` or more before `time_ms` has timed
        out and is discarded (SQL emits nothing for it); completed matches it held back may then
        leave. Returns the discarded ones."""
        if self.within_ms is None:
            return []
        window = self.within_ms
        out = [p for p in self.partials if time_ms - p.start.ts_ms >= window]
        self.partials = [p for p in self.partials if time_ms - p.start.ts_ms < window]
        return out

    def mr5_steps(self, partial: Partial[R] | None, seq: Seq, row: R) -> list[Partial[R]]:
        """SQL-MR5: the ways one row extends a partial match (None: starts a new one) in strict
        contiguity: its own variable takes it again while the quantifier allows; or, once the
        variable holds its minimum, the next variable takes it, skipping optional ones (min 0). A
        greedy variable that could still take the row keeps every later variable from taking it."""
        out: list[Partial[R]] = []
        at = -1 if partial is None else partial.at
        count = 0 if partial is None else partial.count
        blocked = False
        if partial is not None:
            current = self.pattern[at]
            can_loop = current.high is None or count < current.high
            if can_loop and self.judge(current.name, partial, row):
                out.append(self._take(partial, at, count + 1, seq, row))
                blocked = current.greedy
            if count < current.low:
                return out
        for j in range(at + 1, len(self.pattern)):
            variable = self.pattern[j]
            if blocked:
                break
            if self.judge(variable.name, partial, row):
                out.append(self._take(partial, j, 1, seq, row))
                blocked = variable.greedy and variable.low == 0
            if variable.low > 0:
                break
        return out

    def mr6_complete(self, partial: Partial[R]) -> bool:
        """SQL-MR6: a match is complete when every variable after the one that took its last row
        may be empty and that variable holds its minimum."""
        variable = self.pattern[partial.at]
        return partial.count >= variable.low and all(v.low == 0 for v in self.pattern[partial.at + 1 :])

    def mr7_release(self) -> list[Partial[R]]:
        """SQL-MR7: completed matches leave in the order of their first row, each only once no
        live partial match started before it; each one leaving discards, by the skip strategy,
        every partial or completed match that started at or before its last row (SKIP PAST LAST
        ROW) or its first row (SKIP TO NEXT ROW)."""
        out: list[Partial[R]] = []
        while self.completed:
            earliest = min(self.completed, key=_start_key)
            if any(_start_key(p) < _start_key(earliest) for p in self.partials):
                break
            self.completed.remove(earliest)
            out.append(earliest)
            bound = earliest.last if self.skip == "past_last_row" else earliest.start
            self.partials = [p for p in self.partials if _start_key(p) > (bound.ts_ms, bound.index)]
            self.completed = [p for p in self.completed if _start_key(p) > (bound.ts_ms, bound.index)]
        return out

    # --- feeding -------------------------------------------------------------------------------

    def feed(self, ts_ms: int, row: R) -> list[Partial[R]]:
        """One row (in time order): every partial match moved along, new matches released."""
        seq = Seq(ts_ms, self.seen.get(ts_ms, 0))
        self.seen[ts_ms] = seq.index + 1
        moved: list[Partial[R]] = []
        for partial in [*self.partials, None]:
            moved.extend(self.mr5_steps(partial, seq, row))
        self.started = any(len(p.taken) == 1 for p in moved)
        self.partials = []
        for step in moved:
            if self.mr6_complete(step):
                self.completed.append(step)
            if not self._finished(step):
                self.partials.append(step)
        return self.mr7_release()

    def held(self) -> int:
        """The rows the partial matches hold (a row taken by several counts in each): what a row
        reaching the pattern visits."""
        return sum(len(p.taken) for p in self.partials)

    def _finished(self, partial: Partial[R]) -> bool:
        """A complete match no variable can extend any further is no longer partial."""
        if partial.at < len(self.pattern) - 1:
            return False
        last = self.pattern[-1]
        return last.high is not None and partial.count >= last.high

    def _take(self, partial: Partial[R] | None, at: int, count: int, seq: Seq, row: R) -> Partial[R]:
        taken = () if partial is None else partial.taken
        return Partial((*taken, (self.pattern[at].name, seq, row)), at, count)

    def __getstate__(self) -> dict[str, object]:
        """Everything but the judge, which is code (a keyframe holds data; the operator gives the
        judge back, `SqlMatch.__setstate__`)."""
        return {k: v for k, v in vars(self).items() if k != "judge"}

    def __setstate__(self, state: dict[str, object]) -> None:
        vars(self).update(state)

    def snapshot(self) -> tuple[object, ...]:
        def shown(p: Partial[R]) -> tuple[object, ...]:
            return (tuple((n, s.ts_ms, s.index) for n, s, _ in p.taken), p.at, p.count)

        return (tuple(shown(p) for p in self.partials), tuple(shown(p) for p in self.completed))


def _start_key(partial: Partial[R]) -> tuple[int, int]:
    return (partial.start.ts_ms, partial.start.index)
