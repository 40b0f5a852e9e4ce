"""Fixtures and loaders shared by the tests: the repo's root, the conformance cases under
tests/data/conformance/ (each file says its own format under its "format" key), the Spark session;
and the run's closing word on the real-Flink tests it skipped (`pytest_terminal_summary`)."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from pathlib import Path

import pytest

pytest_plugins = ("pytester",)  # tests/repo/test_run_summary.py runs a small inner session

from tests.support.paths import DATA, REPO  # noqa: E402,F401 (re-exported to the tests)
from wmviz.core import settings  # noqa: E402

# The app's Spark starts on demand in tests (AppTest runs the page in this process many times);
# the browser tests' server starts it eagerly, as a user's does.
os.environ.setdefault("WMVIZ_SPARK_START", "lazy")
# Nor do their servers warm live mode once Spark is ready (~12 s of a core each, and the suite
# starts dozens of servers): its own tests turn it on (tests/spark/test_spark_live_warm_up.py,
# tests/ui/test_app_stop.py).
os.environ.setdefault("WMVIZ_LIVE_WARM_UP", "off")
CONFORMANCE = DATA / "conformance"


def cache_the_childrens_bytecode() -> None:
    """Let the run's child processes (CLI runs, app servers, Spark's Python workers: hundreds of
    them) keep their compiled bytecode, outside the checkout, where the machine forbids writing it
    (PYTHONDONTWRITEBYTECODE: CI's does). Otherwise each child compiles wmviz from source again:
    a quarter of the CPU of the CLI, record and hostile-input tests, measured in one run."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE") or os.environ.get("PYTHONPYCACHEPREFIX"):
        return
    os.environ.pop("PYTHONDONTWRITEBYTECODE")
    prefix = Path(tempfile.gettempdir()) / f"wmviz-tests-pycache-{os.getuid()}"
    os.environ["PYTHONPYCACHEPREFIX"] = str(prefix)


cache_the_childrens_bytecode()


def start_the_jvms_on_c1() -> None:
    """Run every Spark driver JVM of the run (the workers' sessions, the app servers', the CLI's) and
    every recorded Flink job (tools/flink/record/job.py) with the JIT's first tier only, as the
    Flink harnesses always run: the tests' JVM work is short, and C2's compiler threads cost more
    CPU than they save. Measured on one machine, system-wide CPU (30 Nov 2026):
    tests/spark/test_spark_live.py with test_engines.py's Spark half, two rounds interleaved,
    206 / 200 CPU-s with the product's options, 164 / 163 with this; test_blame_scale_flink.py with
    test_lag_flink.py, 104 CPU-s with C2, 76 without. The product's own Spark options stay in front
    (test_spark_session checks them in the JVM); users' sessions keep C2, which a long trace needs."""
    if "WMVIZ_DRIVER_JAVA_OPTIONS" not in os.environ:
        options = settings.DRIVER_JAVA_OPTIONS.default or ""
        os.environ["WMVIZ_DRIVER_JAVA_OPTIONS"] = f"{options} -XX:TieredStopAtLevel=1".strip()
    os.environ.setdefault("WMVIZ_JOBS_ON_C1", "1")


start_the_jvms_on_c1()


def scan_the_installed_components_once() -> None:
    """Each new AppTest has Streamlit read the metadata of every installed distribution, looking for
    v2 components (0.5–0.7 s a page, hundreds of pages a run); the installed distributions do not
    change during a run, so the scan's answer is kept. Not a thing the tests check. Left as it is
    if Streamlit moves the scanner."""
    try:
        from streamlit.components.v2 import manifest_scanner
    except ImportError:
        return
    scan = getattr(manifest_scanner, "scan_component_manifests", None)
    if scan is not None and not hasattr(scan, "cache_info"):
        manifest_scanner.scan_component_manifests = functools.cache(scan)


scan_the_installed_components_once()


def load_cases(path: Path) -> list[dict]:
    """The `cases` of a conformance file ({"format": [...], "cases": [...]}), failing loudly (never
    skipping) if the file is missing."""
    if not path.is_file():
        pytest.fail(f"{path} is missing", pytrace=False)
    return json.loads(path.read_text("utf-8"))["cases"]


def cases_digest(cases: list[dict]) -> str:
    """SHA-256 of the cases as canonical JSON (sorted keys): equal exactly when the content is."""
    return hashlib.sha256(json.dumps(cases, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def valve_cases() -> list[dict]:
    """tests/data/conformance/valve_cases.json, the 40 valve scenarios."""
    return load_cases(CONFORMANCE / "valve_cases.json")


def case_id(case: dict) -> str:
    """A short readable test id: `T12` from `T12 testMultiple…`."""
    return case["name"].split()[0]


def check_value(raw):
    """A conformance `check` value as the valve reports it: MIN/MAX and status names decoded."""
    from wmviz.core.types import MAX_MS, MIN_MS, Status

    if raw == "MIN":
        return MIN_MS
    if raw == "MAX":
        return MAX_MS
    if isinstance(raw, str):
        return Status(raw)
    return raw


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession for the whole test session (it takes ~10 s to start)."""
    from wmviz.spark.session import get_spark, stop_spark

    session = get_spark("local[2]")
    yield session
    stop_spark()


# Debian's chromium, driven by Playwright in the browser and report tests (never `playwright install`).
from tools.chromium import CHROMIUM, CHROMIUM_ARGS  # noqa: E402,F401 (re-exported to the tests)


def truthy_env(name: str) -> bool:
    """An environment flag set to anything but empty, 0, false or no."""
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no")


def require_flink(what: str, suite: str, unavailable=None) -> None:
    """Return when Java and the real Flink jars are here (fetched when CI or WMVIZ_FLINK_DOWNLOAD
    is set); else skip on a laptop and fail under CI, naming `what` is missing and which `suite`
    could not run. `unavailable` is the suite's own check (default: the flink-dist jar's)."""
    from tools.flink.valve.jar import FLINK_VERSION, HarnessError, unavailable_reason

    in_ci = truthy_env("CI")
    try:
        reason = (unavailable or unavailable_reason)(download=in_ci or truthy_env("WMVIZ_FLINK_DOWNLOAD"))
    except HarnessError as e:  # the download itself failed
        reason = str(e)
    if reason:
        message = f"{what.format(version=FLINK_VERSION)} unavailable: {reason}"
        if in_ci:
            pytest.fail(f"CI is set, so {suite} must run; {message}", pytrace=False)
        pytest.skip(message)


FLINK_COMMAND = "WMVIZ_FLINK_DOWNLOAD=1 python -m pytest -m flink"
"""The one line that runs every test against the real Flink classes, fetching the jars if needed."""


def flink_summary(stats: dict) -> list[str]:
    """What a run says at its end about the tests marked `flink`: how many were skipped (with the
    first reason) or deselected, and the line that runs them. Nothing when all of them ran: a
    laptop without Java or the jars skips them quietly otherwise, and a green run would hide that
    the product was never checked against Flink."""
    skipped = [r for r in stats.get("skipped", []) if "flink" in getattr(r, "keywords", {})]
    deselected = [i for i in stats.get("deselected", []) if i.get_closest_marker("flink") is not None]
    if not skipped and not deselected:
        return []
    lines = []
    if skipped:
        why = skipped[0].longrepr  # (file, line, "Skipped: reason") for a skip
        reason = (why[2] if isinstance(why, tuple) else str(why)).removeprefix("Skipped: ")
        lines.append(f"{len(skipped)} real-Flink test(s) (marker flink) skipped: {reason}")
    if deselected:
        lines.append(f"{len(deselected)} real-Flink test(s) (marker flink) deselected")
    lines.append(f"run them with: {FLINK_COMMAND}")
    return lines


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter):
    """End the run with `flink_summary`, under its own heading: after the short test summary, just
    above the final counts (the outermost wrapper around pytest's own, which writes that summary
    once everything inside it has run)."""
    yield
    lines = flink_summary(terminalreporter.stats)
    if lines:
        terminalreporter.write_sep("=", "tests against the real Flink 2.3.0 classes")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture
def serve():
    """Start scripted fake JobManagers (tests/support/fake_jobmanager.py) on 127.0.0.1; each is shut down
    when the test ends. `serve(job)` returns its base URL."""
    from tests.support.fake_jobmanager import start_server, url_of

    servers = []

    def start(job) -> str:
        servers.append(start_server(job))
        return url_of(servers[-1])

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()
