"""`python -m wmviz record` and `python -m wmviz import prometheus|kafka`: argument wiring."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from wmviz.cli.errors import BadInput
from wmviz.cli.options import poll_options, rest_client
from wmviz.core.errors import BadValue
from wmviz.disk import GrowingFile, OutputError, refuse_overlap
from wmviz.record.output import (
    RecordingFile,
    bounded_rows,
    config_beside,
    duration_option_ms,
    outputs_of,
    write_rows,
)
from wmviz.record.poller import Poller
from wmviz.record.rest import JobView, RecordError, RestClient, resolve, wall_clock_ms
from wmviz.record.samples import TraceBuilder, rows_of
from wmviz.trace.errors import TraceValidationError
from wmviz.trace.timecells import ascii_int

GIVE_UP_AFTER = 30
"""Polls in a row that may fail before a recording ends: a JobManager's failover takes seconds to
a minute, an endpoint gone for good must not be polled forever."""
OUT_HELP = (
    "the trace to write, in the format its extension names: .jsonl, .csv (its config beside it in "
    "NAME.config.json) or .parquet"
)


def add_record_parser(sub) -> None:
    """The `record` subcommand."""
    p = sub.add_parser("record", help="record a trace from a running Flink job's REST API")
    p.add_argument("--rest", required=True, help="the JobManager's REST endpoint, http://host:8081")
    p.add_argument("--job", required=True, help="the job id")
    p.add_argument(
        "--vertex",
        help="the operator's vertex: its id, name or a unique part of it; without it, every vertex "
        "of the job into a job recording (.json)",
    )
    p.add_argument("--every", default="1s", help="sampling interval (default 1s)")
    p.add_argument(
        "--for", dest="duration", help="stop after this long (default: until the job ends or Ctrl-C)"
    )
    p.add_argument(
        "--idleness", help="the sources' idleness timeout (withIdleness); infers IDLE from sourceIdleTime"
    )
    p.add_argument(
        "--watermark-interval", default="200ms", help="pipeline.auto-watermark-interval (default 200ms)"
    )
    p.add_argument("--samples", type=Path, help="also write the raw samples (JSON Lines) here")
    p.add_argument(
        "--timeout",
        default="30s",
        help="the most one request to the JobManager may take, from connecting to the answer's last "
        "byte (default 30s); a request that fails so is asked twice more",
    )
    p.add_argument(
        "--give-up-after",
        type=int,
        default=GIVE_UP_AFTER,
        metavar="POLLS",
        help=f"end the recording when this many polls in a row fail (default {GIVE_UP_AFTER})",
    )
    p.add_argument(
        "--out",
        type=Path,
        required=True,
        help=OUT_HELP + "; .jsonl and .csv grow by whole samples, .parquet is written when the "
        "recording ends (Ctrl-C included; a killed recording leaves the file there as it was)",
    )
    add_job_format(p)


def cmd_record(args: argparse.Namespace) -> None:
    """Poll the job and write the trace as samples arrive; progress on stderr."""
    if args.vertex is None:
        from wmviz.cli.record_job import record_job

        record_job(args)
        return
    if args.format is not None:
        raise BadInput(f"--format {args.format}: is for a whole-job recording (without --vertex)")
    check_outputs(args.out, [], [("--samples", args.samples)])
    every_ms, until_ms, idleness, client, view = vertex_options(args)
    topology = view.topology
    builder = TraceBuilder(topology)
    inferred = (
        f"IDLE inferred from sourceIdleTime ≥ {topology.idle_after_ms} ms" if idleness else "no IDLE inferred"
    )
    description = (
        f"Recorded from {args.rest} job {args.job}: {topology.vertex!r} ({topology.parallelism} subtasks) "
        f"fed by {topology.upstream!r} ({topology.upstream_parallelism} subtasks, {topology.edge} edge), "
        f"every {args.every}; {inferred}. reported_ms is the operator's own currentInputWatermark."
    )
    out = RecordingFile(
        args.out, builder.config(f"Recorded: {topology.vertex}", description), builder.PAYLOAD_COLUMNS
    )
    try:
        samples = GrowingFile(args.samples) if args.samples else None
    except OutputError:
        out.close()
        raise
    poller = Poller(client, view)
    print(
        f"recording {topology.vertex!r} ← {topology.upstream!r} ({topology.edge}, "
        f"{topology.channel_count} channels per subtask) every {every_ms} ms into {args.out}",
        file=sys.stderr,
    )
    loop = SampleLoop(poller, builder, out, samples, args.give_up_after)
    try:
        loop.run(every_ms, until_ms)
    except KeyboardInterrupt:
        print("interrupted; every sample so far is in the trace", file=sys.stderr)
    except OutputError as err:
        if out.fmt != "parquet" and builder.samples > 1:
            raise OutputError(f"{err}; {args.out} holds the whole samples taken before") from None
        raise
    finally:
        written = out.close()
        if samples is not None:
            samples.close()
    if not written:
        print(f"{args.out}: no sample was taken; nothing written (a file already there is as it was)")
    else:
        print(
            f"{args.out}: {builder.samples} samples, {out.rows} rows, {poller.epoch} restarts, "
            f"{poller.unsettled} unsettled samples{config_note(args.out)}"
            + "".join(f"; {note}" for note in poller.notes)
        )
    if loop.ended is not None:
        kept = (
            f"{args.out} holds the {builder.samples} whole samples taken before"
            if written
            else "nothing written"
        )
        raise BadInput(f"the recording ends: {loop.ended}; {kept}")


class SampleLoop:
    """Polls every `every_ms` until the job ends, the time is up, or the endpoint fails for good."""

    def __init__(
        self, poller: Poller, builder: TraceBuilder, out: RecordingFile, samples, give_up: int
    ) -> None:
        self.poller, self.builder, self.out, self.samples = poller, builder, out, samples
        self.give_up = max(1, give_up)
        self.failed = 0
        self.ended: str | None = None
        """Why the recording ended before the job did (the endpoint), else None."""
        self.started = time.monotonic()

    def run(self, every_ms: int, until_ms: int | None) -> None:
        while until_ms is None or (time.monotonic() - self.started) * 1000 < until_ms:
            tick = time.monotonic()
            if not self.poll():
                return
            time.sleep(max(0.0, every_ms / 1000 - (time.monotonic() - tick)))

    def poll(self) -> bool:
        """One poll; False when the recording ends."""
        poller = self.poller
        noted = len(poller.notes)
        try:
            sample = poller.sample(wall_clock_ms)
        except RecordError as err:
            if poller.client.time_up():
                return False  # a sample cut short by the end of --for is the recording's end, not a failure
            self.failed += 1
            if err.final or self.failed >= self.give_up:
                self.ended = (
                    str(err) if err.final else f"{self.failed} polls in a row failed, the last: {err}"
                )
                return False
            print(
                f"sample skipped ({self.failed} of {self.give_up} failures in a row): {err}", file=sys.stderr
            )
            return True
        self.failed = 0
        for note in poller.notes[noted:]:
            print(f"note: {note}", file=sys.stderr)
        self.builder.topology = poller.view.topology
        if sample is not None:
            self.out.write(self.builder.add(sample))
            if self.samples is not None:
                self.samples.add((json.dumps(sample_json(sample)) + "\n").encode("utf-8"))
            print(progress_line(self.builder, poller, self.started), file=sys.stderr)
        elif poller.over:
            print(f"the job is {poller.state}; recording ends", file=sys.stderr)
            return False
        else:
            print(f"the job is {poller.state}; waiting", file=sys.stderr)
        return True


def vertex_options(args: argparse.Namespace) -> tuple[int, int | None, int | None, RestClient, JobView]:
    """`record --vertex`'s options read and its vertex found: (--every, --for, --idleness in ms,
    the client, the vertex's view); a value or a job the options cannot name exits 2."""
    options = poll_options(args)
    client = rest_client(args)
    view = resolve(client, args.job, args.vertex, options.idleness_ms, options.interval_ms)
    return options.every_ms, options.until_ms, options.idleness_ms, client, view


