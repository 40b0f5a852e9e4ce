"""Every `WMVIZ_*` setting is declared once (`wmviz/core/settings.py`), read when asked, and a bad
value is one clear message: exit 2 and one line on every command, a notice on the page. The docs'
list (`docs/settings.md`) is the declarations' own table, checked here.

Run `python -m tests.cli.test_settings` to print the table to paste into docs/settings.md.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import paths
from wmviz.cli import main
from wmviz.core import settings
from wmviz.core.errors import SettingError, WmvizError
from wmviz.core.settings import SETTINGS, Choice, Number, Text, Whole

ROOT = paths.REPO
DOC = ROOT / "docs" / "settings.md"
BEGIN, END = "<!-- the settings: made from wmviz/core/settings.py -->", "<!-- end of the settings -->"
NOT_WMVIZ_SETTINGS = {
    "WMVIZ_FLINK_DOWNLOAD": "the test suite's: fetch Flink's jars before the `flink` tests",
    "WMVIZ_SCREENSHOTS": "the browser tests': write the README's pictures",
    "WMVIZ_SERVER": "not a variable: the sticky-session cookie `tools/serve_many.py` sets",
    "WMVIZ_LOAD_PROFILE": "the load benchmark's (bench/load.py): where its cProfile goes",
    "WMVIZ_WHOLE_JOB_SCALE": "the scale test's (tests/flink/test_blame_scale_flink.py): the job's scale k",
}
"""Names in the docs that are not settings of wmviz, and why (docs/settings.md says the same)."""


def settings_table() -> str:
    """The docs' table, one row per declared setting, by room in the order declared."""
    rows = ["| variable | room | default | takes | meaning |", "|---|---|---|---|---|"]
    for s in SETTINGS:
        rows.append(f"| `{s.name}` | {s.room} | {s.default_text()} | {s.expected()} | {s.meaning} |")
    return "\n".join(rows)


def test_the_docs_list_is_the_declarations_table():
    text = DOC.read_text(encoding="utf-8")
    between = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert between == settings_table(), "docs/settings.md is stale: run python -m tests.cli.test_settings"


WMVIZ_WORD = re.compile(r"WMVIZ_[A-Z0-9_]+")


def test_every_wmviz_name_in_the_package_and_the_docs_is_declared():
    declared = {s.name for s in SETTINGS}
    assert len(declared) == len(SETTINGS)
    sources = [*(ROOT / "wmviz").rglob("*.py"), ROOT / "app.py", *(ROOT / "docs").glob("*.md")]
    words = {word for path in [*sources, ROOT / "README.md"] for word in WMVIZ_WORD.findall(path.read_text())}
    named = {word for word in words if not word.endswith("_")}  # `WMVIZ_MAX_*` names a family
    assert named - declared - set(NOT_WMVIZ_SETTINGS) == set()
    assert declared - named == set()  # a declaration nobody reads or documents goes


def test_only_the_declarations_read_the_environment_for_a_setting():
    """A second reader would be a second rule for the same variable (bring and runs once disagreed)."""
    readers = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in [*(ROOT / "wmviz").rglob("*.py"), ROOT / "app.py"]
        if path.name != "settings.py"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\b(environ|getenv)\b.*WMVIZ_", line)
    ]
    assert readers == []


@pytest.mark.parametrize(
    ("setting", "value", "expected"),
    [
        (settings.MAX_CHANNELS, "lots", "WMVIZ_MAX_CHANNELS='lots': expected a whole number of at least 1"),
        (settings.MAX_CHANNELS, "0", "WMVIZ_MAX_CHANNELS='0': expected a whole number of at least 1"),
        (
            settings.MAX_ALIGNMENT_BUFFER,
            str(2**31),
            "WMVIZ_MAX_ALIGNMENT_BUFFER='2147483648': expected a whole number from 1 to 2,147,483,647",
        ),
        (settings.STEP_CACHE_MB, "-1", "WMVIZ_STEP_CACHE_MB='-1': expected a number of at least 0 (MB)"),
        (settings.LIVE_IDLE_S, "nan", "WMVIZ_LIVE_IDLE_S='nan': expected a number above 0 (s)"),
        (settings.SPARK_START, "soon", "WMVIZ_SPARK_START='soon': expected one of eager, lazy"),
    ],
)
def test_a_bad_value_names_the_variable_the_value_and_what_is_expected(setting, value, expected):
    with pytest.raises(SettingError) as err:
        setting.get({setting.name: value})
    assert str(err.value) == expected and isinstance(err.value, WmvizError)
    assert (err.value.name, err.value.value) == (setting.name, value)


