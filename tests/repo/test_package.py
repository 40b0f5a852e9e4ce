"""wmviz as an installable package: the wheel carries the incidents and the app page, and an installed
`wmviz` command works from anywhere (no checkout on the path)."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

from tests.conftest import REPO


def test_the_wheel_installs_and_its_wmviz_command_runs_outside_the_checkout(tmp_path):
    wheels = tmp_path / "wheels"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "-q",
            "-w",
            str(wheels),
            str(REPO),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = wheels.glob("wmviz-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "wmviz/py.typed" in names and "wmviz/_app/app.py" in names
    assert "wmviz/_app/.streamlit/config.toml" in names  # the page's server settings travel with it
    assert "wmviz/sample_data/flink-38477-zero-output.jsonl" in names
    assert "wmviz/sample_data/jobs/silent-split-holds-the-whole-job.json" in names
    assert not [n for n in names if n.startswith("tests/")]
    # A fresh venv that sees this interpreter's packages (pandas, pyarrow) but not the checkout.
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    see_packages_of_this_interpreter(python)
    # --ignore-installed: a wmviz this interpreter has installed must not stand in for the wheel.
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--ignore-installed", str(wheel)],
        check=True,
        capture_output=True,
    )
    sample = REPO / "sample_data" / "flink-38477-zero-output.jsonl"
    result = subprocess.run(
        [str(env_dir / "bin" / "wmviz"), "validate", str(sample)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "valid: 8 rows" in result.stdout
    # A built-in incident by its name: the trace the wheel carries, found from any folder.
    result = subprocess.run(
        [str(env_dir / "bin" / "wmviz"), "explain", "flink-38477-zero-output", "--step", "7"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    steps = [line for line in result.stdout.splitlines() if line.startswith("step ")]
    assert steps[-1].startswith("step 7 IDLE@1: ") and "emit WMAX" in result.stdout
    where = subprocess.run(
        [str(python), "-c", "import wmviz.store.resources as r; print(r.sample_data()); print(r.app_page())"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert all(Path(p).exists() and Path(p).is_relative_to(env_dir.resolve()) for p in where), where


def see_packages_of_this_interpreter(python: Path) -> None:
    """Let the venv of `python` import what the interpreter running the tests has installed.

    `system_site_packages` would not do: it gives a venv its *base* interpreter's packages, so
    under a test run from a venv (where pandas and pyarrow live in that venv) the new one would
    see neither. A `.pth` file in the new venv names this interpreter's package folders instead;
    they come after the venv's own, so the wheel installed there is the wmviz that runs. Plain
    paths in a `.pth` file run none of the `.pth` files inside them, so an editable wmviz
    installed here stays out.
    """
    here = {sysconfig.get_paths()[key] for key in ("purelib", "platlib")}
    here |= {p for p in sys.path if Path(p).name in ("site-packages", "dist-packages")}
    folders = sorted(p for p in here if Path(p).is_dir() and Path(p).resolve() != REPO.resolve())
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(purelib) / "wmviz-test-outer-packages.pth").write_text("\n".join(folders) + "\n")


def test_the_pages_streamlit_config_keeps_the_forced_collection_off():
    """Streamlit's full garbage collection after every script run was ~65 % of a busy server's CPU
    (docs/benchmarks.md): the config beside app.py, which the wheel ships, turns it off."""
    import tomllib

    config = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text())
    assert config["runner"]["postScriptGC"] is False
    assert config["server"]["maxUploadSize"] >= 200  # wmviz refuses large traces itself, with a message