def whole_number(text: str) -> int:
    """An argument that is a count: ASCII digits only, as the trace readers read numbers."""
    try:
        return ascii_int(text)
    except BadValue as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def add_job_format(p: argparse.ArgumentParser) -> None:
    """`--format` of a whole-job recording (`wmviz.cli.record_job.job_format`)."""
    p.add_argument(
        "--format",
        choices=("json", "columnar"),
        help="a whole-job recording's form: json (one readable object, --out .json) or columnar (an "
        "Arrow file read lazily, for thousands of subtasks, --out .arrow); default: --out's extension",
    )


def check_outputs(out: Path, reads: list, more: list) -> None:
    """Before anything is read or written: `--out` names a format, is not a folder, and no output
    is an input or another output (exit 2 naming both)."""
    for label, path in [("--out", out), *more]:
        if path is not None and path.is_dir():
            raise BadInput(f"{label} {path}: is a folder, not a file")
        if path is not None and not path.absolute().parent.is_dir():
            raise BadInput(f"{label} {path}: cannot be written (no such folder: {path.parent})")
    refuse_overlap(reads, [*outputs_of(out), *more])


def config_note(out: Path) -> str:
    """What the summary line adds for a CSV trace: where its config went."""
    if out.suffix.lower() != ".csv":
        return ""
    return f"; its config is in {config_beside(out)} (give it with --config)"