def test_unset_or_blank_is_the_default_and_a_good_value_is_read():
    assert settings.MAX_CHANNELS.get({}) == settings.MAX_CHANNELS.get({"WMVIZ_MAX_CHANNELS": "  "}) == 32_768
    assert settings.MAX_CHANNELS.get({"WMVIZ_MAX_CHANNELS": " 8 "}) == 8
    assert settings.CACHE_MAX_MB.get({"WMVIZ_CACHE_MAX_MB": "0.5"}) == 0.5
    assert settings.SPARK_START.get({"WMVIZ_SPARK_START": "lazy"}) == "lazy"
    assert settings.CACHE.path({"WMVIZ_CACHE": "~/x"}) == Path("~/x").expanduser()
    # The one text whose empty value means something: no JVM options at all.
    assert settings.DRIVER_JAVA_OPTIONS.get({"WMVIZ_DRIVER_JAVA_OPTIONS": ""}) == ""
    assert "-XX:GCTimeRatio=4" in (settings.DRIVER_JAVA_OPTIONS.get({}) or "")
    assert {type(s) for s in SETTINGS} == {Whole, Number, Choice, Text}


def test_the_page_and_the_run_cache_read_the_spark_threshold_alike(monkeypatch):
    from wmviz.store import runs
    from wmviz.ui import bring

    monkeypatch.setenv("WMVIZ_SPARK_UPLOAD_MB", "3.5")
    assert bring.spark_threshold_mb() == runs.spark_threshold_mb() == 3.5
    monkeypatch.setenv("WMVIZ_SPARK_UPLOAD_MB", "twenty")
    for reader in (bring.spark_threshold_mb, runs.spark_threshold_mb):
        with pytest.raises(SettingError, match="WMVIZ_SPARK_UPLOAD_MB='twenty'"):
            reader()


def test_no_setting_is_read_at_import():
    """Every module imports with every setting bad: they are read when asked, never at import."""
    env = {s.name: "?" for s in SETTINGS if not isinstance(s, Text)}
    modules = sorted(
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for p in (ROOT / "wmviz").rglob("*.py")
    )
    code = "".join(f"import {m}\n" for m in modules)
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env={**_base_env(), **env}, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-2000:]


def _base_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("WMVIZ_")}


# ---- every command: a bad setting is one line and exit 2 -----------------------------------------

TRACE = ROOT / "sample_data" / "flink-38477-zero-output.jsonl"
COMMANDS = [
    ["validate", str(TRACE)],
    ["transcript", str(TRACE)],
    ["explain", str(TRACE)],
    ["simulate", str(TRACE), "--out", "never-written"],
    ["app"],
    ["record", "--rest", "http://127.0.0.1:9", "--job", "j", "--out", "never.jsonl"],
    ["import", "kafka", "dump.txt", "--parallelism", "1", "--out-of-orderness", "1s", "--out", "t.jsonl"],
    ["blame", "job.json"],
    ["lag", "job.json"],
    ["late", str(TRACE)],
    ["convert", "job.json", "job.arrow"],
    ["sweep", str(TRACE), "--vary", "generator.out_of_orderness_ms=0,5s", "--out", "t.csv"],
    ["plan", "plan.json"],
    ["sql", "replay", "job.json", "rows.jsonl"],
]


def test_the_command_list_is_every_command():
    from wmviz.cli.commands import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert sorted(c[0] for c in COMMANDS) == sorted(sub.choices)  # type: ignore[union-attr]


@pytest.mark.parametrize("argv", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_a_bad_setting_is_one_line_and_exit_2_on_every_command(argv, monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WMVIZ_MAX_CHANNELS", "lots")
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.splitlines() == [
        "error: WMVIZ_MAX_CHANNELS='lots': expected a whole number of at least 1"
    ]
    assert list(tmp_path.iterdir()) == []  # nothing was written


def test_the_issue_s_command_from_a_shell():
    proc = subprocess.run(
        [sys.executable, "-m", "wmviz", "validate", str(TRACE)],
        cwd=ROOT,
        env={**_base_env(), "WMVIZ_MAX_CHANNELS": "lots"},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        "error: WMVIZ_MAX_CHANNELS='lots': expected a whole number of at least 1"
    ]


def test_the_page_says_which_setting_is_bad(monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("WMVIZ_SPARK_START", "soon")
    monkeypatch.setenv("WMVIZ_MAX_UPLOAD_MB", "lots")
    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    assert not app.exception
    (notice,) = [e.value.replace("\\", "") for e in app.error]  # the markdown, unescaped
    assert "WMVIZ_SPARK_START='soon': expected one of eager, lazy" in notice
    assert "WMVIZ_MAX_UPLOAD_MB='lots': expected a whole number of at least 1 (MB)" in notice


if __name__ == "__main__":
    print(settings_table())
