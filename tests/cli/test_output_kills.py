"""The real command line SIGKILLed while it writes: `import`, `simulate` and `record` leave the
earlier output or the new one, whole (a recording: whole samples), and the next run clears what
the killed one left beside it.

Each kill waits for the run's work item to appear beside the destination (the write has begun),
or for a recording's destination to change a given number of times (each change a write begun), and
then for a random moment of the write. tests/cli/test_disk_atomic.py kills the writer before
every single system call; these check the commands use it end to end.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.test_output_safety import assert_whole_samples, work_items
from tests.record.test_record_rest import FakeJob, _record
from wmviz.cli import commands as cli
from wmviz.timeline.store import Timeline
from wmviz.trace.readers import read_trace

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SIGKILL timing on Linux")
T0 = 1_795_514_400_000


def kafka_dump(path: Path, lines: int) -> Path:
    rng = random.Random(lines)
    path.write_text("".join(f"{i % 6} {i // 6} {T0 + 10 * i + rng.randint(0, 5)}\n" for i in range(lines)))
    return path


def kafka(dump: Path, out: Path, parallelism: int) -> list[str]:
    return ["import", "kafka", str(dump), "--parallelism", str(parallelism), "--out-of-orderness", "5s",
            "--topic", "t", "--out", str(out)]  # fmt: skip


def _state(path: Path) -> tuple[int, int, int] | None:
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    return info.st_ino, info.st_size, info.st_mtime_ns


def kill_while_writing(
    command: list[str], dest: Path, rng: random.Random, longest: float, *, dest_changes: int = 0
) -> bool:
    """Start `python -m wmviz command`, SIGKILL it a random moment after its write began (a work
    item appeared beside `dest`, or `dest` itself changed; with `dest_changes`, once `dest` has
    been seen to change that many times); whether it was still running then."""
    seen = [_state(dest)]
    proc = subprocess.Popen([sys.executable, "-m", "wmviz", *command],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        if (state := _state(dest)) != seen[-1]:
            seen.append(state)
        changed = len(seen) - 1
        if changed >= max(dest_changes, 1) or (not dest_changes and work_items(dest.parent)):
            break
        time.sleep(0.002)
    time.sleep(rng.uniform(0, longest))
    proc.send_signal(signal.SIGKILL)
    return proc.wait(timeout=30) == -signal.SIGKILL


def test_a_killed_import_leaves_the_earlier_trace_or_the_whole_new_one(tmp_path):
    dump = kafka_dump(tmp_path / "dump.txt", 40_000)
    out, new = tmp_path / "orders.jsonl", tmp_path / "reference.jsonl"
    assert cli.main(kafka(dump, out, 2)) == 0
    assert cli.main(kafka(dump, new, 3)) == 0
    old_bytes, new_bytes = out.read_bytes(), new.read_bytes()
    rng = random.Random(7)
    killed = [kill_while_writing(kafka(dump, out, 3), out, rng, 0.3) for _ in range(3)]
    assert any(killed)
    data = out.read_bytes()
    assert data in (old_bytes, new_bytes)
    read_trace(out)
    assert cli.main(kafka(dump, out, 3)) == 0
    assert out.read_bytes() == new_bytes and work_items(tmp_path) == []


def test_a_killed_simulate_leaves_the_earlier_timeline_or_the_whole_new_one(tmp_path, capsys):
    big, small = tmp_path / "big.jsonl", tmp_path / "small.jsonl"
    assert cli.main(kafka(kafka_dump(tmp_path / "big.txt", 20_000), big, 3)) == 0
    assert cli.main(kafka(kafka_dump(tmp_path / "small.txt", 600), small, 2)) == 0
    out = tmp_path / "tl"
    rng = random.Random(11)
    for _ in range(2):
        assert cli.main(["simulate", str(small), "--out", str(out)]) == 0  # the earlier timeline
        kill_while_writing(["simulate", str(big), "--out", str(out)], out, rng, 2.5)
        timeline = Timeline(out)  # a timeline wmviz wrote, whole: meta.json and every part it lists
        timeline.verify()
        assert (out / ".wmviz-timeline").is_file() and timeline.meta.source in (small.name, big.name)
    assert cli.main(["simulate", str(small), "--out", str(out)]) == 0  # and the next run clears up
    assert Timeline(out).meta.source == small.name and work_items(tmp_path) == []
    capsys.readouterr()


def test_a_killed_recording_holds_whole_samples(serve, tmp_path):
    url = serve(FakeJob(["RUNNING"]))
    out, samples = tmp_path / "r.csv", tmp_path / "s.jsonl"
    rng = random.Random(3)
    taken: list[int] = []
    for _ in range(2):
        command = _record(url, out, "--samples", str(samples))[3:]
        command[command.index("50ms")] = "10ms"
        # Killed once its third write has begun (it appears with its first sample, then grows by one
        # write per sample): two whole samples at least, however slow the start. A moment drawn
        # from its start was not enough: beside a CPU hog the first sample took longer than that.
        assert kill_while_writing(command, out, rng, 2.0, dest_changes=3)
        taken.append(assert_whole_samples(read_trace(out, tmp_path / "r.config.json"), instances=2))
        assert all(json.loads(line) for line in samples.read_text().splitlines())
    assert min(taken) > 1