def write_import(out: Path, config: dict, rows: list, source: Path) -> None:
    """Write an imported trace, whole or not at all."""
    try:
        write_rows(out, config, rows)
    except TraceValidationError as err:
        raise BadInput(f"{err}\nthe trace built from {source} is not valid; nothing was written") from None


def progress_line(builder: TraceBuilder, poller: Poller, started: float) -> str:
    """One stderr line per sample."""
    elapsed = time.monotonic() - started
    return f"[record] {elapsed:6.1f} s: sample {builder.samples}, {builder.seq} rows, job {poller.state}"


def sample_json(sample) -> dict:
    """A sample as one JSON object (maps keyed by subtask)."""
    return {
        "time_ms": sample.time_ms,
        "epoch": sample.epoch,
        "upstream_watermark": sample.upstream_watermark,
        "upstream_idle_ms": sample.upstream_idle_ms,
        "reported": sample.reported,
        "upstream_finished": sorted(sample.upstream_finished),
    }


def add_import_parser(sub) -> None:
    """The `import` subcommand and its routes."""
    p = sub.add_parser("import", help="build a trace from metrics history or a topic dump")
    routes = p.add_subparsers(dest="route", required=True)
    prom = routes.add_parser("prometheus", help="a Prometheus query_range result (JSON) of Flink's metrics")
    prom.add_argument("file", type=Path, help="the query_range response body (JSON)")
    prom.add_argument("--vertex", help="the operator's task_name (or a unique part); default: the only one")
    prom.add_argument("--upstream", help="the upstream task_name (or a unique part); default: the only other")
    prom.add_argument(
        "--edge", choices=["all-to-all", "forward"], default="all-to-all", help="the input edge"
    )
    prom.add_argument("--idleness", help="the sources' idleness timeout; infers IDLE from sourceIdleTime")
    prom.add_argument("--watermark-interval", default="200ms", help="pipeline.auto-watermark-interval")
    prom.add_argument(
        "--plan", type=Path, help="the job's /jobs/<id>/plan (JSON): import the whole job as a job recording"
    )
    prom.add_argument(
        "--out", type=Path, required=True, help=OUT_HELP + "; with --plan, the job recording (.json)"
    )
    add_job_format(prom)
    _IMPORT_ROUTES["prometheus"] = cmd_import_prometheus
    add_kafka_route(routes)


_IMPORT_ROUTES: dict = {}


def cmd_import(args: argparse.Namespace) -> None:
    """Run the chosen import route."""
    _IMPORT_ROUTES[args.route](args)


