"""The first page loads only what it draws (issue 30, Deliver 3): a new server's first visitor, on a
built-in incident whose timeline is prepared, waits for no trace reader, writer or what-if module
(they pulled in the validators and the Parquet writer: 2.3-3.1 s of the first page's imports at load
10), nor for pyspark (the Spark box names the master long before Spark starts: 0.4 s of imports),
and listing the incidents reads no trace body. How long the page takes is `bench/app_latency.py
--only-first-page`'s to measure; this checks what it is made of.

Each run is a new Python process (imports are what a new server pays): the first prepares the
timeline cache (a cold cache simulates the trace, which reads it), the second opens the page on it.
"""

from __future__ import annotations

import json
import os

from tests.conftest import REPO
from tests.support.python_run import python_output

NOT_ON_THE_FIRST_PAGE = (
    "wmviz.trace.readers",
    "wmviz.trace.writers",
    "wmviz.trace.check",
    "wmviz.analysis.whatif_trace",
    "pyspark",  # the Spark box names the master; pyspark itself waits for Spark to start
)

VISIT = r"""
import json, sys
from streamlit.testing.v1 import AppTest
app = AppTest.from_file({app!r}, default_timeout=300)
app.run()
assert not app.exception, app.exception
assert any(h.value.startswith("Step 0 of") for h in app.subheader), [h.value for h in app.subheader]
print(json.dumps(sorted(m for m in {modules!r} if m in sys.modules)))
"""


def visit(env: dict[str, str]) -> list[str]:
    """The bare URL opened once in a new process; the listed modules it imported."""
    code = VISIT.format(app=str(REPO / "app.py"), modules=NOT_ON_THE_FIRST_PAGE)
    return json.loads(python_output(code, env).strip().splitlines()[-1])


def test_the_first_page_on_a_prepared_timeline_imports_no_reader_writer_what_if_or_pyspark(tmp_path):
    env = {**os.environ, "WMVIZ_CACHE": str(tmp_path / "cache"), "WMVIZ_SPARK_START": "lazy"}
    assert "wmviz.trace.readers" in visit(env)  # cold: the trace is read and simulated (the check bites)
    assert visit(env) == []
