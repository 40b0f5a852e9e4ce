"""wmviz as an installable package: the wheel carries the incidents and the app page, and an installed
`wmviz` command works from anywhere (no checkout on the path)."""

from __future__ import annotations

import subprocess
import sys
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
    assert "wmviz/sample_data/flink-38477-zero-output.jsonl" in names
    assert not [n for n in names if n.startswith("tests/")]
    # A fresh venv that sees this interpreter's packages (pandas, pyarrow) but not the checkout.
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(system_site_packages=True, with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True, capture_output=True
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
    where = subprocess.run(
        [str(python), "-c", "import wmviz.store.resources as r; print(r.sample_data()); print(r.app_page())"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert all(Path(p).exists() and "site-packages" in p for p in where)
