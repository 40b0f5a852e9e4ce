"""The view a URL names (`?scenario=…&profile=…&step=…&instance=…&engine=…&compare=…&time=…&tz=…`),
and back.

Pure functions over plain dicts, so a shared link's round trip is testable without a browser. A bad
value never breaks the page: it falls back to the default and says why (`ViewParams.notes`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from wmviz.core.types import Profile
from wmviz.timeline.engine import Engine
from wmviz.view.timefmt import MODES, zone_known

ENGINES = tuple(e.value for e in Engine)
DEFAULT_ENGINE = Engine.AUTO.value
_STEP = re.compile(r"[0-9]{1,15}")
UPLOAD_PREFIX = "upload-"
"""Uploaded traces appear as scenarios named `upload-<digest>`; their links say `?trace=<digest>`."""
WHATIF_PREFIX = "whatif:"
"""A compare target that is an edit of this trace, carried in the link (`whatif:<token>`)."""
TRACE_PREFIX = "trace:"
"""A compare target that is another stored upload (`trace:<digest>`)."""
VALUE_LIMIT = 8192
"""The longest value a link or a bundle's view may give one field (a what-if token is at most
4,096 characters): anything longer is dropped with a note before any reader sees it."""
NOTE_CHARS = 40
"""How much of a bad value a notice quotes: enough to recognise it, never a whole hostile value."""


def noted(text: str) -> str:
    """`text` as a notice quotes it: cut to NOTE_CHARS, the cut marked."""
    return text if len(text) <= NOTE_CHARS else text[: NOTE_CHARS - 1] + "…"


@dataclass(frozen=True)
class ViewParams:
    """Everything a link reopens: the scenario, profile (None: the scenario's own), engine, instance
    (None: the first) and step (the steps are per instance, 0-based)."""

    scenario: str
    profile: Profile | None = None
    engine: str = DEFAULT_ENGINE
    instance: str | None = None
    step: int = 0
    compare: str | None = None
    """Compare mode's other run: a profile name, `whatif:<token>` (an edit of this trace, carried
    in the link itself, `wmviz.analysis.whatif_token.encode_edit`) or `trace:<digest>` (another upload)."""
    time: str = "utc"
    """How times read (`wmviz.view.timefmt.MODES`)."""
    zone: str = "UTC"
    """The time zone instants are shown in (an IANA name)."""
    notes: tuple[str, ...] = field(default=(), compare=False)
    job: JobLink | None = None
    """The job graph this view belongs to (`?job=…&at=…&vertex=…`): the job view itself when no
    trace is named, else the job graph a vertex's valve page came from (its way back)."""

    def with_step(self, step: int) -> ViewParams:
        """The same view at another step."""
        return replace(self, step=step)


@dataclass
class ShownView:
    """The view on screen now. The step area redraws alone when the step moves (a fragment), so
    what is drawn once per page (the export buttons) reads the step from here when clicked."""

    view: ViewParams


def parse_view(query: Mapping[str, str], scenarios: list[str], default_scenario: str) -> ViewParams:
    """The view `query` names; unknown or malformed values fall back to the defaults, with a note."""
    notes: list[str] = []  # each reader below appends why it fell back, in the order of the fields
    query = _bounded(query, notes)
    scenario = _scenario_of(query, scenarios, default_scenario, notes)
    profile = _profile_of(query, notes)
    engine = _engine_of(query, notes)
    step = _step_of(query, notes)
    instance = query.get("instance") or None
    compare = _compare_of(query, notes)
    time, zone = _time_of(query, notes)
    job = job_link(query, notes)
    return ViewParams(scenario, profile, engine, instance, step, compare, time, zone, tuple(notes), job)


def _bounded(query: Mapping[str, str], notes: list[str]) -> dict[str, str]:
    """The fields whose values are at most VALUE_LIMIT characters; the others are dropped (a note
    each), so no reader below is handed a value of any size."""
    kept: dict[str, str] = {}
    for name, value in query.items():
        if len(value) > VALUE_LIMIT:
            notes.append(f"{noted(name)!r} in the link is over {VALUE_LIMIT:,} characters; ignored")
        else:
            kept[name] = value
    return kept


def _compare_of(query: Mapping[str, str], notes: list[str]) -> str | None:
    """The compared run: a what-if or a stored trace as named (the page says when one cannot be
    used: `wmviz.analysis.whatif_token.decode_edit` reads the token), or a profile this model knows."""
    compare = query.get("compare") or None
    if compare is None or compare.startswith((WHATIF_PREFIX, TRACE_PREFIX)):
        return compare
    try:
        return Profile.parse(compare).value
    except ValueError:
        notes.append(f"unknown run to compare with {noted(compare)!r}; comparing with nothing")
        return None


