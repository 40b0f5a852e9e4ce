"""Differential test: wmviz's Valve (profile flink-1.x-2.x) against the REAL Flink 2.3.0 valve.

Thousands of seeded random traces, plus every case of tests/data/conformance/valve_cases.json, are fed in
one JVM run to `org.apache.flink.streaming.runtime.watermarkstatus.StatusWatermarkValve` from the
flink-dist jar (see tools/flink/valve) and, step by step, to `Valve(n, Profile.FLINK_1X_2X)`.
After every input the emissions (in order), every channel's (watermark, status, aligned) and the
valve's last output watermark and status must be identical.

Real Flink has no FINISHED status; a `FINISHED@c` input is sent to the JVM as a MAX watermark on
c, which is exactly how the flink-1.x-2.x profile replays it (REPLAY-MAX in docs/rules.md).

Without Java or the jar the tests skip, unless `CI` is set: then they fail, because CI must really
run them (and CI may fetch the jar: downloading is allowed when `CI` or `WMVIZ_FLINK_DOWNLOAD=1`
is set).
"""

from __future__ import annotations

import functools
import random
from collections import Counter
from dataclasses import dataclass

import pytest

from tests.conftest import case_id, check_value, require_flink, valve_cases
from tools.flink.valve.jar import (
    FLINK_VERSION,
    JvmStep,
    flink_jar_path,
    run_harness,
)
from wmviz.core.types import (
    MAX_MS,
    MIN_MS,
    ChannelState,
    Emission,
    Profile,
    Status,
    StatusInput,
    ValveInput,
    WatermarkInput,
    format_emission,
    format_input,
    format_ms,
    parse_input,
)
from wmviz.core.valve import Outcome, Valve

pytestmark = pytest.mark.flink

PROFILE = Profile.FLINK_1X_2X
N_TRACES = 2400
"""General random traces; seeds SEED_BASE + 0..N_TRACES-1, so every run checks the same corpus."""
N_GAP_TRACES = 300
"""Extra churn traces on which the flink-1.x-2.x and flink-master profiles disagree (see gap_traces)."""
SEED_BASE = 20_230_000
GAP_SEED_BASE = 40_750_000

IDLE, ACTIVE, FINISHED = Status.IDLE, Status.ACTIVE, Status.FINISHED
STYLES = ("small", "rising", "extreme", "status", "churn")

# Values where off-by-one and overflow bugs live, and the sentinels the valve treats specially.
EXTREMES = (MIN_MS, MIN_MS + 1, MIN_MS + 2, -(2**40), -1000, -1, 0, 1, 2**40, MAX_MS - 2, MAX_MS - 1, MAX_MS)


# ---- the random corpus ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Trace:
    """One input sequence for a fresh valve, and where it came from (for failure messages)."""

    label: str
    channels: int
    inputs: tuple[ValveInput, ...]


class _Walk:
    """Per-trace generator state: a clock, per-channel values and lags, the statuses sent so far."""

    def __init__(self, rng: random.Random, channels: int) -> None:
        self.rng = rng
        self.now = rng.randint(-50, 50)
        self.value = [self.now] * channels
        self.lag = [rng.randint(0, 30) for _ in range(channels)]
        self.status = [ACTIVE] * channels

    def watermark(self, style: str, channel: int) -> int:
        """A watermark for `channel` in the trace's style; sometimes MIN or MAX in any style."""
        rng = self.rng
        r = rng.random()
        if r < 0.03:
            return MIN_MS
        if r < 0.06:
            return MAX_MS
        if style == "extreme":
            nudged = rng.choice(EXTREMES) + rng.choice((0, 0, 0, -1, 1)) * (r < 0.5)
            return min(max(nudged, MIN_MS), MAX_MS)  # stay a Java long
        if style == "rising":
            # Mostly rising with jitter, but also equal (delta 0), falling, and copies of another
            # channel's value: ties with the output watermark are what S1's `wm == lastWm` tests.
            if rng.random() < 0.15:
                self.value[channel] = rng.choice(self.value)
            else:
                self.value[channel] += rng.choice((0, 1, 2, 3, 5, 8, 13, 30, -1, -4, -20))
            return self.value[channel]
        if style == "churn":
            # One clock for all; each channel trails it by its own lag plus jitter, so a channel
            # that was idle for a while comes back behind the output and catches up gradually.
            self.now += rng.randint(0, 5)
            return self.now - self.lag[channel] - rng.randint(0, 5)
        # small / status: a narrow range (negatives included) so equal values keep colliding.
        return rng.randint(-4, 12)

    def status_input(self, style: str, channel: int) -> StatusInput:
        """IDLE or ACTIVE: drawn at random (so often repeated), or for churn mostly a real toggle."""
        rng = self.rng
        if style == "churn" and rng.random() >= 0.15:
            status = IDLE if self.status[channel] is ACTIVE else ACTIVE
        else:
            status = rng.choice((IDLE, ACTIVE))
        self.status[channel] = status
        return StatusInput(channel, status)


