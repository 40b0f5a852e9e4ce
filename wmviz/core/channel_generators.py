"""Which generator a generated channel gets, by the config's `style` (trace-format.md §2, §11).

`datastream`: DataStream's bounded out-of-orderness (`generator.py`), per split on a channel that
reads splits (`splits.py`); `sql-source`: a pushed-down SQL watermark, the same readers with SQL's
generator per split (`sql_generator.py`); `sql-assigner`: SQL's separate assigner, one per channel
over all its rows (`sql_assigner.py`); `source-watermark`: none at all (the channels carry the
source's own watermark rows). The pipeline asks here, so it names no style itself.
"""

from __future__ import annotations

from collections.abc import Iterable

from wmviz.core.generator import ChannelGenerator
from wmviz.core.operator_log import GeneratorUpdate, StepEvent
from wmviz.core.scenario import GeneratorConfig
from wmviz.core.schedule import due_times, ends_of
from wmviz.core.splits import SplitReader
from wmviz.core.sql_assigner import WatermarkAssigner, assigner_timer_interval_ms
from wmviz.core.sql_generator import SqlSourceGenerator

AnyGenerator = ChannelGenerator | SplitReader | WatermarkAssigner


def makes_generators(config: GeneratorConfig | None) -> bool:
    """Whether channels without explicit watermark rows get a generator (not for SOURCE_WATERMARK())."""
    return config is not None and config.style != "source-watermark"


def channel_generator(
    config: GeneratorConfig, input_name: str, channel: int, *, own_config: bool = False
) -> AnyGenerator:
    """A channel's generator: SQL's separate assigner (style sql-assigner), a split reader if the
    config gives the channel splits, else one generator (a pushed-down SQL one for sql-source)."""
    if config.style == "sql-assigner":
        return WatermarkAssigner(channel, config)
    # The trace's one `generator` names the splits of input "0"; an input's own config (`generators`)
    # names its own input's, so each table of a join can read partitions.
    splits = config.splits_of(channel) if own_config or input_name == "0" else None
    if splits is not None:
        return SplitReader(channel, splits, config)
    if config.style == "sql-source":
        return SqlSourceGenerator(channel, config)
    return ChannelGenerator(channel, config)


def record_events(
    channel: int, generator: ChannelGenerator | WatermarkAssigner, emitted: bool
) -> list[StepEvent]:
    """What a record did to its channel's (single) generator, for the narration."""
    if isinstance(generator, WatermarkAssigner):
        return list(generator.drain_events())
    if isinstance(generator, SqlSourceGenerator):
        return [generator.update(None)]
    return [GeneratorUpdate(channel, generator.max_seen_ms, generator.candidate_watermark_ms(), emitted)]


def open_assigners(generators: Iterable[AnyGenerator], now_ms: int) -> None:
    """SQL assigners open when the processing clock first reads (the job's start is not in a trace)."""
    for generator in generators:
        if isinstance(generator, WatermarkAssigner):
            generator.open(now_ms)


def probe_times(
    config: GeneratorConfig, clock_start_ms: int, last_run_ms: int | None, now_ms: int, inclusive: bool
) -> range:
    """When the channels are probed by `now_ms`: at the multiples of the emission interval, or a SQL
    assigner's timer, every timer interval from when it opened (SQL-A8)."""
    if config.style != "sql-assigner":
        return due_times(clock_start_ms, last_run_ms, config.interval_ms, now_ms, inclusive)
    step = assigner_timer_interval_ms(config.interval_ms, config.idle_timeout_ms or 0)
    if step <= 0:
        return range(0)  # no auto-watermark interval and no idle timeout: no timer at all
    first = (clock_start_ms if last_run_ms is None else last_run_ms) + step
    return range(first, (now_ms if inclusive else now_ms - 1) + 1, step)


def assigner_probes(due: range, generators: list[AnyGenerator]) -> list[int]:
    """Over a long quiet clock jump, the timer times at which some SQL assigner can change (SQL-A4,
    SQL-A5), besides the first two and the last."""
    times = set(ends_of(due))
    for generator in generators:
        assert isinstance(generator, WatermarkAssigner)
        times |= generator.relevant_probes(due[0], due[-1])
    return sorted(times)
