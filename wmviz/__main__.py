"""`python -m wmviz …` and the `wmviz` script: see wmviz.cli.

Ctrl-C is one line and exit 130 from the first moment: importing the CLI takes a second or more
(Arrow, pandas), and an interrupt then would otherwise print a traceback of the import machinery.
`wmviz.cli.main` takes over with Python's own handler once it runs, so its cleanups still happen.
"""

import os
import signal
import sys


def _interrupted_while_starting(signum: int, frame: object) -> None:
    sys.stderr.write("interrupted\n")
    sys.stderr.flush()
    os._exit(130)


def run() -> None:
    """Start the CLI with the start-up's Ctrl-C handler in place."""
    signal.signal(signal.SIGINT, _interrupted_while_starting)
    from wmviz.cli import main

    sys.exit(main())


if __name__ == "__main__":
    run()
