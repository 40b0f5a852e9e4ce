"""The built-in incidents: each trace in sample_data/, its config and the story told beside it.

An incident is a trace file, an optional sibling `<stem>.json` config (for formats that cannot
embed one) and a markdown story `<stem>.md` with three sections: what users saw, what the valve
did, and the fix. Pure Python: the app and the tests share it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from wmviz.core.scenario import ScenarioConfig, Trace
from wmviz.store.resources import sample_data
from wmviz.trace.config import load_config_into
from wmviz.trace.errors import IssueCollector
from wmviz.trace.sources import FORMATS, Blob, plan_trace

SAMPLES: Path = sample_data()
DEFAULT_INCIDENT = "flink-38477-zero-output"

STORY_SECTIONS = ("What users saw", "What the valve did", "The fix")
"""The sections every story has, in this order."""

# A person new to watermarks should meet the valve's minimum before idleness, idleness before
# its gaps, and late data last; incidents not listed here follow alphabetically.
READING_ORDER = (
    DEFAULT_INCIDENT,
    "idle-partition-pins-watermark",
    "silent-split-window-never-fires",
    "last-window-never-closes",
    "order-dependent-final-watermark",
    "resumed-partition-records-late",
    "fast-partition-paused-by-alignment",
    "late-data-allowed-lateness",
    "late-click-merges-sessions",
    "future-dated-record-makes-everything-late",
    "early-fire-left-join",
)

# `.json` is a JSON Lines trace to the reader, but beside a trace it is that trace's config.
_TRACE_SUFFIXES = frozenset(s for s in FORMATS if s != ".json")


@dataclass(frozen=True)
class Incident:
    """One built-in incident: where its files are, its title and its story."""

    slug: str
    """The trace file's stem; used in URLs (`?scenario=slug`)."""
    title: str
    """The config's name (the slug when the config has none)."""
    trace_path: Path
    config_path: Path | None
    """The sibling `<slug>.json`, if any; it replaces a config embedded in the trace."""
    story_md: str
    """The `<slug>.md` file's text ("" when there is none)."""

    def trace(self) -> Trace:
        """The validated trace, read with its sibling config (raises TraceValidationError)."""
        from wmviz.trace.readers import read_trace  # the readers (pandas) only when a trace is read

        return read_trace(self.trace_path, self.config_path)


def built_in_incidents(root: Path = SAMPLES) -> dict[str, Incident]:
    """Every trace under `root`, by slug: the default first, then a sensible reading order.

    Each title is its config's name, read from the sibling config or the trace's file-level part
    (`plan_trace`: the config line, the header; never the body), so listing the incidents reads no
    trace: the first page, opening one from its prepared timeline, never loads the readers. A
    broken config raises here; a broken body when the trace is read (`Incident.trace`).
    """
    incidents: dict[str, Incident] = {}
    for path in _traces(root):
        config_path = _config_beside(path)
        story = path.with_suffix(".md")
        title = _config_name(path, config_path) or path.stem
        incidents[path.stem] = Incident(
            slug=path.stem,
            title=title,
            trace_path=path,
            config_path=config_path,
            story_md=story.read_text(encoding="utf-8") if story.is_file() else "",
        )
    return incidents


def _config_name(trace: Path, config_path: Path | None) -> str:
    """The name in the incident's config (the sibling file's, else the trace's own), read as the
    reader reads it (raises TraceValidationError with the config's issues)."""
    collector = IssueCollector(trace.name)
    config: ScenarioConfig | None
    if config_path is not None:
        config, ok = load_config_into(config_path, collector)
    else:
        plan = plan_trace(Blob(path=str(trace)), trace.name, collector, None, True)
        config, ok = (plan.config, plan.config_ok) if plan is not None else (None, False)
    collector.raise_if_any()  # each reader of a config collects why it could not be read
    return config.name if config is not None and ok else ""


def _traces(root: Path) -> list[Path]:
    """Every built-in trace file under `root`, in reading order (READING_ORDER, then by name)."""
    traces = [p for p in root.iterdir() if p.is_file() and p.suffix.lower() in _TRACE_SUFFIXES]
    rank = {slug: i for i, slug in enumerate(READING_ORDER)}
    return sorted(traces, key=lambda p: (rank.get(p.stem, len(rank)), p.stem))


def incident_names(root: Path = SAMPLES) -> list[str]:
    """The built-in incidents' slugs in reading order, without reading any trace (what the command
    line lists when a name is neither a file nor an incident)."""
    return [p.stem for p in _traces(root)]


def incident_files(name: str, root: Path = SAMPLES) -> tuple[Path, Path | None] | None:
    """A built-in incident's trace and config, named by its slug (`flink-38477-zero-output`) or
    its trace's file name, without reading any trace; None when no built-in has that name.

    This is how the command line finds the incidents an installed wheel carries, wherever it runs.
    """
    if not name or Path(name).name != name:  # a path with a folder is the user's, never a built-in's
        return None
    candidates = [root / name] if Path(name).suffix.lower() in _TRACE_SUFFIXES else []
    candidates += [root / f"{name}{suffix}" for suffix in sorted(_TRACE_SUFFIXES)]
    for path in candidates:
        if path.is_file():
            return path, _config_beside(path)
    return None


def _config_beside(trace: Path) -> Path | None:
    """The sibling `<stem>.json` config of a built-in trace, if there is one."""
    config = trace.with_suffix(".json")
    return config if config.is_file() else None


JOBS_FOLDER = "jobs"
"""Built-in job recordings live in `sample_data/jobs/` (`<slug>.json` and its story `<slug>.md`),
apart from the traces, whose `.json` siblings are configs."""


@dataclass(frozen=True)
class JobIncident:
    """One built-in job recording (`wmviz.record.job`) and its story; opened on the job graph."""

    slug: str
    title: str
    path: Path
    story_md: str


def job_incidents(root: Path = SAMPLES) -> dict[str, JobIncident]:
    """Every job recording under `root/jobs`, by slug, titled by its story's first heading."""
    folder = root / JOBS_FOLDER
    if not folder.is_dir():
        return {}
    found: dict[str, JobIncident] = {}
    for path in sorted(folder.glob("*.json")):
        story_path = path.with_suffix(".md")
        story = story_path.read_text(encoding="utf-8") if story_path.is_file() else ""
        first, _, rest = story.partition("\n")
        title = path.stem
        if first.startswith("# "):  # the title, shown as the page's; the story is the rest
            title, story = first[2:].strip(), rest.lstrip("\n")
        found[path.stem] = JobIncident(path.stem, title, path, story)
    return found


def story_sections(markdown: str) -> dict[str, str]:
    """The `## ` sections of a story, title → body (stripped), in file order; a repeated title
    continues its section.

    Deeper headings (`###`) stay in their section's body, and so does a `## ` line inside a fenced
    code block. Text before the first section is kept under "" when it is not blank, so nothing
    a writer put in the file silently disappears.
    """
    sections: dict[str, list[str]] = {"": []}
    current = ""
    fence: str | None = None
    for line in markdown.splitlines():
        stripped = line.lstrip()
        if fence is None and stripped[:3] in ("```", "~~~"):
            fence = stripped[:3]
        elif fence is not None and stripped.startswith(fence):
            fence = None
        elif fence is None and line.startswith("## "):
            current = line[3:].strip()
            sections.setdefault(current, [])
            continue
        sections[current].append(line)
    bodies = {title: "\n".join(lines).strip() for title, lines in sections.items()}
    if not bodies[""]:
        del bodies[""]
    return bodies
