"""Every key the page keeps in `st.session_state`, named once: a bare string mistyped in one place
would be a new key, silently empty. `tests/repo/test_lint.py` checks that no other module spells one.

Two kinds. A widget's key is where Streamlit keeps the value the widget shows; the page writes it
to move the widget (a link or a bundle sets the view, a step button the slider). The page's own
memory across reruns starts with `_`, so it never clashes with a widget's key (`playing` apart,
an older name the app's tests read).
"""

from __future__ import annotations

# --- widgets: the value each one shows -----------------------------------------------------------
SCENARIO = "scenario"  # the incident's slug (an upload's is `upload:<digest>`)
PROFILE = "profile"  # a Profile value, or controls.SCENARIO_PROFILE
ENGINE = "engine"  # one of wmviz.view.url.ENGINES
INSTANCE = "instance"  # the operator instance (subtask) shown
COMPARE = "compare"  # compare_view.NOTHING, a profile value, `whatif:<token>` or `trace:<digest>`
TIME_MODE = "time_mode"  # one of wmviz.view.timefmt.MODES
TIME_ZONE = "time_zone"  # an IANA zone name
STEP = "step"  # the slider's: the step on screen, which every step control moves
SPEED = "speed"  # autoplay's speed, a key of controls.SPEEDS
OPERATOR_TAB = "operator_tab"  # the operator panel's tab shown (compare mode prefixes its side's key)
STORY_OPEN = "story_open"  # whether the story strip is open; it stays as the person left it
JOB_AT = "job_at"  # the job graph's time slider: a sample time of the recording (epoch ms)
JOB_VERTEX = "job_vertex"  # the vertex picked on the job graph (its id, or job_view.STALLED)
JOB_CLICK = "job_click"  # the job graph's selection (a click on a vertex)
WHATIF_OPEN = "whatif_open"  # whether the what-if form is open; it stays open as the step moves
LATE_FILTER = "late_filter"  # the Late rows table's fate filter (one of late_ledger.PAGE_FILTERS)
LATE_ROWS = "late_rows"  # the Late rows box (a container's key: its CSS class st-key-late_rows)

# --- the page's memory ---------------------------------------------------------------------------
PLAYING = "playing"  # autoplay is on (a bool; the Play button's label reads it)
PLAY_STEP = "_play_step"  # the step autoplay moved to last (a tick's rerun carries the slider's older value)
PLAY_DUE = "_play_due"  # autoplay's clock: when its next step is due (time.monotonic() seconds)
ADOPTED = "_adopted"  # the link's view is in the widgets: taken once per browser session
CONTEXT = "_context"  # (scenario, instance) drawn last: a new one moves the step, a rerun does not
MOMENT = "_moment"  # the arrival order of the step drawn last, which a new instance keeps
TAB_FOLLOWS = "_tab_follows"  # panel key -> the (timeline, instance, step) its tab was chosen for
PENDING_COMPARE = "_pending_compare"  # a what-if just made: compare mode opens on it next run
WHATIFS = "_whatifs"  # this session's what-ifs: target (`whatif:<token>`) -> its one-line text
UPLOADS = "_uploads"  # digests of the uploads this session took in, offered in the incident list
UPLOAD_MARKER = "_upload_marker"  # the file ids of the upload taken in last, so it is taken once
UPLOAD_ERROR = "_upload_error"  # why the last upload was refused, shown until one is taken
VALIDATED = "_validated"  # (upload digest, engine) -> its RunPlan (without the trace) or TraceValidationError
LIVE = "_live"  # this session's live run: its key in the server's registry of live runs
TUNE_LINES = "_tune_lines"  # the Tune view's grid as last submitted (its --vary lines)
TUNE_PICKED = "_tune_picked"  # the combination picked on the Tune chart (its row index)
TUNE_TEXT = "tune_text"  # the Tune view's grid text area (reset to a new trace's default grid)
JOB_ADOPTED = "_job_adopted"  # the job link (JobLink) whose moment and vertex are in the widgets
