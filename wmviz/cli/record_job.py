"""The whole-job routes of `record` and `import prometheus`: they write a job recording (.json)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from wmviz.cli.errors import BadInput
from wmviz.cli.options import poll_options, rest_client
from wmviz.disk.atomic import OutputError, cannot_write
from wmviz.disk.overlap import Named, refuse_overlap
from wmviz.record.job import JobFormatError, JobRecording, write_recording
from wmviz.record.job_columnar import ColumnarSeries
from wmviz.record.job_inputs import assign_inputs
from wmviz.record.output import duration_option_ms

SUFFIXES = {"json": ".json", "columnar": ".arrow"}


def job_format(args: argparse.Namespace) -> bool:
    """Whether the job recording is written columnar: `--format`, else --out's extension (.arrow);
    the two must agree, so a file's name says which form it holds."""
    suffix = args.out.suffix.lower()
    named = getattr(args, "format", None) or ("columnar" if suffix == ".arrow" else "json")
    if suffix != SUFFIXES[named]:
        raise BadInput(f"--out {args.out}: a {named} job recording is written as {SUFFIXES[named]}")
    return named == "columnar"


def check_out(path: Path, reads: list[Named]) -> None:
    """--out must name a .json (or, columnar, .arrow) file, and none the command reads."""
    if path.suffix.lower() not in SUFFIXES.values():
        raise BadInput(f"--out {path}: a job recording is written as .json (or columnar, as .arrow)")
    if path.is_dir():
        raise BadInput(f"--out {path}: is a folder, not a file")
    try:
        refuse_overlap(reads, [("--out", path)])
    except OutputError as err:
        raise BadInput(str(err)) from None


def save(rec: JobRecording, path: Path, columnar: bool = False) -> None:
    """Write the recording, or a one-line error (exit 2). Every write first reads which input each
    edge feeds from the values taken so far (the plan cannot say; `wmviz.record.job_inputs`)."""
    assign_inputs(rec)
    try:
        write_recording(rec, path, columnar)
    except JobFormatError as err:
        raise BadInput(
            f"{err}\nthe recording built is not one wmviz can read back; nothing was written"
        ) from None
    except OutputError as err:
        raise BadInput(str(err)) from None
    except OSError as err:
        raise BadInput(str(cannot_write(path, err))) from None


def summary(rec: JobRecording, path: Path) -> str:
    """One line: what the recording holds."""
    times = rec.times()
    points = (
        rec.series.points if isinstance(rec.series, ColumnarSeries) else sum(map(len, rec.series.values()))
    )
    span = (times[-1] - times[0]) / 1000 if times else 0.0
    return (
        f"{path}: {len(rec.vertices)} vertices, {len(rec.edges)} edges, {len(rec.series)} series, "
        f"{len(times)} samples over {span:.0f} s, {points} points"
        + "".join(f"; {note}" for note in rec.notes)
    )


def import_prometheus_job(args: argparse.Namespace) -> None:
    """`import prometheus FILE --plan PLAN --out OUT.json`."""
    from wmviz.record.prometheus import load_series
    from wmviz.record.prometheus_job import job_of

    check_out(args.out, [("the export", args.file), ("--plan", args.plan)])
    job_format(args)
    if not args.plan.is_file():
        raise BadInput(f"--plan {args.plan}: no such file")
    idleness = duration_option_ms(args.idleness, "--idleness") if args.idleness else None
    interval = duration_option_ms(args.watermark_interval, "--watermark-interval")
    rec = job_of(load_series(args.file), args.plan, idleness, interval, f"prometheus {args.file.name}")
    save(rec, args.out, job_format(args))
    print(summary(rec, args.out))


def record_job(args: argparse.Namespace) -> None:
    """`record --rest URL --job ID --out OUT.json` without --vertex: every vertex of the job."""
    from wmviz.record.rest_job import JobPoller

    check_out(args.out, [])
    job_format(args)
    if getattr(args, "samples", None) is not None:
        raise BadInput(
            f"--samples {args.samples}: the raw samples are written for one vertex (--vertex); a whole-job "
            "recording holds every sample itself"
        )
    options = poll_options(args)
    poller = JobPoller.start(rest_client(args), args.job, options.idleness_ms, options.interval_ms)
    every_ms, until_ms = options.every_ms, options.until_ms
    rec = poller.rec
    rec.source = f"rest {args.rest}"
    print(f"recording every vertex of job {args.job} every {every_ms} ms into {args.out}", file=sys.stderr)
    ended = poll_job(poller, args, every_ms, until_ms)
    print(summary(rec, args.out))
    if ended is not None:
        raise BadInput(f"the recording ends: {ended}; {args.out} holds every sample taken before")


def poll_job(poller, args: argparse.Namespace, every_ms: int, until_ms: int | None) -> str | None:
    """Sample until the job ends or the time is up (None), or the endpoint fails for good (why)."""
    from wmviz.record.rest import RecordError

    rec = poller.rec
    started = time.monotonic()
    last_save = started
    failed = 0
    try:
        while until_ms is None or (time.monotonic() - started) * 1000 < until_ms:
            tick = time.monotonic()
            try:
                taken = poller.sample()
                failed = 0
            except RecordError as err:
                if poller.client.time_up():
                    break  # a sample cut short by the end of --for is the recording's end, not a failure
                failed += 1
                if err.final or failed >= max(1, args.give_up_after):
                    why = str(err) if err.final else f"{failed} polls in a row failed, the last: {err}"
                    if not any(why.startswith(note) for note in rec.notes):
                        rec.notes.append(f"the recording ended before the job: {why}")
                    return why
                print(
                    f"sample skipped ({failed} of {args.give_up_after} failures in a row): {err}",
                    file=sys.stderr,
                )
                taken = False
            if poller.over:
                print(f"the job is {poller.state}; recording ends", file=sys.stderr)
                break
            if taken:
                print(f"[record] {tick - started:6.1f} s: sample {poller.samples}", file=sys.stderr)
            # The file is rewritten whole (atomically) every few seconds, so an interrupted
            # recording keeps what it took.
            if time.monotonic() - last_save >= 5:
                save(rec, args.out, job_format(args))
                last_save = time.monotonic()
            time.sleep(max(0.0, every_ms / 1000 - (time.monotonic() - tick)))
    except KeyboardInterrupt:
        print("interrupted; every sample so far is in the recording", file=sys.stderr)
    finally:
        save(rec, args.out, job_format(args))
    return None
