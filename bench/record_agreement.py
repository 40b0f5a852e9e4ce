"""How often `wmviz record`'s replay equals what a real Flink 2.3.0 job reported, by buffer timeout.

    python bench/record_agreement.py            # 3 rounds, each: buffer timeout 100 ms, then 0 ms
    python bench/record_agreement.py --rounds 5

Each run starts tools/flink/record/WmvizRecordJob.java on a MiniCluster (REST on 127.0.0.1; three
FLIP-27 source subtasks skewed 0/1/3 s, the slowest silent for 6 s, idleness 1.5 s, watermark
interval 200 ms, a rebalance into two subtasks), records it with `python -m wmviz record --every
250ms` until the job finishes, and prints the share of samples where the replay equals the job's
reported `currentInputWatermark`, with the causes of the rest. The two buffer timeouts alternate
within each round (this machine is shared: interleaving keeps load swings out of the comparison);
the load average is printed before and after.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.flink.record.job import start_job
from wmviz.core.simulate import simulate
from wmviz.record.agreement import ReplayCheck
from wmviz.trace.readers import read_trace


def one_run(buffer_timeout_ms: int, folder: Path) -> ReplayCheck:
    job = start_job(16, buffer_timeout_ms=buffer_timeout_ms)
    out = folder / f"run-{buffer_timeout_ms}.jsonl"
    try:
        command = [sys.executable, "-m", "wmviz", "record", "--rest", job.rest, "--job", job.job,
                   "--vertex", "downstream", "--every", "250ms", "--for", "60s", "--idleness", "1500ms",
                   "--out", str(out)]  # fmt: skip
        subprocess.run(command, capture_output=True, text=True, check=True)
    finally:
        job.stop()
    check = ReplayCheck()
    for result in simulate(read_trace(out)):
        check.observe(result)
    return check


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="keep each run's trace in this folder")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.rounds):
            for buffer_timeout in (100, 0):
                folder = args.keep / f"round-{round_ + 1}" if args.keep else Path(tmp)
                folder.mkdir(parents=True, exist_ok=True)
                check = one_run(buffer_timeout, folder)
                causes = Counter(c.cause for c in check.checks if not c.agrees)
                rest = ", ".join(f"{n} {cause}" for cause, n in sorted(causes.items())) or "none"
                print(
                    f"round {round_ + 1} buffer timeout {buffer_timeout:3d} ms: {check.agreed}/"
                    f"{len(check.checks)} = {check.share:.1%} agree; the rest: {rest}; "
                    f"load {os.getloadavg()[0]:.1f}"
                )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
