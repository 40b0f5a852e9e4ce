"""The Spark engine on a real standalone cluster, started on this machine from the pyspark install.

A master and one worker run as their own JVMs on 127.0.0.1; `python -m wmviz simulate --master
spark://…` then runs as a separate driver, so its executor is a separate JVM with its own Python
workers that get wmviz only as the zip the driver ships (`SparkContext.addPyFile`). Its timeline
must equal the local engine's. A sweep on the same cluster (`wmviz sweep --engine spark`) must
write the in-process sweep's table.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.corpus import valid_cases
from tests.test_engines import assert_same_timeline
from tools.appserver import free_port
from wmviz.timeline.store import Timeline

pytestmark = pytest.mark.spark_cluster

CASES = [c for c in valid_cases() if c.name in ("seeded-6", "conformance-csv", "sample-early-fire-left-join")]


def _spark_class() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-class"


def _wait_for(port: int, process: subprocess.Popen, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args[1]} exited with {process.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise TimeoutError(f"nothing listens on port {port} after {seconds} s")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A standalone master and one worker (1 core, 1 GB), stopped after the module."""
    logs = tmp_path_factory.mktemp("cluster")
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    port = free_port()
    processes = []
    try:
        master = subprocess.Popen(
            [
                str(_spark_class()),
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(free_port()),
            ],
            env=env,
            stdout=open(logs / "master.log", "w"),  # noqa: SIM115 (open while the master runs)
            stderr=subprocess.STDOUT,
        )
        processes.append(master)
        _wait_for(port, master)
        url = f"spark://127.0.0.1:{port}"
        worker = subprocess.Popen(
            [
                str(_spark_class()),
                "org.apache.spark.deploy.worker.Worker",
                url,
                "--host",
                "127.0.0.1",
                "--cores",
                "1",
                "--memory",
                "1g",
                "--webui-port",
                str(free_port()),
                "--work-dir",
                str(logs / "work"),
            ],
            env=env,
            stdout=open(logs / "worker.log", "w"),  # noqa: SIM115 (open while the worker runs)
            stderr=subprocess.STDOUT,
        )
        processes.append(worker)
        time.sleep(3)  # the worker registers with the master
        yield url
    finally:
        for process in reversed(processes):
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_standalone_cluster_writes_the_local_engines_timeline(cluster, case, tmp_path):
    path, config = case.materialize(tmp_path / "in")
    config_args = ["--config", str(config)] if config else []
    outs = {}
    for engine in ("local", "spark"):
        out = tmp_path / engine
        argv = [
            sys.executable,
            "-m",
            "wmviz",
            "simulate",
            str(path),
            *config_args,
            "--out",
            str(out),
            "--engine",
            engine,
            "--master",
            cluster,
            "--keyframe-every",
            "40",
        ]
        # Run from outside the checkout, so the executors can only have wmviz from the shipped zip.
        repo = Path(__file__).resolve().parent.parent
        env = {**os.environ, "PYTHONPATH": str(repo), "WMVIZ_DRIVER_MEMORY": "1g"}
        result = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr[-3000:]
        outs[engine] = Timeline(out)
    assert outs["spark"].meta["engine"] == "spark"
    assert_same_timeline(outs["spark"], outs["local"])


def _wmviz(argv: list[str], cwd: Path) -> None:
    """`python -m wmviz …` as its own driver process, from outside the checkout, so the executors
    can only have wmviz from the shipped zip."""
    repo = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(repo), "WMVIZ_DRIVER_MEMORY": "1g"}
    command = [sys.executable, "-m", "wmviz", *argv]
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]


def test_a_standalone_cluster_sweeps_to_the_in_process_table(cluster, tmp_path):
    """The Kafka-like sample over 3 × 2 combinations: every (combination, bucket) unit runs in the
    cluster's executor, and the merged table is the in-process one, row for row."""
    data = Path(__file__).resolve().parent / "data"
    argv = ["sweep", str(data / "kafka-rebalance.csv"), "--config", str(data / "kafka-rebalance.json"),
            "--vary", "operator.allowed_lateness_ms=0,30s,2m",
            "--vary", "operator.size_ms=30s,1m"]  # fmt: skip
    _wmviz([*argv, "--engine", "local", "--out", str(tmp_path / "local.json")], tmp_path)
    _wmviz([*argv, "--engine", "spark", "--master", cluster, "--out", str(tmp_path / "spark.json")], tmp_path)
    local = json.loads((tmp_path / "local.json").read_text())
    assert len(local) == 6
    assert any(row["late_dropped"] > 0 for row in local)  # a table where the bounds matter
    assert json.loads((tmp_path / "spark.json").read_text()) == local
