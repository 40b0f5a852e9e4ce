"""What checking every byte a cached timeline serves costs (issue 24), in the same run.

    python bench/checked_reads.py --rows 10000000           # 1,000 instances x 8 channels
    python bench/checked_reads.py --rows 1000000 --instances 1

Builds the trace and its timeline once (local engine, kept under --work), then times, interleaved:
the first check of an entry (`Timeline.verify`: the whole-file SHA-256 and the block digests, in
one pass) against the whole-file SHA-256 alone (what the check cost before); loading instance
cursors and the overview's columns through the checked reads against the same reads straight from
the files with pyarrow (unchecked, as before).
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import time
from pathlib import Path

import pyarrow.dataset as ds

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.gen_trace import write_trace  # noqa: E402
from wmviz.timeline import checked_parts  # noqa: E402
from wmviz.timeline.cursor import InstanceCursor  # noqa: E402
from wmviz.timeline.local import build_timeline_local  # noqa: E402
from wmviz.timeline.store import Timeline  # noqa: E402
from wmviz.timeline.tables import SCHEMAS  # noqa: E402
from wmviz.trace.readers import read_trace  # noqa: E402

OVERVIEW = ["instance", "order", "output_wm", "event_ms", "watermark_ms"]


def timeline(work: Path, rows: int, instances: int) -> Path:
    paths = write_trace(work, rows, instances, 8)
    out = work / f"timeline-{rows}-{instances}"
    if not (out / "meta.json").is_file():
        started = time.perf_counter()
        build_timeline_local(read_trace(paths["parquet"], paths["config"]), out)
        print(f"built {out} in {time.perf_counter() - started:.1f} s")
    return out


class Unchecked(Timeline):
    """The same timeline read straight from its files (the reads before issue 24)."""

    def _scan(self, table, **scan):
        folder = self.path / f"table={table}"
        if not folder.is_dir():
            return None
        return ds.dataset(folder, format="parquet", schema=SCHEMAS[table]).to_table(**scan)


def sha256_only(path: Path) -> None:
    for name in Timeline(path).meta_json["files"]:
        h = hashlib.sha256()
        with open(path / name, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--instances", type=int, default=1000)
    parser.add_argument("--cursors", type=int, default=5, help="instance cursors loaded per round")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path("/tmp/wmviz-bench"))
    args = parser.parse_args()
    path = timeline(args.work, args.rows, args.instances)
    files = Timeline(path).meta_json["files"]
    size = sum(r["bytes"] for r in files.values())
    steps = sum(r["bytes"] for n, r in files.items() if n.startswith("table=steps/"))
    print(f"timeline: {size / 2**20:,.0f} MB in part files ({steps / 2**20:,.0f} MB of steps)")
    checked, unchecked = Timeline(path), Unchecked(path)
    instances = sorted(checked.meta.instances)[: args.cursors]
    results: dict[str, list[float]] = {}

    def record(name: str, seconds: float) -> None:
        results.setdefault(name, []).append(seconds)

    for _ in range(args.repeat):
        record("first check: SHA-256 only (before)", timed(lambda: sha256_only(path)))
        record("first check: SHA-256 + block digests (now)", timed(checked.verify))
        for name, t in (("unchecked", unchecked), ("checked", checked)):
            record(
                f"{len(instances)} instance cursors, {name}",
                timed(lambda t=t: [InstanceCursor(t, i) for i in instances]),
            )
            record(f"overview columns, {name}", timed(lambda t=t: t.columns("steps", OVERVIEW)))
            record(
                f"one step's rows (explain_at), {name}",
                timed(lambda t=t: t.table("steps", instances[0], 5, 5)),
            )
    for name, seconds in results.items():
        print(
            f"{name:48s} median {statistics.median(seconds):7.3f} s  (all: "
            + ", ".join(f"{s:.3f}" for s in seconds)
            + ")"
        )
    print(f"block size {checked_parts.BLOCK // 1024} KiB")


if __name__ == "__main__":
    main()
