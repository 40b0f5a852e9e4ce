"""`python -m wmviz …`: see wmviz.cli."""

import sys

from wmviz.cli import main

sys.exit(main())
