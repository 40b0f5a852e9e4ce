"""The polling options `record` takes (`--every`, `--for`, `--idleness`, `--watermark-interval`),
read once for both of its routes: one vertex and the whole job."""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

from wmviz.core.errors import BadValue
from wmviz.record.output import duration_option_ms
from wmviz.record.rest import RestClient

MIN_EVERY_MS = 10
"""The shortest poll interval: a JobManager answers a metrics request in milliseconds, not less."""


@dataclass(frozen=True)
class PollOptions:
    every_ms: int
    until_ms: int | None
    """How long to record (`--for`); None: until the job ends or Ctrl-C."""
    idleness_ms: int | None
    interval_ms: int


def poll_options(args: argparse.Namespace) -> PollOptions:
    """The options in milliseconds; ValueError naming the option for a value that is none."""
    every_ms = duration_option_ms(args.every, "--every")
    if every_ms < MIN_EVERY_MS:
        raise BadValue(f"--every must be at least {MIN_EVERY_MS}ms")
    return PollOptions(
        every_ms=every_ms,
        until_ms=duration_option_ms(args.duration, "--for") if args.duration else None,
        idleness_ms=duration_option_ms(args.idleness, "--idleness") if args.idleness else None,
        interval_ms=duration_option_ms(args.watermark_interval, "--watermark-interval"),
    )


def rest_client(args: argparse.Namespace) -> RestClient:
    """The client of `--rest`, bounded by `--timeout`, and with `--for` by the recording's end: no
    request (finding the job's vertices included) outlives the time the recording was given."""
    deadline_ms = duration_option_ms(args.timeout, "--timeout")
    if deadline_ms < 100:
        raise BadValue("--timeout must be at least 100ms")
    if args.give_up_after < 1:
        raise BadValue("--give-up-after must be at least 1")
    client = RestClient(args.rest, timeout_s=min(10.0, deadline_ms / 1000), deadline_s=deadline_ms / 1000)
    if args.duration:
        client.stop_at = time.monotonic() + duration_option_ms(args.duration, "--for") / 1000
    return client
