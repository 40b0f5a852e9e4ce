"""Generate large seeded traces (Parquet and CSV) for the pipeline benchmark, vectorized.

Two scenarios with the same instances, channels and row count: `valve` (explicit watermarks and
statuses, a few records: the valve-only path) and `window` (records only, their watermarks made by a
per-record generator with 2 s out-of-orderness, counted per key in tumbling 60 s windows: the
general path through generator, valve, timers and window operator).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq


def generate_table(rows: int, instances: int, channels: int, seed: int) -> pa.Table:
    """Mostly rising watermarks (jitter makes some equal or falling), 3 % statuses, 5 % records."""
    rng = np.random.default_rng(seed)
    instance = rng.integers(0, instances, rows)
    channel = rng.integers(0, channels, rows)
    roll = rng.random(rows)
    is_status = roll < 0.03
    is_record = (roll >= 0.03) & (roll < 0.08)
    is_watermark = roll >= 0.08
    time_ms = 1_700_000_000_000 + np.arange(rows, dtype=np.int64) + rng.integers(-5_000, 5_000, rows)
    kind = np.where(is_watermark, "watermark", np.where(is_record, "record", "status"))
    status = np.where(roll < 0.015, "IDLE", "ACTIVE")
    return pa.table(
        {
            "instance": pa.array(instance.astype(str)),
            "channel": pa.array(channel, pa.int64()),
            "kind": pa.array(kind),
            "watermark_ms": pa.array(time_ms, pa.int64(), mask=~is_watermark),
            "status": pa.array(status, pa.string(), mask=~is_status),
            "event_ms": pa.array(time_ms, pa.int64(), mask=~is_record),
            "key": pa.array(np.char.add("k", (instance % 7).astype(str)), pa.string(), mask=~is_record),
        }
    )


def generate_window_table(rows: int, instances: int, channels: int, seed: int) -> pa.Table:
    """Records only: event times rise with the row number, jittered by up to ±1.5 s (some late)."""
    rng = np.random.default_rng(seed)
    instance = rng.integers(0, instances, rows)
    event_ms = 1_700_000_000_000 + np.arange(rows, dtype=np.int64) + rng.integers(-1_500, 1_500, rows)
    return pa.table(
        {
            "instance": pa.array(instance.astype(str)),
            "channel": pa.array(rng.integers(0, channels, rows), pa.int64()),
            "kind": pa.array(np.full(rows, "record")),
            "event_ms": pa.array(event_ms, pa.int64()),
            "key": pa.array(np.char.add("k", rng.integers(0, 7, rows).astype(str)), pa.string()),
        }
    )


WINDOW_CONFIG = (
    '"generator": {"out_of_orderness_ms": 2000}, '
    '"operator": {"type": "window", "size_ms": 60000, "aggregate": "count"}'
)
SCENARIOS = ("valve", "window")


def write_trace(
    out_dir: Path,
    rows: int,
    instances: int = 1000,
    channels: int = 8,
    seed: int = 1,
    scenario: str = "valve",
) -> dict[str, Path]:
    """Write (or reuse) trace.parquet, trace.csv and the config pinning the channel count."""
    out_dir.mkdir(parents=True, exist_ok=True)
    prefix = "trace" if scenario == "valve" else scenario
    stem = f"{prefix}-{rows}-{instances}x{channels}-s{seed}"
    paths = {
        "parquet": out_dir / f"{stem}.parquet",
        "csv": out_dir / f"{stem}.csv",
        "config": out_dir / f"{stem}.json",
    }
    if not all(p.is_file() for p in paths.values()):
        generate = generate_table if scenario == "valve" else generate_window_table
        table = generate(rows, instances, channels, seed)
        pq.write_table(table, paths["parquet"], row_group_size=1_000_000)
        pacsv.write_csv(table, paths["csv"], pacsv.WriteOptions(quoting_style="none"))
        extra = "" if scenario == "valve" else ", " + WINDOW_CONFIG
        paths["config"].write_text(f'{{"name": "benchmark", "channels": {{"0": {channels}}}{extra}}}\n')
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--instances", type=int, default=1000)
    parser.add_argument("--channels", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("/tmp/wmviz-bench"))
    parser.add_argument("--scenario", choices=SCENARIOS, default="valve")
    args = parser.parse_args()
    paths = write_trace(args.out, args.rows, args.instances, args.channels, args.seed, args.scenario)
    for name, path in paths.items():
        print(f"{name}: {path} ({path.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
