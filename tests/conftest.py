"""Fixtures and loaders shared by the tests: the repo's root, the conformance cases under
tests/data/conformance/ (each file says its own format under its "format" key), the Spark session."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# The app's Spark starts on demand in tests (AppTest runs the page in this process many times);
# the browser tests' server starts it eagerly, as a user's does.
os.environ.setdefault("WMVIZ_SPARK_START", "lazy")
CONFORMANCE = REPO / "tests" / "data" / "conformance"


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
    from tools.flinkvalve.jar import FLINK_VERSION, HarnessError, unavailable_reason

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


@pytest.fixture
def serve():
    """Start scripted fake JobManagers (tests/fake_jobmanager.py) on 127.0.0.1; each is shut down
    when the test ends. `serve(job)` returns its base URL."""
    from tests.fake_jobmanager import start_server, url_of

    servers = []

    def start(job) -> str:
        servers.append(start_server(job))
        return url_of(servers[-1])

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()
