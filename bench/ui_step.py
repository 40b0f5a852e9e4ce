"""Server time of one step in the app (issue 5's ≤ 150 ms target; issue 23's ≤ 40 ms p50).

    python bench/ui_step.py                  # 1,000,000 steps, one instance x 8 channels
    python bench/ui_step.py --rows 100000
    python bench/ui_step.py --viewers        # two sessions on the same steps: first and second viewer
    python bench/ui_step.py --viewers --profile 25        # and where the first viewer's time goes
    python bench/ui_step.py --viewers --baseline DIR --rounds 3   # against another checkout, interleaved

Builds the trace and its timeline once (local engine, cached under --work), then drives the real
app with Streamlit's AppTest: each measured step is one script run after a key-press equivalent
(Forward, Back, a jump to the next output-watermark change, or a slider drag to a random step,
which forces a rebuild from a keyframe). Two times per step: "run" is AppTest's whole script run
(AppTest reruns the sidebar too), "server step" is the step's fragment alone (`step_area_body`),
which is what the server runs when a person presses a step key in the browser: callbacks apart,
the state rebuild, tables, figures and their serialization; the browser's drawing is not included.

`--viewers` opens two sessions (A and B) on each incident (the built-in ones with an operator,
and the benchmark trace), and steps them forward together: A reaches each step first, then B
(the second person on the same link). `--baseline DIR` runs the same measurement for the app in
DIR (a checkout of another commit) in a separate process, alternating with this one, round by
round, and prints both with the load average around each round.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("WMVIZ_SPARK_START", "lazy")  # measure the page, not a JVM starting beside it

STORY = """## What users saw
A benchmark trace: {rows:,} steps on one instance with 8 channels.

## What the valve did
Mostly rising watermarks, 3 % status changes, 5 % records.

## The fix
Nothing to fix: this measures the debugger.
"""

# Built-in incidents whose steps draw every panel: a window operator (timers, firings, drops), an
# interval join (the changelog), two inputs, split readers.
VIEWER_INCIDENTS = (
    "late-data-allowed-lateness",
    "early-fire-left-join",
    "flink-38477-zero-output",
    "silent-split-window-never-fires",
)
STEP_FRAGMENT = "step_area_body"


def prepare(work: Path, rows: int) -> Path:
    """A samples directory holding the benchmark trace, its config and a story, beside links to
    the built-in incidents `--viewers` steps through."""
    import pyarrow.parquet as pq

    from bench.gen_trace import generate_table

    samples = work / f"ui-samples-{rows}"
    trace = samples / f"bench-{rows}.parquet"
    if not trace.is_file():
        samples.mkdir(parents=True, exist_ok=True)
        pq.write_table(generate_table(rows, 1, 8, seed=7), trace)
        trace.with_suffix(".json").write_text(
            f'{{"name": "Benchmark: {rows:,} steps", "channels": {{"0": 8}}}}\n'
        )
        trace.with_suffix(".md").write_text(STORY.format(rows=rows))
    for slug in VIEWER_INCIDENTS:
        for found in (ROOT / "sample_data").glob(f"{slug}.*"):
            link = samples / found.name
            if not link.exists():
                link.symlink_to(found)
    return samples


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class StepTimer:
    """Times every run of the page's step fragment (and profiles them when asked): installed as
    `st.fragment` before the page first runs, it wraps the one function the page makes a fragment
    of for its step."""

    def __init__(self, profile: bool) -> None:
        import streamlit

        self.last: float | None = None
        self.profiler = None
        if profile:
            import cProfile

            self.profiler = cProfile.Profile()
        self.profiling = False
        self.profiled_ms = 0.0  # the server steps' time while profiled
        original = streamlit.fragment

        def fragment(func=None, **options):
            if func is None:
                return lambda f: fragment(f, **options)
            if getattr(func, "__name__", "") != STEP_FRAGMENT:
                return original(func, **options)

            @functools.wraps(func)
            def timed(*args, **kwargs):
                started = time.perf_counter()
                if self.profiling and self.profiler is not None:
                    self.profiler.enable()
                try:
                    return func(*args, **kwargs)
                finally:
                    self.last = (time.perf_counter() - started) * 1000
                    if self.profiling and self.profiler is not None:
                        self.profiler.disable()
                        self.profiled_ms += self.last

            return original(timed, **options)

        streamlit.fragment = fragment


def session(scenario: str, step: int = 0):
    from streamlit.testing.v1 import AppTest

    app = AppTest.from_file(str(APP_ROOT / "app.py"), default_timeout=1800)
    app.query_params["scenario"] = scenario
    app.query_params["engine"] = "local"
    app.query_params["step"] = str(step)
    app.run()
    assert not app.exception, app.exception
    return app


def actions(args, timer: StepTimer) -> dict[str, list[float]]:
    """One session on the benchmark trace: forward, back, jumps and random slider drags."""
    started = time.perf_counter()
    app = session(f"bench-{args.rows}", args.rows // 2)
    print(
        f"first open (simulation, or the cached timeline, and loading): {time.perf_counter() - started:.1f} s"
    )
    rng = random.Random(7)
    results: dict[str, list[float]] = {}

    def timed(name: str, act) -> None:
        t = time.perf_counter()
        act().run()
        results.setdefault(name, []).append((time.perf_counter() - t) * 1000)
        results.setdefault(f"{name}: server step", []).append(timer.last or 0.0)
        assert not app.exception, app.exception

    for _ in range(args.steps):
        timed("forward (Right)", lambda: app.button(key="fwd").click())
    for _ in range(args.steps):
        timed("back (Left)", lambda: app.button(key="back").click())
    for _ in range(args.steps):
        timed("next output-watermark change", lambda: app.button(key="next_event").click())
    for _ in range(args.steps):
        target = rng.randrange(args.rows)
        timed("slider to a random step", lambda target=target: app.slider(key="step").set_value(target))
    return results


def viewers(args, timer: StepTimer) -> dict[str, list[float]]:
    """Two sessions stepping forward together through each incident: A first, then B."""
    results: dict[str, list[float]] = {"first viewer": [], "second viewer": []}
    incidents = [(slug, 0) for slug in VIEWER_INCIDENTS] + [(f"bench-{args.rows}", args.rows // 2)]
    for slug, start in incidents:
        a, b = session(slug, start), session(slug, start)
        for _ in range(args.steps):
            if a.button(key="fwd").disabled:
                break
            for app, name in ((a, "first viewer"), (b, "second viewer")):
                timer.profiling = name == f"{args.profiled} viewer"
                app.button(key="fwd").click().run()
                assert not app.exception, app.exception
                results[name].append(timer.last or 0.0)
                results.setdefault(f"{name}: {slug}", []).append(timer.last or 0.0)
            timer.profiling = False
    return results


def report(results: dict[str, list[float]], title: str) -> None:
    print(title)
    everything = [
        v for name, values in results.items() if name.endswith(("server step", "viewer")) for v in values
    ]
    for name, values in results.items():
        print(
            f"  {name:62} n {len(values):3}  p50 {statistics.median(values):6.1f}"
            f"  p95 {percentile(values, 0.95):6.1f}  max {max(values):6.1f}"
        )
    if everything:
        print(f"  {'every server step':62} n {len(everything):3}  p50 {statistics.median(everything):6.1f}"
              f"  p95 {percentile(everything, 0.95):6.1f}")  # fmt: skip


def profile_report(timer: StepTimer, lines: int) -> None:
    """The profiled viewer's step time by function (cumulative), as fractions of the whole."""
    import pstats

    entries = pstats.Stats(timer.profiler).stats  # type: ignore[attr-defined]
    whole = timer.profiled_ms / 1000
    if not whole:
        return
    ours = sorted(((v[3], f"{Path(k[0]).name}:{k[2]}") for k, v in entries.items()), reverse=True)
    print(f"the profiled viewer's server steps (cumulative share of {whole:.2f} s):")
    for took, name in ours[:lines]:
        print(f"  {100 * took / whole:5.1f} %  {name}")