def random_trace(seed: int, style: str | None = None, label: str = "random") -> Trace:
    """A deterministic random trace: 1–8 channels, 1–60 inputs, one of five styles.

    Covers rising, equal, falling, MIN, MAX and negative watermarks, IDLE/ACTIVE toggles
    (repeated statuses included) and FINISHED (some traces only).
    """
    rng = random.Random(seed)
    style = style or rng.choice(STYLES)
    # churn wants 3–5 channels: the released valve's order-dependent flush (S1a) needs
    # one channel idle above the output while another comes back behind it and goes idle last.
    channels = rng.randint(3, 5) if style == "churn" else rng.randint(1, 8)
    length = rng.randint(10, 60) if style == "churn" else rng.randint(1, 60)
    p_status = {"small": 0.25, "rising": 0.15, "extreme": 0.2, "status": 0.5, "churn": 0.5}[style]
    p_finished = rng.choice((0.0, 0.0, 0.02, 0.06))
    walk = _Walk(rng, channels)
    inputs: list[ValveInput] = []
    for _ in range(length):
        c = rng.randrange(channels)
        r = rng.random()
        if r < p_finished:
            inputs.append(StatusInput(c, FINISHED))
        elif r < p_finished + p_status:
            inputs.append(walk.status_input(style, c))
        else:
            inputs.append(WatermarkInput(c, walk.watermark(style, c)))
    return Trace(f"{label} seed {seed} ({style})", channels, tuple(inputs))


def _profiles_disagree(trace: Trace) -> bool:
    released, master = Valve(trace.channels, Profile.FLINK_1X_2X), Valve(trace.channels, Profile.FLINK_MASTER)
    return any(released.apply(inp) != master.apply(inp) for inp in trace.inputs)


def gap_traces() -> list[Trace]:
    """The first N_GAP_TRACES churn traces on which the flink-1.x-2.x and flink-master rules differ.

    Those are the traces where the released valve's conditional flush and missing re-derive on
    reactivation matter (S1a, S2b); only a few percent of random traces reach them, and they
    are exactly where a reimplementation is most likely to be subtly wrong. Real Flink, not the
    Python model, decides the expected result, so selecting them with the model biases nothing.
    """
    out: list[Trace] = []
    seed = GAP_SEED_BASE
    while len(out) < N_GAP_TRACES:
        trace = random_trace(seed, style="churn", label="gap")
        if _profiles_disagree(trace):
            out.append(trace)
        seed += 1
    return out


@functools.cache
def random_corpus() -> tuple[Trace, ...]:
    """The whole random corpus: N_TRACES general traces, then the gap traces."""
    return tuple(random_trace(SEED_BASE + seed) for seed in range(N_TRACES)) + tuple(gap_traces())


def conformance_traces() -> list[tuple[dict, Trace, list[int]]]:
    """Each conformance case as one trace (error steps left out), with each step's input count."""
    out = []
    for case in valve_cases():
        inputs: list[ValveInput] = []
        sizes = []
        for step in case["steps"]:
            if "error" in step:
                sizes.append(0)
                continue
            parsed = [parse_input(token) for token in step["in"]]
            inputs.extend(parsed)
            sizes.append(len(parsed))
        out.append((case, Trace(f"conformance {case_id(case)}", case["channels"], tuple(inputs)), sizes))
    return out


# ---- the JVM run (one for the whole module) ------------------------------------------------------


@dataclass(frozen=True)
class JvmRun:
    """Every trace sent to the real valve in the single JVM run, and its per-step results."""

    random: list[tuple[Trace, list[JvmStep]]]
    conformance: list[tuple[dict, Trace, list[int], list[JvmStep]]]


@pytest.fixture(scope="module")
def jvm_run() -> JvmRun:
    """Run the real valve once over the random corpus and the conformance cases.

    Skips when Java or the jar is missing, but fails under CI (set `CI`), which must run it.
    """
    require_flink("real Flink {version} valve", "the Flink differential test")
    randoms = random_corpus()
    conformance = conformance_traces()
    traces = [(t.channels, t.inputs) for t in randoms] + [(t.channels, t.inputs) for _, t, _ in conformance]
    results = run_harness(traces, jar=flink_jar_path())
    return JvmRun(
        random=list(zip(randoms, results[: len(randoms)], strict=True)),
        conformance=[
            (case, trace, sizes, steps)
            for (case, trace, sizes), steps in zip(conformance, results[len(randoms) :], strict=True)
        ],
    )


# ---- comparison and messages ---------------------------------------------------------------------