def _scenario_of(query: Mapping[str, str], scenarios: list[str], default: str, notes: list[str]) -> str:
    scenario = query.get("scenario", default)
    if query.get("trace"):
        scenario = UPLOAD_PREFIX + query["trace"]
        if scenario not in scenarios:
            notes.append(
                f"the link names an uploaded trace ({noted(query['trace'])}) this server does not have: "
                "upload its bundle to open it; showing a built-in incident"
            )
            scenario = default
    if scenario not in scenarios:
        notes.append(f"unknown scenario {noted(scenario)!r} in the link; showing {default!r}")
        scenario = default
    return scenario


def _profile_of(query: Mapping[str, str], notes: list[str]) -> Profile | None:
    if query.get("profile"):
        try:
            return Profile.parse(query["profile"])
        except ValueError as exc:
            notes.append(f"{exc}; showing the scenario's own profile")
    return None


def _engine_of(query: Mapping[str, str], notes: list[str]) -> str:
    engine = query.get("engine", DEFAULT_ENGINE)
    if engine not in ENGINES:
        notes.append(f"unknown engine {noted(engine)!r}; using {DEFAULT_ENGINE}")
        engine = DEFAULT_ENGINE
    return engine


def _step_of(query: Mapping[str, str], notes: list[str]) -> int:
    if "step" not in query:
        return 0
    text = str(query["step"])
    if _STEP.fullmatch(text):  # ASCII digits only: int() would read '٣' or '𝟙' as a number
        return int(text)
    if text.startswith("-") and _STEP.fullmatch(text[1:]):
        notes.append(f"step {text} is negative; showing step 0")
    else:
        notes.append(f"step {noted(text)!r} is not a number; showing step 0")
    return 0


def _time_of(query: Mapping[str, str], notes: list[str]) -> tuple[str, str]:
    """How times read, and the zone of date-times."""
    time = query.get("time") or "utc"
    if time not in MODES:
        notes.append(f"unknown time display {noted(time)!r}; showing date-times")
        time = "utc"
    zone = query.get("tz") or "UTC"
    if not zone_known(zone):
        notes.append(f"unknown time zone {noted(zone)!r}; showing UTC")
        zone = "UTC"
    return time, zone


def view_query(view: ViewParams) -> dict[str, str]:
    """The query parameters of `view` (always the step, so a copied link lands on it)."""
    if view.scenario.startswith(UPLOAD_PREFIX):
        query = {"trace": view.scenario.removeprefix(UPLOAD_PREFIX)}
    else:
        query = {"scenario": view.scenario}
    query.update({"engine": view.engine, "step": str(view.step)})
    if view.profile is not None:
        query["profile"] = view.profile.value
    if view.instance is not None:
        query["instance"] = view.instance
    if view.compare is not None:
        query["compare"] = view.compare
    if view.time != "utc":
        query["time"] = view.time
    if view.zone != "UTC":
        query["tz"] = view.zone
    if view.job is not None:
        query.update(view.job.query())
    return query


def clamp_step(step: int, count: int) -> tuple[int, str | None]:
    """`step` within 0..count−1, and a note when it had to move."""
    if step >= count:
        return count - 1, f"step {step} is past the last step; showing step {count - 1}"
    return max(step, 0), None


# --- the job graph: `?job=<slug or upload digest>&at=<epoch ms>&vertex=<vertex id>` ---------------

_JOB = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")
_AT = re.compile(r"-?[0-9]{1,19}")
_VERTEX = re.compile(r"[^\x00-\x1f\x7f]{1,128}")
_LONG = (-(2**63), 2**63 - 1)


@dataclass(frozen=True)
class JobLink:
    """A job recording (a built-in job's slug or an upload's digest), the moment on its time
    slider (None: the end) and the vertex picked (None: the one blame starts from)."""

    job: str
    at_ms: int | None = None
    vertex: str | None = None

    def query(self) -> dict[str, str]:
        """The link's parameters."""
        out = {"job": self.job}
        if self.at_ms is not None:
            out["at"] = str(self.at_ms)
        if self.vertex is not None:
            out["vertex"] = self.vertex
        return out


def job_link(query: Mapping[str, str], notes: list[str]) -> JobLink | None:
    """The job graph a link names, if any; a malformed part is left out, with a note. Whether the
    job, the moment and the vertex exist is the job view's to check (it has the recording)."""
    job = query.get("job") or None
    if job is None:
        return None
    if not _JOB.fullmatch(job):
        notes.append(f"job {noted(job)!r} is not a job's name; not opening a job graph")
        return None
    at = query.get("at") or None
    if at is not None and not (_AT.fullmatch(at) and _LONG[0] <= int(at) <= _LONG[1]):
        notes.append(f"at {noted(at)!r} is not a time in epoch ms; showing the recording's end")
        at = None
    vertex = query.get("vertex") or None
    if vertex is not None and not _VERTEX.fullmatch(vertex):
        notes.append(
            f"vertex {noted(vertex)!r} is not a vertex id (at most 128 characters); "
            "starting from the stalled vertex"
        )
        vertex = None
    return JobLink(job, int(at) if at is not None else None, vertex)
