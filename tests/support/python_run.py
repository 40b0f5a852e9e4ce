"""A piece of Python run in a new interpreter, for the tests that check what a fresh process
imports or does (imports are per process): its standard output, or the test fails with the
end of its standard error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.paths import REPO


def python_output(
    code: str, env: dict[str, str] | None = None, cwd: Path = REPO, timeout: float = 600
) -> str:
    """`code` run by this interpreter in `cwd` with `env` (this process's environment by default),
    the repository first on its path; its standard output once it exits with 0."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout
