"""The Spark engine on a real standalone cluster, started on this machine from the pyspark install.

A master and one worker run as their own JVMs on 127.0.0.1; `python -m wmviz simulate --master
spark://…` then runs as a separate driver, so its executor is a separate JVM with its own Python
workers that get wmviz only as the zip the driver ships (`SparkContext.addPyFile`). Its timeline
must equal the local engine's.

A sweep on this cluster was checked here too, until the CI budget: its driver and executor JVMs
were ~90 s of a 30-minute run. A sweep's units reach the executors' Python workers the way a
timeline's do (the shipped zip, checked above), and its table is checked against the in-process one
on a local session (`tests/cli/test_sweep_cli.py`, every built-in incident and the Kafka sample).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import paths
from tests.support.corpus import valid_cases
from tests.timeline.test_engines import assert_same_timeline
from tools.spark_cluster import standalone_cluster
from wmviz.timeline.store import Timeline

pytestmark = pytest.mark.spark_cluster

# The join's trace only (the richest: two inputs, timers, retractions): each case starts a driver
# and an executor JVM on the cluster (~70-90 s of a 30-minute CI run, and their CPU taken from
# every other test); every case's local-vs-Spark equality is checked on a local session in
# tests/timeline/test_engines.py, and the cluster adds only the shipped zip and separate JVMs.
CASES = [c for c in valid_cases() if c.name == "sample-early-fire-left-join"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A standalone master and one worker (1 core, 1 GB), stopped after the module."""
    with standalone_cluster(tmp_path_factory.mktemp("cluster"), workers=1) as url:
        yield url


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_standalone_cluster_writes_the_local_engines_timeline(cluster, case, tmp_path):
    path, config = case.materialize(tmp_path / "in")
    config_args = ["--config", str(config)] if config else []
    outs = {}
    for engine in ("local", "spark"):
        out = tmp_path / engine
        _wmviz(["simulate", str(path), *config_args, "--out", str(out), "--engine", engine,
                "--master", cluster, "--keyframe-every", "40"], tmp_path)  # fmt: skip
        outs[engine] = Timeline(out)
    assert outs["spark"].meta.engine == "spark"
    assert_same_timeline(outs["spark"], outs["local"])


def _wmviz(argv: list[str], cwd: Path) -> None:
    """`python -m wmviz …` as its own driver process, from outside the checkout, so the executors
    can only have wmviz from the shipped zip."""
    repo = paths.REPO
    env = {**os.environ, "PYTHONPATH": str(repo), "WMVIZ_DRIVER_MEMORY": "1g"}
    command = [sys.executable, "-m", "wmviz", *argv]
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
