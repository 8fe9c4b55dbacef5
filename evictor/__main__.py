"""``python -m evictor``: the same as the ``evict`` command (see ``evictor.cli``)."""

import sys

from evictor.cli import run

sys.exit(run())
