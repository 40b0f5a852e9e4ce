"""A Spark standalone cluster on this machine, started from the pyspark install: a master and N
workers, each its own JVM on 127.0.0.1. Used by the cluster tests and by `bench/sweep.py
--cluster-workers N`, so both start it the same way."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tools.appserver import free_port


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


def _start(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen:
    # The log stays open while the JVM runs; it is closed with the process's file table.
    return subprocess.Popen(
        [str(_spark_class()), *args], env=env, stdout=log.open("w"), stderr=subprocess.STDOUT
    )


def _worker_args(url: str, cores: int, memory: str, work: Path) -> list[str]:
    return ["org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--cores", str(cores),
            "--memory", memory, "--webui-port", str(free_port()), "--work-dir", str(work)]  # fmt: skip


@contextmanager
def standalone_cluster(logs: Path, workers: int = 1, cores: int = 1, memory: str = "1g") -> Iterator[str]:
    """Start a master and `workers` workers (each `cores` cores, `memory` of executor memory), yield
    the master's URL once the workers have had time to register, and stop them all afterwards."""
    logs.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    port = free_port()
    processes: list[subprocess.Popen] = []
    try:
        master_args = ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                       "--webui-port", str(free_port())]  # fmt: skip
        processes.append(_start(master_args, logs / "master.log", env))
        _wait_for(port, processes[0])
        url = f"spark://127.0.0.1:{port}"
        for index in range(workers):
            work = logs / f"work-{index}"
            processes.append(
                _start(_worker_args(url, cores, memory, work), logs / f"worker-{index}.log", env)
            )
        time.sleep(3)  # the workers register with the master
        yield url
    finally:
        for process in reversed(processes):
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
