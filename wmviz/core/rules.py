"""The glossary of rules: every rule id the narration, the accounts and the rule methods name, once,
as data (id, what it means in one sentence, the method or class that implements it).

docs/rules.md explains each rule at length under the same id (tests/core/test_rules.py checks that both
hold the same ids, and that every id the narration can cite is here); the page shows the meaning of
each rule a step cites (`step_rules`) beside the narration, so a reader never has to leave it.

Ids are unique across the glossary: the two-input and interval-join watermark rules are JW1–JW4,
so they never read as the valve's W1…W5.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from wmviz.core.combiner import InputCombiner
from wmviz.core.interval_join import CachedRow, IntervalJoin
from wmviz.core.narrate import cited_rules
from wmviz.core.operator_log import JoinOutput
from wmviz.core.pipeline import InstancePipeline
from wmviz.core.sql_buffer_rules import BUFFER_RULES
from wmviz.core.sql_match_rules import SQL_MATCH_RULES
from wmviz.core.sql_rules import SQL_RULES
from wmviz.core.sql_session_rules import SQL_SESSION_RULES
from wmviz.core.sql_temporal_rules import SQL_TEMPORAL_RULES
from wmviz.core.sql_window_join_rules import SQL_WINDOW_JOIN_RULES
from wmviz.core.sql_window_rank_rules import SQL_WINDOW_RANK_RULES
from wmviz.core.sql_window_rules import SQL_WINDOW_RULES
from wmviz.core.valve import Valve

if TYPE_CHECKING:
    from wmviz.core.step_result import StepResult

VALVE = "valve"
FLIP_38477 = "valve, flip-38477 only"
TWO_INPUTS = "two-input operators"
JOIN = "interval join"


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule: its id as cited, which part of the model it belongs to, its meaning, its code."""

    id: str
    part: str
    meaning: str
    implemented_by: Callable[..., object]
    """A method, or a class where the rule is a piece of state (E1's flag, JW4's row time)."""

    @property
    def where(self) -> str:
        """`wmviz.core.valve.Valve.w1_dropped_while_idle`: the implementing method's full name."""
        code = self.implemented_by
        return f"{code.__module__}.{getattr(code, '__qualname__', '')}"