def _fmt_emissions(emissions: tuple[Emission, ...] | list[Emission]) -> str:
    return "[" + ", ".join(format_emission(e) for e in emissions) + "]" if emissions else "∅"


def _fmt_state(last_wm: int, last_status: Status, channels: tuple[ChannelState, ...]) -> str:
    chans = " ".join(
        f"ch{c.channel}={format_ms(c.watermark_ms)}/{c.status.value}/{'' if c.aligned else 'un'}aligned"
        for c in channels
    )
    return f"out={format_ms(last_wm)}/{last_status.value} {chans}"


def first_mismatch(trace: Trace, jvm_steps: list[JvmStep]) -> tuple[int, str] | None:
    """Replay `trace` on the Python valve against the JVM's steps.

    Returns the 0-based index of the first differing step and a description of it, or None.
    """
    assert len(jvm_steps) == len(trace.inputs)
    valve = Valve(trace.channels, PROFILE)
    for i, (inp, jvm) in enumerate(zip(trace.inputs, jvm_steps, strict=True)):
        try:
            emissions = valve.apply(inp)
        except Exception as e:  # a crash is a difference too, and deserves the same trace report
            emissions, python_error = [], f"the Python valve raised {e!r}"
        else:
            python_error = None
        state = valve.state()
        if python_error is not None:
            what = python_error
        elif jvm.error is not None:
            what = f"the real valve threw {jvm.error}"
        elif tuple(emissions) != jvm.emissions:
            what = "emissions differ"
        elif state.channels != jvm.channels:
            what = "channel state differs"
        elif (state.last_watermark_ms, state.last_status) != (jvm.last_watermark_ms, jvm.last_status):
            what = "last output watermark/status differs"
        else:
            continue
        prefix = trace.inputs[: i + 1]
        lines = [
            f"{trace.label}: Valve({trace.channels}, {PROFILE.value}) differs from Flink {FLINK_VERSION} "
            f"at step {i + 1}: {what}",
            "trace prefix up to the failing step (FINISHED@c is sent to Flink as WMAX@c):",
            "  " + ", ".join(format_input(x) for x in prefix),
            f"python emitted: {_fmt_emissions(emissions)}",
            f"flink  emitted: {_fmt_emissions(jvm.emissions)}",
            f"python state:   {_fmt_state(state.last_watermark_ms, state.last_status, state.channels)}",
            f"flink  state:   {_fmt_state(jvm.last_watermark_ms, jvm.last_status, jvm.channels)}",
        ]
        return i, "\n".join(lines)
    return None


SHRINK_ROUNDS = 8
"""JVM runs spent at most on shrinking a failure (only ever spent when the test fails)."""


