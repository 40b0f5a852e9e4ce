"""The page's first import: it returns once the server's warm-up of the page's imports is over
(`wmviz.ui.warmup`), so the page never imports alongside it. Importing is the wait: this module's
body runs once per process, in the first script run, which is the run a warm-up can overlap."""

from wmviz.ui import warmup

warmup.wait()
