"""Which Spark master a session uses. Apart from `session.py` because the page names the master in
its Spark box on every first page, long before Spark starts: importing pyspark for that took
0.4 s of a new server's first script run (`tests/ui/test_first_page_imports.py`)."""

from __future__ import annotations

from collections.abc import Mapping

from wmviz.core import settings

DEFAULT_MASTER = settings.SPARK_MASTER.default or "local[*]"


def spark_master(master: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """The master URL: the argument, else $WMVIZ_SPARK_MASTER, else local[*]."""
    return master or settings.SPARK_MASTER.get(env) or DEFAULT_MASTER