def measure(args) -> dict[str, list[float]]:
    """This process's measurement of the app in APP_ROOT."""
    samples = prepare(args.work, args.rows)
    os.environ["WMVIZ_SAMPLES"] = str(samples)
    os.environ["WMVIZ_CACHE"] = str(args.work / f"ui-cache-{APP_ROOT.name}")
    timer = StepTimer(profile=bool(args.profile))
    results = viewers(args, timer) if args.viewers else actions(args, timer)
    if args.profile:
        profile_report(timer, args.profile)  # the viewer --profiled names
    return results


def interleaved(args) -> None:
    """Rounds of (baseline, this tree) in separate processes, with the load average around each."""
    totals: dict[str, dict[str, list[float]]] = {"baseline": {}, "this tree": {}}
    for round_no in range(args.rounds):
        for name, root in (("baseline", args.baseline), ("this tree", ROOT)):
            before = os.getloadavg()
            command = [sys.executable, __file__, "--app-root", str(root), "--json", *_passed(args)]
            out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
            got = json.loads(out.strip().splitlines()[-1])
            after = os.getloadavg()
            print(f"round {round_no + 1}, {name}: load {before[0]:.1f} -> {after[0]:.1f}", flush=True)
            for key, values in got.items():
                totals[name].setdefault(key, []).extend(values)
    for name, results in totals.items():
        report(results, f"{name} ({args.baseline if name == 'baseline' else ROOT}), all rounds, ms:")


def _passed(args) -> list[str]:
    passed = ["--rows", str(args.rows), "--steps", str(args.steps), "--work", str(args.work)]
    return passed + (["--viewers"] if args.viewers else [])


APP_ROOT = ROOT


def main() -> None:
    global APP_ROOT
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--steps", type=int, default=40, help="measured steps per action (or incident)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/wmviz-bench"))
    parser.add_argument("--viewers", action="store_true", help="two sessions on the same steps")
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="print the N largest parts")
    parser.add_argument(
        "--profiled", choices=("first", "second"), default="first", help="whose steps --profile times"
    )
    parser.add_argument("--baseline", type=Path, help="another checkout, measured alternately")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--app-root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.baseline is not None:
        interleaved(args)
        return
    APP_ROOT = args.app_root.resolve()
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(APP_ROOT))  # the app's own wmviz first
    results = measure(args)
    if args.json:
        print(json.dumps(results))
        return
    report(results, f"server time per step (ms; load average {os.getloadavg()[0]:.1f}):")


if __name__ == "__main__":
    main()
