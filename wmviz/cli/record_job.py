"""The whole-job routes of `record` and `import prometheus`: they write a job recording (.json)."""

from __future__ import annotations

import argparse
import sys
import time
from contextlib import suppress
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
    """`record --rest URL --job ID --out OUT.json` without --vertex: every vertex of the job,
    appended to OUT.json sample by sample (`wmviz.record.job_append`)."""
    from wmviz.record.job_append import JobWriter
    from wmviz.record.rest_job import JobPoller

    check_out(args.out, [])
    job_format(args)
    if getattr(args, "samples", None) is not None:
        raise BadInput(
            f"--samples {args.samples}: the raw samples are written for one vertex (--vertex); a whole-job "
            "recording holds every sample itself"
        )
    if job_format(args):
        raise BadInput(
            f"--out {args.out}: record appends each sample to a JSON recording while the job runs; "
            "record to .json, then `wmviz convert` it to the columnar form"
        )
    options = poll_options(args)
    poller = JobPoller.start(rest_client(args), args.job, options.idleness_ms, options.interval_ms)
    poller.rec.source = f"rest {args.rest}"
    try:
        writer = JobWriter(poller.rec, args.out)
    except (JobFormatError, OutputError) as err:
        raise BadInput(f"{err}\nnothing was written") from None
    every_ms = options.every_ms
    print(f"recording every vertex of job {args.job} every {every_ms} ms into {args.out}", file=sys.stderr)
    try:
        ended = JobLoop(poller, writer, max(1, args.give_up_after)).run(every_ms, options.until_ms)
    except OutputError as err:
        raise BadInput(f"{err}; {args.out} holds every sample written before") from None
    finally:
        with suppress(OutputError):
            writer.close()
    print(written(writer, args.out))
    if ended is not None:
        raise BadInput(f"the recording ends: {ended}; {args.out} holds every sample taken before")


def written(writer, path: Path) -> str:
    """One line: what the appended recording holds."""
    span = (writer.last_ms - writer.first_ms) / 1000 if writer.samples else 0.0
    return (
        f"{path}: {len(writer.vertices)} vertices, {len(writer.edges)} edges, {len(writer.keys)} series, "
        f"{writer.samples} samples over {span:.0f} s, {writer.points} points"
        + (f", {writer.late} started late" if writer.late else "")
    )


class JobLoop:
    """Samples a job at a fixed rate into its writer until the job ends, the time is up, or the
    endpoint fails for good.

    Each sample is due a period after the last was due. One that starts more than
    `late_tolerance_ms` after it was due (the last took longer than a period: a slow JobManager or
    disk) is written with `late_ms` and said on stderr, and the schedule goes on from its start:
    periods missed are not made up in a burst, so a slow endpoint lowers the rate, it does not
    pile samples up."""

    def __init__(self, poller, writer, give_up: int) -> None:
        self.poller = poller
        self.writer = writer
        self.give_up = give_up
        self.failed = 0
        self.notes = len(poller.rec.notes)
        """How many of the poller's notes the writer holds (those before it are in the header)."""

    def run(self, every_ms: int, until_ms: int | None) -> str | None:
        """Sample until the end; the reason the endpoint failed for good, or None."""
        started = time.monotonic()
        due = started
        try:
            while until_ms is None or (time.monotonic() - started) * 1000 < until_ms:
                now = time.monotonic()
                late_ms = round((now - due) * 1000)
                due = max(due, now)  # a late start: the schedule goes on from it, nothing made up
                ended = self.once(started, late_ms if late_ms > late_tolerance_ms(every_ms) else None)
                if ended is not None or self.poller.over:
                    return ended
                due += every_ms / 1000
                time.sleep(max(0.0, due - time.monotonic()))
        except KeyboardInterrupt:
            print("interrupted; every sample so far is in the recording", file=sys.stderr)
        return None

    def once(self, started: float, late_ms: int | None) -> str | None:
        """Take and append one sample (or skip it, saying why); the reason to stop, or None."""
        from wmviz.record.rest import RecordError

        tick = time.monotonic()
        try:
            taken = self.poller.take()
            self.failed = 0
        except RecordError as err:
            self.write_notes()
            if self.poller.client.time_up():
                return None  # a sample cut short by the end of --for ends the recording
            self.failed += 1
            if err.final or self.failed >= self.give_up:
                why = str(err) if err.final else f"{self.failed} polls in a row failed, the last: {err}"
                if not any(why.startswith(note) for note in self.poller.rec.notes):
                    self.writer.note(f"the recording ended before the job: {why}")
                return why
            print(
                f"sample skipped ({self.failed} of {self.give_up} failures in a row): {err}", file=sys.stderr
            )
            return None
        if self.poller.over:
            print(f"the job is {self.poller.state}; recording ends", file=sys.stderr)
        if taken is not None:
            self.writer.sample(*taken, late_ms=late_ms)
            lateness = f" ({late_ms} ms late)" if late_ms else ""
            print(
                f"[record] {tick - started:6.1f} s: sample {self.poller.samples}{lateness}", file=sys.stderr
            )
        self.write_notes()
        return None

    def write_notes(self) -> None:
        """Append the poller's notes the file does not hold yet (a rescale's)."""
        for note in self.poller.rec.notes[self.notes :]:
            self.writer.note(note)
        self.notes = len(self.poller.rec.notes)


def late_tolerance_ms(every_ms: int) -> int:
    """How late a sample may start before it is said to be late: a tenth of the period (the
    scheduler's and the clock's jitter), at least 10 ms."""
    return max(10, every_ms // 10)