def cmd_import_prometheus(args: argparse.Namespace) -> None:
    """Samples from the query_range matrix, through the recorder's builder, into a trace."""
    from wmviz.record.prometheus import load_series, samples_of

    if not args.file.is_file():
        raise BadInput(f"{args.file}: no such file")
    if args.plan is not None:
        from wmviz.cli.record_job import import_prometheus_job

        import_prometheus_job(args)
        return
    if args.format is not None:
        raise BadInput(f"--format {args.format}: is for a whole-job recording (with --plan)")
    check_outputs(args.out, [("the export", args.file)], [])
    idleness = duration_option_ms(args.idleness, "--idleness") if args.idleness else None
    interval = duration_option_ms(args.watermark_interval, "--watermark-interval")
    topology, samples = samples_of(
        load_series(args.file), args.vertex, args.upstream, args.edge, idleness, interval
    )
    builder = TraceBuilder(topology)
    description = (
        f"Imported from the Prometheus range query {args.file.name}: {topology.vertex!r} "
        f"({topology.parallelism} subtasks) fed by {topology.upstream!r} "
        f"({topology.upstream_parallelism} subtasks, {topology.edge} edge). reported_ms is the "
        "operator's own currentInputWatermark."
    )
    rows = bounded_rows(rows_of(builder, samples), args.file.name)
    write_import(args.out, builder.config(f"Imported: {topology.vertex}", description), rows, args.file)
    print(f"{args.out}: {builder.samples} samples, {len(rows)} rows{config_note(args.out)}")


def add_kafka_route(routes) -> None:
    """`import kafka`: a partition/offset/timestamp dump."""
    kafka = routes.add_parser("kafka", help="a topic dump (kcat -f '%%p %%o %%T\\n') as per-split generators")
    kafka.add_argument("file", type=Path, help="the dump: partition offset timestamp [event_time] per line")
    kafka.add_argument("--parallelism", type=whole_number, required=True, help="the source's parallelism")
    kafka.add_argument("--out-of-orderness", required=True, help="forBoundedOutOfOrderness, e.g. 5s")
    kafka.add_argument("--idleness", help="withIdleness timeout, e.g. 1m")
    kafka.add_argument("--topic", help="the topic (needed unless the dump names it)")
    kafka.add_argument(
        "--partitions", type=whole_number, help="the topic's partition count (default: as seen)"
    )
    kafka.add_argument("--watermark-interval", default="200ms", help="pipeline.auto-watermark-interval")
    kafka.add_argument("--out", type=Path, required=True, help=OUT_HELP)
    _IMPORT_ROUTES["kafka"] = cmd_import_kafka


def cmd_import_kafka(args: argparse.Namespace) -> None:
    """Read the dump, assign partitions as KafkaSourceEnumerator does, write the trace."""
    from wmviz.record.kafka import KafkaImport, build_trace, read_dump

    if not args.file.is_file():
        raise BadInput(f"{args.file}: no such file")
    if args.parallelism < 1:
        raise BadInput("--parallelism must be at least 1")
    if args.partitions is not None and args.partitions < 1:
        raise BadInput("--partitions must be at least 1")
    check_outputs(args.out, [("the dump", args.file)], [])
    options = KafkaImport(
        parallelism=args.parallelism,
        out_of_orderness_ms=duration_option_ms(args.out_of_orderness, "--out-of-orderness"),
        idleness_ms=duration_option_ms(args.idleness, "--idleness") if args.idleness else None,
        topic=args.topic,
        partitions=args.partitions,
        interval_ms=duration_option_ms(args.watermark_interval, "--watermark-interval"),
    )
    if options.idleness_ms == 0 or options.interval_ms == 0:
        raise BadInput("--idleness and --watermark-interval must be positive")
    config, rows = build_trace(read_dump(args.file), options, args.file.name)
    write_import(args.out, config, rows, args.file)
    splits = config["generator"]["splits"]
    print(
        f"{args.out}: {len(rows)} rows; {sum(len(v) for v in splits.values())} splits over "
        f"{args.parallelism} subtasks: "
        + "; ".join(f"subtask {s}: {', '.join(ids)}" for s, ids in splits.items())
        + config_note(args.out)
    )
