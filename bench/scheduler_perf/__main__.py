"""``python bench/scheduler_perf [CONFIG…] [options]``: the runner's command line.

Run as a folder (or as this file), Python puts the package's own folder first on
``sys.path``, where its modules would be importable under bare names; the package is imported
from ``bench/`` instead, as itself.
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if sys.path and Path(sys.path[0] or ".").resolve() == HERE:
    sys.path[0] = str(HERE.parent)

from scheduler_perf.cli import main  # noqa: E402

sys.exit(main())
