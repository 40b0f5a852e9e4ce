"""The scenario config (trace-format.md §3): parse, validate and write it back.

Every field has a default so a bare trace runs. Validation reports every bad field at once, and an
unknown key is an error rather than ignored, so a typo such as `sizems` cannot silently fall back
to a default.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import fields, replace
from typing import Any

from wmviz.core.budgets import MAX_WINDOWS_PER_RECORD, windows_per_record_reason
from wmviz.core.scenario import GeneratorConfig, OperatorConfig, ScenarioConfig
from wmviz.core.types import Profile, fits_long
from wmviz.core.windows import offset_config_problem, sliding_config_problem
from wmviz.trace.errors import IssueCollector
from wmviz.trace.quote import show

OPERATOR_TYPES = ("none", "window", "interval_join")
EMIT_MODES = ("per-record", "periodic")
AGGREGATES = ("list", "count", "sum", "min", "max")
JOIN_TYPES = ("inner", "left", "right", "full")
TIME_MODES = ("rowtime", "proctime")
RESUME_MODES = ("eager", "flip27-released")  # windows-and-generation.md §3
MAX_CHANNELS = int(os.environ.get("WMVIZ_MAX_CHANNELS", "32768"))
"""The most channels a valve may have: Flink's own ceiling on parallelism (32,768, its largest max
parallelism), so no real upstream exceeds it, and a 44-byte config cannot make wmviz allocate for
two billion channels. Settable with WMVIZ_MAX_CHANNELS."""
MAX_CONFIG_BYTES = int(os.environ.get("WMVIZ_MAX_CONFIG_KB", "256")) * 1024
"""The largest config (a file, a JSON Lines config line, Parquet metadata) wmviz reads."""

_TOP_FIELDS = ("name", "description", "profile", "channels", "generator", "operator")
_GENERATOR_FIELDS = ("out_of_orderness_ms", "emit", "interval_ms", "idle_timeout_ms", "resume", "splits")
MAX_SPLITS = 100_000
"""The most splits a config may name in all (a Kafka topic has at most tens of thousands)."""
_OPERATOR_FIELDS = {
    "none": ("type",),
    "window": (
        "type",
        "size_ms",
        "slide_ms",
        "offset_ms",
        "session_gap_ms",
        "allowed_lateness_ms",
        "aggregate",
    ),
    "interval_join": (
        "type",
        "join",
        "lower_ms",
        "upper_ms",
        "early_fire_delay_ms",
        "time_mode",
        "min_cleanup_interval_ms",
        "join_time",
        "all_idle_flush",
    ),
}
_REQUIRED_OPERATOR_FIELDS = {"interval_join": ("lower_ms", "upper_ms")}
"""A window needs `size_ms` or `session_gap_ms` (`_window_shape`)."""


def channel_budget_reason(count: int) -> str:
    """A channel count (or index + 1) over MAX_CHANNELS."""
    return (
        f"{count:,} channels are more than a valve may have here: {MAX_CHANNELS:,} "
        "(Flink's largest parallelism; WMVIZ_MAX_CHANNELS)"
    )


def input_names(operator_type: str) -> tuple[str, ...]:
    """The `input` names a trace may use for an operator type (after `normalize_input`)."""
    return ("L", "R") if operator_type == "interval_join" else ("0",)


def normalize_input(name: str, operator_type: str) -> str | None:
    """The canonical input name, or None if the operator has no such input.

    The interval join's inputs are `L` and `R`; `0`/`1` (and lower case) are accepted and mapped to
    them so the two spellings cannot split one side into two valves. Other operators have one
    input, `0`.
    """
    if operator_type == "interval_join":
        return {"l": "L", "0": "L", "r": "R", "1": "R"}.get(name.strip().lower())
    return "0" if name == "0" else None


class _ConfigParser:
    """Walks one config object, reporting every problem into a collector."""

    def __init__(self, collector: IssueCollector, row: int | None, file: str | None):
        self.collector = collector
        self.row = row
        self.file = file
        self.ok = True

    def issue(self, path: str, reason: str) -> None:
        self.ok = False
        self.collector.add(self.row, None, reason, field=path, file=self.file)

    def obj(self, value: Any, path: str) -> dict[str, Any] | None:
        if isinstance(value, dict):
            return value
        self.issue(path, f"{show(value)} is not an object")
        return None

    def unknown_keys(self, data: dict[str, Any], prefix: str, allowed: tuple[str, ...]) -> None:
        for key in data:
            if key not in allowed:
                self.issue(f"{prefix}{key}", f"unknown field; expected one of {', '.join(allowed)}")

    def text(self, data: dict[str, Any], key: str, path: str, default: str) -> str:
        value = data.get(key)
        if value is None:
            return default
        if not isinstance(value, str):
            self.issue(path, f"{show(value)} is not a string")
            return default
        return value

    def choice(
        self, data: dict[str, Any], key: str, path: str, options: tuple[str, ...], default: Any
    ) -> Any:
        value = data.get(key)
        if value is None:
            return default
        if isinstance(value, str) and value.strip().lower() in options:
            return value.strip().lower()
        self.issue(path, f"{show(value)} is not one of {', '.join(options)}")
        return default

    def integer(
        self, data: dict[str, Any], key: str, path: str, default: Any, minimum: int | None = None
    ) -> Any:
        value = data.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            self.issue(path, f"{show(value)} is not an integer (milliseconds)")
            return default
        if not fits_long(value):
            self.issue(path, f"{value} is outside the signed 64-bit range of Flink's long")
            return default
        if minimum is not None and value < minimum:
            self.issue(path, f"{value} must be {'positive' if minimum == 1 else f'>= {minimum}'}")
            return default
        return value

    def profile(self, data: dict[str, Any]) -> Profile:
        value = data.get("profile")
        if value is None:
            return Profile.FLINK_1X_2X
        try:
            if not isinstance(value, str):
                raise ValueError
            return Profile.parse(value.strip())
        except ValueError:
            self.issue("profile", f"{show(value)} is not one of {', '.join(p.value for p in Profile)}")
            return Profile.FLINK_1X_2X

    def channels(self, data: dict[str, Any], operator_type: str | None) -> dict[str, int]:
        value = data.get("channels")
        if value is None:
            return {}
        mapping = self.obj(value, "channels")
        result: dict[str, int] = {}
        for raw_name, count in (mapping or {}).items():
            name = str(raw_name)
            path = f"channels.{name}"
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                self.issue(path, f"{show(count)} is not a positive channel count")
                continue
            if count > MAX_CHANNELS:
                self.issue(path, channel_budget_reason(count))
                continue
            canonical = name if operator_type is None else normalize_input(name, operator_type)
            if canonical is None:
                valid = ", ".join(input_names(operator_type or "none"))
                self.issue(path, f"operator type {operator_type} has no input {show(name)}; expected {valid}")
            elif canonical in result:
                self.issue(path, f"input {canonical} is given twice")
            else:
                result[canonical] = count
        return result

    def generator(self, data: dict[str, Any]) -> GeneratorConfig | None:
        value = data.get("generator")
        if value is None:
            return None
        gen = self.obj(value, "generator")
        if gen is None:
            return None
        self.unknown_keys(gen, "generator.", _GENERATOR_FIELDS)
        d = GeneratorConfig()
        config = GeneratorConfig(
            out_of_orderness_ms=self.integer(
                gen, "out_of_orderness_ms", "generator.out_of_orderness_ms", d.out_of_orderness_ms, 0
            ),
            emit=self.choice(gen, "emit", "generator.emit", EMIT_MODES, d.emit),
            interval_ms=self.integer(gen, "interval_ms", "generator.interval_ms", d.interval_ms, 1),
            # Flink's withIdleness() rejects a zero or negative timeout.
            idle_timeout_ms=self.integer(gen, "idle_timeout_ms", "generator.idle_timeout_ms", None, 1),
        )
        resume = self.choice(gen, "resume", "generator.resume", RESUME_MODES, d.resume)
        return replace(config, resume=resume, splits=self.splits(gen, config.emit, resume))

    def splits(self, gen: dict[str, Any], emit: str, resume: str) -> tuple[tuple[int, tuple[str, ...]], ...]:
        """`generator.splits`: {"<channel>": ["<split id>", ...]}, a FLIP-27 reader per channel."""
        value = gen.get("splits")
        if value is None:
            return ()
        data = self.obj(value, "generator.splits")
        if data is None:
            return ()
        if emit != "periodic" or resume != "flip27-released":
            self.issue(
                "generator.splits",
                "split readers model a FLIP-27 source: they need emit periodic and resume flip27-released",
            )
            return ()
        out, total = [], 0
        for key, ids in data.items():
            path = f"generator.splits.{key}"
            if not (isinstance(key, str) and key.isdigit() and int(key) < MAX_CHANNELS):
                self.issue(path, f"{show(key)} is not a channel index")
                continue
            if not isinstance(ids, list) or not ids or not all(isinstance(i, str) and i for i in ids):
                self.issue(path, "expected a non-empty list of split ids (strings)")
                continue
            if len(set(ids)) != len(ids):
                self.issue(path, "a split is listed twice")
                continue
            total += len(ids)
            if total > MAX_SPLITS:
                self.issue("generator.splits", f"more than {MAX_SPLITS:,} splits")
                return ()
            out.append((int(key), tuple(ids)))
        return tuple(sorted(out))

    def operator(self, data: dict[str, Any]) -> tuple[OperatorConfig, str | None]:
        """The operator config and its type (None if the type itself is invalid)."""
        value = data.get("operator")
        if value is None:
            return OperatorConfig(), "none"
        op = self.obj(value, "operator")
        if op is None:
            return OperatorConfig(), None
        op_type = self.choice(op, "type", "operator.type", OPERATOR_TYPES, None)
        if op_type is None and op.get("type") is not None:
            return OperatorConfig(), None  # the bad type is reported; its fields cannot be judged
        op_type = op_type or "none"
        allowed = _OPERATOR_FIELDS[op_type]
        for key in op:
            if key in allowed:
                continue
            owners = [t for t, names in _OPERATOR_FIELDS.items() if key in names]
            if owners:
                self.issue(
                    f"operator.{key}", f"not used by operator type {op_type} (it belongs to {owners[0]})"
                )
            else:
                self.issue(f"operator.{key}", f"unknown field; expected one of {', '.join(allowed)}")
        for key in _REQUIRED_OPERATOR_FIELDS.get(op_type, ()):
            if op.get(key) is None:
                self.issue(f"operator.{key}", f"required for operator type {op_type}")
        d = OperatorConfig()
        if op_type == "window":
            window = OperatorConfig(
                type="window",
                size_ms=self.integer(op, "size_ms", "operator.size_ms", None, 1),
                slide_ms=self.integer(op, "slide_ms", "operator.slide_ms", None, 1),
                # Flink: "The allowed lateness cannot be negative."
                allowed_lateness_ms=self.integer(
                    op, "allowed_lateness_ms", "operator.allowed_lateness_ms", d.allowed_lateness_ms, 0
                ),
                aggregate=self.choice(op, "aggregate", "operator.aggregate", AGGREGATES, d.aggregate),
            )
            window = self._window_shape(op, window)
            size, slide = window.size_ms, window.slide_ms
            if size is not None and (problem := sliding_config_problem(size, slide)):
                self.issue("operator.slide_ms", problem)
            elif size is not None and slide is not None and -(-size // slide) > MAX_WINDOWS_PER_RECORD:
                self.issue("operator.slide_ms", windows_per_record_reason(-(-size // slide)))
            return window, op_type
        if op_type == "interval_join":
            delay = self.integer(op, "early_fire_delay_ms", "operator.early_fire_delay_ms", None, 1)
            time_mode = self.choice(op, "time_mode", "operator.time_mode", TIME_MODES, None)
            if time_mode is not None and op.get("early_fire_delay_ms") is None:
                # time_mode belongs to the EARLY_FIRE hint, whose delay is required (interval-join.md §2).
                self.issue("operator.time_mode", "needs operator.early_fire_delay_ms (the EARLY_FIRE delay)")
            join_time = self.choice(op, "join_time", "operator.join_time", TIME_MODES, d.join_time)
            if join_time == "proctime" and time_mode == "rowtime":
                # interval-join.md §2: the planner rejects a row-time hint on a processing-time join.
                self.issue(
                    "operator.time_mode", "rowtime is rejected on a processing-time join (join_time proctime)"
                )
            idle_flush = op.get("all_idle_flush", True)
            if not isinstance(idle_flush, bool):
                self.issue("operator.all_idle_flush", f"{show(idle_flush)} is not true or false")
                idle_flush = False
            return OperatorConfig(
                type="interval_join",
                join=self.choice(op, "join", "operator.join", JOIN_TYPES, d.join),
                lower_ms=self.integer(op, "lower_ms", "operator.lower_ms", None),
                upper_ms=self.integer(op, "upper_ms", "operator.upper_ms", None),
                early_fire_delay_ms=delay,
                time_mode=time_mode,
                min_cleanup_interval_ms=self.integer(
                    op, "min_cleanup_interval_ms", "operator.min_cleanup_interval_ms", 0, 0
                ),
                join_time=join_time,
                all_idle_flush=idle_flush,
            ), op_type
        return OperatorConfig(), op_type

    def _window_shape(self, op: dict[str, Any], window: OperatorConfig) -> OperatorConfig:
        """Session windows (`session_gap_ms`) or windows of `size_ms`, with `offset_ms` beside a size:
        the gap and offset, and the rules between the fields (issue 21)."""
        gap = self.integer(op, "session_gap_ms", "operator.session_gap_ms", None, 1)  # Flink: 0 < gap
        offset = self.integer(op, "offset_ms", "operator.offset_ms", 0)
        if op.get("session_gap_ms") is not None:
            for name in ("size_ms", "slide_ms", "offset_ms"):
                if op.get(name) is not None:
                    self.issue(f"operator.{name}", "not used by session windows (operator.session_gap_ms)")
            return replace(window, size_ms=None, slide_ms=None, session_gap_ms=gap)
        if op.get("size_ms") is None:
            self.issue("operator.size_ms", "required for operator type window (or operator.session_gap_ms)")
        elif window.size_ms is not None and offset and (problem := offset_config_problem(
            window.size_ms, window.slide_ms, offset
        )):  # fmt: skip
            self.issue("operator.offset_ms", problem)
        return replace(window, offset_ms=offset)

    def scenario(self, obj: Any) -> ScenarioConfig:
        data = obj if isinstance(obj, dict) else None
        if data is None:
            self.issue("config", f"{show(obj)} is not a JSON object")
            return ScenarioConfig()
        self.unknown_keys(data, "", _TOP_FIELDS)
        name = self.text(data, "name", "name", "")
        description = self.text(data, "description", "description", "")
        profile = self.profile(data)
        operator, op_type = self.operator(data)  # before channels: the type says which inputs exist
        return ScenarioConfig(
            name=name,
            description=description,
            profile=profile,
            channels=self.channels(data, op_type),
            generator=self.generator(data),
            operator=operator,
        )


def parse_config_into(
    obj: Any, collector: IssueCollector, *, row: int | None = None, file: str | None = None
) -> tuple[ScenarioConfig, bool]:
    """Best-effort config plus whether it was valid; problems go into `collector`.

    Invalid fields fall back to their defaults so a reader can keep checking the trace; the caller
    must not trust config-dependent checks when the flag is False.
    """
    parser = _ConfigParser(collector, row, file)
    config = parser.scenario(obj)
    return config, parser.ok


def parse_config(obj: Any, source: str) -> ScenarioConfig:
    """A validated `ScenarioConfig` from a decoded JSON object; `source` names it in messages.

    Raises `TraceValidationError` listing every bad or unknown field
    (`source: field generator.emit: "sometimes" is not one of per-record, periodic`).
    """
    collector = IssueCollector(source)
    config, _ = parse_config_into(obj, collector)
    collector.raise_if_any()
    return config


def load_config(path: str | os.PathLike[str]) -> ScenarioConfig:
    """Read and validate a scenario config JSON file; `TraceValidationError` on any problem."""
    collector = IssueCollector(os.path.basename(os.fspath(path)))
    config, _ = load_config_into(path, collector)
    collector.raise_if_any()
    return config


def load_config_into(path: str | os.PathLike[str], collector: IssueCollector) -> tuple[ScenarioConfig, bool]:
    """Like `parse_config_into` for a JSON file; issues name the file's base name, without a row."""
    from wmviz.trace.jsonline import JsonLineError, loads_strict

    file = os.path.basename(os.fspath(path))
    with open(path, "rb") as f:
        data = f.read(MAX_CONFIG_BYTES + 1)
    if len(data) > MAX_CONFIG_BYTES:
        limit = f"the limit is {MAX_CONFIG_BYTES:,} bytes (WMVIZ_MAX_CONFIG_KB)"
        collector.add(None, None, f"file is larger than a config may be; {limit}", file=file)
        return ScenarioConfig(), False
    try:
        obj = loads_strict(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        collector.add(None, None, "file is not valid UTF-8 text", file=file)
        return ScenarioConfig(), False
    except JsonLineError as exc:
        collector.add(exc.line, None, f"file is not valid JSON: {exc}", file=file)
        return ScenarioConfig(), False
    return parse_config_into(obj, collector, file=file)


def config_to_dict(config: ScenarioConfig) -> dict[str, Any]:
    """The config as a JSON-ready dict holding only fields that differ from their defaults.

    `parse_config(config_to_dict(c), ...) == c` for every valid config.
    """
    out: dict[str, Any] = {}
    default = ScenarioConfig()
    if config.name != default.name:
        out["name"] = config.name
    if config.description != default.description:
        out["description"] = config.description
    if config.profile is not default.profile:
        out["profile"] = config.profile.value
    if config.channels:
        out["channels"] = dict(config.channels)
    if config.generator is not None:
        out["generator"] = _non_default(config.generator, GeneratorConfig(), lambda name: True)
        if config.generator.splits:
            out["generator"]["splits"] = {str(ch): list(ids) for ch, ids in config.generator.splits}
    if config.operator != default.operator:
        allowed = _OPERATOR_FIELDS.get(config.operator.type, ())
        op = _non_default(config.operator, OperatorConfig(), lambda name: name in allowed)
        op["type"] = config.operator.type
        out["operator"] = op
    return out


def _non_default(value: Any, default: Any, keep: Callable[[str], bool]) -> dict[str, Any]:
    return {
        f.name: getattr(value, f.name)
        for f in fields(value)
        if keep(f.name) and getattr(value, f.name) != getattr(default, f.name)
    }
