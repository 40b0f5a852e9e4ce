"""One digest line per file of every built-in incident's timeline, to show a refactor changed nothing.

    python -m tools.timeline_digests > before.txt   # on the old commit
    python -m tools.timeline_digests > after.txt    # on the new one
    diff before.txt after.txt                       # nothing: every table and keyframe byte-identical

Each incident is simulated in-process into a temporary folder (`build_timeline_local`, the code
`wmviz simulate --engine local` runs), and every file it writes is hashed by its path in the folder.
"""

from __future__ import annotations

import hashlib
import sys
import tempfile
from pathlib import Path

from wmviz.store.incidents import built_in_incidents
from wmviz.timeline.local import build_timeline_local


def digests(root: Path) -> list[str]:
    lines = []
    for slug, incident in built_in_incidents().items():
        out = root / slug
        build_timeline_local(incident.trace(), out)
        for path in sorted(p for p in out.rglob("*") if p.is_file()):
            lines.append(f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {path.relative_to(root)}")
    return lines


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="wmviz-digests-") as tmp:
        sys.stdout.write("".join(line + "\n" for line in digests(Path(tmp))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
