"""``python -m scheduler`` (see ``scheduler.cli``)."""

import sys

from scheduler.cli import main

sys.exit(main())
