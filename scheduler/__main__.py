"""``python -m scheduler`` (see ``scheduler.cli``)."""

import sys

from scheduler.cli import run

sys.exit(run())