RULES: tuple[Rule, ...] = (
    # --- the valve: a watermark arrives on channel c --------------------------------------------------
    Rule(
        "W1",
        VALVE,
        "A watermark on an IDLE channel, or while the whole valve is IDLE, is thrown "
        "away: not stored, not counted.",
        Valve.w1_dropped_while_idle,
    ),
    Rule(
        "W2",
        VALVE,
        "A watermark that is not strictly above its channel's current one is thrown away (an equal one too).",
        Valve.w2_dropped_unless_above,
    ),
    Rule("W3", VALVE, "Otherwise the channel takes the new watermark.", Valve.input_watermark),
    Rule(
        "W4",
        VALVE,
        "An unaligned channel whose new watermark has reached the output watermark "
        "rejoins the aligned set; below it, it keeps the value but stays out.",
        Valve.w4_realign_if_caught_up,
    ),
    Rule("W5", VALVE, "Then EMIT-MIN: the output may rise to the new minimum.", Valve.input_watermark),
    # --- the valve: a status arrives on channel c -----------------------------------------------------
    Rule(
        "S0",
        VALVE,
        "A status equal to the channel's current one changes nothing and emits nothing.",
        Valve.input_status,
    ),
    Rule(
        "S1",
        VALVE,
        "ACTIVE → IDLE: the channel is marked IDLE and leaves the aligned set; S1a or S1b follows.",
        Valve.s1_active_to_idle,
    ),
    Rule(
        "S1a",
        VALVE,
        "It was the last ACTIVE channel: flush with EMIT-MAX (released Flink only if "
        "the channel held the output, flink-master always), then announce S:IDLE.",
        Valve.s1a_last_active_channel_idle,
    ),
    Rule(
        "S1b",
        VALVE,
        "Other channels are still ACTIVE: if the channel held the output, EMIT-MIN "
        "(the minimum may rise now that it left); otherwise the output cannot rise.",
        Valve.s1b_idle_while_others_active,
    ),
    Rule(
        "S2",
        VALVE,
        "IDLE → ACTIVE: the channel counts again, aligned at once only if its "
        "watermark is not below the output.",
        Valve.s2_idle_to_active,
    ),
    Rule(
        "S2a",
        VALVE,
        "If the valve itself was IDLE, it announces S:ACTIVE before any watermark.",
        Valve.s2a_valve_becomes_active,
    ),
    Rule(
        "S2b",
        VALVE,
        "flink-master only: a reactivated channel re-runs EMIT-MIN at once.",
        Valve.s2_idle_to_active,
    ),
    Rule(
        "EMIT-MIN",
        VALVE,
        "Emit the lowest watermark among the aligned channels, if it is above the last output.",
        Valve.emit_min,
    ),
    Rule(
        "EMIT-MAX",
        VALVE,
        "Emit the highest watermark over all channels (idle and unaligned too), if "
        "it is above the last output.",
        Valve.emit_max,
    ),
    Rule(
        "REPLAY-MAX",
        VALVE,
        "flink-1.x-2.x and flink-master have no FINISHED status: a FINISHED input "
        "is replayed exactly as a MAX watermark on its channel.",
        Valve.input_status,
    ),
    # --- the valve under flip-38477 (the proposed FINISHED status) ------------------------------------
    Rule(
        "CAND",
        FLIP_38477,
        "The candidate output: the aligned minimum while any channel is ACTIVE; "
        "else the highest non-FINISHED watermark while any is IDLE; else MAX once every channel is at "
        "MAX.",
        Valve.candidate_watermark,
    ),
    Rule("TRY-W", FLIP_38477, "Emit CAND if there is one and it is above the last output.", Valve.try_w),
    Rule(
        "TRY-S",
        FLIP_38477,
        "The valve is ACTIVE if any channel is, else IDLE if any is, else FINISHED; a change is announced.",
        Valve.try_s,
    ),
    Rule(
        "FW1",
        FLIP_38477,
        "A FINISHED channel accepts only a MAX watermark (then TRY-W); anything else is rejected.",
        Valve.fw1_watermark_on_finished_channel,
    ),
    Rule(
        "FW2",
        FLIP_38477,
        "A watermark on an ACTIVE channel follows W2–W4, then TRY-W (narrated as W3).",
        Valve.input_watermark,
    ),
    Rule(
        "FW3",
        FLIP_38477,
        "A watermark on an IDLE channel is dropped as by W1 (narrated as W1).",
        Valve.w1_dropped_while_idle,
    ),
    Rule(
        "FS1",
        FLIP_38477,
        "ACTIVE → IDLE or FINISHED: the channel leaves the aligned set and keeps "
        "its watermark; TRY-W if it held the output, then TRY-S.",
        Valve.fs1_leave_active,
    ),
    Rule(
        "FS2",
        FLIP_38477,
        "IDLE → ACTIVE (aligned if caught up) or IDLE → FINISHED (its watermark "
        "jumps to MAX); only TRY-S follows, no watermark is computed.",
        Valve.fs2_leave_idle,
    ),
    Rule(
        "FS3",
        FLIP_38477,
        "FINISHED is terminal: every later status on the channel is ignored.",
        Valve.input_status,
    ),
    # --- operators with two inputs --------------------------------------------------------------------
    Rule(
        "JW1",
        TWO_INPUTS,
        "Each input has its own valve; the operator's watermark is the minimum over "
        "the inputs that are not idle, and the operator acts only when it strictly rises.",
        InputCombiner.on_valve_emission,
    ),
    Rule(
        "JW2",
        TWO_INPUTS,
        "On a rise, the new watermark becomes the operator's time, every due "
        "event-time timer fires in order, then the output watermark follows.",
        InstancePipeline.advance_event_time,
    ),
    Rule(
        "JW3",
        JOIN,
        "The join's output watermark trails its input by max(−lower, upper) plus the allowed lateness.",
        IntervalJoin.output_watermark,
    ),
    Rule(
        "JW4",
        JOIN,
        "A changelog row carries the time of what produced it: the arriving row's time, "
        "or the firing timer's.",
        JoinOutput,
    ),
    # --- the interval join: a row arrives ---------------------------------------------------------------
    Rule(
        "A1",
        JOIN,
        "On arrival the operator's time is max(watermark, 0) (the clock on a "
        "processing-time join); no timer fires on an arrival.",
        IntervalJoin.operator_time_ms,
    ),
    Rule(
        "A2",
        JOIN,
        "A left row at tL and a right row at tR are partners when tL − tR lies in [lower, upper].",
        IntervalJoin.a4_probe,
    ),
    Rule(
        "A3",
        JOIN,
        "The other side's cache is searched only if its last expiration bound is below "
        "the row's own closing time; searching first moves that bound up.",
        IntervalJoin.a3_probe_needed,
    ),
    Rule(
        "A4",
        JOIN,
        "Search the other cache: join every partner (+I), and expire every bucket at or "
        "below the bound, padding an outer side's rows that never matched.",
        IntervalJoin.a4_probe,
    ),
    Rule(
        "A5",
        JOIN,
        "A row whose partners may still come is cached, and its side's cleanup timer is "
        "armed if none is pending.",
        IntervalJoin.a5_cache,
    ),
    Rule(
        "A6",
        JOIN,
        "An outer-side row too late to be cached that matched nothing is padded with nulls at once.",
        IntervalJoin.a6_pad_not_cached,
    ),
    # --- the interval join: a cleanup timer fires -------------------------------------------------------
    Rule(
        "C1",
        JOIN,
        "A cleanup uses the operator's time (the watermark that fired it), not the timer's own timestamp.",
        IntervalJoin.expiration_bound,
    ),
    Rule(
        "C2",
        JOIN,
        "The right cache is cleaned first, if the timer is its cleanup timer.",
        IntervalJoin.on_timer,
    ),
    Rule("C3", JOIN, "Then the left cache, if the timer is its cleanup timer.", IntervalJoin.on_timer),
    Rule(
        "C4",
        JOIN,
        "Cleaning drops every bucket at or below the bound (padding an outer side's "
        "unmatched rows), then re-arms the timer at the earliest remaining time, or forgets the side "
        "when none is above 0.",
        IntervalJoin.c4_expire,
    ),
    # --- the interval join: EARLY_FIRE (FLIP-497) -------------------------------------------------------
    Rule(
        "E0",
        JOIN,
        "Early fire is on only with the hint (a delay ≥ 0), an outer join and a window that is not negative.",
        IntervalJoin.e0_early_fire_enabled,
    ),
    Rule("E1", JOIN, "Each cached row of an outer side carries a fired flag, starting unfired.", CachedRow),
    Rule(
        "E2",
        JOIN,
        "An outer-side row that is cached and matched nothing on arrival registers an "
        "early-fire timer at its time + the delay.",
        IntervalJoin.a5_cache,
    ),
    Rule(
        "E3",
        JOIN,
        "Every timer callback fires early first: each outer row that is due, unmatched "
        "and unfired is padded (+I, speculative) and marked fired; cleanup follows.",
        IntervalJoin.e3_early_fire,
    ),
    Rule(
        "E4",
        JOIN,
        "A partner for a fired, unmatched row corrects it: -U of the speculative row, "
        "immediately followed by +U of the joined row.",
        IntervalJoin.e4_join_or_correct,
    ),
    Rule(
        "E5",
        JOIN,
        "A corrected row counts as matched: later partners give a plain +I, never a second retraction.",
        IntervalJoin.e4_join_or_correct,
    ),
    Rule(
        "E6",
        JOIN,
        "A row that matched before its early-fire time is left alone by its timer.",
        IntervalJoin.e3_early_fire,
    ),
    Rule(
        "E7",
        JOIN,
        "A row is padded at most once: if it fired and no partner ever comes, its speculative +I stands.",
        IntervalJoin.expire_bucket,
    ),
    Rule(
        "EARLY-PROC",
        JOIN,
        "time_mode proctime on a row-time join (inferred): each unmatched outer "
        "row is padded when the processing clock reaches its arrival clock + the delay, if still "
        "cached, unmatched and unfired; cleanup stays on event time.",
        IntervalJoin.e3_early_fire,
    ),
    *(Rule(*rule) for rule in SQL_RULES),
    *(Rule(*rule) for rule in SQL_SESSION_RULES),
    *(Rule(*rule) for rule in SQL_TEMPORAL_RULES),
    *(Rule(*rule) for rule in BUFFER_RULES),
    *(Rule(*rule) for rule in SQL_WINDOW_RULES),
    *(Rule(*rule) for rule in SQL_WINDOW_RANK_RULES),
    *(Rule(*rule) for rule in SQL_WINDOW_JOIN_RULES),
    *(Rule(*rule) for rule in SQL_MATCH_RULES),
)

GLOSSARY: dict[str, Rule] = {rule.id: rule for rule in RULES}


def rule_id(cited: str) -> str:
    """The glossary id of a cited rule name: `S1b` from `S1b (not the holder)`."""
    return cited.split(" ", 1)[0]


def rules_named(names: Iterable[str]) -> tuple[Rule, ...]:
    """The glossary entries of `names` (qualifiers dropped), each once, in first-cited order.

    Raises KeyError for a name the glossary lacks: every cited rule must be explained."""
    ids = dict.fromkeys(rule_id(name) for name in names)
    return tuple(GLOSSARY[i] for i in ids)


def step_rules(result: StepResult) -> tuple[Rule, ...]:
    """The rules the narration of one step can cite, each once, in order: what the page's legend
    explains beside that narration."""
    return rules_named(
        name for vs in result.valve_steps if vs.account is not None for name in cited_rules(vs.account)
    )
