"""`python -m wmviz.ui.launch [Streamlit's options]`: what `wmviz app` runs. The page is served by
this process with its imports warmed up (`wmviz.ui.warmup`). A module of its own because the one run
with `-m` is `__main__`, not `wmviz.ui.warmup`: the page's wait must see the warm-up's own state."""

import sys

from wmviz.store.resources import app_page
from wmviz.ui.warmup import run_app

if __name__ == "__main__":
    run_app(app_page(), sys.argv[1:])
