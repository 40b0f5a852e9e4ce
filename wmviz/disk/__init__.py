"""Writing outputs safely: whole or not at all, never over an input, nothing left by a kill.

The lowest layer beside the core: it imports nothing else of wmviz, so the trace writers, the
timeline, the importers and recorder, the stores and the command line can all use it.
`atomic` writes files, recordings and folders beside their destination and moves them in when
complete; `work` names and locks those work items and clears what a killed run left; `overlap`
refuses an output that is an input.
"""

from wmviz.disk.atomic import (
    GrowingFile,
    OutputError,
    cannot_write,
    replacing_file,
    replacing_folder,
    write_file,
)
from wmviz.disk.overlap import refuse_overlap
from wmviz.disk.work import sweep

__all__ = [
    "GrowingFile",
    "OutputError",
    "cannot_write",
    "refuse_overlap",
    "replacing_file",
    "replacing_folder",
    "sweep",
    "write_file",
]