def shrink(trace: Trace) -> Trace:
    """A shorter trace that still differs from real Flink, by deleting chunks of inputs.

    Each round builds every trace with one chunk (halves, quarters, … single inputs) removed,
    runs them all in one JVM, and keeps the shortest failing prefix; it stops when nothing
    smaller fails or the budget is spent. The result is usually 1-minimal: no single input
    can be dropped.
    """
    current = trace.inputs
    for _ in range(SHRINK_ROUNDS):
        n = len(current)
        candidates: dict[tuple[ValveInput, ...], None] = {}  # ordered and deduplicated
        size = max(n // 2, 1)
        while True:
            for start in range(0, n, size):
                candidates[current[:start] + current[start + size :]] = None
            if size == 1:
                break
            size //= 2
        candidates.pop((), None)
        tried = [Trace(trace.label, trace.channels, c) for c in candidates]
        results = run_harness([(t.channels, t.inputs) for t in tried])
        failing = [(m[0], t) for t, r in zip(tried, results, strict=True) if (m := first_mismatch(t, r))]
        if not failing:
            break
        step, best = min(failing, key=lambda f: f[0])
        current = best.inputs[: step + 1]
    return Trace(f"{trace.label}, shrunk", trace.channels, current)


# ---- tests ---------------------------------------------------------------------------------------


def test_random_traces_match_real_flink(jvm_run: JvmRun) -> None:
    """Every step of every random trace: same emissions, same channel state, same output state."""
    failures = [(m[0], m[1], t) for t, steps in jvm_run.random if (m := first_mismatch(t, steps))]
    if failures:
        # Report the failure with the shortest prefix, then a shrunk version of it: both are far
        # easier to reason about than a 60-input trace over eight channels.
        step, message, trace = min(failures, key=lambda f: f[0])
        small = shrink(Trace(trace.label, trace.channels, trace.inputs[: step + 1]))
        shrunk = first_mismatch(small, run_harness([(small.channels, small.inputs)])[0])
        assert shrunk is not None
        pytest.fail(
            f"{len(failures)} of {len(jvm_run.random)} random traces differ from real Flink; "
            f"the earliest failing step:\n{message}\n\nshrunk to {len(small.inputs)} input(s):\n{shrunk[1]}",
            pytrace=False,
        )


def test_conformance_inputs_match_real_flink_step_by_step(jvm_run: JvmRun) -> None:
    """The conformance cases' inputs too, compared on full state after every single input."""
    for _case, trace, _sizes, steps in jvm_run.conformance:
        mismatch = first_mismatch(trace, steps)
        assert mismatch is None, mismatch[1]


def _jvm_check(step: JvmStep, key: str) -> object:
    if key == "last_wm":
        return step.last_watermark_ms
    if key == "last_status":
        return step.last_status
    channel_text, field = key.split(".")
    ch = step.channels[int(channel_text.removeprefix("ch"))]
    return {"wm": ch.watermark_ms, "status": ch.status, "aligned": ch.aligned}[field]


def test_harness_reproduces_the_conformance_file(jvm_run: JvmRun) -> None:
    """Validates the harness itself: the real valve gives every recorded flink-1.x-2.x output and check.

    The conformance data was recorded on the real 2.3.0 valve, so a failure here means the harness
    (protocol, reflection, FINISHED mapping) is broken, not wmviz.
    """
    problems = []
    n_steps = n_checks = 0
    for case, _trace, sizes, steps in jvm_run.conformance:
        checked = PROFILE.value in case.get("check_profiles", [PROFILE.value])
        pos = 0
        for k, (step, size) in enumerate(zip(case["steps"], sizes, strict=True)):
            if "error" in step:
                continue
            here = steps[pos : pos + size]
            pos += size
            n_steps += 1
            if errors := [s.error for s in here if s.error]:
                problems.append(f"{case_id(case)} step {k + 1}: the real valve threw {errors[0]}")
                continue
            got = [format_emission(e) for s in here for e in s.emissions]
            want = step["out"][PROFILE.value]
            if got != want:
                problems.append(
                    f"{case_id(case)} step {k + 1} {step['in']}: flink emitted {got}, file says {want}"
                )
            if checked:
                for key, raw in step.get("check", {}).items():
                    n_checks += 1
                    if (actual := _jvm_check(here[-1], key)) != (expected := check_value(raw)):
                        problems.append(
                            f"{case_id(case)} step {k + 1}: {key} is {actual!r}, file says {expected!r}"
                        )
    assert not problems, "\n".join(problems)
    # Guard against a silently empty comparison (e.g. a changed file layout).
    assert n_steps >= 200 and n_checks >= 150, (n_steps, n_checks)


def test_random_corpus_reaches_every_released_rule() -> None:
    """The corpus is only as good as what it exercises: every flink-1.x-2.x branch, many times over.

    Needs no JVM, so it also guards the generator where the real valve cannot run.
    """
    outcomes: Counter[Outcome] = Counter()
    features: Counter[str] = Counter()
    for trace in random_corpus():
        valve = Valve(trace.channels, PROFILE)
        for inp in trace.inputs:
            before = valve.state()
            outcomes[valve.process(inp, [])] += 1
            if isinstance(inp, StatusInput):
                features[f"status {inp.status.value}"] += 1
                continue
            w = inp.watermark_ms
            features[
                "MIN" if w == MIN_MS else "MAX" if w == MAX_MS else "negative" if w < 0 else "other"
            ] += 1
            own = before.channels[inp.channel].watermark_ms
            features["equal" if w == own else "falling" if w < own else "rising"] += 1
            if before.channels[inp.channel].status is ACTIVE and not before.channels[inp.channel].aligned:
                features["on an unaligned channel"] += 1
    released = [
        Outcome.W1_DROPPED_IDLE,
        Outcome.W2_DROPPED_NOT_ABOVE,
        Outcome.W3_TO_W5_ACCEPTED,
        Outcome.S0_REPEATED_STATUS,
        Outcome.S1A_LAST_ACTIVE_IDLE_FLUSH,
        Outcome.S1A_LAST_ACTIVE_IDLE_NO_FLUSH,
        Outcome.S1B_MIN_HOLDER_IDLE,
        Outcome.S1B_NON_HOLDER_IDLE,
        Outcome.S2_REACTIVATED,
    ]
    rare = {o.name: outcomes[o] for o in released if outcomes[o] < 50}
    assert not rare, f"rules hit fewer than 50 times: {rare}"
    wanted = ["MIN", "MAX", "negative", "equal", "falling", "rising", "on an unaligned channel"]
    wanted += ["status IDLE", "status ACTIVE", "status FINISHED"]
    thin = {f: features[f] for f in wanted if features[f] < 50}
    assert not thin, f"input kinds seen fewer than 50 times: {thin}"
    assert len(random_corpus()) >= 2000 and sum(len(t.inputs) for t in random_corpus()) >= 50_000
