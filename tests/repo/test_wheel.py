"""The wheel ships what the page and `wmviz --help` read: built with `pip wheel --no-deps`,
installed into a clean venv (`--no-deps`, seeing this interpreter's packages for numpy, pandas and
pyarrow so nothing is downloaded), and opened from there, away from the checkout: "How to write a
trace", every doc the page names, the page itself, the built-in incidents, the SQL planner's Java
sources, `py.typed`, the LICENSE, `wmviz --help`, and `wmviz validate` / `explain` on a built-in
incident. One build for the module (there were two, in two modules): about a minute, most of it
pip's."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import sysconfig
import venv as venv_module
import zipfile
from pathlib import Path

import pytest

from tests.support import paths

ROOT = paths.REPO
UNSHIPPED = (".git", "build", "*.egg-info", ".*cache", ".hypothesis", ".benchmarks", "__pycache__", "tests")
"""What the copy the wheel is built from leaves out: a former build, caches, and the tests."""


def page_docs() -> list[str]:
    """Every doc the page names (`docs/NAME.md` in the page's text) and every doc "How to write a
    trace" links to."""
    texts = [p.read_text() for p in [ROOT / "app.py", *(ROOT / "wmviz" / "ui").glob("*.py")]]
    texts += [p.read_text() for p in (ROOT / "wmviz" / "view").glob("*.py")]
    named = {m for text in texts for m in re.findall(r"docs/([a-z0-9-]+\.md)", text)}
    linked = re.findall(r"\]\(([a-z0-9-]+\.md)\)", (ROOT / "docs" / "trace-format.md").read_text())
    return sorted(named | set(linked))


def packages_of_the_checkout() -> set[str]:
    """Every folder of wmviz/ with a module, as the package the wheel must hold."""
    return {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "wmviz").rglob("__init__.py")}


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, Path]:
    """(the wheel, the venv's python) with the wheel installed in it."""
    work = tmp_path_factory.mktemp("wheel")
    # From a copy: setuptools builds in the source tree and would reuse a former build's build/lib.
    source = work / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*UNSHIPPED))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(work), str(source)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = work.glob("wmviz-*.whl")
    venv = work / "venv"
    venv_module.EnvBuilder(with_pip=True).create(venv)
    python = venv / "bin" / "python"
    see_packages_of_this_interpreter(python)
    # --ignore-installed: a wmviz this interpreter has installed must not stand in for the wheel.
    subprocess.run(
        [str(python), "-m", "pip", "install", "--no-deps", "--ignore-installed", "-q", str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return wheel, python


def see_packages_of_this_interpreter(python: Path) -> None:
    """Let the venv of `python` import what the interpreter running the tests has installed
    (numpy, pandas, pyarrow, streamlit: nothing is downloaded).

    `system_site_packages` would not do: it gives a venv its *base* interpreter's packages, so
    under a test run from a venv (where pandas and pyarrow live in that venv) the new one would
    see neither. A `.pth` file in the new venv names this interpreter's package folders instead;
    they come after the venv's own, so the wheel installed there is the wmviz that runs. Plain
    paths in a `.pth` file run none of the `.pth` files inside them, so an editable wmviz
    installed here stays out.
    """
    here = {sysconfig.get_paths()[key] for key in ("purelib", "platlib")}
    here |= {p for p in sys.path if Path(p).name in ("site-packages", "dist-packages")}
    folders = sorted(p for p in here if Path(p).is_dir() and Path(p).resolve() != ROOT.resolve())
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(purelib) / "wmviz-test-outer-packages.pth").write_text("\n".join(folders) + "\n")


def test_the_wheel_holds_every_package_the_docs_the_java_half_and_the_license(installed):
    wheel, _ = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    folders = {str(Path(n).parent).replace("/", ".") for n in names if n.endswith("/__init__.py")}
    assert packages_of_the_checkout() <= folders
    expected = {
        "wmviz/py.typed",
        "wmviz/_app/app.py",
        "wmviz/_app/.streamlit/config.toml",
        "wmviz/docs/trace-format.md",
        "wmviz/sql/java/WmvizSqlPlanner.java",
        "wmviz/sample_data/flink-38477-zero-output.jsonl",
        "wmviz/sample_data/jobs/silent-split-holds-the-whole-job.json",
    }
    assert expected <= names
    assert not [n for n in names if n.startswith("tests/")]
    java = {p.name for p in (ROOT / "wmviz" / "sql" / "java").glob("*.java")}
    assert {f"wmviz/sql/java/{name}" for name in java} <= names
    assert {f"wmviz/docs/{p.name}" for p in (ROOT / "docs").glob("*.md")} <= names
    (license_file,) = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
    assert "Apache License" in zipfile.ZipFile(wheel).read(license_file).decode()
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    assert "License-Expression: Apache-2.0" in zipfile.ZipFile(wheel).read(metadata).decode()


def test_the_installed_app_opens_what_the_page_reads(installed, tmp_path):
    _, python = installed
    docs = page_docs()
    assert {"trace-format.md", "rules.md", "alignment.md"} <= set(docs)
    code = (
        "import json, sys, wmviz\n"
        "from wmviz.store.resources import app_page, doc_text, sample_data\n"
        "docs = {name: doc_text(name) for name in sys.argv[1:]}\n"
        "print(json.dumps({'package': wmviz.__file__, 'page': str(app_page()),\n"
        "    'samples': sorted(p.name for p in sample_data().iterdir()), 'docs': docs}))\n"
    )
    # Away from the checkout: nothing here may come from it.
    proc = subprocess.run(
        [str(python), "-c", code, *docs], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    venv = python.parent.parent
    assert Path(found["package"]).is_relative_to(venv) and Path(found["page"]).is_relative_to(venv)
    assert "flink-38477-zero-output.jsonl" in found["samples"]
    for name in docs:
        assert found["docs"][name] == (ROOT / "docs" / name).read_text(encoding="utf-8"), name
    assert found["docs"]["trace-format.md"].startswith("# ")


def test_the_installed_command_line_answers_help(installed, tmp_path):
    _, python = installed
    wmviz = python.parent / "wmviz"
    proc = subprocess.run([str(wmviz), "--help"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "usage: wmviz" in proc.stdout, proc.stderr
    for command in ("validate", "record", "sql"):
        sub = subprocess.run(
            [str(wmviz), command, "--help"], cwd=tmp_path, capture_output=True, text=True, timeout=120
        )
        assert sub.returncode == 0 and f"usage: wmviz {command}" in sub.stdout, sub.stderr


def test_the_installed_command_validates_and_explains_a_built_in_incident_from_any_folder(
    installed, tmp_path
):
    _, python = installed
    wmviz = python.parent / "wmviz"
    sample = ROOT / "sample_data" / "flink-38477-zero-output.jsonl"
    result = subprocess.run(
        [str(wmviz), "validate", str(sample)], cwd=tmp_path, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert "valid: 8 rows" in result.stdout
    # A built-in incident by its name: the trace the wheel carries, found from any folder.
    result = subprocess.run(
        [str(wmviz), "explain", "flink-38477-zero-output", "--step", "7"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    steps = [line for line in result.stdout.splitlines() if line.startswith("step ")]
    assert steps[-1].startswith("step 7 IDLE@1: ") and "emit WMAX" in result.stdout


def test_a_doc_neither_the_checkout_nor_the_wheel_has_is_named():
    from wmviz.store.resources import doc_text

    assert doc_text("trace-format.md") == (ROOT / "docs" / "trace-format.md").read_text(encoding="utf-8")
    with pytest.raises(FileNotFoundError, match=r"docs/no-such-doc\.md is missing"):
        doc_text("no-such-doc.md")
